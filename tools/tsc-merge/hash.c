// SPDX-License-Identifier: GPL-2.0
/*
 * hash.c: FNV-1a for the sinks' direct-mapped caches of texts: quick on
 * the short records they key, and even enough that two of them rarely
 * take one slot; and the set of 64-bit keys the sinks remember what they
 * have written with.
 */
#include <stdlib.h>

#include "common.h"

/* A set's first room: a power of two. */
#define KEY_SET_SLOTS	256

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

/* splitmix64's finalizer: a bijection, so distinct keys stay distinct. */
uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Twice the room, every key placed again. */
static void key_set_grow(struct key_set *s)
{
	struct key_set old = *s;
	size_t i;

	s->slots = old.slots ? 2 * old.slots : KEY_SET_SLOTS;
	s->keys = xcalloc(s->slots, sizeof(*s->keys));
	s->used = 0;
	for (i = 0; i < old.slots; i++)
		if (old.keys[i])
			key_set_add(s, old.keys[i]);
	free(old.keys);
}

/* Kept at most half full, so that a search ends at a free slot soon. */
bool key_set_add(struct key_set *s, uint64_t key)
{
	size_t i, mask;

	if (!key) {
		if (s->zero)
			return false;
		return s->zero = true;
	}
	if (2 * (s->used + 1) > s->slots)
		key_set_grow(s);
	mask = s->slots - 1;
	for (i = mix64(key) & mask; s->keys[i]; i = (i + 1) & mask)
		if (s->keys[i] == key)
			return false;
	s->keys[i] = key;
	s->used++;
	return true;
}

void key_set_free(struct key_set *s)
{
	free(s->keys);
}
