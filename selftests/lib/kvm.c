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
