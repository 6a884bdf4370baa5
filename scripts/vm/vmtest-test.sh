#!/bin/bash
# vmtest-test.sh: KTAP tests of scripts/vm/vmtest.sh: the status and the exported files come back under QEMU and Bochs, hangs, silences and kernel warnings fail the run.

set -u

# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

readonly SCRIPT=$TOP_DIR/scripts/vm/vmtest.sh
readonly VM_DIR=$BUILD_DIR/vmtest-test

# Boot with vmtest.sh's OPTIONs and a payload: its output in $OUT, status in $STATUS.
run_vm()
{
	OUT=$("$SCRIPT" --dir "$VM_DIR" "$@" 2>&1)
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

test_status_comes_back()
{
	run_vm -- 'echo payload ran; exit 3'
	expect 3 "payload ran"
}

test_hang_is_killed()
{
	run_vm --timeout 10 -- 'sleep 600'
	expect 1 "did not finish within 10s and was killed; console log: $VM_DIR/console.log"
}

# A level that stalls under TCG prints nothing.
test_silence_is_stopped()
{
	local start=$SECONDS

	run_vm --silence 15 --timeout 140 -- 'echo going quiet; echo vmtest-test goes quiet >/dev/kmsg; sleep 600'
	echo "# stopped after $((SECONDS - start)) s (boot included)"
	expect 1 "printed nothing for 15s and was stopped; console log: $VM_DIR/console.log" &&
		expect 1 "vmtest-test goes quiet" && [ $((SECONDS - start)) -lt 150 ]
}

test_add_reaches_root()
{
	local add=$VM_DIR.add

	rm -rf "$add"
	mkdir -p "$add/etc/vmtest-test"
	echo added >"$add/etc/vmtest-test/file"
	run_vm --add "$add" -- 'cat /etc/vmtest-test/file'
	rm -rf "$add"
	expect 0 "^added$"
}

test_warning_fails()
{
	run_vm -- 'echo "WARNING: CPU: 0 PID: 1 at vmtest-test" >/dev/kmsg; exit 0'
	expect 1 "the test kernel reported a problem"
}

test_no_status_fails()
{
	run_vm -- 'poweroff -f'
	expect 1 "stopped without reporting a status"
}

# The export directory is the VM's only way to write to the host.
test_export_comes_back()
{
	run_vm -- 'echo exported >/export/file && ! touch /ktt/vmtest-test.written'
	expect 0 "" && [ "$(cat "$VM_DIR/export/file" 2>/dev/null)" = exported ] &&
		[ ! -e "$TOP_DIR/vmtest-test.written" ] && return 0
	echo "# /export/file did not come back, or /ktt was writable"
	return 1
}

# Bochs has no 9p: --files come in the initramfs, /export goes back
# over a serial port, and its exit status on power-off is not the payload's.
test_bochs_round_trip()
{
	run_vm --vmm bochs --files scripts/guest/vm-checks.sh -- \
		'head -2 scripts/guest/vm-checks.sh | tail -1; echo exported >/export/file; exit 3'
	expect 3 "^# vm-checks.sh: " && [ "$(cat "$VM_DIR/export/file" 2>/dev/null)" = exported ] &&
		return 0
	echo "# /export/file did not come back from Bochs"
	return 1
}

main()
{
	use_ktap
	ktap_print_header
	ktap_set_plan 8
	ktap_test_result "the payload's output and exit status come back to the host" test_status_comes_back
	ktap_test_result "a hanging VM is killed at the timeout, naming the console log" test_hang_is_killed
	ktap_test_result "a VM that prints nothing for --silence seconds is stopped then, its console's tail shown" \
		test_silence_is_stopped
	ktap_test_result "--add's tree is in the VM's root" test_add_reaches_root
	ktap_test_result "a WARNING in the kernel log fails a run whose payload passed" test_warning_fails
	ktap_test_result "a VM that stops without a status fails the run" test_no_status_fails
	ktap_test_result "files written to /export reach the host; the shared repository is read-only" \
		test_export_comes_back
	ktap_test_result "under Bochs, --files reach the VM, and its output, status and /export come back" \
		test_bochs_round_trip
	rm -rf "$VM_DIR"
	ktap_finished
}

main "$@"
