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

/* Each step says how many violations it must add. */
static const struct step {
	enum { OFFSET, MULTIPLIER, NESTED } kind;
	bool guest_mode;
	u64 prev, next, prev_multiplier, multiplier;
	u8 frac_bits;
	unsigned int violations;
} steps[] = {
	{ OFFSET, .prev = 0, .next = 100 },
	{ OFFSET, .prev = 100, .next = 200 },
	{ OFFSET, .prev = 150, .next = 300, .violations = 1 },	/* previous is not 200 */
	{ MULTIPLIER, .prev = 0, .next = ONE_32, .frac_bits = 32 },	/* created: runs L1 */
	{ MULTIPLIER, .prev = ONE_32, .next = 0, .frac_bits = 32, .violations = 1 },	/* 0 */
	{ MULTIPLIER, .prev = 5, .next = ONE_32, .frac_bits = 48, .violations = 2 },	/* 0; 32 */
	{ NESTED, false, .prev = 300, .next = 300, .prev_multiplier = ONE_32,
	  .multiplier = ONE_32, .violations = 1 },	/* guest_mode 0 in L1 */
	{ NESTED, true, .prev = 300, .next = 1300, .prev_multiplier = ONE_32,
	  .multiplier = ONE_32 },
	{ NESTED, true, .prev = 1300, .next = 1400, .prev_multiplier = ONE_32,
	  .multiplier = 0, .violations = 1 },	/* multiplier 0 */
	{ NESTED, false, .prev = 999, .next = 300, .prev_multiplier = 0,
	  .multiplier = ONE_32, .violations = 1 },	/* previous is not L2's */
	{ NESTED, false, .prev = 300, .next = 300, .prev_multiplier = ONE_32,
	  .multiplier = ONE_32, .violations = 1 },	/* guest_mode 0 in L1 */
	{ NESTED, true, .prev = 300, .next = 2000, .prev_multiplier = ONE_32,
	  .multiplier = ONE_32 },
	{ NESTED, false, .prev = 2000, .next = 555, .prev_multiplier = ONE_32,
	  .multiplier = ONE_32, .violations = 1 },	/* next is not L1's */
	{ NESTED, true, .prev = 300, .next = 2000, .prev_multiplier = ONE_32,
	  .multiplier = 2 * ONE_32 },
	{ NESTED, false, .prev = 2000, .next = 300, .prev_multiplier = 2 * ONE_32,
	  .multiplier = 2 * ONE_32, .violations = 1 },	/* L2's multiplier left */
	{ NESTED, true, .prev = 300, .next = 400, .prev_multiplier = 3 * ONE_32,
	  .multiplier = ONE_32, .violations = 1 },	/* previous multiplier not L1's */
	{ NESTED, false, .prev = 400, .next = 300, .prev_multiplier = 2 * ONE_32,
	  .multiplier = ONE_32, .violations = 1 },	/* previous multiplier not L2's */
	/* vCPU 0 created again: a new VM, whose first offset is not checked. */
	{ MULTIPLIER, .prev = 0, .next = ONE_32, .frac_bits = 32 },
	{ OFFSET, .prev = 0, .next = 700 },
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
