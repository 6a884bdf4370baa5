// SPDX-License-Identifier: GPL-2.0
/*
 * main.c: e2e-check's command line: read the scenarios and each mode's two
 * recordings, run each mode's checks, report them all in one KTAP plan.
 *
 *   e2e-check [-t TOOLS_DIR] [-T TREE] [-o WORK_DIR] EXPORT SCENARIO...
 *
 * How it fits: the end-to-end test boots the test VM (L0), which records
 * a host trace while its guest (L1) records its own, in one of the modes
 * of scripts/e2e/scenarios/; in mode nested L1 runs a guest of its own
 * (L2, tsc_nested_payload). A scenario file says what each level does:
 * vCPUs, TSC rates, the TSC writes, the markers, the recorders. Only the
 * trace.dat files come back up.
 *
 * Stage 1 judges them against the scenario, reading them with libtracecmd
 * and libtraceevent alone, not with kvm-tsc-merge's model nor its output:
 * each marker right before its own port exit in the host trace, each TSC
 * write with the value the scenario names and the offset KVM wrote for
 * it, each multiplier, and in mode nested L2's markers through L1's TSC
 * to L0's, against L0's own pair for L2. It keeps the host tick at which
 * it placed each marker and the port exit it found its own.
 *
 * Stage 2 runs kvm-tsc-merge on the same files and judges every output by
 * that placement: the timeline; the --sync-out copies through trace-cmd
 * report and libkshark (kshark-times), KernelShark's KVM combo mapping
 * included; the Perfetto trace (-p) through protoc and pftrace-check; in
 * mode nested, L2's markers as an L2 trace (made with mktrace), and
 * kvm-tsc-merge's hint when that trace is given without ,l2. Its files
 * stay in WORK_DIR/MODE (default EXPORT/MODE/check) to be looked at: TIMELINE.txt, SUMMARY.txt,
 * sync/, the reports, each tool's standard error.
 *
 * EXPORT/MODE holds the mode's files as scripts/e2e/record-pair.sh exports
 * them: host.dat (L0's trace) and guest.dat (L1's). A run with other values than
 * the mode's file (the Bochs run's l1_tsc_khz=1750000) is given a copy of
 * it with those values. TOOLS_DIR (default: the directory of e2e-check,
 * build/tools, or the one above asan/) holds kvm-tsc-merge, kshark-times,
 * mktrace and pftrace-check; TREE (default: the tree e2e-check was built from) Perfetto's
 * proto and mktrace's tracefs formats; trace-cmd and protoc come from
 * PATH. A mode not judged yet (linux-n) is one skipped check. Exit status
 * 0 when every check passed or was skipped, 1 when one failed or a
 * scenario is wrong.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "events.h"
#include "report.h"

#define MAX_CHECKS	32

#define ADD(list, n, ...) \
	do { \
		const check_fn add_[] = { __VA_ARGS__ }; \
		memcpy(list + n, add_, sizeof(add_)); \
		n += sizeof(add_) / sizeof(add_[0]); \
	} while (0)

/* The kvm-tsc-trace tree e2e-check was built from (the Makefile's), for -T's default. */
#ifndef E2E_TREE
#error "build with -DE2E_TREE='\"<the kvm-tsc-trace tree>\"', as tools/e2e-check/Makefile does"
#endif

/* The command line's directories. */
struct options {
	const char *tools_dir;
	const char *tree;
	const char *work;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: e2e-check [-t TOOLS_DIR] [-T TREE] [-o WORK_DIR] EXPORT SCENARIO...\n"
		"  EXPORT        the recordings, EXPORT/MODE/host.dat (L0's trace) and\n"
		"                EXPORT/MODE/guest.dat (L1's) for each SCENARIO's mode\n"
		"  SCENARIO      a scripts/e2e/scenarios/MODE.scenario file, or one written\n"
		"                from it with the values of a run (the Bochs run's l1_tsc_khz)\n"
		"  -t TOOLS_DIR  kvm-tsc-merge, kshark-times, mktrace and pftrace-check (default:\n"
		"                the directory e2e-check is in, build/tools, or the one above for\n"
		"                asan/e2e-check)\n"
		"  -T TREE       the kvm-tsc-trace tree: Perfetto's proto for protoc, the tracefs\n"
		"                formats for mktrace (default: the tree e2e-check was built from)\n"
		"  -o WORK_DIR   kvm-tsc-merge's outputs and the checks' files, in WORK_DIR/MODE\n"
		"                (default: EXPORT/MODE/check)\n"
		"trace-cmd and protoc are taken from PATH.\n"
		"KTAP on stdout; exit status 0 when every check passed or was skipped, 1 when\n"
		"one failed or a scenario is wrong, 2 on a wrong command line.\n");
}

/* The directory of e2e-check's own binary, the one above for asan/e2e-check, into @buf. */
static void own_dir(char *buf)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (len <= 0) {
		snprintf(buf, PATH_MAX, ".");
		return;
	}
	exe[len] = '\0';
	*strrchr(exe, '/') = '\0';
	slash = strrchr(exe, '/');
	if (slash && !strcmp(slash + 1, "asan"))
		*slash = '\0';
	snprintf(buf, PATH_MAX, "%s", exe[0] ? exe : "/");
}

static void set_tools(struct tools *t, const struct options *o, const char *dir,
		      const char *mode)
{
	char tools_dir[PATH_MAX];

	if (o->tools_dir)
		snprintf(tools_dir, sizeof(tools_dir), "%s", o->tools_dir);
	else
		own_dir(tools_dir);
	join_path(t->merge, tools_dir, "kvm-tsc-merge");
	join_path(t->kshark_times, tools_dir, "kshark-times");
	join_path(t->mktrace, tools_dir, "mktrace");
	join_path(t->pftrace_check, tools_dir, "pftrace-check");
	join_path(t->proto_dir, o->tree, "tools/tsc-merge/proto");
	join_path(t->tracefs, o->tree, "tools/tsc-merge/tests/tracefs");
	if (o->work)
		join_path(t->work, o->work, mode);
	else
		join_path(t->work, dir, "check");
}

