#!/bin/bash
# merge-e2e-test.sh: KTAP test of kvm-tsc-merge on real host + nested-guest trace pairs recorded in the test VM the ways users record them: every guest marker must land right before its own port exit.
#
# usage: merge-e2e-test.sh [--vmm qemu|bochs] [--dir DIR] [--no-vm]
#                          [--l2-tsc-khz KHZ] [--modes "MODE..."]
#
# Boots the test VM with vmtest.sh --nested (which gives it one CPU) under
# --vmm (default qemu) in --dir (default build/vmtest-e2e) and runs
# scripts/guest/vm-nested-trace.sh there (a second boot if a nested guest
# itself failed) with MODES (default
# "own agent late"), one nested guest each, one after the other:
#
#   own    record-host.sh started before the guest boots, the guest tracing
#          itself with x86-tsc: own/host.dat, own/guest.dat
#   agent  trace-cmd's guest workflow, started once the guest has booted:
#          trace-cmd agent in the guest, `trace-cmd record ... -A l2@CID
#          ...` on the host with trace-cmd's default clock (tsc2nsec),
#          trace-cmd's trace.dat and trace-l2.dat as agent/agent-host.dat,
#          agent/agent-guest.dat
#   late   record-host.sh started once the guest has booted, the guest
#          tracing itself: late/late-host.dat, late/late-guest.dat
#
# --no-vm checks the files of the previous run in DIR/export instead.
# --l2-tsc-khz runs the nested guest's TSC at KHZ through TSC scaling
# (--vmm bochs: TCG has none), and the own run's host trace
# must show L2's vCPUs at that multiplier.
#
# For each mode it checks the raw traces with trace-cmd: the guest's markers
# ("ktt-marker before|after cpu=N seq=K"), each followed at once by a byte
# to the marker port, so on the host the next kvm_exit of vCPU N with reason
# io and that port in info1 bits 31:16 is that marker's own; one such exit
# per marker; the guest's TSC write as kvm_write_tsc_offset from the offset
# debugfs showed. It shows as TAP diagnostics where trace-cmd's own merge
# puts the markers against their port exits: for own and late, trace-cmd
# report with one --ts-offset from KVM's debugfs; for agent, trace-cmd
# report on the two files as trace-cmd wrote them (their TIME_SHIFT, in
# ns). Then, when build/tools/kvm-tsc-merge exists, it merges each pair
#
#     kvm-tsc-merge --host HOST.dat --guest l2=GUEST.dat \
#         --fields time,source,event,info --summary SUMMARY.txt >TIMELINE.txt
#
# (in DIR/merge/MODE/) and checks the timeline: one line per event,
# "<host tsc> <source> <event>: <info>", source "host" or "l2:<vcpu>" with a
# "!" when the event fell outside a run interval of its vCPU thread; a
# correct timeline alternates marker, port exit, marker, port exit on every
# vCPU, before and after the guest's TSC jump alike. Last it writes
# --sync-out copies of the pair (merge/MODE/sync/) and checks them with
# trace-cmd report (every host and guest event at the timeline's host TSC,
# in its order; in ns through the copies' TSC2NSEC when they have one) and
# with libkshark (build/tools/kshark-times: the guest stream at those
# times); for own, it also decodes its Perfetto trace (-p) with protoc to
# find the guest's events at the timeline's host nanoseconds. Exit status:
# 0 all passed, 1 a failure, 4 skipped.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly MERGE=$BUILD_DIR/tools/kvm-tsc-merge
readonly USAGE="usage: ${0##*/} [--vmm qemu|bochs] [--dir DIR] [--no-vm] [--l2-tsc-khz KHZ] [--modes \"MODE...\"]"
readonly KSHARK_TIMES=$BUILD_DIR/tools/kshark-times
readonly PROTO_DIR=$TOP_DIR/tools/tsc-merge/proto
readonly PFTRACE_EVENTS=$TOP_DIR/tools/tsc-merge/tests/pftrace-events.awk
readonly PFTRACE_CHECK=$TOP_DIR/tools/tsc-merge/tests/pftrace-check.awk
readonly ATTEMPTS=2
# The emulator and vmtest.sh's directory, from --vmm and --dir; the nested
# runs' files, the merges and the log of the boots in and beside it.
VMM=qemu
VM_DIR=$BUILD_DIR/vmtest-e2e
EXPORT=
OUT_ROOT=
VM_LOG=
# The nested guest's TSC rate in kHz, when --l2-tsc-khz sets one.
L2_TSC_KHZ=
MODES="own agent late"
# check_mode's first pass only counts the checks, for the plan.
PLANNING=
PLANNED=0
# Set when a mode has no trace pair: its checks fail, saying why.
BROKEN=
# The mode's facts, from its l2-info.txt (prepare_mode).
CPUS=
MARKERS=
JUMP=
PORT_HEX=

