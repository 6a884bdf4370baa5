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

#define GUEST_MEM_SIZE	0x10000
#define GUEST_CODE_GPA	0x1000
#define PORT_TSC_LOW	0x10
#define PORT_TSC_HIGH	0x11

static const uint8_t guest_code[] = {
	0x0f, 0x31,			/* rdtsc */
	0x66, 0xe7, PORT_TSC_LOW,	/* out PORT_TSC_LOW, eax */
	0x66, 0x89, 0xd0,		/* mov eax, edx */
	0x66, 0xe7, PORT_TSC_HIGH,	/* out PORT_TSC_HIGH, eax */
	0xeb, 0xf3,			/* jmp back to rdtsc */
};

static int setup_memory(struct guest_vm *vm)
{
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_MEM_SIZE,
	};

	vm->mem = mmap(NULL, GUEST_MEM_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		return -errno;
	}
	memcpy((char *)vm->mem + GUEST_CODE_GPA, guest_code, sizeof(guest_code));
	region.userspace_addr = (uintptr_t)vm->mem;
	return ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region) < 0 ? -errno : 0;
}

static int start_in_guest_code(struct guest_vcpu *vcpu)
{
	struct kvm_regs regs = { .rip = GUEST_CODE_GPA, .rflags = 0x2 };
	struct kvm_sregs sregs;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0 ||
	    ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	return 0;
}

/* vCPU @id with its kvm_run mapped, counted in the VM once it exists. */
static int add_vcpu(struct guest_vm *vm, int kvm_fd, unsigned int id)
{
	struct guest_vcpu *vcpu = &vm->vcpus[id];
	int mmap_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	int ret;

	if (mmap_size < 0)
		return -errno;
	vcpu->fd = _vcpu_create(vm->fd, id);
	if (vcpu->fd < 0)
		return vcpu->fd;
	vcpu->id = id;
	vcpu->run_size = mmap_size;
	vcpu->run = mmap(NULL, mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		ret = -errno;
		close(vcpu->fd);
		return ret;
	}
	vm->nr_vcpus++;
	return start_in_guest_code(vcpu);
}

/* On failure, what was built is destroyed and -errno returned. */
int _guest_vm_create(struct guest_vm *vm, int kvm_fd, int nr_vcpus)
{
	int i, ret;

	if (nr_vcpus > GUEST_MAX_VCPUS)
		return -E2BIG;
	memset(vm, 0, sizeof(*vm));
	vm->fd = _vm_create(kvm_fd);
	if (vm->fd < 0)
		return vm->fd;
	ret = setup_memory(vm);
	for (i = 0; i < nr_vcpus && !ret; i++)
		ret = add_vcpu(vm, kvm_fd, i);
	if (ret)
		guest_vm_destroy(vm);
	return ret;
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
	if (vm->mem)
		munmap(vm->mem, GUEST_MEM_SIZE);
}

/*
 * Run until the guest's next OUT and store the 32 bits it wrote to @port;
 * -EPROTO if the vCPU exited otherwise (vcpu->run says how).
 */
static int run_until_out(struct guest_vcpu *vcpu, uint16_t port, uint32_t *value)
{
	struct kvm_run *run = vcpu->run;

	if (ioctl(vcpu->fd, KVM_RUN, 0) < 0)
		return -errno;
	if (run->exit_reason != KVM_EXIT_IO || run->io.direction != KVM_EXIT_IO_OUT ||
	    run->io.port != port || run->io.size != sizeof(*value))
		return -EPROTO;
	*value = *(uint32_t *)((char *)run + run->io.data_offset);
	return 0;
}

int _guest_read_tsc(struct guest_vcpu *vcpu, struct tsc_sample *sample)
{
	uint32_t low, high;
	int ret;

	sample->host_before = __rdtsc();
	ret = run_until_out(vcpu, PORT_TSC_LOW, &low);
	sample->host_after = __rdtsc();
	if (!ret)
		ret = run_until_out(vcpu, PORT_TSC_HIGH, &high);
	if (!ret)
		sample->guest = (uint64_t)high << 32 | low;
	return ret;
}
