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

	for (i = 0; dir && i < MAX_INSTANCES; i++) {
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

/* The instance records with the host TSC as clock, like `trace-cmd -C x86-tsc`. */
struct tracefs_instance *trace_instance_create(const char *label)
{
	struct tracefs_instance *inst;
	char name[64];
	char *clock;

	if (!tracefs_tracing_dir())
		tap_skip_all("tracefs is not mounted");
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

int _trace_kvm_event_enable(struct tracefs_instance *inst, const char *event)
{
	return tracefs_event_enable(inst, "kvm", event) < 0 ? -errno : 0;
}

void trace_kvm_event_enable(struct tracefs_instance *inst, const char *event)
{
	int ret = _trace_kvm_event_enable(inst, event);

	if (ret < 0)
		tap_bail_out("cannot enable kvm:%s in %s: %s", event,
			     tracefs_instance_get_name(inst), strerror(-ret));
}

struct tep_handle *trace_kvm_events(void)
{
	static const char * const systems[] = { "kvm", NULL };
	struct tep_handle *tep = tracefs_local_events_system(NULL, systems);

	if (!tep)
		tap_bail_out("cannot load the kvm event formats from tracefs");
	return tep;
}

struct iterate_ctx {
	trace_event_fn fn;
	void *ctx;
};

static int call_event_fn(struct tep_event *event, struct tep_record *record,
			 int cpu, void *data)
{
	struct iterate_ctx *it = data;

	return it->fn(event, record, it->ctx);
}

/* Events come in timestamp order across CPUs; fn returns non-zero to stop. */
int trace_for_each_event(struct tracefs_instance *inst, struct tep_handle *tep,
			 trace_event_fn fn, void *ctx)
{
	struct iterate_ctx it = { .fn = fn, .ctx = ctx };

	return tracefs_iterate_raw_events(tep, inst, NULL, 0, call_event_fn, &it);
}

uint64_t trace_field(struct tep_event *event, struct tep_record *record,
		     const char *name)
{
	unsigned long long val;

	if (tep_get_field_val(NULL, event, name, record, &val, 0) < 0)
		tap_bail_out("event %s has no field %s", event->name, name);
	return val;
}
