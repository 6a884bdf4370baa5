// SPDX-License-Identifier: GPL-2.0
/*
 * tdmeta.c: what trace-cmd's own options say about a trace.dat's time and
 * guests: TRACEID, TSC2NSEC (the tsc2nsec clock's conversion), GUEST (a
 * guest's name, trace id and the host thread of each of its CPUs) and
 * TIME_SHIFT (the samples trace-cmd's time sync took) and BUFFER (where
 * each buffer's data lies), read as libtracecmd
 * 1.3.1 reads them, and the host time that TIME_SHIFT gives a guest time.
 *
 * libtracecmd opens the inputs with raw timestamps (input.c), so none of
 * this changes a time the merge uses: the GUEST options tie guests to their
 * vCPU threads, TSC2NSEC gives the TSC rate, and TIME_SHIFT is only
 * compared with the exact result. Every count is checked against the
 * option's size before anything is allocated by it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tracedat/tdfile.h"

/* libtracecmd's TIME_SHIFT flag: interpolate between two samples. */
#define TSYNC_FLAG_INTERPOLATE	0x1
#define TD_OPTION_TSC2NSEC	14

struct meta_walk {
	struct td_file f;		/* first: the walker's callback gets it */
	struct td_meta *m;
};

static struct td_meta *meta_of(struct td_file *f)
{
	return ((struct meta_walk *)f)->m;
}

/* A reader of one option's bytes that never reads past them. */
struct cursor {
	const struct td_file *f;
	const unsigned char *p;
	uint32_t left;
};

/* The next @bytes as a number; 0 and false past the end. */
static bool take(struct cursor *c, int bytes, uint64_t *v)
{
	*v = 0;
	if (c->left < (uint32_t)bytes)
		return false;
	*v = td_number(c->f, c->p, bytes);
	c->p += bytes;
	c->left -= bytes;
	return true;
}

/* GUEST: name, u64 trace id, u32 CPUs, then (u32 cpu, u32 host tid) each. */
static int read_guest(struct td_file *f, const unsigned char *data, uint32_t len)
{
	struct td_meta *m = meta_of(f);
	const unsigned char *nul = memchr(data, '\0', len);
	struct cursor c = { .f = f };
	struct td_guest_map *g;
	uint64_t id, n, cpu, tid;
	unsigned int i;

	if (!nul)
		return td_damaged(f, "a GUEST option's name runs on");
	c.p = nul + 1;
	c.left = len - (nul + 1 - data);
	if (!take(&c, 8, &id) || !take(&c, 4, &n))
		return td_damaged(f, "a GUEST option is cut short");
	if (n > KVM_MAX_VCPU_ID + 1 || n * 8 > c.left)
		return td_damaged(f, "a GUEST option claims %llu CPUs in %u bytes",
				  (unsigned long long)n, c.left);
	m->guests = xrealloc(m->guests, m->nr_guests + 1, sizeof(*m->guests));
	g = &m->guests[m->nr_guests++];
	g->trace_id = id;
	g->nr_cpus = n;
	/* The name after the tids, in one allocation: td_meta_free() frees @tids. */
	g->tids = xcalloc(1, n * sizeof(*g->tids) + (nul - data) + 1);
	g->name = memcpy(g->tids + n, data, nul - data);
	for (i = 0; i < n; i++)
		g->tids[i] = -1;
	for (i = 0; i < n; i++) {
		take(&c, 4, &cpu);
		take(&c, 4, &tid);
		if (cpu >= n)
			return td_damaged(f, "GUEST option '%s' names CPU %llu of %llu",
					  g->name, (unsigned long long)cpu, (unsigned long long)n);
		g->tids[cpu] = (int)tid;
	}
	return 0;
}

static void free_shift(struct td_time_shift *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->nr_cpus; i++)
		free(s->cpus[i].samples);
	free(s->cpus);
	free(s);
}

static int compare_samples(const void *a, const void *b)
{
	const struct td_shift_sample *x = a, *y = b;

	return x->time > y->time ? 1 : x->time < y->time ? -1 : 0;
}

/* Sorted by time, one sample per time: what libtracecmd keeps. */
static void sort_samples(struct td_shift_cpu *c)
{
	unsigned int i, j;

	qsort(c->samples, c->nr, sizeof(*c->samples), compare_samples);
	for (i = 0, j = 0; i < c->nr; i++)
		if (!i || c->samples[i].time != c->samples[i - 1].time)
			c->samples[j++] = c->samples[i];
	c->nr = j;
}

