// SPDX-License-Identifier: GPL-2.0
/*
 * events.c: kvm-tsc-merge's outputs as lists of events (time, source, CPU,
 * event, the marker it is), read line by line, and the two judgments
 * stage 2 makes of a list: event by event against the timeline, and each
 * marker at the checker's own host tick for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "report.h"

/* Differences an event-by-event comparison shows. */
#define SHOWN_DIFFS	4

uint64_t unit_of(const struct unit *u, uint64_t tick)
{
	switch (u->kind) {
	case UNIT_TSC2NSEC:
		return ((unsigned __int128)tick * u->mult) >> u->shift;
	case UNIT_KHZ:
		return (unsigned __int128)tick * 1000000 / u->khz;
	default:
		return tick;
	}
}

const char *unit_name(const struct unit *u)
{
	return u->kind == UNIT_TICKS ? "host ticks" : "host ns";
}

void events_add(struct out_events *l, const struct out_event *e)
{
	l->e = grow(l->e, l->n, sizeof(*l->e));
	l->e[l->n++] = *e;
}

void events_free(struct out_events *l)
{
	free(l->e);
	*l = (struct out_events){ 0 };
}

static int by_time(const void *a, const void *b)
{
	const struct out_event *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->guest_cpu != y->guest_cpu)
		return x->guest_cpu < y->guest_cpu ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return strcmp(x->event, y->event);
}

/* Sort @l by time, source, CPU and event: for outputs that order ties their own way. */
static void events_sort(struct out_events *l)
{
	if (l->n)
		qsort(l->e, l->n, sizeof(*l->e), by_time);
}

int events_marker_of(const struct placements *p, const char *info)
{
	const char *text = strstr(info, "ktt-");
	size_t len, i;

	if (!text)
		return MARKER_NONE;
	len = strlen(text);
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\n'))
		len--;
	/* protoc prints print's buf with its newline escaped. */
	if (len >= 2 && text[len - 2] == '\\' && text[len - 1] == 'n')
		len -= 2;
	for (i = 0; i < p->n; i++)
		if (strlen(p->m[i].text) == len && !strncmp(p->m[i].text, text, len))
			return i;
	return MARKER_UNPLACED;
}

/* "NAME:V" with '!' or '?' after it, or "host", into @e. */
static int parse_source(const char *source, struct out_event *e)
{
	const char *colon = strrchr(source, ':');
	char *end;
	long v;

	e->guest_cpu = -1;
	e->mark = 0;
	if (!strcmp(source, "host"))
		return 0;
	if (!colon)
		return -1;
	v = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || v < 0 || strspn(end, "!?") != strlen(end))
		return -1;
	e->guest_cpu = v;
	e->mark = *end;
	return 0;
}

/* "TIME SOURCE [CPU] EVENT: INFO" into @e. */
static int parse_timeline_line(const char *line, const struct placements *p, struct out_event *e)
{
	unsigned long long ts;
	char source[64];
	int cpu, info = 0;

	if (sscanf(line, "%llu %63s [%d] %31[^:]:%n", &ts, source, &cpu, e->event, &info) != 4 ||
	    !info || parse_source(source, e))
		return -1;
	e->ts = ts;
	e->cpu = cpu;
	e->marker = strcmp(e->event, "print") ? MARKER_NONE : events_marker_of(p, line + info);
	return 0;
}

FILE *events_open(const char *path, struct out_events *l)
{
	FILE *f = fopen(path, "r");

	*l = (struct out_events){ 0 };
	if (!f)
		report_msg("%s: %s", path, strerror(errno));
	return f;
}

int events_read(const char *path, const struct placements *p, parse_fn parse, const char *shape,
		struct out_events *l)
{
	FILE *f = events_open(path, l);
	struct out_event e;
	char *line = NULL;
	size_t size = 0;
	int nr = 0, ret = 0;

