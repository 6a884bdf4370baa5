/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc_fixture.h: the kselftest_harness fixture of the TSC tests, which owns
 * a tracefs instance recording the test's TSC events with the host TSC as
 * clock and the test's VM (from the KVM selftest library), and the
 * asserting helpers the tests share. Include it from the one source file
 * of a test program.
 *
 * Who removes the instance, however the test ends: with 6.12's harness a
 * TEST_F runs in a grandchild of the harness process; its parent runs
 * FIXTURE_TEARDOWN_PARENT once it has ended, whether it returned, failed
 * an assertion (abort()) or was killed. At a test's timeout the harness
 * SIGKILLs that parent too (kill(-pgrp) in __timeout_handler), so nothing
 * of the test runs any more: the harness process removes what is left when
 * it exits. Instances are named after the harness process for that.
 */
#ifndef KTT_TSC_FIXTURE_H
#define KTT_TSC_FIXTURE_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "kvm_util.h"
#include "processor.h"

#include "kvm_dev.h"
#include "trace.h"
#include "tsc_guest.h"

/* ktt-<harness pid>-<test pid>[-more], so that the harness finds them. */
#define TSC_INSTANCE_PREFIX_FMT	"ktt-%d-"
#define TSC_INSTANCE_FMT	TSC_INSTANCE_PREFIX_FMT "%d"
#define TSC_INSTANCE_NAME_MAX	64
#define TSC_MAX_EVENTS		64
#define TSC_MAX_VCPUS		8

/*
 * The reason of the skip of a test that needs an event the kernel lacks:
 * only upstream's kvm_write_tsc_offset is in a stock kernel.
 */
#define TSC_MISSING_EVENT \
	"the kernel has no kvm:%s event: the kvm-tsc-trace series adds it (a patched kernel or its KVM modules)"
#define TSC_NO_SCALING "the host has no TSC scaling (KVM_CAP_TSC_CONTROL)"

/*
 * The rules of the event contract (the series'
 * Documentation/virt/kvm/x86/tsc-tracepoints.rst) that the tests check on
 * what the events report, each written once: a failed check names the
 * rule, so that its reader knows what broke, not only which numbers.
 */
enum tsc_rule {
	TSC_RULE_ONE_EVENT_PER_WRITE,
	TSC_RULE_PREVIOUS,
	TSC_RULE_NEXT,
	TSC_RULE_SYNC,
	TSC_RULE_MULTIPLIER_AT_CREATION,
	TSC_RULE_FRAC_BITS,
	TSC_RULE_TSC_KHZ_RATIO,
	TSC_RULE_FORMULA,
	TSC_RULE_ONLY_ENABLING_INSTANCE,
	TSC_RULE_NO_WRITE_NO_EVENT,
	TSC_RULE_STATE_IS_LAST_NEXT,
	TSC_RULE_OFFSET_FORMAT_UNCHANGED,
	TSC_RULE_CONTRACT_FIELDS,
	TSC_NR_RULES
};

