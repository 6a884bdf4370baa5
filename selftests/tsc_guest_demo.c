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
	"kvm_write_tsc_offset", "kvm_write_tsc_multiplier", "kvm_nested_tsc_offset",
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

static void explain_offset(uint64_t ts, struct vcpu_state *s, struct tep_event *event,
			   struct tep_record *record)
{
	uint64_t prev = trace_field(event, record, "previous_tsc_offset");

	s->offset = trace_field(event, record, "next_tsc_offset");
	printf("  L1 offset %" PRId64 " -> %" PRId64 ": guest TSC = host TSC %+" PRId64
	       ", so at this moment the guest TSC is %" PRIu64 "\n",
	       (int64_t)prev, (int64_t)s->offset, (int64_t)s->offset, guest_tsc_at(s, ts));
}

static void explain_multiplier(uint64_t ts, struct vcpu_state *s, struct tep_event *event,
			       struct tep_record *record)
{
	uint64_t prev = trace_field(event, record, "previous_tsc_multiplier");

	s->multiplier = trace_field(event, record, "next_tsc_multiplier");
	s->frac_bits = trace_field(event, record, "frac_bits");
	printf("  L1 multiplier %" PRIu64 " -> %" PRIu64 " with %u fractional bits (%s)"
	       ", so at this moment the guest TSC is %" PRIu64 "\n",
	       prev, s->multiplier, s->frac_bits,
	       s->multiplier == 1ULL << s->frac_bits ? "x1, no scaling" : "scaled",
	       guest_tsc_at(s, ts));
}

static void explain_nested(uint64_t ts, struct vcpu_state *s, struct tep_event *event,
			   struct tep_record *record)
{
	uint64_t guest_mode = trace_field(event, record, "guest_mode");
	uint64_t next = trace_field(event, record, "next_tsc_offset");

	printf("  %s: offset %" PRId64 " -> %" PRId64 ", multiplier %" PRIu64 "\n",
	       guest_mode ? "L2 entered" : "back to L1",
	       (int64_t)trace_field(event, record, "previous_tsc_offset"), (int64_t)next,
	       trace_field(event, record, "tsc_multiplier"));
}

static int explain_event(struct tep_event *event, struct tep_record *record, void *ctx)
{
	unsigned int vcpu = trace_field(event, record, "vcpu_id");
	struct vcpu_state *s = &state[vcpu % GUEST_MAX_VCPUS];

	printf("[%" PRIu64 "] vCPU %u kvm:%s\n", (uint64_t)record->ts, vcpu, event->name);
	if (!strcmp(event->name, "kvm_write_tsc_offset"))
		explain_offset(record->ts, s, event, record);
	else if (!strcmp(event->name, "kvm_write_tsc_multiplier"))
		explain_multiplier(record->ts, s, event, record);
	else if (!strcmp(event->name, "kvm_nested_tsc_offset"))
		explain_nested(record->ts, s, event, record);
	return 0;
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst = trace_instance_create("demo");
	struct tep_handle *tep = trace_kvm_events();
	struct guest_vm vm;

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
	trace_for_each_event(inst, tep, explain_event, NULL);
	compare_samples(vm.nr_vcpus);

	guest_vm_destroy(&vm);
	trace_instance_remove(inst);
	tep_free(tep);
	close(kvm_fd);
	return 0;
}