# awk: a trace-cmd or timeline timestamp as an integer: raw counts stay as
# they are, "SEC.NSEC" (a clock in ns, printed with -t) becomes ns.
readonly AWK_TS='
	function ts_int(t,   s, f) {
		if (t !~ /\./) return t
		split(t, s, "."); f = s[2]
		while (length(f) < 9) f = f "0"
		t = s[1] substr(f, 1, 9); sub(/^0+/, "", t)
		return t == "" ? 0 : t
	}'

# One line per event of a trace-cmd report (any number of -i files and
# options), as "FILE TS CPU EVENT INFO": FILE is "guest" for lines of a
# file whose name ends in guest.dat, "host" otherwise. -N: the kernel's own
# print formats, as kvm-tsc-merge prints; -t: ns in full where the clock is
# in ns.
report_events()
{
	trace-cmd report -N -t "$@" 2>/dev/null | awk "$AWK_TS"'
		match($0, /\[[0-9]+\] *[0-9]+(\.[0-9]+)?: +[a-z_0-9]+: */) {
			head = substr($0, RSTART, RLENGTH)
			info = substr($0, RSTART + RLENGTH)
			gsub(/\[|\]|:/, " ", head)
			split(head, f, " +")
			file = ($0 ~ /^ *[^ ]*guest\.dat:/) ? "guest" : "host"
			print file, ts_int(f[3]), f[2], f[4], info
		}'
}

# The events of one file as recorded: its raw timestamps (TSC counts for
# x86-tsc and tsc2nsec alike), no time shift.
raw_events()
{
	report_events --raw-ts -i "$1"
}

# "MULT SHIFT" of a trace.dat's TSC2NSEC option (the last one, which
# trace-cmd uses), nothing when it has none.
tsc2nsec_of()
{
	trace-cmd dump --options -i "$1" 2>/dev/null |
		sed -n 's/^\([0-9]*\) \([0-9]*\) [0-9]* \[multiplier, shift, offset\]$/\1 \2/p' | tail -1
}

# "TS SOURCE ..." lines (SOURCE host or guest) with host TSCs, as trace-cmd
# shows them with a TSC2NSEC of host "MULT SHIFT" and guest "MULT SHIFT":
# (tsc * mult) >> shift; an empty pair leaves those lines alone.
tsc_to_shown()
{
	local file=$1 host_ms=$2 guest_ms=$3

	[ -n "$host_ms$guest_ms" ] || { cat "$file"; return; }
	[ -s "$file" ] || return 0
	paste -d' ' <(awk -v h="$host_ms" -v g="$guest_ms" '{
			ms = ($2 == "host") ? h : g
			if (ms == "") { print $1; next }
			split(ms, m, " ")
			print $1 " * " m[1] " / 2^" m[2]
		}' "$file" | BC_LINE_LENGTH=0 bc) <(cut -d' ' -f2- "$file")
}

# One boot of the test VM with the nested payload; Bochs, which has no 9p,
# gets the scripts in its initramfs.
run_vm_once()
{
	# shellcheck disable=SC2086
	"$TOP_DIR/scripts/vm/vmtest.sh" --vmm "$VMM" --dir "$VM_DIR" --nested \
		--files "scripts tools/record-host" -- \
		sh scripts/guest/vm-nested-trace.sh 2 $L2_TSC_KHZ $MODES >"$VM_LOG" 2>&1
}

# Run the nested payload: status 0, or 4 with its "# SKIP" reason. A run
# that fails inside a nested guest, or a test VM killed at vmtest.sh's timeout
# (the last step line names where it stopped), is tried again, up to
# ATTEMPTS boots, each failure shown: under emulation a nested guest can
# crash, stall or never finish booting for reasons that are the
# emulator's, not the merge's.
run_vm()
{
	local attempt=1 status

	while :; do
		run_vm_once
		status=$?
		sed 's/^/# /' "$VM_LOG"
		[ "$status" = 4 ] && { ktap_skip_all "$(sed -n 's/^# SKIP //p' "$VM_LOG" | head -1)"; exit "$KSFT_SKIP"; }
		[ "$status" = 0 ] && return 0
		[ "$attempt" -lt "$ATTEMPTS" ] || return "$status"
		if grep -q "step 'l2-\(boot\|run\|exit\)' failed" "$VM_LOG"; then
			echo "# attempt $attempt failed in a nested guest; its console: $(cat "$EXPORT"/*/l2-console.log 2>/dev/null |
				grep -E -m1 'BUG|Oops|Kernel panic' || echo 'no BUG or Oops')"
		elif grep -q 'the VM did not finish within' "$VM_LOG"; then
			echo "# attempt $attempt: the test VM stopped at '$(grep '^# [a-z]*: [0-9.]* s: ' "$VM_LOG" | tail -1)'"
		else
			return "$status"
		fi
		attempt=$((attempt + 1))
	done
}

