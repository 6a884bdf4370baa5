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
#include <string.h>
#include <unistd.h>

#include "kselftest.h"

#include "guest.h"
#include "kvm.h"
#include "trace.h"

#define NR_VCPUS	3
#define NEW_TSC		1000000000000ULL	/* vCPU 1's TSC after KVM_SET_MSRS */
#define NEW_OFFSET	(-5000000000LL)		/* vCPU 2's offset: 5e9 cycles behind */
#define MAX_EVENTS	64

/* The demo's instance, removed on every way out but a kill. */
static struct tracefs_instance *inst;

static __noreturn void fail(const char *what, int err)
{
	_trace_instance_remove(inst);
	ksft_exit_fail_msg("%s: %s\n", what, strerror(-err));
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
	printf("Recording in instance %s with trace_clock %s:\n", name, TRACE_TSC_CLOCK);
}

/* What the events said so far, per vCPU, to compute the guest TSC. */
struct vcpu_state {
	uint64_t offset;
	uint64_t multiplier;
	unsigned int frac_bits;
};

static struct vcpu_state state[GUEST_MAX_VCPUS];
/* The guest's last rdtsc on each vCPU, checked against the events at the end. */
static struct tsc_sample last_sample[GUEST_MAX_VCPUS];

static void enable_tsc_events(void)
{
	const char *event;
	int kind, ret;

	ret = _trace_enable_tsc_events(inst, &event);
	if (ret)
		fail("enabling an event", ret);
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

static void run_all_vcpus(struct guest_vm *vm, const char *when)
{
	struct tsc_sample *s;
	int i, ret;

	printf("\nGuest rdtsc %s (host TSC read just before and after each run):\n", when);
	for (i = 0; i < vm->nr_vcpus; i++) {
		s = &last_sample[i];
		ret = _guest_read_tsc(&vm->vcpus[i], s);
		if (ret)
			fail("running the guest", ret);
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
	ret = _vcpu_set_msr(vm->vcpus[1].fd, MSR_IA32_TSC, NEW_TSC);
	if (ret)
		fail("KVM_SET_MSRS(IA32_TSC)", ret);
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
	struct vcpu_state *s = &state[ev->vcpu_id % GUEST_MAX_VCPUS];

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
	struct tsc_event evs[MAX_EVENTS];
	struct guest_vm vm;
	int kvm_fd, i, nr, ret;

	if (geteuid() || !tracefs_tracing_dir())
		ksft_exit_skip("needs root and a mounted tracefs\n");
	kvm_fd = _kvm_open();
	if (kvm_fd < 0)
		ksft_exit_skip("cannot open %s: %s\n", KVM_DEV_PATH, strerror(-kvm_fd));
	create_instance();
	enable_tsc_events();

	printf("\nCreating a VM with %d vCPUs running a real-mode rdtsc loop\n", NR_VCPUS);
	ret = _guest_vm_create(&vm, kvm_fd, NR_VCPUS);
	if (ret)
		fail("creating the VM", ret);
	run_all_vcpus(&vm, "after creation");
	change_tsc(&vm);
	run_all_vcpus(&vm, "after the change");
	tracefs_trace_off(inst);

	printf("\nThe events, in host TSC order (timestamps are host TSC cycles):\n");
	nr = _trace_read_tsc_events(inst, evs, MAX_EVENTS);
	if (nr < 0)
		fail("reading the events", nr);
	for (i = 0; i < nr; i++)
		explain_event(&evs[i]);
	compare_samples(vm.nr_vcpus);

	guest_vm_destroy(&vm);
	_trace_instance_remove(inst);
	close(kvm_fd);
	return 0;
}
