#!/bin/sh
# record-pair.sh: on a KVM host, boot the guest each scenario describes, record the host's trace and the guest's as the scenario says, and put the pair in /export/MODE.
#
# usage: record-pair.sh [--level N] SCENARIO...
#
# Runs under busybox sh from /ktt on level N (0, the test VM, by default;
# 1 in mode linux-n), with what guest-root.sh put in /e2e. The guest is
# level N+1, booted as its lN+1_ keys say, and this level records with
# lN_recorder from lN_record_from. The handshake with the guest goes
# through the directory shared with it over 9p: the scenario goes down,
# the guest says "ready", this level "go" once it records, the guest its
# "status", and this level "quit" once its recording has stopped: the
# guest still runs when record-host.sh stop writes its snapshot, and
# trace-cmd record -A has the guest's trace by then. Each step is
# printed, and the guest's console relayed now and then, so that a level
# above sees this one go on printing.
# /export/MODE gets host.dat, guest.dat and the guest's console and logs
# (in mode linux-n, L1's own export under l1/). Exit status: 0, all
# recorded; 4 after "# SKIP reason", no guest can run here; 1 after a line
# naming the mode and step that failed.

# shellcheck shell=dash # busybox sh, which has local
# shellcheck disable=SC2154 # the scenario's keys, which read_scenario sets
# shellcheck source-path=SCRIPTDIR source=../lib/poll.sh # where guest-root.sh puts it
. /lib/ktt/poll.sh
# shellcheck source-path=SCRIPTDIR source=scenario.sh # beside it in /e2e
. /e2e/scenario.sh

readonly E2E=/e2e
readonly WORK_ROOT=/tmp/e2e
readonly RECORD=tools/record-host/record-host.sh
readonly TRACEFS=/sys/kernel/tracing
# The guest's vsock address for trace-cmd agent (2 is the host's).
readonly GUEST_CID=3
# trace-cmd record -A: from its start to its recording, and from SIGINT
# to both files written; the recordings started until it finds the
# guest's QEMU by its CID.
readonly AGENT_TIMEOUT=120
readonly AGENT_ATTEMPTS=5
# The events trace-cmd record -A records here: the first four are needed,
# the series in patches/ adds the other two.
readonly AGENT_EVENTS="kvm:kvm_write_tsc_offset kvm:kvm_entry kvm:kvm_exit sched:sched_switch"
readonly AGENT_OPTIONAL="kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset"
# How often a quiet wait relays the guest's console, in seconds.
readonly RELAY_EVERY=30
# Every byte on the guest's console is an exit to this level's QEMU: with
# loglevel=5 its boot prints warnings and worse only (loglevel=4 took
# scenario own from 114 s to 69 s here under QEMU). The TSC jump moves the
# guest's clock and jiffies on by minutes at once: RCU would see a false stall.
readonly GUEST_CMDLINE="console=ttyS0 loglevel=5 panic=-1 tsc=reliable pci=noacpi msr.allow_writes=on rcupdate.rcu_cpu_stall_suppress=1"

LEVEL=0
mode=setup
STEP=setup
# The scenario's run: its work directory, what it shares with the guest,
# where its files go, and the processes it started.
W=$WORK_ROOT SHARE='' DEST=''
QEMU_PID='' RECORDING='' RECORDER_PID='' AGAIN_FOR=''

seconds()
{
	cut -d. -f1 /proc/uptime
}

step()
{
	STEP=$1
	echo "# $mode: $(seconds) s: $STEP"
}

fail()
{
	echo "record-pair.sh: error: L$LEVEL: mode $mode: step '$STEP' failed: $*" | tee -a "$W/failure"
	return 1
}

cleanup()
{
	[ -z "$QEMU_PID" ] || { kill -KILL "$QEMU_PID" 2>/dev/null; wait "$QEMU_PID" 2>/dev/null; }
	QEMU_PID=
	if [ -n "$RECORDER_PID" ]; then
		kill -KILL -- "-$RECORDER_PID" 2>/dev/null
		wait "$RECORDER_PID" 2>/dev/null
		RECORDER_PID=
		echo 0 >"$TRACEFS/tracing_on"
		echo 0 >"$TRACEFS/events/enable"
	fi
	[ -z "$RECORDING" ] || sh "$RECORD" stop -d "$W/record" >/dev/null 2>&1
	RECORDING=
	return 0
}

