#!/bin/bash
# merge-e2e-test.sh: KTAP test of kvm-tsc-merge on a real host + nested-guest trace pair recorded in the test VM: every guest marker must land right before its own port exit.
#
# usage: merge-e2e-test.sh [--no-vm] [--l2-tsc-khz KHZ]
#
# Boots the test VM with VMTEST_NESTED=1 (which gives it one CPU), runs
# scripts/vm-nested-trace.sh there (VMTEST_DIR defaults to build/vmtest-e2e;
# a second run if the nested guest itself failed); --no-vm checks the files
# of the previous run in $VMTEST_DIR/export instead. --l2-tsc-khz runs the
# nested guest's TSC at KHZ through TSC scaling (VMTEST_VMM=bochs: TCG has
# none), and the host trace must show L2's vCPUs at that multiplier. Checks the raw traces
# with trace-cmd, then, when build/tools/kvm-tsc-merge exists, merges them
#
#     kvm-tsc-merge --host host.dat --guest l2=guest.dat \
#         --fields time,source,event,info --summary SUMMARY.txt >TIMELINE.txt
#
# (both in $VMTEST_DIR/merge/) and checks the timeline: one line per event,
# "<host tsc> <source> <event>: <info>", source "host" or "l2:<vcpu>" with a
# "!" when the event fell outside a run interval of its vCPU thread. The
# guest writes each marker ("ktt-marker before|after cpu=N seq=K") and at
# once a byte to the marker port, so on the host the next kvm_exit of vCPU N
# with reason io and that port in info1 bits 31:16 is that marker's own; a
# correct timeline alternates marker, port exit, marker, port exit on every
# vCPU, before and after the guest's TSC jump alike. trace-cmd's own offline
# merge (one --ts-offset from KVM's debugfs) is shown for comparison as TAP
# diagnostics. Last it writes --sync-out copies of the pair ($VMTEST_DIR/
# merge/sync/) and checks them with trace-cmd report (every host and guest
# event at the timeline's host TSC, in its order) and with libkshark
# (build/tools/kshark-times: the guest stream at those times), and decodes
# its Perfetto trace (-p) with protoc to find the guest's events at the
# timeline's host nanoseconds. Exit status:
# 0 all passed, 1 a failure, 4 skipped.

set -u

. "$(dirname "$0")/../common.sh"

readonly MERGE=$BUILD_DIR/tools/kvm-tsc-merge
export VMTEST_DIR=${VMTEST_DIR:-$BUILD_DIR/vmtest-e2e}
readonly EXPORT=$VMTEST_DIR/export
readonly OUT=$VMTEST_DIR/merge
readonly HOST_DAT=$EXPORT/host.dat
readonly GUEST_DAT=$EXPORT/guest.dat
readonly INFO=$EXPORT/l2-info.txt
readonly DEBUGFS=$EXPORT/debugfs-tsc-offset.txt
readonly TIMELINE=$OUT/TIMELINE.txt
readonly SUMMARY=$OUT/SUMMARY.txt
readonly SYNC=$OUT/sync
readonly KSHARK_TIMES=$BUILD_DIR/tools/kshark-times
readonly PROTO_DIR=$TOP_DIR/tools/tsc-merge/proto
readonly PFTRACE_EVENTS=$TOP_DIR/tools/tsc-merge/tests/pftrace-events.awk
readonly PLAN=11
readonly VM_LOG=$VMTEST_DIR.log
readonly ATTEMPTS=2
# The nested guest's TSC rate in kHz, when --l2-tsc-khz sets one.
L2_TSC_KHZ=

# One line per event of a trace-cmd report (any number of -i files), as
# "FILE TS CPU EVENT INFO": FILE is "guest" for lines of guest.dat, "host"
# otherwise. -N: the kernel's own print formats, as kvm-tsc-merge prints.
report_events()
{
	trace-cmd report -N "$@" 2>/dev/null | awk '
		match($0, /\[[0-9]+\] *[0-9]+: +[a-z_0-9]+: */) {
			head = substr($0, RSTART, RLENGTH)
			info = substr($0, RSTART + RLENGTH)
			gsub(/\[|\]|:/, " ", head)
			split(head, f, " +")
			file = ($0 ~ /^ *guest\.dat:/) ? "guest" : "host"
			print file, f[3], f[2], f[4], info
		}'
}

