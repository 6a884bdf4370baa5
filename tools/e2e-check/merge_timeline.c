// SPDX-License-Identifier: GPL-2.0
/*
 * merge_timeline.c: stage 2's first output: kvm-tsc-merge run on the
 * mode's files (L1's trace as a guest of L0's in modes own, agent and
 * late, with its --sync-out copies; in mode nested, L2's markers as an L2
 * trace), its text timeline judged by the checker's own placement of each
 * marker, and its count of every event; and how every check of its
 * outputs starts.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "events.h"
#include "report.h"

#define MAX_ARGS	24

/* The files of one run of kvm-tsc-merge in the work directory. */
struct merge_files {
	char timeline[PATH_MAX];
	char summary[PATH_MAX];
	char err[PATH_MAX];
};

/* The run's files into @f, and the copies it writes into @sync_dir (NULL: none) into c->found. */
static void name_files(const struct ctx *c, struct merge_files *f, const char *sync_dir)
{
	work_path(c, "TIMELINE.txt", f->timeline);
	work_path(c, "SUMMARY.txt", f->summary);
	work_path(c, "merge.stderr", f->err);
	if (!sync_dir)
		return;
	join_path(c->found->sync_host, sync_dir, "host.dat");
	join_path(c->found->sync_guest, sync_dir, "guest.dat");
}

/* Remove what an earlier run left, so that a failed merge leaves no output to judge. */
static void remove_outputs(const struct ctx *c, const struct merge_files *f, bool sync)
{
	unlink(f->timeline);
	unlink(f->summary);
	if (!sync)
		return;
	unlink(c->found->sync_host);
	unlink(c->found->sync_guest);
}

/* Its "total:" line, and what it printed on standard error. */
static void show_merge(const struct merge_files *f)
{
	char line[512];
	FILE *s = fopen(f->summary, "r");

	while (s && fgets(line, sizeof(line), s))
		if (!strncmp(line, "total:", 6))
			report_msg("SUMMARY.txt: %.*s", (int)strcspn(line, "\n"), line);
	if (s)
		fclose(s);
	child_show(f->err, 6);
}

/*
 * The timeline with every field the checks read and the summary into the
 * work directory, --sync-out copies into @sync_dir unless NULL.
 */
bool run_merge(const struct ctx *c, const char *spec, const char *sync_dir)
{
	char *argv[MAX_ARGS] = {
		(char *)c->t->merge, "-q", "--host", c->l0->path, "--guest", (char *)spec,
		"--fields", "time,source,cpu,event,info",
	};
	struct merge_files f;
	int n = 8, status;

	name_files(c, &f, sync_dir);
	remove_outputs(c, &f, sync_dir != NULL);
	argv[n++] = "--summary";
	argv[n++] = f.summary;
	argv[n++] = "--output";
	argv[n++] = f.timeline;
	if (sync_dir) {
		argv[n++] = "--sync-out";
		argv[n++] = (char *)sync_dir;
		argv[n++] = "--force";
	}
	status = child_run(argv, NULL, NULL, f.err);
	report_msg("kvm-tsc-merge --host %s --guest %s%s: exit status %d", c->l0->name, spec,
		   sync_dir ? " --sync-out" : "", status);
	show_merge(&f);
	if (status)
		return false;
	if (events_read_timeline(f.timeline, &c->found->placed, &c->found->timeline))
		return false;
	c->found->merged = true;
	return true;
}

bool start_merge_check(char *what, const struct ctx *c, const char *outputs, const char *fmt, ...)
{
	FORMAT_ARGS(what, WHAT, fmt);
	if (c->found->merged)
		return true;
	report_result(false, "%s (kvm-tsc-merge wrote no %s to judge)", what, outputs);
	return false;
}

void check_merge_l1(const struct ctx *c)
{
	char what[WHAT], spec[PATH_MAX + 8], sync_dir[PATH_MAX];

	if (!start_check(what, c->l0, c->l1, "kvm-tsc-merge merges %s and %s (--guest l1=%s), its --sync-out copies beside, and exits 0",
			 c->l0->name, c->l1->name, c->l1->name))
		return;
	snprintf(spec, sizeof(spec), "l1=%s", c->l1->path);
	if (mkdir(work_path(c, "sync", sync_dir), 0755) && errno != EEXIST) {
		report_result(false, "%s (%s: %s)", what, sync_dir, strerror(errno));
		return;
	}
	report_result(run_merge(c, spec, sync_dir), "%s", what);
}

/* The line of the kvm_exit of @e in @tl: at its tick, on the CPU that recorded it. */
static bool find_exit(const struct out_events *tl, const struct port_exit *e, size_t *at)
{
	size_t i;

	for (i = 0; i < tl->n; i++) {
		const struct out_event *x = &tl->e[i];

		if (x->ts == e->ts && x->guest_cpu < 0 && x->cpu == e->rec_cpu &&
		    !strcmp(x->event, "kvm_exit")) {
			*at = i;
			return true;
		}
	}
	return false;
}

