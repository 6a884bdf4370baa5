// SPDX-License-Identifier: GPL-2.0
/*
 * merge_nested.c: mode nested's L2 trace for kvm-tsc-merge. L2
 * (tsc_nested_payload's guest) keeps no trace: L1 writes each rdtsc value
 * L2 read right before a ucall into its own trace. So L2's trace is made
 * from those markers, as L2 would have stamped an event written just
 * before that port exit (mktrace: an x86-tsc trace.dat, one CPU per L2
 * vCPU, each marker a print event at its tsc= value), and merged with
 * L0's trace as an L2 trace (,l2) through L0's kvm_nested_tsc_offset; and
 * given without ,l2, kvm-tsc-merge must name it and the spec to give.
 * That trace has only the markers before L2's TSC jump: the hint needs
 * more than half of the events outside L1's runs, and after the jump,
 * where L2's TSC lands among L1's depends on how long L0 had been up (in
 * a run 12 minutes after L0's boot, all 25 fell inside L1's runs).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "report.h"

/* mktrace's spec of L2's trace from L1's payload markers below L2's TSC @below into @path. */
static bool write_spec(const struct ctx *c, const char *path, uint64_t below)
{
	FILE *f = fopen(path, "w");
	char text[MARKER_TEXT];
	size_t i;

	if (!f) {
		report_msg("%s: %s", path, strerror(errno));
		return false;
	}
	fprintf(f, "clock x86-tsc\ncpus %llu\n", (unsigned long long)c->s->l2_vcpus);
	for (i = 0; i < c->l1->nr_payload_markers; i++) {
		const struct payload_marker *m = &c->l1->payload_markers[i];

		if (m->tsc >= below)
			continue;
		payload_marker_text(text, sizeof(text), m);
		fprintf(f, "%u %llu 1 ftrace:print ip=0 buf=\"%s\"\n", m->cpu,
			(unsigned long long)m->tsc, text);
	}
	if (fclose(f)) {
		report_msg("%s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

/* L2's trace of its markers below L2's TSC @below, @name in the work directory, into @path. */
static bool write_l2_trace(const struct ctx *c, const char *name, uint64_t below, char *path)
{
	char spec[PATH_MAX], err[PATH_MAX];
	char *argv[] = { (char *)c->t->mktrace, "-t", (char *)c->t->tracefs, "-o", path, spec, NULL };
	int status;

	work_path(c, name, path);
	snprintf(spec, sizeof(spec), "%s.spec", path);
	snprintf(err, sizeof(err), "%s.mktrace.stderr", path);
	unlink(path);
	if (!write_spec(c, spec, below))
		return false;
	status = child_run(argv, NULL, NULL, err);
	report_msg("mktrace: %s from the 'ktt-n-marker' lines of %s below L2's TSC %llu: exit status %d",
		   name, c->l1->name, (unsigned long long)below, status);
	child_show(err, 4);
	return !status;
}

/* L1's VMM process in L0's trace, which ties L2's trace to L1's VM; 0, with a diagnostic, if none. */
static int find_vmm(const struct ctx *c)
{
	int pid = recording_l2_vmm(c->l0);

	if (pid)
		report_msg("%s: L1's VMM, pid %d, made thread %d, which ran L2 first", c->l0->name, pid,
			   c->l0->l2_runner);
	else
		report_msg("%s: no task_newtask made thread %d, which ran L2 first (0: none did)",
			   c->l0->name, c->l0->l2_runner);
	return pid;
}

void check_merge_l2(const struct ctx *c)
{
	char what[WHAT], path[PATH_MAX], spec[PATH_MAX + 32];
	int pid;

	if (!start_check(what, c->l0, c->l1, "kvm-tsc-merge merges %s with L2's trace (its markers from %s) as an L2 trace, --guest l2=l2.dat@PID,l2, and exits 0",
			 c->l0->name, c->l1->name))
		return;
	pid = find_vmm(c);
	if (!pid || !write_l2_trace(c, "l2.dat", UINT64_MAX, path)) {
		report_result(false, "%s", what);
		return;
	}
	snprintf(spec, sizeof(spec), "l2=%s@%d,l2", path, pid);
	report_result(run_merge(c, spec, NULL), "%s", what);
}

/* kvm-tsc-merge on L0's trace and L2's as an L1 guest's: its exit status, standard error in @err. */
static int merge_without_l2(const struct ctx *c, const char *spec, const char *err)
{
	char *argv[] = { (char *)c->t->merge, "-q", "-n", "--host", c->l0->path, "--guest",
			 (char *)spec, NULL };
	int status = child_run(argv, NULL, NULL, err);

	report_msg("kvm-tsc-merge -n --host %s --guest %s: exit status %d", c->l0->name, spec,
		   status);
	child_show(err, 3);
	return status;
}

/* Whether @path holds @text. */
static bool file_has(const char *path, const char *text)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen(path, "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return found;
}

void check_merge_l2_hint(const struct ctx *c)
{
	char what[WHAT], path[PATH_MAX], spec[PATH_MAX + 32], err[PATH_MAX], hint[PATH_MAX + 64];
	int pid;

	if (!start_check(what, c->l0, c->l1, "L2's trace before its TSC jump given without ,l2 (--guest l2=l2-before.dat@PID): kvm-tsc-merge exits 3 and names it as recorded inside the nested guest, with the spec to give"))
		return;
	pid = find_vmm(c);
	if (!pid || !write_l2_trace(c, "l2-before.dat", c->s->l2_tsc_jump, path)) {
		report_result(false, "%s", what);
		return;
	}
	snprintf(spec, sizeof(spec), "l2=%s@%d", path, pid);
	snprintf(hint, sizeof(hint), "Give it with ,l2: --guest %s", spec);
	if (merge_without_l2(c, spec, work_path(c, "no-l2.stderr", err)) != 3) {
		report_result(false, "%s", what);
		return;
	}
	if (!file_has(err, hint))
		report_msg("%s has no '%s'", err, hint);
	report_result(file_has(err, hint), "%s", what);
}
