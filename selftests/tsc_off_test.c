// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_off_test: off means off. With kvm_write_tsc_offset disabled in the
 * instance, TSC writes record nothing; and an instance can be removed while
 * a VM that wrote events into it still lives, with KVM carrying on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define TSC_VALUE 1000000000000ULL

static void test_disabled(int kvm_fd)
{
	struct tracefs_instance *inst = trace_instance_create("off");
	int vm_fd, vcpu_fd;
	bool ok;

	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	if (tracefs_event_disable(inst, "kvm", TSC_OFFSET_EVENT) < 0)
		tap_bail_out("cannot disable kvm:%s: %s", TSC_OFFSET_EVENT, strerror(errno));
	vm_fd = vm_create(kvm_fd);
	vcpu_fd = vcpu_create(vm_fd, 0);
	vcpu_set_msr(vcpu_fd, MSR_IA32_TSC, TSC_VALUE);
	ok = tap_check_u64(0, trace_count_tsc_events(inst), "events with the event disabled");
	tap_ok(ok, "a disabled kvm_write_tsc_offset records nothing on vCPU creation and IA32_TSC");
	close(vcpu_fd);
	close(vm_fd);
	trace_instance_remove(inst);
}

static void test_remove_with_live_vm(int kvm_fd)
{
	struct tracefs_instance *inst = trace_instance_create("remove");
	char *dir = tracefs_instance_get_dir(inst);
	int vm_fd, vcpu_fd, ret;
	bool ok = true;

	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	vm_fd = vm_create(kvm_fd);
	vcpu_fd = vcpu_create(vm_fd, 0);
	trace_instance_remove(inst);
	if (!access(dir, F_OK) || errno != ENOENT) {
		tap_diag("%s still exists after removal", dir);
		ok = false;
	}
	ret = _vcpu_set_msr(vcpu_fd, MSR_IA32_TSC, TSC_VALUE);
	if (ret < 0) {
		tap_diag("KVM_SET_MSRS after the removal: %s", strerror(-ret));
		ok = false;
	}
	tap_ok(ok, "an instance is removed while its VM lives, and KVM carries on");
	tracefs_put_tracing_file(dir);
	close(vcpu_fd);
	close(vm_fd);
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	tap_plan(2);
	test_disabled(kvm_fd);
	test_remove_with_live_vm(kvm_fd);
	close(kvm_fd);
	return tap_finish();
}
