// SPDX-License-Identifier: GPL-2.0
/*
 * merge.c: the second pass: a k-way merge of every CPU of every input by
 * host time. It holds one record per CPU stream, so memory grows with the
 * number of CPUs, not with the length of the traces. Guest events are
 * converted as they are read and checked against the host run intervals
 * the merge has reached, and against trace-cmd's own time sync.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "merge/merge.h"
#include "progress.h"
#include "tracecmd-private.h"

/* A task as the sinks name it; @comm NULL: none looked up yet. */
struct task {
	int pid;
	const char *comm;
	int tgid;			/* the host's: its process */
	uint64_t tgid_until;		/* host TSC where @tgid may change */
	const char *process_comm;
};

struct stream {
	const char *path;
	struct tracecmd_input *handle;
	struct tep_handle *tep;
	struct td_common common;	/* @tep's common fields, recent events */
	struct td_release release;	/* the file's pages read past */
	int cpu;
	struct guest *guest;		/* NULL for the host */
	struct vcpu *vcpu;
	struct guest_cursor cursor;
	struct guest_cursor l2_cursor;	/* an L1 guest's events tried as L2's */
	struct tep_record *rec;
	uint64_t next_offset;		/* for record_repeats() */
	uint64_t key;			/* host time of @rec */
	struct conversion conv;		/* how @key was found */
	unsigned int order;		/* breaks ties: host streams first */
	struct task task;		/* of its last event */
	/*
	 * What its events tell the sinks alike: machine, CPU and a guest's
	 * vCPU. Each event starts as a copy, which costs less than zeroing
	 * a new one.
	 */
	struct sink_event shared;
};

struct merge {
	struct stream *streams;
	struct stream **heap;
	unsigned int nr_streams;
	unsigned int nr_heap;
	struct host_events he;
	struct vm_table *vms;
	struct guest *guests;		/* guest n is machine 1 + n */
	const struct sink_desc *desc;
	struct info_cache *info;
	struct field_buf *fields;
	bool tasks;			/* a sink shows tasks: look them up */
	struct merge_stats *stats;
	uint64_t last_key;
	uint64_t host_first;		/* runs are known from here on */
};

static bool before(const struct stream *a, const struct stream *b)
{
	return a->key < b->key || (a->key == b->key && a->order < b->order);
}

static void sift_down(struct merge *m, unsigned int i)
{
	for (;;) {
		unsigned int l = 2 * i + 1, r = l + 1, min = i;
		struct stream *tmp;

		if (l < m->nr_heap && before(m->heap[l], m->heap[min]))
			min = l;
		if (r < m->nr_heap && before(m->heap[r], m->heap[min]))
			min = r;
		if (min == i)
			return;
		tmp = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = tmp;
		i = min;
	}
}

static void build_heap(struct merge *m)
{
	unsigned int i;

	for (i = m->nr_heap / 2; i--; )
		sift_down(m, i);
}

/* Read the stream's next record and give it its host time; -1: bad input. */
static int advance(struct stream *s, bool first)
{
	if (s->rec)
		tracecmd_free_record(s->rec);
	s->rec = first ? tracecmd_read_cpu_first(s->handle, s->cpu) :
			 tracecmd_read_data(s->handle, s->cpu);
	if (!s->rec)
		return 0;
	td_release_behind(&s->release, s->rec);
	if (record_repeats(&s->next_offset, s->rec, s->path, s->cpu))
		return -1;
	if (!s->guest) {
		s->key = s->rec->ts;
		return 0;
	}
	if (!s->vcpu || !convert_guest_ts(s->vcpu, &s->cursor, s->rec->ts, &s->conv)) {
		fprintf(stderr, "%s: CPU %d has an event at guest TSC %llu that no TSC step of vCPU %d of VM @%d.%u can place\n",
			s->guest->file.path, s->cpu, (unsigned long long)s->rec->ts,
			s->cpu, s->guest->vm->pid, s->guest->vm->gen);
		return -1;
	}
	s->key = s->conv.host;
	return 0;
}

