// SPDX-License-Identifier: GPL-2.0
/*
 * hash.c: FNV-1a for the sinks' direct-mapped caches of texts: quick on
 * the short records they key, and even enough that two of them rarely
 * take one slot.
 */
#include "common.h"

/* The slot of @data among @slots; @seed keeps equal bytes of two sources apart. */
size_t hash_slot(uint64_t seed, const void *data, size_t len, size_t slots)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (h ^ h >> 32) % slots;
}
