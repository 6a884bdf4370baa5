// SPDX-License-Identifier: GPL-2.0
/*
 * vm_create_test: /dev/kvm answers, KVM_CREATE_VM and KVM_CREATE_VCPU work,
 * and a duplicate vCPU id is refused. Every later test builds on this.
 */
#include <string.h>

#include "kselftest_harness.h"

#include "kvm_dev.h"

#define NR_VCPUS 4

/* Only /dev/kvm: these checks need neither root nor tracefs. */
FIXTURE(kvm) {
	int kvm_fd;
};

/* The library would exit at its first use without it: skip with the reason. */
FIXTURE_SETUP(kvm)
{
	self->kvm_fd = open(KVM_DEV_PATH, O_RDWR);
	if (self->kvm_fd < 0)
		SKIP(return, KVM_DEV_UNUSABLE, strerror(errno));
}

FIXTURE_TEARDOWN(kvm)
{
	close(self->kvm_fd);
}

TEST_F(kvm, api_version)
{
	ASSERT_EQ(KVM_API_VERSION, __kvm_ioctl(self->kvm_fd, KVM_GET_API_VERSION, NULL));
}

TEST_F(kvm, create_vm)
{
	kvm_vm_free(vm_create_barebones());
}

/* vCPUs without guest memory or registers set: KVM_CREATE_VCPU only. */
TEST_F(kvm, create_vcpus)
{
	struct kvm_vm *vm = vm_create_barebones();
	int i;

	for (i = 0; i < NR_VCPUS; i++)
		__vm_vcpu_add(vm, i);
	kvm_vm_free(vm);
}

TEST_F(kvm, refuse_duplicate_vcpu_id)
{
	struct kvm_vm *vm = vm_create_barebones();
	int ret;

	__vm_vcpu_add(vm, 0);
	ret = __vm_ioctl(vm, KVM_CREATE_VCPU, (void *)0);
	ASSERT_EQ(-1, ret) TH_LOG("second KVM_CREATE_VCPU(0): a vCPU fd");
	ASSERT_EQ(EEXIST, errno) TH_LOG("second KVM_CREATE_VCPU(0): %s", strerror(errno));
	kvm_vm_free(vm);
}

TEST_HARNESS_MAIN
