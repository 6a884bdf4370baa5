// SPDX-License-Identifier: GPL-2.0
/*
 * vm_create_test: /dev/kvm answers, KVM_CREATE_VM and KVM_CREATE_VCPU work,
 * and a duplicate vCPU id is refused. Every later test builds on this.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "kselftest_harness.h"

#include "kvm.h"

#define NR_VCPUS 4

/* Only /dev/kvm: these checks need neither root nor tracefs. */
FIXTURE(kvm) {
	int kvm_fd;
};

FIXTURE_SETUP(kvm)
{
	self->kvm_fd = _kvm_open();
	if (self->kvm_fd < 0)
		SKIP(return, "cannot open %s: %s", KVM_DEV_PATH, strerror(-self->kvm_fd));
}

FIXTURE_TEARDOWN(kvm)
{
	close(self->kvm_fd);
}

static int vm_create(struct __test_metadata *_metadata, int kvm_fd)
{
	int vm_fd = _vm_create(kvm_fd);

	ASSERT_LE(0, vm_fd) TH_LOG("KVM_CREATE_VM: %s", strerror(-vm_fd));
	return vm_fd;
}

TEST_F(kvm, api_version)
{
	ASSERT_EQ(KVM_API_VERSION, ioctl(self->kvm_fd, KVM_GET_API_VERSION, 0));
}

TEST_F(kvm, create_vm)
{
	close(vm_create(_metadata, self->kvm_fd));
}

TEST_F(kvm, create_vcpus)
{
	int vm_fd = vm_create(_metadata, self->kvm_fd);
	int i, fd;

	for (i = 0; i < NR_VCPUS; i++) {
		fd = _vcpu_create(vm_fd, i);
		ASSERT_LE(0, fd) TH_LOG("KVM_CREATE_VCPU(%d): %s", i, strerror(-fd));
	}
}

TEST_F(kvm, refuse_duplicate_vcpu_id)
{
	int vm_fd = vm_create(_metadata, self->kvm_fd);
	int fd = _vcpu_create(vm_fd, 0);

	ASSERT_LE(0, fd) TH_LOG("KVM_CREATE_VCPU(0): %s", strerror(-fd));
	fd = _vcpu_create(vm_fd, 0);
	ASSERT_EQ(-EEXIST, fd) TH_LOG("second KVM_CREATE_VCPU(0): %s",
				      fd < 0 ? strerror(-fd) : "a vCPU fd");
}

TEST_HARNESS_MAIN
