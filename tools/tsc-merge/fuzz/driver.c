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
 * argument role's seeds ask for the other outputs.
 * Without AFL++ (a plain build) it runs each file named after the role's
 * arguments once, for replaying saved inputs under the sanitizers.
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

#ifndef __AFL_FUZZ_TESTCASE_LEN
/* A plain build: one input, read from a file. */
static unsigned char replay_buf[1 << 20];
static ssize_t replay_len;
#define __AFL_FUZZ_INIT()
#define __AFL_INIT()
#define __AFL_FUZZ_TESTCASE_BUF replay_buf
#define __AFL_FUZZ_TESTCASE_LEN replay_len
#define __AFL_LOOP(n) replay_once()
static const char *replay_path;
static int replay_done;

static int replay_once(void)
{
	int fd;

	if (replay_done++)
		return 0;
	fd = open(replay_path, O_RDONLY);
	if (fd < 0) {
		perror(replay_path);
		exit(2);
	}
	replay_len = read(fd, replay_buf, sizeof(replay_buf));
	close(fd);
	return replay_len >= 0;
}
#endif

__AFL_FUZZ_INIT();

#ifdef __AFL_COMPILER
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
#endif

static int run_trace_role(const char *role, const char *other, const char *input)
{
	char *argv[] = {
		"kvm-tsc-merge", "-q", "-k", "1000", "-o", "/dev/null", "-s", "/dev/null",
		"-H", NULL, "-g", NULL, NULL
	};

	argv[9] = (char *)(strcmp(role, "host") ? other : input);
	argv[11] = (char *)(strcmp(role, "host") ? input : other);
	return kvm_tsc_merge_main(12, argv);
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
	const char *input;
	int ret = 0;

	if (!(trace_role && argc >= 3) && strcmp(role, "args")) {
		fprintf(stderr, "usage: driver host GUEST.dat | guest HOST.dat | args [INPUT]\n");
		return 2;
	}
#ifndef __AFL_COMPILER
	replay_path = argv[trace_role ? 3 : 2];
	if (!replay_path) {
		fprintf(stderr, "driver: name the input to replay\n");
		return 2;
	}
#endif
	__AFL_INIT();
	while (__AFL_LOOP(1000)) {
		size_t len = __AFL_FUZZ_TESTCASE_LEN;

		if (len > sizeof(copy) - 1)
			len = sizeof(copy) - 1;
		memcpy(copy, __AFL_FUZZ_TESTCASE_BUF, len);
		copy[len] = '\0';
		/* getopt starts over for each input. */
		optind = 0;
#ifdef __AFL_COMPILER
		input = write_input(copy, len);
#else
		/* A replay names the saved file in the tool's messages. */
		input = replay_path;
#endif
		if (trace_role)
			ret = run_trace_role(role, argv[2], input);
		else
			ret = run_args_role(copy, len);
	}
	return ret;
}
