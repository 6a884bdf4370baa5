// SPDX-License-Identifier: GPL-2.0
/*
 * progress.c: report a pass's progress on standard error, at most four
 * times a second, as "kvm-tsc-merge: scanning host.dat: 42% (1.2 GB of
 * 2.9 GB), 3 s left" on one line that each report rewrites.
 */
#include <stdio.h>

#include "progress.h"

/* Often enough to look alive, seldom enough to cost nothing. */
#define PROGRESS_INTERVAL 0.25
/* Before this many seconds the rate says too little to promise a time. */
#define PROGRESS_ETA_AFTER 1.0

static double seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Decimal units, as ls --si and a disk's size in a file manager. */
static void format_bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char *const unit[] = { "kB", "MB", "GB", "TB" };
	double v = bytes;
	int u = -1;

	while (v >= 1000 && u < 3) {
		v /= 1000;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, unit[u]);
}

static void format_time(char *buf, size_t size, double s)
{
	unsigned long t = s + 0.5;

	if (!t)
		snprintf(buf, size, "under 1 s");
	else if (t < 60)
		snprintf(buf, size, "%lu s", t);
	else if (t < 3600)
		snprintf(buf, size, "%lu min %lu s", t / 60, t % 60);
	else
		snprintf(buf, size, "%lu h %lu min", t / 3600, t % 3600 / 60);
}

/* Rewrite the line, blanking what a longer last line left behind. */
static void show(struct progress *p, const char *text)
{
	int n = fprintf(stderr, "\rkvm-tsc-merge: %s%s%s: %s", p->what, p->path ? " " : "",
			p->path ? p->path : "", text);

	if (n < p->width)
		fprintf(stderr, "%*s", p->width - n, "");
	p->width = n;
}

static void report(struct progress *p, double elapsed)
{
	char done[32], total[32], eta[32], left[48] = "", text[128];
	/* 100% only once the pass has ended. */
	double frac = p->total ? (double)p->done / p->total : 0;

	if (frac > 0.99)
		frac = 0.99;
	format_bytes(done, sizeof(done), p->done < p->total ? p->done : p->total);
	format_bytes(total, sizeof(total), p->total);
	if (elapsed >= PROGRESS_ETA_AFTER && frac > 0) {
		format_time(eta, sizeof(eta), elapsed * (1 - frac) / frac);
		snprintf(left, sizeof(left), ", %s left", eta);
	}
	snprintf(text, sizeof(text), "%d%% (%s of %s)%s", (int)(frac * 100), done, total, left);
	show(p, text);
	p->shown = elapsed;
}

void progress_start(struct progress *p, bool on, const char *what, const char *path,
		    uint64_t total)
{
	*p = (struct progress){ .on = on, .what = what, .path = path, .total = total,
				.countdown = PROGRESS_CHECK_EVERY };
	if (!on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	report(p, 0);
}

void progress_check(struct progress *p)
{
	double elapsed = seconds_since(&p->start);

	p->countdown = PROGRESS_CHECK_EVERY;
	if (elapsed - p->shown >= PROGRESS_INTERVAL)
		report(p, elapsed);
}

/* @ok: the pass read all its input; else end the line for the error. */
void progress_finish(struct progress *p, bool ok)
{
	char total[32], took[32], text[128];

	if (!p->on)
		return;
	if (ok) {
		format_bytes(total, sizeof(total), p->total);
		format_time(took, sizeof(took), seconds_since(&p->start));
		snprintf(text, sizeof(text), "100%% (%s) in %s", total, took);
		show(p, text);
	}
	fputc('\n', stderr);
}
