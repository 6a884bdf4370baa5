/* SPDX-License-Identifier: GPL-2.0 */
/*
 * recording.h: what the checker takes from one trace.dat, read once with
 * libtracecmd and libtraceevent: the markers and TSC writes of the level
 * that recorded it, and, where that level is a KVM host, its guests' port
 * exits, runs and TSC offsets and multipliers, every timestamp raw; and
 * the markers' texts as they were written.
 */
#ifndef E2E_CHECK_RECORDING_H
#define E2E_CHECK_RECORDING_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scenario.h"

/* kvm_exit's isa field. */
#define ISA_VMX	1
#define ISA_SVM	2

enum phase {
	PHASE_BEFORE,
	PHASE_AFTER,
};

/* "ktt-marker PHASE cpu=C seq=K" (scripts/e2e/guest-init.sh), on CPU rec_cpu. */
struct marker {
	uint64_t ts;
	int rec_cpu;
	unsigned int cpu;
	unsigned int seq;
	enum phase phase;
};

/*
 * The room for a marker's text, by which the checks name it, in quotes:
 * the longest, a ktt-n-marker's of 10, 10 and 20 digits, and its NUL.
 */
#define MARKER_TEXT	68

/* msr:write_msr of IA32_TSC (0x10). */
struct msr_write {
	uint64_t ts;
	uint64_t value;
	bool failed;
};

/* "ktt-n-marker cpu=C seq=K tsc=T" (tsc_nested_payload): its guest's rdtsc. */
struct payload_marker {
	uint64_t ts;
	unsigned int cpu;
	unsigned int seq;
	uint64_t tsc;
};

/* "ktt-n-jump cpu=C from=X to=Y": the payload set its guest's IA32_TSC. */
struct payload_jump {
	uint64_t ts;
	unsigned int cpu;
	uint64_t from;
	uint64_t to;
};

/* A kvm_exit for an I/O instruction; rec_cpu is the CPU that ran the vCPU. */
struct port_exit {
	uint64_t ts;
	int rec_cpu;
	unsigned int vcpu;
	unsigned int port;
};

/* task_newtask: thread @pid made by thread @parent (its process's main thread for a VMM's vCPUs). */
struct new_task {
	int pid;
	int parent;
};

/* [entry, exit) of one vCPU run. */
struct run {
	uint64_t entry;
	uint64_t exit;
};

enum tsc_kind {
	TSC_OFFSET,
	TSC_MULTIPLIER,
	TSC_NESTED,
};

/*
 * kvm_write_tsc_offset (prev, next: offsets), kvm_write_tsc_multiplier
 * (prev, next: multipliers, frac) or kvm_nested_tsc_offset (prev, next:
 * offsets, mult: the multiplier after it, guest_mode).
 */
struct tsc_event {
	uint64_t ts;
	enum tsc_kind kind;
	uint64_t prev;
	uint64_t next;
	uint64_t mult;
	unsigned int frac;
	bool guest_mode;
};

/*
 * A kvm-tsc-snapshot line of kvm-tsc-record for one vCPU: its offset, and
 * its multiplier where KVM has TSC scaling (else the vCPU is unscaled).
 */
struct snapshot_vcpu {
	bool known;
	uint64_t offset;
	bool scaling;
	uint64_t ratio;
	unsigned int frac;
};

struct vcpu_facts {
	/* The thread that ran it (its last kvm_entry's), and its kvm_entry and kvm_exit events. */
	int tid;
	uint64_t nr_entries;
	uint64_t nr_exits;
	struct run *runs;
	size_t nr_runs;
	uint64_t entry;
	bool running;
	struct tsc_event *tsc;
	size_t nr_tsc;
	struct snapshot_vcpu snapshot;
};

struct recording {
	/* The file's name in the mode's directory, as the checks name it. */
	const char *name;
	char path[PATH_MAX];
	/* Why it cannot be checked; empty once read. */
	char error[256];
	uint64_t nr_events;
	uint64_t last_ts;
	unsigned int isa;
	/* L0's rate: kvm-tsc-snapshot's tsc_khz=, else trace-cmd's TSC2NSEC; 0: neither. */
	uint64_t tsc_khz;
	const char *tsc_khz_from;
	/* A kvm-tsc-snapshot end line's tsc_scaling=0: every vCPU at 1.0. */
	bool no_tsc_scaling;
	bool has_write_msr;
	struct marker *markers;
	size_t nr_markers;
	/*
	 * By the CPU that recorded them, the IA32_TSC writes, and by L2 vCPU
	 * the payload's jumps: the last, and how many, as the checks want one.
	 */
	struct msr_write msr_write[MAX_VCPUS];
	unsigned int nr_msr_writes[MAX_VCPUS];
	struct payload_marker *payload_markers;
	size_t nr_payload_markers;
	struct payload_jump payload_jump[MAX_VCPUS];
	unsigned int nr_payload_jumps[MAX_VCPUS];
	struct port_exit *port_exits;
	size_t nr_port_exits;
	/* task_newtask: who made each thread. */
	struct new_task *new_tasks;
	size_t nr_new_tasks;
	/* The thread of the first kvm_nested_tsc_offset into guest mode; 0: none. */
	int l2_runner;
	struct vcpu_facts vcpu[MAX_VCPUS];
};

/* "before" or "after". */
const char *phase_name(enum phase phase);
/* @m's text as guest-init.sh wrote it into trace_marker. */
void marker_text(char *buf, size_t size, const struct marker *m);
/* @m's text as tsc_nested_payload wrote it into L1's trace. */
void payload_marker_text(char *buf, size_t size, const struct payload_marker *m);

/* Read DIR/NAME into @r; on failure r->error says why. */
void recording_read(struct recording *r, const char *dir, const char *name);
void recording_free(struct recording *r);
/*
 * Whether libtracecmd, and so trace-cmd report and libkshark, shows the
 * times of the trace.dat at @path in ns; -1 when it cannot open it.
 */
int recording_shows_ns(const char *path, bool *ns);
/* Where @r has no kvm-tsc-snapshot tsc_khz: L0's rate from trace-cmd's TSC2NSEC, if any. */
void recording_read_tsc2nsec(struct recording *r);

/*
 * The process whose vCPU thread ran a nested guest first (the creator of
 * r->l2_runner by task_newtask): kvm-tsc-merge's @PID for L2's trace; 0: unknown.
 */
int recording_l2_vmm(const struct recording *r);

/* @r's port exits of @port on vCPU @vcpu, in time order, into *@out (freed by the caller). */
size_t recording_port_exits(const struct recording *r, unsigned int vcpu, unsigned int port,
			    struct port_exit **out);

/* Grow *@p, holding @n elements of @size, to room for one more. */
void *grow(void *p, size_t n, size_t size);

#endif
