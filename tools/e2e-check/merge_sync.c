// SPDX-License-Identifier: GPL-2.0
/*
 * merge_sync.c: kvm-tsc-merge's --sync-out copies judged through the
 * tools users read them with: trace-cmd report (every event at the
 * timeline's time, every marker at the checker's), libkshark by
 * kshark-times (the guest's events, and KernelShark's KVM combo: each
 * vCPU's thread and its entries and exits as the checker counted them),
 * and trace-cmd report of the host copy against the input's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "events.h"
#include "report.h"

/* record-host.sh's tracing instance, whose name trace-cmd report puts before each line. */
#define RECORD_INSTANCE	"kvm-tsc-record:"
/* Lines a line-by-line comparison shows of its differences. */
#define SHOWN_LINES	4

/*
 * Where libtracecmd shows @path's times in ns, the last "MULT SHIFT
 * OFFSET [multiplier, shift, offset]" line trace-cmd dump prints of it:
 * its TSC2NSEC, which converts them (with clock x86-tsc it shows ticks).
 */
static int read_tsc2nsec(const char *path, const char *err, struct unit *u)
{
	char *argv[] = { "trace-cmd", "dump", "--options", "-i", (char *)path, NULL };
	unsigned long long mult, value, offset = 0;
	struct child ch;
	unsigned int shift;
	char line[256];
	int status, n;
	bool ns;

	*u = (struct unit){ .kind = UNIT_TICKS };
	if (recording_shows_ns(path, &ns)) {
		report_msg("%s: libtracecmd cannot open it", path);
		return -1;
	}
	if (!ns)
		return 0;
	if (child_open(&ch, argv, NULL, err))
		return -1;
	while (fgets(line, sizeof(line), ch.out)) {
		n = 0;
		if (sscanf(line, "%llu %u %llu [multiplier, shift, offset]%n", &mult, &shift, &value,
			   &n) != 3 || !n)
			continue;
		*u = (struct unit){ .kind = UNIT_TSC2NSEC, .mult = mult, .shift = shift };
		offset = value;
	}
	status = child_close(&ch);
	if (status)
		report_msg("trace-cmd dump --options -i %s: exit status %d", path, status);
	if (offset)
		report_msg("%s: TSC2NSEC offset %llu: e2e-check applies none", path, offset);
	if (u->kind != UNIT_TSC2NSEC)
		report_msg("%s: in ns without a TSC2NSEC option", path);
	return status || offset || u->kind != UNIT_TSC2NSEC ? -1 : 0;
}

/* The units the copies of L0's and L1's traces show time in. */
static bool read_units(const struct ctx *c, struct unit *host, struct unit *guest)
{
	char err[PATH_MAX];

	work_path(c, "trace-cmd-dump.stderr", err);
	if (read_tsc2nsec(c->found->sync_host, err, host) ||
	    read_tsc2nsec(c->found->sync_guest, err, guest))
		return false;
	if (host->kind == UNIT_TSC2NSEC)
		report_msg("the copies have TSC2NSEC (%llu >> %u, %llu >> %u): times compared in ns",
			   (unsigned long long)host->mult, host->shift,
			   (unsigned long long)guest->mult, guest->shift);
	return true;
}

/* A time "SEC.NSEC" or "TICKS" at *@p into @ts, *@p moved past it. */
static bool parse_time(const char **p, uint64_t *ts)
{
	char *end;
	uint64_t t = strtoull(*p, &end, 10), frac = 0;
	int digits = 0;

	if (end == *p)
		return false;
	if (*end == '.') {
		for (end++; *end >= '0' && *end <= '9'; end++, digits++)
			if (digits < 9)
				frac = frac * 10 + (*end - '0');
		for (; digits < 9; digits++)
			frac *= 10;
		t = t * 1000000000 + frac;
	}
	*ts = t;
	*p = end;
	return true;
}

