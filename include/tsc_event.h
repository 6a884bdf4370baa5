/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc_event.h: the TSC event model: the three kvm events of the contract,
 * their fields (the table in lib/tsc_event.c), and one recorded event.
 * Plain C with no test framework: the selftests and kvm-tsc-merge both
 * read the events with it, by the names of tsc_event_names.h (the series'
 * Documentation/virt/kvm/x86/tsc-tracepoints.rst defines the events,
 * Documentation/contract.md what the project adds).
 */
#ifndef TSC_EVENT_H
#define TSC_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsc_event_names.h"

enum tsc_event_kind { TSC_OFFSET, TSC_MULTIPLIER, TSC_NESTED, TSC_NR_KINDS };

/*
 * One TSC event as recorded. Each member holds the field of the same size
 * that tsc_event_types[] maps to it.
 */
struct tsc_event {
	enum tsc_event_kind kind;
	uint64_t ts;
	uint32_t vcpu_id;
	uint8_t guest_mode;	/* TSC_NESTED: 1 entering L2, 0 back in L1 */
	uint8_t frac_bits;	/* TSC_MULTIPLIER */
	uint64_t prev;		/* an offset, or a multiplier for TSC_MULTIPLIER */
	uint64_t next;
	uint64_t prev_multiplier;	/* TSC_NESTED: the multiplier before */
	uint64_t multiplier;	/* TSC_NESTED: the multiplier loaded with next */
};

#define TSC_MAX_FIELDS 6

/* A field of an event's format file and where struct tsc_event keeps it. */
struct tsc_event_field {
	const char *name;
	unsigned int size;
	bool is_signed;
	size_t member;
};

/* Every field of the contract is unsigned; its size is the member's. */
#define TSC_EVENT_FIELD(field_name, m) {				\
	.name = field_name,						\
	.size = sizeof(((struct tsc_event *)NULL)->m),			\
	.is_signed = false,						\
	.member = offsetof(struct tsc_event, m),			\
}

struct tsc_event_type {
	const char *name;
	unsigned int nr_fields;
	struct tsc_event_field fields[TSC_MAX_FIELDS];
};

/* Indexed by enum tsc_event_kind. */
extern const struct tsc_event_type tsc_event_types[TSC_NR_KINDS];

int tsc_event_kind(const char *event_name);
void tsc_event_store(struct tsc_event *ev, const struct tsc_event_field *field,
		     uint64_t value);

#endif
