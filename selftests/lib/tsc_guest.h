/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc_guest.h: the guest of the tests that read a guest's TSC (it loops on
 * rdtsc and reports each value to the host with GUEST_SYNC), and the vCPU
 * TSC offset attribute they set.
 */
#ifndef KTT_TSC_GUEST_H
#define KTT_TSC_GUEST_H

#include <stdint.h>

#include "kvm_util.h"

/* One guest rdtsc, with host TSC reads taken just before and just after. */
struct tsc_sample {
	uint64_t host_before;
	uint64_t guest;
	uint64_t host_after;
};

static inline bool vcpu_has_tsc_offset_attr(struct kvm_vcpu *vcpu)
{
	return !__vcpu_has_device_attr(vcpu, KVM_VCPU_TSC_CTRL, KVM_VCPU_TSC_OFFSET);
}

/* KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET): the ioctl's result, errno. */
static inline int __vcpu_set_tsc_offset(struct kvm_vcpu *vcpu, uint64_t offset)
{
	return __vcpu_device_attr_set(vcpu, KVM_VCPU_TSC_CTRL, KVM_VCPU_TSC_OFFSET, &offset);
}

void tsc_guest_code(void);
void tsc_guest_read(struct kvm_vcpu *vcpu, struct tsc_sample *sample);

#endif