	if (!f)
		return -1;
	while (!ret && getline(&line, &size, f) > 0) {
		nr++;
		if (!parse(line, p, &e)) {
			events_add(l, &e);
		} else if (shape) {
			line[strcspn(line, "\n")] = '\0';
			report_msg("%s:%d: not '%s': %.80s", path, nr, shape, line);
			ret = -1;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int events_read_timeline(const char *path, const struct placements *p, struct out_events *l)
{
	if (events_read(path, p, parse_timeline_line, "TIME SOURCE [CPU] EVENT: INFO", l))
		return -1;
	if (l->n)
		return 0;
	report_msg("%s: no events", path);
	return -1;
}

/*
 * The timeline's events (@host and @guest: the units of its host and guest
 * events in the output), the guest's alone when @guest_only, into @out.
 */
static void events_convert(const struct out_events *timeline, const struct unit *host,
			   const struct unit *guest, bool guest_only, struct out_events *out)
{
	size_t i;

	*out = (struct out_events){ 0 };
	for (i = 0; i < timeline->n; i++) {
		struct out_event e = timeline->e[i];

		if (guest_only && e.guest_cpu < 0)
			continue;
		e.ts = unit_of(e.guest_cpu < 0 ? host : guest, e.ts);
		events_add(out, &e);
	}
}

static bool same_event(const struct out_event *a, const struct out_event *b)
{
	return a->ts == b->ts && (a->guest_cpu < 0) == (b->guest_cpu < 0) && a->cpu == b->cpu &&
	       !strcmp(a->event, b->event);
}

static void describe_event(char *buf, size_t size, const struct out_events *l, size_t i)
{
	const struct out_event *e = &l->e[i];

	if (i >= l->n)
		snprintf(buf, size, "none");
	else
		snprintf(buf, size, "%llu %s [%03d] %s", (unsigned long long)e->ts,
			 e->guest_cpu < 0 ? "host" : "guest", e->cpu, e->event);
}

/* @got against @want event by event; diagnostics name @what and the first differences. */
static bool events_compare(const struct out_events *want, const struct out_events *got,
			   const char *what)
{
	size_t i, n = want->n > got->n ? want->n : got->n, guest = 0, diffs = 0;
	char a[96], b[96];

	for (i = 0; i < want->n; i++)
		guest += want->e[i].guest_cpu >= 0;
	for (i = 0; i < n; i++) {
		if (i < want->n && i < got->n && same_event(&want->e[i], &got->e[i]))
			continue;
		if (diffs++ >= SHOWN_DIFFS)
			continue;
		describe_event(a, sizeof(a), want, i);
		describe_event(b, sizeof(b), got, i);
		report_msg("  event %zu: the timeline's: %s; %s's: %s", i, a, what, b);
	}
	report_msg("%s: %zu events against the timeline's %zu (%zu of the guest), %zu differ", what,
		   got->n, want->n, guest, diffs);
	return !diffs && want->n;
}

/* The events of @got that are marker @i: by text, or the guest's print at the time it must have. */
static size_t find_marker(const struct out_events *got, size_t i, const struct placed_marker *m,
			  uint64_t at, bool by_text, size_t *found)
{
	size_t j, n = 0;

	for (j = 0; j < got->n; j++) {
		const struct out_event *e = &got->e[j];

		if (by_text ? e->marker != (int)i :
			      e->guest_cpu != (int)m->cpu || e->ts != at || strcmp(e->event, "print"))
			continue;
		if (!n++)
			*found = j;
	}
	return n;
}

/* Marker @i's one event in @got, its vCPU, mark and time against the checker's @at. */
static bool judge_marker(const struct out_events *got, size_t i, const struct placed_marker *m,
			 uint64_t at, uint64_t slack, bool by_text, const struct unit *u,
			 uint64_t *worst, unsigned int *shown)
{
	size_t n, j = 0;
	uint64_t d;

	n = find_marker(got, i, m, at, by_text, &j);
	if (n != 1) {
		if ((*shown)++ < MAX_SHOWN)
			report_msg("'%s': %zu events%s, not one", m->text, n,
				   by_text ? "" : " of print at the checker's time on its vCPU");
		return false;
	}
	d = got->e[j].ts > at ? got->e[j].ts - at : at - got->e[j].ts;
	*worst = d > *worst ? d : *worst;
	if (got->e[j].guest_cpu == (int)m->cpu && !got->e[j].mark && d <= slack)
		return true;
	if ((*shown)++ < MAX_SHOWN)
		report_msg("'%s': at %llu on vCPU %d%s%.1s, the checker's %llu %s on vCPU %u", m->text,
			   (unsigned long long)got->e[j].ts, got->e[j].guest_cpu,
			   got->e[j].mark ? " marked " : "", &got->e[j].mark, (unsigned long long)at,
			   unit_name(u), m->cpu);
	return false;
}

bool events_judge_markers(const struct ctx *c, const struct out_events *got, const struct unit *u,
			  bool by_text, const char *what)
{
	const struct placements *p = &c->found->placed;
	unsigned int shown = 0;
	uint64_t worst = 0;
	bool ok = true;
	size_t i;

	if (!p->n) {
		report_msg("stage 1 placed no marker to judge %s by", what);
		return false;
	}
	for (i = 0; i < p->n; i++) {
		const struct placed_marker *m = &p->m[i];
		uint64_t slack = m->slack ? unit_of(u, m->slack) + 1 : 0;

		ok &= judge_marker(got, i, m, unit_of(u, m->host), slack, by_text, u, &worst, &shown);
	}
	report_msg("%s: %zu markers against the checker's placement, the largest difference %llu %s",
		   what, p->n, (unsigned long long)worst, unit_name(u));
	return ok;
}

bool events_judge_output(const struct ctx *c, struct out_events *got, const struct unit *host,
			 const struct unit *guest, const struct view *v)
{
	struct out_events want;
	bool ok;

	events_convert(&c->found->timeline, host, guest, v->guest_only, &want);
	if (v->own_order) {
		events_sort(&want);
		events_sort(got);
	}
	ok = events_compare(&want, got, v->name);
	ok &= events_judge_markers(c, got, guest, v->by_text, v->name);
	events_free(&want);
	return ok;
}
