/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sinks.h: the sinks room: what the merged stream becomes: the text
 * timeline, Chrome JSON, Perfetto, the summary, and trace-cmd's time
 * sync options in copies of the inputs (sync.c). A sink changes nothing
 * of the model: it reads the events the merge hands it, and writes.
 */
#ifndef TSC_MERGE_SINKS_H
#define TSC_MERGE_SINKS_H

#include <stdio.h>

#include "merge/merge.h"

/*
 * info.c: one cache serves every output, so that an event's text is
 * formatted once however many outputs show it; the sinks only borrow it.
 */
struct info_cache;
struct info_cache *info_cache_new(void);
void info_cache_free(struct info_cache *c);
const char *info_text(struct info_cache *c, const struct merged_event *e, unsigned int *len);

/* text.c */
bool text_fields_valid(const char *fields);
void *text_sink_new(FILE *out, const char *fields, unsigned long tsc_khz,
		    struct info_cache *info);
extern const struct sink_ops text_sink_ops;

/* json.c */
void *json_sink_new(FILE *out, struct vm_table *vms, unsigned long tsc_khz,
		    struct info_cache *info);
extern const struct sink_ops json_sink_ops;

/* perfetto.c */
void *perfetto_sink_new(FILE *out, struct vm_table *vms, unsigned long tsc_khz,
			struct guest *guests, int nr_guests, struct info_cache *info);
extern const struct sink_ops perfetto_sink_ops;

/* sync.c */
struct sync_out;
char *sync_copy_path(const char *dir, const char *input);
struct sync_out *sync_prepare(const char *dir, bool force, uint64_t max_error,
			      struct trace_file *host, struct guest *guests, int nr_guests);
int sync_write(struct sync_out *s);
int sync_commit(struct sync_out *s);
void sync_free(struct sync_out *s);
extern const struct sink_ops sync_sink_ops;

/* summary.c */
void summary_print(FILE *out, const struct trace_file *host,
		   struct vm_table *vms, const struct guest *guests,
		   int nr_guests, const struct merge_stats *stats, unsigned long tsc_khz);

#endif