static bool read_shift_cpu(struct cursor *c, struct td_shift_cpu *sc)
{
	uint64_t n, v;
	unsigned int i;

	if (!take(c, 4, &n) || n * 24 > c->left)
		return false;
	sc->nr = n;
	sc->samples = xcalloc(n ? n : 1, sizeof(*sc->samples));
	/* Sizes checked above: each take() succeeds. */
	for (i = 0; i < n; i++) {
		take(c, 8, &v);
		sc->samples[i].time = v;
	}
	for (i = 0; i < n; i++) {
		take(c, 8, &v);
		sc->samples[i].offset = v;
	}
	for (i = 0; i < n; i++) {
		take(c, 8, &v);
		sc->samples[i].scaling = v;
	}
	return true;
}

/*
 * TIME_SHIFT: u64 peer trace id, u32 flags, u32 CPUs; per CPU u32 n and n
 * times, offsets and scalings; then, if the option goes on, per CPU n
 * fraction bits. A later TIME_SHIFT replaces an earlier one, as in
 * libtracecmd.
 */
static int read_time_shift(struct td_file *f, const unsigned char *data, uint32_t len)
{
	struct td_meta *m = meta_of(f);
	struct cursor c = { .f = f, .p = data, .left = len };
	struct td_time_shift *s = xcalloc(1, sizeof(*s));
	uint64_t peer, flags, n, v;
	unsigned int i, k;

	if (!take(&c, 8, &peer) || !take(&c, 4, &flags) || !take(&c, 4, &n))
		goto short_option;
	if (n > MAX_TRACE_CPUS || n * 4 > c.left) {
		free_shift(s);
		return td_damaged(f, "a TIME_SHIFT option claims %llu CPUs in %u bytes",
				  (unsigned long long)n, c.left);
	}
	s->peer = peer;
	s->flags = flags;
	s->cpus = xcalloc(n ? n : 1, sizeof(*s->cpus));
	for (s->nr_cpus = 0; s->nr_cpus < n; s->nr_cpus++)
		if (!read_shift_cpu(&c, &s->cpus[s->nr_cpus]))
			goto short_option;
	for (i = 0; c.left && i < n; i++)
		for (k = 0; k < s->cpus[i].nr; k++)
			if (take(&c, 8, &v))
				s->cpus[i].samples[k].fraction = v;
	for (i = 0; i < n; i++)
		sort_samples(&s->cpus[i]);
	free_shift(m->shift);
	m->shift = s;
	return 0;
short_option:
	free_shift(s);
	return td_damaged(f, "a TIME_SHIFT option is cut short");
}

/*
 * BUFFER (version 7): u64 section offset, name, clock, u32 page size, u32
 * CPUs, then per CPU u32 cpu, u64 offset, u64 size. Kept whole, so that a
 * copy can name the same data under another buffer.
 */
static int read_buffer(struct td_file *f, const unsigned char *data, uint32_t len)
{
	struct td_meta *m = meta_of(f);
	const unsigned char *name = data + 8, *clock, *end = data + len;
	struct td_buffer *b;

	if (len < 8 || !(clock = memchr(name, '\0', end - name)) ||
	    !(clock = clock + 1, memchr(clock, '\0', end - clock)))
		return td_damaged(f, "a BUFFER option is cut short");
	m->buffers = xrealloc(m->buffers, m->nr_buffers + 1, sizeof(*m->buffers));
	b = &m->buffers[m->nr_buffers++];
	memset(b, 0, sizeof(*b));
	b->name_end = clock - data;
	b->at = f->option_at;
	b->payload = xcalloc(len, 1);
	memcpy(b->payload, data, len);
	b->name = (const char *)b->payload + (name - data);
	b->len = len;
	clock += strlen((const char *)clock) + 1;
	if (end - clock >= 8) {
		b->cpus_at = f->option_at + (clock + 4 - data);
		b->cpus = td_number(f, clock + 4, 4);
	}
	return 0;
}

