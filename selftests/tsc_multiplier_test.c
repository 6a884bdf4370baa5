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

/*
 * Why the multiplier's event cannot be checked here, or NULL; its module.
 * A test of @scaling, which sets the guest's rate, also needs TSC scaling.
 */
static const char *multiplier_unusable(struct __test_metadata *_metadata, bool scaling,
				       const char **module)
{
	const char *unusable = tsc_event_unusable(_metadata, TSC_MULTIPLIER_EVENT);

	if (unusable)
		return unusable;
	*module = kvm_vendor_module();
	if (!*module)
		return "neither kvm_intel nor kvm_amd is loaded";
	return scaling && !kvm_has_cap(KVM_CAP_TSC_CONTROL) ? TSC_NO_SCALING : NULL;
}

/*
 * The VM of a multiplier test, and in *frac_bits the vendor module's; or
 * false after a skip (see multiplier_unusable()).
 */
static bool multiplier_vm(struct __test_metadata *_metadata, struct _test_data_tsc *self,
			  bool scaling, unsigned int *frac_bits)
{
	const char *module, *unusable = multiplier_unusable(_metadata, scaling, &module);

	if (unusable)
		SKIP(return false, "%s", unusable);
	*frac_bits = vendor_frac_bits(module);
	tsc_create_vm(_metadata, self, 1);
	return true;
}

/* vCPU 0's last multiplier event since the last read, in @evs: what @cause wrote. */
static const struct tsc_event *multiplier_event(struct __test_metadata *_metadata,
						struct _test_data_tsc *self,
						struct tsc_event *evs, const char *cause)
{
	int nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	const struct tsc_event *ev = tsc_last_event(evs, nr, TSC_MULTIPLIER, 0);

	TSC_ASSERT_EVENT(TSC_RULE_ONE_EVENT_PER_WRITE, ev, "%s %s", TSC_MULTIPLIER_EVENT, cause);
	return ev;
}

TEST_F(tsc, multiplier_at_creation)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	const struct tsc_event *ev;
	unsigned int frac_bits;

	if (!multiplier_vm(_metadata, self, false, &frac_bits))
		return;
	ev = multiplier_event(_metadata, self, evs, "at vCPU creation");
	TSC_EXPECT_EVENT_EQ(TSC_RULE_FRAC_BITS, frac_bits, ev->frac_bits, "frac_bits with %s",
			    kvm_vendor_module());
	TSC_EXPECT_EVENT_EQ(TSC_RULE_MULTIPLIER_AT_CREATION, 0ULL, ev->prev,
			    "previous_tsc_multiplier at vCPU creation");
	TSC_EXPECT_EVENT_EQ(TSC_RULE_MULTIPLIER_AT_CREATION, 1ULL << frac_bits, ev->next,
			    "next_tsc_multiplier at vCPU creation");
}

TEST_F(tsc, set_tsc_khz_writes_ratio)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int host_khz, guest_khz;
	const struct tsc_event *ev;
	unsigned int frac_bits;
	uint64_t expected;

	if (!multiplier_vm(_metadata, self, true, &frac_bits))
		return;
	tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	guest_khz = tsc_set_half_khz(_metadata, self->vcpus[0], &host_khz);

	expected = ((__uint128_t)1 << frac_bits) * guest_khz / host_khz;
	ev = multiplier_event(_metadata, self, evs, "after KVM_SET_TSC_KHZ");
	TSC_EXPECT_EVENT_EQ(TSC_RULE_PREVIOUS, 1ULL << frac_bits, ev->prev,
			    "previous_tsc_multiplier against the default of vCPU creation");
	TSC_EXPECT_EVENT_EQ(TSC_RULE_TSC_KHZ_RATIO, expected, ev->next,
			    "next_tsc_multiplier for %d kHz on a %d kHz host", guest_khz, host_khz);
}

TEST_HARNESS_MAIN
