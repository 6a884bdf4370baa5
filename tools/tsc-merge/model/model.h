/* SPDX-License-Identifier: GPL-2.0 */
/*
 * model.h: the VM and TSC model (model/): the VMs and vCPUs a host trace
 * shows (vms.c, hostev.c, snapshot.c), each vCPU's TSC step functions
 * scanned from it (scan.c), and guest TSC values converted to host TSC
 * through them (convert.c, tscmath.c).
 */
#ifndef TSC_MERGE_MODEL_H
#define TSC_MERGE_MODEL_H

#include "tsc_event.h"
#include "tracedat/tdfile.h"

/* Levels of a step function: what runs on the vCPU. */
enum tsc_level {
	LEVEL_L1,
	LEVEL_L2,
	NR_LEVELS,
};

/*
 * One step of a vCPU's step function: from host TSC @start (inclusive)
 * until @end, guest_tsc = ((host_tsc * mult) >> frac) + offset.
 * @run_first and @run_last bound the host run intervals (kvm_entry to
 * kvm_exit) at this level inside the step; a step without runs cannot hold
 * guest events. @cause names the host event that began the step. An L2
 * list alternates active steps (L2 runs) and inactive ones (back in L1).
 */
struct tsc_step {
	uint64_t start;
	uint64_t end;			/* exclusive: next step or trace end */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	uint64_t run_first;
	uint64_t run_last;
	uint64_t runs;
	const char *cause;
	bool active;
};

struct step_list {
	struct tsc_step *steps;
	size_t nr;
	size_t alloc;
};

struct vm;

struct vcpu {
	unsigned int id;
	struct vm *vm;
	unsigned int index;		/* its place among its VM's vCPUs */
	int tid;			/* host thread seen in kvm_entry */
	/* L1 values as the scan goes; known once an event told them. */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	bool offset_known;
	bool mult_known;
	/* Known from a snapshot only: the first event's previous value wins. */
	bool offset_from_snapshot;
	bool mult_from_snapshot;
	enum tsc_level level;		/* what kvm_entry enters now */
	enum tsc_level scan_run_level;	/* of the last kvm_entry */
	struct step_list steps[NR_LEVELS];
	/* Merge-time state. */
	enum tsc_level merge_level;
	bool running;
	enum tsc_level run_level;
	uint64_t guest_events;
	uint64_t outside;
	uint64_t ambiguous;
	uint64_t entries;
	/* Against trace-cmd's TIME_SHIFT of its guest file, if it had one. */
	uint64_t shift_events;
	uint64_t shift_max_error;	/* host TSC ticks */
};

struct guest;

/* A VM: the vCPUs one VMM process created; @gen counts VMs of one pid. */
struct vm {
	int pid;
	unsigned int gen;
	uint64_t born;			/* host TSC of its first vCPU (gen > 1) */
	bool current;			/* the pid's VM at this point of a pass */
	char comm[32];
	struct vcpu **vcpus;		/* sorted by id, no holes */
	unsigned int nr_vcpus;
	size_t alloc_vcpus;
	unsigned int index;		/* position in the VM list */
	struct vm *pid_next;		/* the next VM of the table's pid hash chain */
	struct guest *guest[NR_LEVELS];	/* its own trace, its L2's */
};

/* A guest trace tied to a VM; @level picks the steps that convert it. */
struct guest {
	const char *name;
	char *default_name;		/* owns @name when the user gave none */
	struct trace_file file;
	int want_pid;			/* 0: match automatically */
	int want_gen;			/* 0: any */
	enum tsc_level level;
	struct vm *vm;
	int nr_cpus;
	uint64_t events;
	uint64_t outside;
	uint64_t ambiguous;
	uint64_t outside_fit_l2;	/* outside, but inside an L2 run */
};

/* tscmath.c */
bool tsc_guest_to_host(uint64_t guest, uint64_t mult, unsigned int frac,
		       uint64_t offset, uint64_t *host);

/* vms.c */
struct vm_table;
struct vm_table *vm_table_new(void);
void vm_table_free(struct vm_table *t);
void vm_table_add_thread(struct vm_table *t, int tid, int tgid, uint64_t ts);
void vm_table_pin_thread(struct vm_table *t, int tid, int tgid, uint64_t ts);
void vm_table_absorb(struct vm_table *t, struct vm *into, struct vm *from);
void vm_table_drop_empty(struct vm_table *t);
struct vm *vm_table_find_process(struct vm_table *t, int pid);
int vm_table_tgid_at(const struct vm_table *t, int tid, uint64_t ts);
uint64_t vm_table_tgid_until(const struct vm_table *t, int tid, uint64_t ts);
struct vm *vm_table_vm_of_process(struct vm_table *t, int pid, const char *comm);
struct vm *vm_table_new_generation(struct vm_table *t, struct vm *vm,
				   uint64_t born);
void vm_table_rewind(struct vm_table *t);
struct vm *vm_table_follow_generation(struct vm_table *t, struct vm *vm,
				      uint64_t ts);
