#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tsc_events_test.sh: test_kvm_tsc's checks all pass, and a tracefs instance of this test's own records exactly the events the module reported, in order, and nothing anywhere else.

# shellcheck source-path=SCRIPTDIR source=test_module_lib.sh
. "$(dirname "$0")/test_module_lib.sh"

readonly INSTANCE=$TRACEFS/instances/ktk-$$
readonly OTHER=$TRACEFS/instances/ktk-$$-other

# Entries in a buffer's ring (per_cpu/cpuN/stats), lost or read ones included.
buffer_entries()
{
	cat "$1"/per_cpu/cpu*/stats | awk '/^entries:/ { n += $2 } END { print n + 0 }'
}

# Others may be tracing at the top level; then its count says nothing.
top_level_busy()
{
	if [ -n "$(cat "$TRACEFS/set_event")" ]; then
		echo "events are enabled at the top level"
	elif [ "$(cat "$TRACEFS/current_tracer")" != nop ]; then
		echo "a tracer runs at the top level"
	fi
}

# An instance with the x86-tsc clock and the TSC events this kernel has,
# recording only PID and, if FORK is 1, what PID forks from then on.
create_instance()
{
	local dir="$1" pid="$2" fork="$3" event

	mkdir "$dir" || return 1
	echo x86-tsc >"$dir/trace_clock" || return 1
	echo "$pid" >"$dir/set_event_pid" || return 1
	echo "$fork" >"$dir/options/event-fork" || return 1
	for event in $TSC_EVENTS; do
		[ -d "$dir/events/kvm/$event" ] || continue
		echo 1 >"$dir/events/kvm/$event/enable" || return 1
	done
}

remove_instance()
{
	[ -d "$1" ] || return 0
	echo 0 >"$1/tracing_on"
	echo >"$1/set_event"
	rmdir "$1"
}

# The TSC events in an instance, as the module prints them.
instance_events()
{
	sed -n 's/^.* \(kvm_[a-z_]*: vcpu=.*\)$/\1/p' "$1/trace"
}

instance_holds_module_events()
{
	local seen reported

	echo 0 >"$INSTANCE/tracing_on"
	seen=$(instance_events "$INSTANCE")
	reported=$(module_ktap | sed -n 's/^# event: //p')
	ktap_print_msg "$(echo "$reported" | grep -c .) events reported by $TEST_MODULE," \
		"$(echo "$seen" | grep -c .) in $INSTANCE"
	[ -n "$reported" ] && [ "$seen" = "$reported" ] && return 0
	echo "$reported" >"$LOAD_DIR/reported"
	echo "$seen" >"$LOAD_DIR/seen"
	diff "$LOAD_DIR/reported" "$LOAD_DIR/seen" | sed 's/^/# /'
	return 1
}

other_instance_got_none()
{
	local entries

	entries=$(buffer_entries "$OTHER")
	[ "$entries" = 0 ] && return 0
	ktap_print_msg "$entries entries in $OTHER:"
	instance_events "$OTHER" | head -n 5 | sed 's/^/#   /'
	return 1
}

top_level_got_none()
{
	local after

	after=$(buffer_entries "$TRACEFS")
	[ "$after" = "$TOP_BEFORE" ] && return 0
	ktap_print_msg "top-level entries: $TOP_BEFORE before the load, $after after"
	return 1
}

instances_removed()
{
	remove_instance "$INSTANCE" && remove_instance "$OTHER" &&
		[ ! -e "$INSTANCE" ] && [ ! -e "$OTHER" ]
}

start_test
require_test_module
# tracefs (mounted if nobody has), KVM's TSC events and the x86-tsc clock.
[ -d "$TRACEFS/instances" ] || mount -t tracefs tracefs "$TRACEFS" 2>/dev/null ||
	skip_all "tracefs is not mounted on $TRACEFS and cannot be"
[ -d "$TRACEFS/events/kvm/kvm_write_tsc_offset" ] ||
	skip_all "no kvm:kvm_write_tsc_offset in tracefs: KVM is not loaded"
grep -q x86-tsc "$TRACEFS/trace_clock" || skip_all "tracefs has no x86-tsc clock"
clean_up_on_exit "remove_instance $INSTANCE; remove_instance $OTHER; clean_up_test_module"
make_load_dir
# The test's instance records this script until the loader, which it
# forks, puts in its own pid: nothing else gets in before the load. The
# other one records this script only, which runs no VM: with event-fork
# it would record the loader too.
create_instance "$INSTANCE" $$ 1 || ktap_exit_fail_msg "cannot set up tracefs instance $INSTANCE"
create_instance "$OTHER" $$ 0 || ktap_exit_fail_msg "cannot set up tracefs instance $OTHER"
TOP_BUSY=$(top_level_busy)
TOP_BEFORE=$(buffer_entries "$TRACEFS")
ktap_print_msg "loading $TEST_KO $MODULE_ARGS, recorded in $INSTANCE"
if ! load_test_module "$INSTANCE"; then
	reason=$(module_skip_reason)
	[ -z "$reason" ] || skip_all "$TEST_MODULE: $reason"
fi
ktap_set_plan 6
ktap_test_result "$TEST_MODULE loads: all its checks pass with exact values" module_passed
ktap_test_result "$INSTANCE holds exactly the events $TEST_MODULE reported, in order" \
	instance_holds_module_events
ktap_test_result "a second instance, recording another pid, got none" other_instance_got_none
if [ -n "$TOP_BUSY" ]; then
	ktap_test_skip "the top-level buffer got none: $TOP_BUSY"
else
	ktap_test_result "the top-level buffer got none" top_level_got_none
fi
ktap_test_result "$TEST_MODULE unloads" unload_test_module
ktap_test_result "both instances are removed" instances_removed
ktap_finished
