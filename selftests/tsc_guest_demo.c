// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_guest_demo: what `make demo` shows. Records the TSC events of a small
 * real guest in a dedicated x86-tsc instance, enabled before the VM exists,
 * then explains each event: which vCPU, the value before and after, and the
 * guest TSC that results at that moment. Not a test: it asserts nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"
#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define NR_VCPUS	3
#define NEW_TSC		1000000000000ULL	/* vCPU 1's TSC after KVM_SET_MSRS */
#define NEW_OFFSET	(-5000000000LL)		/* vCPU 2's offset: 5e9 cycles behind */

static const char * const tsc_events[] = {
	[TSC_OFFSET] = TSC_OFFSET_EVENT,
	[TSC_MULTIPLIER] = TSC_MULTIPLIER_EVENT,
	[TSC_NESTED] = NESTED_TSC_EVENT,
};

/* What the events said so far, per vCPU, to compute the guest TSC. */
struct vcpu_state {
	uint64_t offset;
	uint64_t multiplier;
	unsigned int frac_bits;
};

static struct vcpu_state state[GUEST_MAX_VCPUS];
/* The guest's last rdtsc on each vCPU, checked against the events at the end. */
static struct tsc_sample last_sample[GUEST_MAX_VCPUS];

static void enable_tsc_events(struct tracefs_instance *inst)
{
	unsigned int i;

	for (i = 0; i < sizeof(tsc_events) / sizeof(tsc_events[0]); i++) {
		if (!trace_kvm_event_exists(tsc_events[i])) {
			printf("  kvm:%s: not in this kernel\n", tsc_events[i]);
			continue;
		}
		trace_kvm_event_enable(inst, tsc_events[i]);
		printf("  kvm:%s: enabled\n", tsc_events[i]);
	}
}

static uint64_t guest_tsc_at(const struct vcpu_state *s, uint64_t host_tsc)
{
	if (!s->multiplier)
		return host_tsc + s->offset;
	return (uint64_t)(((unsigned __int128)host_tsc * s->multiplier) >> s->frac_bits) +
	       s->offset;
}

static void run_all_vcpus(struct guest_vm *vm, const char *when)
{
	struct tsc_sample *s;
	int i;

	printf("\nGuest rdtsc %s (host TSC read just before and after each run):\n", when);
	for (i = 0; i < vm->nr_vcpus; i++) {
		s = &last_sample[i];
		guest_read_tsc(&vm->vcpus[i], s);
		printf("  vCPU %d: host %" PRIu64 " .. %" PRIu64 ", guest %" PRIu64 "\n",
		       i, s->host_before, s->host_after, s->guest);
	}
}

/* The formula, applied to the host TSC reads around the guest's rdtsc. */
static void compare_samples(int nr_vcpus)
{
	const struct tsc_sample *s;
	uint64_t low, high;
	int i;

	printf("\nThe last guest rdtsc of each vCPU against the events' values:\n");
	for (i = 0; i < nr_vcpus; i++) {
		s = &last_sample[i];
		low = guest_tsc_at(&state[i], s->host_before);
		high = guest_tsc_at(&state[i], s->host_after);
		printf("  vCPU %d: expected %" PRIu64 " .. %" PRIu64 ", guest read %" PRIu64 ": %s\n",
		       i, low, high, s->guest,
		       s->guest >= low && s->guest <= high ? "matches" : "DOES NOT MATCH");
	}
}

static void change_tsc(struct guest_vm *vm)
{
	int ret;

	printf("\nvCPU 1: KVM_SET_MSRS(IA32_TSC = %llu)\n", NEW_TSC);
	vcpu_set_msr(vm->vcpus[1].fd, MSR_IA32_TSC, NEW_TSC);
	if (!vcpu_has_tsc_offset_attr(vm->vcpus[2].fd)) {
		printf("vCPU 2: KVM_VCPU_TSC_OFFSET not supported by this kernel\n");
		return;
	}
	printf("vCPU 2: KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET = %lld)\n", NEW_OFFSET);
	ret = _vcpu_set_tsc_offset(vm->vcpus[2].fd, NEW_OFFSET);
	if (ret < 0)
		printf("vCPU 2: KVM_VCPU_TSC_OFFSET failed: %s\n", strerror(-ret));
}

static void explain_offset(const struct tsc_event *ev, struct vcpu_state *s)
{
	s->offset = ev->next;
	printf("  L1 offset %" PRId64 " -> %" PRId64 ": guest TSC = host TSC %+" PRId64
	       ", so at this moment the guest TSC is %" PRIu64 "\n",
	       (int64_t)ev->prev, (int64_t)ev->next, (int64_t)ev->next, guest_tsc_at(s, ev->ts));
}

static void explain_multiplier(const struct tsc_event *ev, struct vcpu_state *s)
{
	s->multiplier = ev->next;
	s->frac_bits = ev->frac_bits;
	printf("  L1 multiplier %" PRIu64 " -> %" PRIu64 " with %u fractional bits (%s)"
	       ", so at this moment the guest TSC is %" PRIu64 "\n",
	       ev->prev, ev->next, ev->frac_bits,
	       ev->next == 1ULL << ev->frac_bits ? "x1, no scaling" : "scaled",
	       guest_tsc_at(s, ev->ts));
}

static void explain_nested(const struct tsc_event *ev)
{
	printf("  %s: offset %" PRId64 " -> %" PRId64 ", multiplier %" PRIu64 "\n",
	       ev->guest_mode ? "L2 entered" : "back to L1",
	       (int64_t)ev->prev, (int64_t)ev->next, ev->multiplier);
}

static void explain_event(const struct tsc_event *ev)
{
	struct vcpu_state *s = &state[ev->vcpu_id % GUEST_MAX_VCPUS];

	printf("[%" PRIu64 "] vCPU %u kvm:%s\n", ev->ts, ev->vcpu_id, tsc_events[ev->kind]);
	if (ev->kind == TSC_OFFSET)
		explain_offset(ev, s);
	else if (ev->kind == TSC_MULTIPLIER)
		explain_multiplier(ev, s);
	else
		explain_nested(ev);
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst = trace_instance_create("demo");
	struct tsc_event evs[64];
	struct guest_vm vm;
	int i, nr;

	printf("Recording in instance %s with trace_clock x86-tsc:\n",
	       tracefs_instance_get_name(inst));
	enable_tsc_events(inst);

	printf("\nCreating a VM with %d vCPUs running a real-mode rdtsc loop\n", NR_VCPUS);
	guest_vm_create(&vm, kvm_fd, NR_VCPUS);
	run_all_vcpus(&vm, "after creation");
	change_tsc(&vm);
	run_all_vcpus(&vm, "after the change");
	tracefs_trace_off(inst);

	printf("\nThe events, in host TSC order (timestamps are host TSC cycles):\n");
	nr = trace_read_tsc_events(inst, evs, 64);
	for (i = 0; i < nr; i++)
		explain_event(&evs[i]);
	compare_samples(vm.nr_vcpus);

	guest_vm_destroy(&vm);
	trace_instance_remove(inst);
	close(kvm_fd);
	return 0;
}
