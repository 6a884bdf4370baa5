// SPDX-License-Identifier: GPL-2.0
/*
 * main.c: e2e-check's command line: read the scenario and the mode's two
 * recordings, run the mode's checks, report them in KTAP.
 *
 *   e2e-check [-s KEY=VALUE]... SCENARIO DIR
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
 * host.dat (L0's trace) and guest.dat (L1's). -s overrides a key of the scenario: the
 * Bochs run gives L1 another TSC rate, -s l1_tsc_khz=1750000. Exit status
 * 0 when every check passed or was skipped, 1 when one failed or the
 * scenario is wrong, 4 when the mode is not checked yet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "report.h"

#define MAX_OVERRIDES	32

struct mode {
	const char *name;
	const char *l0_file;
	const char *l1_file;
	const check_fn *checks;
	unsigned int nr_checks;
};

static const check_fn l1_checks[] = {
	check_read, check_l1_markers, check_l1_port_exits, check_l1_placement,
	check_l1_tsc_write, check_l1_tsc_offset, check_l1_multiplier,
};

static const check_fn l2_checks[] = {
	check_read, check_l2_markers, check_l2_exits_in_l0, check_l2_exits_in_l1,
	check_l2_multiplier, check_l2_nested_offsets, check_l2_tsc_write, check_l2_placement,
	check_l2_chain, check_l2_direct,
};

#define CHECKS(list)	list, sizeof(list) / sizeof(list[0])

static const struct mode modes[] = {
	{ "own", "host.dat", "guest.dat", CHECKS(l1_checks) },
	{ "agent", "host.dat", "guest.dat", CHECKS(l1_checks) },
	{ "late", "host.dat", "guest.dat", CHECKS(l1_checks) },
	{ "nested", "host.dat", "guest.dat", CHECKS(l2_checks) },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: e2e-check [-s KEY=VALUE]... SCENARIO DIR\n"
		"  SCENARIO      a scripts/e2e/scenarios/MODE.scenario file\n"
		"  DIR           the mode's recordings, as vm-nested-trace.sh exports them\n"
		"  -s KEY=VALUE  override a key of the scenario (repeatable), e.g. the Bochs\n"
		"                run's -s l1_tsc_khz=1750000\n"
		"KTAP on stdout; exit status 0 all passed, 1 a failure, 4 skipped.\n");
}

static const struct mode *find_mode(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void read_recordings(const struct mode *m, const char *dir, struct recording *l0,
			    struct recording *l1)
{
	recording_read(l0, dir, m->l0_file);
	recording_read(l1, dir, m->l1_file);
	if (!l0->error[0] && !l0->tsc_khz)
		recording_read_tsc2nsec(l0);
}

static void run_checks(const struct mode *m, const struct scenario *s, const char *dir)
{
	static struct recording l0, l1;
	struct ctx c = { s, &l0, &l1 };
	struct timespec t0;
	double read_s;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	read_recordings(m, dir, &l0, &l1);
	read_s = seconds_since(&t0);
	report_set_prefix(m->name);
	report_plan(m->nr_checks);
	for (i = 0; i < m->nr_checks; i++)
		m->checks[i](&c);
	report_msg("%s: read in %.2f s, checked in %.2f s", m->name, read_s,
		   seconds_since(&t0) - read_s);
	recording_free(&l0);
	recording_free(&l1);
}

int main(int argc, char **argv)
{
	char *overrides[MAX_OVERRIDES], err[512];
	int opt, nr_overrides = 0;
	const struct mode *m;
	struct scenario s;

	while ((opt = getopt(argc, argv, "s:h")) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt != 's' || nr_overrides == MAX_OVERRIDES) {
			usage(stderr);
			return 2;
		}
		overrides[nr_overrides++] = optarg;
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	report_header();
	if (scenario_load(&s, argv[optind], overrides, nr_overrides, err, sizeof(err)))
		report_bail("%s", err);
	m = find_mode(s.mode);
	if (!m)
		report_skip_all("mode %s: e2e-check does not check it yet", s.mode);
	run_checks(m, &s, argv[optind + 1]);
	report_finish();
}
