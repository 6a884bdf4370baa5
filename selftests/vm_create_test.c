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

#include "kvm.h"
#include "tap.h"

#define NR_VCPUS 4

static void test_api_version(int kvm_fd)
{
	int version = ioctl(kvm_fd, KVM_GET_API_VERSION, 0);

	if (version != KVM_API_VERSION)
		tap_diag("KVM_GET_API_VERSION: expected %d, got %d", KVM_API_VERSION, version);
	tap_ok(version == KVM_API_VERSION, "KVM_GET_API_VERSION is %d", KVM_API_VERSION);
}

static void test_create_vcpus(int vm_fd)
{
	int i, fd, created = 0;

	for (i = 0; i < NR_VCPUS; i++) {
		fd = _vcpu_create(vm_fd, i);
		if (fd < 0) {
			tap_diag("KVM_CREATE_VCPU(%d): %s", i, strerror(-fd));
			break;
		}
		created++;
	}
	tap_ok(created == NR_VCPUS, "KVM_CREATE_VCPU creates vCPUs 0..%d", NR_VCPUS - 1);
}

static void test_duplicate_vcpu(int vm_fd)
{
	int fd = _vcpu_create(vm_fd, 0);

	if (fd != -EEXIST)
		tap_diag("second KVM_CREATE_VCPU(0): expected %s, got %s", strerror(EEXIST),
			 fd < 0 ? strerror(-fd) : "a vCPU fd");
	tap_ok(fd == -EEXIST, "KVM_CREATE_VCPU refuses a duplicate vCPU id with EEXIST");
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	int vm_fd;

	tap_plan(4);
	test_api_version(kvm_fd);
	vm_fd = _vm_create(kvm_fd);
	if (vm_fd < 0)
		tap_diag("KVM_CREATE_VM: %s", strerror(-vm_fd));
	tap_ok(vm_fd >= 0, "KVM_CREATE_VM returns a VM fd");
	if (vm_fd < 0)
		tap_bail_out("no VM, nothing more to test");
	test_create_vcpus(vm_fd);
	test_duplicate_vcpu(vm_fd);
	close(vm_fd);
	close(kvm_fd);
	return tap_finish();
}
