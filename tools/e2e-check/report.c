// SPDX-License-Identifier: GPL-2.0
/*
 * report.c: the one user of kselftest.h: KTAP header, plan, one line per
 * check with the mode's prefix, diagnostics, and the exit status.
 */
#include <stdarg.h>
#include <stdio.h>

#include "kselftest.h"

#include "report.h"

#define MAX_MESSAGE	1024

static const char *line_prefix = "";

void report_header(void)
{
	ksft_print_header();
}

void report_plan(unsigned int nr_checks)
{
	ksft_set_plan(nr_checks);
}

void report_set_prefix(const char *prefix)
{
	line_prefix = prefix;
}

void report_result(bool ok, const char *fmt, ...)
{
	char msg[MAX_MESSAGE];

	FORMAT_ARGS(msg, sizeof(msg), fmt);
	ksft_test_result(ok, "%s: %s\n", line_prefix, msg);
}

void report_skip(const char *fmt, ...)
{
	char msg[MAX_MESSAGE];

	FORMAT_ARGS(msg, sizeof(msg), fmt);
	ksft_test_result_skip("%s: %s\n", line_prefix, msg);
}

void report_msg(const char *fmt, ...)
{
	char msg[MAX_MESSAGE];

	FORMAT_ARGS(msg, sizeof(msg), fmt);
	ksft_print_msg("%s\n", msg);
}

void report_bail(const char *fmt, ...)
{
	char msg[MAX_MESSAGE];

	FORMAT_ARGS(msg, sizeof(msg), fmt);
	ksft_exit_fail_msg("%s\n", msg);
}

void report_finish(void)
{
	ksft_finished();
}
