// SPDX-License-Identifier: GPL-2.0
/*
 * kvm.c: open /dev/kvm, create VMs and vCPUs for the selftests.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "kvm.h"
#include "tap.h"

/* A host without usable KVM is a skip of the whole program, never a pass. */
int kvm_open_or_skip(void)
{
	int fd = open(KVM_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tap_skip_all("cannot open %s: %s", KVM_DEV_PATH, strerror(errno));
	return fd;
}

int _vm_create(int kvm_fd)
{
	int fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);

	return fd < 0 ? -errno : fd;
}

int vm_create(int kvm_fd)
{
	int fd = _vm_create(kvm_fd);

	if (fd < 0)
		tap_bail_out("KVM_CREATE_VM failed: %s", strerror(-fd));
	return fd;
}

int _vcpu_create(int vm_fd, unsigned int vcpu_id)
{
	int fd = ioctl(vm_fd, KVM_CREATE_VCPU, vcpu_id);

	return fd < 0 ? -errno : fd;
}

int vcpu_create(int vm_fd, unsigned int vcpu_id)
{
	int fd = _vcpu_create(vm_fd, vcpu_id);

	if (fd < 0)
		tap_bail_out("KVM_CREATE_VCPU(%u) failed: %s", vcpu_id, strerror(-fd));
	return fd;
}

void vm_create_vcpus(int vm_fd, int nr_vcpus, int *vcpu_fds)
{
	int i;

	for (i = 0; i < nr_vcpus; i++)
		vcpu_fds[i] = vcpu_create(vm_fd, i);
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

void vcpu_set_msr(int vcpu_fd, uint32_t index, uint64_t value)
{
	int ret = _vcpu_set_msr(vcpu_fd, index, value);

	if (ret < 0)
		tap_bail_out("KVM_SET_MSRS(%#x, %#llx): %s", index,
			     (unsigned long long)value, strerror(-ret));
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
	return _vcpu_tsc_ctrl_attr(vcpu_fd, KVM_HAS_DEVICE_ATTR, KVM_VCPU_TSC_OFFSET, 0) == 0;
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
