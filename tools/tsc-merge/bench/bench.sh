#!/bin/bash
# bench.sh: time kvm-tsc-merge's outputs, trace-cmd report, copying the files and the bare libtracecmd floors on a generated host+guest trace pair.
#
#   [EVENTS=N] tools/tsc-merge/bench/bench.sh     (N events in total, default 5000000)
#
# A benchmark, not a test: it prints seconds, events/s, peak RSS and peak
# anonymous memory (RssAnon: the heap, not the trace files' pages) per
# command, and the output's size. The pair is written to build/bench/ with
# mktrace and reused while this script, mktrace.c, the fixture formats and
# EVENTS stay the same. The pair: one VMM with two vCPUs, each run on host
# CPU N; two guest events per run interval on guest CPU N, inside it.

set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../../../scripts/lib/common.sh
. "$(dirname "$0")/../../../scripts/lib/common.sh"

readonly EVENTS=${EVENTS:-5000000}
readonly BENCH_DIR=$BUILD_DIR/bench
readonly SRC_DIR=$TOP_DIR/tools/tsc-merge
readonly FIXTURE=$SRC_DIR/tests/tracefs
readonly MERGE=$BUILD_DIR/tools/kvm-tsc-merge
readonly MKTRACE=$BUILD_DIR/tools/mktrace
readonly ITERATE=$BUILD_DIR/tools/iterate
readonly HOST_DAT=$BENCH_DIR/host.dat
readonly GUEST_DAT=$BENCH_DIR/guest.dat
readonly STAMP=$BENCH_DIR/traces.stamp
readonly GNU_TIME=/usr/bin/time
readonly OUT_DIR=$BENCH_DIR/out
readonly TSC_KHZ=2000000

