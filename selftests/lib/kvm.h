/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm.h: VM and vCPU setup through raw /dev/kvm ioctls. As in the upstream
 * KVM selftests, foo() fails the test on error and _foo() returns -errno.
 */
#ifndef KTT_KVM_H
#define KTT_KVM_H

#define KVM_DEV_PATH "/dev/kvm"

int kvm_open_or_skip(void);
int _vm_create(int kvm_fd);
int vm_create(int kvm_fd);
int _vcpu_create(int vm_fd, unsigned int vcpu_id);
int vcpu_create(int vm_fd, unsigned int vcpu_id);

#endif