static int read_option(struct td_file *f, unsigned int id, const unsigned char *data,
		       uint32_t len)
{
	struct td_meta *m = meta_of(f);
	struct cursor c = { .f = f, .p = data, .left = len };
	uint64_t v;

	switch (id) {
	case TD_OPTION_TRACEID:
		if (take(&c, 8, &v))
			m->trace_id = v;
		return 0;
	case TD_OPTION_TSC2NSEC:
		/* u32 mult, u32 shift, u64 offset: ns = (tsc * mult) >> shift */
		if (take(&c, 4, &v) && v) {
			m->tsc2nsec_mult = v;
			take(&c, 4, &v);
			m->tsc2nsec_shift = v;
		}
		return 0;
	case TD_OPTION_GUEST:
		return read_guest(f, data, len);
	case TD_OPTION_BUFFER:
		return read_buffer(f, data, len);
	case TD_OPTION_TIME_SHIFT:
		return read_time_shift(f, data, len);
	default:
		return 0;
	}
}

/*
 * The options of a version 7 file @f, opened and checked; a version 6 file
 * keeps its options where the walker does not go, and gives none. The walk
 * goes on a copy of @f, which holds the meta beside it.
 */
int td_read_meta(const struct td_file *f, struct td_meta *m)
{
	struct meta_walk w = { .f = *f, .m = m };

	memset(m, 0, sizeof(*m));
	return f->version == 7 ? td_walk_options(&w.f, read_option) : 0;
}

void td_meta_free(struct td_meta *m)
{
	unsigned int i;

	for (i = 0; i < m->nr_guests; i++)
		free(m->guests[i].tids);
	free(m->guests);
	for (i = 0; i < m->nr_buffers; i++)
		free(m->buffers[i].payload);
	free(m->buffers);
	free_shift(m->shift);
	memset(m, 0, sizeof(*m));
}

/* The TSC rate TSC2NSEC stands for: ns = (tsc * mult) >> shift. */
unsigned long td_meta_tsc_khz(const struct td_meta *m)
{
	unsigned __int128 khz;

	if (!m->tsc2nsec_mult || m->tsc2nsec_shift > 63)
		return 0;
	khz = ((unsigned __int128)1000000 << m->tsc2nsec_shift) + m->tsc2nsec_mult / 2;
	khz /= m->tsc2nsec_mult;
	return khz > ULONG_MAX ? 0 : (unsigned long)khz;
}

/*
 * libtracecmd's timestamp_correction_calc(), with its signed arithmetic
 * done modulo 2^64 so that a damaged sample cannot overflow here.
 */
static uint64_t correct(uint64_t ts, uint32_t flags, const struct td_shift_sample *min,
			const struct td_shift_sample *max)
{
	uint64_t tscor = min->offset;

	if (flags & TSYNC_FLAG_INTERPOLATE) {
		int64_t delta = (int64_t)((uint64_t)max->time - (uint64_t)min->time);
		int64_t num = (int64_t)((ts - (uint64_t)min->time) *
					((uint64_t)max->offset - (uint64_t)min->offset) +
					(uint64_t)(delta / 2));

		if (delta == -1)
			tscor += -(uint64_t)num;
		else if (delta)
			tscor += (uint64_t)(num / delta);
	}
	ts = (ts * (uint64_t)min->scaling) >> (min->fraction & 63);
	return ts + tscor;
}

/*
 * The host time libtracecmd's timestamp_host_sync() gives guest time @ts
 * on guest CPU @cpu: one sample applies everywhere, two always use the
 * first, and past the last sample the one before it applies.
 */
uint64_t td_shift_apply(const struct td_time_shift *s, unsigned int cpu, uint64_t ts)
{
	const struct td_shift_cpu *c;
	const struct td_shift_sample *x;
	int lo, hi, mid;

	if (cpu >= s->nr_cpus || !s->cpus[cpu].nr)
		return ts;
	c = &s->cpus[cpu];
	x = c->samples;
	if (c->nr == 1)
		return ts + x[0].offset;
	if (c->nr == 2 || ts <= (unsigned long long)x[0].time)
		return correct(ts, s->flags, &x[0], &x[1]);
	if (ts >= (unsigned long long)x[c->nr - 1].time)
		return correct(ts, s->flags, &x[c->nr - 2], &x[c->nr - 1]);
	lo = 0;
	hi = c->nr - 1;
	mid = (lo + hi) / 2;
	while (lo <= hi) {
		if (ts < (unsigned long long)x[mid].time)
			hi = mid - 1;
		else if (ts > (unsigned long long)x[mid].time)
			lo = mid + 1;
		else
			break;
		mid = (lo + hi) / 2;
	}
	return correct(ts, s->flags, &x[mid], &x[mid + 1]);
}
