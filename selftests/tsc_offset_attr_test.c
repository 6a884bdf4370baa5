// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_offset_attr_test: KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET, X) yields
 * a kvm_write_tsc_offset with next = X and previous = the offset before,
 * for a negative X (two's complement) and then a positive one.
 */
#include "tsc_fixture.h"

static const uint64_t offsets[] = { -(1ULL << 40), 1ULL << 36 };

/* Every offset is checked, even after another one failed. */
static void set_and_check(struct __test_metadata *_metadata, struct _test_data_tsc *self,
			  uint64_t prev, uint64_t offset)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	const struct tsc_event *ev;
	int ret, nr;

	ret = __vcpu_set_tsc_offset(self->vcpus[0], offset);
	EXPECT_EQ(0, ret) TH_LOG("KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET = %lld): %s",
				 (long long)offset, strerror(errno));
	if (ret)
		return;
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONE_EVENT_PER_WRITE, 1,
			    tsc_count_events(evs, nr, TSC_OFFSET, 0),
			    "kvm_write_tsc_offset events of KVM_VCPU_TSC_OFFSET = %lld",
			    (long long)offset);
	ev = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	if (!ev)
		return;
	TSC_EXPECT_EVENT_EQ(TSC_RULE_NEXT, offset, ev->next,
			    "next_tsc_offset against the KVM_VCPU_TSC_OFFSET written");
	TSC_EXPECT_EVENT_EQ(TSC_RULE_PREVIOUS, prev, ev->prev,
			    "previous_tsc_offset, writing %lld, against the offset before",
			    (long long)offset);
}

TEST_F(tsc, offset_attr_writes_offset)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	const struct tsc_event *ev;
	unsigned int i;
	uint64_t prev;
	int nr;

	nr = tsc_create_vm_with_offset_attr(_metadata, self, evs);
	if (nr < 0)
		return;
	ev = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, ev, "kvm_write_tsc_offset at vCPU creation");

	prev = ev->next;
	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		set_and_check(_metadata, self, prev, offsets[i]);
		prev = offsets[i];
	}
}

TEST_HARNESS_MAIN