# Print the mktrace spec of one side of the pair: host or guest. Both sides
# walk the same schedule, so every guest event falls inside a host run.
write_spec()
{
	local side=$1

	awk -v side="$side" -v events="$EVENTS" '
	function start_host(    v, tid) {
		print "clock x86-tsc"
		print "comm " VMM " qemu-system-x86"
		for (v = 0; v < VCPUS; v++) {
			tid = VMM + 1 + v
			printf "comm %d \"CPU %d/KVM\"\n", tid, v
			# CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|..., as glibc
			printf "0 %.0f %d task:task_newtask pid=%d comm=\"CPU %d/KVM\" clone_flags=0x3d0f00\n",
			       START - 1000 + v, VMM, tid, v
		}
		for (v = 0; v < VCPUS; v++) {
			tid = VMM + 1 + v
			printf "%d %.0f %d kvm:kvm_write_tsc_multiplier vcpu_id=%d previous_tsc_multiplier=0 next_tsc_multiplier=0x100000000 frac_bits=32\n",
			       v, START + 100 * v, tid, v
			printf "%d %.0f %d kvm:kvm_write_tsc_offset vcpu_id=%d previous_tsc_offset=0 next_tsc_offset=%.0f\n",
			       v, START + 100 * v + 50, tid, v, offset[v]
		}
	}
	function start_guest(    v) {
		print "clock x86-tsc"
		print "cpus " VCPUS
		for (v = 0; v < VCPUS; v++)
			printf "comm %d worker/%d\n", GUEST_PID + v, v
	}
	function host_run(v, i, entry, leave,    tid) {
		tid = VMM + 1 + v
		printf "%d %.0f %d kvm:kvm_entry vcpu_id=%d rip=0xffffffff810a2b3c\n", v, entry, tid, v
		printf "%d %.0f %d kvm:kvm_exit vcpu_id=%d isa=2 exit_reason=%d guest_rip=0xffffffff810a2b3c\n",
		       v, leave, tid, v, REASON[i % 4 + 1]
		if (i % SWITCH_EVERY != SWITCH_EVERY - 1)
			return
		printf "%d %.0f %d sched:sched_switch prev_comm=\"CPU %d/KVM\" prev_pid=%d prev_prio=120 prev_state=1 next_comm=kworker/%d:1 next_pid=%d next_prio=120\n",
		       v, leave + 500, tid, v, tid, v, KWORKER + v
		printf "%d %.0f %d sched:sched_switch prev_comm=kworker/%d:1 prev_pid=%d prev_prio=120 prev_state=1 next_comm=\"CPU %d/KVM\" next_pid=%d next_prio=120\n",
		       v, leave + GAP - 500, KWORKER + v, v, KWORKER + v, v, tid
	}
	# The task on guest CPU v runs the print, then switches to the other
	# one: worker/v (pid GUEST_PID + v) and swapper/v (pid 0) take turns.
	function guest_run(v, i, entry,    pid, task, next_pid, next_task, state) {
		if (idle[v]) {
			pid = 0; task = "swapper/" v; state = 0
			next_pid = GUEST_PID + v; next_task = "worker/" v
		} else {
			pid = GUEST_PID + v; task = "worker/" v; state = 1
			next_pid = 0; next_task = "swapper/" v
		}
		printf "%d %.0f %d ftrace:print ip=0xffffffff81234567 buf=\"tick %d\\n\"\n",
		       v, entry + RUN / 4 + offset[v], pid, i
		printf "%d %.0f %d sched:sched_switch prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%d next_comm=%s next_pid=%d next_prio=120\n",
		       v, entry + RUN / 2 + offset[v], pid, task, pid, state, next_task, next_pid
		idle[v] = !idle[v]
	}
	# Halfway, between a kvm_exit and the next kvm_entry, as a KVM_SET_TSC would.
	function change_offset(v, ts,    new) {
		new = offset[v] + OFFSET_STEP
		if (side == "host")
			printf "%d %.0f %d kvm:kvm_write_tsc_offset vcpu_id=%d previous_tsc_offset=%.0f next_tsc_offset=%.0f\n",
			       v, ts, VMM + 1 + v, v, offset[v], new
		offset[v] = new
	}
	BEGIN {
		VMM = 1000; VCPUS = 2; KWORKER = 40; GUEST_PID = 300
		START = 1000000000000	# host TSC when the vCPUs are created
		RUN = 40000		# TSC cycles from kvm_entry to kvm_exit
		GAP = 3000		# from kvm_exit to the next kvm_entry
		SWITCH_EVERY = 64	# runs between two sched_switch pairs
		OFFSET_STEP = 2100000000
		split("96 114 123 1024", REASON)	# intr cpuid io npf (SVM)
		# Each run: kvm_entry and kvm_exit on the host, two guest events.
		runs = int((events + 4 * VCPUS - 1) / (4 * VCPUS))
		for (v = 0; v < VCPUS; v++) {
			offset[v] = 5000000 - START	# guest TSC starts near 0
			t[v] = START + 10000 + 777 * v
		}
		if (side == "host")
			start_host()
		else
			start_guest()
		for (i = 0; i < runs; i++) {
			for (v = 0; v < VCPUS; v++) {
				if (side == "host")
					host_run(v, i, t[v], t[v] + RUN)
				else
					guest_run(v, i, t[v])
				if (i == int(runs / 2))
					change_offset(v, t[v] + RUN + GAP / 2)
				t[v] += RUN + GAP
			}
		}
	}'
}

generate_traces()
{
	local formats fingerprint side

	# The pair is stale when anything that shapes it changed.
	formats=$(find "$FIXTURE" -type f | sort)
	# shellcheck disable=SC2086 # fixture paths have no blanks
	fingerprint=$({ cat "$0" "$SRC_DIR/tests/mktrace.c" $formats; echo "EVENTS=$EVENTS"; } | sha256sum)
	if [ -f "$HOST_DAT" ] && [ -f "$GUEST_DAT" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$fingerprint" ]; then
		note "reusing $HOST_DAT and $GUEST_DAT"
		return 0
	fi
	rm -f "$STAMP"
	for side in host guest; do
		note "generating $BENCH_DIR/$side.dat"
		write_spec "$side" | "$MKTRACE" -t "$FIXTURE" -o "$BENCH_DIR/$side.dat" -
	done
	echo "$fingerprint" > "$STAMP"
}

# The largest RssAnon of process PID until it exits, sampled every 20 ms.
peak_anon_kb()
{
	local pid=$1 kb peak=0

	while kb=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) && [ -n "$kb" ]; do
		[ "$kb" -gt "$peak" ] && peak=$kb
		sleep 0.02
	done
	echo "$peak"
}

