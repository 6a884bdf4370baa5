// SPDX-License-Identifier: GPL-2.0
/*
 * sync.c: --sync-out: annotated copies of the host and guest trace.dat
 * files that make trace-cmd report and KernelShark place every guest event
 * where the merge placed it.
 *
 * trace-cmd's own time sync is a TIME_SHIFT option in the guest file: per
 * guest CPU, samples (guest time, offset, scaling, fraction), and an event
 * gets host = ((guest * scaling) >> fraction) + offset from the latest
 * sample at or before it. Its scaling does not invert KVM's multiplier (it
 * multiplies where KVM's inverse divides, and overflows 64 bits for any
 * useful precision), so every sample here has scaling 1 and the offset is
 * host minus guest exactly: one sample per TSC step that holds events, and
 * on a scaled vCPU, where that difference moves with every tick, one per
 * event. The GUEST option in the host file maps each guest CPU to the host
 * thread that ran it (none for a guest whose CPUs shared a thread, which
 * it cannot say, nor for a nested guest), and TRACEID options, one id per
 * copy, tie the files together, as KernelShark's KVM plugin needs.
 *
 * The inputs are copied to the temporary files by a thread of their own
 * while the merge runs, since the merge keeps the other core busy; the new
 * options are appended when it is done.
 *
 * Inputs that trace-cmd's agent wrote already carry these options, with
 * its sampled shift: the new ones come later in the file, and libtracecmd
 * keeps the last TIME_SHIFT it reads and looks up the last GUEST option of
 * a trace id, so the exact steps replace the samples rather than add to
 * them. Only each CPU's first sample, KVM's values when the recording
 * began, is kept, at guest time 0, where no event uses it: the merge may
 * have taken a vCPU's offset and multiplier from it, and must find them
 * again in the copy.
 *
 * Two quirks of libtracecmd's lookup are designed around: an event at or
 * after the last sample uses the one before it, so a sentinel at INT64_MAX
 * repeats the last sample (and an event at INT64_MAX itself gets its sample
 * one tick earlier, since equal times are merged); it sorts the samples as
 * signed numbers, so a guest time above 2^63 - 1 cannot be expressed. Nor
 * can two events at one guest time with different host times (after a TSC
 * set backwards): those are reported per CPU with how far off trace-cmd
 * would put them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runfiles.h"
#include "sinks/sinks.h"
#include "tracecmd-private.h"
#include "tracedat/tdfile.h"

#define SAMPLE_TIME_MAX INT64_MAX

struct sample {
	uint64_t time;			/* guest TSC */
	int64_t offset;			/* host minus guest, modulo 2^64 */
};

/* One guest CPU's samples, and the events no sample places exactly. */
struct sync_cpu {
	struct sample *s;
	size_t nr;
	size_t alloc;
	uint64_t inexact;
	uint64_t first_bad;
	uint64_t last_bad;
	uint64_t max_error;
};

struct sync_file {
	struct td_file td;
	char *out;			/* DIR/name */
	char *tmp;			/* DIR/.name.XXXXXX while written */
	char *old;			/* DIR/.name.XXXXXX: what it replaces, until all are in */
	bool placed;			/* @tmp renamed to @out, not yet kept */
	int fd;				/* of @tmp */
	int copy_errno;			/* why copying the input failed */
	uint64_t trace_id;		/* its own, or a new one */
};

struct sync_guest {
	const struct sink_guest *g;
	struct sync_file file;
	struct sync_cpu *cpus;
	int nr_cpus;
	bool guest_option;		/* the host copy maps its CPUs to threads */
};

struct sync_out {
	const char *dir;
	bool force;
	uint64_t max_error;
	pthread_t copier;
	bool copying;
	struct sync_file host;
	const struct td_meta *host_meta;
	struct sync_guest *guests;
	int nr_guests;
};

static uint64_t new_trace_id(void)
{
	uint64_t id = 0;

	while (!id)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = 0;
	return id;
}