check_host()
{
	[ -c /dev/kvm ] ||
		{ echo "# SKIP L$LEVEL has no /dev/kvm (kvm_amd or kvm_intel did not load)"; return 4; }
	for f in "$E2E/bzImage" "$E2E/guest.cpio.gz" /usr/bin/qemu-system-x86_64 /usr/bin/trace-cmd; do
		[ -e "$f" ] || { fail "$f is missing: give vmtest.sh --add what guest-root.sh fills"; return 1; }
	done
	HOST_TSC_KHZ=$(sh "$RECORD" tsc-khz) || { fail "the kernel log does not say the TSC rate"; return 1; }
}

# The guest's QEMU, in the background; its console in W/console.log.
start_guest()
{
	local cpu=host,tsc-adjust=off khz vsock=''

	khz=$(next_key tsc_khz)
	[ "$khz" = 0 ] && khz=$HOST_TSC_KHZ
	[ "$khz" = "$HOST_TSC_KHZ" ] || cpu=$cpu,tsc-frequency=${khz}000
	if [ "$(next_key recorder)" = agent ]; then
		[ -c /dev/vhost-vsock ] || { fail "/dev/vhost-vsock is missing: the kernel needs CONFIG_VHOST_VSOCK"; return 1; }
		vsock="-device vhost-vsock-pci,guest-cid=$GUEST_CID"
	fi
	: >"$W/console.log"
	# shellcheck disable=SC2086 # vsock is a list of options
	qemu-system-x86_64 -name guest,debug-threads=on -enable-kvm -cpu "$cpu" \
		-smp "$(next_key vcpus)" -m "$(next_key mem_mb)" -nodefaults -display none -no-reboot \
		-kernel "$E2E/bzImage" -initrd "$E2E/guest.cpio.gz" \
		-append "$GUEST_CMDLINE tsc_early_khz=$khz ktt_level=$((LEVEL + 1))" \
		-virtfs "local,path=$SHARE,mount_tag=export,security_model=none" $vsock \
		-serial "file:$W/console.log" >"$W/qemu.log" 2>&1 &
	QEMU_PID=$!
	DEADLINE=$(($(seconds) + $(next_key timeout)))
}

show_console()
{
	tail -n 15 "$W/console.log" | sed 's/^/    /'
}

# 2, told with what QEMU said and the guest's last words: the guest's QEMU
# exited before the guest gave what was waited for.
tell_guest_exit()
{
	local status

	wait "$QEMU_PID"
	status=$?
	QEMU_PID=''
	[ "$STEP" = boot ] && AGAIN_FOR="the guest's QEMU exited in its boot"
	fail "the guest's QEMU exited with status $status: $(grep -v '^qemu-system-x86_64: warning:' "$W/qemu.log" | tail -3); the last lines of its console:"
	show_console
	return 2
}

# 0 once the guest has put FILE in the share; 2, told, when its QEMU has
# exited, its time is up or its console has been quiet for `silence`
# seconds; 1 meanwhile, relaying its console now and then.
guest_gave()
{
	local printed

	[ -e "$SHARE/$1" ] && return 0
	kill -0 "$QEMU_PID" 2>/dev/null || { [ -e "$SHARE/$1" ] || tell_guest_exit; return; }
	[ "$(seconds)" -lt "$DEADLINE" ] || { fail "no '$1' within $(next_key timeout)s of its boot"; return 2; }
	printed=$(wc -c <"$W/console.log")
	if [ "$printed" != "$PRINTED" ]; then
		PRINTED=$printed
		QUIET_SINCE=$(seconds)
	elif [ $(($(seconds) - QUIET_SINCE)) -ge "$silence" ]; then
		fail "the guest printed nothing for ${silence}s; the last lines of its console:"
		show_console
		return 2
	fi
	if [ $(($(seconds) - RELAYED)) -ge "$RELAY_EVERY" ]; then
		RELAYED=$(seconds)
		echo "# $mode: $(seconds) s: the guest's console: $(tail -n 1 "$W/console.log" | tr -d '\r')"
	fi
	return 1
}

