// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_set_msr_test: KVM_SET_MSRS(IA32_TSC) on a vCPU yields one
 * kvm_write_tsc_offset whose previous offset is that vCPU's last next
 * offset, and whose next offset is what KVM_GET_DEVICE_ATTR(
 * KVM_VCPU_TSC_OFFSET) then returns.
 */
#include <string.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define NR_VCPUS 2

/* More than a second of cycles apart, so KVM does not synchronize them. */
static const uint64_t tsc_values[NR_VCPUS] = { 1000000000000ULL, 5000000000000ULL };

static bool check_vcpu(int vcpu_fd, int id, uint64_t last_next,
		       const struct tsc_event *evs, int nr)
{
	const struct tsc_event *ev = tsc_last_event(evs, nr, TSC_OFFSET, id);
	uint64_t offset;
	int ret;
	bool ok;

	ok = tap_check_u64(1, tsc_count_events(evs, nr, TSC_OFFSET, id),
			   "vCPU %d: kvm_write_tsc_offset events", id);
	if (!ev)
		return false;
	ret = _vcpu_get_tsc_offset(vcpu_fd, &offset);
	if (ret < 0) {
		tap_diag("vCPU %d: KVM_GET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): %s", id, strerror(-ret));
		return false;
	}
	ok &= tap_check_u64(last_next, ev->prev, "vCPU %d: previous offset", id);
	ok &= tap_check_u64(offset, ev->next, "vCPU %d: next offset against KVM_VCPU_TSC_OFFSET", id);
	return ok;
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	uint64_t last_next[NR_VCPUS];
	struct tracefs_instance *inst;
	const struct tsc_event *ev;
	int vcpu_fds[NR_VCPUS];
	struct tsc_event evs[64];
	int vm_fd, i, nr;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("set-msr");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	if (!vcpu_has_tsc_offset_attr(vcpu_fds[0]))
		tap_skip_all("KVM has no KVM_VCPU_TSC_OFFSET attribute to compare with");
	tap_plan(NR_VCPUS);

	nr = trace_read_tsc_events(inst, evs, 64);
	for (i = 0; i < NR_VCPUS; i++) {
		ev = tsc_last_event(evs, nr, TSC_OFFSET, i);
		if (!ev)
			tap_bail_out("no kvm_write_tsc_offset at the creation of vCPU %d", i);
		last_next[i] = ev->next;
	}
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, tsc_values[i]);
	nr = trace_read_tsc_events(inst, evs, 64);
	for (i = 0; i < NR_VCPUS; i++)
		tap_ok(check_vcpu(vcpu_fds[i], i, last_next[i], evs, nr),
		       "vCPU %d: KVM_SET_MSRS(IA32_TSC = %llu): previous = last next, next = KVM_VCPU_TSC_OFFSET",
		       i, (unsigned long long)tsc_values[i]);

	for (i = 0; i < NR_VCPUS; i++)
		close(vcpu_fds[i]);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
