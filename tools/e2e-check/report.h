/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report.h: the checker's KTAP output, through kselftest.h's helpers,
 * which keep their counts in statics and so live in report.c alone; and
 * the formatting of a variadic message, which its callers share.
 */
#ifndef E2E_CHECK_REPORT_H
#define E2E_CHECK_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#define PRINTF(a, b)	__attribute__((format(printf, a, b)))

/* In a function of PRINTF(..., n): @fmt and the arguments after it into @buf of @size. */
#define FORMAT_ARGS(buf, size, fmt) \
	do { \
		va_list ap_; \
		va_start(ap_, fmt); \
		vsnprintf(buf, size, fmt, ap_); \
		va_end(ap_); \
	} while (0)

void report_header(void);
void report_plan(unsigned int nr_checks);
/* Every result line from now on starts "@prefix: ". */
void report_set_prefix(const char *prefix);
/* One result line, "ok" when @ok; no newline in @fmt. */
void report_result(bool ok, const char *fmt, ...) PRINTF(2, 3);
void report_skip(const char *fmt, ...) PRINTF(1, 2);
/* A "# " diagnostic line; no newline in @fmt. */
void report_msg(const char *fmt, ...) PRINTF(1, 2);
/* "Bail out!", the totals, exit status 1. */
void report_bail(const char *fmt, ...) PRINTF(1, 2) __attribute__((noreturn));
/* The totals; exit status 0 when every planned check passed or was skipped, else 1. */
void report_finish(void) __attribute__((noreturn));

#endif
