/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc_event_names.h: the names of the three kvm events of the contract and
 * of their fields, the one place the kernel modules, the selftests and
 * kvm-tsc-merge take them from. Macros only and no include, so that the
 * modules include it as well as user space (through tsc_event.h).
 *
 * The modules attach to the tracepoints by name and check each probe
 * against the tracepoint's prototype, which trace.h declares under names
 * made from the tracepoint's identifier: hence the *_TP identifiers, from
 * which the *_EVENT strings are made.
 */
#ifndef TSC_EVENT_NAMES_H
#define TSC_EVENT_NAMES_H

/* Expands @x first, so that a *_TP macro becomes its tracepoint's name. */
#define TSC_EVENT_STR(x)	TSC_EVENT_STR_(x)
#define TSC_EVENT_STR_(x)	#x

#define TSC_OFFSET_TP		kvm_write_tsc_offset
#define TSC_MULTIPLIER_TP	kvm_write_tsc_multiplier
#define TSC_NESTED_TP		kvm_nested_tsc_offset

#define TSC_EVENT_SYSTEM	"kvm"
#define TSC_OFFSET_EVENT	TSC_EVENT_STR(TSC_OFFSET_TP)
#define TSC_MULTIPLIER_EVENT	TSC_EVENT_STR(TSC_MULTIPLIER_TP)
#define TSC_NESTED_EVENT	TSC_EVENT_STR(TSC_NESTED_TP)

/* The events' own fields; offsets and multipliers have a previous and a next. */
#define TSC_FIELD_VCPU_ID		"vcpu_id"
#define TSC_FIELD_PREV_OFFSET		"previous_tsc_offset"
#define TSC_FIELD_NEXT_OFFSET		"next_tsc_offset"
#define TSC_FIELD_PREV_MULTIPLIER	"previous_tsc_multiplier"
#define TSC_FIELD_NEXT_MULTIPLIER	"next_tsc_multiplier"
#define TSC_FIELD_FRAC_BITS		"frac_bits"
#define TSC_FIELD_GUEST_MODE		"guest_mode"
#define TSC_FIELD_MULTIPLIER		"tsc_multiplier"

#endif
