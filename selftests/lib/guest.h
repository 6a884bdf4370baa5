/* SPDX-License-Identifier: GPL-2.0 */
/*
 * guest.h: a VM whose vCPUs run a minimal real-mode guest that reads its
 * TSC with rdtsc and reports it to the host through port I/O.
 */
#ifndef KTT_GUEST_H
#define KTT_GUEST_H

#include <stdint.h>
#include <linux/kvm.h>

#define GUEST_MAX_VCPUS 8

struct guest_vcpu {
	int fd;
	unsigned int id;
	struct kvm_run *run;
	int run_size;
};

struct guest_vm {
	int fd;
	void *mem;
	int nr_vcpus;
	struct guest_vcpu vcpus[GUEST_MAX_VCPUS];
};

/* One guest rdtsc, with host TSC reads taken just before and just after. */
struct tsc_sample {
	uint64_t host_before;
	uint64_t guest;
	uint64_t host_after;
};

int _guest_vm_create(struct guest_vm *vm, int kvm_fd, int nr_vcpus);
void guest_vm_destroy(struct guest_vm *vm);
int _guest_read_tsc(struct guest_vcpu *vcpu, struct tsc_sample *sample);

#endif
