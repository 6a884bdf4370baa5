// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_set_msr_test: KVM_SET_MSRS(IA32_TSC) on a vCPU yields one
 * kvm_write_tsc_offset whose previous offset is that vCPU's last next
 * offset, and whose next offset is what KVM_GET_DEVICE_ATTR(
 * KVM_VCPU_TSC_OFFSET) then returns.
 */
#include "tsc_fixture.h"

#define NR_VCPUS 2

/* More than a second of cycles apart, so KVM does not synchronize them. */
static const uint64_t tsc_values[NR_VCPUS] = { 1000000000000ULL, 5000000000000ULL };

/* Every vCPU is checked, even after another one failed. */
static void check_vcpu(struct __test_metadata *_metadata, struct kvm_vcpu *vcpu,
		       uint64_t last_next, const struct tsc_event *evs, int nr)
{
	unsigned int id = vcpu->id;
	const struct tsc_event *ev = tsc_last_event(evs, nr, TSC_OFFSET, vcpu->id);
	uint64_t offset;
	int ret;

	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONE_EVENT_PER_WRITE, 1,
			    tsc_count_events(evs, nr, TSC_OFFSET, id),
			    "vCPU %u: kvm_write_tsc_offset events of KVM_SET_MSRS(IA32_TSC)", id);
	if (!ev)
		return;
	ret = __vcpu_device_attr_get(vcpu, KVM_VCPU_TSC_CTRL, KVM_VCPU_TSC_OFFSET, &offset);
	EXPECT_EQ(0, ret) TH_LOG("vCPU %u: KVM_GET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): %s", id,
				 strerror(errno));
	TSC_EXPECT_EVENT_EQ(TSC_RULE_PREVIOUS, last_next, ev->prev,
			    "vCPU %u: previous_tsc_offset against its creation's next", id);
	if (!ret)
		TSC_EXPECT_EVENT_EQ(TSC_RULE_NEXT, offset, ev->next,
				    "vCPU %u: next_tsc_offset against KVM_VCPU_TSC_OFFSET", id);
}

TEST_F(tsc, set_msr_writes_offset)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	uint64_t last_next[NR_VCPUS];
	const struct tsc_event *ev;
	int i, nr;

	tsc_create_vm(_metadata, self, NR_VCPUS);
	if (!vcpu_has_tsc_offset_attr(self->vcpus[0]))
		SKIP(return, "KVM has no KVM_VCPU_TSC_OFFSET attribute to compare with");
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	for (i = 0; i < NR_VCPUS; i++) {
		ev = tsc_last_event(evs, nr, TSC_OFFSET, i);
		TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, ev,
				 "kvm_write_tsc_offset at the creation of vCPU %d", i);
		last_next[i] = ev->next;
	}

	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(self->vcpus[i], MSR_IA32_TSC, tsc_values[i]);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	for (i = 0; i < NR_VCPUS; i++)
		check_vcpu(_metadata, self->vcpus[i], last_next[i], evs, nr);
}

TEST_HARNESS_MAIN
