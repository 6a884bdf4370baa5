// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_bad_input_test: KVM_VCPU_TSC_CTRL requests that KVM must refuse are
 * refused with the documented error and write no offset: no event.
 */
#include "tsc_fixture.h"

/* Page 0 is never mapped in this process. */
#define BAD_ADDR	8
#define UNKNOWN_ATTR	0x7f

/* __vcpu_device_attr_set or __vcpu_device_attr_get: they take the same arguments. */
typedef int (*attr_request)(struct kvm_vcpu *vcpu, uint32_t group, uint64_t attr, void *val);

static void check_refused(struct __test_metadata *_metadata, struct _test_data_tsc *self,
			  attr_request request, uint64_t attr, int expected_errno)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int ret, nr;

	if (tsc_create_vm_with_offset_attr(_metadata, self, evs) < 0)
		return;

	ret = request(self->vcpus[0], KVM_VCPU_TSC_CTRL, attr, (void *)BAD_ADDR);
	EXPECT_EQ(-expected_errno, ret ? -errno : 0)
		TH_LOG("expected %s, got %s", strerror(expected_errno),
		       ret ? strerror(errno) : "success");
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	TSC_EXPECT_EVENT_EQ(TSC_RULE_NO_WRITE_NO_EVENT, 0, nr, "TSC events of the refused request");
}

TEST_F(tsc, set_offset_from_bad_pointer)
{
	check_refused(_metadata, self, __vcpu_device_attr_set, KVM_VCPU_TSC_OFFSET, EFAULT);
}

TEST_F(tsc, set_unknown_attribute)
{
	check_refused(_metadata, self, __vcpu_device_attr_set, UNKNOWN_ATTR, ENXIO);
}

TEST_F(tsc, get_offset_to_bad_pointer)
{
	check_refused(_metadata, self, __vcpu_device_attr_get, KVM_VCPU_TSC_OFFSET, EFAULT);
}

TEST_HARNESS_MAIN
