/* SPDX-License-Identifier: GPL-2.0 */
/*
 * check.h: what every check is given (the scenario and the recordings of
 * L0 and L1), the checks of each mode, and the helpers they share.
 */
#ifndef E2E_CHECK_CHECK_H
#define E2E_CHECK_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "recording.h"
#include "scenario.h"
#include "tsc.h"

/* Problems a check describes before it only counts them. */
#define MAX_SHOWN	10

struct ctx {
	const struct scenario *s;
	/* L0's trace, the host of L1. */
	struct recording *l0;
	/* L1's own trace; in mode nested also the host of L2. */
	struct recording *l1;
};

typedef void (*check_fn)(const struct ctx *c);

/* The largest distance from a marker to its port exit, and the markers judged. */
struct gap {
	uint64_t max;
	unsigned int n;
};

/* check.c */
void check_read(const struct ctx *c);
/* False, with a failed result naming the file and why, when @r could not be read. */
bool usable(const struct recording *r, const char *what);
/* KVM's multiplier for a guest at @khz on a host at @host_khz: 1 << @frac when @khz is 0. */
uint64_t ratio_for(uint64_t khz, uint64_t host_khz, unsigned int frac);
/* L1's multiplier, from the scenario, for a recording that shows none. */
struct tsc_step l1_fallback(const struct ctx *c);
/*
 * Whether host tick @h of the @k-th marker of a vCPU is after the vCPU's
 * (@k-1)-th port exit in @exits, at or before its @k-th, and inside one of
 * its runs in @vc; a diagnostic naming @label for the first problems.
 */
bool judge_placement(const char *label, uint64_t h, const struct port_exit *exits, size_t k,
		     const struct vcpu_facts *vc, struct gap *g, unsigned int *shown);

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

#endif
