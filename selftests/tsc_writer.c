// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_writer: keeps a VM writing TSC values, for checks that need events
 * to flow meanwhile (the module's load/unload cycles). Not a test.
 *
 * usage: tsc_writer SECONDS [VMS]
 * Writes IA32_TSC on two vCPUs in a loop for SECONDS seconds, then prints
 * how many writes it made. With VMS, every round is a VM of its own,
 * created, written and destroyed, until VMS of them or SECONDS. A line
 * on stderr every minute says it goes on: a test VM that prints nothing
 * for long is taken for stalled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kvm_util.h"
#include "processor.h"

#include "kvm_dev.h"

#define NR_VCPUS 2
#define REPORT_EVERY 60	/* seconds */

struct vm {
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpus[NR_VCPUS];
};

/* No guest memory: the vCPUs never run, and VMs come and go fast. */
static void create_vm(struct vm *vm)
{
	int i;

	vm->vm = vm_create_barebones();
	for (i = 0; i < NR_VCPUS; i++)
		vm->vcpus[i] = __vm_vcpu_add(vm->vm, i);
}

static void write_tscs(struct vm *vm, unsigned long long round)
{
	int i;

	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(vm->vcpus[i], MSR_IA32_TSC, (round + i) << 40);
}

int main(int argc, char **argv)
{
	unsigned long long rounds = 0, vms = 0, max_vms = 0;
	int err = kvm_dev_errno();
	struct vm vm;
	time_t end, report;

	if (argc < 2 || argc > 3 || atoi(argv[1]) <= 0 || (argc == 3 && atoll(argv[2]) <= 0))
		ksft_exit_fail_msg("usage: %s SECONDS [VMS]\n", argv[0]);
	if (argc == 3)
		max_vms = atoll(argv[2]);
	__TEST_REQUIRE(!err, KVM_DEV_UNUSABLE, strerror(err));
	create_vm(&vm);
	vms++;

	report = time(NULL) + REPORT_EVERY;
	end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) {
		if (time(NULL) >= report) {
			fprintf(stderr, "# tsc_writer: %llu VMs so far\n", vms);
			report += REPORT_EVERY;
		}
		write_tscs(&vm, rounds++);
		if (!max_vms)
			continue;
		kvm_vm_free(vm.vm);
		if (vms == max_vms)
			break;
		create_vm(&vm);
		vms++;
	}
	printf("tsc_writer: %llu rounds of %d IA32_TSC writes in %llu VMs\n", rounds, NR_VCPUS,
	       vms);
	return 0;
}
