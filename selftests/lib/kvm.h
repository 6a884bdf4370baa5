/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm.h: VM and vCPU setup through raw /dev/kvm ioctls. As in the upstream
 * KVM selftests, foo() fails the test on error and _foo() returns -errno.
 */
#ifndef KTT_KVM_H
#define KTT_KVM_H

#include <stdbool.h>
#include <stdint.h>

#define KVM_DEV_PATH "/dev/kvm"
#define MSR_IA32_TSC 0x10

int kvm_open_or_skip(void);
int _vm_create(int kvm_fd);
int vm_create(int kvm_fd);
int _vcpu_create(int vm_fd, unsigned int vcpu_id);
int vcpu_create(int vm_fd, unsigned int vcpu_id);
void vm_create_vcpus(int vm_fd, int nr_vcpus, int *vcpu_fds);
int _vcpu_set_msr(int vcpu_fd, uint32_t index, uint64_t value);
void vcpu_set_msr(int vcpu_fd, uint32_t index, uint64_t value);
int _vcpu_tsc_ctrl_attr(int vcpu_fd, unsigned long request, uint64_t attr, uint64_t addr);
bool vcpu_has_tsc_offset_attr(int vcpu_fd);
int _vcpu_set_tsc_offset(int vcpu_fd, uint64_t offset);
int _vcpu_get_tsc_offset(int vcpu_fd, uint64_t *offset);

#endif