static int add_streams(struct merge *m, struct trace_file *tf, struct guest *g)
{
	int b, cpu;

	for (b = 0; b < tf->nr_buffers; b++) {
		int cpus = tracecmd_cpus(tf->buffers[b]);

		/* Once per buffer: a file may claim thousands of CPUs. */
		if (cpus > 0)
			m->streams = xrealloc(m->streams, m->nr_streams + cpus, sizeof(*m->streams));
		for (cpu = 0; cpu < cpus; cpu++) {
			struct stream *s = &m->streams[m->nr_streams];

			memset(s, 0, sizeof(*s));
			s->path = tf->path;
			s->handle = tf->buffers[b];
			s->tep = tracecmd_get_tep(s->handle);
			td_common_init(&s->common, s->tep);
			td_release_init(&s->release, tf->path);
			s->cpu = cpu;
			s->guest = g;
			s->vcpu = g ? vm_find_vcpu(g->vm, cpu) : NULL;
			s->cursor.level = g ? g->level : LEVEL_L1;
			s->l2_cursor.level = LEVEL_L2;
			s->shared.machine = g ? g - m->guests + 1 : 0;
			s->shared.cpu = cpu;
			s->shared.vcpu = describe_vcpu(m->desc, s->vcpu);
			s->order = m->nr_streams++;
		}
	}
	return 0;
}

static int start_streams(struct merge *m)
{
	unsigned int i;

	m->heap = xcalloc(m->nr_streams, sizeof(*m->heap));
	for (i = 0; i < m->nr_streams; i++) {
		struct stream *s = &m->streams[i];

		if (advance(s, true))
			return -1;
		if (s->rec)
			m->heap[m->nr_heap++] = s;
	}
	build_heap(m);
	return 0;
}

/*
 * Follow what the host did, so a guest event can be checked against it;
 * @ev: the host event as decoded, for the sinks.
 */
static struct vcpu *track_host(struct merge *m, struct stream *s, int type,
			       const struct tep_event *event, bool fits, struct host_ev *ev,
			       bool *was_running)
{
	struct vm *vm;
	struct vcpu *v;

	switch (host_event_decode_known(&m->he, s->handle, s->rec, type, event, fits, ev)) {
	case HOST_ENTRY:
	case HOST_EXIT:
	case HOST_NESTED:
	case HOST_MULT:
	case HOST_OFFSET:
		break;
	default:
		return NULL;
	}
	vm = host_event_vm(&m->he, m->vms, ev);
	if (ev->kind == HOST_MULT && !ev->prev)
		vm = vm_table_follow_generation(m->vms, vm, ev->ts);
	v = vm_find_vcpu(vm, ev->vcpu_id);
	if (!v)
		return NULL;
	*was_running = v->running;
	if (ev->kind == HOST_NESTED)
		v->merge_level = ev->guest_mode ? LEVEL_L2 : LEVEL_L1;
	else if (ev->kind == HOST_ENTRY) {
		v->running = true;
		v->run_level = v->merge_level;
	} else if (ev->kind == HOST_EXIT)
		v->running = false;
	return v;
}

/* An event counts for its vCPU, its guest trace and the whole merge. */
static void count(uint64_t *vcpu, uint64_t *guest, uint64_t *total)
{
	(*vcpu)++;
	(*guest)++;
	(*total)++;
}

static void count_guest(struct merge *m, struct stream *s, const struct sink_event *e)
{
	struct merge_stats *st = m->stats;

	count(&s->vcpu->guest_events, &s->guest->events, &st->guest_events);
	if (e->ambiguous)
		count(&s->vcpu->ambiguous, &s->guest->ambiguous, &st->ambiguous);
	if (e->outside)
		count(&s->vcpu->outside, &s->guest->outside, &st->outside);
}

/*
 * An L1 guest's event outside every run that an L2 step's runs would
 * hold: counted, so that a nested guest's trace given without ,l2 is
 * named as such.
 */
