// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_formula_test: the formula end to end. A real guest's rdtsc, taken
 * between two host rdtsc reads, lies within [before + offset, after +
 * offset] for the offset the last kvm_write_tsc_offset of its vCPU
 * reported. The guest runs unscaled (no KVM_SET_TSC_KHZ), so the
 * multiplier is the default.
 */
#include "tsc_fixture.h"

/* 2^40 cycles behind the host: minutes at any TSC rate. */
#define GUEST_OFFSET (-(1ULL << 40))

static void guest_read_tsc(struct __test_metadata *_metadata, struct guest_vcpu *vcpu,
			   struct tsc_sample *s)
{
	int ret = _guest_read_tsc(vcpu, s);

	ASSERT_EQ(0, ret) TH_LOG("vCPU %u: %s (exit reason %u, port %#x, size %u)", vcpu->id,
				 strerror(-ret), vcpu->run->exit_reason, vcpu->run->io.port,
				 vcpu->run->io.size);
}

/* The guest's rdtsc on vCPU 0 against the offset of its latest event. */
static void check_guest_tsc(struct __test_metadata *_metadata, struct _test_data_tsc *self,
			    const char *after)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	const struct tsc_event *ev;
	uint64_t low, high;
	struct tsc_sample s;
	int nr;

	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	ev = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	ASSERT_NE(NULL, ev) TH_LOG("no kvm_write_tsc_offset for vCPU 0 after %s", after);
	guest_read_tsc(_metadata, &self->vm.vcpus[0], &s);
	low = s.host_before + ev->next;
	high = s.host_after + ev->next;
	/* Unsigned differences: the interval may wrap around 2^64. */
	EXPECT_LE(s.guest - low, high - low)
		TH_LOG("guest rdtsc %llu outside [%llu, %llu] = host [%llu, %llu] + offset %lld (%s)",
		       (unsigned long long)s.guest, (unsigned long long)low,
		       (unsigned long long)high, (unsigned long long)s.host_before,
		       (unsigned long long)s.host_after, (long long)ev->next, after);
}

TEST_F(tsc, guest_tsc_after_creation)
{
	tsc_create_vm(_metadata, self, 1);
	check_guest_tsc(_metadata, self, "vCPU creation");
}

TEST_F(tsc, guest_tsc_after_offset_attr)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int ret;

	tsc_create_vm(_metadata, self, 1);
	if (!vcpu_has_tsc_offset_attr(self->vm.vcpus[0].fd))
		SKIP(return, "KVM has no KVM_VCPU_TSC_OFFSET attribute");
	tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	ret = _vcpu_set_tsc_offset(self->vm.vcpus[0].fd, GUEST_OFFSET);
	ASSERT_EQ(0, ret) TH_LOG("KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): %s", strerror(-ret));
	check_guest_tsc(_metadata, self, "KVM_VCPU_TSC_OFFSET");
}

TEST_HARNESS_MAIN
