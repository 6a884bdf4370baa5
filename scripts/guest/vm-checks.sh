#!/bin/sh
# vm-checks.sh: what `make check` runs inside the test VM: every kselftest collection, with kvm_tsc_probe watching them.
#
# usage: vm-checks.sh PROBE_KO [--suites-only] [--churn CYCLES VMS] [--dkms DKMS_KO]
#
# Runs from /ktt under busybox sh (see vmtest.sh). The probe is loaded
# first, so that it sees every event the collections cause. The runner
# takes collections in sorted order, so kvm_tsc_probe's comes last: its
# first test reports what the probe saw and unloads it, the others load it
# themselves. --suites-only (the debug kernel, and Bochs, where a guest
# second costs a minute) leaves out the probe's load cycles, which QEMU's
# run of the test kernel covers; --churn runs the churn test (cycles_test.sh)
# with CYCLES cycles and VMS VMs, --suites-only or not. --dkms first checks
# that DKMS_KO, the probe as dkms built it, attaches. Prints
# kselftest's TAP, where failures are the "not ok" lines: 6.12's
# run_kselftest.sh exits 0 whatever the tests did.

readonly KSFT=build/selftests-install
readonly COLLECTIONS="kvm kvm-tsc-trace kvm_tsc_probe"

# A collection missing from the list would go unseen: the runner says nothing.
for c in $COLLECTIONS; do
	grep -q "^$c:" "$KSFT/kselftest-list.txt" ||
		{ echo "Bail out! $KSFT/kselftest-list.txt has no $c collection: run 'make ksft'"; exit 1; }
done
ko=$1
suites_only=
churn=
dkms_ko=
shift
while [ $# -gt 0 ]; do
	case $1 in
	--suites-only) suites_only=1; shift ;;
	--churn)
		[ $# -ge 3 ] || { echo "Bail out! --churn needs CYCLES and VMS"; exit 1; }
		export CHURN_CYCLES="$2" CHURN_VMS="$3"
		churn="-t kvm_tsc_probe:cycles_test.sh"
		shift 3 ;;
	--dkms)
		[ $# -ge 2 ] || { echo "Bail out! --dkms needs the module"; exit 1; }
		dkms_ko=$2
		shift 2 ;;
	*) echo "Bail out! unknown option $1"; exit 1 ;;
	esac
done
# The dkms build goes before the project's: both are kvm_tsc_probe. Every
# line of its attached file says "kvm" once it attached to kvm.ko's
# tracepoints, which guest-init.sh loaded.
if [ -n "$dkms_ko" ]; then
	attached=/sys/kernel/debug/kvm_tsc_probe/attached
	result="not ok"
	if insmod "$dkms_ko"; then
		# debugfs gives its files no size: read one line to see it is not empty.
		grep -q ' kvm$' "$attached" && ! grep -qv ' kvm$' "$attached" && result=ok
		sed 's/^/# attached: /' "$attached"
		rmmod kvm_tsc_probe || result="not ok"
	fi
	echo "$result - dkms-built kvm_tsc_probe loads and attaches"
fi
insmod "$ko" || { echo "Bail out! cannot load $ko"; exit 1; }
# The modules built for the kernel that runs, not the copies installed with
# the tests (the test kernel's).
export KVM_TSC_PROBE_KO="/ktt/$ko"
export TEST_KVM_TSC_KO="/ktt/${ko%/*}/test_kvm_tsc.ko"
# The test kernel has the series and a vendor module: their absence fails.
export KTT_TEST_KERNEL=1
# The options are all read: "$@" is empty but for --suites-only.
# shellcheck disable=SC2086 # $churn is one option and its value
[ -z "$suites_only" ] || set -- -c kvm -c kvm-tsc-trace -t kvm_tsc_probe:watch_test.sh \
	-t kvm_tsc_probe:tsc_events_test.sh -t kvm_tsc_probe:tsc_failure_test.sh \
	-t kvm_tsc_probe:tsc_loads_test.sh $churn
exec "$KSFT/run_kselftest.sh" "$@"