/* "FILE: COMM-PID [CPU] TIME: EVENT: INFO" of trace-cmd report -t into @e. */
static int parse_report_line(const char *line, const struct placements *p, struct out_event *e)
{
	const char *file = line + strspn(line, " "), *b, *rest;
	int cpu, n, m;

	for (b = strchr(line, '['); b; b = strchr(b + 1, '[')) {
		n = m = 0;
		if (sscanf(b, "[%d]%n", &cpu, &n) != 1 || !n)
			continue;
		rest = b + n + strspn(b + n, " ");
		if (!parse_time(&rest, &e->ts) || sscanf(rest, ": %31[^:]:%n", e->event, &m) != 1 || !m)
			continue;
		e->cpu = cpu;
		e->guest_cpu = strncmp(file, "guest.dat:", 10) ? -1 : cpu;
		e->mark = 0;
		e->marker = strcmp(e->event, "print") ? MARKER_NONE : events_marker_of(p, rest + m);
		return 0;
	}
	return -1;
}

/* The events of trace-cmd report's output @path (its header lines aside) into @l. */
static int read_report(const char *path, const struct placements *p, struct out_events *l)
{
	return events_read(path, p, parse_report_line, NULL, l);
}

/* @argv's standard output into @out in the work directory, its errors beside; false unless 0. */
static bool run_into(const struct ctx *c, char *const argv[], const char *out)
{
	char path[PATH_MAX], err[PATH_MAX], name[PATH_MAX];
	int status;

	snprintf(name, sizeof(name), "%s.stderr", out);
	status = child_run(argv, NULL, work_path(c, out, path), work_path(c, name, err));
	if (status)
		report_msg("%s: exit status %d, its output in %s", argv[0], status, path);
	child_show(err, 4);
	return !status;
}

/* A tool that reads the copies: its output in the work directory, read back, and what it shows. */
struct copy_reader {
	const char *out;
	int (*read)(const char *path, const struct placements *p, struct out_events *l);
	struct view view;
};

/* The check of @words: @argv, the tool @r, on the copies, against the timeline. */
static void judge_copies(const struct ctx *c, char *const argv[], const struct copy_reader *r,
			 const char *words)
{
	struct out_events got;
	char what[WHAT], path[PATH_MAX];
	struct unit hu, gu;

	if (!start_merge_check(what, c, "timeline and copies", "%s", words))
		return;
	if (!read_units(c, &hu, &gu) || !run_into(c, argv, r->out) ||
	    r->read(work_path(c, r->out, path), &c->found->placed, &got)) {
		report_result(false, "%s", what);
		return;
	}
	report_result(events_judge_output(c, &got, &hu, &gu, &r->view), "%s", what);
	events_free(&got);
}

void check_sync_report(const struct ctx *c)
{
	static const struct copy_reader report = {
		"sync-report.txt", read_report, { "trace-cmd report", .by_text = true }
	};
	char *argv[] = { "trace-cmd", "report", "-N", "-t", "-i", c->found->sync_host, "-i",
			 c->found->sync_guest, NULL };

	judge_copies(c, argv, &report,
		     "trace-cmd report -i sync/host.dat -i sync/guest.dat shows every event of TIMELINE.txt at its time and in its order, and every marker at the checker's host tick for it (in ns where the copies have TSC2NSEC)");
}

/* kshark-times' "TIME CPU EVENT" lines of the guest stream at @path into @l (no marker's text). */
static int read_kshark(const char *path, const struct placements *p, struct out_events *l)
{
	FILE *f = events_open(path, l);
	struct out_event e = { .marker = MARKER_NONE };
	unsigned long long ts;
	char line[256];
	int nr = 0;

	(void)p;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		nr++;
		if (sscanf(line, "%llu %d %31s", &ts, &e.cpu, e.event) != 3) {
			report_msg("%s:%d: not 'TIME CPU EVENT'", path, nr);
			fclose(f);
			return -1;
		}
		e.ts = ts;
		e.guest_cpu = e.cpu;
		events_add(l, &e);
	}
	fclose(f);
	return 0;
}

void check_sync_kshark(const struct ctx *c)
{
	/* The guest's stream, which orders events of one time its own way. */
	static const struct copy_reader kshark = {
		"kshark.txt", read_kshark,
		{ "libkshark's guest stream", .guest_only = true, .own_order = true }
	};
	char *argv[] = { (char *)c->t->kshark_times, c->found->sync_host, c->found->sync_guest,
			 NULL };

	judge_copies(c, argv, &kshark,
		     "libkshark (kshark-times) puts the guest events of the --sync-out copies at the timeline's host times, each marker's print at the checker's");
}

