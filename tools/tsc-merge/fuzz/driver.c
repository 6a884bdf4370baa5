// SPDX-License-Identifier: GPL-2.0
/*
 * driver.c: run kvm-tsc-merge's own main() on AFL++ inputs, many per
 * process (AFL++'s persistent mode), in one of three roles:
 *
 *   driver host GUEST.dat     the input is the host trace.dat
 *   driver guest HOST.dat     the input is the guest trace.dat
 *   driver args               the input is the argument list, NUL-separated
 *
 * The trace roles ask for the text timeline and the summary (to
 * /dev/null), so the input reaches libtraceevent's printing too; the
 * argument role's seeds ask for the other outputs. Saved inputs are
 * replayed with the tool's own sanitizer build and the same command line
 * (tests/replay-fuzz.sh).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kvm_tsc_merge_main(int argc, char **argv);

#define MAX_ARGS 32

__AFL_FUZZ_INIT();

/* The input as a file, for libtracecmd, which reads trace.dat by path. */
static const char *write_input(const unsigned char *buf, size_t len)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/kvm-tsc-merge-fuzz.%d.dat", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		perror(path);
		exit(2);
	}
	close(fd);
	return path;
}

/* The replays give the same command line: fuzz/roles.sh. */
static int run_trace_role(const char *role, const char *other, const char *input)
{
	char *argv[] = {
		"kvm-tsc-merge", "-q", "-k", "1000", "-o", "/dev/null", "-s", "/dev/null",
		"-p", "/dev/null", "-H", NULL, "-g", NULL, NULL
	};

	argv[11] = (char *)(strcmp(role, "host") ? other : input);
	argv[13] = (char *)(strcmp(role, "host") ? input : other);
	return kvm_tsc_merge_main(14, argv);
}

/* NUL-separated arguments; the tool's own name comes first. */
static int run_args_role(unsigned char *buf, size_t len)
{
	char *argv[MAX_ARGS + 2] = { "kvm-tsc-merge" };
	int argc = 1;
	size_t i = 0;

	while (i < len && argc <= MAX_ARGS) {
		argv[argc++] = (char *)buf + i;
		while (i < len && buf[i])
			i++;
		i++;
	}
	argv[argc] = NULL;
	return kvm_tsc_merge_main(argc, argv);
}

int main(int argc, char **argv)
{
	static unsigned char copy[1 << 20];
	const char *role = argc > 1 ? argv[1] : "";
	bool trace_role = !strcmp(role, "host") || !strcmp(role, "guest");
	int ret = 0;

	if (!(trace_role && argc >= 3) && strcmp(role, "args")) {
		fprintf(stderr, "usage: driver host GUEST.dat | guest HOST.dat | args\n");
		return 2;
	}
	__AFL_INIT();
	while (__AFL_LOOP(1000)) {
		size_t len = __AFL_FUZZ_TESTCASE_LEN;

		if (len > sizeof(copy) - 1)
			len = sizeof(copy) - 1;
		memcpy(copy, __AFL_FUZZ_TESTCASE_BUF, len);
		copy[len] = '\0';
		/* getopt starts over for each input. */
		optind = 0;
		if (trace_role)
			ret = run_trace_role(role, argv[2], write_input(copy, len));
		else
			ret = run_args_role(copy, len);
	}
	return ret;
}
