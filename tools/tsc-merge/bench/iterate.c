// SPDX-License-Identifier: GPL-2.0
/*
 * iterate: the floor for reading trace.dat files with libtracecmd: open
 * every file, read every record of every CPU, print how many there were.
 *
 *   iterate [-o] FILE.dat...
 *
 * By default each CPU is read on its own, the least work libtracecmd can
 * do. With -o each file is read in time order across its CPUs
 * (tracecmd_iterate_events), the order a merge needs.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <trace-cmd.h>

#include "../tracecmd-private.h"

static unsigned long long read_per_cpu(struct tracecmd_input *in)
{
	unsigned long long count = 0;
	struct tep_record *rec;
	int cpu;

	for (cpu = 0; cpu < tracecmd_cpus(in); cpu++) {
		for (rec = tracecmd_read_cpu_first(in, cpu); rec;
		     rec = tracecmd_read_data(in, cpu)) {
			count++;
			tracecmd_free_record(rec);
		}
	}
	return count;
}

static int count_record(struct tracecmd_input *in, struct tep_record *rec, int cpu, void *data)
{
	unsigned long long *count = data;

	(void)in; (void)rec; (void)cpu;
	(*count)++;
	return 0;
}

static unsigned long long read_in_time_order(struct tracecmd_input *in, const char *path)
{
	unsigned long long count = 0;

	if (tracecmd_iterate_events(in, NULL, 0, count_record, &count) < 0) {
		fprintf(stderr, "iterate: %s: libtracecmd failed to read the records\n", path);
		exit(1);
	}
	return count;
}

int main(int argc, char **argv)
{
	unsigned long long total = 0;
	bool in_order = false;
	int opt, i;

	while ((opt = getopt(argc, argv, "o")) != -1) {
		if (opt != 'o')
			goto usage;
		in_order = true;
	}
	if (optind == argc)
		goto usage;
	for (i = optind; i < argc; i++) {
		struct tracecmd_input *in = tracecmd_open(argv[i], TRACECMD_FL_LOAD_NO_PLUGINS);

		if (!in) {
			fprintf(stderr, "iterate: %s: libtracecmd cannot open it\n", argv[i]);
			return 1;
		}
		total += in_order ? read_in_time_order(in, argv[i]) : read_per_cpu(in);
		tracecmd_close(in);
	}
	printf("%llu\n", total);
	return 0;
usage:
	fprintf(stderr, "usage: iterate [-o] FILE.dat...\n");
	return 2;
}