/* The work directory and those above it; a diagnostic when it cannot be made. */
static void make_work_dir(const char *work)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s", work);
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		report_msg("work directory %s: %s", work, strerror(errno));
}

/*
 * L1's multiplier shows in L0's trace where it began before L1's vCPUs
 * were created (their kvm_write_tsc_multiplier) or where kvm-tsc-record
 * wrote its snapshot; trace-cmd's agent, started once L1 ran, gives neither.
 */
static bool shows_l1_multiplier(const struct scenario *s)
{
	return !strcmp(s->l0_record_from, "boot") || !strcmp(s->l0_recorder, "kvm-tsc-record");
}

/* The checks of @s's mode that its recordings can show, into @list; their number, 0: none yet. */
static unsigned int plan_checks(const struct scenario *s, check_fn *list)
{
	unsigned int n = 0;

	if (!strcmp(s->mode, "nested")) {
		ADD(list, n, check_read, check_l2_markers, check_l2_exits_in_l0,
		    check_l2_exits_in_l1, check_l2_multiplier, check_l2_nested_offsets,
		    check_l2_tsc_write, check_l2_placement, check_l2_chain, check_l2_direct);
		ADD(list, n, check_merge_l2, check_merge_placement, check_merge_events,
		    check_merge_l2_hint);
		return n;
	}
	if (!strcmp(s->mode, "linux-n"))
		return 0;
	ADD(list, n, check_read, check_l1_markers, check_l1_port_exits, check_l1_placement,
	    check_l1_tsc_write, check_l1_tsc_offset);
	if (shows_l1_multiplier(s))
		ADD(list, n, check_l1_multiplier);
	ADD(list, n, check_merge_l1, check_merge_placement, check_merge_events, check_sync_report,
	    check_sync_kshark, check_sync_combo, check_sync_host_report, check_perfetto);
	return n;
}

/* The monotonic clock in seconds. */
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void read_recordings(const char *dir, struct recording *l0, struct recording *l1)
{
	recording_read(l0, dir, "host.dat");
	recording_read(l1, dir, "guest.dat");
	if (!l0->error[0] && !l0->tsc_khz)
		recording_read_tsc2nsec(l0);
}

static void run_checks(const struct scenario *s, const check_fn *checks, unsigned int nr_checks,
		       const char *dir, const struct tools *t)
{
	static struct recording l0, l1;
	struct findings found = { 0 };
	struct ctx c = { s, &l0, &l1, t, &found };
	double t0 = now(), read_s;
	unsigned int i;

	read_recordings(dir, &l0, &l1);
	read_s = now() - t0;
	make_work_dir(t->work);
	for (i = 0; i < nr_checks; i++)
		checks[i](&c);
	report_msg("%s: read in %.2f s, checked in %.2f s", s->mode, read_s, now() - t0 - read_s);
	recording_free(&l0);
	recording_free(&l1);
	free(found.placed.m);
	events_free(&found.timeline);
}

/* The options into @o; the index of the first operand, or -1 after printing the usage. */
static int parse_options(int argc, char **argv, struct options *o, bool *help)
{
	int opt;

	*o = (struct options){ .tree = E2E_TREE };
	*help = false;
	while ((opt = getopt(argc, argv, "t:T:o:h")) != -1) {
		if (opt == 't')
			o->tools_dir = optarg;
		else if (opt == 'T')
			o->tree = optarg;
		else if (opt == 'o')
			o->work = optarg;
		else if (opt == 'h')
			*help = true;
		else
			return -1;
	}
	return argc - optind >= 2 || *help ? optind : -1;
}

/* Each scenario's mode, its checks, and where its recordings are. */
struct plan {
	struct scenario s;
	check_fn checks[MAX_CHECKS];
	unsigned int nr_checks;
	char dir[PATH_MAX];
};

/* @nr scenarios into @plans; their checks in all. A scenario that does not load ends the run. */
static unsigned int load_plans(struct plan *plans, char **paths, int nr, const char *export)
{
	unsigned int total = 0;
	char err[512];
	int i;

	for (i = 0; i < nr; i++) {
		if (scenario_load(&plans[i].s, paths[i], err, sizeof(err)))
			report_bail("%s", err);
		plans[i].nr_checks = plan_checks(&plans[i].s, plans[i].checks);
		join_path(plans[i].dir, export, plans[i].s.mode);
		total += plans[i].nr_checks ? plans[i].nr_checks : 1;
	}
	return total;
}

int main(int argc, char **argv)
{
	static struct tools t;
	struct options o;
	struct plan *plans;
	bool help;
	int first = parse_options(argc, argv, &o, &help);
	int i, nr;

	if (help || first < 0) {
		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	nr = argc - first - 1;
	plans = calloc(nr, sizeof(*plans));
	if (!plans)
		report_bail("out of memory");
	report_header();
	report_plan(load_plans(plans, argv + first + 1, nr, argv[first]));
	for (i = 0; i < nr; i++) {
		report_set_prefix(plans[i].s.mode);
		if (!plans[i].nr_checks) {
			report_skip("e2e-check does not judge this mode's recordings yet");
			continue;
		}
		set_tools(&t, &o, plans[i].dir, plans[i].s.mode);
		run_checks(&plans[i].s, plans[i].checks, plans[i].nr_checks, plans[i].dir, &t);
	}
	free(plans);
	report_finish();
}
