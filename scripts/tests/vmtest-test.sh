#!/bin/bash
# vmtest-test.sh: TAP tests of scripts/vmtest.sh: the status comes back, hangs and kernel warnings fail the run.

set -u

. "$(dirname "$0")/../common.sh"

readonly SCRIPT=$TOP_DIR/scripts/vmtest.sh
export VMTEST_DIR=$BUILD_DIR/vmtest-test

# Boot with a payload; keep the output in $OUT and the status in $STATUS.
run_vm()
{
	OUT=$("$SCRIPT" "$@" 2>&1)
	STATUS=$?
}

expect()
{
	local status=$1 pattern=$2

	[ "$STATUS" = "$status" ] && grep -q -- "$pattern" <<<"$OUT" && return 0
	echo "# expected status $status and '$pattern', got status $STATUS:"
	tail -5 <<<"$OUT" | sed 's/^/#   /'
	return 1
}

main()
{
	[ -f "$KBUILD_OUT/arch/x86/boot/bzImage" ] ||
		{ echo "1..0 # SKIP no test kernel: run 'make kernel'"; exit 4; }
	echo "TAP version 13"
	echo "1..4"
	run_vm 'echo payload ran; exit 3'
	expect 3 "payload ran"
	tap_result $? "the payload's output and exit status come back to the host"
	VMTEST_TIMEOUT=10 run_vm 'sleep 600'
	expect 1 "did not finish within 10s and was killed; console log: $VMTEST_DIR/console.log"
	tap_result $? "a hanging VM is killed at the timeout, naming the console log"
	run_vm 'echo "WARNING: CPU: 0 PID: 1 at vmtest-test" >/dev/kmsg; exit 0'
	expect 1 "the test kernel reported a problem"
	tap_result $? "a WARNING in the kernel log fails a run whose payload passed"
	run_vm 'poweroff -f'
	expect 1 "stopped without reporting a status"
	tap_result $? "a VM that stops without a status fails the run"
	rm -rf "$VMTEST_DIR"
	exit $TAP_FAILED
}

main "$@"
