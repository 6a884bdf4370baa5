// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_offset_attr_test: KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET, X) yields
 * a kvm_write_tsc_offset with next = X and previous = the offset before,
 * for a negative X (two's complement) and then a positive one.
 */
#include <string.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

static const uint64_t offsets[] = { -(1ULL << 40), 1ULL << 36 };

static bool set_and_check(struct tracefs_instance *inst, int vcpu_fd, uint64_t prev,
			  uint64_t offset)
{
	const struct tsc_event *ev;
	struct tsc_event evs[16];
	int ret, nr;
	bool ok;

	ret = _vcpu_set_tsc_offset(vcpu_fd, offset);
	if (ret < 0) {
		tap_diag("KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): %s", strerror(-ret));
		return false;
	}
	nr = trace_read_tsc_events(inst, evs, 16);
	ok = tap_check_u64(1, nr, "kvm_write_tsc_offset events");
	ev = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	if (!ev)
		return false;
	ok &= tap_check_u64(offset, ev->next, "next offset");
	ok &= tap_check_u64(prev, ev->prev, "previous offset");
	return ok;
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst;
	struct tsc_event evs[16];
	uint64_t prev;
	int vm_fd, vcpu_fd, nr;
	unsigned int i;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("offset-attr");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	vm_fd = vm_create(kvm_fd);
	vcpu_fd = vcpu_create(vm_fd, 0);
	if (!vcpu_has_tsc_offset_attr(vcpu_fd))
		tap_skip_all("KVM has no KVM_VCPU_TSC_OFFSET attribute");
	tap_plan(2);

	nr = trace_read_tsc_events(inst, evs, 16);
	if (!nr)
		tap_bail_out("no kvm_write_tsc_offset at vCPU creation");
	prev = evs[nr - 1].next;
	for (i = 0; i < 2; i++) {
		tap_ok(set_and_check(inst, vcpu_fd, prev, offsets[i]),
		       "KVM_VCPU_TSC_OFFSET = %lld: next is it, previous the offset before",
		       (long long)offsets[i]);
		prev = offsets[i];
	}

	close(vcpu_fd);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