# The mode's files, as vm-nested-trace.sh exports them.
use_mode()
{
	MODE=$1
	MODE_DIR=$EXPORT/$MODE
	case $MODE in
	own) HOST_DAT=$MODE_DIR/host.dat GUEST_DAT=$MODE_DIR/guest.dat ;;
	*) HOST_DAT=$MODE_DIR/$MODE-host.dat GUEST_DAT=$MODE_DIR/$MODE-guest.dat ;;
	esac
	INFO=$MODE_DIR/l2-info.txt
	DEBUGFS=$MODE_DIR/debugfs-tsc-offset.txt
	RUN_TXT=$MODE_DIR/nested-run.txt
	OUT=$OUT_ROOT/$MODE
}

# The run of a mode reported success and left its files.
check_exported()
{
	local dir=$1 f rc=0

	shift
	[ "$(cat "$dir/status" 2>/dev/null)" = 0 ] ||
		{ echo "# $dir/status: $(cat "$dir/status" 2>/dev/null || echo missing)"; rc=1; }
	for f in "$@" "$dir/l2-info.txt" "$dir/debugfs-tsc-offset.txt" "$dir/nested-run.txt"; do
		[ -s "$f" ] || { echo "# $f missing or empty"; rc=1; }
	done
	return $rc
}

info_value()
{
	sed -n "s/^$2 //p" "$1"
}

# Markers of the raw guest trace: before and after, MARKERS each, per CPU.
check_guest_markers()
{
	local events=$1 cpus=$2 markers=$3 cpu phase n rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		for phase in before after; do
			n=$(grep -c "ktt-marker $phase cpu=$cpu seq=" "$events")
			[ "$n" = "$markers" ] && continue
			echo "# ${events##*/}: $n '$phase' markers of cpu $cpu, expected $markers"
			rc=1
		done
	done
	return $rc
}

# The host's io exits as "TS X VCPU PORT" lines (PORT: 4 hex digits, bits
# 31:16 of info1 in SVM's and VMX's exit information alike).
io_exits()
{
	awk '
		$4 == "kvm_exit" && / reason (io|IO_INSTRUCTION) / && match($0, /info1 0x[0-9a-f]+/) {
			h = substr($0, RSTART + 8, RLENGTH - 8)
			p = substr(h, length(h) - 7, 4)
			match($0, /vcpu [0-9]+/)
			print $2, "X", substr($0, RSTART + 5, RLENGTH - 5), p
		}' "$1"
}

# HOST_EVENTS' io exits into IO_EXITS; one port exit per marker per vCPU.
check_host_port_exits()
{
	local events=$1 io=$2 port=$3 cpus=$4 markers=$5 cpu n rc=0

	io_exits "$events" >"$io"
	for cpu in $(seq 0 $((cpus - 1))); do
		n=$(awk -v c="$cpu" -v p="$port" '$3 == c && $4 == p' "$io" | wc -l)
		[ "$n" = $((2 * markers)) ] && continue
		echo "# ${events##*/}: $n kvm_exit of vcpu $cpu for port 0x$port, expected $((2 * markers))"
		rc=1
	done
	return $rc
}

# Every vCPU's TSC write is a kvm_write_tsc_offset whose previous offset is
# the one in debugfs and whose next one is about TSC_JUMP later.
check_tsc_write()
{
	local events=$1 debugfs=$2 cpus=$3 jump=$4 cpu line prev next sampled delta rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		sampled=$(sed -n "s/^vcpu$cpu //p" "$debugfs")
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_offset" && $5 == "vcpu=" c' "$events" |
			sed -n 's/.* prev=\([0-9]*\) next=\([0-9]*\).*/\1 \2/p' |
			while read -r prev next; do
				# bash arithmetic wraps like the u64 offsets.
				[ $((next - prev)) -gt $((jump / 2)) ] && [ $((next - prev)) -le "$jump" ] && echo "$prev $next"
			done | head -1)
		if [ -z "$line" ]; then
			echo "# ${events##*/}: no kvm_write_tsc_offset of vcpu $cpu moving the offset forward by about $jump"
			rc=1
			continue
		fi
		read -r prev next <<<"$line"
		delta=$((next - prev))
		echo "# vcpu $cpu: kvm_write_tsc_offset prev=$((prev)) next=$((next)) (+$delta), debugfs had $sampled"
		[ "$((prev))" = "$sampled" ] && continue
		echo "# vcpu $cpu: the write's previous offset $((prev)) differs from debugfs' $sampled"
		rc=1
	done
	return $rc
}

# Each vCPU's last kvm_write_tsc_multiplier is KVM's ratio for L2's rate:
# 2^frac_bits * L2 kHz / L1 kHz, rounded down (the default when equal).
# Only a recording from before L2's vCPUs were created has it.
check_l2_multiplier()
{
	local events=$1 run_txt=$2 cpus=$3 l1_khz l2_khz cpu line next frac expected rc=0

	l1_khz=$(info_value "$run_txt" l1_tsc_khz)
	l2_khz=$(info_value "$run_txt" l2_tsc_khz)
	for cpu in $(seq 0 $((cpus - 1))); do
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_multiplier" && $5 == "vcpu=" c' "$events" |
			sed -n 's/.* next=\(0x[0-9a-f]*\|[0-9]*\) frac_bits=\([0-9]*\).*/\1 \2/p' | tail -1)
		if [ -z "$line" ]; then
			echo "# ${events##*/}: no kvm_write_tsc_multiplier of vcpu $cpu"
			rc=1
			continue
		fi
		read -r next frac <<<"$line"
		# The series prints multipliers in hex.
		next=$((next))
		expected=$(echo "2^$frac * $l2_khz / $l1_khz" | bc)
		echo "# vcpu $cpu: multiplier $next >> $frac for $l2_khz kHz on a $l1_khz kHz host"
		[ "$next" = "$expected" ] && continue
		echo "# vcpu $cpu: expected multiplier $expected"
		rc=1
	done
	return $rc
}

