/* SPDX-License-Identifier: GPL-2.0 */
/*
 * common.h: helpers any part of kvm-tsc-merge may use and none owns:
 * allocation that never fails, hashes and a set of keys, the largest
 * counts a sound trace holds, so that a damaged one never sizes a table,
 * and host TSC ticks as time.
 */
#ifndef TSC_MERGE_COMMON_H
#define TSC_MERGE_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The largest vCPU id KVM gives: KVM_MAX_VCPU_IDS - 1 with the largest
 * CONFIG_KVM_MAX_NR_VCPUS (4096, times KVM_VCPU_ID_RATIO 4). A trace with a
 * larger one is damaged; its id must never size a table.
 */
#define KVM_MAX_VCPU_ID 16383
/* Linux's largest NR_CPUS (CONFIG_MAXSMP): more CPUs is a damaged file. */
#define MAX_TRACE_CPUS 8192
/* The most fraction bits a multiplier can have and still be shifted. */
#define TSC_MAX_FRAC_BITS 63
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Host TSC ticks in nanoseconds at @tsc_khz, exact: in 128 bits, as a TSC
 * slower than 1 GHz counts fewer ticks than nanoseconds.
 */
static inline unsigned __int128 tsc_to_ns(uint64_t ticks, unsigned long tsc_khz)
{
	return (unsigned __int128)ticks * 1000000 / tsc_khz;
}

/* alloc.c */
void *xrealloc(void *p, size_t n, size_t size);
/* @p, an array of @nr elements of @size bytes and room for *@alloc, with room for one more. */
void *xgrow(void *p, size_t nr, size_t *alloc, size_t size);
/* The same, its elements from @at moved up one, to make room at @at. */
void *xinsert(void *p, size_t nr, size_t *alloc, size_t at, size_t size);
void *xcalloc(size_t n, size_t size);

/* msg.c: "WHO: WHAT: MESSAGE" on stderr; @what may be NULL */
void vreport(const char *who, const char *what, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* hash.c */
size_t hash_slot(uint64_t seed, const void *data, size_t len, size_t slots);
uint64_t mix64(uint64_t x);

/*
 * A set of 64-bit keys that grows: open addressing, 0 marks a free slot,
 * and @zero says whether 0 is in the set. All zeros: empty.
 */
struct key_set {
	uint64_t *keys;
	size_t slots;			/* a power of two, or 0 */
	size_t used;
	bool zero;
};

/* Adds @key to @s; false when it was there. */
bool key_set_add(struct key_set *s, uint64_t key);
void key_set_free(struct key_set *s);

#endif
