#!/bin/bash
# plot-timeline.sh: draw a window of kvm-tsc-merge's Chrome JSON as a PNG (the user guide's picture), with jq and gnuplot.
#
# usage: plot-timeline.sh TIMELINE.json OUT.png FROM_US TO_US
#
# One row per host vCPU thread with its "in guest" slices, one row per
# guest vCPU with its events as ticks (trace_marker writes labelled), and a
# vertical line at each kvm_write_tsc_offset.

set -eu

# shellcheck source-path=SCRIPTDIR source=../scripts/lib/common.sh
. "$(dirname "$0")/../scripts/lib/common.sh"

readonly JSON=$1 PNG=$2 FROM=$3 TO=$4

# window FILTER: jq's FILTER over the JSON, $f and $t the window in us.
window()
{
	jq -r --argjson f "$FROM" --argjson t "$TO" "$1" "$JSON"
}

main()
{
	local work

	command -v jq >/dev/null || die "jq missing: apt-get install jq"
	command -v gnuplot >/dev/null || die "gnuplot missing: apt-get install gnuplot-nox"
	work=$(mktemp -d)
	# shellcheck disable=SC2064 # the directory made now is the one to remove
	trap "rm -rf '$work'" EXIT
	# Slices: pair each B with the next E of its thread.
	window '
		[.traceEvents[] | select((.ph == "B" or .ph == "E") and .ts >= $f and .ts <= $t)] |
		group_by(.tid)[] | sort_by(.ts) | . as $e |
		range(0; length - 1) | select($e[.].ph == "B" and $e[. + 1].ph == "E") |
		"\($e[.].tid) \($e[.].ts) \($e[. + 1].ts)"' >"$work/slices"
	window '
		.traceEvents[] | select(.ph == "i" and .pid >= 1073741824 and .ts >= $f and .ts <= $t) |
		"\(.tid) \(.ts) \(if .name == "print" then (.args.info | sub("^[^ ]* "; "") | gsub(" "; "_")) else .name end)"' >"$work/guest"
	window '
		.traceEvents[] | select(.name == "kvm_write_tsc_offset" and .ts >= $f and .ts <= $t) | .ts' >"$work/writes"
	[ -s "$work/slices" ] || die "no kvm_entry/kvm_exit slice between $FROM and $TO us"
	awk 'NR == FNR { if (!($1 in row)) row[$1] = ++n; next }
	     { print row[$1] * 2, $2, $3 }' "$work/slices" "$work/slices" >"$work/slices.rows"
	awk '{ print $1 * 2 + 1, $2, $3 }' "$work/guest" >"$work/guest.rows"
	gnuplot <<-PLOT
		set terminal pngcairo size 1400,520 font ",11" noenhanced
		set output "$PNG"
		set title "kvm-tsc-merge: guest events on the host clock; dashed: kvm_write_tsc_offset"
		set xlabel "host time (us from the start of the trace)"
		set format x "%.0f"
		set xrange [$FROM:$TO]
		set yrange [0.5:5.5]
		set ytics ("vCPU 0 thread: in guest" 2, "guest vCPU 0 events" 1, "vCPU 1 thread: in guest" 4, "guest vCPU 1 events" 3)
		set key off
		set grid xtics
		plot "$work/slices.rows" using (\$2):1:(\$2):(\$3):(\$1 - 0.3):(\$1 + 0.3) with boxxyerror fill solid 0.5 lc rgb "#c03030", \
		     "$work/guest.rows" using 2:1 with impulses lc rgb "#2050b0", \
		     "$work/guest.rows" using 2:1 with points pt 7 ps 0.6 lc rgb "#2050b0", \
		     "$work/guest.rows" using 2:(\$1 + 0.15):3 with labels rotate by 30 left font ",8" tc rgb "#2050b0", \
		     "$work/writes" using 1:(0.5):(0):(5) with vectors nohead dt 2 lw 2 lc rgb "#208020"
	PLOT
}

main "$@"