static const char *const tsc_rules[TSC_NR_RULES] = {
	[TSC_RULE_ONE_EVENT_PER_WRITE] =
		"each write of a vCPU's L1 offset or multiplier (its creation, IA32_TSC, KVM_VCPU_TSC_OFFSET, KVM_SET_TSC_KHZ) fires one event with that vCPU's id",
	[TSC_RULE_PREVIOUS] =
		"previous is the value in force just before the change: the vCPU's last next, so that a consumer can chain its events",
	[TSC_RULE_NEXT] =
		"next is the value in force after the change: what KVM applies, and reports, from then on",
	[TSC_RULE_SYNC] =
		"next is the offset KVM applies: vCPUs whose TSCs KVM synchronized report one offset",
	[TSC_RULE_MULTIPLIER_AT_CREATION] =
		"vCPU creation writes the default multiplier: previous_tsc_multiplier 0, next 1 << frac_bits",
	[TSC_RULE_FRAC_BITS] =
		"frac_bits is the vendor's: 48 on Intel, 32 on AMD",
	[TSC_RULE_TSC_KHZ_RATIO] =
		"KVM_SET_TSC_KHZ writes the ratio KVM computes, (1 << frac_bits) * guest kHz / host kHz",
	[TSC_RULE_FORMULA] =
		"guest_tsc = ((host_tsc * multiplier) >> frac_bits) + offset, with the next values of the vCPU's last events",
	[TSC_RULE_ONLY_ENABLING_INSTANCE] =
		"an event is recorded only where it is enabled: in the instance that enabled it, not in another one nor the top level",
	[TSC_RULE_NO_WRITE_NO_EVENT] =
		"an event records a change of the offset: a request that KVM refuses changes nothing and records none",
	[TSC_RULE_STATE_IS_LAST_NEXT] =
		"a vCPU's state is the next values of its last events, rebuilt in order",
	[TSC_RULE_OFFSET_FORMAT_UNCHANGED] =
		"kvm_write_tsc_offset's format file stays byte-identical to unpatched 6.12's, but for its ID: line",
	[TSC_RULE_CONTRACT_FIELDS] =
		"each event has the contract's fields (include/tsc_event_names.h), in order, with their sizes, unsigned",
};

