// SPDX-License-Identifier: GPL-2.0
/*
 * tap.c: TAP 13 output with kselftest's exit codes: 0 when every test passed
 * or skipped, 1 when one failed, 4 when all were skipped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static int planned, reported, failed, skipped;

static void vprint_line(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stdout);
	vprintf(fmt, ap);
}

void tap_plan(int count)
{
	planned = count;
	printf("TAP version 13\n1..%d\n", count);
	fflush(stdout);
}

/* "ok N desc", "not ok N desc" or "ok N desc # SKIP reason". */
static void print_result(bool passed, const char *skip_reason, const char *fmt, va_list ap)
{
	printf("%sok %d ", passed ? "" : "not ", reported);
	vprintf(fmt, ap);
	if (skip_reason)
		printf(" # SKIP %s", skip_reason);
	putchar('\n');
	fflush(stdout);
}

void tap_ok(bool passed, const char *fmt, ...)
{
	va_list ap;

	reported++;
	failed += !passed;
	va_start(ap, fmt);
	print_result(passed, NULL, fmt, ap);
	va_end(ap);
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	va_list ap;

	reported++;
	skipped++;
	va_start(ap, fmt);
	print_result(true, reason, fmt, ap);
	va_end(ap);
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_line("# ", fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("TAP version 13\n");
	va_start(ap, fmt);
	vprint_line("1..0 # SKIP ", fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(KSFT_SKIP);
}

void tap_bail_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_line("Bail out! ", fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(KSFT_FAIL);
}

/* Compare, and on a mismatch say what differed: the caller reports the test. */
bool tap_check_u64(uint64_t expected, uint64_t actual, const char *fmt, ...)
{
	va_list ap;

	if (expected == actual)
		return true;
	va_start(ap, fmt);
	vprint_line("# ", fmt, ap);
	va_end(ap);
	printf(": expected %llu (%#llx), got %llu (%#llx)\n",
	       (unsigned long long)expected, (unsigned long long)expected,
	       (unsigned long long)actual, (unsigned long long)actual);
	return false;
}

int tap_finish(void)
{
	int passed = reported - failed - skipped;

	printf("# Totals: pass:%d fail:%d skip:%d\n", passed, failed, skipped);
	if (reported != planned) {
		printf("# planned %d tests but ran %d\n", planned, reported);
		return KSFT_FAIL;
	}
	if (failed)
		return KSFT_FAIL;
	return skipped == reported ? KSFT_SKIP : KSFT_PASS;
}
