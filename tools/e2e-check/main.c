// SPDX-License-Identifier: GPL-2.0
/*
 * main.c: e2e-check's command line: read the scenario and the mode's two
 * recordings, run the mode's checks, report them in KTAP.
 *
 *   e2e-check SCENARIO DIR
 *
 * How it fits: the end-to-end test boots the test VM (L0), which records
 * a host trace while its guest (L1) records its own, in one of the modes
 * of scripts/e2e/scenarios/; in mode nested L1 runs a guest of its own
 * (L2, tsc_nested_payload). A scenario file says what each level does:
 * vCPUs, TSC rates, the TSC writes, the markers, the recorders. Only the
 * trace.dat files come back up. This program judges them against the
 * scenario, reading them with libtracecmd and libtraceevent alone, not
 * with kvm-tsc-merge's model nor its output: each marker right before its
 * own port exit in the host trace, each TSC write with the value the
 * scenario names and the offset KVM wrote for it, each multiplier, and in
 * mode nested L2's markers through L1's TSC to L0's, against L0's own
 * pair for L2. Later the same program runs kvm-tsc-merge on the same
 * files and judges its outputs against its own placement of the markers.
 *
 * DIR holds the mode's files as scripts/e2e/record-pair.sh exports them:
 * host.dat (L0's trace) and guest.dat (L1's). A run with other values than
 * the mode's file (the Bochs run's l1_tsc_khz=1750000) is given a copy of
 * it with those values. Exit status
 * 0 when every check passed or was skipped, 1 when one failed or the
 * scenario is wrong, 4 when the mode is not checked yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "report.h"

#define MAX_CHECKS	32

#define ADD(list, n, ...) \
	do { \
		const check_fn add_[] = { __VA_ARGS__ }; \
		memcpy(list + n, add_, sizeof(add_)); \
		n += sizeof(add_) / sizeof(add_[0]); \
	} while (0)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: e2e-check SCENARIO DIR\n"
		"  SCENARIO      a scripts/e2e/scenarios/MODE.scenario file, or one written\n"
		"                from it with the values of a run (the Bochs run's l1_tsc_khz)\n"
		"  DIR           the mode's recordings: host.dat (L0's trace), guest.dat (L1's)\n"
		"KTAP on stdout; exit status 0 all passed, 1 a failure, 4 skipped.\n");
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
		return n;
	}
	if (!strcmp(s->mode, "linux-n"))
		return 0;
	ADD(list, n, check_read, check_l1_markers, check_l1_port_exits, check_l1_placement,
	    check_l1_tsc_write, check_l1_tsc_offset);
	if (shows_l1_multiplier(s))
		ADD(list, n, check_l1_multiplier);
	return n;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void read_recordings(const char *dir, struct recording *l0, struct recording *l1)
{
	recording_read(l0, dir, "host.dat");
	recording_read(l1, dir, "guest.dat");
	if (!l0->error[0] && !l0->tsc_khz)
		recording_read_tsc2nsec(l0);
}

static void run_checks(const struct scenario *s, const check_fn *checks, unsigned int nr_checks,
		       const char *dir)
{
	static struct recording l0, l1;
	struct ctx c = { s, &l0, &l1 };
	struct timespec t0;
	double read_s;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	read_recordings(dir, &l0, &l1);
	read_s = seconds_since(&t0);
	report_set_prefix(s->mode);
	report_plan(nr_checks);
	for (i = 0; i < nr_checks; i++)
		checks[i](&c);
	report_msg("%s: read in %.2f s, checked in %.2f s", s->mode, read_s,
		   seconds_since(&t0) - read_s);
	recording_free(&l0);
	recording_free(&l1);
}

int main(int argc, char **argv)
{
	check_fn checks[MAX_CHECKS];
	unsigned int nr_checks;
	struct scenario s;
	char err[512];

	if (argc == 2 && !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (argc != 3) {
		usage(stderr);
		return 2;
	}
	report_header();
	if (scenario_load(&s, argv[1], err, sizeof(err)))
		report_bail("%s", err);
	nr_checks = plan_checks(&s, checks);
	if (!nr_checks)
		report_skip_all("mode %s: e2e-check does not check it yet", s.mode);
	run_checks(&s, checks, nr_checks, argv[2]);
	report_finish();
}
