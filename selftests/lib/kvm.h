/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm.h: /dev/kvm, VM and vCPU ioctls for the selftests and their helper
 * programs. As in the upstream KVM selftests, _foo() returns -errno (or a
 * file descriptor); the asserting foo() of a test lives in tsc_fixture.h.
 */
#ifndef KTT_KVM_H
#define KTT_KVM_H

#include <stdbool.h>
#include <stdint.h>

#define KVM_DEV_PATH	"/dev/kvm"
#define MSR_IA32_TSC	0x10

int _kvm_open(void);
int _vm_create(int kvm_fd);
int _vcpu_create(int vm_fd, unsigned int vcpu_id);
int _vcpu_set_msr(int vcpu_fd, uint32_t index, uint64_t value);
int _vcpu_tsc_ctrl_attr(int vcpu_fd, unsigned long request, uint64_t attr, uint64_t addr);
bool vcpu_has_tsc_offset_attr(int vcpu_fd);
int _vcpu_set_tsc_offset(int vcpu_fd, uint64_t offset);
int _vcpu_get_tsc_offset(int vcpu_fd, uint64_t *offset);
const char *kvm_vendor_module(void);

#endif