/* DIR/NAME for an input at .../NAME. */
char *sync_copy_path(const char *dir, const char *input)
{
	const char *base = strrchr(input, '/') ? strrchr(input, '/') + 1 : input;
	size_t len = strlen(dir) + strlen(base) + 2;
	char *p = xcalloc(len, 1);

	snprintf(p, len, "%s/%s", dir, base);
	return p;
}

/*
 * What a copy's name holds: nothing, or with --force a file it replaces;
 * never a directory, which no rename replaces. The name itself is looked
 * at, as the rename replaces a symbolic link, not what it names.
 */
static int check_target(const struct sync_out *s, const char *path, bool *exists)
{
	struct stat st;

	*exists = false;
	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: is a directory\n", path);
		return -1;
	}
	if (!s->force) {
		fprintf(stderr, "%s: exists; --force replaces it\n", path);
		return -1;
	}
	*exists = true;
	return 0;
}

/*
 * The copy goes to DIR under the input's name. main.c's check of the run's
 * files has refused a copy that would replace an input or another copy.
 */
static int open_sync_file(struct sync_out *s, struct sync_file *f, const char *path)
{
	bool exists;

	if (td_open(&f->td, path))
		return -1;
	f->out = sync_copy_path(s->dir, path);
	f->trace_id = f->td.trace_id ? f->td.trace_id : new_trace_id();
	return check_target(s, f->out, &exists);
}

/* libtracecmd gives an instance buffer's handle no time sync of its own. */
static int check_guest_buffers(const struct trace_file *f)
{
	int b;

	for (b = 0; b < f->nr_buffers; b++) {
		if (!f->buffer_names[b])
			continue;
		fprintf(stderr, "%s: has events in buffer instance '%s', which trace-cmd's time sync does not shift; --sync-out needs the guest's events in the top-level buffer (trace-cmd record without -B)\n",
			f->path, f->buffer_names[b]);
		return -1;
	}
	return 0;
}

/* The host's copy, then the guests' in command-line order. */
static struct sync_file *file_at(struct sync_out *s, int i)
{
	return i ? &s->guests[i - 1].file : &s->host;
}

/* The copy before the @nr-th that has trace id @id; NULL: none. */
static const struct sync_file *id_taken(struct sync_out *s, int nr, uint64_t id)
{
	int i;

	for (i = 0; i < nr; i++)
		if (file_at(s, i)->trace_id == id)
			return file_at(s, i);
	return NULL;
}

static void give_new_trace_id(struct sync_out *s, int nr)
{
	struct sync_file *f = file_at(s, nr);

	do
		f->trace_id = new_trace_id();
	while (id_taken(s, nr, f->trace_id));
}

/*
 * Every copy gets a trace id of its own. Two inputs may share one (the
 * same recording given for two VMs, two copies of one agent, a synced
 * guest file given twice), and trace-cmd and KernelShark look a guest up
 * in the host's GUEST options by trace id, taking the last: every guest
 * of that id would be drawn on the last one's threads. The merge has tied
 * each input to its own VM, and the copies are new files meant to show
 * that tie, so the later copy takes a new id, said on stderr, rather than
 * the run being refused; the inputs stay as they are.
 */
static void make_trace_id_distinct(struct sync_out *s, int nr)
{
	struct sync_file *f = file_at(s, nr);
	const struct sync_file *other = id_taken(s, nr, f->trace_id);

	if (!other)
		return;
	give_new_trace_id(s, nr);
	if (f->td.trace_id)
		fprintf(stderr, "warning: %s: has the trace id %#llx of %s; its --sync-out copy gets %#llx, so that trace-cmd and KernelShark tell the two apart\n",
			f->td.path, (unsigned long long)f->td.trace_id, other->td.path,
			(unsigned long long)f->trace_id);
}