static void try_l2(struct stream *s, const struct sink_event *e)
{
	if (e->outside && s->guest->level == LEVEL_L1 &&
	    convert_fits_runs(s->vcpu, &s->l2_cursor, e->guest_ts))
		s->guest->outside_fit_l2++;
}

/*
 * How far trace-cmd's own time sync (the guest file's TIME_SHIFT, from its
 * agent's kvm or ptp protocol) puts a guest event from the host time found
 * exactly, per vCPU: what the summary reports and --sync-out's copies
 * replace.
 */
static void measure_shift(struct stream *s, const struct sink_event *e)
{
	const struct td_time_shift *shift = s->guest->file.meta.shift;
	struct vcpu *v = s->vcpu;
	uint64_t sampled, error;

	if (!v || !shift)
		return;
	sampled = td_shift_apply(shift, e->cpu, e->guest_ts);
	error = sampled > e->host_ts ? sampled - e->host_ts : e->host_ts - sampled;
	v->shift_events++;
	if (error > v->shift_max_error)
		v->shift_max_error = error;
}

static void guest_event(struct merge *m, struct stream *s, struct sink_event *e)
{
	/*
	 * Before the host recording began (record-host.sh started while the
	 * guest ran) no run can be checked: the event is placed with the
	 * values before the first TSC event.
	 */
	if (s->key < m->host_first)
		m->stats->before_host++;
	else
		e->outside = conversion_outside_run(&s->conv, s->vcpu, s->guest->level);
	e->ambiguous = s->conv.ambiguous;
	count_guest(m, s, e);
	try_l2(s, e);
	measure_shift(s, e);
}

/*
 * What a host KVM event tells the sinks: its vCPU, its run, the TSC values
 * it sets. @event and @fits: what emit() found of the record already.
 */
static void host_event(struct merge *m, struct stream *s, struct sink_event *e,
		       int type, const struct tep_event *event, bool fits)
{
	struct host_ev ev;
	struct vcpu *v = track_host(m, s, type, event, fits, &ev, &e->was_running);

	m->stats->host_events++;
	if (!v)
		return;
	e->vcpu = describe_vcpu(m->desc, v);
	if (ev.kind == HOST_ENTRY)
		e->kvm = SINK_KVM_ENTRY;
	else if (ev.kind == HOST_EXIT)
		e->kvm = SINK_KVM_EXIT;
	e->sets_offset = ev.kind == HOST_OFFSET || ev.kind == HOST_NESTED;
	e->offset = ev.next;
	e->sets_mult = ev.kind == HOST_MULT || ev.kind == HOST_NESTED;
	e->mult = ev.kind == HOST_MULT ? ev.next : ev.mult;
}

/*
 * The event's task and, on the host, its process. A CPU runs the same task
 * for many events in a row, and a pid's names do not change within a
 * trace: the stream remembers the last one.
 */
static void find_task(struct merge *m, struct stream *s, struct sink_event *e)
{
	struct task *t = &s->task;
	int pid = td_record_pid(&s->common, s->rec);

	if (!t->comm || t->pid != pid) {
		t->pid = pid;
		t->comm = tep_data_comm_from_pid(s->tep, pid);
		t->tgid_until = 0;
	}
	/* A tid reused by another process: its events from then on are that one's. */
	if (!s->guest && s->rec->ts >= t->tgid_until) {
		t->tgid = vm_table_tgid_at(m->vms, pid, s->rec->ts);
		t->tgid_until = vm_table_tgid_until(m->vms, pid, s->rec->ts);
		t->process_comm = tep_data_comm_from_pid(s->tep, t->tgid);
	}
	e->pid = t->pid;
	e->comm = t->comm;
	e->tgid = t->tgid;
	e->process_comm = t->process_comm;
}

