// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_bad_input_test: KVM_VCPU_TSC_CTRL requests that KVM must refuse are
 * refused with the documented error and write no offset: no event.
 */
#include "tsc_fixture.h"

/* Page 0 is never mapped in this process. */
#define BAD_ADDR	8
#define UNKNOWN_ATTR	0x7f

static void check_refused(struct __test_metadata *_metadata, struct _test_data_tsc *self,
			  unsigned long request, uint64_t attr, int expected_errno)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int vcpu_fd, ret;

	tsc_create_vm(_metadata, self, 1);
	vcpu_fd = self->vm.vcpus[0].fd;
	if (!vcpu_has_tsc_offset_attr(vcpu_fd))
		SKIP(return, "KVM has no KVM_VCPU_TSC_OFFSET attribute");
	tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);

	ret = _vcpu_tsc_ctrl_attr(vcpu_fd, request, attr, BAD_ADDR);
	EXPECT_EQ(-expected_errno, ret) TH_LOG("expected %s, got %s", strerror(expected_errno),
					       ret ? strerror(-ret) : "success");
	EXPECT_EQ(0, tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS))
		TH_LOG("TSC events of the refused request");
}

TEST_F(tsc, set_offset_from_bad_pointer)
{
	check_refused(_metadata, self, KVM_SET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, EFAULT);
}

TEST_F(tsc, set_unknown_attribute)
{
	check_refused(_metadata, self, KVM_SET_DEVICE_ATTR, UNKNOWN_ATTR, ENXIO);
}

TEST_F(tsc, get_offset_to_bad_pointer)
{
	check_refused(_metadata, self, KVM_GET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, EFAULT);
}

TEST_HARNESS_MAIN
