/* SPDX-License-Identifier: GPL-2.0 */
/*
 * check.h: what every check is given (the scenario, the recordings of L0
 * and L1, the tools and work directory of stage 2, what earlier checks
 * found), the checks of each mode, and the helpers they share.
 */
#ifndef E2E_CHECK_CHECK_H
#define E2E_CHECK_CHECK_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "recording.h"
#include "report.h"
#include "scenario.h"
#include "tsc.h"

/* Problems a check describes before it only counts them. */
#define MAX_SHOWN	10
/* The room for a check's text, the words of its result line. */
#define WHAT		512

/* Where stage 2 finds kvm-tsc-merge and the readers of its outputs, and where it writes. */
struct tools {
	char merge[PATH_MAX];
	char kshark_times[PATH_MAX];
	char mktrace[PATH_MAX];
	/* The tests' reader of protoc's text of a Perfetto trace: its import rules, its events. */
	char pftrace_check[PATH_MAX];
	/* Perfetto's perfetto_trace.proto, for protoc --decode. */
	char proto_dir[PATH_MAX];
	/* The tracefs format files mktrace writes its traces with. */
	char tracefs[PATH_MAX];
	/* kvm-tsc-merge's outputs and what the checks made of them, kept to be looked at. */
	char work[PATH_MAX];
};

/* One marker where stage 1 put it on L0's TSC, which stage 2 judges kvm-tsc-merge's outputs by. */
struct placed_marker {
	/* Its text in the guest's trace, from "ktt-" on, by which an output's events are searched. */
	char text[MARKER_TEXT];
	/* The guest CPU that wrote it: its vCPU in the outputs. */
	unsigned int cpu;
	/*
	 * The checker's host tick for it, and how far an output's may be off:
	 * 0, or for an L2 marker placed the long way, Documentation/contract.md's
	 * bound against L0's direct pair, which kvm-tsc-merge applies.
	 */
	uint64_t host;
	uint64_t slack;
	/* Its own port exit in L0's trace, and the one before it when @has_prev. */
	struct port_exit exit;
	struct port_exit prev;
	bool has_prev;
};

struct placements {
	struct placed_marker *m;
	size_t n;
};

/* An output's events, in its order, as stage 2 compares them. */
struct out_event {
	uint64_t ts;
	/* -1: the host's; else the guest CPU (its vCPU) it came from. */
	int guest_cpu;
	int cpu;
	/* '!': outside every run of its vCPU; '?': fitting two TSC steps; else 0. */
	char mark;
	char event[32];
	/* The placed marker it is (an index into the placements), or one of: */
	int marker;
};

/* No marker's text. */
#define MARKER_NONE	-1
/* A marker's text that stage 1 placed no marker with. */
#define MARKER_UNPLACED	-2

struct out_events {
	struct out_event *e;
	size_t n;
};

/* What a check found that later ones judge by: run_checks runs them in order. */
struct findings {
	/* Stage 1: each marker on L0's TSC. */
	struct placements placed;
	/* Stage 2: the merge's text timeline, once kvm-tsc-merge wrote it. */
	bool merged;
	struct out_events timeline;
	/* Where kvm-tsc-merge --sync-out wrote its copies of L0's and L1's traces. */
	char sync_host[PATH_MAX];
	char sync_guest[PATH_MAX];
};

struct ctx {
	const struct scenario *s;
	/* L0's trace, the host of L1. */
	struct recording *l0;
	/* L1's own trace; in mode nested also the host of L2. */
	struct recording *l1;
	const struct tools *t;
	struct findings *found;
};

typedef void (*check_fn)(const struct ctx *c);

/* The largest distance from a marker to its port exit, and the markers judged. */
struct gap {
	uint64_t max;
	unsigned int n;
};

/* check.c */
void check_read(const struct ctx *c);
/*
 * The check's words, @fmt and what follows, into @what of WHAT; false,
 * with a failed result naming the file and why, unless @first and @second
 * (NULL: none) could be read.
 */
bool start_check(char *what, const struct recording *first, const struct recording *second,
		 const char *fmt, ...) PRINTF(4, 5);
/* KVM's multiplier for a guest at @khz on a host at @host_khz: 1 << @frac when @khz is 0. */
uint64_t ratio_for(uint64_t khz, uint64_t host_khz, unsigned int frac);
/* KVM's fraction bits for the vendor of kvm_exit's @isa: VMX's TSC multiplier has 48, SVM's 32. */
unsigned int pick_frac_bits(unsigned int isa);
/*
 * The multiplier of a guest at @khz on a host at @host_khz, with the
 * vendor's fraction bits, for a recording that shows none: unscaled when
 * @khz is 0, unknown (0) when @host_khz is.
 */
