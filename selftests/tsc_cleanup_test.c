// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_cleanup_test: the fixture's tracefs instance is gone however its test
 * ends: it returns, fails an assertion, is killed by SIGTERM or SIGKILL,
 * runs into the harness's timeout, or loses its harness process to a
 * SIGKILL; and when both are killed, the next run removes what they left.
 * Each way runs one test of tsc_cleanup_victim, a harness program with the
 * same fixture, in a child.
 */
#include <signal.h>
#include <sys/wait.h>

#include "tsc_fixture.h"

/* runner.sh runs a test from its directory, where the victim is installed too. */
#define VICTIM "./tsc_cleanup_victim"

enum way_out {
	SEND_GO,		/* the byte it waits for: it goes on */
	SIGTERM_TEST,		/* to the test process */
	SIGKILL_TEST,
	SIGKILL_HARNESS,	/* to the harness process; then EOF to the test */
	SIGKILL_ALL,		/* to all its processes: nobody left to clean up */
	TIME_OUT,		/* nothing: the harness kills it at its timeout */
};

struct victim {
	pid_t pid;
	int go_fd;
	FILE *out;
	char instance[TSC_INSTANCE_NAME_MAX];
	char skip_reason[256];
};

/* Run @test of the victim with its stdin and output on pipes of ours. */
static void start_victim(struct __test_metadata *_metadata, struct victim *v, const char *test)
{
	int in[2], out[2];

	ASSERT_EQ(0, pipe(in));
	ASSERT_EQ(0, pipe(out));
	v->pid = fork();
	ASSERT_LE(0, v->pid) TH_LOG("fork: %s", strerror(errno));
	if (!v->pid) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(out[1], STDERR_FILENO);
		close(in[1]);
		close(out[0]);
		execl(VICTIM, VICTIM, "-t", test, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	v->go_fd = in[1];
	v->out = fdopen(out[0], "r");
	ASSERT_NE(NULL, v->out);
}

/* Read the victim's output up to the instance it reports, false if none. */
static bool read_instance(struct victim *v)
{
	char line[512], *p;

	while (fgets(line, sizeof(line), v->out)) {
		p = strstr(line, "SKIP");
		if (p)
			snprintf(v->skip_reason, sizeof(v->skip_reason), "%s", p);
		p = strstr(line, "instance=");
		if (!p)
			continue;
		snprintf(v->instance, sizeof(v->instance), "%s", p + strlen("instance="));
		v->instance[strcspn(v->instance, "\n")] = '\0';
		return true;
	}
	return false;
}

/*
 * Read the victim's output to its end, which comes when all its processes
 * have ended, and reap the harness process. Returns its wait status.
 */
static int finish_victim(struct victim *v)
{
	char line[512];
	int status;

	while (fgets(line, sizeof(line), v->out))
		;
	fclose(v->out);
	waitpid(v->pid, &status, 0);
	if (v->go_fd >= 0)
		close(v->go_fd);
	return status;
}

static void end_victim_test(struct __test_metadata *_metadata, struct victim *v,
			    enum way_out way)
{
	int harness_pid, test_pid, test_group, fields;

	fields = sscanf(v->instance, TSC_INSTANCE_FMT, &harness_pid, &test_pid);
	ASSERT_EQ(2, fields) TH_LOG("instance name %s", v->instance);
	switch (way) {
	case SEND_GO:
		ASSERT_EQ(1, write(v->go_fd, "g", 1));
		break;
	case SIGTERM_TEST:
		ASSERT_EQ(0, kill(test_pid, SIGTERM));
		break;
	case SIGKILL_TEST:
		ASSERT_EQ(0, kill(test_pid, SIGKILL));
		break;
	case SIGKILL_HARNESS:
		ASSERT_EQ(0, kill(harness_pid, SIGKILL));
		close(v->go_fd);
		v->go_fd = -1;
		break;
	case SIGKILL_ALL:
		/*
		 * The harness runs each test in a process group of its own
		 * (the test process's parent, which tears down after it).
		 * The harness goes first, or its exit would clean up.
		 */
		test_group = getpgid(test_pid);
		ASSERT_LT(0, test_group);
		ASSERT_EQ(0, kill(harness_pid, SIGKILL));
		ASSERT_EQ(0, kill(-test_group, SIGKILL));
		break;
	case TIME_OUT:
		break;
	}
}

/* Start @test of the victim up to its instance; false: its fixture skipped. */
static bool run_victim_to_instance(struct __test_metadata *_metadata, struct victim *v,
				   const char *test)
{
	int status;

	start_victim(_metadata, v, test);
	if (read_instance(v))
		return true;
	status = finish_victim(v);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status) && v->skip_reason[0])
		TH_LOG("%s -t %s: no instance, wait status %#x", VICTIM, test, status);
	return false;
}

