// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_cleanup_victim: tests of the shared fixture that end the ways a test
 * can end, for tsc_cleanup_test to watch the fixture's instance go. Not a
 * test: each one reports its instance, then waits for a byte on stdin,
 * which tsc_cleanup_test sends or replaces with a signal.
 */
#include "tsc_fixture.h"

static void report_instance_and_wait(struct __test_metadata *_metadata,
				     struct _test_data_tsc *self)
{
	char go;

	TH_LOG("instance=%s", self->instance);
	EXPECT_LE(0, read(STDIN_FILENO, &go, 1)) TH_LOG("stdin: %s", strerror(errno));
}

TEST_F(tsc, return_after_go)
{
	report_instance_and_wait(_metadata, self);
}

TEST_F(tsc, fail_after_go)
{
	report_instance_and_wait(_metadata, self);
	ASSERT_TRUE(false) TH_LOG("failing on purpose");
}

/*
 * Never sent the byte, it is killed by the harness. Three seconds leave
 * the setup time to finish on a slow emulated machine.
 */
TEST_F_TIMEOUT(tsc, time_out, 3)
{
	report_instance_and_wait(_metadata, self);
}

TEST_HARNESS_MAIN
