/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sinks.h: the output writers (sinks/): what the merged stream becomes: the
 * text timeline, Chrome JSON, Perfetto, and trace-cmd's time sync options in
 * copies of the inputs (sync.c). A sink sees plain data only: the run as
 * described before the merge (struct sink_desc) and each event as the merge
 * hands it (struct sink_event), never the VMs, vCPUs or records behind them.
 */
#ifndef TSC_MERGE_SINKS_H
#define TSC_MERGE_SINKS_H

#include <stdio.h>

#include "common.h"

/* tracedat/tdfile.h's: only sync.c, which copies the files, opens one. */
struct trace_file;

/* A vCPU the host trace shows, as its counters and slices name it. */
struct sink_vcpu {
	unsigned int id;
	uint64_t key;			/* its own number over every VM */
	int process;			/* the VMM process that created it */
	const char *process_comm;
	bool later_vm;			/* its process had made a VM before */
};

/* A guest trace and the VM it is tied to. */
struct sink_guest {
	const char *name;		/* labels its events */
	struct trace_file *file;
	char label[128];		/* "VM NAME (COMM pid PID.GEN)" */
	char vm_spec[32];		/* "@PID.GEN" */
	unsigned int slot;		/* VM order, a VM's L1 guest before its L2 */
	bool nested;			/* an L2 guest: its VM's vCPUs run it */
	int *cpu_threads;		/* the host thread per CPU; -1: none ran it */
	int nr_cpus;
	const char *uname;		/* trace-cmd's UNAME option; NULL: none */
};

/* The run, fixed before the merge: read-only to the sinks. */
struct sink_desc {
	struct trace_file *host;
	const char *host_uname;		/* as sink_guest's */
	int host_cpus;
	struct sink_guest *guests;	/* in command-line order */
	int nr_guests;
	struct sink_vcpu *vcpus;
	unsigned int nr_vcpus;
	unsigned int *vm_first;		/* merge/describe.c's index of @vcpus */
};

/* A host kvm_entry or kvm_exit of a known vCPU. */
enum sink_kvm {
	SINK_KVM_NONE,
	SINK_KVM_ENTRY,
	SINK_KVM_EXIT,
};

/* The merge's own: the event's record, its text formatted at most once. */
struct event_text;

/* One merged event, in host-time order. */
struct sink_event {
	uint64_t host_ts;		/* host TSC */
	uint64_t guest_ts;		/* guest events: as recorded */
	unsigned int machine;		/* 0: the host; 1 + n: guest n */
	int cpu;
	/* Looked up only for a sink whose ops ask for tasks. */
	int pid;			/* the task, as its trace names it */
	const char *comm;
	int tgid;			/* host events: the task's process */
	const char *process_comm;
	int event_id;			/* in its trace; -1: no format */
	const char *name;
	const struct sink_vcpu *vcpu;	/* guest events; host KVM events */
	enum sink_kvm kvm;
	bool was_running;		/* host: the vCPU ran before this event */
	bool sets_offset;		/* host: TSC values put in force */
	bool sets_mult;
	uint64_t offset;
	uint64_t mult;
	bool outside;
	bool ambiguous;
	struct event_text *text;
};

/* The info text of @e, NUL-terminated, valid while the sinks see @e. */
const char *sink_event_text(const struct sink_event *e, unsigned int *len);

/* A field of an event, as its format names and types it. */
enum sink_field_kind {
	SINK_FIELD_INT,
	SINK_FIELD_UINT,
	SINK_FIELD_STR,
};

struct sink_field {
	const char *name;
	enum sink_field_kind kind;
	int64_t i;
	uint64_t u;
	const char *str;
};

/*
 * The fields of @e in its format's order, read at most once, valid while
 * the sinks see @e; none for a damaged record or one without a format.
 */
const struct sink_field *sink_event_fields(const struct sink_event *e, unsigned int *nr);

/*
 * Output sinks, called in host-time order. @finish completes the format
 * and frees, and cannot fail: the output file's owner (main.c, outfile.c)
 * checks the writes. A sink that keeps nothing to complete (its work done
 * per event) has none. @tasks: the sink shows an event's task and process.
 */
struct sink_ops {
	void (*event)(void *sink, const struct sink_event *e);
	void (*finish)(void *sink);
	bool tasks;
};

struct sink {
	const struct sink_ops *ops;
	void *priv;
};

/*
 * What a file sink writes to and with: its file, the run's description and
 * the host TSC rate its times are in (0: none, ticks are shown).
 */
struct sink_out {
	FILE *f;
	const struct sink_desc *desc;
	unsigned long tsc_khz;
};

/* text.c */
bool text_fields_valid(const char *fields);
void *text_sink_new(const struct sink_out *o, const char *fields);
extern const struct sink_ops text_sink_ops;

/* json.c */
void *json_sink_new(const struct sink_out *o);
extern const struct sink_ops json_sink_ops;

/* perfetto.c */
void *perfetto_sink_new(const struct sink_out *o);
extern const struct sink_ops perfetto_sink_ops;

/* sync.c */
struct sync_out;
char *sync_copy_path(const char *dir, const char *input);
struct sync_out *sync_prepare(const char *dir, bool force, uint64_t max_error,
			      const struct sink_desc *desc);
int sync_write(struct sync_out *s);
int sync_commit(struct sync_out *s);
void sync_free(struct sync_out *s);
extern const struct sink_ops sync_sink_ops;

#endif
