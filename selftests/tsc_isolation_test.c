// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_isolation_test: the TSC events land in the dedicated instance that
 * enabled them and nowhere else: a second instance without the event, and
 * the top-level buffer, record nothing of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define NR_VCPUS	2
#define TSC_VALUE	1000000000000ULL

/* Entries in the top-level ring buffer, from per_cpu/cpuN/stats. */
static long long top_level_entries(void)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_CONF);
	long long total = 0;
	char file[64], *stats, *entries;
	long cpu;

	for (cpu = 0; cpu < nr_cpus; cpu++) {
		snprintf(file, sizeof(file), "per_cpu/cpu%ld/stats", cpu);
		stats = tracefs_instance_file_read(NULL, file, NULL);
		if (!stats)
			continue;
		entries = strstr(stats, "entries: ");
		if (entries)
			total += atoll(entries + strlen("entries: "));
		free(stats);
	}
	return total;
}

/* Others may be tracing at the top level; then its count says nothing. */
static const char *top_level_busy(void)
{
	char *events = tracefs_instance_file_read(NULL, "set_event", NULL);
	char *tracer = tracefs_instance_file_read(NULL, "current_tracer", NULL);
	const char *busy = NULL;

	if (events && events[0])
		busy = "events are enabled at the top level";
	else if (tracer && strcmp(tracer, "nop\n"))
		busy = "a tracer runs at the top level";
	free(events);
	free(tracer);
	return busy;
}

static void write_tsc(int kvm_fd)
{
	int vcpu_fds[NR_VCPUS], vm_fd, i;

	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	for (i = 0; i < NR_VCPUS; i++) {
		vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, TSC_VALUE);
		close(vcpu_fds[i]);
	}
	close(vm_fd);
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst, *other;
	const char *busy;
	long long before;
	int nr;

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	inst = trace_instance_create("isolation");
	other = trace_instance_create("isolation-other");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	busy = top_level_busy();
	tap_plan(3);

	before = top_level_entries();
	write_tsc(kvm_fd);
	nr = trace_count_tsc_events(inst);
	/* Creation and IA32_TSC write one offset each per vCPU. */
	tap_ok(tap_check_u64(2 * NR_VCPUS, nr, "events in the dedicated instance"),
	       "the dedicated instance records the events");
	tap_ok(tap_check_u64(0, trace_count_tsc_events(other), "events in the other instance"),
	       "an instance without the event enabled records none");
	if (busy)
		tap_skip(busy, "the top-level buffer records none");
	else
		tap_ok(tap_check_u64(before, top_level_entries(), "top-level buffer entries"),
		       "the top-level buffer records none");

	trace_instance_remove(other);
	trace_instance_remove(inst);
	return tap_finish();
}
