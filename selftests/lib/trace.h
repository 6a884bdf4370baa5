/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace.h: tracefs instances for the TSC events and the events read back
 * from them, through libtracefs and libtraceevent. _foo() returns -errno.
 */
#ifndef KTT_TRACE_H
#define KTT_TRACE_H

#include <stdbool.h>
#include <sys/types.h>
#include <tracefs/tracefs.h>

#include "tsc_event.h"

#define TRACE_TSC_CLOCK "x86-tsc"

bool trace_kvm_event_exists(const char *event);
struct tep_format_field **trace_kvm_event_fields(const char *event);
int _trace_instance_remove(struct tracefs_instance *inst);
int _trace_remove_instances_if(bool (*match)(const char *name, void *arg), void *arg);
int _trace_remove_instances(const char *prefix);
int _trace_set_clock(struct tracefs_instance *inst, const char *clock);
bool trace_clock_is(struct tracefs_instance *inst, const char *clock);
int _trace_set_event_pid(struct tracefs_instance *inst, pid_t pid);
int _trace_enable_event(struct tracefs_instance *inst, const char *event);
int _trace_disable_event(struct tracefs_instance *inst, const char *event);
int _trace_tsc_instance_create(const char *name, pid_t pid, struct tracefs_instance **inst,
			       const char **step);
int _trace_enable_tsc_events(struct tracefs_instance *inst, const char **event);
int _trace_read_tsc_events(struct tracefs_instance *inst, struct tsc_event *evs, int max);
const struct tsc_event *tsc_last_event(const struct tsc_event *evs, int nr,
				       enum tsc_event_kind kind, unsigned int vcpu_id);
int tsc_count_events(const struct tsc_event *evs, int nr, enum tsc_event_kind kind,
		     unsigned int vcpu_id);

#endif