# Where markers land against their port exits in EVENTS ("host|guest TS
# CPU EVENT INFO" lines of a merged report), the k-th marker of a vCPU
# against its k-th port exit, distances in UNIT.
show_placement()
{
	local events=$1 port=$2 unit=$3

	awk -v port="$port" -v unit="$unit" '
		$1 == "guest" && match($0, /ktt-marker [a-z]+ cpu=[0-9]+ seq=[0-9]+/) {
			split(substr($0, RSTART, RLENGTH), w, /[ =]/)
			mk[w[4], ++nm[w[4]]] = $2; ph[w[4], nm[w[4]]] = w[2]
		}
		$1 == "host" && $4 == "kvm_exit" && / reason (io|IO_INSTRUCTION) / && match($0, /info1 0x[0-9a-f]+/) {
			h = substr($0, RSTART + 8, RLENGTH - 8)
			if (substr(h, length(h) - 7, 4) != port) next
			match($0, /vcpu [0-9]+/)
			v = substr($0, RSTART + 5, RLENGTH - 5)
			ex[v, ++ne[v]] = $2
		}
		$1 == "host" { hostend = $2 }
		END {
			for (v in nm) for (k = 1; k <= nm[v]; k++) {
				d = mk[v, k] - ex[v, k]
				p = ph[v, k]
				n[p]++
				if (d < 0 && (k == 1 || mk[v, k] > ex[v, k - 1])) ok[p]++
				if (!(p in lo) || d < lo[p]) lo[p] = d
				if (!(p in hi) || d > hi[p]) hi[p] = d
				if (mk[v, k] > hostend) past[p]++
			}
			for (p in n)
				printf "#   %s markers: %d of %d right before their port exit; marker - port exit from %.0f to %.0f %s; %d after the last host event\n",
					p, ok[p] + 0, n[p], lo[p], hi[p], unit, past[p] + 0
		}' "$events"
}

# trace-cmd's offline merge of a self-traced pair: the whole guest file
# shifted by vCPU 0's debugfs offset.
show_trace_cmd_offset_merge()
{
	local host=$1 guest=$2 debugfs=$3 dir=$4 port=$5 offset

	offset=$(sed -n 's/^vcpu0 //p' "$debugfs")
	report_events -i "$host" -i "$guest" --ts-offset $((-offset)) >"$dir/trace-cmd-merge.events"
	echo "# trace-cmd report -i ${host##*/} -i ${guest##*/} --ts-offset $((-offset)) (debugfs offset of vcpu0):"
	show_placement "$dir/trace-cmd-merge.events" "$port" cycles
}

# trace-cmd's own merge of its agent pair: what it recorded (clock, the
# TSC2NSEC conversion, the guest's vCPU threads, the kvm protocol's
# samples) and where trace-cmd report puts the markers with them, in ns
# as it prints them (ns = (tsc * mult) >> shift; cycles = ns * 2^shift /
# mult, shown for scale).
show_trace_cmd_agent_merge()
{
	local host=$1 guest=$2 dir=$3 port=$4 ms mult shift

	trace-cmd dump --options -i "$host" >"$dir/host.options" 2>&1
	trace-cmd dump --options -i "$guest" >"$dir/guest.options" 2>&1
	echo "# $(cat "$MODE_DIR/trace-cmd-record.cmd" 2>/dev/null), in $(info_value "$RUN_TXT" agent_attempts) attempts, printed:"
	sed 's/^/#   /' "$MODE_DIR/trace-cmd-record.log" 2>/dev/null | head -40
	echo "# trace-cmd agent in L2 printed: $(tr '\n' ';' <"$MODE_DIR/trace-cmd-agent.log" 2>/dev/null)"
	echo "# the guest's trace_clock while the agent recorded: $(sed -n 's/^trace_clock //p' "$MODE_DIR/l2-info.txt")"
	echo "# ${host##*/}: trace clock $(sed -n '/Option TRACECLOCK/{n;p}' "$dir/host.options" | grep -o '\[[^]]*\]'), its buffer's clock $(sed -n 's/^"\(.*\)" \[clock\]$/\1/p' "$dir/host.options" | head -1)"
	ms=$(tsc2nsec_of "$host")
	echo "# ${host##*/} TSC2NSEC (mult shift): ${ms:-none}; ${guest##*/} TSC2NSEC: $(tsc2nsec_of "$guest")"
	echo "# ${host##*/} GUEST option: $(sed -n '/Option GUEST/,/Option\|^$/p' "$dir/host.options" | grep -v 'Option' | tr '\n' ';' | tr -s ' ')"
	echo "# ${guest##*/} TIME_SHIFT: $(sed -n '/Option TimeShift/,/Option [A-Z]/p' "$dir/guest.options" | grep -v 'Option' | tr '\n' ';' | tr -s '\t ' ' ')"
	report_events -i "$host" -i "$guest" >"$dir/trace-cmd-merge.events"
	echo "# trace-cmd report -t -i ${host##*/} -i ${guest##*/} (its TIME_SHIFT and TSC2NSEC applied; times compared in the ns it prints):"
	show_placement "$dir/trace-cmd-merge.events" "$port" ns
	if [ -n "$ms" ]; then
		read -r mult shift <<<"$ms"
		echo "#   (1 ns = $(echo "scale=3; 2^$shift / $mult" | bc) cycles by TSC2NSEC)"
	fi
}