# Polled twice a second: in a one-CPU test VM, the poll takes its time
# from the guest.
wait_guest()
{
	PRINTED='' QUIET_SINCE=$(seconds) RELAYED=$(seconds)
	while :; do
		guest_gave "$1"
		case $? in
		0) return 0 ;;
		2) return 1 ;;
		esac
		sleep 0.5
	done
}

agent_recorder_started()
{
	if ! kill -0 "$RECORDER_PID" 2>/dev/null; then
		wait "$RECORDER_PID"
		fail "trace-cmd record -A exited with status $? before recording: $(tail -3 "$W/recorder.log")"
		RECORDER_PID=
		return 2
	fi
	[ "$(cat "$TRACEFS/tracing_on")" = 1 ] && [ "$(cat "$TRACEFS/events/kvm/kvm_exit/enable")" = 1 ]
}

# trace-cmd record -A, started again until it finds the guest's QEMU by its
# CID (the clock it sets is x86-tsc only then). Each start and stop can
# take minutes under TCG: each is said, so that the level above does not
# take this one for stalled.
start_agent_recorder()
{
	local events='' ev attempt

	for ev in $AGENT_EVENTS; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] || { fail "this kernel has no $ev event"; return 1; }
		events="$events -e $ev"
	done
	for ev in $AGENT_OPTIONAL; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] && events="$events -e $ev"
	done
	set -- --compression none -e sched:sched_switch
	[ -d "$TRACEFS/events/msr/write_msr" ] && set -- "$@" -e msr:write_msr -f msr==0x10
	for attempt in $(seq "$AGENT_ATTEMPTS"); do
		echo "# $mode: $(seconds) s: trace-cmd record -A, start $attempt of $AGENT_ATTEMPTS"
		echo "== attempt $attempt: trace-cmd record --compression none -o $W/trace.dat$events -A guest@$GUEST_CID $*" \
			>>"$W/recorder.log"
		rm -f "$W/trace.dat" "$W/trace-guest.dat"
		# shellcheck disable=SC2086 # events is a list of options
		(cd "$W" && exec setsid trace-cmd record --compression none -o "$W/trace.dat" $events \
			-A "guest@$GUEST_CID" "$@") </dev/null >>"$W/recorder.log" 2>&1 &
		RECORDER_PID=$!
		wait_until "$AGENT_TIMEOUT" agent_recorder_started ||
			{ fail "trace-cmd record -A did not start recording within ${AGENT_TIMEOUT}s"; return 1; }
		grep -q '\[x86-tsc\]' "$TRACEFS/trace_clock" && return 0
		echo "# $mode: $(seconds) s: trace-cmd record -A did not find the guest's QEMU; stopping it"
		echo "== trace-cmd did not find the guest's QEMU; stopped" >>"$W/recorder.log"
		stop_agent_recorder || return 1
	done
	fail "trace-cmd record -A did not find the guest's QEMU in $AGENT_ATTEMPTS attempts"
}

stop_agent_recorder()
{
	local status f

	kill -INT "$RECORDER_PID"
	wait_until "$AGENT_TIMEOUT" pid_gone "$RECORDER_PID" ||
		{ fail "trace-cmd record -A did not finish within ${AGENT_TIMEOUT}s of SIGINT"; return 1; }
	wait "$RECORDER_PID"
	status=$?
	RECORDER_PID=
	[ "$status" = 0 ] || { fail "trace-cmd record -A exited with status $status: $(tail -3 "$W/recorder.log")"; return 1; }
	for f in "$W/trace.dat" "$W/trace-guest.dat"; do
		[ -s "$f" ] || { fail "trace-cmd record -A did not write $f: $(tail -3 "$W/recorder.log")"; return 1; }
	done
	mv "$W/trace.dat" "$W/host.dat"
	mv "$W/trace-guest.dat" "$SHARE/guest.dat"
}

# trace-cmd says so when it agreed on its kvm time sync with the agent:
# in the log of its last start, the one that recorded.
check_time_sync()
{
	awk '/^== attempt/ { kvm = 0 } /^Negotiated kvm time sync protocol/ { kvm = 1 } END { exit !kvm }' \
		"$W/recorder.log" && return 0
	AGAIN_FOR="trace-cmd record -A recorded without the kvm time sync"
	fail "$AGAIN_FOR, which alone tells the vCPUs' TSC multipliers on a kernel without kvm_write_tsc_multiplier"
}

