# SPDX-License-Identifier: GPL-2.0
# test_module_lib.sh: what the test_kvm_tsc tests share: where the test module is, loading it from a process whose pid is known, and reading its KTAP back from the kernel log (POSIX sh, sourced; it sources probe_lib.sh).

# shellcheck shell=sh
# shellcheck disable=SC2034 # the constants are for the tests that source this file

# shellcheck source-path=SCRIPTDIR source=probe_lib.sh
. "$(dirname "$0")/probe_lib.sh"

readonly TEST_MODULE=test_kvm_tsc
readonly TRACEFS=/sys/kernel/tracing
# The module next to the tests (where the collection's install puts it),
# else next to kvm_tsc_probe.ko; TEST_KVM_TSC_KO overrides both.
TEST_KO="${TEST_KVM_TSC_KO:-$TEST_DIR/$TEST_MODULE.ko}"
[ -n "${TEST_KVM_TSC_KO:-}" ] || [ -r "$TEST_KO" ] || TEST_KO="$(dirname "$PROBE_KO")/$TEST_MODULE.ko"
readonly TEST_KO
# On the project's test kernels a missing TSC tracepoint fails the load.
MODULE_ARGS=
[ "${KTT_TEST_KERNEL:-}" != 1 ] || MODULE_ARGS=require_events=1
readonly MODULE_ARGS
# Where load_test_module leaves the pid the module ran in, in "pid", and
# insmod's messages, in "insmod".
LOAD_DIR=

# What every test of the module needs: the module, not loaded, and /dev/kvm.
require_test_module()
{
	[ -r "$TEST_KO" ] ||
		skip_all "$TEST_KO is missing: build the module and install it with the tests, or set TEST_KVM_TSC_KO"
	! is_loaded "$TEST_MODULE" ||
		skip_all "$TEST_MODULE is already loaded by someone else: unload it first"
	require_dev_kvm
}

# LOAD_DIR, which clean_up_test_module removes.
make_load_dir()
{
	LOAD_DIR=$(mktemp -d /tmp/test_kvm_tsc.XXXXXX) ||
		ktap_exit_fail_msg "cannot create a directory in /tmp"
}

# load_test_module INSTANCE [PARAM=VALUE...]: loads the module from a
# shell that first writes its own pid where the test reads it and, given an
# instance, into its set_event_pid, then becomes insmod: the module runs in
# that pid and the instance, unless INSTANCE is "", records from the load
# on. Returns insmod's status.
load_test_module()
{
	local instance="$1"

	shift
	rm -f "$LOAD_DIR/pid"
	# shellcheck disable=SC2016,SC2086
	sh -c 'echo $$ >"$1/pid" || exit 1
		[ -z "$2" ] || echo $$ >"$2/set_event_pid" || exit 1
		ko=$3; shift 3; exec insmod "$ko" "$@"' \
		sh "$LOAD_DIR" "$instance" "$TEST_KO" $MODULE_ARGS "$@" \
		>"$LOAD_DIR/insmod" 2>&1
}

# The module's KTAP from the last load, without the log prefix. When
# finit_module() fails, busybox's insmod tries init_module() with the same
# module: the last run in the loader's pid is the one reported.
module_ktap()
{
	local pid

	pid=$(cat "$LOAD_DIR/pid" 2>/dev/null) || return 1
	dmesg | sed -n "s/^.*$TEST_MODULE: //p" | awk -v pid="$pid" '
		/^KTAP version 1$/ { mine = 0; header = $0; next }
		$0 == "# loaded by pid " pid { mine = 1; out = header }
		mine { out = out "\n" $0 }
		END { if (out != "") print out }'
}

# The module's KTAP as diagnostics of this test's.
print_module_ktap()
{
	module_ktap | sed "s/^/# $TEST_MODULE: /"
	sed "s/^/# insmod: /" "$LOAD_DIR/insmod"
}

# Every check of the load passed: insmod succeeded, the module printed its
# totals and no "not ok". Its KTAP goes out as diagnostics.
module_passed()
{
	local ktap

	print_module_ktap
	ktap=$(module_ktap)
	[ -n "$ktap" ] || return 1
	echo "$ktap" | grep -q '^# Totals: pass:[0-9]* fail:0 ' &&
		! echo "$ktap" | grep -q '^not ok '
}

# The reason of a whole-module skip (no /dev/kvm, KVM not loaded), if any.
module_skip_reason()
{
	module_ktap | sed -n 's/^1\.\.0 # SKIP //p'
}

unload_test_module()
{
	rmmod "$TEST_MODULE"
}

# However a test ends: loads that succeed stay loaded, so take the module
# out, and remove the load directory.
clean_up_test_module()
{
	unload_if_loaded "$TEST_MODULE"
	[ -z "$LOAD_DIR" ] || rm -rf "$LOAD_DIR"
	LOAD_DIR=
}
