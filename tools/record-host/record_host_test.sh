#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# record_host_test.sh: tools/record-host/record-host.sh's command line (-h, a wrong option), the script after a recording killed with SIGKILL (the next start says what it found and leaves it, clean removes it, stop says so and cleans up), and the snapshots of KVM's TSC state that start and stop write into the recording.
#
# Runs record-host.sh, installed next to this test, with an instance
# (ktt-record-PID: a killed run's goes at the next run) and a state
# directory of its own. The test with a VM holds tsc_writer (installed next
# to this test; TSC_WRITER overrides where) stopped with SIGSTOP from
# before start, so that no TSC write comes between the offsets this test
# reads in debugfs and the snapshot.

set -u

TEST_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
. "$TEST_DIR/../kselftest/ktap_helpers.sh"
# The project's poll helper, installed next to this test.
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/poll.sh
. "$TEST_DIR/poll.sh"

readonly RECORD="$TEST_DIR/record-host.sh"
readonly WRITER="${TSC_WRITER:-$TEST_DIR/tsc_writer}"
readonly TRACEFS=/sys/kernel/tracing
readonly DEBUGFS=/sys/kernel/debug
readonly KVM_DEBUGFS=$DEBUGFS/kvm
readonly PREFIX=ktt-record-
readonly INSTANCE=$PREFIX$$
readonly TIMEOUT=30
STATE_DIR=
WORK=
WRITER_PID=

# record-host.sh COMMAND [OPTION...] with this test's instance, state
# directory and timeout, where COMMAND takes them.
record_host()
{
	local command="$1"

	shift
	case $command in
	start) "$RECORD" start -B "$INSTANCE" -d "$STATE_DIR" -t "$TIMEOUT" "$@" ;;
	stop) "$RECORD" stop -d "$STATE_DIR" -t "$TIMEOUT" "$@" ;;
	clean) "$RECORD" clean -d "$STATE_DIR" "$@" ;;
	esac
}

kill_recording()
{
	local pid

	pid=$(cat "$STATE_DIR/pid" 2>/dev/null) || return 0
	kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "-$pid" 2>/dev/null
	sleep 1
}

# No recording, no instance, no state: where each test starts.
reset()
{
	kill_recording
	rmdir "$TRACEFS/instances/$INSTANCE" 2>/dev/null
	rm -f "$STATE_DIR/pid" "$STATE_DIR/output" "$STATE_DIR/instance"
}

cleanup()
{
	stop_writer
	[ -n "$STATE_DIR" ] && reset
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
	# shellcheck disable=SC2094 # procfs: the redirection truncates nothing
	[ ! -e /proc/sys/kernel/ftrace_enabled ] ||
		cat /proc/sys/kernel/ftrace_enabled 2>/dev/null >/proc/sys/kernel/ftrace_enabled ||
		{ ktap_skip_all "/proc/sys/kernel/ftrace_enabled cannot be written (a container?): trace-cmd record cannot run"; exit "$KSFT_SKIP"; }
}

instance_exists()
{
	[ -d "$TRACEFS/instances/$INSTANCE" ]
}

# Nothing left: no instance, no pid, output or instance name in the state dir.
nothing_left()
{
	local left='' name

	instance_exists && left=" the instance"
	for name in output pid instance; do
		{ [ -e "$STATE_DIR/$name" ] || [ -L "$STATE_DIR/$name" ]; } && left="$left $name"
	done
	[ -z "$left" ] && return 0
	echo "# left behind:$left"
	return 1
}

# A recording killed with SIGKILL: trace-cmd and its readers, at once.
start_and_kill()
{
	record_host start -o "$WORK/$1.dat" 2>"$WORK/$1.start" || { sed 's/^/# /' "$WORK/$1.start"; return 1; }
	kill_recording
	instance_exists || { echo "# the killed recording left no instance: nothing to check"; return 1; }
}

# The usage: every command with its options, on stdout.
usage_complete()
{
	grep -q "^usage: record-host.sh start \[-o FILE\] \[-B INSTANCE\] \[-b KB\] \[-k KHZ\] \[-d DIR\]" "$1" &&
		grep -q "\[-t SECONDS\] \[--compression ALGO\]" "$1" &&
		grep -q "record-host.sh stop \[-d DIR\] \[-t SECONDS\]$" "$1" &&
		grep -q "record-host.sh clean \[-d DIR\]$" "$1" &&
		grep -q "record-host.sh tsc-khz \[-k KHZ\]$" "$1" &&
		grep -q "^  -h, --help " "$1"
}

