/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace.h: a dedicated tracefs instance per test (unique name, x86-tsc
 * clock, only the wanted kvm events), removed on every exit path, and its
 * events read back through libtracefs/libtraceevent.
 */
#ifndef KTT_TRACE_H
#define KTT_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <tracefs/tracefs.h>

#define TSC_OFFSET_EVENT	"kvm_write_tsc_offset"
#define TSC_MULTIPLIER_EVENT	"kvm_write_tsc_multiplier"
#define NESTED_TSC_EVENT	"kvm_nested_tsc_offset"

enum tsc_event_kind { TSC_OFFSET, TSC_MULTIPLIER, TSC_NESTED };

/* One TSC event as recorded; prev/next are offsets or multipliers by kind. */
struct tsc_event {
	enum tsc_event_kind kind;
	uint64_t ts;
	unsigned int vcpu_id;
	uint64_t prev;
	uint64_t next;
	uint64_t multiplier;		/* TSC_NESTED */
	unsigned int frac_bits;		/* TSC_MULTIPLIER */
	unsigned int guest_mode;	/* TSC_NESTED */
};

bool trace_kvm_event_exists(const char *event);
void trace_require_tracefs(void);
void trace_require_kvm_event(const char *event);
struct tracefs_instance *trace_instance_create(const char *label);
void trace_instance_remove(struct tracefs_instance *inst);
void trace_kvm_event_enable(struct tracefs_instance *inst, const char *event);
int trace_read_tsc_events(struct tracefs_instance *inst, struct tsc_event *evs, int max);
int trace_count_tsc_events(struct tracefs_instance *inst);
const struct tsc_event *tsc_last_event(const struct tsc_event *evs, int nr,
				       enum tsc_event_kind kind, unsigned int vcpu_id);
int tsc_count_events(const struct tsc_event *evs, int nr, enum tsc_event_kind kind,
		     unsigned int vcpu_id);

#endif
