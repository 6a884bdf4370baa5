// SPDX-License-Identifier: GPL-2.0
/*
 * alloc.c: allocation that ends the run on failure. Nothing kvm-tsc-merge
 * allocates is optional, and no output can be right without it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Arrays grow by doubling, so that adding n elements one by one copies
 * fewer than 2n: a few elements are not worth an allocation each.
 */
void *xgrow(void *p, size_t nr, size_t *alloc, size_t size)
{
	if (nr < *alloc)
		return p;
	*alloc = *alloc ? 2 * *alloc : 16;
	return xrealloc(p, *alloc, size);
}

void *xinsert(void *p, size_t nr, size_t *alloc, size_t at, size_t size)
{
	p = xgrow(p, nr, alloc, size);
	memmove((char *)p + (at + 1) * size, (char *)p + at * size, (nr - at) * size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		out_of_memory();
	return p;
}