test_help()
{
	local args

	for args in -h --help "start -h" "stop --help" "clean -h" "tsc-khz -h"; do
		# shellcheck disable=SC2086 # the words of args
		"$RECORD" $args >"$WORK/help.out" 2>"$WORK/help.err" ||
			{ echo "# record-host.sh $args: exit status $?"; return 1; }
		[ ! -s "$WORK/help.err" ] || { echo "# record-host.sh $args wrote to stderr:"; sed 's/^/#   /' "$WORK/help.err"; return 1; }
		usage_complete "$WORK/help.out" ||
			{ echo "# record-host.sh $args: not the whole usage:"; sed 's/^/#   /' "$WORK/help.out"; return 1; }
	done
}

# record-host.sh ARG... fails with status 2, an error naming WHAT and the
# usage on stderr, nothing on stdout.
usage_error_for()
{
	local what="$1" rc=0

	shift
	"$RECORD" "$@" >"$WORK/usage.out" 2>"$WORK/usage.err" || rc=$?
	sed 's/^/# /' "$WORK/usage.err" | head -n 1
	[ "$rc" = 2 ] || { echo "# record-host.sh $*: exit status $rc, not 2"; return 1; }
	[ ! -s "$WORK/usage.out" ] || { echo "# record-host.sh $*: wrote to stdout"; return 1; }
	head -n 1 "$WORK/usage.err" | grep -q "^record-host.sh: error: .*$what" ||
		{ echo "# record-host.sh $*: the error does not name $what"; return 1; }
	usage_complete "$WORK/usage.err" || { echo "# record-host.sh $*: no usage on stderr"; return 1; }
}

# Each fails before it does anything: no instance, no state.
test_unknown_option()
{
	usage_error_for "unknown option --no-such-option" start --no-such-option -o "$WORK/x.dat" &&
		usage_error_for "unknown option -x" -x &&
		usage_error_for "unknown option -o: stop" stop -d "$STATE_DIR" -o "$WORK/x.dat" &&
		usage_error_for "unknown option -B: clean" clean -B "$INSTANCE" &&
		usage_error_for "unknown command no-such-command" no-such-command &&
		nothing_left && [ ! -e "$WORK/x.dat" ]
}

test_bad_value()
{
	usage_error_for "-k 'fast'" tsc-khz -k fast &&
		usage_error_for "--buffer-kb '0'" start --buffer-kb=0 &&
		usage_error_for "-t '1.5'" stop -t 1.5 &&
		usage_error_for "-B 'a/b'" start -B a/b &&
		usage_error_for "option -o needs a value" start -o &&
		usage_error_for "start takes no operand '$WORK/x.dat'" start "$WORK/x.dat" &&
		nothing_left && [ ! -e "$WORK/x.dat" ]
}

test_start_after_kill()
{
	reset
	start_and_kill killed || return 1
	record_host start -o "$WORK/next.dat" 2>"$WORK/next.err" && { echo "# start went ahead"; return 1; }
	sed 's/^/# /' "$WORK/next.err"
	grep -q "names trace-cmd record pid [0-9]*, which is gone" "$WORK/next.err" &&
		grep -q "$WORK/killed.dat was being written and is incomplete" "$WORK/next.err" &&
		grep -q "instances/$INSTANCE is still there" "$WORK/next.err" &&
		grep -q "'record-host.sh clean' removes" "$WORK/next.err" &&
		instance_exists
}

test_clean()
{
	record_host clean 2>"$WORK/clean.err" || { sed 's/^/# /' "$WORK/clean.err"; return 1; }
	sed 's/^/# /' "$WORK/clean.err"
	grep -q "removing: the tracefs instance" "$WORK/clean.err" && nothing_left
}

# Records NAME.dat with record-host.sh from nothing left; what start and
# stop said in NAME.start and NAME.stop, shown when either fails.
start_stop()
{
	reset
	record_host start -o "$WORK/$1.dat" 2>"$WORK/$1.start" && record_host stop 2>"$WORK/$1.stop" ||
		{ sed 's/^/# /' "$WORK/$1.start" "$WORK/$1.stop" 2>/dev/null; return 1; }
}