run_merge()
{
	local host=$1 guest=$2 dir=$3 status

	"$MERGE" --host "$host" --guest l2="$guest" --fields time,source,event,info \
		--summary "$dir/SUMMARY.txt" >"$dir/TIMELINE.txt" 2>"$dir/merge.stderr"
	status=$?
	sed 's/^/# summary: /' "$dir/SUMMARY.txt" 2>/dev/null | head -40
	echo "# TIMELINE.txt: $(wc -l <"$dir/TIMELINE.txt") lines"
	[ "$status" = 0 ] && return 0
	echo "# $MERGE exited with status $status (3: guest events outside a run interval, 1: bad input):"
	sed 's/^/#   /' "$dir/merge.stderr" | head -10
	return 1
}

# The markers where TIMELINE puts them, as "TS M VCPU MARKER" lines.
timeline_markers()
{
	awk "$AWK_TS"'{ src = $2; sub(/!$/, "", src) }
		src ~ /^l2:[0-9]+$/ && $3 == "print:" && match($0, /ktt-marker [a-z]+ cpu=[0-9]+ seq=[0-9]+/) {
			print ts_int($1), "M", substr(src, 4), substr($0, RSTART, RLENGTH)
		}' "$1"
}

# Host events keep their raw host TSC in the timeline, so the port exits of
# the host file (DIR/host.io-exits, whose kvm_exit names the vCPU) are
# sorted in with the markers as DIR/TIMELINE.txt places them: on every
# vCPU, marker and port exit must then alternate. Prints what breaks it,
# and per phase the largest distance from a marker to its exit and the most
# other io exits of the vCPU between them.
check_timeline_order()
{
	local dir=$1 port=$2 missing

	awk "$AWK_TS"'$2 == "host" && $3 == "kvm_exit:" { print ts_int($1) }' "$dir/TIMELINE.txt" | sort >"$dir/timeline.exits"
	missing=$(awk -v p="$port" '$4 == p { print $1 }' "$dir/host.io-exits" | sort |
		comm -23 - "$dir/timeline.exits" | wc -l)
	[ "$missing" = 0 ] || { echo "# $missing port exits of the host file are not kvm_exit lines at the same TSC in TIMELINE.txt"; return 1; }
	timeline_markers "$dir/TIMELINE.txt" >"$dir/timeline.markers"
	sort -s -n -k1,1 "$dir/timeline.markers" "$dir/host.io-exits" | awk -v port="$port" '
		function fail(msg) { if (++bad <= 20) print "# " msg }
		$2 == "M" {
			v = $3; m = $4 " " $5 " " $6 " " $7
			if ($6 != "cpu=" v) fail("\"" m "\" is on l2:" v " in the timeline")
			if (pending[v] != "")
				fail("vcpu " v ": \"" pending[v] "\" has no port exit before \"" m "\" (at " $1 ")")
			pending[v] = m; pts[v] = $1; others[v] = 0
			next
		}
		$4 != port { if (pending[$3] != "") others[$3]++; next }
		{
			v = $3
			if (pending[v] == "") { fail("vcpu " v ": port exit at " $1 " has no marker before it"); next }
			split(pending[v], w, " ")
			d = $1 - pts[v]
			if (d > maxd[w[2]]) maxd[w[2]] = d
			if (others[v] > maxo[w[2]]) maxo[w[2]] = others[v]
			matched[w[2]]++
			pending[v] = ""
		}
		END {
			for (v in pending) if (pending[v] != "") fail("vcpu " v ": \"" pending[v] "\" is never followed by its port exit")
			for (p in matched)
				printf "# %s markers: %d right before their port exit, at most %d cycles before it, at most %d other io exits of the vCPU between\n", p, matched[p], maxd[p], maxo[p]
			if (bad > 20) printf "# ... %d problems in all\n", bad
			exit bad > 0
		}'
}