static void warn_shared_thread(const struct sink_guest *g, int first)
{
	int c, tid = g->cpu_threads[first];

	fprintf(stderr, "warning: %s: its --sync-out copy gets no GUEST option: host thread %d runs its CPUs %d",
		g->file->path, tid, first);
	for (c = first + 1; c < g->nr_cpus; c++)
		if (g->cpu_threads[c] == tid)
			fprintf(stderr, ",%d", c);
	fprintf(stderr, ", and the option gives each CPU a thread of its own; the TIME_SHIFT still places its events\n");
}

/*
 * trace-cmd's GUEST option gives each guest CPU a host thread of its own,
 * and its readers look a thread's CPU up: a thread that ran several, as
 * this project's selftest VMMs and tsc_guest_demo run every vCPU on one,
 * would put them all on one CPU (kvm-tsc-merge refuses the others). Such
 * a guest gets no GUEST option, as trace-cmd writes none when it cannot
 * find every vCPU's thread.
 */
static bool can_map_cpus(const struct sink_guest *g)
{
	int c, d;

	for (c = 0; c < g->nr_cpus; c++) {
		for (d = c + 1; g->cpu_threads[c] >= 0 && d < g->nr_cpus; d++) {
			if (g->cpu_threads[d] != g->cpu_threads[c])
				continue;
			warn_shared_thread(g, c);
			return false;
		}
	}
	return true;
}

/*
 * A GUEST option says which host threads are the vCPUs of an L1 guest:
 * trace-cmd's agent writes one per VM the host runs, and a reader of the
 * host file (KernelShark's KVM plugin, kvm-tsc-merge itself) takes each
 * option for a VM of its own. A nested guest runs on the vCPU threads of
 * its L1 guest's VM, which the host knows only as that VM's, and its own
 * trace-cmd agent talks to the L1 guest, not to the host: an option for it
 * would claim those threads for a second VM. Its copy gets none; its
 * TIME_SHIFT, tied by trace id, still places its events.
 */
static bool wants_guest_option(const struct sink_guest *g)
{
	return !g->nested && can_map_cpus(g);
}

static int prepare_guest(struct sync_out *s, int i, const struct sink_guest *g)
{
	struct sync_guest *sg = &s->guests[i];

	sg->g = g;
	if (check_guest_buffers(g->file) || open_sync_file(s, &sg->file, g->file->path))
		return -1;
	sg->guest_option = wants_guest_option(g);
	/*
	 * Without a GUEST option of its own, a copy keeping its input's id
	 * would be tied by one the host input may hold for it (an agent's,
	 * a copy's), which readers would take: it gets a new id.
	 */
	if (sg->guest_option)
		make_trace_id_distinct(s, 1 + i);
	else
		give_new_trace_id(s, 1 + i);
	sg->nr_cpus = g->nr_cpus;
	sg->cpus = xcalloc(sg->nr_cpus, sizeof(*sg->cpus));
	return 0;
}

static int create_temp(struct sync_file *f)
{
	f->fd = create_temp_beside(f->out, &f->tmp);
	return f->fd < 0 ? -1 : 0;
}

static void copy_file(struct sync_file *f)
{
	if (td_copy(&f->td, f->fd))
		f->copy_errno = errno ? errno : EIO;
}

static void *copy_inputs(void *arg)
{
	struct sync_out *s = arg;
	int i;

	copy_file(&s->host);
	for (i = 0; i < s->nr_guests; i++)
		copy_file(&s->guests[i].file);
	return NULL;
}

static int start_copies(struct sync_out *s)
{
	int i, err;

	if (create_temp(&s->host))
		return -1;
	for (i = 0; i < s->nr_guests; i++)
		if (create_temp(&s->guests[i].file))
			return -1;
	err = pthread_create(&s->copier, NULL, copy_inputs, s);
	if (err) {
		fprintf(stderr, "kvm-tsc-merge: cannot start copying the inputs: %s\n", strerror(err));
		return -1;
	}
	s->copying = true;
	return 0;
}