start_recording()
{
	step record-start
	[ "$(level_key recorder)" = trace-cmd-agent ] && { start_agent_recorder; return; }
	sh "$RECORD" start -o "$W/host.dat" -d "$W/record" >>"$W/recorder.log" 2>&1 ||
		{ fail "$RECORD start: $(tail -1 "$W/recorder.log")"; return 1; }
	RECORDING=1
}

stop_recording()
{
	step record-stop
	[ "$(level_key recorder)" = trace-cmd-agent ] && { stop_agent_recorder && check_time_sync; return; }
	RECORDING=
	sh "$RECORD" stop -d "$W/record" >>"$W/recorder.log" 2>&1 ||
		{ fail "$RECORD stop: $(tail -1 "$W/recorder.log")"; return 1; }
}

wait_guest_exit()
{
	wait_until "$AGENT_TIMEOUT" pid_gone "$QEMU_PID" || { fail "the guest did not power off"; return 1; }
	wait "$QEMU_PID"
	QEMU_PID=
}

run()
{
	local from

	from=$(level_key record_from)
	[ "$from" = ready ] || start_recording || return 1
	step boot
	start_guest || return 1
	wait_guest ready || return 1
	[ "$from" = boot ] || start_recording || return 1
	step run
	: >"$SHARE/go"
	wait_guest status || return 1
	[ "$(cat "$SHARE/status")" = 0 ] || { fail "the guest failed: $(cat "$SHARE/failure" 2>/dev/null)"; return 1; }
	stop_recording || return 1
	: >"$SHARE/quit"
	wait_guest_exit
}

export_pair()
{
	local f

	for f in "$W/host.dat" "$SHARE/guest.dat" "$W/console.log" "$W/qemu.log" "$W/recorder.log" \
		"$W/failure" "$SHARE"/*.log "$SHARE/dmesg.txt" "$SHARE/failure"; do
		[ -f "$f" ] && cp "$f" "$DEST/"
	done
	[ "$mode" = linux-n ] && [ -d "$SHARE/$mode" ] && cp -r "$SHARE/$mode" "$DEST/l1"
	for f in host.dat guest.dat; do
		[ -f "$DEST/$f" ] && echo "# $mode: $f: $(wc -c <"$DEST/$f") bytes" || echo "# $mode: no $f"
	done
}

# One recording of SCENARIO, its files in DEST.
record_attempt()
{
	local status=0

	W=$WORK_ROOT/$mode
	SHARE=$W/share
	rm -rf "$W" "$DEST"
	mkdir -p "$SHARE" "$DEST"
	cp "$1" "$SHARE/scenario"
	STEP=setup AGAIN_FOR=''
	run || status=1
	cleanup
	export_pair
	return "$status"
}

# SCENARIO recorded once more, from the start, when the first attempt
# failed for what says nothing of what is recorded: under TCG a nested
# guest's QEMU now and then exits in the guest's boot with nothing in its
# log but warnings, and trace-cmd record -A now and then records without
# its kvm time sync. The first attempt's files are kept in DEST/attempt-1.
record_scenario()
{
	local status

	read_scenario "$1" || return 1
	DEST=/export/$mode
	record_attempt "$1" && return 0
	[ -n "$AGAIN_FOR" ] || return 1
	mv "$DEST" "$WORK_ROOT/attempt-1"
	echo "# $mode: $AGAIN_FOR; recording the scenario again"
	record_attempt "$1"
	status=$?
	mv "$WORK_ROOT/attempt-1" "$DEST/attempt-1"
	return "$status"
}

main()
{
	local status=0 scenario

	[ "${1:-}" = --level ] && { LEVEL=$2; shift 2; }
	[ $# -gt 0 ] || { echo "usage: record-pair.sh [--level N] SCENARIO..." >&2; return 2; }
	mkdir -p "$WORK_ROOT"
	trap cleanup EXIT
	check_host || return $?
	for scenario in "$@"; do
		record_scenario "$scenario" || status=1
	done
	return "$status"
}

main "$@"