struct vcpu *vm_get_vcpu(struct vm *vm, unsigned int id);
struct vcpu *vm_find_vcpu(const struct vm *vm, unsigned int id);
unsigned int vm_count_running_vcpus(const struct vm *vm);
unsigned int vm_table_count(const struct vm_table *t);
struct vm *vm_table_get(const struct vm_table *t, unsigned int index);
unsigned int vm_table_guest_slots(const struct vm_table *t);
const struct guest *vm_table_guest(const struct vm_table *t, unsigned int slot);
unsigned int guest_slot(const struct guest *g);
void guest_label(const struct guest *g, char *buf, size_t size);
int guest_cpu_thread(const struct guest *g, unsigned int cpu);
void guest_vm_spec(const struct guest *g, char *buf, size_t size);
uint64_t vcpu_key(const struct vcpu *v);
void vcpu_label(const struct vcpu *v, const char *what, char *buf, size_t size);
int vcpu_process(const struct vcpu *v);
void vm_table_add_guest_options(struct vm_table *t, const struct trace_file *host);
void vm_table_set_unseen(struct vm_table *t, const char *events);
int vm_table_tie_guest(struct vm_table *t, struct guest *g, const struct trace_file *host);
int guest_check_cpus(struct guest *g, const struct trace_file *host);

/* hostev.c */
enum host_kind {
	HOST_OTHER,
	HOST_OFFSET,
	HOST_MULT,
	HOST_NESTED,
	HOST_ENTRY,
	HOST_EXIT,
	HOST_NEWTASK,
	HOST_SNAPSHOT,			/* a record-host.sh snapshot line */
};

#define NR_KVM_KINDS (HOST_EXIT + 1)

struct host_events {
	struct tep_handle *tep;
	struct td_common common;	/* reads common_type and common_pid */
	/* By kind, HOST_OFFSET to HOST_EXIT; NULL: not in the trace. */
	struct tep_event *kvm[NR_KVM_KINDS];
	/* By kind, in the order of the event model's fields (tsc_event.h). */
	struct tep_format_field *kvm_fields[NR_KVM_KINDS][TSC_MAX_FIELDS];
	struct tep_event *newtask, *print;
	struct tep_format_field *nt_pid, *nt_flags, *print_buf;
	/* The ids of those events: a record's type is compared with these. */
	int kvm_id[NR_KVM_KINDS];
	int newtask_id, print_id;
};

struct host_ev {
	enum host_kind kind;
	uint64_t ts;
	int pid;			/* 0 for HOST_OTHER: never read */
	unsigned int vcpu_id;
	uint64_t prev;
	uint64_t next;
	uint64_t prev_mult;		/* kvm_nested_tsc_offset */
	uint64_t mult;			/* kvm_nested_tsc_offset */
	unsigned int frac;		/* kvm_write_tsc_multiplier */
	bool guest_mode;
	int child;			/* task_newtask */
	bool thread;
	char text[256];			/* a snapshot line, NUL-terminated */
};

int host_events_init(struct host_events *he, struct trace_file *host);
void host_events_warn_missing(const struct host_events *he, const char *path);
enum host_kind host_event_decode(const struct host_events *he, struct tracecmd_input *h,
				 struct tep_record *r, struct host_ev *ev);
enum host_kind host_event_decode_known(const struct host_events *he, struct tracecmd_input *h,
				       struct tep_record *r, int type, const struct tep_event *event,
				       bool fits, struct host_ev *ev);
struct vm *host_event_vm(const struct host_events *he, struct vm_table *vms,
			 const struct host_ev *ev);

/* snapshot.c: record-host.sh's "kvm-tsc-snapshot" lines */
#define SNAPSHOT_PREFIX "kvm-tsc-snapshot "

struct snapshot_vcpu {
	int pid;			/* the VMM process */
	unsigned int vcpu_id;
	int tid;			/* 0: the vCPU never ran */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	bool has_mult;
};

enum snapshot_kind {
	SNAPSHOT_OTHER,			/* "end", or a field this reader ignores */
	SNAPSHOT_KHZ,
	SNAPSHOT_UNSCALED,		/* "end ... tsc_scaling=0" */
	SNAPSHOT_VCPU,
	SNAPSHOT_BAD,
};

enum snapshot_kind snapshot_parse(const char *line, struct snapshot_vcpu *v,
				  unsigned long *khz);

/* scan.c */
int scan_host(struct trace_file *host, struct vm_table *vms, bool progress);
void vcpus_check_known(struct vm *vm, const struct trace_file *host, int *errors);
void vcpu_offset_from_time_shift(struct vcpu *v, const struct guest *g);

/* convert.c: where one guest CPU's stream has got to in its step list */
struct guest_cursor {
	enum tsc_level level;
	size_t step;
};

/* @no_step_run: no step's runs hold it; @ambiguous: two steps' runs do. */
struct conversion {
	uint64_t host;
	bool no_step_run;
	bool ambiguous;
};

bool convert_guest_ts(struct vcpu *v, struct guest_cursor *c, uint64_t guest,
		      struct conversion *out);
bool convert_fits_runs(const struct vcpu *v, struct guest_cursor *c, uint64_t guest);
bool conversion_outside_run(const struct conversion *c, const struct vcpu *v,
			    enum tsc_level level);

#endif