static void finish_copies(struct sync_out *s)
{
	if (s->copying)
		pthread_join(s->copier, NULL);
	s->copying = false;
}

struct sync_out *sync_prepare(const char *dir, bool force, uint64_t max_error,
			      const struct sink_desc *desc)
{
	struct sync_out *s = xcalloc(1, sizeof(*s));
	int i;

	s->dir = dir;
	s->force = force;
	s->max_error = max_error;
	s->host_meta = &desc->host->meta;
	s->nr_guests = desc->nr_guests;
	s->guests = xcalloc(s->nr_guests, sizeof(*s->guests));
	s->host.td.fd = s->host.fd = -1;
	for (i = 0; i < s->nr_guests; i++)
		s->guests[i].file.td.fd = s->guests[i].file.fd = -1;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		goto fail;
	}
	if (open_sync_file(s, &s->host, desc->host->path))
		goto fail;
	for (i = 0; i < s->nr_guests; i++)
		if (prepare_guest(s, i, &desc->guests[i]))
			goto fail;
	if (start_copies(s))
		goto fail;
	return s;
fail:
	sync_free(s);
	return NULL;
}

static void free_file(struct sync_file *f)
{
	td_close(&f->td);
	if (f->fd >= 0)
		close(f->fd);
	remove_temp(&f->tmp);
	free(f->out);
}

void sync_free(struct sync_out *s)
{
	int i, c;

	if (!s)
		return;
	finish_copies(s);
	free_file(&s->host);
	for (i = 0; i < s->nr_guests; i++) {
		for (c = 0; c < s->guests[i].nr_cpus; c++)
			free(s->guests[i].cpus[c].s);
		free(s->guests[i].cpus);
		free_file(&s->guests[i].file);
	}
	free(s->guests);
	free(s);
}

static void add_sample(struct sync_cpu *c, uint64_t time, int64_t offset)
{
	c->s = xgrow(c->s, c->nr, &c->alloc, sizeof(*c->s));
	c->s[c->nr].time = time;
	c->s[c->nr++].offset = offset;
}

/* The sample libtracecmd uses for @time: the last at or before it. */
static const struct sample *find_sample(const struct sync_cpu *c, uint64_t time)
{
	size_t lo = 0, hi = c->nr;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (c->s[mid].time <= time)
			lo = mid;
		else
			hi = mid;
	}
	return &c->s[lo];
}

static void note_inexact(struct sync_cpu *c, uint64_t time, uint64_t error)
{
	if (!c->inexact++)
		c->first_bad = time;
	c->last_bad = time;
	if (error > c->max_error)
		c->max_error = error;
}

/*
 * Guest events of one CPU come in their own order, so the samples are
 * appended in guest time; a new one only where host minus guest changes.
 */
static void sync_event(void *priv, const struct sink_event *e)
{
	struct sync_out *s = priv;
	struct sync_cpu *c;
	const struct sample *at;
	int64_t offset = (int64_t)(e->host_ts - e->guest_ts);
	uint64_t time = e->guest_ts;

	if (!e->machine)
		return;
	c = &s->guests[e->machine - 1].cpus[e->cpu];
	if (time > SAMPLE_TIME_MAX) {
		note_inexact(c, time, UINT64_MAX);
		return;
	}
	/* The sentinel's time: libtracecmd keeps one sample per time. */
	if (time == SAMPLE_TIME_MAX)
		time--;
	if (!c->nr || time > c->s[c->nr - 1].time) {
		if (!c->nr || c->s[c->nr - 1].offset != offset)
			add_sample(c, time, offset);
		return;
	}
	at = find_sample(c, time);
	if (at->offset != offset)
		note_inexact(c, e->guest_ts, at->offset > offset ?
			     (uint64_t)at->offset - (uint64_t)offset :
			     (uint64_t)offset - (uint64_t)at->offset);
}

/* Written by sync_write() once the merge has succeeded: nothing to finish. */
const struct sink_ops sync_sink_ops = {
	.event = sync_event,
};

