// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_writer: keeps a VM writing TSC values, for checks that need events
 * to flow meanwhile (the module's load/unload cycles). Not a test.
 *
 * usage: tsc_writer SECONDS [VMS]
 * Writes IA32_TSC on two vCPUs in a loop for SECONDS seconds, then prints
 * how many writes it made. With VMS, every round is a VM of its own,
 * created, written and destroyed, until VMS of them or SECONDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

struct vm {
	int fd;
	int vcpu_fds[NR_VCPUS];
};

static void create_vm(int kvm_fd, struct vm *vm)
{
	int i;

	vm->fd = _vm_create(kvm_fd);
	if (vm->fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM: %s\n", strerror(-vm->fd));
	for (i = 0; i < NR_VCPUS; i++)
		vm->vcpu_fds[i] = create_vcpu(vm->fd, i);
}

/* Closing the last fd of a VM destroys it. */
static void destroy_vm(struct vm *vm)
{
	int i;

	for (i = 0; i < NR_VCPUS; i++)
		close(vm->vcpu_fds[i]);
	close(vm->fd);
}

static void write_tscs(struct vm *vm, unsigned long long round)
{
	int i, ret;

	for (i = 0; i < NR_VCPUS; i++) {
		ret = _vcpu_set_msr(vm->vcpu_fds[i], MSR_IA32_TSC, (round + i) << 40);
		if (ret)
			ksft_exit_fail_msg("KVM_SET_MSRS(IA32_TSC): %s\n", strerror(-ret));
	}
}

int main(int argc, char **argv)
{
	unsigned long long rounds = 0, vms = 0, max_vms = 0;
	int kvm_fd;
	struct vm vm;
	time_t end;

	if (argc < 2 || argc > 3 || atoi(argv[1]) <= 0 || (argc == 3 && atoll(argv[2]) <= 0))
		ksft_exit_fail_msg("usage: %s SECONDS [VMS]\n", argv[0]);
	if (argc == 3)
		max_vms = atoll(argv[2]);
	kvm_fd = _kvm_open();
	if (kvm_fd < 0)
		ksft_exit_skip("cannot open %s: %s\n", KVM_DEV_PATH, strerror(-kvm_fd));
	create_vm(kvm_fd, &vm);
	vms++;

	end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) {
		write_tscs(&vm, rounds++);
		if (!max_vms)
			continue;
		destroy_vm(&vm);
		if (vms == max_vms)
			break;
		create_vm(kvm_fd, &vm);
		vms++;
	}
	printf("tsc_writer: %llu rounds of %d IA32_TSC writes in %llu VMs\n", rounds, NR_VCPUS,
	       vms);
	return 0;
}
