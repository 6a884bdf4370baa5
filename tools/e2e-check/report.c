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

/* The lines a check's reporter prints: its result, passed or failed, its skip, a diagnostic. */
enum line {
	LINE_PASS,
	LINE_FAIL,
	LINE_SKIP,
	LINE_MSG,
};

static void print_line(enum line line, const char *msg)
{
	if (line == LINE_MSG)
		ksft_print_msg("%s\n", msg);
	else if (line == LINE_SKIP)
		ksft_test_result_skip("%s: %s\n", line_prefix, msg);
	else
		ksft_test_result(line == LINE_PASS, "%s: %s\n", line_prefix, msg);
}

/* In a reporter of PRINTF(..., n): @fmt and the arguments after it, printed as a @line. */
#define REPORT(line, fmt) \
	do { \
		char msg[MAX_MESSAGE]; \
		FORMAT_ARGS(msg, sizeof(msg), fmt); \
		print_line(line, msg); \
	} while (0)

void report_result(bool ok, const char *fmt, ...)
{
	REPORT(ok ? LINE_PASS : LINE_FAIL, fmt);
}

void report_skip(const char *fmt, ...)
{
	REPORT(LINE_SKIP, fmt);
}

void report_msg(const char *fmt, ...)
{
	REPORT(LINE_MSG, fmt);
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
