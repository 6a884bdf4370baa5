#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# record_host_test.sh: scripts/record-host.sh after a recording killed with SIGKILL: the next start says what it found and leaves it, clean removes it, stop says so and cleans up.
#
# Runs record-host.sh (installed next to this test) with an instance and a
# state directory of its own, ktt-record-PID. A run of this test that was
# itself killed leaves such an instance: it is removed at the next start,
# when the PID in its name is gone. Needs root, tracefs, trace-cmd and the
# kvm events (a vendor module loaded).

# 'local' is not POSIX, but ktap_helpers.sh needs it too, and busybox ash,
# dash and bash all have it.
# shellcheck disable=SC3043

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$TEST_DIR/../kselftest/ktap_helpers.sh"

readonly RECORD=$TEST_DIR/record-host.sh
readonly TRACEFS=/sys/kernel/tracing
readonly PREFIX=ktt-record-
export RECORD_INSTANCE=$PREFIX$$
export RECORD_TIMEOUT=30
RECORD_STATE=
WORK=

kill_recording()
{
	local pid

	pid=$(cat "$RECORD_STATE/pid" 2>/dev/null) || return 0
	kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "-$pid" 2>/dev/null
	sleep 1
}

# No recording, no instance, no state: where each test starts.
reset()
{
	kill_recording
	rmdir "$TRACEFS/instances/$RECORD_INSTANCE" 2>/dev/null
	rm -f "$RECORD_STATE/pid" "$RECORD_STATE/file"
}

cleanup()
{
	[ -n "$RECORD_STATE" ] && reset
	[ -n "$WORK" ] && rm -rf "$WORK"
	return 0
}

# Instances of killed runs of this test: their pid is gone.
remove_stale_instances()
{
	local dir pid

	for dir in "$TRACEFS/instances/$PREFIX"*; do
		[ -d "$dir" ] || continue
		pid=${dir##*/"$PREFIX"}
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null || rmdir "$dir"
	done
}

require()
{
	[ "$(id -u)" = 0 ] || { ktap_skip_all "needs root (tracefs)"; exit "$KSFT_SKIP"; }
	[ -d "$TRACEFS/instances" ] || { ktap_skip_all "tracefs is not mounted on $TRACEFS"; exit "$KSFT_SKIP"; }
	command -v trace-cmd >/dev/null 2>&1 || { ktap_skip_all "trace-cmd is not installed"; exit "$KSFT_SKIP"; }
	[ -d "$TRACEFS/events/kvm/kvm_entry" ] ||
		{ ktap_skip_all "no kvm events: load kvm_intel or kvm_amd"; exit "$KSFT_SKIP"; }
	# trace-cmd record writes it; writing back its value changes nothing.
	[ ! -e /proc/sys/kernel/ftrace_enabled ] ||
		cat /proc/sys/kernel/ftrace_enabled 2>/dev/null >/proc/sys/kernel/ftrace_enabled ||
		{ ktap_skip_all "/proc/sys/kernel/ftrace_enabled cannot be written (a container?): trace-cmd record cannot run"; exit "$KSFT_SKIP"; }
}

instance_exists()
{
	[ -d "$TRACEFS/instances/$RECORD_INSTANCE" ]
}

# Nothing left: no instance, no pid or file in the state directory.
nothing_left()
{
	local left

	left=$(instance_exists && echo " the instance"; ls "$RECORD_STATE" 2>/dev/null | grep -E '^(pid|file)$')
	[ -z "$left" ] && return 0
	echo "# left behind:" $left
	return 1
}

# A recording killed with SIGKILL: trace-cmd and its readers, at once.
start_and_kill()
{
	"$RECORD" start "$WORK/$1.dat" 2>"$WORK/$1.start" || { sed 's/^/# /' "$WORK/$1.start"; return 1; }
	kill_recording
	instance_exists || { echo "# the killed recording left no instance: nothing to check"; return 1; }
}

test_start_after_kill()
{
	reset
	start_and_kill killed || return 1
	"$RECORD" start "$WORK/next.dat" 2>"$WORK/next.err" && { echo "# start went ahead"; return 1; }
	sed 's/^/# /' "$WORK/next.err"
	grep -q "names trace-cmd record pid [0-9]*, which is gone" "$WORK/next.err" &&
		grep -q "$WORK/killed.dat was being written and is incomplete" "$WORK/next.err" &&
		grep -q "instances/$RECORD_INSTANCE is still there" "$WORK/next.err" &&
		grep -q "'record-host.sh clean' removes" "$WORK/next.err" &&
		instance_exists
}

test_clean()
{
	"$RECORD" clean 2>"$WORK/clean.err" || { sed 's/^/# /' "$WORK/clean.err"; return 1; }
	sed 's/^/# /' "$WORK/clean.err"
	grep -q "removing: the tracefs instance" "$WORK/clean.err" && nothing_left
}

test_start_stop_after_clean()
{
	reset
	"$RECORD" start "$WORK/clean.dat" 2>"$WORK/clean.start" &&
		"$RECORD" stop 2>"$WORK/clean.stop" && ! instance_exists && [ -s "$WORK/clean.dat" ] ||
		{ sed 's/^/# /' "$WORK/clean.start" "$WORK/clean.stop" 2>/dev/null; return 1; }
}

test_stop_after_kill()
{
	reset
	start_and_kill stopped || return 1
	"$RECORD" stop 2>"$WORK/stop.err"
	sed 's/^/# /' "$WORK/stop.err"
	grep -q "was no longer running" "$WORK/stop.err" && nothing_left
}

main()
{
	ktap_print_header
	require
	trap cleanup EXIT
	trap 'exit 1' INT TERM
	remove_stale_instances
	WORK=$(mktemp -d)
	RECORD_STATE=$WORK/state
	export RECORD_STATE
	ktap_set_plan 4
	ktap_test_result "after a killed recording, start names what it left, refuses, and keeps it" \
		test_start_after_kill
	ktap_test_result "clean says what it removes and removes the instance and the state" test_clean
	ktap_test_result "after clean, a recording starts and stops" test_start_stop_after_clean
	ktap_test_result "stop after a killed recording says so and removes the instance" \
		test_stop_after_kill
	ktap_finished
}

main "$@"