/* What is said of guest CPU @cpu of @sg before what is wrong with it. */
static void name_cpu(const struct sync_guest *sg, int cpu)
{
	fprintf(stderr, "%s: CPU %d (vCPU %d of VM %s): ", sg->g->file->path, cpu, cpu,
		sg->g->vm_spec);
}

/* Says what is wrong with guest CPU @cpu of @sg, if anything; true when it refuses the copies. */
typedef bool (*judge_cpu_fn)(const struct sync_out *s, const struct sync_guest *sg, int cpu);

/* Every guest CPU judged; -1, after @refusal (what would accept it), when one refuses the copies. */
static int judge_cpus(const struct sync_out *s, judge_cpu_fn judge, const char *refusal)
{
	int i, c, errors = 0;

	for (i = 0; i < s->nr_guests; i++)
		for (c = 0; c < s->guests[i].nr_cpus; c++)
			errors += judge(s, &s->guests[i], c);
	if (errors)
		fprintf(stderr, "kvm-tsc-merge: --sync-out wrote nothing%s\n", refusal);
	return errors ? -1 : 0;
}

/* Say where trace-cmd would be off; refuse beyond --sync-max-error. */
static bool report_inexact(const struct sync_out *s, const struct sync_guest *sg, int cpu)
{
	const struct sync_cpu *sc = &sg->cpus[cpu];
	bool too_far = sc->max_error > s->max_error;

	if (!sc->inexact)
		return false;
	name_cpu(sg, cpu);
	fprintf(stderr, "%llu events between guest TSC %llu and %llu cannot be given their exact host time in trace-cmd's time sync: ",
		(unsigned long long)sc->inexact, (unsigned long long)sc->first_bad,
		(unsigned long long)sc->last_bad);
	if (sc->max_error == UINT64_MAX)
		fprintf(stderr, "a guest time above 2^63 - 1 (9223372036854775807), which trace-cmd's time sync sorts as negative, cannot be placed at all\n");
	else
		fprintf(stderr, "two host times for one guest time; they would be up to %llu host TSC ticks off%s\n",
			(unsigned long long)sc->max_error,
			too_far ? "" : ", which --sync-max-error accepts");
	return too_far;
}

/*
 * The first sample of the input's TIME_SHIFT for guest CPU @cpu; NULL:
 * none. trace-cmd's kvm time sync takes it from KVM when the recording
 * begins: -tsc_offset, the multiplier and its frac bits. The merge reads a
 * vCPU's offset and multiplier there when no host event tells them
 * (vcpu_offset_from_time_shift()), so the copy keeps it as its own first
 * sample: merged again, the copy's vCPUs are what they were. It goes at
 * guest time 0, before the CPU's events, so that trace-cmd places none by
 * it: its scaling is KVM's multiplier, which trace-cmd would apply the
 * wrong way round.
 */
static const struct td_shift_sample *kept_sample(const struct sync_guest *sg, int cpu)
{
	const struct td_time_shift *in = sg->g->file->meta.shift;

	if (!in || (unsigned int)cpu >= in->nr_cpus || !in->cpus[cpu].nr)
		return NULL;
	return &in->cpus[cpu].samples[0];
}

/*
 * The samples of guest CPU @cpu as written, into @rows: the kept one, then
 * one per step of host minus guest, or for a CPU without events one at
 * offset 0 that nothing uses, then the sentinel.
 */
static void fill_rows(const struct sync_guest *sg, int cpu, struct td_shift_cpu *rows)
{
	const struct td_shift_sample *kept = kept_sample(sg, cpu);
	const struct sync_cpu *c = &sg->cpus[cpu];
	struct td_shift_sample *row = xcalloc(c->nr + 2, sizeof(*row));
	size_t i, n = 0;

	if (kept) {
		row[n] = *kept;
		row[n++].time = 0;
	}
	for (i = 0; i < c->nr; i++)
		row[n++] = (struct td_shift_sample){ c->s[i].time, c->s[i].offset, 1, 0 };
	if (!n)
		row[n++] = (struct td_shift_sample){ 0, 0, 1, 0 };
	row[n] = row[n - 1];
	row[n++].time = SAMPLE_TIME_MAX;
	rows->samples = row;
	rows->nr = n;
}

