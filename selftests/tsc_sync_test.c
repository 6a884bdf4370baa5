// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_sync_test: writing one TSC value to every vCPU within a second makes
 * KVM synchronize them: the events give all vCPUs one common offset.
 */
#include "tsc_fixture.h"

#define NR_VCPUS	3
#define TSC_VALUE	123456789012345ULL

TEST_F(tsc, same_tsc_gives_common_offset)
{
	const struct tsc_event *ev, *first = NULL;
	struct tsc_event evs[TSC_MAX_EVENTS];
	int i, nr;

	tsc_create_vm(_metadata, self, NR_VCPUS);
	tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(self->vcpus[i], MSR_IA32_TSC, TSC_VALUE);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);

	for (i = 0; i < NR_VCPUS; i++) {
		ev = tsc_last_event(evs, nr, TSC_OFFSET, i);
		EXPECT_NE(NULL, ev) TSC_LOG_RULE(TSC_RULE_ONE_EVENT_PER_WRITE,
						 "no kvm_write_tsc_offset for vCPU %d", i);
		if (!ev)
			continue;
		if (!first)
			first = ev;
		TSC_EXPECT_EVENT_EQ(TSC_RULE_SYNC, first->next, ev->next,
				    "vCPU %d: next_tsc_offset against vCPU %u's", i,
				    first->vcpu_id);
	}
}

TEST_HARNESS_MAIN
