// SPDX-License-Identifier: GPL-2.0
/*
 * child.c: run a tool as a child process, its standard streams on files
 * or a pipe, and give its exit status; show the start of what it printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "report.h"

/* In the child: @fd from @path (NULL: /dev/null), opened with @flags; exits 127 on failure. */
static void redirect(int fd, const char *path, int flags)
{
	int f = open(path ? path : "/dev/null", flags, 0644);

	if (f < 0 || dup2(f, fd) < 0) {
		dprintf(STDERR_FILENO, "e2e-check: %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(f);
}

/* Fork and exec @argv, its stdout on @pipe_w when not -1, else into @out. */
static pid_t start(char *const argv[], const char *in, const char *out, const char *err, int pipe_r,
		   int pipe_w)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		report_msg("%s: cannot fork: %s", argv[0], strerror(errno));
		return -1;
	}
	if (pid)
		return pid;
	redirect(STDIN_FILENO, in, O_RDONLY);
	if (pipe_w >= 0) {
		close(pipe_r);
		dup2(pipe_w, STDOUT_FILENO);
		close(pipe_w);
	} else {
		redirect(STDOUT_FILENO, out, O_WRONLY | O_CREAT | O_TRUNC);
	}
	redirect(STDERR_FILENO, err, O_WRONLY | O_CREAT | O_TRUNC);
	execvp(argv[0], argv);
	dprintf(STDERR_FILENO, "e2e-check: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static int wait_for(pid_t pid, const char *name)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			report_msg("%s: waitpid: %s", name, strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	report_msg("%s: killed by signal %d (%s)", name, WTERMSIG(status), strsignal(WTERMSIG(status)));
	return -1;
}

int child_run(char *const argv[], const char *in, const char *out, const char *err)
{
	pid_t pid = start(argv, in, out, err, -1, -1);

	return pid < 0 ? -1 : wait_for(pid, argv[0]);
}

int child_open(struct child *c, char *const argv[], const char *in, const char *err)
{
	int fds[2];

	c->name = argv[0];
	if (pipe(fds)) {
		report_msg("%s: pipe: %s", argv[0], strerror(errno));
		return -1;
	}
	c->pid = start(argv, in, NULL, err, fds[0], fds[1]);
	close(fds[1]);
	c->out = c->pid < 0 ? NULL : fdopen(fds[0], "r");
	if (c->out)
		return 0;
	if (c->pid >= 0) {
		report_msg("%s: fdopen: %s", argv[0], strerror(errno));
		kill(c->pid, SIGKILL);
		wait_for(c->pid, argv[0]);
	}
	close(fds[0]);
	return -1;
}

int child_close(struct child *c)
{
	fclose(c->out);
	return wait_for(c->pid, c->name);
}

void child_show(const char *path, int max)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	int n = 0;

	if (!f)
		return;
	while (n++ < max && (len = getline(&line, &size, f)) > 0) {
		line[strcspn(line, "\n")] = '\0';
		report_msg("  %s", line);
	}
	free(line);
	fclose(f);
}
