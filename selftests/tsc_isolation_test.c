// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_isolation_test: the TSC events land in the dedicated instance that
 * enabled them and nowhere else: a second instance without the event, and
 * the top-level buffer, record nothing of them.
 */
#include "tsc_fixture.h"

#define NR_VCPUS	2
#define TSC_VALUE	1000000000000ULL

/* Entries in the top-level ring buffer, from per_cpu/cpuN/stats. */
static long long top_level_entries(void)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_CONF);
	char file[64], *stats, *entries;
	long long total = 0;
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

/* vCPU creation and an IA32_TSC write: one offset event each per vCPU. */
static void write_tsc(struct __test_metadata *_metadata, struct _test_data_tsc *self)
{
	int i;

	tsc_create_vm(_metadata, self, NR_VCPUS);
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(self->vcpus[i], MSR_IA32_TSC, TSC_VALUE);
}

TEST_F(tsc, dedicated_instance_records_events)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int nr;

	write_tsc(_metadata, self);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	tsc_expect_offset_events_per_vcpu(_metadata, self, evs, nr, NR_VCPUS, 2,
					  "creation, IA32_TSC");
}

TEST_F(tsc, other_instance_records_none)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	struct tracefs_instance *other;
	char name[TSC_INSTANCE_NAME_MAX + 8];
	int nr;

	/* Named after the fixture's, so that the teardown removes it too. */
	snprintf(name, sizeof(name), "%s-other", self->instance);
	other = tracefs_instance_create(name);
	ASSERT_NE(NULL, other) TH_LOG("cannot create tracefs instance %s: %s", name,
				      strerror(errno));
	write_tsc(_metadata, self);
	nr = _trace_read_tsc_events(other, evs, TSC_MAX_EVENTS);
	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONLY_ENABLING_INSTANCE, 0, nr,
			    "TSC events in %s, which enabled none", name);
}

TEST_F(tsc, top_level_records_none)
{
	const char *busy = top_level_busy();
	long long before, after;

	if (busy)
		SKIP(return, "%s", busy);
	before = top_level_entries();
	write_tsc(_metadata, self);
	after = top_level_entries();
	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONLY_ENABLING_INSTANCE, before, after,
			    "top-level buffer entries before and after the TSC writes");
}

TEST_HARNESS_MAIN
