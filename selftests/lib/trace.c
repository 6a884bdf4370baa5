// SPDX-License-Identifier: GPL-2.0
/*
 * trace.c: tracefs instances that record the TSC events with the host TSC
 * as clock, the events read back from them, and lookups over what was
 * read. Who removes an instance, and when, is the caller's business (the
 * tests' fixture).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

bool trace_kvm_event_exists(const char *event)
{
	const char *dir = tracefs_tracing_dir();
	char path[PATH_MAX];

	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/%s", dir, TSC_EVENT_SYSTEM, event);
	return !access(path, F_OK);
}

/* The kvm system's event formats, parsed once per process. */
static struct tep_handle *trace_kvm_formats(void)
{
	static const char * const systems[] = { TSC_EVENT_SYSTEM, NULL };
	static struct tep_handle *tep;

	if (!tep)
		tep = tracefs_local_events_system(NULL, systems);
	return tep;
}

/*
 * The fields of kvm:@event after the common ones, in the order of its
 * format file, NULL-terminated; the caller frees the array. NULL if the
 * format cannot be read.
 */
struct tep_format_field **trace_kvm_event_fields(const char *event)
{
	struct tep_handle *tep = trace_kvm_formats();
	struct tep_event *format;

	if (!tep)
		return NULL;
	format = tep_find_event_by_name(tep, TSC_EVENT_SYSTEM, event);
	return format ? tep_event_fields(format) : NULL;
}

/* Remove the instance's directory and free the handle in any case. */
int _trace_instance_remove(struct tracefs_instance *inst)
{
	int ret = tracefs_instance_destroy(inst) < 0 ? -errno : 0;

	tracefs_instance_free(inst);
	return ret;
}

struct name_match {
	bool (*match)(const char *name, void *arg);
	void *arg;
	char **names;
	int err;
};

static int collect_matching_name(const char *name, void *data)
{
	struct name_match *match = data;
	char **names;

	if (!match->match(name, match->arg))
		return 0;
	names = tracefs_list_add(match->names, name);
	if (!names) {
		match->err = -ENOMEM;
		return 1;
	}
	match->names = names;
	return 0;
}

static int remove_instance_named(const char *name)
{
	struct tracefs_instance *inst = tracefs_instance_alloc(NULL, name);

	if (!inst)
		return -errno;
	return _trace_instance_remove(inst);
}

/*
 * Remove every instance whose name @match accepts. Returns how many were
 * removed, or the first error.
 */
int _trace_remove_instances_if(bool (*match)(const char *name, void *arg), void *arg)
{
	struct name_match m = { .match = match, .arg = arg };
	int i, ret, removed = 0;

	/* Collect first: removing while tracefs lists the directory skips names. */
	if (tracefs_instances_walk(collect_matching_name, &m) < 0 && !m.err)
		m.err = -errno;
	for (i = 0; m.names && m.names[i] && !m.err; i++) {
		ret = remove_instance_named(m.names[i]);
		if (ret < 0)
			m.err = ret;
		else
			removed++;
	}
	tracefs_list_free(m.names);
	return m.err ? m.err : removed;
}

static bool has_prefix(const char *name, void *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* Remove every instance whose name starts with @prefix. */
int _trace_remove_instances(const char *prefix)
{
	return _trace_remove_instances_if(has_prefix, (void *)prefix);
}

int _trace_set_clock(struct tracefs_instance *inst, const char *clock)
{
	return tracefs_instance_file_write(inst, "trace_clock", clock) < 0 ? -errno : 0;
}

/* trace_clock lists every clock and brackets the one in use. */
bool trace_clock_is(struct tracefs_instance *inst, const char *clock)
{
	char *clocks = tracefs_instance_file_read(inst, "trace_clock", NULL);
	char selected[64];
	bool is;

	snprintf(selected, sizeof(selected), "[%s]", clock);
	is = clocks && strstr(clocks, selected);
	free(clocks);
	return is;
}

/* Record only the events that process @pid causes. */
int _trace_set_event_pid(struct tracefs_instance *inst, pid_t pid)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", pid);
	return tracefs_instance_file_write(inst, "set_event_pid", buf) < 0 ? -errno : 0;
}

int _trace_enable_event(struct tracefs_instance *inst, const char *event)
{
	return tracefs_event_enable(inst, TSC_EVENT_SYSTEM, event) < 0 ? -errno : 0;
}

