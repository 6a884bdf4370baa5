#!/bin/sh
# record-host.sh: record a KVM host's trace for a merged host/guest timeline (TSC, entry/exit and scheduling events, x86-tsc clock, own tracefs instance).
#
# usage: record-host.sh start FILE   start trace-cmd record in the background,
#                                    writing FILE; returns once the events are
#                                    being recorded
#        record-host.sh stop         stop it (SIGINT), wait until FILE is
#                                    written and check it
#        record-host.sh clean        remove what a killed recording left:
#                                    its tracefs instance and its state
#
# Start it before the guests boot: a merge needs the creation of every vCPU
# thread (task:task_newtask, which ties it to its VMM process) and the first
# TSC offset written for every vCPU. The recording goes into a dedicated
# tracefs instance with the x86-tsc clock, so it neither uses nor disturbs
# the top-level buffer; the instance is removed whenever the recording ends
# or fails to start. A recording killed with SIGKILL (trace-cmd, or the
# machine's OOM killer) leaves the instance and a half-written FILE: the
# next start says what it found and stops, and clean removes it; stop says
# so too and cleans up. Events the running kernel does not have (the series in
# patches/ adds kvm_write_tsc_multiplier and kvm_nested_tsc_offset) are left
# out with a note. Needs root, trace-cmd and a loaded kvm module; POSIX sh,
# so it also runs under busybox.
#
# Environment: RECORD_INSTANCE (tracefs instance name, default
# kvm-tsc-record), RECORD_STATE (directory for the pid, the output name and
# trace-cmd's log, default /tmp/kvm-tsc-record), RECORD_TIMEOUT (seconds to
# wait for the start or the stop, default 60), RECORD_BUFFER_KB (per-CPU
# buffer size, default trace-cmd's), RECORD_COMPRESSION (trace-cmd's
# --compression, default none: in the QEMU test VM, trace-cmd 3.1.6 wrote
# zstd-compressed files it could not read back, "error reading header").

set -eu

readonly INSTANCE=${RECORD_INSTANCE:-kvm-tsc-record}
readonly STATE=${RECORD_STATE:-/tmp/kvm-tsc-record}
readonly TIMEOUT=${RECORD_TIMEOUT:-60}
readonly BUFFER_KB=${RECORD_BUFFER_KB:-}
readonly COMPRESSION=${RECORD_COMPRESSION:-none}
readonly REQUIRED_EVENTS="kvm:kvm_write_tsc_offset kvm:kvm_entry kvm:kvm_exit sched:sched_switch task:task_newtask"
readonly OPTIONAL_EVENTS="kvm:kvm_write_tsc_multiplier kvm:kvm_nested_tsc_offset"
# trace.dat files start with these bytes: 0x17 0x08 0x44 "tracing".
readonly DAT_MAGIC=tracing

PROG=${0##*/}
TRACEFS=

die()
{
	echo "$PROG: error: $*" >&2
	exit 1
}

note()
{
	echo "$PROG: $*" >&2
}

find_tracefs()
{
	local dir

	for dir in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -f "$dir/trace_clock" ] && { TRACEFS=$dir; return 0; }
	done
	die "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)"
}

# The -e options: every required event, and the optional ones this kernel has.
event_args()
{
	local ev

	for ev in $REQUIRED_EVENTS; do
		[ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ] ||
			die "this kernel has no $ev event$(
				[ "${ev%%:*}" = kvm ] && echo ' (load kvm_amd or kvm_intel first)')"
		printf ' -e %s' "$ev"
	done
	for ev in $OPTIONAL_EVENTS; do
		if [ -d "$TRACEFS/events/${ev%%:*}/${ev#*:}" ]; then
			printf ' -e %s' "$ev"
		else
			note "left out $ev: this kernel does not have it (the series in patches/ adds it)"
		fi
	done
}

