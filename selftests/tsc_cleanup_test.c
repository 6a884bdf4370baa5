// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_cleanup_test: the library removes a test's tracefs instance on every
 * way out: a normal exit, a failed assertion (Bail out!) and SIGTERM.
 * Each case runs in a child that reports its instance's directory.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "trace.h"

enum way_out { EXIT_NORMALLY, FAIL_ASSERTION, WAIT_FOR_SIGTERM };

static const char * const way_names[] = {
	"a normal exit", "a failed assertion", "SIGTERM",
};

static void run_child(int fd, enum way_out way)
{
	struct tracefs_instance *inst = trace_instance_create("cleanup");
	char *dir = tracefs_instance_get_dir(inst);

	if (!dir || write(fd, dir, strlen(dir) + 1) < 0)
		_exit(2);
	close(fd);
	/* The child's TAP lines are not the test's: keep them out of stdout. */
	if (!freopen("/dev/null", "w", stdout))
		_exit(2);
	if (way == FAIL_ASSERTION)
		tap_bail_out("assertion failed on purpose");
	if (way == WAIT_FOR_SIGTERM)
		pause();
	exit(0);
}

static bool check_way_out(enum way_out way)
{
	char dir[4096] = "";
	int fds[2], status;
	ssize_t len;
	pid_t pid;

	if (pipe(fds))
		tap_bail_out("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail_out("fork: %s", strerror(errno));
	if (!pid) {
		close(fds[0]);
		run_child(fds[1], way);
	}
	close(fds[1]);
	len = read(fds[0], dir, sizeof(dir) - 1);
	close(fds[0]);
	if (len <= 0) {
		tap_diag("the child reported no instance");
		waitpid(pid, &status, 0);
		return false;
	}
	if (access(dir, F_OK)) {
		tap_diag("%s does not exist while the child runs", dir);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return false;
	}
	if (way == WAIT_FOR_SIGTERM)
		kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!access(dir, F_OK)) {
		tap_diag("%s is still there after %s", dir, way_names[way]);
		rmdir(dir);
		return false;
	}
	return true;
}

int main(void)
{
	enum way_out way;

	trace_require_tracefs();
	tap_plan(3);
	for (way = EXIT_NORMALLY; way <= WAIT_FOR_SIGTERM; way++)
		tap_ok(check_way_out(way), "the instance is removed on %s", way_names[way]);
	return tap_finish();
}