/* What is wrong with a damaged record, after "the record at TSC N". */
static const char *damage_text(enum damage damage)
{
	switch (damage) {
	case DAMAGE_SHORT:
		return "runs past its page or its event format";
	case DAMAGE_DIVISION:
		return "would make its print format divide by zero";
	case DAMAGE_FORMAT:
		return "is of an event whose format's field lines do not parse";
	default:
		return "is not damaged";
	}
}

static void emit(struct merge *m, struct stream *s, struct sink *sinks, int nr_sinks)
{
	int type;
	struct tep_event *event = td_record_event(&s->common, s->rec, &type);
	struct event_text text = {
		.cache = m->info, .field_buf = m->fields, .tep = s->tep, .record = s->rec,
		.event = event,
	};
	struct sink_event e = s->shared;
	enum damage damage;
	int i;

	e.host_ts = s->key;
	e.guest_ts = s->rec->ts;
	e.event_id = event ? event->id : -1;
	e.name = event ? event->name : "unknown";
	e.text = &text;
	if (m->tasks)
		find_task(m, s, &e);
	if (s->key < m->last_key)
		m->stats->out_of_order++;
	damage = record_damage(s->handle, event, s->rec);
	if (damage != DAMAGE_NONE) {
		if (!m->stats->damaged++)
			fprintf(stderr, "%s: CPU %d: the record at TSC %llu %s: the file is damaged there\n",
				s->path, s->cpu, (unsigned long long)s->rec->ts, damage_text(damage));
		text.damaged = true;
	}
	m->last_key = s->key;
	if (s->guest)
		guest_event(m, s, &e);
	else
		host_event(m, s, &e, type, event, damage == DAMAGE_NONE || damage == DAMAGE_DIVISION);
	for (i = 0; i < nr_sinks; i++)
		sinks[i].ops->event(sinks[i].priv, &e);
}

/*
 * @p counts the CPU data bytes the streams have moved past: each record's
 * distance from its CPU's previous one.
 */
static int run_merge(struct merge *m, struct sink *sinks, int nr_sinks, struct progress *p)
{
	while (m->nr_heap) {
		struct stream *s = m->heap[0];
		uint64_t at = s->next_offset;

		emit(m, s, sinks, nr_sinks);
		if (advance(s, false))
			return -1;
		if (!s->rec)
			m->heap[0] = m->heap[--m->nr_heap];
		else
			progress_add(p, s->next_offset - at);
		sift_down(m, 0);
	}
	return 0;
}

static void free_merge(struct merge *m)
{
	unsigned int i;

	for (i = 0; i < m->nr_streams; i++)
		if (m->streams[i].rec)
			tracecmd_free_record(m->streams[i].rec);
	free(m->streams);
	free(m->heap);
	info_cache_free(m->info);
	field_buf_free(m->fields);
}

int merge_traces(struct trace_file *host, struct guest *guests, int nr_guests,
		 struct vm_table *vms, const struct sink_desc *desc,
		 struct sink *sinks, int nr_sinks, struct merge_stats *stats, bool progress)
{
	struct merge m = {
		.vms = vms,
		.guests = guests,
		.desc = desc,
		.info = info_cache_new(),
		.fields = field_buf_new(),
		.stats = stats,
		.host_first = host->first_ts,
	};
	struct progress p;
	uint64_t bytes = host->page_bytes;
	int i, ret = -1;

	memset(stats, 0, sizeof(*stats));
	vm_table_rewind(vms);
	if (host_events_init(&m.he, host) || add_streams(&m, host, NULL))
		goto out;
	for (i = 0; i < nr_guests; i++)
		if (add_streams(&m, &guests[i].file, &guests[i]))
			goto out;
	if (start_streams(&m))
		goto out;
	for (i = 0; i < nr_sinks; i++)
		m.tasks |= sinks[i].ops->tasks;
	for (i = 0; i < nr_guests; i++)
		bytes += guests[i].file.page_bytes;
	progress_start(&p, progress, "merging", NULL, bytes);
	ret = run_merge(&m, sinks, nr_sinks, &p);
	progress_finish(&p, !ret);
out:
	free_merge(&m);
	return ret;
}
