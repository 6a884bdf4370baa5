// SPDX-License-Identifier: GPL-2.0
/*
 * trace.c: dedicated tracefs instances for the selftests. Each instance is
 * removed by trace_instance_remove(), and also at exit and on SIGINT/SIGTERM
 * so that a failing or interrupted test leaves no instance behind.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "trace.h"

#define MAX_INSTANCES 8

/* Directories kept as plain paths: the signal handler may only rmdir(). */
static char instance_dirs[MAX_INSTANCES][PATH_MAX];
static struct tracefs_instance *instances[MAX_INSTANCES];

static void remove_all_instances(void)
{
	int i;

	for (i = 0; i < MAX_INSTANCES; i++)
		if (instances[i])
			trace_instance_remove(instances[i]);
}

static void remove_instances_on_signal(int sig)
{
	int i;

	for (i = 0; i < MAX_INSTANCES; i++)
		if (instance_dirs[i][0])
			rmdir(instance_dirs[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_cleanup(void)
{
	static bool installed;

	if (installed)
		return;
	installed = true;
	atexit(remove_all_instances);
	signal(SIGINT, remove_instances_on_signal);
	signal(SIGTERM, remove_instances_on_signal);
}

static void remember_instance(struct tracefs_instance *inst)
{
	char *dir = tracefs_instance_get_dir(inst);
	int i;

	if (!dir) {
		tracefs_instance_destroy(inst);
		tap_bail_out("no directory for tracefs instance %s", tracefs_instance_get_name(inst));
	}
	for (i = 0; i < MAX_INSTANCES; i++) {
		if (instances[i])
			continue;
		snprintf(instance_dirs[i], PATH_MAX, "%s", dir);
		instances[i] = inst;
		tracefs_put_tracing_file(dir);
		return;
	}
	tracefs_put_tracing_file(dir);
	tracefs_instance_destroy(inst);
	tap_bail_out("more than %d tracefs instances in one test", MAX_INSTANCES);
}

bool trace_kvm_event_exists(const char *event)
{
	char path[PATH_MAX];
	const char *dir = tracefs_tracing_dir();

	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/events/kvm/%s", dir, event);
	return access(path, F_OK) == 0;
}

/* Root and a mounted tracefs, or the whole test is a skip. */
void trace_require_tracefs(void)
{
	if (geteuid())
		tap_skip_all("not root: tracefs instances need root");
	if (!tracefs_tracing_dir())
		tap_skip_all("tracefs is not mounted");
}

/* The event is this kernel's, or the whole test is a skip. */
void trace_require_kvm_event(const char *event)
{
	trace_require_tracefs();
	if (!trace_kvm_event_exists(event))
		tap_skip_all("the kernel has no kvm:%s event", event);
}

/*
 * The instance records with the host TSC as clock, like `trace-cmd -C
 * x86-tsc`, and only this process's events, so that other VMs on the host
 * do not mix with the test's.
 */
struct tracefs_instance *trace_instance_create(const char *label)
{
	struct tracefs_instance *inst;
	char name[64];
	char *clock;

	trace_require_tracefs();
	install_cleanup();
	snprintf(name, sizeof(name), "ktt-%s-%d", label, getpid());
	inst = tracefs_instance_create(name);
	if (!inst)
		tap_bail_out("cannot create tracefs instance %s: %s", name, strerror(errno));
	remember_instance(inst);
	if (tracefs_instance_file_write(inst, "trace_clock", "x86-tsc") < 0) {
		trace_instance_remove(inst);
		tap_skip_all("trace clock x86-tsc is not available");
	}
	clock = tracefs_instance_file_read(inst, "trace_clock", NULL);
	if (!clock || !strstr(clock, "[x86-tsc]"))
		tap_bail_out("instance %s: trace_clock is '%s', expected x86-tsc", name,
			     clock ? clock : "unreadable");
	free(clock);
	snprintf(name, sizeof(name), "%d", getpid());
	if (tracefs_instance_file_write(inst, "set_event_pid", name) < 0)
		tap_bail_out("instance %s: cannot write set_event_pid: %s",
			     tracefs_instance_get_name(inst), strerror(errno));
	return inst;
}

void trace_instance_remove(struct tracefs_instance *inst)
{
	int i;

	for (i = 0; i < MAX_INSTANCES; i++) {
		if (instances[i] != inst)
			continue;
		instances[i] = NULL;
		instance_dirs[i][0] = '\0';
	}
	if (tracefs_instance_destroy(inst) < 0)
		tap_diag("cannot remove tracefs instance %s: %s",
			 tracefs_instance_get_name(inst), strerror(errno));
	tracefs_instance_free(inst);
}

void trace_kvm_event_enable(struct tracefs_instance *inst, const char *event)
{
	if (tracefs_event_enable(inst, "kvm", event) < 0)
		tap_bail_out("cannot enable kvm:%s in %s: %s", event,
			     tracefs_instance_get_name(inst), strerror(errno));
}

/* The kvm system's event formats, loaded once per process. */
static struct tep_handle *trace_kvm_events(void)
{
	static const char * const systems[] = { "kvm", NULL };
	static struct tep_handle *tep;

	if (!tep)
		tep = tracefs_local_events_system(NULL, systems);
	if (!tep)
		tap_bail_out("cannot load the kvm event formats from tracefs");
	return tep;
}

static uint64_t trace_field(struct tep_event *event, struct tep_record *record,
			    const char *name)
{
	unsigned long long val;

	if (tep_get_field_val(NULL, event, name, record, &val, 0) < 0)
		tap_bail_out("event %s has no field %s", event->name, name);
	return val;
}

struct collect_ctx {
	struct tsc_event *evs;
	int max;
	int nr;
	const char *instance;
};

static void fill_tsc_event(struct tsc_event *ev, struct tep_event *event,
			   struct tep_record *record)
{
	ev->ts = record->ts;
	ev->vcpu_id = trace_field(event, record, "vcpu_id");
	if (!strcmp(event->name, TSC_MULTIPLIER_EVENT)) {
		ev->kind = TSC_MULTIPLIER;
		ev->prev = trace_field(event, record, "previous_tsc_multiplier");
		ev->next = trace_field(event, record, "next_tsc_multiplier");
		ev->frac_bits = trace_field(event, record, "frac_bits");
		return;
	}
	ev->kind = strcmp(event->name, NESTED_TSC_EVENT) ? TSC_OFFSET : TSC_NESTED;
	ev->prev = trace_field(event, record, "previous_tsc_offset");
	ev->next = trace_field(event, record, "next_tsc_offset");
	if (ev->kind == TSC_NESTED) {
		ev->multiplier = trace_field(event, record, "tsc_multiplier");
		ev->guest_mode = trace_field(event, record, "guest_mode");
	}
}

static int collect_tsc_event(struct tep_event *event, struct tep_record *record, int cpu,
			     void *data)
{
	struct collect_ctx *c = data;

	if (strcmp(event->name, TSC_OFFSET_EVENT) && strcmp(event->name, TSC_MULTIPLIER_EVENT) &&
	    strcmp(event->name, NESTED_TSC_EVENT))
		return 0;
	if (c->nr == c->max)
		tap_bail_out("more than %d TSC events in instance %s", c->max, c->instance);
	fill_tsc_event(&c->evs[c->nr++], event, record);
	return 0;
}

/*
 * Read, and so consume, the TSC events recorded in @inst since the last
 * read, oldest first. Returns how many were stored in @evs.
 */
int trace_read_tsc_events(struct tracefs_instance *inst, struct tsc_event *evs, int max)
{
	struct collect_ctx c = {
		.evs = evs, .max = max, .instance = tracefs_instance_get_name(inst),
	};

	/* libtracefs merges the CPUs' buffers in timestamp order. */
	if (tracefs_iterate_raw_events(trace_kvm_events(), inst, NULL, 0, collect_tsc_event, &c) < 0)
		tap_bail_out("cannot read the events of instance %s", c.instance);
	return c.nr;
}

/* How many TSC events @inst recorded since the last read; consumes them. */
int trace_count_tsc_events(struct tracefs_instance *inst)
{
	struct tsc_event evs[256];

	return trace_read_tsc_events(inst, evs, 256);
}

const struct tsc_event *tsc_last_event(const struct tsc_event *evs, int nr,
				       enum tsc_event_kind kind, unsigned int vcpu_id)
{
	while (nr--)
		if (evs[nr].kind == kind && evs[nr].vcpu_id == vcpu_id)
			return &evs[nr];
	return NULL;
}

int tsc_count_events(const struct tsc_event *evs, int nr, enum tsc_event_kind kind,
		     unsigned int vcpu_id)
{
	int count = 0;

	while (nr--)
		count += evs[nr].kind == kind && evs[nr].vcpu_id == vcpu_id;
	return count;
}