test_start_stop_after_clean()
{
	start_stop clean || return 1
	! instance_exists && [ -s "$WORK/clean.dat" ] ||
		{ sed 's/^/# /' "$WORK/clean.start" "$WORK/clean.stop"; return 1; }
}

test_stop_after_kill()
{
	reset
	start_and_kill stopped || return 1
	record_host stop 2>"$WORK/stop.err"
	sed 's/^/# /' "$WORK/stop.err"
	grep -q "was no longer running" "$WORK/stop.err" && nothing_left
}

# A test function returns 0 (pass), KSFT_SKIP (skip, SKIP_REASON says
# why) or anything else (fail). On the project's test kernels a skip fails.
test_result()
{
	local description="$1" rc

	shift
	SKIP_REASON=
	"$@"
	rc=$?
	if [ "$rc" = "$KSFT_SKIP" ] && [ "${KTT_TEST_KERNEL:-}" = 1 ]; then
		echo "# on the test kernel: $SKIP_REASON"
		rc=1
	fi
	case $rc in
	0) ktap_test_pass "$description" ;;
	"$KSFT_SKIP") ktap_test_skip "$description: $SKIP_REASON" ;;
	*) ktap_test_fail "$description" ;;
	esac
}

skip()
{
	SKIP_REASON=$*
	return "$KSFT_SKIP"
}

# KVM's debugfs directory, debugfs mounted if nobody has.
require_kvm_debugfs()
{
	grep -q " $DEBUGFS debugfs " /proc/mounts ||
		mount -t debugfs debugfs "$DEBUGFS" 2>/dev/null ||
		{ skip "debugfs is not mounted on $DEBUGFS and cannot be"; return; }
	[ -d "$KVM_DEBUGFS" ] || skip "$KVM_DEBUGFS is missing: KVM's debugfs cannot be read"
}

stop_writer()
{
	[ -n "$WRITER_PID" ] || return 0
	kill -s KILL "$WRITER_PID" 2>/dev/null
	wait "$WRITER_PID" 2>/dev/null
	WRITER_PID=
}

# For wait_until: true once tsc_writer's VM has both vCPUs in debugfs
# (VM_DIR then); 2 once tsc_writer has exited, WRITER_EXIT its status.
writer_vm_ready()
{
	for VM_DIR in "$KVM_DEBUGFS/$WRITER_PID"-*; do
		[ -e "$VM_DIR/vcpu1/tsc-offset" ] && return 0
	done
	VM_DIR=
	kill -0 "$WRITER_PID" 2>/dev/null && return 1
	wait "$WRITER_PID"
	WRITER_EXIT=$?
	WRITER_PID=
	return 2
}

# tsc_writer's state letter in /proc/PID/stat (R, S, T...) is T.
writer_stopped()
{
	[ "$(sed 's/.*) \(.\).*/\1/' "/proc/$WRITER_PID/stat" 2>/dev/null)" = T ]
}

# Starts tsc_writer, waits for its VM's two vCPUs in debugfs and stops it
# (SIGSTOP): sets WRITER_PID and VM_DIR. Skips where it cannot run.
start_stopped_writer()
{
	local rc=0

	[ -x "$WRITER" ] || { skip "$WRITER is missing: install the suite, or set TSC_WRITER"; return; }
	[ -c /dev/kvm ] || { skip "/dev/kvm is missing: no KVM on this machine"; return; }
	"$WRITER" 600 >"$WORK/writer.out" 2>&1 &
	WRITER_PID=$!
	wait_until 10 writer_vm_ready || rc=$?
	if [ "$rc" = 2 ]; then
		sed 's/^/# tsc_writer: /' "$WORK/writer.out"
		[ "$WRITER_EXIT" = "$KSFT_SKIP" ] && { skip "tsc_writer cannot create a VM (above)"; return; }
		echo "# tsc_writer exited with $WRITER_EXIT before its VM was in debugfs"
		return 1
	fi
	[ "$rc" = 0 ] || { echo "# no $KVM_DEBUGFS/$WRITER_PID-*/vcpu1/tsc-offset within 10s"; return 1; }
	kill -s STOP "$WRITER_PID"
	wait_until 10 writer_stopped || { echo "# tsc_writer did not stop within 10s of SIGSTOP"; return 1; }
}

