// SPDX-License-Identifier: GPL-2.0
/*
 * msg.c: the one form of an error line, "WHO: [WHAT: ]MESSAGE", shared by
 * kvm-tsc-merge and the test tool mktrace, so that their variadic
 * reporters only say who and what.
 */
#include <stdio.h>

#include "common.h"

void vreport(const char *who, const char *what, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", who);
	if (what)
		fprintf(stderr, "%s: ", what);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}
