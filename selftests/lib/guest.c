// SPDX-License-Identifier: GPL-2.0
/*
 * guest.c: VMs running a real-mode guest that loops on rdtsc and reports the
 * value through two 32-bit OUTs (low half to port 0x10, high to 0x11).
 * Real mode needs no page tables or descriptors, so the whole guest is 13
 * bytes and a vCPU needs only CS and RIP set.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "guest.h"
#include "kvm.h"
#include "tap.h"

#define GUEST_MEM_SIZE	0x10000
#define GUEST_CODE_GPA	0x1000
#define PORT_TSC_LOW	0x10
#define PORT_TSC_HIGH	0x11

static const uint8_t guest_code[] = {
	0x0f, 0x31,		/* rdtsc */
	0x66, 0xe7, PORT_TSC_LOW,	/* out PORT_TSC_LOW, eax */
	0x66, 0x89, 0xd0,	/* mov eax, edx */
	0x66, 0xe7, PORT_TSC_HIGH,	/* out PORT_TSC_HIGH, eax */
	0xeb, 0xf3,		/* jmp back to rdtsc */
};

static void setup_memory(struct guest_vm *vm)
{
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_MEM_SIZE,
	};

	vm->mem = mmap(NULL, GUEST_MEM_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->mem == MAP_FAILED)
		tap_bail_out("mmap of guest memory: %s", strerror(errno));
	memcpy((char *)vm->mem + GUEST_CODE_GPA, guest_code, sizeof(guest_code));
	region.userspace_addr = (uintptr_t)vm->mem;
	if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		tap_bail_out("KVM_SET_USER_MEMORY_REGION: %s", strerror(errno));
}

static void setup_vcpu(struct guest_vm *vm, struct guest_vcpu *vcpu, unsigned int id)
{
	struct kvm_regs regs = { .rip = GUEST_CODE_GPA, .rflags = 0x2 };
	struct kvm_sregs sregs;
	int mmap_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	if (mmap_size < 0)
		tap_bail_out("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
	vcpu->id = id;
	vcpu->fd = vcpu_create(vm->fd, id);
	vcpu->run_size = mmap_size;
	vcpu->run = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED)
		tap_bail_out("mmap of vCPU %u's kvm_run: %s", id, strerror(errno));
	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		tap_bail_out("KVM_GET_SREGS(vCPU %u): %s", id, strerror(errno));
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0)
		tap_bail_out("KVM_SET_SREGS(vCPU %u): %s", id, strerror(errno));
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		tap_bail_out("KVM_SET_REGS(vCPU %u): %s", id, strerror(errno));
}

void guest_vm_create(struct guest_vm *vm, int kvm_fd, int nr_vcpus)
{
	int i;

	if (nr_vcpus > GUEST_MAX_VCPUS)
		tap_bail_out("%d vCPUs requested, at most %d", nr_vcpus, GUEST_MAX_VCPUS);
	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = kvm_fd;
	vm->fd = vm_create(kvm_fd);
	setup_memory(vm);
	for (i = 0; i < nr_vcpus; i++)
		setup_vcpu(vm, &vm->vcpus[i], i);
	vm->nr_vcpus = nr_vcpus;
}

void guest_vm_destroy(struct guest_vm *vm)
{
	int i;

	/* The kvm_run mapping holds the vCPU, and so the VM, alive. */
	for (i = 0; i < vm->nr_vcpus; i++) {
		munmap(vm->vcpus[i].run, vm->vcpus[i].run_size);
		close(vm->vcpus[i].fd);
	}
	close(vm->fd);
	munmap(vm->mem, GUEST_MEM_SIZE);
}

/* Run until the guest's next OUT to @port and return the 32 bits it wrote. */
static uint32_t run_until_out(struct guest_vcpu *vcpu, uint16_t port)
{
	struct kvm_run *run = vcpu->run;

	if (ioctl(vcpu->fd, KVM_RUN, 0) < 0)
		tap_bail_out("KVM_RUN(vCPU %u): %s", vcpu->id, strerror(errno));
	if (run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
	    run->io.port != port || run->io.size != 4)
		tap_bail_out("vCPU %u: expected a 4-byte OUT to port %#x, got exit reason %u (port %#x size %u)",
			     vcpu->id, port, run->exit_reason, run->io.port, run->io.size);
	return *(uint32_t *)((char *)run + run->io.data_offset);
}

void guest_read_tsc(struct guest_vcpu *vcpu, struct tsc_sample *sample)
{
	uint64_t low, high;

	sample->host_before = __rdtsc();
	low = run_until_out(vcpu, PORT_TSC_LOW);
	sample->host_after = __rdtsc();
	high = run_until_out(vcpu, PORT_TSC_HIGH);
	sample->guest = high << 32 | low;
}