info_value()
{
	sed -n "s/^$1 //p" "$INFO"
}

# One boot of the test VM with the nested payload; Bochs, which has no 9p,
# gets the scripts in its initramfs.
run_vm_once()
{
	VMTEST_NESTED=1 VMTEST_FILES=scripts "$TOP_DIR/scripts/vmtest.sh" \
		sh scripts/vm-nested-trace.sh 2 $L2_TSC_KHZ >"$VM_LOG" 2>&1
}

# Run the nested payload: status 0, or 4 with its "# SKIP" reason. A run
# that fails inside the nested guest (it crashed or stalled under TCG) is
# tried again, up to ATTEMPTS runs, each failure shown.
run_vm()
{
	local attempt=1 status

	while :; do
		run_vm_once
		status=$?
		sed 's/^/# /' "$VM_LOG"
		[ "$status" = 4 ] && { ktap_skip_all "$(sed -n 's/^# SKIP //p' "$VM_LOG" | head -1)"; exit "$KSFT_SKIP"; }
		[ "$status" = 0 ] && return 0
		grep -q "step 'l2-\(boot\|run\)' failed" "$VM_LOG" && [ "$attempt" -lt "$ATTEMPTS" ] || return "$status"
		echo "# attempt $attempt failed in the nested guest; its console: $(grep -E -m1 'BUG|Oops|Kernel panic' "$EXPORT/l2-console.log" 2>/dev/null || echo 'no BUG or Oops')"
		attempt=$((attempt + 1))
	done
}

check_exported()
{
	local f rc=0

	for f in "$HOST_DAT" "$GUEST_DAT" "$INFO" "$DEBUGFS"; do
		[ -s "$f" ] || { echo "# $f missing or empty"; rc=1; }
	done
	return $rc
}

# Markers of the raw guest trace: before and after, MARKERS each, per CPU.
check_guest_markers()
{
	local cpus=$1 markers=$2 cpu phase n rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		for phase in before after; do
			n=$(grep -c "ktt-marker $phase cpu=$cpu seq=" "$OUT/guest.events")
			[ "$n" = "$markers" ] && continue
			echo "# guest.dat: $n '$phase' markers of cpu $cpu, expected $markers"
			rc=1
		done
	done
	return $rc
}

check_host_port_exits()
{
	local cpus=$1 markers=$2 cpu n rc=0

	io_exits "$OUT/host.events" >"$OUT/host.io-exits"
	for cpu in $(seq 0 $((cpus - 1))); do
		n=$(awk -v c="$cpu" -v p="$PORT_HEX" '$3 == c && $4 == p' "$OUT/host.io-exits" | wc -l)
		[ "$n" = $((2 * markers)) ] && continue
		echo "# host.dat: $n kvm_exit of vcpu $cpu for port 0x$PORT_HEX, expected $((2 * markers))"
		rc=1
	done
	return $rc
}

# Every vCPU's TSC write is a kvm_write_tsc_offset whose previous offset is
# the one in debugfs and whose next one is about TSC_JUMP later.
check_tsc_write()
{
	local cpus=$1 jump=$2 cpu line prev next sampled delta rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		sampled=$(sed -n "s/^vcpu$cpu //p" "$DEBUGFS")
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_offset" && $5 == "vcpu=" c' "$OUT/host.events" |
			sed -n 's/.* prev=\([0-9]*\) next=\([0-9]*\).*/\1 \2/p' |
			while read -r prev next; do
				# bash arithmetic wraps like the u64 offsets.
				[ $((next - prev)) -gt $((jump / 2)) ] && [ $((next - prev)) -le "$jump" ] && echo "$prev $next"
			done | head -1)
		if [ -z "$line" ]; then
			echo "# host.dat: no kvm_write_tsc_offset of vcpu $cpu moving the offset forward by about $jump"
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
check_l2_multiplier()
{
	local cpus=$1 l1_khz l2_khz cpu line next frac expected rc=0

	l1_khz=$(sed -n 's/^l1_tsc_khz //p' "$EXPORT/nested-run.txt")
	l2_khz=$(sed -n 's/^l2_tsc_khz //p' "$EXPORT/nested-run.txt")
	for cpu in $(seq 0 $((cpus - 1))); do
		line=$(awk -v c="$cpu" '$4 == "kvm_write_tsc_multiplier" && $5 == "vcpu=" c' "$OUT/host.events" |
			sed -n 's/.* next=\([0-9]*\) frac_bits=\([0-9]*\).*/\1 \2/p' | tail -1)
		if [ -z "$line" ]; then
			echo "# host.dat: no kvm_write_tsc_multiplier of vcpu $cpu"
			rc=1
			continue
		fi
		read -r next frac <<<"$line"
		expected=$(echo "2^$frac * $l2_khz / $l1_khz" | bc)
		echo "# vcpu $cpu: multiplier $next >> $frac for $l2_khz kHz on a $l1_khz kHz host"
		[ "$next" = "$expected" ] && continue
		echo "# vcpu $cpu: expected multiplier $expected"
		rc=1
	done
	return $rc
}

