#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# tsc_failure_test.sh: test_kvm_tsc's failure paths: a wrong expectation, a guest that never halts and no KVM each fail the load with a clear line and leave nothing behind, so that KVM unloads.

# shellcheck source-path=SCRIPTDIR source=test_module_lib.sh
. "$(dirname "$0")/test_module_lib.sh"

load_fails()
{
	if load_test_module "" "$@"; then
		ktap_print_msg "the load with $* succeeded"
		return 1
	fi
	print_module_ktap
	! is_loaded "$TEST_MODULE"
}

# The module's own cleanup complained about nothing.
cleanup_clean()
{
	! module_ktap | grep -q '^# vm_munmap'
}

wrong_expectation_fails()
{
	local ktap

	load_fails fail_step=tsc_msr || return 1
	ktap=$(module_ktap)
	[ "$(echo "$ktap" | grep -c '^not ok ')" = 1 ] &&
		echo "$ktap" | grep -q '^not ok [0-9]* vcpu 0: KVM_SET_MSRS(IA32_TSC)' &&
		echo "$ktap" | grep -q '^# expected: kvm_write_tsc_offset: vcpu=0 ' &&
		echo "$ktap" | grep -q '^# event: kvm_write_tsc_offset: vcpu=0 ' &&
		cleanup_clean
}

endless_guest_fails()
{
	local ktap nr_vcpus=2

	load_fails guest_no_hlt=1 nr_vcpus=$nr_vcpus || return 1
	ktap=$(module_ktap)
	[ "$(echo "$ktap" | grep -c '^not ok ')" = $nr_vcpus ] &&
		[ "$(echo "$ktap" | grep -c '^not ok [0-9]* vcpu [0-9]: the guest')" = $nr_vcpus ] &&
		echo "$ktap" | grep -q '^# the guest did not reach HLT within [0-9]* exits' &&
		cleanup_clean
}

no_kvm_skips()
{
	load_fails || return 1
	grep -q 'No such device' "$LOAD_DIR/insmod" &&
		module_skip_reason | grep -q 'cannot open /dev/kvm'
}

start_test
require_test_module
require_kvm_vendor
ktap_set_plan 5
# Leave the test module unloaded and KVM loaded, as the test found them:
# the vendor module (kvm_amd or kvm_intel) reloaded with nested=1.
clean_up_on_exit "clean_up_test_module; reload_kvm_if_gone"
make_load_dir
ktap_test_result "fail_step=tsc_msr fails the load on that step alone, with expected and seen values" \
	wrong_expectation_fails
ktap_test_result "guest_no_hlt=1 fails the load: each guest step says it saw no HLT" \
	endless_guest_fails
ktap_test_result "$VENDOR and kvm unload after the failed loads: no VM or file left" unload_kvm
ktap_test_result "without KVM the load fails with ENODEV and a SKIP line saying why" no_kvm_skips
ktap_test_result "$VENDOR reloads with nested=1" load_kvm
ktap_finished
