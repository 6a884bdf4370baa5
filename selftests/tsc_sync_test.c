// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_sync_test: writing one TSC value to every vCPU within a second makes
 * KVM synchronize them: the events give all vCPUs one common offset.
 */
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define NR_VCPUS	3
#define TSC_VALUE	123456789012345ULL

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst;
	const struct tsc_event *ev, *first = NULL;
	int vcpu_fds[NR_VCPUS];
	struct tsc_event evs[64];
	int vm_fd, i, nr;
	bool ok = true;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("sync");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	tap_plan(1);

	trace_count_tsc_events(inst);
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, TSC_VALUE);
	nr = trace_read_tsc_events(inst, evs, 64);
	for (i = 0; i < NR_VCPUS; i++) {
		ev = tsc_last_event(evs, nr, TSC_OFFSET, i);
		if (!ev) {
			tap_diag("no kvm_write_tsc_offset for vCPU %d", i);
			ok = false;
			continue;
		}
		if (!first)
			first = ev;
		ok &= tap_check_u64(first->next, ev->next, "vCPU %d: next offset against vCPU %u's",
				    i, first->vcpu_id);
	}
	tap_ok(ok, "the same IA32_TSC written to %d vCPUs yields one common offset", NR_VCPUS);

	for (i = 0; i < NR_VCPUS; i++)
		close(vcpu_fds[i]);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