run_merge()
{
	local status

	"$MERGE" --host "$HOST_DAT" --guest l2="$GUEST_DAT" --fields time,source,event,info \
		--summary "$SUMMARY" >"$TIMELINE" 2>"$OUT/merge.stderr"
	status=$?
	sed 's/^/# summary: /' "$SUMMARY" 2>/dev/null | head -40
	[ "$status" = 0 ] && return 0
	echo "# $MERGE exited with status $status (3: guest events outside a run interval, 1: bad input):"
	sed 's/^/#   /' "$OUT/merge.stderr" | head -10
	return 1
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

# The markers where the timeline puts them, as "TS M VCPU MARKER" lines.
timeline_markers()
{
	awk '{ src = $2; sub(/!$/, "", src) }
		src ~ /^l2:[0-9]+$/ && $3 == "print:" && match($0, /ktt-marker [a-z]+ cpu=[0-9]+ seq=[0-9]+/) {
			print $1, "M", substr(src, 4), substr($0, RSTART, RLENGTH)
		}' "$TIMELINE"
}

# Host events keep their raw host TSC in the timeline, so the port exits of
# host.dat (whose kvm_exit names the vCPU) are sorted in with the markers as
# the timeline places them: on every vCPU, marker and port exit must then
# alternate. Prints what breaks it, and per phase the largest distance from
# a marker to its exit and the most other io exits of the vCPU between them.
check_timeline_order()
{
	local missing

	awk '$2 == "host" && $3 == "kvm_exit:" { print $1 }' "$TIMELINE" | sort >"$OUT/timeline.exits"
	missing=$(awk -v p="$PORT_HEX" '$4 == p { print $1 }' "$OUT/host.io-exits" | sort |
		comm -23 - "$OUT/timeline.exits" | wc -l)
	[ "$missing" = 0 ] || { echo "# $missing port exits of host.dat are not kvm_exit lines at the same TSC in TIMELINE.txt"; return 1; }
	timeline_markers >"$OUT/timeline.markers"
	sort -s -n -k1,1 "$OUT/timeline.markers" "$OUT/host.io-exits" | awk -v port="$PORT_HEX" '
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
	local cpus=$1 markers=$2 cpu phase n outside rc=0

	for cpu in $(seq 0 $((cpus - 1))); do
		for phase in before after; do
			n=$(awk -v s="l2:$cpu" -v m="ktt-marker $phase cpu=$cpu seq=" \
				'($2 == s || $2 == s "!") && $3 == "print:" && index($0, m)' "$TIMELINE" | wc -l)
			[ "$n" = "$markers" ] && continue
			echo "# TIMELINE.txt: $n '$phase' markers on l2:$cpu, expected $markers"
			rc=1
		done
	done
	outside=$(awk '$2 ~ /!$/' "$TIMELINE" | wc -l)
	[ "$outside" = 0 ] || { echo "# TIMELINE.txt: $outside guest events outside a run interval"; rc=1; }
	return $rc
}

# trace-cmd's offline merge: the whole guest file shifted by vCPU 0's
# debugfs offset. Where do the markers land against their port exits?
show_trace_cmd_merge()
{
	local offset

	offset=$(sed -n 's/^vcpu0 //p' "$DEBUGFS")
	report_events -i "$HOST_DAT" -i "$GUEST_DAT" --ts-offset $((-offset)) >"$OUT/trace-cmd-merge.events"
	echo "# trace-cmd report -i host.dat -i guest.dat --ts-offset $((-offset)) (debugfs offset of vcpu0):"
	awk -v port="$PORT_HEX" '
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
			last = $2
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
				printf "#   %s markers: %d of %d right before their port exit; marker - port exit from %.0f to %.0f cycles; %d after the last host event\n",
					p, ok[p], n[p], lo[p], hi[p], past[p]
		}' "$OUT/trace-cmd-merge.events"
}

