#!/bin/sh
# vm-checks.sh: the checks `make check` runs inside the test VM: environment, event formats, module, selftests.
#
# Runs from /ktt in the VM (see vmtest.sh) under busybox sh; with
# --suites-only, only the two test suites with the module watching. Prints
# TAP streams and exits non-zero if any check or test failed.

readonly TRACEFS=/sys/kernel/tracing
# Read from a boot of the unpatched 6.12.117 test kernel: the series must not
# change one byte of it. The event ID is part of the file; it stays because
# the series defines its events before kvm_write_tsc_offset in trace.h.
readonly REF_FORMAT=scripts/ref/kvm_write_tsc_offset.format

. scripts/tap.sh

check_nested_svm()
{
	local param=/sys/module/kvm_amd/parameters/nested

	if [ ! -r "$param" ]; then
		echo "# kvm_amd is not loaded ($param missing)"
		return 1
	fi
	case $(cat "$param") in
	1 | Y) return 0 ;;
	*) echo "# kvm_amd.nested is $(cat "$param"), expected 1" ; return 1 ;;
	esac
}

check_offset_format()
{
	local format=$TRACEFS/events/kvm/kvm_write_tsc_offset/format

	[ -r "$format" ] || { echo "# $format missing"; return 1; }
	cmp -s "$REF_FORMAT" "$format" && return 0
	echo "# $format differs from the unpatched 6.12 format:"
	diff "$REF_FORMAT" "$format" | sed 's/^/# /'
	return 1
}

# The event's own fields as "name:size:signed", in order (common_* left out).
event_fields()
{
	sed -n 's/^\tfield:.* \([a-z_]*\);\toffset:[0-9]*;\tsize:\([0-9]*\);\tsigned:\([01]\);$/\1:\2:\3/p' \
		"$TRACEFS/events/kvm/$1/format" | grep -v '^common_' | tr '\n' ' '
}

# DESIGN.md section 2: the fields of a new event, names, sizes and order.
check_event_contract()
{
	local event=$1 expected=$2 fields

	[ -r "$TRACEFS/events/kvm/$event/format" ] ||
		{ echo "# the patched kernel has no kvm:$event"; return 1; }
	fields=$(event_fields "$event")
	[ "$fields" = "$expected " ] && return 0
	echo "# kvm:$event fields: expected '$expected', got '$fields'"
	return 1
}

check_tsc_instance()
{
	local inst=$TRACEFS/instances/ktt-vm-check.$$ rc=1

	mkdir "$inst" || return 1
	if echo x86-tsc >"$inst/trace_clock" && grep -q '\[x86-tsc\]' "$inst/trace_clock"; then
		rc=0
	else
		echo "# $inst/trace_clock: $(cat "$inst/trace_clock")"
	fi
	rmdir "$inst" || rc=1
	[ ! -e "$inst" ] || { echo "# $inst still exists after rmdir"; rc=1; }
	return $rc
}

run_environment_checks()
{
	echo "TAP version 13"
	echo "1..5"
	check_nested_svm
	tap_result $? "kvm_amd is loaded with nested=1"
	check_offset_format
	tap_result $? "kvm_write_tsc_offset format is byte-identical to unpatched 6.12"
	check_event_contract kvm_write_tsc_multiplier \
		"vcpu_id:4:0 previous_tsc_multiplier:8:0 next_tsc_multiplier:8:0 frac_bits:1:0"
	tap_result $? "kvm_write_tsc_multiplier has the contract's fields"
	check_event_contract kvm_nested_tsc_offset \
		"vcpu_id:4:0 guest_mode:1:0 previous_tsc_offset:8:0 next_tsc_offset:8:0 tsc_multiplier:8:0"
	tap_result $? "kvm_nested_tsc_offset has the contract's fields"
	check_tsc_instance
	tap_result $? "a tracefs instance with trace_clock x86-tsc can be created and removed"
}

# Run the tests listed in DIR/tests as kselftest suite SUITE.
run_suite()
{
	local dir=$1 suite=$2

	local start=$(date +%s) rc

	[ -f "$dir/tests" ] || { echo "Bail out! no $dir in the initramfs"; return 1; }
	# shellcheck disable=SC2046
	SUITE=$suite sh selftests/run_tests.sh "$dir" $(cat "$dir/tests")
	rc=$?
	echo "# $suite suite: $(($(date +%s) - start)) s"
	return $rc
}

# kvm_tsc_probe watched both suites: the events they caused, nested SVM
# included, must all have kept the invariants it checks.
check_module_after_suites()
{
	local d=/sys/kernel/debug/kvm_tsc_probe rc=0

	echo "TAP version 13"
	echo "1..1"
	sed 's/^/# counters: /' $d/counters
	sed 's/^/# violation: /' $d/violations
	grep -qx 'violations 0' $d/counters || rc=1
	rmmod kvm_tsc_probe || rc=1
	TAP_NR=0
	tap_result $rc "kvm_tsc_probe counted no violation over both suites"
}

# The debug kernel (KASAN, lockdep, kmemleak) runs only the suites with the
# module: its event IDs differ from the reference format's.
if [ "${1:-}" != --suites-only ]; then
	run_environment_checks
	sh scripts/vm-module-checks.sh || TAP_FAILED=1
fi
insmod module/kvm_tsc_probe.ko || { echo "Bail out! cannot load kvm_tsc_probe"; exit 1; }
run_suite selftests kvm-tsc-trace || TAP_FAILED=1
run_suite kvm-selftests kvm || TAP_FAILED=1
check_module_after_suites
exit $TAP_FAILED
