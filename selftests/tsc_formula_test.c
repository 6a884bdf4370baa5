// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_formula_test: the formula end to end. A real guest's rdtsc, taken
 * between two host rdtsc reads, lies within [scale(before) + offset,
 * scale(after) + offset], where scale(t) = (t * multiplier) >> frac_bits,
 * for the offset and the multiplier the last events of its vCPU reported:
 * unscaled (the default multiplier, scale(t) = t), and with TSC scaling
 * after KVM_SET_TSC_KHZ to half the host's rate.
 */
#include <unistd.h>

#include "tsc_fixture.h"

/* 2^40 cycles behind the host: minutes at any TSC rate. */
#define GUEST_OFFSET (-(1ULL << 40))

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
	TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, ev,
			 "kvm_write_tsc_offset for vCPU 0 after %s", after);
	tsc_guest_read(self->vcpus[0], &s);
	low = s.host_before + ev->next;
	high = s.host_after + ev->next;
	/* Unsigned differences: the interval may wrap around 2^64. */
	EXPECT_LE(s.guest - low, high - low)
		TSC_LOG_RULE(TSC_RULE_FORMULA,
			     "guest rdtsc %llu outside [%llu, %llu] = host [%llu, %llu] + offset %lld (%s)",
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
	int ret;

	if (tsc_create_vm_with_offset_attr(_metadata, self, NULL) < 0)
		return;
	ret = __vcpu_set_tsc_offset(self->vcpus[0], GUEST_OFFSET);
	ASSERT_EQ(0, ret) TH_LOG("KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): %s", strerror(errno));
	check_guest_tsc(_metadata, self, "KVM_VCPU_TSC_OFFSET");
}

static uint64_t scale(uint64_t tsc, uint64_t multiplier, unsigned int frac_bits)
{
	return ((__uint128_t)tsc * multiplier) >> frac_bits;
}

/*
 * The guest's rdtsc on vCPU 0, in @s, against the offset and the
 * multiplier (in @mult) of the vCPU's latest events since @evs was last
 * filled, which must include both.
 */
static void check_scaled_guest_tsc(struct __test_metadata *_metadata,
				   struct _test_data_tsc *self, struct tsc_event *evs,
				   struct tsc_event *mult, struct tsc_sample *s)
{
	const struct tsc_event *off, *last_mult;
	uint64_t low, high;
	int nr;

	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	off = tsc_last_event(evs, nr, TSC_OFFSET, 0);
	last_mult = tsc_last_event(evs, nr, TSC_MULTIPLIER, 0);
	TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, off, "%s for vCPU 0", TSC_OFFSET_EVENT);
	TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, last_mult, "%s for vCPU 0",
			 TSC_MULTIPLIER_EVENT);
	*mult = *last_mult;
	tsc_guest_read(self->vcpus[0], s);
	low = scale(s->host_before, mult->next, mult->frac_bits) + off->next;
	high = scale(s->host_after, mult->next, mult->frac_bits) + off->next;
	EXPECT_LE(s->guest - low, high - low)
		TSC_LOG_RULE(TSC_RULE_FORMULA,
			     "guest rdtsc %llu outside [%llu, %llu] = scale(host [%llu, %llu]) + offset %lld, multiplier %llu >> %u",
			     (unsigned long long)s->guest, (unsigned long long)low,
			     (unsigned long long)high, (unsigned long long)s->host_before,
			     (unsigned long long)s->host_after, (long long)off->next,
			     (unsigned long long)mult->next, mult->frac_bits);
}

/*
 * At half the host's rate: the formula holds with the multiplier KVM
 * wrote, and over 10 ms of host time the guest's TSC advances by that
 * ratio, within what the host reads around each guest read allow.
 */
TEST_F(tsc, scaled_guest_tsc)
{
	const char *unusable = tsc_event_unusable(_metadata, TSC_MULTIPLIER_EVENT);
	struct tsc_event evs[TSC_MAX_EVENTS], mult;
	struct tsc_sample first, second;
	uint64_t delta, low, high;
	int host_khz, guest_khz;

	if (unusable)
		SKIP(return, "%s", unusable);
	if (!kvm_has_cap(KVM_CAP_TSC_CONTROL))
		SKIP(return, "%s", TSC_NO_SCALING);
	tsc_create_vm(_metadata, self, 1);
	guest_khz = tsc_set_half_khz(_metadata, self->vcpus[0], &host_khz);

	/* vCPU creation's events and KVM_SET_TSC_KHZ's, all in @evs. */
	check_scaled_guest_tsc(_metadata, self, evs, &mult, &first);
	ASSERT_NE(1ULL << mult.frac_bits, mult.next)
		TSC_LOG_RULE(TSC_RULE_TSC_KHZ_RATIO,
			     "KVM_SET_TSC_KHZ(%d) left the default multiplier", guest_khz);
	usleep(10000);
	/* Nothing since: the same offset and multiplier must still hold. */
	tsc_guest_read(self->vcpus[0], &second);

	delta = second.guest - first.guest;
	low = scale(second.host_before - first.host_after, mult.next, mult.frac_bits);
	high = scale(second.host_after - first.host_before, mult.next, mult.frac_bits) + 1;
	EXPECT_LE(low, delta)
		TSC_LOG_RULE(TSC_RULE_FORMULA,
			     "guest advanced %llu for host %llu..%llu at %d/%d kHz",
			     (unsigned long long)delta,
			     (unsigned long long)(second.host_before - first.host_after),
			     (unsigned long long)(second.host_after - first.host_before),
			     guest_khz, host_khz);
	EXPECT_GE(high, delta)
		TSC_LOG_RULE(TSC_RULE_FORMULA, "guest advanced %llu, more than %llu at %d/%d kHz",
			     (unsigned long long)delta, (unsigned long long)high, guest_khz,
			     host_khz);
}

TEST_HARNESS_MAIN
