// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_vcpu_create_test: creating N vCPUs writes each one's L1 TSC offset
 * once: exactly one kvm_write_tsc_offset per vCPU, vcpu_id 0..N-1.
 */
#include "tsc_fixture.h"

#define NR_VCPUS 4

TEST_F(tsc, one_offset_event_per_vcpu)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int i, nr, others = 0;

	tsc_create_vm(_metadata, self, NR_VCPUS);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	tsc_expect_offset_events_per_vcpu(_metadata, self, evs, nr, NR_VCPUS, 1, "creation");
	for (i = 0; i < nr; i++)
		others += evs[i].kind == TSC_OFFSET && evs[i].vcpu_id >= NR_VCPUS;
	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONE_EVENT_PER_WRITE, 0, others,
			    "kvm_write_tsc_offset events of vCPU ids beyond %d", NR_VCPUS - 1);
}

TEST_HARNESS_MAIN