# Run a command with its stdout discarded; print "seconds peak_rss_kb
# peak_anon_kb". GNU time runs it, so the sampled process is time's child.
measure()
{
	local times=$BENCH_DIR/time.out log=$BENCH_DIR/stderr.log pid child anon

	"$GNU_TIME" -o "$times" -f '%e %M' "$@" > /dev/null 2> "$log" &
	pid=$!
	until child=$(pgrep -P "$pid" | head -1) && [ -n "$child" ]; do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.005
	done
	anon=$([ -n "$child" ] && peak_anon_kb "$child" || echo 0)
	wait "$pid" || { cat "$log" >&2; die "failed: $*"; }
	echo "$(cat "$times") $anon"
}

# print_row NAME OUTPUT COMMAND...: OUTPUT is the file or directory the
# command writes ("-" for none), whose size is shown per event (of TOTAL).
print_row()
{
	local name=$1 output=$2 seconds rss_kb anon_kb bytes=0

	shift 2
	read -r seconds rss_kb anon_kb < <(measure "$@")
	[ "$output" != - ] && bytes=$(du -sb "$output" | cut -f1)
	awk -v name="$name" -v s="$seconds" -v kb="$rss_kb" -v akb="$anon_kb" -v n="$TOTAL" -v b="$bytes" 'BEGIN {
		printf "%-40s %8.2f %10.0f %8.1f %8.1f %8s\n", name, s, n / (s > 0 ? s : 0.01), kb / 1024,
			akb / 1024, b ? sprintf("%.1f", b / n) : "-"
	}'
}

main()
{
	local merge

	[ -x "$GNU_TIME" ] || die "GNU time ($GNU_TIME) not found: install the Debian package time"
	command -v trace-cmd > /dev/null || die "trace-cmd not found: install the Debian package trace-cmd"
	mkdir -p "$BENCH_DIR"
	make -s -C "$SRC_DIR" OUTPUT="$BUILD_DIR/tools" || die "building the tools failed"
	generate_traces

	# Counting also brings both files into the page cache for every row.
	TOTAL=$("$ITERATE" "$HOST_DAT" "$GUEST_DAT")
	echo "$TOTAL events: H=$HOST_DAT ($("$ITERATE" "$HOST_DAT")), G=$GUEST_DAT ($("$ITERATE" "$GUEST_DAT"))"
	rm -rf "$OUT_DIR"
	mkdir -p "$OUT_DIR"
	printf "%-40s %8s %10s %8s %8s %8s\n" command seconds events/s "RSS MB" "anon MB" "B/event"
	merge=("$MERGE" -q --host "$HOST_DAT" --guest "g=$GUEST_DAT")
	print_row "kvm-tsc-merge (text timeline)" - "${merge[@]}"
	print_row "kvm-tsc-merge -n (merge only)" - "${merge[@]}" -n
	print_row "kvm-tsc-merge -n --sync-out DIR" "$OUT_DIR/sync" "${merge[@]}" -n --sync-out "$OUT_DIR/sync"
	print_row "kvm-tsc-merge -n -p OUT.pftrace" "$OUT_DIR/out.pftrace" \
		"${merge[@]}" -n -k "$TSC_KHZ" -p "$OUT_DIR/out.pftrace"
	print_row "kvm-tsc-merge -n -j OUT.json" "$OUT_DIR/out.json" \
		"${merge[@]}" -n -k "$TSC_KHZ" -j "$OUT_DIR/out.json"
	print_row "trace-cmd report -i H -i G" - trace-cmd report -i "$HOST_DAT" -i "$GUEST_DAT"
	# shellcheck disable=SC2016 # sh -c expands them, from its arguments
	print_row "cp H G DIR (copying the files)" "$OUT_DIR/copy" \
		sh -c 'mkdir -p "$3" && cp "$1" "$2" "$3"' sh "$HOST_DAT" "$GUEST_DAT" "$OUT_DIR/copy"
	print_row "iterate H G (each CPU on its own)" - "$ITERATE" "$HOST_DAT" "$GUEST_DAT"
	print_row "iterate -o H G (time order per file)" - "$ITERATE" -o "$HOST_DAT" "$GUEST_DAT"
}

main "$@"