struct tsc_step make_fallback(uint64_t khz, uint64_t host_khz, unsigned int isa);
/* L1's multiplier, from the scenario, for a recording that shows none. */
struct tsc_step l1_fallback(const struct ctx *c);
/* tsc_build_steps of vCPU @v in @r; false, with a diagnostic saying why, when it fails. */
bool build_steps(const struct recording *r, unsigned int v, const struct tsc_step *fallback,
		 struct tsc_steps *steps);
/*
 * Whether host tick @h of the @k-th marker of a vCPU is after the vCPU's
 * (@k-1)-th port exit in @exits, at or before its @k-th, and inside one of
 * its runs in @vc; a diagnostic naming marker @text for the first problems.
 */
bool judge_placement(const char *text, uint64_t h, const struct port_exit *exits, size_t k,
		     const struct vcpu_facts *vc, struct gap *g, unsigned int *shown);
/* judge_port_exits' @each where only their sum counts. */
#define ANY_COUNT	UINT64_MAX
/*
 * @r's kvm_exits for @port, vCPU by vCPU: a diagnostic for each vCPU with
 * some, and for each below @vcpus unless @each is ANY_COUNT (@foreign after
 * it for one from @vcpus on). Whether only vCPUs below @vcpus have some,
 * each of them @each unless ANY_COUNT; their sum into @total unless NULL.
 */
bool judge_port_exits(const struct recording *r, uint64_t port, uint64_t vcpus, uint64_t each,
		      const char *foreign, uint64_t *total);

/* @dir/@name into @buf of PATH_MAX; a bail-out when too long. */
const char *join_path(char *buf, const char *dir, const char *name);
/* @name in the work directory, into @buf of PATH_MAX. */
const char *work_path(const struct ctx *c, const char *name, char *buf);
/* Stage 1's record of marker @text of guest CPU @cpu at host tick @host, before exits[k]. */
void place_marker(const struct ctx *c, const char *text, unsigned int cpu, uint64_t host,
		  uint64_t slack, const struct port_exit *exits, size_t k);

/* check_l1.c: modes own, agent and late. */
void check_l1_markers(const struct ctx *c);
void check_l1_port_exits(const struct ctx *c);
void check_l1_placement(const struct ctx *c);
void check_l1_tsc_write(const struct ctx *c);
void check_l1_tsc_offset(const struct ctx *c);
void check_l1_multiplier(const struct ctx *c);

/* check_l2.c: mode nested. */
void check_l2_markers(const struct ctx *c);
void check_l2_exits_in_l0(const struct ctx *c);
void check_l2_exits_in_l1(const struct ctx *c);
void check_l2_multiplier(const struct ctx *c);
void check_l2_nested_offsets(const struct ctx *c);
void check_l2_tsc_write(const struct ctx *c);
void check_l2_placement(const struct ctx *c);
void check_l2_chain(const struct ctx *c);
void check_l2_direct(const struct ctx *c);

/* merge_timeline.c: stage 2, kvm-tsc-merge and its timeline. */
void check_merge_l1(const struct ctx *c);
void check_merge_placement(const struct ctx *c);
void check_merge_events(const struct ctx *c);

/* merge_nested.c: mode nested's L2 trace merged through L0's pair for L2. */
void check_merge_l2(const struct ctx *c);
void check_merge_l2_hint(const struct ctx *c);
/* In merge_timeline.c: kvm-tsc-merge --host L0 --guest @spec, the timeline read into c->found. */
bool run_merge(const struct ctx *c, const char *spec, const char *sync_dir);
/*
 * The words of a check of kvm-tsc-merge's outputs, @fmt and what follows,
 * into @what of WHAT; false, with a failed result saying it wrote no
 * @outputs, unless run_merge merged a timeline.
 */
bool start_merge_check(char *what, const struct ctx *c, const char *outputs, const char *fmt, ...)
	PRINTF(4, 5);

/* merge_sync.c: the --sync-out copies through trace-cmd report and libkshark. */
void check_sync_report(const struct ctx *c);
void check_sync_kshark(const struct ctx *c);
void check_sync_combo(const struct ctx *c);
void check_sync_host_report(const struct ctx *c);

/* merge_perfetto.c: -p through protoc and pftrace-check. */
void check_perfetto(const struct ctx *c);

#endif
