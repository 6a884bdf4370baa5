/* SPDX-License-Identifier: GPL-2.0 */
/*
 * child.h: the tools e2e-check runs as child processes (kvm-tsc-merge,
 * trace-cmd, kshark-times, mktrace, protoc): run to files, or read line
 * by line, and what they printed shown as diagnostics.
 */
#ifndef E2E_CHECK_CHILD_H
#define E2E_CHECK_CHILD_H

#include <stdio.h>
#include <sys/types.h>

/* A child whose standard output e2e-check reads. */
struct child {
	pid_t pid;
	FILE *out;
	const char *name;
};

/*
 * Run @argv (argv[0] a path, or a name looked up in PATH) with standard
 * input from @in, standard output into @out and standard error into @err
 * (each NULL: /dev/null); its exit status, or -1, with a diagnostic, when
 * it could not be started or was killed.
 */
int child_run(char *const argv[], const char *in, const char *out, const char *err);
/* Start @argv with its standard output a pipe in c->out; -1, with a diagnostic, on failure. */
int child_open(struct child *c, char *const argv[], const char *in, const char *err);
/* Wait for @c; its exit status, or -1, with a diagnostic, when it was killed. */
int child_close(struct child *c);
/* The first @max lines of @path as "#   " diagnostics. */
void child_show(const char *path, int max);

#endif
