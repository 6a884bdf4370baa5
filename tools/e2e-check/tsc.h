/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc.h: a guest's TSC as a function of its host's, step by step: the
 * formula KVM applies, its inverse, which step holds a guest value, and
 * the TSC events of a vCPU that make the steps.
 */
#ifndef E2E_CHECK_TSC_H
#define E2E_CHECK_TSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recording.h"

/* From host tick @start on, guest = ((host * mult) >> frac) + offset; mult 0: unknown. */
struct tsc_step {
	uint64_t start;
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
};

/* One vCPU's steps in time order, the last one up to @end, the recording's last tick. */
struct tsc_steps {
	struct tsc_step *step;
	size_t n;
	uint64_t end;
};

uint64_t tsc_guest_at(const struct tsc_step *s, uint64_t host);
/* The first host tick at which the guest reads @guest or more; false if none. */
bool tsc_host_of(const struct tsc_step *s, uint64_t guest, uint64_t *host);
/* @guest on the host with the latest step whose own span holds its conversion. */
bool tsc_place(const struct tsc_steps *st, uint64_t guest, uint64_t *host);
/* The step in force at host tick @host; NULL before the first. */
const struct tsc_step *tsc_step_at(const struct tsc_steps *st, uint64_t host);

/*
 * kvm-tsc-snapshot's multiplier in @snap into @s: its ratio, else
 * unscaled (KVM without TSC scaling); false when @snap has no line.
 */
bool tsc_snapshot_mult(const struct snapshot_vcpu *snap, struct tsc_step *s);
/* The first TSC event of @kind of @vc, or the last when @last; NULL: none. */
const struct tsc_event *tsc_find_event(const struct vcpu_facts *vc, enum tsc_kind kind, bool last);
/*
 * The next kvm_write_tsc_offset of @vc from its event *@i on (*@i moved
 * past it) whose new offset, by @steps, puts the guest's TSC at the event
 * @past = 0 to @bound ticks past @value; NULL: none.
 */
const struct tsc_event *tsc_next_write(const struct vcpu_facts *vc, const struct tsc_steps *steps,
				       uint64_t value, uint64_t bound, size_t *i, uint64_t *past);

/*
 * The steps of guest vCPU @vcpu in the host recording @r, from its
 * kvm_write_tsc_offset and kvm_write_tsc_multiplier events. Before the
 * first, the values the first replaces, else kvm-tsc-record's snapshot
 * (unscaled where it has no multiplier: KVM without TSC scaling), else
 * (the multiplier only) @fallback. -1, with @why, when no offset is known.
 */
int tsc_build_steps(const struct recording *r, unsigned int vcpu, const struct tsc_step *fallback,
		    struct tsc_steps *out, const char **why);
/*
 * The L2 steps of @vcpu in @r: a kvm_nested_tsc_offset into guest mode
 * begins one with the pair KVM applies to L2, one out of it an unknown one.
 */
void tsc_build_nested_steps(const struct recording *r, unsigned int vcpu, unsigned int frac,
			    struct tsc_steps *out);

#endif