/* TH_LOG() of @fmt, then the contract's @rule that the failed check checks. */
#define TSC_LOG_RULE(rule, fmt, ...)							\
	TH_LOG(fmt " (contract: %s)", ##__VA_ARGS__, tsc_rules[rule])

/*
 * EXPECT_EQ(@expected, @seen) on what the events reported, @what (a printf
 * format and its arguments) naming the value: a failure prints, in one
 * line, the value expected, the one that came, and @rule. On a failure
 * @expected and @seen are evaluated again: no side effects in them.
 */
#define TSC_EXPECT_EVENT_EQ(rule, expected, seen, what, ...)				\
	EXPECT_EQ(expected, seen)							\
		TSC_LOG_RULE(rule, what ": expected %lld (%#llx), got %lld (%#llx)",		\
			     ##__VA_ARGS__, (long long)(expected), (unsigned long long)(expected), \
			     (long long)(seen), (unsigned long long)(seen))

/* ASSERT_NE(NULL, @ev), the event that @rule says must be there. */
#define TSC_ASSERT_EVENT(rule, ev, what, ...)						\
	ASSERT_NE(NULL, ev) TSC_LOG_RULE(rule, "no " what, ##__VA_ARGS__)

/*
 * The project's test VMs boot the kernel with the series applied and run
 * the suite with KTT_TEST_KERNEL=1 in the environment: there, what the
 * series adds must be present, and its absence fails a test that skips on
 * any other kernel.
 */
static inline bool tsc_on_test_kernel(void)
{
	const char *value = getenv("KTT_TEST_KERNEL");

	return value && !strcmp(value, "1");
}

/* Whether the kernel lacks kvm:@event; on the test kernel, a failure. */
static inline bool tsc_event_missing(struct __test_metadata *_metadata, const char *event)
{
	bool missing = !trace_kvm_event_exists(event);

	ASSERT_FALSE(missing && tsc_on_test_kernel())
		TH_LOG("the test kernel has no kvm:%s event", event);
	return missing;
}

/* Why this process cannot use tracefs instances, or NULL. */
static inline const char *tsc_tracefs_unusable(void)
{
	if (geteuid())
		return "not root: tracefs instances need root";
	if (!tracefs_tracing_dir())
		return "tracefs is not mounted";
	return NULL;
}

/*
 * Why this test cannot record kvm:@event here, or NULL: no usable tracefs,
 * or a kernel without the event (which fails on the test kernel instead).
 */
static inline const char *tsc_event_unusable(struct __test_metadata *_metadata,
					     const char *event)
{
	static char reason[192];
	const char *unusable = tsc_tracefs_unusable();

	if (unusable)
		return unusable;
	if (!tsc_event_missing(_metadata, event))
		return NULL;
	snprintf(reason, sizeof(reason), TSC_MISSING_EVENT, event);
	return reason;
}

/* "kvm_intel" or "kvm_amd", whichever is loaded (or built in), else NULL. */
static inline const char *kvm_vendor_module(void)
{
	if (!access("/sys/module/kvm_intel", F_OK))
		return "kvm_intel";
	if (!access("/sys/module/kvm_amd", F_OK))
		return "kvm_amd";
	return NULL;
}

/* The process that runs the harness: tests run in its descendants. */
static pid_t tsc_harness_pid;

/*
 * An instance of this naming whose harness process is gone: a harness
 * killed with SIGKILL runs no destructor. A live process's instance, or
 * one of another naming, is never stale.
 */
static inline bool tsc_instance_is_stale(const char *name, void *unused)
{
	int harness_pid, test_pid, len = 0;

	if (sscanf(name, TSC_INSTANCE_FMT "%n", &harness_pid, &test_pid, &len) != 2 ||
	    name[len] || harness_pid <= 0)
		return false;
	return kill(harness_pid, 0) && errno == ESRCH;
}

/*
 * At the start of a run, what an earlier run killed with SIGKILL left; no
 * tracefs (not root) leaves nothing to do, which the tests report.
 */
static void __attribute__((constructor)) tsc_record_harness_pid(void)
{
	tsc_harness_pid = getpid();
	_trace_remove_instances_if(tsc_instance_is_stale, NULL);
}

/* Remove every instance that a test of this harness run created. */
static inline int tsc_remove_instances(void)
{
	char prefix[TSC_INSTANCE_NAME_MAX];

	snprintf(prefix, sizeof(prefix), TSC_INSTANCE_PREFIX_FMT, tsc_harness_pid);
	return _trace_remove_instances(prefix);
}

/* For the harness process only: a test's own exit must not take instances. */
static void __attribute__((destructor)) tsc_remove_left_instances(void)
{
	if (getpid() == tsc_harness_pid)
		tsc_remove_instances();
}

/*
 * The helpers below name this FIXTURE_DATA(tsc) as struct _test_data_tsc,
 * which checkpatch does not mistake for a multiplication. Not the KVM
 * library's KVM_ONE_VCPU_TEST_SUITE: its setup creates the VM, while here
 * the instance must record before the VM exists, and tests choose how
 * many vCPUs it has.
 */
FIXTURE(tsc) {
	/* TSC_INSTANCE_FMT: instances named after it go with it. */
	char instance[TSC_INSTANCE_NAME_MAX];
	/* The test process's own: its fds close, and so its VM goes, when it ends. */
	struct tracefs_instance *inst;
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpus[TSC_MAX_VCPUS];
};

FIXTURE_SETUP(tsc)
{
	const char *what, *unusable = tsc_event_unusable(_metadata, TSC_OFFSET_EVENT);
	int ret;

	if (unusable)
		SKIP(return, "%s", unusable);
	ret = kvm_dev_errno();
	if (ret)
		SKIP(return, KVM_DEV_UNUSABLE, strerror(ret));

	snprintf(self->instance, sizeof(self->instance), TSC_INSTANCE_FMT,
		 tsc_harness_pid, getpid());
	ret = _trace_tsc_instance_create(self->instance, getpid(), &self->inst, &what);
	if (ret == -ENOTSUP)
		SKIP(return, "trace clock %s is not available", TRACE_TSC_CLOCK);
	ASSERT_EQ(0, ret) TH_LOG("tracefs instance %s: %s: %s", self->instance, what,
				 strerror(-ret));
	ret = _trace_enable_tsc_events(self->inst, &what);
	ASSERT_EQ(0, ret) TH_LOG("cannot enable kvm:%s in %s: %s", what, self->instance,
				 strerror(-ret));
}

/*
 * Every instance of this harness run, not only the test's: tests run one
 * at a time, so another one is what a test killed at its timeout left.
 */
FIXTURE_TEARDOWN_PARENT(tsc)
{
	int ret = tsc_remove_instances();

	EXPECT_LE(0, ret) TH_LOG("cannot remove the instances of this run: %s",
				 strerror(-ret));
}

/* The test's VM: vCPUs 0..@nr_vcpus - 1, each ready to run the rdtsc guest. */
static inline void tsc_create_vm(struct __test_metadata *_metadata,
				 struct _test_data_tsc *self, int nr_vcpus)
{
	ASSERT_GE(TSC_MAX_VCPUS, nr_vcpus);
	self->vm = vm_create_with_vcpus(nr_vcpus, tsc_guest_code, self->vcpus);
}

/* KVM_SET_TSC_KHZ to half the host's rate, in @host_khz; returns the guest's. */
static inline int tsc_set_half_khz(struct __test_metadata *_metadata, struct kvm_vcpu *vcpu,
				   int *host_khz)
{
	int guest_khz;

	*host_khz = __vcpu_ioctl(vcpu, KVM_GET_TSC_KHZ, NULL);
	ASSERT_LT(0, *host_khz) TH_LOG("KVM_GET_TSC_KHZ: %s", strerror(errno));
	guest_khz = *host_khz / 2;
	ASSERT_EQ(0, __vcpu_ioctl(vcpu, KVM_SET_TSC_KHZ, (void *)(unsigned long)guest_khz))
		TH_LOG("KVM_SET_TSC_KHZ(%d): %s", guest_khz, strerror(errno));
	return guest_khz;
}

/* The TSC events recorded since the last read, oldest first; consumes them. */
static inline int tsc_read_events(struct __test_metadata *_metadata,
				  struct _test_data_tsc *self, struct tsc_event *evs, int max)
{
	int nr = _trace_read_tsc_events(self->inst, evs, max);

	ASSERT_LE(0, nr) TH_LOG("cannot read the TSC events of %s: %s", self->instance,
				strerror(-nr));
	return nr;
}

/*
 * Each of vCPUs 0..@nr_vcpus - 1 has @expected kvm_write_tsc_offset events
 * in @evs, one for each of the writes @writes names.
 */
static inline void tsc_expect_offset_events_per_vcpu(struct __test_metadata *_metadata,
						     struct _test_data_tsc *self,
						     const struct tsc_event *evs, int nr,
						     int nr_vcpus, int expected,
						     const char *writes)
{
	int i;

	for (i = 0; i < nr_vcpus; i++)
		TSC_EXPECT_EVENT_EQ(TSC_RULE_ONE_EVENT_PER_WRITE, expected,
				    tsc_count_events(evs, nr, TSC_OFFSET, i),
				    "kvm_write_tsc_offset events of vCPU %d (%s) in %s",
				    i, writes, self->instance);
}

/*
 * tsc_create_vm() with one vCPU for a test of KVM_VCPU_TSC_OFFSET, which
 * skips where KVM lacks it: returns the number of the creation's events,
 * read into @evs (TSC_MAX_EVENTS of them; NULL drops them), or -1 after
 * the skip.
 */
static inline int tsc_create_vm_with_offset_attr(struct __test_metadata *_metadata,
						 struct _test_data_tsc *self,
						 struct tsc_event *evs)
{
	struct tsc_event dropped[TSC_MAX_EVENTS];

	tsc_create_vm(_metadata, self, 1);
	if (!vcpu_has_tsc_offset_attr(self->vcpus[0]))
		SKIP(return -1, "KVM has no KVM_VCPU_TSC_OFFSET attribute");
	return tsc_read_events(_metadata, self, evs ?: dropped, TSC_MAX_EVENTS);
}

#endif