# The snapshot line record-host.sh must write for the vCPU directory DIR
# of the VM directory VM, from what debugfs shows now.
expected_vcpu_line()
{
	local vm="$1" dir="$2" name line

	name=${vm##*/}
	line="kvm-tsc-snapshot vm=$name pid=${name%-*} vcpu=${dir##*/vcpu} tid=$(cat "$dir/pid") tsc_offset=$(cat "$dir/tsc-offset")"
	[ -e "$dir/tsc-scaling-ratio" ] &&
		line="$line tsc_scaling_ratio=$(cat "$dir/tsc-scaling-ratio") tsc_scaling_ratio_frac_bits=$(cat "$dir/tsc-scaling-ratio-frac-bits")"
	echo "$line"
}

# Records NAME.dat with record-host.sh and puts the kvm-tsc-snapshot lines
# trace-cmd report finds in it into NAME.snapshot, in their order, and the
# two snapshots, start's and stop's, into NAME.start-snapshot and
# NAME.stop-snapshot.
record_snapshot()
{
	local name="$1"

	start_stop "$name" || return 1
	sed 's/^/# /' "$WORK/$name.start"
	trace-cmd report -i "$WORK/$name.dat" 2>"$WORK/$name.report-err" |
		sed -n 's/.*: \(kvm-tsc-snapshot .*\)$/\1/p' | sed 's/ *$//' >"$WORK/$name.snapshot"
	if [ ! -s "$WORK/$name.snapshot" ]; then
		echo "# trace-cmd report finds no kvm-tsc-snapshot line in $name.dat"
		sed 's/^/# /' "$WORK/$name.report-err"
		return 1
	fi
	echo "# the snapshots in $name.dat, as trace-cmd report shows them:"
	sed 's/^/#   /' "$WORK/$name.snapshot"
	awk '{ print } /^kvm-tsc-snapshot end / { exit }' "$WORK/$name.snapshot" >"$WORK/$name.start-snapshot"
	awk 'stop { print } /^kvm-tsc-snapshot end / { stop = 1 }' "$WORK/$name.snapshot" >"$WORK/$name.stop-snapshot"
	[ -s "$WORK/$name.stop-snapshot" ] || { echo "# no second snapshot, stop's, after start's end line"; return 1; }
}

# The snapshot in FILE, written by COMMAND (start or stop): start's
# tsc_khz line, if any, comes first, stop's has none; one end line, last,
# that counts the vcpu lines. Prints VMS from the end line.
check_snapshot_frame()
{
	local snapshot="$1" command="$2" last vcpus

	if [ "$command" = stop ]; then
		! grep -q '^kvm-tsc-snapshot tsc_khz=' "$snapshot" ||
			{ echo "# stop's snapshot has a tsc_khz line" >&2; return 1; }
	else
		head -n 1 "$snapshot" | grep -q '^kvm-tsc-snapshot tsc_khz=[1-9][0-9]*$' || ! dmesg 2>/dev/null |
			grep -Eq 'tsc: (Refined TSC clocksource calibration:|Detected) [0-9]+\.[0-9]{3} MHz' ||
			{ echo "# dmesg has the TSC rate, but start's snapshot does not begin with tsc_khz=" >&2; return 1; }
	fi
	[ "$(grep -c '^kvm-tsc-snapshot tsc_khz=' "$snapshot")" -le 1 ] &&
		[ "$(grep -c '^kvm-tsc-snapshot end ' "$snapshot")" = 1 ] ||
		{ echo "# not one end line, or more than one tsc_khz line" >&2; return 1; }
	last=$(tail -n 1 "$snapshot")
	vcpus=$(grep -c '^kvm-tsc-snapshot vm=' "$snapshot")
	echo "$last" | grep -q "^kvm-tsc-snapshot end vms=[0-9]* vcpus=$vcpus\( tsc_scaling=[01]\)\?\$" ||
		{ echo "# the last line is not 'kvm-tsc-snapshot end vms=N vcpus=$vcpus [tsc_scaling=0|1]'" >&2; return 1; }
	# kvm_amd has had its tsc_scaling parameter since Linux 5.16.
	[ ! -d /sys/module/kvm_amd ] || echo "$last" | grep -q ' tsc_scaling=' ||
		{ echo "# kvm_amd is loaded, but the end line has no tsc_scaling" >&2; return 1; }
	echo "$last" | sed 's/.* vms=\([0-9]*\) .*/\1/'
}

# KVM gives a vCPU the tsc-scaling-ratio file where it scales TSCs: the
# snapshot in FILE's tsc_scaling, if it has one, says the same.
check_tsc_scaling()
{
	local said has=0

	said=$(sed -n 's/^kvm-tsc-snapshot end .* tsc_scaling=\([01]\)$/\1/p' "$1")
	[ -n "$said" ] || return 0
	[ ! -e "$VM_DIR/vcpu0/tsc-scaling-ratio" ] || has=1
	[ "$said" = "$has" ] && return 0
	echo "# the end line says tsc_scaling=$said, but $VM_DIR/vcpu0/tsc-scaling-ratio is $([ "$has" = 1 ] || echo "not ")there"
	return 1
}

test_snapshot_no_vm()
{
	local dir vms='' command

	require_kvm_debugfs || return
	for dir in "$KVM_DEBUGFS"/*-*; do
		[ -d "$dir" ] && vms="$vms$dir "
	done
	[ -z "$vms" ] || { skip "VMs run on this machine ($vms)"; return; }
	record_snapshot novm || return 1
	for command in start stop; do
		check_snapshot_frame "$WORK/novm.$command-snapshot" "$command" >/dev/null || return 1
		grep -qx 'kvm-tsc-snapshot end vms=0 vcpus=0\( tsc_scaling=[01]\)\?' "$WORK/novm.$command-snapshot" ||
			{ echo "# $command's snapshot has no 'kvm-tsc-snapshot end vms=0 vcpus=0'"; return 1; }
	done
}

test_snapshot_of_running_vm()
{
	local dir vms command rc=0

	require_kvm_debugfs || return
	start_stopped_writer || { rc=$?; stop_writer; return "$rc"; }
	: >"$WORK/vm.expected"
	for dir in "$VM_DIR"/vcpu*; do
		expected_vcpu_line "$VM_DIR" "$dir" >>"$WORK/vm.expected"
	done
	echo "# debugfs of ${VM_DIR##*/} (tsc_writer, stopped) before start:"
	sed 's/^/#   /' "$WORK/vm.expected"
	record_snapshot vm || rc=1
	for command in start stop; do
		[ "$rc" = 0 ] || break
		vms=$(check_snapshot_frame "$WORK/vm.$command-snapshot" "$command") || { rc=1; break; }
		grep " vm=${VM_DIR##*/} " "$WORK/vm.$command-snapshot" | sort >"$WORK/vm.got"
		sort "$WORK/vm.expected" | cmp -s - "$WORK/vm.got" ||
			{ echo "# $command's snapshot lines for ${VM_DIR##*/} differ from debugfs"; rc=1; }
		[ "$vms" -ge 1 ] || { echo "# $command's end line counts $vms VMs"; rc=1; }
		check_tsc_scaling "$WORK/vm.$command-snapshot" || rc=1
	done
	stop_writer
	return "$rc"
}

main()
{
	ktap_print_header
	require
	trap cleanup EXIT
	trap 'exit 1' INT TERM
	remove_stale_instances
	WORK=$(mktemp -d)
	STATE_DIR=$WORK/state
	ktap_set_plan 9
	ktap_test_result "-h and --help print the whole usage and exit 0, for every command" test_help
	ktap_test_result "an unknown option fails with status 2, naming it, the usage on stderr" \
		test_unknown_option
	ktap_test_result "a bad value or an operand fails with status 2, naming it" test_bad_value
	ktap_test_result "after a killed recording, start names what it left, refuses, and keeps it" \
		test_start_after_kill
	ktap_test_result "clean says what it removes and removes the instance and the state" test_clean
	ktap_test_result "after clean, a recording starts and stops" test_start_stop_after_clean
	ktap_test_result "stop after a killed recording says so and removes the instance" \
		test_stop_after_kill
	test_result "with no VM, start and stop each write a kvm-tsc-snapshot's end line, vms=0 vcpus=0" \
		test_snapshot_no_vm
	test_result "start and stop while a VM runs each write the snapshot of its vCPUs' debugfs TSC state" \
		test_snapshot_of_running_vm
	ktap_finished
}

main "$@"
