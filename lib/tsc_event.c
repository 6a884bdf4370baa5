// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_event.c: the contract's events and fields as data, the one table the
 * selftests and kvm-tsc-merge read the events with.
 */
#include <string.h>

#include "tsc_event.h"

const struct tsc_event_type tsc_event_types[TSC_NR_KINDS] = {
	[TSC_OFFSET] = {
		.name = TSC_OFFSET_EVENT,
		.nr_fields = 3,
		.fields = {
			TSC_EVENT_FIELD(TSC_FIELD_VCPU_ID, vcpu_id),
			TSC_EVENT_FIELD(TSC_FIELD_PREV_OFFSET, prev),
			TSC_EVENT_FIELD(TSC_FIELD_NEXT_OFFSET, next),
		},
	},
	[TSC_MULTIPLIER] = {
		.name = TSC_MULTIPLIER_EVENT,
		.nr_fields = 4,
		.fields = {
			TSC_EVENT_FIELD(TSC_FIELD_VCPU_ID, vcpu_id),
			TSC_EVENT_FIELD(TSC_FIELD_PREV_MULTIPLIER, prev),
			TSC_EVENT_FIELD(TSC_FIELD_NEXT_MULTIPLIER, next),
			TSC_EVENT_FIELD(TSC_FIELD_FRAC_BITS, frac_bits),
		},
	},
	[TSC_NESTED] = {
		.name = TSC_NESTED_EVENT,
		.nr_fields = 6,
		.fields = {
			TSC_EVENT_FIELD(TSC_FIELD_VCPU_ID, vcpu_id),
			TSC_EVENT_FIELD(TSC_FIELD_GUEST_MODE, guest_mode),
			TSC_EVENT_FIELD(TSC_FIELD_PREV_OFFSET, prev),
			TSC_EVENT_FIELD(TSC_FIELD_NEXT_OFFSET, next),
			TSC_EVENT_FIELD(TSC_FIELD_PREV_MULTIPLIER, prev_multiplier),
			TSC_EVENT_FIELD(TSC_FIELD_MULTIPLIER, multiplier),
		},
	},
};

/* The kind of the event called @event_name, or -1 if it is not a TSC event. */
int tsc_event_kind(const char *event_name)
{
	int kind;

	for (kind = 0; kind < TSC_NR_KINDS; kind++)
		if (!strcmp(tsc_event_types[kind].name, event_name))
			return kind;
	return -1;
}

/* Store @value, read from @field of a recorded event, into its member. */
void tsc_event_store(struct tsc_event *ev, const struct tsc_event_field *field,
		     uint64_t value)
{
	char *member = (char *)ev + field->member;

	switch (field->size) {
	case sizeof(uint8_t):
		*(uint8_t *)member = value;
		break;
	case sizeof(uint32_t):
		*(uint32_t *)member = value;
		break;
	default:
		*(uint64_t *)member = value;
	}
}
