// SPDX-License-Identifier: GPL-2.0
/*
 * kvm.c: open /dev/kvm, create VMs and vCPUs, and set their TSC through
 * raw ioctls.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "kvm.h"

int _kvm_open(void)
{
	int fd = open(KVM_DEV_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int _vm_create(int kvm_fd)
{
	int fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);

	return fd < 0 ? -errno : fd;
}

int _vcpu_create(int vm_fd, unsigned int vcpu_id)
{
	int fd = ioctl(vm_fd, KVM_CREATE_VCPU, vcpu_id);

	return fd < 0 ? -errno : fd;
}

int _vcpu_set_msr(int vcpu_fd, uint32_t index, uint64_t value)
{
	struct {
		struct kvm_msrs header;
		struct kvm_msr_entry entry;
	} msrs = {
		.header.nmsrs = 1,
		.entry = { .index = index, .data = value },
	};
	int ret = ioctl(vcpu_fd, KVM_SET_MSRS, &msrs);

	/* KVM_SET_MSRS returns how many MSRs it set. */
	if (ret < 0)
		return -errno;
	return ret == 1 ? 0 : -EINVAL;
}

/* KVM_{HAS,GET,SET}_DEVICE_ATTR in group KVM_VCPU_TSC_CTRL, unchecked. */
int _vcpu_tsc_ctrl_attr(int vcpu_fd, unsigned long request, uint64_t attr, uint64_t addr)
{
	struct kvm_device_attr da = {
		.group = KVM_VCPU_TSC_CTRL,
		.attr = attr,
		.addr = addr,
	};

	return ioctl(vcpu_fd, request, &da) < 0 ? -errno : 0;
}

bool vcpu_has_tsc_offset_attr(int vcpu_fd)
{
	return !_vcpu_tsc_ctrl_attr(vcpu_fd, KVM_HAS_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, 0);
}

int _vcpu_set_tsc_offset(int vcpu_fd, uint64_t offset)
{
	return _vcpu_tsc_ctrl_attr(vcpu_fd, KVM_SET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET,
				   (uintptr_t)&offset);
}

int _vcpu_get_tsc_offset(int vcpu_fd, uint64_t *offset)
{
	return _vcpu_tsc_ctrl_attr(vcpu_fd, KVM_GET_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET,
				   (uintptr_t)offset);
}

/* "kvm_intel" or "kvm_amd", whichever is loaded (or built in), else NULL. */
const char *kvm_vendor_module(void)
{
	if (!access("/sys/module/kvm_intel", F_OK))
		return "kvm_intel";
	if (!access("/sys/module/kvm_amd", F_OK))
		return "kvm_amd";
	return NULL;
}
