#!/bin/sh
# stock-checks.sh: what `make check` runs in the VM of a distribution's kernel: the collections on its own KVM, then with the series' KVM modules in place of its own.
#
# usage: [KSFT=DIR] [CHURN_CYCLES=N CHURN_VMS=N] stock-checks.sh PROBE_KO [SERIES_KVM_DIR]
#
# Runs from /ktt under busybox sh (see vmtest.sh --kernel ROOT), PROBE_KO
# and test_kvm_tsc.ko as dkms built them from the kernel's headers. Stock
# KVM has kvm_write_tsc_offset alone: the probe attaches to it and waits
# for the other two, the tests of those skip naming the series, and the
# fixes' reproducer, nested_tsc_restore_test, must fail. Then, with
# SERIES_KVM_DIR's modules copied over the stock ones in the initramfs and
# loaded, the probe attaches to all three and every test passes as on the
# test kernel, the reproducer among them, and, given CHURN_CYCLES and
# CHURN_VMS, the probe's churn test (cycles_test.sh) with as many. Prints
# TAP.

KSFT=${KSFT:-build/selftests-install}
readonly KSFT
readonly REPRODUCER=kvm:nested_tsc_restore_test
readonly CHURN_TEST=kvm_tsc_probe:cycles_test.sh
readonly ATTACHED=/sys/kernel/debug/kvm_tsc_probe/attached

ko=$1
series_kvm=${2:-}
# The modules built for the kernel that runs, not the test kernel's copies
# installed with the tests.
export KVM_TSC_PROBE_KO="/ktt/$ko"
export TEST_KVM_TSC_KO="/ktt/${ko%/*}/test_kvm_tsc.ko"

# The probe loaded, and its attached file what WANT says.
check_attached()
{
	want=$1
	shift
	insmod "$ko" || { echo "Bail out! cannot load $ko"; exit 1; }
	sed 's/^/# attached: /' "$ATTACHED"
	result="not ok"
	[ "$(cat "$ATTACHED")" = "$want" ] && result=ok
	echo "$result - $*"
}

# Every test of the collections but those named with -e.
run_tests_except()
{
	# shellcheck disable=SC2046 # one -t option a test
	"$KSFT/run_kselftest.sh" $("$KSFT/run_kselftest.sh" -l | grep -vx "$@" | sed 's/^/-t /')
}

check_reproducer_fails()
{
	out=$("$KSFT/kvm/${REPRODUCER#kvm:}" 2>&1)
	status=$?
	echo "$out" | sed 's/^/# /'
	result="not ok"
	[ "$status" != 0 ] && echo "$out" | grep -Eq '^not ok [0-9]+ (svm_forced_exit|vmx_failed_entry)' &&
		result=ok
	echo "$result - ${REPRODUCER#kvm:} fails on stock KVM (status $status): L1's TSC is stale after a nested exit"
}

# The series' kvm.ko and vendor modules over the stock ones, which the
# module tests' modprobe then loads too.
swap_in_series_kvm()
{
	vendor=kvm_amd
	grep -qw vmx /proc/cpuinfo && vendor=kvm_intel
	! grep -q '^kvm_tsc_probe ' /proc/modules || rmmod kvm_tsc_probe
	result="not ok"
	rmmod "$vendor" kvm &&
		cp "/ktt/$series_kvm"/kvm*.ko "/lib/modules/$(uname -r)/kernel/arch/x86/kvm/" &&
		modprobe kvm force_emulation_prefix=1 && modprobe "$vendor" nested=1 && result=ok
	echo "$result - the series' KVM modules load in place of the stock ones"
}

check_attached "kvm_write_tsc_offset kvm
kvm_write_tsc_multiplier waiting
kvm_nested_tsc_offset waiting" "stock KVM: kvm_tsc_probe attaches to kvm_write_tsc_offset, waits for the series' two events"
run_tests_except -e "$CHURN_TEST" -e "$REPRODUCER"
check_reproducer_fails
[ -n "$series_kvm" ] || exit 0

swap_in_series_kvm
check_attached "kvm_write_tsc_offset kvm
kvm_write_tsc_multiplier kvm
kvm_nested_tsc_offset kvm" "the series' KVM: kvm_tsc_probe attaches to all three events"
# As on the test kernel: what the series adds must be there.
export KTT_TEST_KERNEL=1
if [ -n "${CHURN_CYCLES:-}" ]; then
	"$KSFT/run_kselftest.sh"
else
	run_tests_except -e "$CHURN_TEST"
fi