/*
 * The instance @name for a TSC test: its timestamps are host TSC cycles, as
 * with `trace-cmd -C x86-tsc`, and it records only what process @pid causes,
 * so that other VMs on the host do not mix their events in. Returns 0,
 * -ENOTSUP without that clock, or another -errno with *@step naming what
 * failed; on an error nothing is left behind.
 */
int _trace_tsc_instance_create(const char *name, pid_t pid, struct tracefs_instance **inst,
			       const char **step)
{
	int ret;

	*step = "creating it";
	*inst = tracefs_instance_create(name);
	if (!*inst)
		return -errno;
	ret = _trace_set_clock(*inst, TRACE_TSC_CLOCK);
	if (ret) {
		ret = -ENOTSUP;
	} else if (!trace_clock_is(*inst, TRACE_TSC_CLOCK)) {
		*step = "reading trace_clock back";
		ret = -EINVAL;
	} else {
		*step = "writing set_event_pid";
		ret = _trace_set_event_pid(*inst, pid);
	}
	if (ret) {
		_trace_instance_remove(*inst);
		*inst = NULL;
	}
	return ret;
}

/* Enable every TSC event of the contract this kernel has; *@event on error. */
int _trace_enable_tsc_events(struct tracefs_instance *inst, const char **event)
{
	int kind, ret;

	for (kind = 0; kind < TSC_NR_KINDS; kind++) {
		*event = tsc_event_types[kind].name;
		if (!trace_kvm_event_exists(*event))
			continue;
		ret = _trace_enable_event(inst, *event);
		if (ret)
			return ret;
	}
	return 0;
}

int _trace_disable_event(struct tracefs_instance *inst, const char *event)
{
	return tracefs_event_disable(inst, TSC_EVENT_SYSTEM, event) < 0 ? -errno : 0;
}

struct event_reader {
	struct tsc_event *evs;
	int max;
	int nr;
	int err;
};

static int fill_tsc_event(struct tsc_event *ev, struct tep_event *format,
			  struct tep_record *record, enum tsc_event_kind kind)
{
	const struct tsc_event_type *type = &tsc_event_types[kind];
	unsigned long long val;
	unsigned int i;

	ev->kind = kind;
	ev->ts = record->ts;
	for (i = 0; i < type->nr_fields; i++) {
		if (tep_get_field_val(NULL, format, type->fields[i].name, record, &val, 0) < 0)
			return -ENOENT;
		tsc_event_store(ev, &type->fields[i], val);
	}
	return 0;
}

static int read_tsc_event(struct tep_event *format, struct tep_record *record, int cpu,
			  void *data)
{
	struct event_reader *reader = data;
	int kind = tsc_event_kind(format->name);

	if (kind < 0)
		return 0;
	if (reader->nr == reader->max) {
		reader->err = -ENOSPC;
		return 1;
	}
	reader->err = fill_tsc_event(&reader->evs[reader->nr++], format, record, kind);
	return reader->err;
}

/*
 * Read, and so consume, the TSC events @inst recorded since the last read,
 * oldest first: libtracefs merges the CPUs' buffers in timestamp order.
 * Returns how many were stored in @evs: -ENOSPC when more than @max came,
 * -ENOENT when an event lacks a field of the contract.
 */
int _trace_read_tsc_events(struct tracefs_instance *inst, struct tsc_event *evs, int max)
{
	struct event_reader reader = { .evs = evs, .max = max };
	struct tep_handle *tep = trace_kvm_formats();

	if (!tep)
		return -ENOENT;
	if (tracefs_iterate_raw_events(tep, inst, NULL, 0, read_tsc_event, &reader) < 0 &&
	    !reader.err)
		return -EIO;
	return reader.err ? reader.err : reader.nr;
}

/* vCPU @vcpu_id's last event of @kind among @evs, or NULL. */
const struct tsc_event *tsc_last_event(const struct tsc_event *evs, int nr,
				       enum tsc_event_kind kind, unsigned int vcpu_id)
{
	while (nr--)
		if (evs[nr].kind == kind && evs[nr].vcpu_id == vcpu_id)
			return &evs[nr];
	return NULL;
}

/* How many events of @kind among @evs are vCPU @vcpu_id's. */
int tsc_count_events(const struct tsc_event *evs, int nr, enum tsc_event_kind kind,
		     unsigned int vcpu_id)
{
	int count = 0;

	while (nr--)
		count += evs[nr].kind == kind && evs[nr].vcpu_id == vcpu_id;
	return count;
}