/* One "NAME vcpu N tid T stream S kvm_entry E kvm_exit X" line against L0's trace. */
static bool judge_combo_line(const struct ctx *c, const char *line, bool *seen)
{
	unsigned long long entries, exits;
	unsigned int vcpu;
	int tid, stream;
	const struct vcpu_facts *vc;

	if (sscanf(line, "%*s vcpu %u tid %d stream %d kvm_entry %llu kvm_exit %llu", &vcpu, &tid,
		   &stream, &entries, &exits) != 5 || vcpu >= c->s->l1_vcpus || seen[vcpu]) {
		report_msg("  not one line of a vCPU of L1's: %.*s", (int)strcspn(line, "\n"), line);
		return false;
	}
	seen[vcpu] = true;
	vc = &c->l0->vcpu[vcpu];
	report_msg("vcpu %u: thread %d, stream %d, %llu kvm_entry, %llu kvm_exit; %s: thread %d, %llu and %llu",
		   vcpu, tid, stream, entries, exits, c->l0->name, vc->tid,
		   (unsigned long long)vc->nr_entries, (unsigned long long)vc->nr_exits);
	return tid == vc->tid && entries == vc->nr_entries && exits == vc->nr_exits;
}

void check_sync_combo(const struct ctx *c)
{
	char *argv[] = { (char *)c->t->kshark_times, "--combo", c->found->sync_host,
			 c->found->sync_guest, NULL };
	char what[WHAT], out[PATH_MAX], line[256];
	bool seen[MAX_VCPUS] = { false }, ok;
	unsigned int n = 0;
	FILE *f;

	if (!start_merge_check(what, c, "timeline and copies", "KernelShark's KVM combo on the copies: libkshark maps L1's %llu vCPUs, each to the thread that ran it in %s, with its kvm_entry and kvm_exit events there",
			       (unsigned long long)c->s->l1_vcpus, c->l0->name))
		return;
	ok = run_into(c, argv, "kshark-combo.txt");
	f = fopen(work_path(c, "kshark-combo.txt", out), "r");
	while (f && fgets(line, sizeof(line), f)) {
		ok &= judge_combo_line(c, line, seen);
		n++;
	}
	if (f)
		fclose(f);
	report_result(ok && n == c->s->l1_vcpus, "%s", what);
}

/* A report line without the leading blanks and record-host.sh's instance name. */
static const char *strip_line(char *line)
{
	line += strspn(line, " ");
	if (!strncmp(line, RECORD_INSTANCE, strlen(RECORD_INSTANCE)))
		line += strlen(RECORD_INSTANCE);
	return line + strspn(line, " ");
}

/* Two trace-cmd reports line by line; diagnostics name the first differences. */
static bool compare_reports(const char *a_path, const char *b_path)
{
	FILE *a = fopen(a_path, "r"), *b = fopen(b_path, "r");
	char *la = NULL, *lb = NULL;
	size_t sa = 0, sb = 0, n = 0, diffs = 0;
	ssize_t ra = 1, rb = 1;

	while (a && b && (ra > 0 || rb > 0)) {
		ra = getline(&la, &sa, a);
		rb = getline(&lb, &sb, b);
		if (ra <= 0 && rb <= 0)
			break;
		n++;
		if (ra > 0 && rb > 0 && !strcmp(strip_line(la), strip_line(lb)))
			continue;
		if (diffs++ < SHOWN_LINES)
			report_msg("  line %zu: %.100s | %.100s", n, ra > 0 ? strip_line(la) : "(end)",
				   rb > 0 ? strip_line(lb) : "(end)");
	}
	report_msg("%zu lines, %zu differ", n, diffs);
	free(la);
	free(lb);
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	return a && b && n > 1 && !diffs;
}

void check_sync_host_report(const struct ctx *c)
{
	char *input[] = { "trace-cmd", "report", "-i", c->l0->path, NULL };
	char *output[] = { "trace-cmd", "report", "-i", c->found->sync_host, NULL };
	char what[WHAT], a[PATH_MAX], b[PATH_MAX];

	if (!start_merge_check(what, c, "timeline and copies", "trace-cmd report of the host copy is %s's, line for line (record-host.sh's instance name aside)",
			       c->l0->name))
		return;
	if (!run_into(c, input, "host.report") || !run_into(c, output, "sync-host.report")) {
		report_result(false, "%s", what);
		return;
	}
	report_result(compare_reports(work_path(c, "host.report", a),
				      work_path(c, "sync-host.report", b)), "%s", what);
}
