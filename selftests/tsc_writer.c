// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_writer: keeps a VM writing TSC values, for checks that need events
 * to flow meanwhile (the module's load/unload cycles). Not a test.
 *
 * usage: tsc_writer SECONDS
 * Writes IA32_TSC on two vCPUs in a loop for SECONDS seconds, then prints
 * how many writes it made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kselftest.h"

#include "kvm.h"

#define NR_VCPUS 2

static int create_vcpu(int vm_fd, unsigned int id)
{
	int fd = _vcpu_create(vm_fd, id);

	if (fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_VCPU(%u): %s\n", id, strerror(-fd));
	return fd;
}

int main(int argc, char **argv)
{
	int kvm_fd, vm_fd, vcpu_fds[NR_VCPUS], i, ret;
	unsigned long long writes = 0;
	time_t end;

	if (argc != 2 || atoi(argv[1]) <= 0)
		ksft_exit_fail_msg("usage: %s SECONDS\n", argv[0]);
	kvm_fd = _kvm_open();
	if (kvm_fd < 0)
		ksft_exit_skip("cannot open %s: %s\n", KVM_DEV_PATH, strerror(-kvm_fd));
	vm_fd = _vm_create(kvm_fd);
	if (vm_fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM: %s\n", strerror(-vm_fd));
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_fds[i] = create_vcpu(vm_fd, i);

	end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) {
		for (i = 0; i < NR_VCPUS; i++) {
			ret = _vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, (writes + i) << 40);
			if (ret)
				ksft_exit_fail_msg("KVM_SET_MSRS(IA32_TSC): %s\n", strerror(-ret));
		}
		writes++;
	}
	printf("tsc_writer: %llu rounds of %d IA32_TSC writes\n", writes, NR_VCPUS);
	return 0;
}
