#!/bin/sh
# vm-checks.sh: what `make check` runs inside a VM of the test or debug kernel: the kselftest suites, with kvm_tsc_probe watching them.
#
# usage: vm-checks.sh PROBE_KO [--churn CYCLES VMS]
#
# Runs from /ktt under busybox sh (see vmtest.sh). The probe is loaded
# first, so that it sees every event the suites cause. The runner takes
# collections in sorted order, so kvm_tsc_probe's comes last: its first
# test reports what the probe saw and unloads it, the others load it
# themselves. The probe's load cycles and validator run on Debian's 6.12
# with the series' KVM modules (stock-checks.sh): here, under Bochs and on
# the debug kernel, a guest second costs a minute. --churn runs the churn
# test (cycles_test.sh) with CYCLES cycles and VMS VMs. Prints kselftest's
# TAP, where failures are the "not ok" lines: 6.12's run_kselftest.sh
# exits 0 whatever the tests did.

readonly KSFT=build/selftests-install
readonly COLLECTIONS="kvm kvm-tsc-trace kvm_tsc_probe"

# A collection missing from the list would go unseen: the runner says nothing.
for c in $COLLECTIONS; do
	grep -q "^$c:" "$KSFT/kselftest-list.txt" ||
		{ echo "Bail out! $KSFT/kselftest-list.txt has no $c collection: run 'make ksft'"; exit 1; }
done
ko=$1
churn=
shift
case $#:${1:-} in
0:) ;;
3:--churn)
	export CHURN_CYCLES="$2" CHURN_VMS="$3"
	churn="-t kvm_tsc_probe:cycles_test.sh" ;;
*) echo "Bail out! usage: vm-checks.sh PROBE_KO [--churn CYCLES VMS]"; exit 1 ;;
esac
insmod "$ko" || { echo "Bail out! cannot load $ko"; exit 1; }
# The modules built for the kernel that runs, not the copies installed with
# the tests (the test kernel's).
export KVM_TSC_PROBE_KO="/ktt/$ko"
export TEST_KVM_TSC_KO="/ktt/${ko%/*}/test_kvm_tsc.ko"
# The test kernel has the series and a vendor module: their absence fails.
export KTT_TEST_KERNEL=1
# shellcheck disable=SC2086 # $churn is one option and its value
exec "$KSFT/run_kselftest.sh" -c kvm -c kvm-tsc-trace -t kvm_tsc_probe:watch_test.sh \
	-t kvm_tsc_probe:tsc_events_test.sh -t kvm_tsc_probe:tsc_failure_test.sh \
	-t kvm_tsc_probe:tsc_loads_test.sh $churn
