// SPDX-License-Identifier: GPL-2.0
/*
 * selftest.c: the validator checked on itself (selftest=1): a known
 * sequence of events, some of them inconsistent, must count exactly the
 * violations each step says it adds, no more and no fewer. It runs before
 * any probe is attached, as a VMM no process can be, and the state is
 * cleared after.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/printk.h>

#include "kvm_tsc_probe.h"

#define SELFTEST_TGID	(-1)	/* no process has it */
#define ONE_32		BIT_ULL(32)

static const char *result = "not run";
static u64 counted;

/* An event to play, and how many violations it must add. */
struct step {
	enum { OFFSET, MULTIPLIER, NESTED } kind;
	bool guest_mode;
	u64 prev, next, prev_multiplier, multiplier;
	u8 frac_bits;
	unsigned int violations;
};

/* One line a step: the event's fields in its order, then the violations. */
#define OFFSET_STEP(_prev, _next, nr)						\
	{ OFFSET, .prev = (_prev), .next = (_next), .violations = (nr) }
#define MULTIPLIER_STEP(_prev, _next, bits, nr)					\
	{ MULTIPLIER, .prev = (_prev), .next = (_next), .frac_bits = (bits),	\
	  .violations = (nr) }
#define NESTED_STEP(_guest_mode, _prev, _next, prev_mult, mult, nr)		\
	{ NESTED, (_guest_mode), .prev = (_prev), .next = (_next),		\
	  .prev_multiplier = (prev_mult), .multiplier = (mult), .violations = (nr) }

static const struct step steps[] = {
	OFFSET_STEP(0, 100, 0),
	OFFSET_STEP(100, 200, 0),
	OFFSET_STEP(150, 300, 1),			/* previous is not 200 */
	MULTIPLIER_STEP(0, ONE_32, 32, 0),		/* created: runs L1 */
	MULTIPLIER_STEP(ONE_32, 0, 32, 1),		/* 0 */
	MULTIPLIER_STEP(5, ONE_32, 48, 2),		/* 0; 32 */
	NESTED_STEP(false, 300, 300, ONE_32, ONE_32, 1),	/* guest_mode 0 in L1 */
	NESTED_STEP(true, 300, 1300, ONE_32, ONE_32, 0),
	NESTED_STEP(true, 1300, 1400, ONE_32, 0, 1),		/* multiplier 0 */
	NESTED_STEP(false, 999, 300, 0, ONE_32, 1),		/* previous is not L2's */
	NESTED_STEP(false, 300, 300, ONE_32, ONE_32, 1),	/* guest_mode 0 in L1 */
	NESTED_STEP(true, 300, 2000, ONE_32, ONE_32, 0),
	NESTED_STEP(false, 2000, 555, ONE_32, ONE_32, 1),	/* next is not L1's */
	NESTED_STEP(true, 300, 2000, ONE_32, 2 * ONE_32, 0),
	NESTED_STEP(false, 2000, 300, 2 * ONE_32, 2 * ONE_32, 1), /* L2's multiplier left */
	NESTED_STEP(true, 300, 400, 3 * ONE_32, ONE_32, 1),	/* previous multiplier not L1's */
	NESTED_STEP(false, 400, 300, 2 * ONE_32, ONE_32, 1),	/* previous multiplier not L2's */
	/* vCPU 0 created again: a new VM, whose first offset is not checked. */
	MULTIPLIER_STEP(0, ONE_32, 32, 0),
	OFFSET_STEP(0, 700, 0),
};

static void play(const struct step *s)
{
	switch (s->kind) {
	case OFFSET:
		ktt_on_offset(SELFTEST_TGID, 0, s->prev, s->next);
		break;
	case MULTIPLIER:
		ktt_on_multiplier(SELFTEST_TGID, 0, s->prev, s->next, s->frac_bits);
		break;
	case NESTED:
		ktt_on_nested(SELFTEST_TGID, 0, s->guest_mode, s->prev, s->next,
			      s->prev_multiplier, s->multiplier);
		break;
	}
}

int ktt_selftest(void)
{
	u64 expected = 0, before;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		before = ktt_violations();
		play(&steps[i]);
		expected += steps[i].violations;
		if (ktt_violations() - before != steps[i].violations) {
			pr_err("selftest step %u: expected %u new violations, counted %llu\n",
			       i, steps[i].violations, ktt_violations() - before);
			result = "failed";
			counted = ktt_violations();
			ktt_state_reset();
			return -EINVAL;
		}
	}
	counted = ktt_violations();
	result = counted == expected ? "passed" : "failed";
	pr_info("selftest %s: %llu violations counted, %llu expected\n", result,
		counted, expected);
	ktt_state_reset();
	return counted == expected ? 0 : -EINVAL;
}

void ktt_show_selftest(struct seq_file *m)
{
	seq_printf(m, "%s: %llu violations counted\n", result, counted);
}
