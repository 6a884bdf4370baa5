// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_formula_test: the formula end to end. A real guest's rdtsc, taken
 * between two host rdtsc reads, lies within [before + offset, after +
 * offset] for the offset the last kvm_write_tsc_offset of its vCPU
 * reported. The guest runs unscaled (no KVM_SET_TSC_KHZ), so the
 * multiplier is the default.
 */
#include <stdio.h>
#include <unistd.h>

#include "guest.h"
#include "kvm.h"
#include "tap.h"
#include "trace.h"

/* 2^40 cycles behind the host: minutes at any TSC rate. */
#define GUEST_OFFSET (-(1ULL << 40))

static bool check_sample(const struct tsc_sample *s, uint64_t offset)
{
	uint64_t low = s->host_before + offset, high = s->host_after + offset;

	if (s->guest - low <= high - low)
		return true;
	tap_diag("guest rdtsc %llu outside [%llu, %llu] = host [%llu, %llu] + offset %lld",
		 (unsigned long long)s->guest, (unsigned long long)low,
		 (unsigned long long)high, (unsigned long long)s->host_before,
		 (unsigned long long)s->host_after, (long long)offset);
	return false;
}

static bool run_and_check(struct tracefs_instance *inst, struct guest_vm *vm)
{
	const struct tsc_event *ev;
	struct tsc_event evs[16];
	struct tsc_sample s;
	int nr;

	nr = trace_read_tsc_events(inst, evs, 16);
	ev = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	if (!ev) {
		tap_diag("no kvm_write_tsc_offset for vCPU 0 since the last check");
		return false;
	}
	guest_read_tsc(&vm->vcpus[0], &s);
	return check_sample(&s, ev->next);
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst;
	struct guest_vm vm;
	int ret;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("formula");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	guest_vm_create(&vm, kvm_fd, 1);
	tap_plan(2);

	tap_ok(run_and_check(inst, &vm),
	       "guest rdtsc = host rdtsc + offset of vCPU creation's event");
	if (!vcpu_has_tsc_offset_attr(vm.vcpus[0].fd)) {
		tap_skip("no KVM_VCPU_TSC_OFFSET attribute", "after KVM_VCPU_TSC_OFFSET");
	} else {
		ret = _vcpu_set_tsc_offset(vm.vcpus[0].fd, GUEST_OFFSET);
		if (ret < 0)
			tap_bail_out("KVM_VCPU_TSC_OFFSET: error %d", ret);
		tap_ok(run_and_check(inst, &vm),
		       "guest rdtsc = host rdtsc + offset of the KVM_VCPU_TSC_OFFSET event");
	}

	guest_vm_destroy(&vm);
	trace_instance_remove(inst);
	return tap_finish();
}