static void check_instance_removed(struct __test_metadata *_metadata, const char *test,
				   enum way_out way, int expected_status)
{
	struct victim v = { 0 };
	bool exists;
	int status;

	if (!run_victim_to_instance(_metadata, &v, test))
		SKIP(return, "the fixture skipped: %s", v.skip_reason);
	exists = tracefs_instance_exists(v.instance);
	EXPECT_TRUE(exists) TH_LOG("%s does not exist while its test runs", v.instance);
	end_victim_test(_metadata, &v, way);
	status = finish_victim(&v);

	EXPECT_EQ(expected_status, status) TH_LOG("wait status of %s -t %s", VICTIM, test);
	exists = tracefs_instance_exists(v.instance);
	if (exists)
		_trace_remove_instances(v.instance);
	EXPECT_FALSE(exists) TH_LOG("%s is still there after %s ended", v.instance, test);
}

TEST(removed_after_return)
{
	check_instance_removed(_metadata, "return_after_go", SEND_GO, W_EXITCODE(KSFT_PASS, 0));
}

TEST(removed_after_failed_assertion)
{
	check_instance_removed(_metadata, "fail_after_go", SEND_GO, W_EXITCODE(KSFT_FAIL, 0));
}

TEST(removed_after_sigterm)
{
	check_instance_removed(_metadata, "return_after_go", SIGTERM_TEST,
			       W_EXITCODE(KSFT_FAIL, 0));
}

TEST(removed_after_sigkill)
{
	check_instance_removed(_metadata, "return_after_go", SIGKILL_TEST,
			       W_EXITCODE(KSFT_FAIL, 0));
}

TEST(removed_after_harness_timeout)
{
	check_instance_removed(_metadata, "time_out", TIME_OUT, W_EXITCODE(KSFT_FAIL, 0));
}

TEST(removed_after_harness_sigkill)
{
	check_instance_removed(_metadata, "return_after_go", SIGKILL_HARNESS, SIGKILL);
}

static void create_instance(struct __test_metadata *_metadata, const char *name)
{
	struct tracefs_instance *inst = tracefs_instance_create(name);

	ASSERT_NE(NULL, inst) TH_LOG("cannot create instance %s: %s", name, strerror(errno));
	tracefs_instance_free(inst);
}

/*
 * A run whose processes all died by SIGKILL leaves its instance.
 * The next run removes it when it starts, and nothing else: not an
 * instance of a live harness, not one of another naming.
 */
TEST(stale_instance_removed_by_next_run)
{
	char live[TSC_INSTANCE_NAME_MAX], other[TSC_INSTANCE_NAME_MAX];
	struct victim killed = { 0 }, next = { 0 };
	bool stale_left, live_left, other_left;

	if (!run_victim_to_instance(_metadata, &killed, "return_after_go"))
		SKIP(return, "the fixture skipped: %s", killed.skip_reason);
	end_victim_test(_metadata, &killed, SIGKILL_ALL);
	finish_victim(&killed);
	ASSERT_TRUE(tracefs_instance_exists(killed.instance))
		TH_LOG("%s went with its processes: nothing left to check", killed.instance);
	snprintf(live, sizeof(live), TSC_INSTANCE_FMT, getpid(), 1);
	snprintf(other, sizeof(other), "ktt-other-%d", getpid());
	create_instance(_metadata, live);
	create_instance(_metadata, other);

	if (run_victim_to_instance(_metadata, &next, "return_after_go")) {
		end_victim_test(_metadata, &next, SEND_GO);
		finish_victim(&next);
	}
	stale_left = tracefs_instance_exists(killed.instance);
	live_left = tracefs_instance_exists(live);
	other_left = tracefs_instance_exists(other);
	_trace_remove_instances(killed.instance);
	_trace_remove_instances(live);
	_trace_remove_instances(other);
	EXPECT_FALSE(stale_left) TH_LOG("%s, of a killed run, survived the next run", killed.instance);
	EXPECT_TRUE(live_left) TH_LOG("%s, of a live process, was removed", live);
	EXPECT_TRUE(other_left) TH_LOG("%s, of another naming, was removed", other);
}

TEST_HARNESS_MAIN