# The recording's process, if it is still running.
recorder_pid()
{
	local pid

	pid=$(cat "$STATE/pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

remove_instance()
{
	local dir=$TRACEFS/instances/$INSTANCE

	[ -d "$dir" ] || return 0
	rmdir "$dir" 2>/dev/null || { sleep 1; rmdir "$dir"; } ||
		{ note "could not remove the tracefs instance $dir"; return 1; }
}

# trace-cmd first turns the instance off, then sets the clock, enables the
# events, starts its per-CPU readers and only then turns tracing on: so
# tracing_on=1 with the clock and the events set means recording runs.
recording_started()
{
	local dir=$TRACEFS/instances/$INSTANCE

	[ "$(cat "$dir/tracing_on" 2>/dev/null)" = 1 ] &&
		grep -q '\[x86-tsc\]' "$dir/trace_clock" 2>/dev/null &&
		[ "$(cat "$dir/events/kvm/kvm_exit/enable" 2>/dev/null)" = 1 ] &&
		[ "$(cat "$dir/events/task/task_newtask/enable" 2>/dev/null)" = 1 ]
}

# Events the instance's ring buffer lost so far, all CPUs together.
lost_events()
{
	cat "$TRACEFS/instances/$INSTANCE"/per_cpu/cpu*/stats 2>/dev/null |
		awk '/^(overrun|dropped events):/ { n += $NF } END { print n + 0 }'
}

# trace-cmd leads its own process group (setsid): kill all of it, its
# per-CPU readers too, which otherwise keep the instance busy.
kill_recorder()
{
	local pid

	pid=$(cat "$STATE/pid" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	# "--" for dash and bash, busybox wants none; a group already gone
	# (a killed recording) is no error.
	kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "-$pid" 2>/dev/null || return 0
	sleep 1
}

# Kill a recording that did not start and leave nothing behind.
abort_start()
{
	kill_recorder
	remove_instance || true
	rm -f "$STATE/pid"
}

# What a killed recording left: its state (pid, file) and its instance,
# one line each; nothing when there is none. Only for no live recorder.
leftovers()
{
	local pid file

	pid=$(cat "$STATE/pid" 2>/dev/null) &&
		echo "$STATE/pid names trace-cmd record pid $pid, which is gone"
	file=$(cat "$STATE/file" 2>/dev/null) &&
		echo "$file was being written and is incomplete"
	[ -d "$TRACEFS/instances/$INSTANCE" ] &&
		echo "the tracefs instance $TRACEFS/instances/$INSTANCE is still there"
	return 0
}

start()
{
	local file=$1 events pid found waited=0

	command -v trace-cmd >/dev/null 2>&1 || die "trace-cmd not found (Debian package trace-cmd)"
	find_tracefs
	pid=$(recorder_pid) && die "a recording is already running (pid $pid, $STATE/pid): run '$PROG stop'"
	found=$(leftovers)
	if [ -n "$found" ]; then
		echo "$found" | sed "s/^/$PROG: /" >&2
		die "an earlier recording was killed or another one uses the instance; '$PROG clean' removes what it left"
	fi
	events=$(event_args)
	mkdir -p "$STATE"
	case $file in /*) ;; *) file=$(pwd)/$file ;; esac
	rm -f "$file" "$STATE/pid"
	echo "$file" >"$STATE/file"
	trap 'abort_start' EXIT
	# setsid: a Ctrl-C meant for the workload must not end the recording.
	# From STATE: trace-cmd writes its per-CPU files for an instance in the
	# current directory, which may be read-only (the test VM's /ktt).
	# shellcheck disable=SC2086
	(cd "$STATE" && exec setsid trace-cmd record --compression "$COMPRESSION" -o "$file" \
		-B "$INSTANCE" -C x86-tsc ${BUFFER_KB:+-b "$BUFFER_KB"} $events) </dev/null >"$STATE/log" 2>&1 &
	echo $! >"$STATE/pid"
	until recording_started; do
		if ! recorder_pid >/dev/null; then
			sed 's/^/  /' "$STATE/log" >&2
			die "trace-cmd record exited before recording started (log above, $STATE/log)"
		fi
		[ "$waited" -lt $((TIMEOUT * 5)) ] ||
			die "trace-cmd record did not start recording within ${TIMEOUT}s; log: $STATE/log"
		sleep 0.2
		waited=$((waited + 1))
	done
	trap - EXIT
	note "recording into $file (instance $INSTANCE, clock x86-tsc,$(echo "$events" | sed 's/ -e / /g'))"
}

# The file trace-cmd wrote must be a complete trace.dat.
check_file()
{
	local file=$1

	[ -s "$file" ] || die "$file was not written; trace-cmd's log: $STATE/log"
	[ "$(dd if="$file" bs=1 skip=3 count=7 2>/dev/null)" = "$DAT_MAGIC" ] ||
		die "$file is not a trace.dat file; trace-cmd's log: $STATE/log"
	trace-cmd report -i "$file" --stat >/dev/null 2>&1 ||
		die "trace-cmd cannot read $file back; trace-cmd's log: $STATE/log"
}

stop()
{
	local pid file lost waited=0

	find_tracefs
	file=$(cat "$STATE/file" 2>/dev/null) || die "no recording to stop ($STATE/file missing)"
	trap 'remove_instance' EXIT
	if pid=$(recorder_pid); then
		lost=$(lost_events)
		kill -INT "$pid"
		while kill -0 "$pid" 2>/dev/null; do
			if [ "$waited" -ge $((TIMEOUT * 5)) ]; then
				kill_recorder
				die "trace-cmd record (pid $pid) did not finish within ${TIMEOUT}s of SIGINT and was killed; $file is incomplete"
			fi
			sleep 0.2
			waited=$((waited + 1))
		done
	else
		note "trace-cmd record was no longer running; log: $STATE/log"
		kill_recorder
	fi
	rm -f "$STATE/pid" "$STATE/file"
	remove_instance
	check_file "$file"
	# Lost events break a merge: say so.
	[ "${lost:-0}" = 0 ] ||
		note "warning: the ring buffer lost $lost events (overruns and drops of all CPUs): set RECORD_BUFFER_KB higher"
	note "wrote $file ($(wc -c <"$file") bytes)"
}

# Remove what a killed recording left; never a live recording's.
clean()
{
	local pid found

	find_tracefs
	pid=$(recorder_pid) && die "a recording is running (pid $pid): '$PROG stop' ends it"
	found=$(leftovers)
	[ -n "$found" ] || { note "nothing to clean"; return 0; }
	echo "$found" | sed "s/^/$PROG: removing: /" >&2
	kill_recorder
	remove_instance
	rm -f "$STATE/pid" "$STATE/file"
}

main()
{
	[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
	case ${1:-} in
	start) [ $# = 2 ] || die "usage: $PROG start FILE"; start "$2" ;;
	stop) [ $# = 1 ] || die "usage: $PROG stop"; stop ;;
	clean) [ $# = 1 ] || die "usage: $PROG clean"; clean ;;
	*) die "usage: $PROG start FILE | $PROG stop | $PROG clean" ;;
	esac
}

main "$@"
