// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_bad_input_test: KVM_VCPU_TSC_OFFSET requests that KVM must refuse
 * are refused with the documented error and write no offset: no event.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

/* Page 0 is never mapped in this process. */
#define BAD_ADDR		8
#define UNKNOWN_ATTR		0x7f

static void check_refused(struct tracefs_instance *inst, int vcpu_fd, unsigned long request,
			  uint64_t attr, uint64_t addr, int expected, const char *what)
{
	int ret = _vcpu_tsc_ctrl_attr(vcpu_fd, request, attr, addr);
	bool ok;

	ok = tap_check_u64(expected, -ret, "%s: errno", what);
	ok &= tap_check_u64(0, trace_count_tsc_events(inst), "%s: kvm_write_tsc_offset events",
			    what);
	tap_ok(ok, "%s: %s, no event", what, strerror(expected));
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst;
	int vm_fd, vcpu_fd;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("bad-input");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	vm_fd = vm_create(kvm_fd);
	vcpu_fd = vcpu_create(vm_fd, 0);
	if (!vcpu_has_tsc_offset_attr(vcpu_fd))
		tap_skip_all("KVM has no KVM_VCPU_TSC_OFFSET attribute");
	tap_plan(3);
	trace_count_tsc_events(inst);

	check_refused(inst, vcpu_fd, KVM_SET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, BAD_ADDR, EFAULT,
		      "KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET) from an invalid pointer");
	check_refused(inst, vcpu_fd, KVM_SET_DEVICE_ATTR, UNKNOWN_ATTR, BAD_ADDR, ENXIO,
		      "KVM_SET_DEVICE_ATTR of an unknown KVM_VCPU_TSC_CTRL attribute");
	check_refused(inst, vcpu_fd, KVM_GET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, BAD_ADDR, EFAULT,
		      "KVM_GET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET) to an invalid pointer");

	close(vcpu_fd);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
