#!/bin/sh
# stock-checks.sh: what `make check` runs in the VM of a distribution's kernel: the collections on its own KVM, then with the series' KVM modules in place of its own.
#
# usage: [KSFT=DIR] [CHURN_CYCLES=N CHURN_VMS=N | REPRODUCER_ONLY=1] stock-checks.sh PROBE_KO [SERIES_KVM_DIR OTHER_KVM_DIR]
#
# Runs from /ktt under busybox sh (see vmtest.sh --kernel ROOT), PROBE_KO
# and test_kvm_tsc.ko as dkms built them from the kernel's headers. Stock
# KVM has kvm_write_tsc_offset alone: the probe attaches to it and waits
# for the other two, the tests of those skip naming the series, and the
# fixes' reproducer, nested_tsc_restore_test, must fail. Then
# scripts/host/kvm-swap.sh, as a user runs it, refuses OTHER_KVM_DIR's
# modules (another kernel's), swaps SERIES_KVM_DIR's in and installs them:
# the probe attaches to all three events and every test passes as on the
# test kernel, the reproducer among them, and, given CHURN_CYCLES and
# CHURN_VMS, the probe's churn test (cycles_test.sh) with as many. Last,
# kvm-swap.sh uninstall and restore bring the stock KVM back. With
# REPRODUCER_ONLY (Bochs, where a guest second costs a minute), the
# reproducer alone stands for the collections, on each KVM. Prints TAP.

KSFT=${KSFT:-build/selftests-install}
readonly KSFT
readonly REPRODUCER=kvm:nested_tsc_restore_test
readonly CHURN_TEST=kvm_tsc_probe:cycles_test.sh
readonly ATTACHED=/sys/kernel/debug/kvm_tsc_probe/attached
readonly SWAP=scripts/host/kvm-swap.sh

ko=$1
series_kvm=${2:-}
other_kvm=${3:-}
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

# The reproducer run, its output as comments; its status in status.
run_reproducer()
{
	out=$("$KSFT/kvm/${REPRODUCER#kvm:}" 2>&1)
	status=$?
	echo "$out" | sed 's/^/# /'
}

check_reproducer_passes()
{
	run_reproducer
	result="not ok"
	[ "$status" = 0 ] && result=ok
	echo "$result - ${REPRODUCER#kvm:} passes with the series' KVM"
}

check_reproducer_fails()
{
	run_reproducer
	result="not ok"
	[ "$status" != 0 ] && echo "$out" | grep -Eq '^not ok [0-9]+ (svm_forced_exit|vmx_failed_entry)' &&
		result=ok
	echo "$result - ${REPRODUCER#kvm:} fails on stock KVM (status $status): L1's TSC is stale after a nested exit"
}

# Whether the loaded KVM has the series' events.
series_loaded()
{
	[ -d /sys/kernel/tracing/events/kvm/kvm_write_tsc_multiplier ]
}

# One line of TAP: ok where the command succeeded and the loaded KVM is
# the series' as WANT (yes or no) says; the command's output as comments.
swap_step()
{
	want=$1 what=$2
	shift 2
	out=$(bash "$SWAP" "$@" 2>&1)
	status=$?
	echo "$out" | sed 's/^/# /'
	result="not ok"
	loaded=no
	series_loaded && loaded=yes
	[ "$status" = 0 ] && [ "$loaded" = "$want" ] && result=ok
	echo "$result - $what"
}

# The series' KVM as a user puts it in. kvm-swap.sh reads the options
# guest-init.sh gave from modprobe.d; once installed, the series' modules
# are what the tests' own modprobe loads too.
swap_in_series_kvm()
{
	! grep -q '^kvm_tsc_probe ' /proc/modules || rmmod kvm_tsc_probe
	mkdir -p /etc/modprobe.d
	printf 'options %s\n' 'kvm force_emulation_prefix=1' 'kvm_amd nested=1' 'kvm_intel nested=1' \
		>/etc/modprobe.d/kvm-tsc-trace.conf
	out=$(bash "$SWAP" swap "$other_kvm" 2>&1)
	status=$?
	echo "$out" | sed 's/^/# /'
	result="not ok"
	[ "$status" != 0 ] && echo "$out" | grep -q "vermagic .*build for $(uname -r)" && ! series_loaded &&
		[ -d /sys/module/kvm ] && result=ok
	echo "$result - kvm-swap.sh swap refuses another kernel's KVM modules by their vermagic, the stock KVM left loaded"
	swap_step yes "kvm-swap.sh swap loads the series' KVM modules in place of the stock ones" swap "$series_kvm"
	swap_step yes "kvm-swap.sh install copies them where modprobe finds them first" install "$series_kvm"
	swap_step yes "kvm-swap.sh restore: modprobe loads the installed series' KVM modules" restore
}

stock_tests()
{
	check_attached "kvm_write_tsc_offset kvm
kvm_write_tsc_multiplier waiting
kvm_nested_tsc_offset waiting" "stock KVM: kvm_tsc_probe attaches to kvm_write_tsc_offset, waits for the series' two events"
	run_tests_except -e "$CHURN_TEST" -e "$REPRODUCER"
}

series_tests()
{
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
	! grep -q '^kvm_tsc_probe ' /proc/modules || rmmod kvm_tsc_probe
}

[ -n "${REPRODUCER_ONLY:-}" ] || stock_tests
check_reproducer_fails
[ -n "$series_kvm" ] || exit 0

swap_in_series_kvm
if [ -n "${REPRODUCER_ONLY:-}" ]; then
	check_reproducer_passes
else
	series_tests
fi
swap_step yes "kvm-swap.sh uninstall removes them, the loaded ones left alone" uninstall
swap_step no "kvm-swap.sh restore: the stock KVM modules again" restore
