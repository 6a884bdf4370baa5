/* SPDX-License-Identifier: GPL-2.0 */
/*
 * progress.h: one pass's progress on standard error: the share of its
 * input read, and the time left at the rate so far, on one line rewritten
 * in place.
 */
#ifndef TSC_MERGE_PROGRESS_H
#define TSC_MERGE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/*
 * Records between two looks at the clock: a pass reads millions a second,
 * and one clock_gettime() per record would cost more than the rest of the
 * hook.
 */
#define PROGRESS_CHECK_EVERY 4096

struct progress {
	bool on;
	const char *what;		/* "scanning" */
	const char *path;		/* the file it reads; NULL: several */
	uint64_t total;			/* bytes of CPU data it reads, decompressed */
	uint64_t done;
	unsigned int countdown;		/* records until the next look */
	struct timespec start;
	double shown;			/* seconds since @start of the last line */
	int width;			/* of the last line, to blank its tail */
};

void progress_start(struct progress *p, bool on, const char *what, const char *path,
		    uint64_t total);
void progress_check(struct progress *p);
void progress_finish(struct progress *p, bool ok);

/*
 * @bytes more of the input read: a record's distance from the one its CPU
 * gave before. Off, it is one add and one test.
 */
static inline void progress_add(struct progress *p, uint64_t bytes)
{
	p->done += bytes;
	if (p->on && !--p->countdown)
		progress_check(p);
}

#endif
