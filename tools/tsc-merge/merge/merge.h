/* SPDX-License-Identifier: GPL-2.0 */
/*
 * merge.h: the merge room: the host and guest files read in host-time
 * order, each event converted and handed to the sinks (merge.c).
 */
#ifndef TSC_MERGE_MERGE_H
#define TSC_MERGE_MERGE_H

#include "model/model.h"

/* What one merged event is, for the sinks. */
struct merged_event {
	uint64_t host_ts;
	uint64_t guest_ts;
	struct tep_handle *tep;
	struct tep_record *record;
	struct tep_event *event;
	int cpu;
	struct guest *guest;		/* NULL for a host event */
	struct vcpu *vcpu;		/* guest events; host KVM events */
	const struct host_ev *host;	/* host events: as decoded */
	bool outside;
	bool ambiguous;
	bool damaged;			/* record_damage(): never printed */
	bool was_running;		/* host: the vCPU ran before this event */
};

/*
 * Output sinks, called in host-time order. @finish flushes and frees; a
 * sink that keeps nothing to flush (its work done per event) has none.
 */
struct sink_ops {
	void (*event)(void *sink, const struct merged_event *e);
	int (*finish)(void *sink);
};

struct sink {
	const struct sink_ops *ops;
	void *priv;
};

/* merge.c */
struct merge_stats {
	uint64_t host_events;
	uint64_t guest_events;
	uint64_t outside;
	uint64_t ambiguous;
	uint64_t out_of_order;
	uint64_t damaged;		/* records record_damage() refused */
	uint64_t before_host;		/* guest events before the host's first */
};

int merge_traces(struct trace_file *host, struct guest *guests, int nr_guests,
		 struct vm_table *vms, struct sink *sinks, int nr_sinks,
		 struct merge_stats *stats, bool progress);

#endif
