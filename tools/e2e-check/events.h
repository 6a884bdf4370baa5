/* SPDX-License-Identifier: GPL-2.0 */
/*
 * events.h: an output of kvm-tsc-merge as a list of events, in the units
 * it shows time in, read line by line; an output compared with the
 * timeline event by event, and its markers judged by the checker's own
 * placement of them.
 */
#ifndef E2E_CHECK_EVENTS_H
#define E2E_CHECK_EVENTS_H

#include <stdio.h>

#include "check.h"

/* How an output shows host tick t: t itself, trace-cmd's TSC2NSEC, or ns at a rate. */
enum unit_kind {
	UNIT_TICKS,
	UNIT_TSC2NSEC,
	UNIT_KHZ,
};

struct unit {
	enum unit_kind kind;
	/* UNIT_TSC2NSEC: (t * mult) >> shift; UNIT_KHZ: t * 10^6 / khz, rounded down. */
	uint64_t mult;
	unsigned int shift;
	uint64_t khz;
};

uint64_t unit_of(const struct unit *u, uint64_t tick);
const char *unit_name(const struct unit *u);

void events_add(struct out_events *l, const struct out_event *e);
void events_free(struct out_events *l);
/*
 * The placed marker whose text @info holds from "ktt-" on (a trailing
 * newline aside); MARKER_UNPLACED for another "ktt-" text, else MARKER_NONE.
 */
int events_marker_of(const struct placements *p, const char *info);

/* @path opened to be read into @l, emptied; NULL, with a diagnostic, when it cannot be. */
FILE *events_open(const char *path, struct out_events *l);
/* One line of an output into @e, its marker found in @p; -1 when it shows no event. */
typedef int (*parse_fn)(const char *line, const struct placements *p, struct out_event *e);
/*
 * The events of the output at @path, line by line by @parse, into @l. A
 * line that shows no event is passed over, or, when @shape says what each
 * line must be, ends the reading with a diagnostic quoting it. -1 when
 * @path could not be read, or a line ended the reading.
 */
int events_read(const char *path, const struct placements *p, parse_fn parse, const char *shape,
		struct out_events *l);
/*
 * kvm-tsc-merge's text timeline (--fields time,source,cpu,event,info) at
 * @path into @l, its markers found; -1, with a diagnostic naming the file
 * and line, when it cannot be read.
 */
int events_read_timeline(const char *path, const struct placements *p, struct out_events *l);

/* How an output of kvm-tsc-merge shows the timeline's events, but for its units. */
struct view {
	/* The output, as diagnostics name it. */
	const char *name;
	/* It shows the guest's events alone. */
	bool guest_only;
	/* It orders events of one time its own way: both lists are sorted to be compared. */
	bool own_order;
	/* Its events name their markers; else a marker is the guest's print event at its time. */
	bool by_text;
};

/*
 * @got, the events of an output that @v says how it shows, with its host
 * and guest events in @host and @guest units: event by event against the
 * timeline, and each placed marker as events_judge_markers says.
 */
bool events_judge_output(const struct ctx *c, struct out_events *got, const struct unit *host,
			 const struct unit *guest, const struct view *v);
/*
 * Each placed marker once in @got, on its vCPU, unmarked, at the checker's
 * host tick for it shown in @u (within its slack). @by_text: @got's events
 * name their markers; else a marker is the guest's print event there.
 */
bool events_judge_markers(const struct ctx *c, const struct out_events *got, const struct unit *u,
			  bool by_text, const char *what);

#endif