check_timeline_markers()
{
	local timeline=$1 cpus=$2 markers=$3 cpu phase n outside rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		for phase in before after; do
			n=$(awk -v s="l2:$cpu" -v m="ktt-marker $phase cpu=$cpu seq=" \
				'($2 == s || $2 == s "!") && $3 == "print:" && index($0, m)' "$timeline" | wc -l)
			[ "$n" = "$markers" ] && continue
			echo "# TIMELINE.txt: $n '$phase' markers on l2:$cpu, expected $markers"
			rc=1
		done
	done
	outside=$(awk '$2 ~ /!$/' "$timeline" | wc -l)
	[ "$outside" = 0 ] || { echo "# TIMELINE.txt: $outside guest events outside a run interval"; rc=1; }
	return $rc
}

# "TS SOURCE CPU EVENT" per event, SOURCE host or guest, of a timeline
# written with --fields time,source,cpu,event.
timeline_events()
{
	awk "$AWK_TS"'{ src = $2; sub(/[!?]+$/, "", src); c = $3; gsub(/\[|\]/, "", c); e = $4; sub(/:$/, "", e)
		print ts_int($1), (src == "host" ? "host" : "guest"), c + 0, e }' "$1"
}

# Writes the annotated copies to DIR/sync and the timeline they must
# match, its times as trace-cmd shows the copies (DIR/sync-timeline.shown).
run_sync_out()
{
	local host=$1 guest=$2 dir=$3

	"$MERGE" --host "$host" --guest l2="$guest" --fields time,source,cpu,event \
		--sync-out "$dir/sync" --force --output "$dir/sync-timeline.txt" 2>"$dir/sync.stderr" ||
		{ sed 's/^/#   /' "$dir/sync.stderr" | head -10; return 1; }
	timeline_events "$dir/sync-timeline.txt" >"$dir/sync-timeline.events"
	tsc_to_shown "$dir/sync-timeline.events" "$(tsc2nsec_of "$dir/sync/${host##*/}")" \
		"$(tsc2nsec_of "$dir/sync/${guest##*/}")" >"$dir/sync-timeline.shown"
}

# Two event lists, line by line: the first difference and the counts.
compare_events()
{
	local expected=$1 actual=$2 what=$3 n diffs

	n=$(wc -l <"$expected")
	diffs=$(diff "$expected" "$actual" | grep -c '^[<>]')
	echo "# $what: $(wc -l <"$actual") events against kvm-tsc-merge's $n ($(awk '$2 == "guest"' "$expected" | wc -l) of the guest), $diffs lines differ"
	[ "$diffs" = 0 ] && [ "$n" -gt 0 ] && return 0
	diff "$expected" "$actual" | head -6 | sed 's/^/#   /'
	return 1
}

# trace-cmd report of the copies: every event, host and guest, at the same
# host time and in the same order as kvm-tsc-merge's timeline.
check_sync_report()
{
	local host=$1 guest=$2 dir=$3 h=${1##*/} g=${2##*/}

	run_sync_out "$host" "$guest" "$dir" || return 1
	echo "# --sync-out wrote: $(cd "$dir/sync" && wc -c "$h" "$g" | head -2 | tr '\n' ' ')"
	[ "$(head -c 40 "$dir/sync-timeline.shown")" = "$(head -c 40 "$dir/sync-timeline.events")" ] ||
		echo "# the copies have TSC2NSEC: the timeline's host TSCs compared as the ns trace-cmd shows"
	report_events -i "$dir/sync/$h" -i "$dir/sync/$g" | awk '{ print $2, $1, $3 + 0, $4 }' \
		>"$dir/sync-report.events"
	compare_events "$dir/sync-timeline.shown" "$dir/sync-report.events" \
		"trace-cmd report -i sync/$h -i sync/$g"
}

# KernelShark's library on the copies: the guest stream's entries at
# kvm-tsc-merge's host times (sorted: libkshark orders ties its own way).
check_sync_kshark()
{
	local host=$1 guest=$2 dir=$3

	[ -s "$dir/sync-timeline.shown" ] || { echo "# no --sync-out copies"; return 1; }
	awk '$2 == "guest" { print $1, $3, $4 }' "$dir/sync-timeline.shown" | sort >"$dir/sync-guest.events"
	"$KSHARK_TIMES" "$dir/sync/${host##*/}" "$dir/sync/${guest##*/}" | sort >"$dir/kshark.events" || return 1
	awk '{ print $1, "guest", $2, $3 }' "$dir/sync-guest.events" >"$dir/sync-guest.expected"
	awk '{ print $1, "guest", $2, $3 }' "$dir/kshark.events" >"$dir/kshark.actual"
	compare_events "$dir/sync-guest.expected" "$dir/kshark.actual" "libkshark, guest stream"
}

# KernelShark's KVM combo plot on the copies: libkshark's host/guest
# mapping, and each vCPU thread's kvm_entry and kvm_exit in the host
# stream that mapping names (the top level, where KernelShark looks).
check_sync_combo()
{
	local host=$1 guest=$2 dir=$3 rc

	"$KSHARK_TIMES" --combo "$dir/sync/${host##*/}" "$dir/sync/${guest##*/}" >"$dir/kshark-combo.txt"
	rc=$?
	sed 's/^/# /' "$dir/kshark-combo.txt"
	return $rc
}

# trace-cmd report of the host copy is the input's, line for line, but
# for record-host.sh's instance name, which becomes the top level's padding.
check_sync_host_report()
{
	local host=$1 dir=$2 n

	trace-cmd report -i "$host" 2>/dev/null | sed -E 's/^(kvm-tsc-record: )? *//' >"$dir/host.report"
	trace-cmd report -i "$dir/sync/${host##*/}" 2>/dev/null | sed -E 's/^ *//' >"$dir/sync-host.report"
	n=$(wc -l <"$dir/host.report")
	echo "# trace-cmd report of ${host##*/} and of its copy: $n and $(wc -l <"$dir/sync-host.report") lines"
	[ "$n" -gt 1 ] && cmp -s "$dir/host.report" "$dir/sync-host.report" && return 0
	diff "$dir/host.report" "$dir/sync-host.report" | head -4 | sed 's/^/#   /'
	return 1
}

# The Perfetto trace of the pair, decoded by protoc: Perfetto's import
# rules hold (pftrace-check.awk), and the guest's events (machine 1) are at
# the host nanosecond of the timeline written with -k KHZ, each in the
# bundle of its vCPU, the guest's CPU.
check_perfetto()
{
	local host=$1 guest=$2 dir=$3 khz=$4

	"$MERGE" --host "$host" --guest l2="$guest" --tsc-khz "$khz" \
		--fields time,source,cpu,event --perfetto "$dir/pair.pftrace" \
		--output "$dir/ns-timeline.txt" 2>"$dir/perfetto.stderr" ||
		{ sed 's/^/#   /' "$dir/perfetto.stderr" | head -10; return 1; }
	echo "# pair.pftrace: $(wc -c <"$dir/pair.pftrace") bytes for $(wc -l <"$dir/ns-timeline.txt") events"
	timeline_events "$dir/ns-timeline.txt" | awk '$2 == "guest" { print $1, "guest", $3, $4 }' |
		sort >"$dir/ns-guest.expected"
	protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" "$PROTO_DIR/perfetto_trace.proto" \
		<"$dir/pair.pftrace" >"$dir/pair.decoded" 2>"$dir/protoc.stderr" ||
		{ sed 's/^/#   /' "$dir/protoc.stderr" | head -5; return 1; }
	awk -f "$PFTRACE_CHECK" "$dir/pair.decoded" >"$dir/pair.check" ||
		{ sed 's/^/#   /' "$dir/pair.check" | tail -5; return 1; }
	echo "# pftrace-check.awk on pair.pftrace: $(cat "$dir/pair.check") (ok BUNDLES EVENTS)"
	awk -f "$PFTRACE_EVENTS" "$dir/pair.decoded" >"$dir/pair.pfevents" &&
		rm "$dir/pair.decoded"
	awk -F'\t' '$1 == "ftrace" && $2 == 1 { print $4, "guest", $3, $6 }' \
		"$dir/pair.pfevents" | sort >"$dir/pftrace-guest.actual"
	compare_events "$dir/ns-guest.expected" "$dir/pftrace-guest.actual" "protoc --decode of pair.pftrace, machine 1"
}

# check DESCRIPTION COMMAND...: one KTAP line for the mode, a failure
# without running COMMAND when the mode has no trace pair; in the planning
# pass only counted.
check()
{
	local what="$MODE: $1"

	shift
	if [ -n "$PLANNING" ]; then
		PLANNED=$((PLANNED + 1))
		return 0
	fi
	if [ -n "$BROKEN" ]; then
		ktap_test_fail "$what"
		return 1
	fi
	if "$@"; then
		ktap_test_pass "$what"
		return 0
	fi
	ktap_test_fail "$what"
	return 1
}

# A check of kvm-tsc-merge: a skip while it is not built.
merge_check()
{
	if [ -z "$PLANNING" ] && [ -z "$BROKEN" ] && [ ! -x "$MERGE" ]; then
		ktap_test_skip "$MODE: $1 ($MERGE not built)"
		return 0
	fi
	check "$@"
}

# Diagnostics and preparations: not in the planning pass, nor for a mode
# without its files.
run_step()
{
	[ -z "$PLANNING" ] && [ -z "$BROKEN" ] && "$@"
	return 0
}

# The mode's facts from its l2-info.txt, and its raw events.
prepare_mode()
{
	rm -rf "$OUT"
	mkdir -p "$OUT"
	CPUS=$(info_value "$INFO" cpus)
	MARKERS=$(info_value "$INFO" markers_per_phase)
	JUMP=$(info_value "$INFO" tsc_jump)
	PORT_HEX=$(printf '%04x' "$(info_value "$INFO" marker_port)")
	sed "s/^/# $MODE: /" "$RUN_TXT"
	echo "# $MODE: ${HOST_DAT##*/}: $(wc -c <"$HOST_DAT") bytes, ${GUEST_DAT##*/}: $(wc -c <"$GUEST_DAT") bytes"
	raw_events "$HOST_DAT" >"$OUT/host.events"
	raw_events "$GUEST_DAT" >"$OUT/guest.events"
	echo "# ${HOST_DAT##*/}: $(wc -l <"$OUT/host.events") events: $(awk '{ print $4 }' "$OUT/host.events" | sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')"
	echo "# ${GUEST_DAT##*/}: $(wc -l <"$OUT/guest.events") events: $(awk '{ print $4 }' "$OUT/guest.events" | sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')"
}

show_trace_cmd_merge()
{
	if [ "$MODE" = agent ]; then
		show_trace_cmd_agent_merge "$HOST_DAT" "$GUEST_DAT" "$OUT" "$PORT_HEX"
	else
		show_trace_cmd_offset_merge "$HOST_DAT" "$GUEST_DAT" "$DEBUGFS" "$OUT" "$PORT_HEX"
	fi
}

# Every check of one mode's pair; with PLANNING set, only their count.
check_mode()
{
	local h g

	use_mode "$1"
	h=${HOST_DAT##*/} g=${GUEST_DAT##*/}
	BROKEN=
	check "the nested run in the test VM recorded and exported $h and $g" \
		check_exported "$MODE_DIR" "$HOST_DAT" "$GUEST_DAT" || BROKEN="no trace pair"
	[ -n "$BROKEN" ] && echo "# $MODE: no trace pair to check (see $VM_LOG and $MODE_DIR)"
	run_step prepare_mode
	check "$g has ${MARKERS:-its} markers before and after the TSC write on each vCPU" \
		check_guest_markers "$OUT/guest.events" "$CPUS" "$MARKERS"
	check "$h has one kvm_exit for the marker port per marker on each vCPU" \
		check_host_port_exits "$OUT/host.events" "$OUT/host.io-exits" "$PORT_HEX" "$CPUS" "$MARKERS"
	check "$h has each vCPU's guest TSC write as kvm_write_tsc_offset, from the offset debugfs showed" \
		check_tsc_write "$OUT/host.events" "$DEBUGFS" "$CPUS" "$JUMP"
	[ "$MODE" = own ] &&
		check "$h has each vCPU's TSC multiplier for L2's rate" \
			check_l2_multiplier "$OUT/host.events" "$RUN_TXT" "$CPUS"
	run_step show_trace_cmd_merge
	merge_check "kvm-tsc-merge merges the pair and exits 0" run_merge "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "in the merged timeline every marker comes right before its own port exit" \
		check_timeline_order "$OUT" "$PORT_HEX"
	merge_check "the merged timeline has every vCPU's markers before and after the TSC write" \
		check_timeline_markers "$OUT/TIMELINE.txt" "$CPUS" "$MARKERS"
	merge_check "trace-cmd report on the --sync-out copies matches the timeline event by event" \
		check_sync_report "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "libkshark puts the guest events of the --sync-out copies at the timeline's host times" \
		check_sync_kshark "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "KernelShark's KVM combo: each vCPU thread's kvm_entry and kvm_exit in the host stream libkshark maps the guest to" \
		check_sync_combo "$HOST_DAT" "$GUEST_DAT" "$OUT"
	merge_check "trace-cmd report of the host copy is the input's, line for line" \
		check_sync_host_report "$HOST_DAT" "$OUT"
	[ "$MODE" = own ] &&
		merge_check "the Perfetto trace decodes with protoc, the guest's events at the timeline's host ns" \
			check_perfetto "$HOST_DAT" "$GUEST_DAT" "$OUT" "$(info_value "$RUN_TXT" l1_tsc_khz)"
	return 0
}

main()
{
	local mode no_vm='' rc=0

	use_ktap
	need_cmd trace-cmd trace-cmd
	while [ $# -gt 0 ]; do
		case $1 in
		--no-vm) no_vm=1 ;;
		--vmm) VMM=${2:?--vmm needs qemu or bochs}; shift ;;
		--dir) VM_DIR=$(realpath -m "${2:?--dir needs a directory}"); shift ;;
		--l2-tsc-khz) L2_TSC_KHZ=${2:?--l2-tsc-khz needs a rate in kHz}; shift ;;
		--modes) MODES=${2:?--modes needs a list of modes}; shift ;;
		*) die "$USAGE" ;;
		esac
		shift
	done
	EXPORT=$VM_DIR/export OUT_ROOT=$VM_DIR/merge VM_LOG=$VM_DIR.log
	for mode in $MODES; do
		case $mode in own | agent | late) ;; *) die "--modes: unknown mode '$mode' (own, agent, late)" ;; esac
	done
	ktap_print_header
	[ -n "$no_vm" ] || { run_vm; rc=$?; }
	[ "$rc" = 0 ] || echo "# the nested runs exited with status $rc"
	PLANNING=1
	for mode in $MODES; do
		check_mode "$mode"
	done
	PLANNING=
	ktap_set_plan "$PLANNED"
	for mode in $MODES; do
		check_mode "$mode"
	done
	ktap_finished
}

main "$@"
