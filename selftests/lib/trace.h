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

typedef int (*trace_event_fn)(struct tep_event *event, struct tep_record *record,
			      void *ctx);

bool trace_kvm_event_exists(const char *event);
struct tracefs_instance *trace_instance_create(const char *label);
void trace_instance_remove(struct tracefs_instance *inst);
int _trace_kvm_event_enable(struct tracefs_instance *inst, const char *event);
void trace_kvm_event_enable(struct tracefs_instance *inst, const char *event);
struct tep_handle *trace_kvm_events(void);
int trace_for_each_event(struct tracefs_instance *inst, struct tep_handle *tep,
			 trace_event_fn fn, void *ctx);
uint64_t trace_field(struct tep_event *event, struct tep_record *record,
		     const char *name);

#endif
