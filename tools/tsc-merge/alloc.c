// SPDX-License-Identifier: GPL-2.0
/*
 * alloc.c: allocation that ends the run on failure. Nothing kvm-tsc-merge
 * allocates is optional, and no output can be right without it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

static void out_of_memory(void)
{
	fprintf(stderr, "kvm-tsc-merge: out of memory\n");
	exit(1);
}

void *xrealloc(void *p, size_t n, size_t size)
{
	p = reallocarray(p, n, size);
	if (!p)
		out_of_memory();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		out_of_memory();
	return p;
}
