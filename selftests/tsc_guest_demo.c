// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_guest_demo: what `make demo` shows. Records the TSC events of a small
 * real guest in a dedicated x86-tsc instance, enabled before the VM exists,
 * then explains each event: which vCPU, the value before and after, and the
 * guest TSC that results at that moment. Not a test: it asserts nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvm_util.h"
#include "processor.h"

#include "kvm_dev.h"
#include "trace.h"
#include "tsc_guest.h"

#define NR_VCPUS	3
#define NEW_TSC		1000000000000ULL	/* vCPU 1's TSC after KVM_SET_MSRS */
#define NEW_OFFSET	(-5000000000LL)		/* vCPU 2's offset: 5e9 cycles behind */
#define MAX_EVENTS	64

/*
 * The demo's instance, removed on every way out but a kill: the library's
 * failed assertions exit() too.
 */
static struct tracefs_instance *inst;

static void remove_instance(void)
{
	_trace_instance_remove(inst);
}

/* Records with the host TSC as clock, and only this process's events. */
static void create_instance(void)
{
	const char *what;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "ktt-demo-%d", getpid());
	ret = _trace_tsc_instance_create(name, getpid(), &inst, &what);
	if (ret == -ENOTSUP)
		ksft_exit_skip("trace clock %s is not available\n", TRACE_TSC_CLOCK);
	if (ret)
		ksft_exit_fail_msg("tracefs instance %s: %s: %s\n", name, what, strerror(-ret));
	atexit(remove_instance);
	printf("Recording in instance %s with trace_clock %s:\n", name, TRACE_TSC_CLOCK);
}

/* What the events said so far, per vCPU, to compute the guest TSC. */
struct vcpu_state {
	uint64_t offset;
	uint64_t multiplier;
	unsigned int frac_bits;
};

static struct vcpu_state state[NR_VCPUS];
/* The guest's last rdtsc on each vCPU, checked against the events at the end. */
static struct tsc_sample last_sample[NR_VCPUS];

static void enable_tsc_events(void)
{
	const char *event;
	int kind, ret;

	ret = _trace_enable_tsc_events(inst, &event);
	if (ret)
		ksft_exit_fail_msg("enabling kvm:%s: %s\n", event, strerror(-ret));
	for (kind = 0; kind < TSC_NR_KINDS; kind++) {
		event = tsc_event_types[kind].name;
		printf("  kvm:%s: %s\n", event,
		       trace_kvm_event_exists(event) ? "enabled" : "not in this kernel");
	}
}

static uint64_t guest_tsc_at(const struct vcpu_state *s, uint64_t host_tsc)
{
	if (!s->multiplier)
		return host_tsc + s->offset;
	return (uint64_t)(((__uint128_t)host_tsc * s->multiplier) >> s->frac_bits) +
	       s->offset;
}

static void run_all_vcpus(struct kvm_vcpu **vcpus, const char *when)
{
	struct tsc_sample *s;
	int i;

	printf("\nGuest rdtsc %s (host TSC read just before and after each run):\n", when);
	for (i = 0; i < NR_VCPUS; i++) {
		s = &last_sample[i];
		tsc_guest_read(vcpus[i], s);
		printf("  vCPU %d: host %" PRIu64 " .. %" PRIu64 ", guest %" PRIu64 "\n",
		       i, s->host_before, s->host_after, s->guest);
	}
}

/* The formula, applied to the host TSC reads around the guest's rdtsc. */
static void compare_samples(void)
{
	const struct tsc_sample *s;
	uint64_t low, high;
	int i;

	printf("\nThe last guest rdtsc of each vCPU against the events' values:\n");
	for (i = 0; i < NR_VCPUS; i++) {
		s = &last_sample[i];
		low = guest_tsc_at(&state[i], s->host_before);
		high = guest_tsc_at(&state[i], s->host_after);
		printf("  vCPU %d: expected %" PRIu64 " .. %" PRIu64 ", guest read %" PRIu64 ": %s\n",
		       i, low, high, s->guest,
		       s->guest >= low && s->guest <= high ? "matches" : "DOES NOT MATCH");
	}
}

static void change_tsc(struct kvm_vcpu **vcpus)
{
	printf("\nvCPU 1: KVM_SET_MSRS(IA32_TSC = %llu)\n", NEW_TSC);
	vcpu_set_msr(vcpus[1], MSR_IA32_TSC, NEW_TSC);
	if (!vcpu_has_tsc_offset_attr(vcpus[2])) {
		printf("vCPU 2: KVM_VCPU_TSC_OFFSET not supported by this kernel\n");
		return;
	}
	printf("vCPU 2: KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET = %lld)\n", NEW_OFFSET);
	if (__vcpu_set_tsc_offset(vcpus[2], NEW_OFFSET))
		printf("vCPU 2: KVM_VCPU_TSC_OFFSET failed: %s\n", strerror(errno));
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
	printf("  L1 multiplier %" PRIu64 " -> %" PRIu64 " with %u fractional bits (%s), ",
	       ev->prev, ev->next, ev->frac_bits,
	       ev->next == 1ULL << ev->frac_bits ? "x1, no scaling" : "scaled");
	printf("so at this moment the guest TSC is %" PRIu64 "\n", guest_tsc_at(s, ev->ts));
}

static void explain_nested(const struct tsc_event *ev)
{
	printf("  %s: offset %" PRId64 " -> %" PRId64 ", multiplier %" PRIu64 "\n",
	       ev->guest_mode ? "L2 entered" : "back to L1",
	       (int64_t)ev->prev, (int64_t)ev->next, ev->multiplier);
}

static void explain_event(const struct tsc_event *ev)
{
	struct vcpu_state *s = &state[ev->vcpu_id % NR_VCPUS];

	printf("[%" PRIu64 "] vCPU %u kvm:%s\n", ev->ts, ev->vcpu_id,
	       tsc_event_types[ev->kind].name);
	if (ev->kind == TSC_OFFSET)
		explain_offset(ev, s);
	else if (ev->kind == TSC_MULTIPLIER)
		explain_multiplier(ev, s);
	else
		explain_nested(ev);
}

int main(void)
{
	struct kvm_vcpu *vcpus[NR_VCPUS];
	struct tsc_event evs[MAX_EVENTS];
	int i, nr, err = kvm_dev_errno();
	struct kvm_vm *vm;

	__TEST_REQUIRE(!geteuid() && tracefs_tracing_dir(), "needs root and a mounted tracefs");
	__TEST_REQUIRE(!err, KVM_DEV_UNUSABLE, strerror(err));
	create_instance();
	enable_tsc_events();

	printf("\nCreating a VM with %d vCPUs running a C guest's rdtsc loop\n", NR_VCPUS);
	vm = vm_create_with_vcpus(NR_VCPUS, tsc_guest_code, vcpus);
	run_all_vcpus(vcpus, "after creation");
	change_tsc(vcpus);
	run_all_vcpus(vcpus, "after the change");
	tracefs_trace_off(inst);

	printf("\nThe events, in host TSC order (timestamps are host TSC cycles):\n");
	nr = _trace_read_tsc_events(inst, evs, MAX_EVENTS);
	if (nr < 0)
		ksft_exit_fail_msg("reading the events: %s\n", strerror(-nr));
	for (i = 0; i < nr; i++)
		explain_event(&evs[i]);
	compare_samples();

	kvm_vm_free(vm);
	return 0;
}
