/* SPDX-License-Identifier: GPL-2.0 */
/*
 * merge.h: the merge (merge/): the host and guest files read in host-time
 * order, each event converted and handed to the output writers (merge.c) as
 * plain data (describe.c) with its text formatted once (info.c), and the
 * summary of what the model and the merge found (summary.c).
 */
#ifndef TSC_MERGE_MERGE_H
#define TSC_MERGE_MERGE_H

#include "model/model.h"
#include "sinks/sinks.h"

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
		 struct vm_table *vms, const struct sink_desc *desc,
		 struct sink *sinks, int nr_sinks, struct merge_stats *stats, bool progress);

/* describe.c */
struct sink_desc *describe_run(struct trace_file *host, struct guest *guests,
			       int nr_guests, const struct vm_table *vms);
void describe_free(struct sink_desc *d);
const struct sink_vcpu *describe_vcpu(const struct sink_desc *d, const struct vcpu *v);

/* info.c: one cache serves every event, so that equal records format once */
struct info_cache;
struct info_cache *info_cache_new(void);
void info_cache_free(struct info_cache *c);

/* fields.c: one buffer serves every event's fields */
struct field_buf;
struct field_buf *field_buf_new(void);
void field_buf_free(struct field_buf *b);

struct event_text {
	struct info_cache *cache;
	struct field_buf *field_buf;
	bool fields_read;
	unsigned int nr_fields;
	struct tep_handle *tep;
	struct tep_record *record;
	struct tep_event *event;	/* of @record; NULL: none has its type */
	bool damaged;			/* record_damage(): never printed */
	const char *text;		/* NULL: not formatted yet */
	unsigned int len;
};

/* summary.c */
void summary_print(FILE *out, const struct trace_file *host,
		   struct vm_table *vms, const struct guest *guests,
		   int nr_guests, const struct merge_stats *stats, unsigned long tsc_khz);

#endif