/* Marker @i's line after the kvm_exit line of the port exit before its own, before its own's. */
static bool judge_order(const struct out_events *tl, size_t i, const struct placed_marker *m,
			unsigned int *shown)
{
	size_t line = tl->n, own, prev = 0, j;

	for (j = 0; j < tl->n && line == tl->n; j++)
		if (tl->e[j].marker == (int)i)
			line = j;
	if (line == tl->n)
		return false;
	if (!find_exit(tl, &m->exit, &own) || (m->has_prev && !find_exit(tl, &m->prev, &prev))) {
		if ((*shown)++ < MAX_SHOWN)
			report_msg("'%s': its port exit at %llu, or the one before, is no kvm_exit line",
				   m->text, (unsigned long long)m->exit.ts);
		return false;
	}
	if (line < own && (!m->has_prev || line > prev))
		return true;
	if ((*shown)++ < MAX_SHOWN)
		report_msg("'%s': line %zu, its port exit's %zu, the one before's %zu", m->text,
			   line + 1, own + 1, prev + 1);
	return false;
}

void check_merge_placement(const struct ctx *c)
{
	const struct out_events *tl = &c->found->timeline;
	const struct placements *p = &c->found->placed;
	const struct unit ticks = { .kind = UNIT_TICKS };
	unsigned int shown = 0;
	char what[WHAT];
	bool ok;
	size_t i;

	if (!start_merge_check(what, c, "timeline", "in TIMELINE.txt every marker is at the checker's host tick for it%s, on its vCPU, unmarked, and right before its own port exit: after the kvm_exit line of the one before, before its own's",
			       p->n && p->m[0].slack ? " (within contract.md's bound of the long way)" : ""))
		return;
	ok = events_judge_markers(c, tl, &ticks, true, "TIMELINE.txt");
	for (i = 0; i < p->n; i++)
		ok &= judge_order(tl, i, &p->m[i], &shown);
	report_result(ok, "%s", what);
}

/* The scenario's markers per vCPU, and its vCPUs: L1's before and after its TSC write, or L2's. */
static void scenario_markers(const struct scenario *s, uint64_t *per_vcpu, uint64_t *vcpus)
{
	bool nested = !strcmp(s->mode, "nested");

	*per_vcpu = nested ? s->l2_markers : 2 * s->l1_markers;
	*vcpus = nested ? s->l2_vcpus : s->l1_vcpus;
}

/* The markers of each guest vCPU in @tl against the scenario's; those not placed by the checker. */
static bool count_markers(const struct ctx *c, const struct out_events *tl)
{
	uint64_t count[MAX_VCPUS] = { 0 }, per_vcpu, vcpus, unplaced = 0, elsewhere = 0;
	bool ok = true;
	unsigned int v;
	size_t i;

	scenario_markers(c->s, &per_vcpu, &vcpus);
	for (i = 0; i < tl->n; i++) {
		const struct out_event *e = &tl->e[i];

		if (e->marker == MARKER_NONE)
			continue;
		unplaced += e->marker == MARKER_UNPLACED;
		if (e->guest_cpu >= 0 && (uint64_t)e->guest_cpu < vcpus)
			count[e->guest_cpu]++;
		else
			elsewhere++;
	}
	for (v = 0; v < vcpus; v++) {
		report_msg("TIMELINE.txt: %llu markers of vCPU %u, the scenario's %llu",
			   (unsigned long long)count[v], v, (unsigned long long)per_vcpu);
		ok &= count[v] == per_vcpu;
	}
	if (elsewhere || unplaced)
		report_msg("TIMELINE.txt: %llu markers on no vCPU of the scenario's, %llu not placed by the checker",
			   (unsigned long long)elsewhere, (unsigned long long)unplaced);
	return ok && !elsewhere && !unplaced;
}

void check_merge_events(const struct ctx *c)
{
	const struct out_events *tl = &c->found->timeline;
	bool nested = !strcmp(c->s->mode, "nested");
	uint64_t want_guest = nested ? c->l1->nr_payload_markers : c->l1->nr_events;
	uint64_t host = 0, guest = 0, marks = 0;
	char what[WHAT];
	bool ok;
	size_t i;

	if (!start_merge_check(what, c, "timeline", "TIMELINE.txt has every event of %s and of %s, the scenario's markers on each vCPU, none unplaced by the checker, and no guest event outside a run of its vCPU or fitting two TSC steps",
			       c->l0->name, nested ? "L2's trace" : c->l1->name))
		return;
	for (i = 0; i < tl->n; i++) {
		host += tl->e[i].guest_cpu < 0;
		guest += tl->e[i].guest_cpu >= 0;
		marks += tl->e[i].mark != 0;
	}
	report_msg("TIMELINE.txt: %llu host events (%s: %llu), %llu guest events (%llu), %llu marked '!' or '?'",
		   (unsigned long long)host, c->l0->name, (unsigned long long)c->l0->nr_events,
		   (unsigned long long)guest, (unsigned long long)want_guest,
		   (unsigned long long)marks);
	ok = count_markers(c, tl);
	report_result(ok && host == c->l0->nr_events && guest == want_guest && !marks, "%s", what);
}
