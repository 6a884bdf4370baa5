// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_vcpu_create_test: creating N vCPUs writes each one's L1 TSC offset
 * once: exactly one kvm_write_tsc_offset per vCPU, vcpu_id 0..N-1.
 */
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define NR_VCPUS 4

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	int counts[NR_VCPUS] = { 0 }, vcpu_fds[NR_VCPUS];
	struct tracefs_instance *inst;
	struct tsc_event evs[64];
	int vm_fd, i, nr, others = 0;
	bool ok = true;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("vcpu-create");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	tap_plan(1);

	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	nr = trace_read_tsc_events(inst, evs, 64);
	for (i = 0; i < nr; i++) {
		if (evs[i].vcpu_id < NR_VCPUS)
			counts[evs[i].vcpu_id]++;
		else
			others++;
	}
	for (i = 0; i < NR_VCPUS; i++)
		ok &= tap_check_u64(1, counts[i], "kvm_write_tsc_offset events of vCPU %d", i);
	ok &= tap_check_u64(0, others, "events of vCPU ids beyond %d", NR_VCPUS - 1);
	tap_ok(ok, "one kvm_write_tsc_offset per created vCPU, vcpu_id 0..%d", NR_VCPUS - 1);

	for (i = 0; i < NR_VCPUS; i++)
		close(vcpu_fds[i]);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