/* The columns of TIME_SHIFT's samples, in the order they are written. */
enum sample_column { SAMPLE_TIME, SAMPLE_OFFSET, SAMPLE_SCALING, SAMPLE_FRACTION };

static int64_t sample_column(const struct td_shift_sample *s, enum sample_column col)
{
	const int64_t v[] = { s->time, s->offset, s->scaling, s->fraction };

	return v[col];
}

static void put_column(struct td_options *o, const struct td_file *td,
		       const struct td_shift_cpu *rows, enum sample_column col)
{
	unsigned int i;

	for (i = 0; i < rows->nr; i++)
		td_opt_put(o, td, sample_column(&rows->samples[i], col), 8);
}

/*
 * TIME_SHIFT: u64 peer trace id, u32 flags (0: no interpolation), u32
 * CPUs; per CPU u32 n, then n times, n offsets, n scalings (i64); then per
 * CPU n fractions.
 */
static void build_time_shift(struct td_options *o, const struct sync_guest *sg,
			     uint64_t peer)
{
	const struct td_file *td = &sg->file.td;
	struct td_shift_cpu *rows = xcalloc(sg->nr_cpus, sizeof(*rows));
	enum sample_column col;
	int c;

	for (c = 0; c < sg->nr_cpus; c++)
		fill_rows(sg, c, &rows[c]);
	td_opt_begin(o, TD_OPTION_TIME_SHIFT);
	td_opt_put(o, td, peer, 8);
	td_opt_put(o, td, 0, 4);
	td_opt_put(o, td, sg->nr_cpus, 4);
	for (c = 0; c < sg->nr_cpus; c++) {
		td_opt_put(o, td, rows[c].nr, 4);
		for (col = SAMPLE_TIME; col <= SAMPLE_SCALING; col++)
			put_column(o, td, &rows[c], col);
	}
	for (c = 0; c < sg->nr_cpus; c++)
		put_column(o, td, &rows[c], SAMPLE_FRACTION);
	td_opt_end(o, td);
	for (c = 0; c < sg->nr_cpus; c++)
		free(rows[c].samples);
	free(rows);
}

/*
 * The kept sample takes guest time 0, and libtracecmd keeps one sample per
 * time: a CPU with an event at guest TSC 0 leaves it no room.
 */
static bool check_kept_room(const struct sync_out *s, const struct sync_guest *sg, int cpu)
{
	if (!kept_sample(sg, cpu) || !sg->cpus[cpu].nr || sg->cpus[cpu].s[0].time)
		return false;
	name_cpu(sg, cpu);
	fprintf(stderr, "an event at guest TSC 0 leaves no time before it for the first sample of trace-cmd's time sync, which its --sync-out copy keeps\n");
	return true;
}

/* A later TRACEID replaces the input's: libtracecmd keeps the last. */
static void build_trace_id(struct td_options *o, const struct sync_file *f)
{
	if (f->trace_id == f->td.trace_id)
		return;
	td_opt_begin(o, TD_OPTION_TRACEID);
	td_opt_put(o, &f->td, f->trace_id, 8);
	td_opt_end(o, &f->td);
}

/* GUEST: name, u64 guest trace id, u32 vCPUs, (u32 cpu, u32 host tid)... */
static void build_guest(struct td_options *o, const struct td_file *host,
			const struct sync_guest *sg)
{
	int c;

	td_opt_begin(o, TD_OPTION_GUEST);
	td_opt_put_string(o, sg->g->name);
	td_opt_put(o, host, sg->file.trace_id, 8);
	td_opt_put(o, host, sg->nr_cpus, 4);
	for (c = 0; c < sg->nr_cpus; c++) {
		td_opt_put(o, host, c, 4);
		td_opt_put(o, host, (uint32_t)sg->g->cpu_threads[c], 4);
	}
	td_opt_end(o, host);
}

