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
#include <time.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"

#define NR_VCPUS 2

int main(int argc, char **argv)
{
	int kvm_fd = kvm_open_or_skip();
	int vcpu_fds[NR_VCPUS], vm_fd, i;
	unsigned long long writes = 0;
	time_t end;

	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
		return KSFT_FAIL;
	}
	end = time(NULL) + atoi(argv[1]);
	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	while (time(NULL) < end) {
		for (i = 0; i < NR_VCPUS; i++)
			vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, (writes + i) << 40);
		writes++;
	}
	printf("tsc_writer: %llu rounds of %d IA32_TSC writes\n", writes, NR_VCPUS);
	return KSFT_PASS;
}
