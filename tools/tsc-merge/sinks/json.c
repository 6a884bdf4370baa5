// SPDX-License-Identifier: GPL-2.0
/*
 * json.c: the Chrome trace-event JSON sink, for the Perfetto UI and
 * chrome://tracing: a process per VM with a track per vCPU carrying its
 * guest's events, and the host's threads with an "in guest" slice from
 * each kvm_entry to its kvm_exit. Written as the merge goes; the names of
 * the processes and threads follow at the end.
 */
#include <stdlib.h>

#include "sinks/sinks.h"

/* VM processes get ids no host pid has (pid_max is at most 2^22). */
#define VM_PID_BASE (1 << 30)

static int guest_process_id(const struct sink_guest *g)
{
	return VM_PID_BASE + (int)g->slot;
}

/* A host thread that logged events, named at the end. */
struct thread {
	int tid;
	int pid;
	const char *comm;
	const char *process_comm;
};

struct json_sink {
	struct sink_out o;
	uint64_t base;
	bool started;
	struct thread *seen;
	unsigned int nr_seen;
	size_t alloc_seen;
	struct key_set threads;		/* @seen's, by tid and pid */
	uint64_t last;			/* the key of the last thread met */
};

void *json_sink_new(const struct sink_out *o)
{
	struct json_sink *j = xcalloc(1, sizeof(*j));

	j->o = *o;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", o->f);
	return j;
}

static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x80)
			/* Trace text need not be UTF-8: bytes as Latin-1. */
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* Microseconds from the first event, exact to the nanosecond. */
static void put_ts(struct json_sink *j, uint64_t tsc)
{
	unsigned __int128 ns = tsc_to_ns(tsc - j->base, j->o.tsc_khz);

	fprintf(j->o.f, "\"ts\":%llu.%03llu", (unsigned long long)(ns / 1000),
		(unsigned long long)(ns % 1000));
}

/*
 * Each host thread once, in the order met, by thread and process (a tid
 * reused by another process is another thread): a busy host has thousands.
 */
static void remember_thread(struct json_sink *j, const struct sink_event *e)
{
	uint64_t key = (uint64_t)(uint32_t)e->pid << 32 | (uint32_t)e->tgid;

	/* Mostly the same thread as the event before. */
	if (j->nr_seen && key == j->last)
		return;
	j->last = key;
	if (!key_set_add(&j->threads, key))
		return;
	j->seen = xgrow(j->seen, j->nr_seen, &j->alloc_seen, sizeof(*j->seen));
	j->seen[j->nr_seen++] = (struct thread){ e->pid, e->tgid, e->comm, e->process_comm };
}

static void begin_event(struct json_sink *j, const char *ph, const char *name,
			int pid, int tid, uint64_t tsc)
{
	if (j->started)
		fputs(",\n", j->o.f);
	j->started = true;
	fprintf(j->o.f, "{\"ph\":\"%s\",\"name\":", ph);
	put_string(j->o.f, name);
	fprintf(j->o.f, ",\"pid\":%d,\"tid\":%d,", pid, tid);
	put_ts(j, tsc);
}

static void put_info(struct json_sink *j, const struct sink_event *e)
{
	unsigned int len;
	const char *info = sink_event_text(e, &len);

	fputs(",\"args\":{\"info\":", j->o.f);
	put_string(j->o.f, info);
	if (e->machine)
		fprintf(j->o.f, ",\"guest_tsc\":%llu%s%s", (unsigned long long)e->guest_ts,
			e->outside ? ",\"outside_host_run\":true" : "",
			e->ambiguous ? ",\"ambiguous_step\":true" : "");
	fputs("}}", j->o.f);
}

static void host_event(struct json_sink *j, const struct sink_event *e)
{
	int tid = e->pid, pid = e->tgid;

	remember_thread(j, e);
	/* Slices of the host threads: the state LTTV drew as VIRT. */
	if (e->kvm == SINK_KVM_ENTRY) {
		begin_event(j, "B", "in guest", pid, tid, e->host_ts);
		fprintf(j->o.f, ",\"args\":{\"vcpu\":%u}}", e->vcpu->id);
	}
	/* A trace that begins inside a run has no "B" for its first exit. */
	if (e->kvm == SINK_KVM_EXIT && e->was_running) {
		begin_event(j, "E", "in guest", pid, tid, e->host_ts);
		fputc('}', j->o.f);
	}
	begin_event(j, "i", e->name, pid, tid, e->host_ts);
	fputs(",\"s\":\"t\"", j->o.f);
	put_info(j, e);
}

static void json_event(void *priv, const struct sink_event *e)
{
	struct json_sink *j = priv;

	if (!j->started)
		j->base = e->host_ts;
	if (!e->machine) {
		host_event(j, e);
		return;
	}
	begin_event(j, "i", e->name, guest_process_id(&j->o.desc->guests[e->machine - 1]),
		    e->cpu, e->host_ts);
	fputs(",\"s\":\"t\"", j->o.f);
	put_info(j, e);
}

static void put_name(struct json_sink *j, const char *kind, int pid, int tid,
		     const char *name)
{
	fprintf(j->o.f, ",\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
		kind, pid, tid);
	put_string(j->o.f, name);
	fputs("}}", j->o.f);
}

static int by_slot(const void *a, const void *b)
{
	const struct sink_guest *const *x = a, *const *y = b;

	return (*x)->slot < (*y)->slot ? -1 : (*x)->slot > (*y)->slot;
}

/* In VM order, a VM's L1 guest before its L2. */
static void name_guests(struct json_sink *j)
{
	int i, n = j->o.desc->nr_guests;
	const struct sink_guest **order = xcalloc(n + 1, sizeof(*order));
	unsigned int c;
	char buf[32];

	for (i = 0; i < n; i++)
		order[i] = &j->o.desc->guests[i];
	qsort(order, n, sizeof(*order), by_slot);
	for (i = 0; i < n; i++) {
		const struct sink_guest *g = order[i];

		put_name(j, "process_name", guest_process_id(g), 0, g->label);
		for (c = 0; c < (unsigned int)g->nr_cpus; c++) {
			snprintf(buf, sizeof(buf), "vCPU %u", c);
			put_name(j, "thread_name", guest_process_id(g), c, buf);
		}
	}
	free(order);
}

static void name_host_threads(struct json_sink *j)
{
	unsigned int i;
	char buf[64];

	for (i = 0; i < j->nr_seen; i++) {
		const struct thread *th = &j->seen[i];

		put_name(j, "thread_name", th->pid, th->tid, th->comm);
		snprintf(buf, sizeof(buf), "host: %s", th->process_comm);
		put_name(j, "process_name", th->pid, 0, buf);
	}
}

static void json_finish(void *priv)
{
	struct json_sink *j = priv;

	if (j->started) {
		name_guests(j);
		name_host_threads(j);
	}
	fputs("\n]}\n", j->o.f);
	free(j->seen);
	key_set_free(&j->threads);
	free(j);
}

const struct sink_ops json_sink_ops = {
	.event = json_event,
	.finish = json_finish,
	.tasks = true,
};