/* The copy, complete: the input's bytes, then the new options. */
static int write_file(struct sync_file *f, const struct td_options *o)
{
	int fd = f->fd;

	f->fd = -1;
	if (f->copy_errno) {
		fprintf(stderr, "%s: copying %s failed: %s\n", f->tmp, f->td.path,
			strerror(f->copy_errno));
		close(fd);
		return -1;
	}
	if (td_append(&f->td, fd, o)) {
		fprintf(stderr, "%s: writing failed: %s\n", f->tmp, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd)) {
		fprintf(stderr, "%s: writing failed: %s\n", f->tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The host's only buffer with data, when it is an instance and the top
 * level is empty, as record-host.sh records; else NULL.
 */
static const struct td_buffer *instance_only(const struct td_meta *m)
{
	const struct td_buffer *inst = NULL;
	unsigned int i;

	for (i = 0; i < m->nr_buffers; i++) {
		const struct td_buffer *b = &m->buffers[i];

		if (!b->cpus)
			continue;
		if (!*b->name || inst)
			return NULL;
		inst = b;
	}
	/* Room after the CPU count for an option header and "0". */
	return inst && inst->cpus_at && inst->at + inst->len >= inst->cpus_at + 4 + 8 ?
	       inst : NULL;
}

/*
 * In the copy, end the instance's BUFFER option after its CPU count, now
 * 0, and fill the bytes of its CPU list with an OFFSET option of "0" (a
 * shift by nothing), so that readers walking the option field by field,
 * as trace-cmd dump does, find the next option where it lies.
 */
static int empty_instance(struct sync_out *s, const struct td_buffer *b)
{
	const struct td_file *td = &s->host.td;
	uint32_t kept = b->cpus_at + 4 - b->at, rest = b->len - kept;
	struct td_options filler;
	int ret;

	td_opt_init(&filler);
	td_opt_begin(&filler, TD_OPTION_OFFSET);
	td_opt_put_string(&filler, "0");
	while (filler.len < rest)
		td_opt_put(&filler, td, 0, 1);
	td_opt_end(&filler, td);
	ret = td_patch_number(td, s->host.fd, b->at - 4, kept, 4) ||
	      td_patch_number(td, s->host.fd, b->cpus_at, 0, 4) ||
	      td_patch_bytes(s->host.fd, b->cpus_at + 4, filler.buf, filler.len);
	td_opt_free(&filler);
	return ret ? -1 : 0;
}

/*
 * KernelShark 2.2.1 ties the GUEST options to the host file's first
 * stream, its top-level buffer, and looks there for the vCPU threads'
 * kvm_entry and kvm_exit for its KVM combo plot. So the copy's top level
 * names the instance's data (libtracecmd takes the last BUFFER option
 * named "" as the top level) and the instance keeps no CPUs, so that
 * every event is still read once.
 */
static int move_instance_to_top(struct sync_out *s, struct td_options *o)
{
	const struct td_buffer *b = instance_only(s->host_meta);
	const struct td_file *td = &s->host.td;

	if (!b)
		return 0;
	td_opt_begin(o, TD_OPTION_BUFFER);
	td_opt_put_bytes(o, b->payload, 8);
	td_opt_put_string(o, "");
	td_opt_put_bytes(o, b->payload + b->name_end, b->len - b->name_end);
	td_opt_end(o, td);
	if (empty_instance(s, b)) {
		fprintf(stderr, "%s: writing failed: %s\n", s->host.tmp, strerror(errno));
		return -1;
	}
	return 0;
}

static int write_host(struct sync_out *s)
{
	struct td_options o;
	int i, ret;

	td_opt_init(&o);
	if (move_instance_to_top(s, &o)) {
		td_opt_free(&o);
		return -1;
	}
	build_trace_id(&o, &s->host);
	for (i = 0; i < s->nr_guests; i++)
		if (s->guests[i].guest_option)
			build_guest(&o, &s->host.td, &s->guests[i]);
	ret = write_file(&s->host, &o);
	td_opt_free(&o);
	return ret;
}

static int write_guest(struct sync_out *s, struct sync_guest *sg)
{
	struct td_options o;
	int ret;

	td_opt_init(&o);
	build_trace_id(&o, &sg->file);
	build_time_shift(&o, sg, s->host.trace_id);
	ret = write_file(&sg->file, &o);
	td_opt_free(&o);
	return ret;
}

/* Every copy, complete under its temporary name. */
int sync_write(struct sync_out *s)
{
	int i;

	finish_copies(s);
	if (judge_cpus(s, report_inexact, "; --sync-max-error TICKS accepts that error") ||
	    judge_cpus(s, check_kept_room, "") || write_host(s))
		return -1;
	for (i = 0; i < s->nr_guests; i++)
		if (write_guest(s, &s->guests[i]))
			return -1;
	return 0;
}

/* Move the file a copy replaces to a temporary name beside it. */
static int set_aside(struct sync_file *f)
{
	int fd = create_temp_beside(f->out, &f->old);

	if (fd < 0)
		return -1;
	close(fd);
	if (!rename(f->out, f->old))
		return 0;
	fprintf(stderr, "%s: %s\n", f->out, strerror(errno));
	remove_temp(&f->old);
	return -1;
}

/*
 * The copy takes its name, what was there set aside. DIR is checked
 * again: a file may have appeared there, or gone, since sync_prepare().
 */
static int place_file(struct sync_out *s, struct sync_file *f)
{
	bool exists;

	if (check_target(s, f->out, &exists) || (exists && set_aside(f)))
		return -1;
	if (!renameat2(AT_FDCWD, f->tmp, AT_FDCWD, f->out, RENAME_NOREPLACE)) {
		f->placed = true;
		return 0;
	}
	fprintf(stderr, "%s: %s\n", f->out, strerror(errno));
	return -1;
}

/*
 * Undo place_file(): the set-aside file goes back over the copy in one
 * rename, else the copy goes back to its temporary name, which
 * free_file() removes. A file that cannot go back stays where it is,
 * named.
 */
static int put_back(struct sync_file *f)
{
	int ret = 0;

	if (f->old && rename(f->old, f->out)) {
		fprintf(stderr, "%s: cannot put it back; it is %s now: %s\n", f->out, f->old,
			strerror(errno));
		ret = -1;
	} else if (!f->old && f->placed && rename(f->out, f->tmp)) {
		fprintf(stderr, "%s: cannot take this run's copy away: %s\n", f->out,
			strerror(errno));
		ret = -1;
	}
	free(f->old);
	f->old = NULL;
	f->placed = false;
	return ret;
}

/* Every copy is in: the files they replaced go. */
static void keep_file(struct sync_file *f)
{
	remove_temp(&f->old);
	free(f->tmp);
	f->tmp = NULL;
}

/*
 * The written copies take their names, all or none: the host's copy names
 * the guests' trace ids, so a host copy without its guests' copies, or
 * beside older ones, puts their events at other times or on no thread.
 * What each copy replaces is set aside until the last is in; when one
 * cannot go in, those before it are put back.
 */
int sync_commit(struct sync_out *s)
{
	int i, n = 1 + s->nr_guests, failed = 0;

	for (i = 0; i < n; i++)
		if (place_file(s, file_at(s, i)))
			break;
	if (i == n) {
		for (i = 0; i < n; i++)
			keep_file(file_at(s, i));
		return 0;
	}
	for (; i >= 0; i--)
		failed |= put_back(file_at(s, i));
	if (!failed)
		fprintf(stderr, "kvm-tsc-merge: --sync-out left %s as it was\n", s->dir);
	return -1;
}
