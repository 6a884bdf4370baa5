// SPDX-License-Identifier: GPL-2.0
/*
 * merge_perfetto.c: kvm-tsc-merge's Perfetto trace (-p) decoded by protoc
 * and read back by the tests' pftrace-check
 * (tools/tsc-merge/tests/pftrace-check.c): what trace_processor's import
 * of ftrace bundles and machines relies on, and the guest's events,
 * machine 1, at the timeline's host ns, each marker at the checker's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "events.h"
#include "report.h"

/*
 * A line "ftrace<TAB>1<TAB>CPU<TAB>TIME<TAB>PID<TAB>EVENT<TAB>FIELDS" of
 * pftrace-check --events, an event of machine 1, into @e; its marker from
 * a print's buf. -1 for any other line.
 */
static int parse_guest_line(const char *line, const struct placements *p, struct out_event *e)
{
	const char *prefix = "ftrace\t1\t", *event;
	char *end;
	long cpu;
	size_t len;

	if (strncmp(line, prefix, strlen(prefix)))
		return -1;
	cpu = strtol(line + strlen(prefix), &end, 10);
	if (*end != '\t')
		return -1;
	e->ts = strtoull(end + 1, &end, 10);
	/* The pid, empty on a compact event, before the event's name. */
	event = *end == '\t' ? strchr(end + 1, '\t') : NULL;
	if (!event)
		return -1;
	event++;
	len = strcspn(event, "\t\n");
	snprintf(e->event, sizeof(e->event), "%.*s", (int)len, event);
	e->cpu = e->guest_cpu = cpu;
	e->mark = 0;
	e->marker = strcmp(e->event, "print") ? MARKER_NONE : events_marker_of(p, event + len);
	return 0;
}

/* pftrace-check, with @option unless NULL, on protoc's text @decoded into work file @out; its exit status. */
static int run_pftrace_check(const struct ctx *c, char *option, const char *decoded,
			     const char *out)
{
	char *argv[] = { (char *)c->t->pftrace_check, option, NULL };
	char out_path[PATH_MAX], err[PATH_MAX], err_name[PATH_MAX];
	int status;

	snprintf(err_name, sizeof(err_name), "%s.stderr", out);
	status = child_run(argv, decoded, work_path(c, out, out_path),
			   work_path(c, err_name, err));
	report_msg("pftrace-check%s%s < l1.pftrace.txt: exit status %d", option ? " " : "",
		   option ? option : "", status);
	child_show(err, 4);
	return status;
}

/* protoc --decode of @pftrace into @decoded; false when protoc fails. */
static bool decode(const struct ctx *c, const char *pftrace, const char *decoded)
{
	char proto[PATH_MAX], path_arg[PATH_MAX + 16], err[PATH_MAX];
	char *argv[] = { "protoc", "--decode=perfetto.protos.Trace", path_arg, proto, NULL };
	int status;

	join_path(proto, c->t->proto_dir, "perfetto_trace.proto");
	snprintf(path_arg, sizeof(path_arg), "--proto_path=%s", c->t->proto_dir);
	status = child_run(argv, pftrace, decoded, work_path(c, "protoc.stderr", err));
	report_msg("protoc --decode=perfetto.protos.Trace: exit status %d", status);
	child_show(err, 4);
	return !status;
}

/* The import rules over @decoded, as pftrace-check prints them; whether they hold. */
static bool judge_rules(const struct ctx *c, const char *decoded)
{
	char out[PATH_MAX];
	int status = run_pftrace_check(c, NULL, decoded, "rules.txt");

	child_show(work_path(c, "rules.txt", out), MAX_SHOWN + 1);
	return !status;
}

/* Machine 1's events in @decoded, as pftrace-check --events lists them, into @guest. */
static bool read_guest(const struct ctx *c, const char *decoded, struct out_events *guest)
{
	char out[PATH_MAX];
	bool ok;

	work_path(c, "events.txt", out);
	ok = !run_pftrace_check(c, "--events", decoded, "events.txt") &&
	     !events_read(out, &c->found->placed, parse_guest_line, NULL, guest);
	/* As large as protoc's text: read, it goes too. */
	unlink(out);
	return ok;
}

/* kvm-tsc-merge -p into @pftrace, L0's rate given. */
static bool write_perfetto(const struct ctx *c, const char *pftrace)
{
	char khz[32], spec[PATH_MAX + 8], err[PATH_MAX];
	char *argv[] = { (char *)c->t->merge, "-q", "-n", "--host", c->l0->path, "--guest", spec,
			 "--tsc-khz", khz, "--perfetto", (char *)pftrace, NULL };
	int status;

	snprintf(khz, sizeof(khz), "%llu", (unsigned long long)c->l0->tsc_khz);
	snprintf(spec, sizeof(spec), "l1=%s", c->l1->path);
	unlink(pftrace);
	status = child_run(argv, NULL, NULL, work_path(c, "perfetto.stderr", err));
	report_msg("kvm-tsc-merge -n --tsc-khz %s --perfetto l1.pftrace: exit status %d", khz,
		   status);
	child_show(err, 4);
	return !status;
}

void check_perfetto(const struct ctx *c)
{
	/* Machine 1, the guest: its events read bundle by bundle, in an order of their own. */
	static const struct view guest_view = { "machine 1", .guest_only = true,
						.own_order = true, .by_text = true };
	struct unit ns = { .kind = UNIT_KHZ, .khz = c->l0->tsc_khz };
	struct out_events guest = { 0 };
	char what[WHAT], pftrace[PATH_MAX], decoded[PATH_MAX];
	bool ok, read;

	if (!start_merge_check(what, c, "timeline", "the Perfetto trace (-p) decodes with protoc, keeps the import rules of ftrace bundles and machines, and has the guest's events at the timeline's host ns, each marker at the checker's"))
		return;
	if (!c->l0->tsc_khz) {
		report_result(false, "%s (no TSC rate of L0's known)", what);
		return;
	}
	report_msg("L0's rate: %llu kHz, from %s", (unsigned long long)c->l0->tsc_khz,
		   c->l0->tsc_khz_from);
	work_path(c, "l1.pftrace", pftrace);
	work_path(c, "l1.pftrace.txt", decoded);
	if (!write_perfetto(c, pftrace) || !decode(c, pftrace, decoded)) {
		report_result(false, "%s", what);
		return;
	}
	ok = judge_rules(c, decoded);
	read = read_guest(c, decoded, &guest);
	/* protoc's text, many times the trace's size, is read: l1.pftrace is kept. */
	unlink(decoded);
	/* Judged even where a rule failed: where the events are tells why. */
	ok = read && events_judge_output(c, &guest, &ns, &ns, &guest_view) && ok;
	events_free(&guest);
	report_result(ok, "%s", what);
}
