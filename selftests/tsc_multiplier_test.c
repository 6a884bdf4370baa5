// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_multiplier_test: kvm_write_tsc_multiplier at vCPU creation goes from
 * 0 to the default ratio 1 << frac_bits (48 fractional bits with kvm_intel,
 * 32 with kvm_amd); with TSC scaling, KVM_SET_TSC_KHZ writes the ratio
 * (1 << frac_bits) * guest kHz / host kHz that KVM computes.
 */
#include "tsc_fixture.h"

static unsigned int vendor_frac_bits(const char *module)
{
	return strcmp(module, "kvm_intel") ? 32 : 48;
}

/* Why the multiplier's event cannot be checked here, or NULL; its module. */
static const char *multiplier_unusable(struct __test_metadata *_metadata,
				       const char **module)
{
	const char *unusable = tsc_event_unusable(_metadata, TSC_MULTIPLIER_EVENT);

	if (unusable)
		return unusable;
	*module = kvm_vendor_module();
	return *module ? NULL : "neither kvm_intel nor kvm_amd is loaded";
}

TEST_F(tsc, multiplier_at_creation)
{
	const char *module, *unusable = multiplier_unusable(_metadata, &module);
	struct tsc_event evs[TSC_MAX_EVENTS];
	const struct tsc_event *ev;
	unsigned int frac_bits;
	int nr;

	if (unusable)
		SKIP(return, "%s", unusable);
	frac_bits = vendor_frac_bits(module);

	tsc_create_vm(_metadata, self, 1);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	ev = tsc_last_event(evs, nr, TSC_MULTIPLIER, 0);
	ASSERT_NE(NULL, ev) TH_LOG("no kvm_write_tsc_multiplier at vCPU creation");
	EXPECT_EQ(frac_bits, ev->frac_bits) TH_LOG("frac_bits with %s", module);
	EXPECT_EQ(0ULL, ev->prev) TH_LOG("previous multiplier");
	EXPECT_EQ(1ULL << frac_bits, ev->next) TH_LOG("next multiplier");
}

TEST_F(tsc, set_tsc_khz_writes_ratio)
{
	const char *module, *unusable = multiplier_unusable(_metadata, &module);
	struct tsc_event evs[TSC_MAX_EVENTS];
	int host_khz, guest_khz, nr;
	const struct tsc_event *ev;
	unsigned int frac_bits;
	uint64_t expected;

	if (unusable)
		SKIP(return, "%s", unusable);
	if (!kvm_has_cap(KVM_CAP_TSC_CONTROL))
		SKIP(return, "%s", TSC_NO_SCALING);
	frac_bits = vendor_frac_bits(module);

	tsc_create_vm(_metadata, self, 1);
	tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	guest_khz = tsc_set_half_khz(_metadata, self->vcpus[0], &host_khz);

	expected = ((__uint128_t)1 << frac_bits) * guest_khz / host_khz;
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	ev = tsc_last_event(evs, nr, TSC_MULTIPLIER, 0);
	ASSERT_NE(NULL, ev) TH_LOG("no kvm_write_tsc_multiplier after KVM_SET_TSC_KHZ");
	EXPECT_EQ(1ULL << frac_bits, ev->prev) TH_LOG("previous multiplier");
	EXPECT_EQ(expected, ev->next)
		TH_LOG("multiplier for %d kHz on a %d kHz host", guest_khz, host_khz);
}

TEST_HARNESS_MAIN