# "TS SOURCE CPU EVENT" per event, SOURCE host or guest, of a timeline
# written with --fields time,source,cpu,event.
timeline_events()
{
	awk '{ src = $2; sub(/[!?]+$/, "", src); c = $3; gsub(/\[|\]/, "", c); e = $4; sub(/:$/, "", e)
		print $1, (src == "host" ? "host" : "guest"), c + 0, e }' "$1"
}

# Writes the annotated copies to $SYNC and the timeline they must match.
run_sync_out()
{
	"$MERGE" --host "$HOST_DAT" --guest l2="$GUEST_DAT" --fields time,source,cpu,event \
		--sync-out "$SYNC" --force --output "$OUT/sync-timeline.txt" 2>"$OUT/sync.stderr" ||
		{ sed 's/^/#   /' "$OUT/sync.stderr" | head -10; return 1; }
	timeline_events "$OUT/sync-timeline.txt" >"$OUT/sync-timeline.events"
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
# host TSC and in the same order as kvm-tsc-merge's timeline.
check_sync_report()
{
	run_sync_out || return 1
	echo "# --sync-out wrote: $(cd "$SYNC" && wc -c host.dat guest.dat | head -2 | tr '\n' ' ')"
	report_events -i "$SYNC/host.dat" -i "$SYNC/guest.dat" | awk '{ print $2, $1, $3 + 0, $4 }' \
		>"$OUT/sync-report.events"
	compare_events "$OUT/sync-timeline.events" "$OUT/sync-report.events" \
		"trace-cmd report -i sync/host.dat -i sync/guest.dat"
}

# KernelShark's library on the copies: the guest stream's entries at
# kvm-tsc-merge's host times (sorted: libkshark orders ties its own way).
check_sync_kshark()
{
	[ -s "$OUT/sync-timeline.events" ] || { echo "# no --sync-out copies"; return 1; }
	awk '$2 == "guest" { print $1, $3, $4 }' "$OUT/sync-timeline.events" | sort >"$OUT/sync-guest.events"
	"$KSHARK_TIMES" "$SYNC/host.dat" "$SYNC/guest.dat" | sort >"$OUT/kshark.events" || return 1
	awk '{ print $1, "guest", $2, $3 }' "$OUT/sync-guest.events" >"$OUT/sync-guest.expected"
	awk '{ print $1, "guest", $2, $3 }' "$OUT/kshark.events" >"$OUT/kshark.actual"
	compare_events "$OUT/sync-guest.expected" "$OUT/kshark.actual" "libkshark, guest stream"
}

# The Perfetto trace of the pair, decoded by protoc: the guest's events
# (machine 1) at the host nanosecond of the timeline written with -k, each
# on its vCPU's track.
check_perfetto()
{
	local khz

	khz=$(sed -n 's/^l1_tsc_khz //p' "$EXPORT/nested-run.txt")
	"$MERGE" --host "$HOST_DAT" --guest l2="$GUEST_DAT" --tsc-khz "$khz" \
		--fields time,source,cpu,event --perfetto "$OUT/pair.pftrace" \
		--output "$OUT/ns-timeline.txt" 2>"$OUT/perfetto.stderr" ||
		{ sed 's/^/#   /' "$OUT/perfetto.stderr" | head -10; return 1; }
	echo "# pair.pftrace: $(wc -c <"$OUT/pair.pftrace") bytes for $(wc -l <"$OUT/ns-timeline.txt") events"
	timeline_events "$OUT/ns-timeline.txt" |
		awk '$2 == "guest" { ns = $1; sub(/\./, "", ns); sub(/^0+/, "", ns); print ns, "guest", $3, $4 }' |
		sort >"$OUT/ns-guest.expected"
	protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" "$PROTO_DIR/perfetto_trace.proto" \
		<"$OUT/pair.pftrace" 2>"$OUT/protoc.stderr" | awk -f "$PFTRACE_EVENTS" >"$OUT/pair.pfevents" ||
		{ sed 's/^/#   /' "$OUT/protoc.stderr" | head -5; return 1; }
	awk -F'\t' '$1 != "track" && $2 == 1 { sub(/^vCPU /, "", $3); print $1, "guest", $3, $5 }' \
		"$OUT/pair.pfevents" | sort >"$OUT/pftrace-guest.actual"
	compare_events "$OUT/ns-guest.expected" "$OUT/pftrace-guest.actual" "protoc --decode of pair.pftrace, machine 1"
}

main()
{
	local cpus markers jump rc what no_vm=

	use_ktap
	need_cmd trace-cmd trace-cmd
	ktap_print_header
	if [ "${1:-}" = --no-vm ]; then
		no_vm=1
		shift
	fi
	if [ "${1:-}" = --l2-tsc-khz ]; then
		L2_TSC_KHZ=${2:?--l2-tsc-khz needs a rate in kHz}
	fi
	if [ -z "$no_vm" ]; then
		run_vm
		rc=$?
	else
		rc=0
	fi
	ktap_set_plan $PLAN
	if [ "$rc" = 0 ] && check_exported; then
		ktap_test_pass "the nested run in the test VM recorded and exported host.dat and guest.dat"
	else
		ktap_test_fail "the nested run in the test VM recorded and exported host.dat and guest.dat"
		ktap_exit_fail_msg "no trace pair to check (see $VMTEST_DIR)"
	fi
	rm -rf "$OUT"
	mkdir -p "$OUT"
	cpus=$(info_value cpus)
	markers=$(info_value markers_per_phase)
	jump=$(info_value tsc_jump)
	PORT_HEX=$(printf '%04x' "$(info_value marker_port)")
	sed 's/^/# /' "$EXPORT/nested-run.txt"
	echo "# host.dat: $(wc -c <"$HOST_DAT") bytes, guest.dat: $(wc -c <"$GUEST_DAT") bytes"
	report_events -i "$HOST_DAT" >"$OUT/host.events"
	report_events -i "$GUEST_DAT" >"$OUT/guest.events"
	echo "# host.dat: $(wc -l <"$OUT/host.events") events: $(awk '{ print $4 }' "$OUT/host.events" | sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')"
	echo "# guest.dat: $(wc -l <"$OUT/guest.events") events: $(awk '{ print $4 }' "$OUT/guest.events" | sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }')"
	ktap_test_result "guest.dat has $markers markers before and after the TSC write on each of $cpus vCPUs" \
		check_guest_markers "$cpus" "$markers"
	ktap_test_result "host.dat has one kvm_exit for port 0x$PORT_HEX per marker on each vCPU" \
		check_host_port_exits "$cpus" "$markers"
	ktap_test_result "host.dat has each vCPU's guest TSC write as kvm_write_tsc_offset, from the offset debugfs showed" \
		check_tsc_write "$cpus" "$jump"
	ktap_test_result "host.dat has each vCPU's TSC multiplier for L2's rate" check_l2_multiplier "$cpus"
	show_trace_cmd_merge
	if [ ! -x "$MERGE" ]; then
		for what in "kvm-tsc-merge merges the pair and exits 0" \
			"in the merged timeline every marker comes right before its own port exit" \
			"the merged timeline has every vCPU's markers before and after the TSC write" \
			"trace-cmd report on the --sync-out copies matches the timeline event by event" \
			"libkshark puts the guest events of the --sync-out copies at the timeline's host times" \
			"the Perfetto trace decodes with protoc, the guest's events at the timeline's host ns"; do
			ktap_test_skip "$what ($MERGE not built)"
		done
		ktap_finished
	fi
	ktap_test_result "kvm-tsc-merge merges the pair and exits 0" run_merge
	echo "# TIMELINE.txt: $(wc -l <"$TIMELINE") lines"
	ktap_test_result "in the merged timeline every marker comes right before its own port exit" \
		check_timeline_order
	ktap_test_result "the merged timeline has every vCPU's markers before and after the TSC write" \
		check_timeline_markers "$cpus" "$markers"
	ktap_test_result "trace-cmd report on the --sync-out copies matches the timeline event by event" \
		check_sync_report
	ktap_test_result "libkshark puts the guest events of the --sync-out copies at the timeline's host times" \
		check_sync_kshark
	ktap_test_result "the Perfetto trace decodes with protoc, the guest's events at the timeline's host ns" \
		check_perfetto
	ktap_finished
}

main "$@"
