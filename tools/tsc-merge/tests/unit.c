// SPDX-License-Identifier: GPL-2.0
/*
 * unit: C unit tests of the TSC arithmetic (model/tscmath.c) and of the
 * choice of step (model/convert.c), against Documentation/contract.md's
 * "Converting a guest timestamp to host time", printed as TAP.
 *
 * run-tests.sh runs the tool end to end on synthetic traces; here the
 * edges it cannot reach cheaply are pinned one by one: the 128-bit product
 * near 2^64, an unscaled multiplier at frac_bits 48 and 32, a guest TSC
 * faster than the host's. Every expected value is worked out by hand in
 * the comment above its test, from guest = ((host * mult) >> frac) +
 * offset, so a test fails when the arithmetic or the rule changes.
 *
 * The TAP lines are this file's own, the C side's one TAP writer (main()
 * and result()); run-tests.sh numbers them on in its stream.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"

#define MULT_ONE_48	(1ull << 48)	/* 1.0 at VMX's frac_bits */
#define MULT_ONE_32	(1ull << 32)	/* 1.0 at SVM's frac_bits */

/* A mismatch, as a TAP comment, so a failure says which value is wrong. */
static bool expect_u64(const char *what, uint64_t got, uint64_t want)
{
	if (got == want)
		return true;
	printf("# %s: got %" PRIu64 ", expected %" PRIu64 "\n", what, got, want);
	return false;
}

/* tsc_guest_to_host() must succeed and give @want. */
static bool inverse_is(uint64_t guest, uint64_t mult, unsigned int frac,
		       uint64_t offset, uint64_t want)
{
	uint64_t host = 0;

	if (!tsc_guest_to_host(guest, mult, frac, offset, &host)) {
		printf("# guest %" PRIu64 ": no host tick, expected %" PRIu64 "\n", guest, want);
		return false;
	}
	return expect_u64("host tick", host, want);
}

/* tsc_guest_to_host() must find no 64-bit host tick. */
static bool no_inverse(uint64_t guest, uint64_t mult, unsigned int frac, uint64_t offset)
{
	uint64_t host;

	if (!tsc_guest_to_host(guest, mult, frac, offset, &host))
		return true;
	printf("# guest %" PRIu64 ": host tick %" PRIu64 ", expected none\n", guest, host);
	return false;
}

/*
 * mult == 1 << 48 is no scaling: host = guest - offset mod 2^64. Guest 5,
 * offset 10: 5 - 10 = 2^64 - 5 = 18446744073709551611, the only solution.
 */
static bool unscaled_vmx(void)
{
	return inverse_is(5, MULT_ONE_48, 48, 10, 18446744073709551611ull) &&
	       inverse_is(UINT64_MAX, MULT_ONE_48, 48, 0, UINT64_MAX);
}

/* The same at SVM's 32 bits: guest 2^64 - 1, offset 2^63 gives 2^63 - 1. */
static bool unscaled_svm(void)
{
	return inverse_is(UINT64_MAX, MULT_ONE_32, 32, 1ull << 63, (1ull << 63) - 1);
}

/*
 * VMX, mult 1.5 (0x1800000000000), offset -10^12 (run-tests.sh's
 * test_scaling_intel): guest 5999 * 10^12 gives d = 6 * 10^15, and
 * d * 2^48 / (1.5 * 2^48) = 4 * 10^15 exactly; one guest tick more is
 * d = 6 * 10^15 + 1, 4 * 10^15 + 2/3, rounded up to 4 * 10^15 + 1.
 * d << 48 is about 2^100: the product needs the 128 bits.
 */
static bool scaled_vmx_128bit(void)
{
	uint64_t offset = -1000000000000ull;

	return inverse_is(5999000000000000ull, 0x1800000000000ull, 48, offset,
			  4000000000000000ull) &&
	       inverse_is(5999000000000001ull, 0x1800000000000ull, 48, offset,
			  4000000000000001ull);
}

/*
 * VMX, mult 0.75 (3 << 46), offset 0, the largest host tick: host 2^64 - 1
 * reads floor((2^64 - 1) * 3 / 4) = 3 * 2^62 - 1 = 13835058055282163711,
 * and back: ceil((3 * 2^62 - 1) * 4 / 3) = ceil(2^64 - 4/3) = 2^64 - 1.
 */
static bool scaled_vmx_top_tick(void)
{
	return inverse_is(13835058055282163711ull, 3ull << 46, 48, 0, UINT64_MAX);
}

/*
 * One guest value more, 3 * 2^62, needs host 3 * 2^62 * 4 / 3 = 2^64: no
 * 64-bit host tick reads it, and the inverse says so.
 */
static bool scaled_vmx_past_top(void)
{
	return no_inverse(3ull << 62, 3ull << 46, 48, 0);
}

/*
 * SVM, mult 0.75 (0xc0000000), offset 7 (test_scaling_amd): a guest
 * slower than the host reads one value at several host ticks; the first
 * is the one. Host 999 reads floor(749.25) + 7 = 756, 1000 reads 757, 1001
 * reads floor(750.75) + 7 = 757 too: guest 757 is host 1000. Guest 758: d
 * = 751, ceil(751 * 4 / 3) = ceil(1001.33) = 1002, and 1002 reads 751 + 7.
 */
static bool scaled_svm_slower_first_tick(void)
{
	return inverse_is(757, 0xc0000000, 32, 7, 1000) &&
	       inverse_is(758, 0xc0000000, 32, 7, 1002) &&
	       inverse_is(1207, 0xc0000000, 32, 7, 1600);
}

/*
 * SVM, mult 1.5 (0x180000000), offset 0, the contract's example: host 100,
 * 101, 102, 103 read 150, 151, 153, 154. The skipped 152 goes to the first
 * tick reading more, 102 (ceil(152 * 2 / 3) = ceil(101.33)), as 153 does.
 */
static bool scaled_svm_faster_skips(void)
{
	return inverse_is(150, 0x180000000ull, 32, 0, 100) &&
	       inverse_is(151, 0x180000000ull, 32, 0, 101) &&
	       inverse_is(152, 0x180000000ull, 32, 0, 102) &&
	       inverse_is(153, 0x180000000ull, 32, 0, 102) &&
	       inverse_is(154, 0x180000000ull, 32, 0, 103);
}

/* A zero multiplier (a vCPU being created) and frac_bits 64 invert nothing. */
static bool no_inverse_bad_scale(void)
{
	return no_inverse(100, 0, 48, 0) && no_inverse(100, 1ull << 63, 64, 0);
}

/* frac_bits 63, the most a multiplier can have: 1 << 63 is still 1.0. */
static bool unscaled_frac63(void)
{
	return inverse_is(42, 1ull << 63, 63, 0, 42);
}

/*
 * Nanoseconds in 128 bits: 2^64 - 1 ticks at 1 GHz are 2^64 - 1 ns; at
 * 1 kHz they are (2^64 - 1) * 10^6 ns, above 2^64; 3 ticks at 2 GHz are
 * 1.5 ns, truncated to 1.
 */
static bool ns_exact(void)
{
	unsigned __int128 big = tsc_to_ns(UINT64_MAX, 1);

	return expect_u64("ns at 1 GHz", (uint64_t)tsc_to_ns(UINT64_MAX, 1000000), UINT64_MAX) &&
	       expect_u64("ns at 1 kHz, high 64 bits", (uint64_t)(big >> 64), 999999) &&
	       expect_u64("ns at 1 kHz, low 64 bits", (uint64_t)big, -1000000ull) &&
	       expect_u64("ns at 2 GHz", (uint64_t)tsc_to_ns(3, 2000000), 1);
}

/*
 * A step list by hand, as scan.c leaves it: each step unscaled at frac_bits
 * 32 unless the test says otherwise, active, from @start to the next one's.
 */
struct hand_step {
	uint64_t start, end, offset, run_first, run_last;
};

static struct tsc_step steps[4];
static struct vcpu vcpu;

static struct vcpu *vcpu_with(const struct hand_step *hs, size_t nr)
{
	size_t i;

	memset(&vcpu, 0, sizeof(vcpu));
	memset(steps, 0, sizeof(steps));
	for (i = 0; i < nr; i++) {
		steps[i].start = hs[i].start;
		steps[i].end = hs[i].end;
		steps[i].offset = hs[i].offset;
		steps[i].mult = MULT_ONE_32;
		steps[i].frac = 32;
		steps[i].run_first = hs[i].run_first;
		steps[i].run_last = hs[i].run_last;
		steps[i].runs = hs[i].run_last > hs[i].run_first;
		steps[i].active = true;
	}
	vcpu.steps[LEVEL_L1].steps = steps;
	vcpu.steps[LEVEL_L1].nr = nr;
	return &vcpu;
}

/* Convert @guest from cursor step @from and compare all the answer says. */
static bool converts(struct vcpu *v, size_t from, uint64_t guest, uint64_t host,
		     size_t step, bool outside, bool ambiguous)
{
	struct guest_cursor c = { .level = LEVEL_L1, .step = from };
	struct conversion out;

	if (!convert_guest_ts(v, &c, guest, &out)) {
		printf("# guest %" PRIu64 ": no step converts it\n", guest);
		return false;
	}
	return expect_u64("host tick", out.host, host) &&
	       expect_u64("cursor step", c.step, step) &&
	       expect_u64("outside every step's runs", out.no_step_run, outside) &&
	       expect_u64("ambiguous", out.ambiguous, ambiguous);
}

/*
 * test_offset_step's vCPU: offset -100 until the write at 310, 5000 from
 * it; runs [200, 300) and [400, 500). Guest 150 is host 250 in step 0;
 * guest 5450 is host 450 in step 1, and the cursor moves there.
 */
static const struct hand_step offset_step[] = {
	{ 0, 310, -100ull, 200, 300 },
	{ 310, 600, 5000, 400, 500 },
};

static bool step_each_side(void)
{
	struct vcpu *v = vcpu_with(offset_step, ARRAY_SIZE(offset_step));

	return converts(v, 0, 150, 250, 0, false, false) &&
	       converts(v, 0, 5450, 450, 1, false, false);
}

/*
 * The cursor never goes back: from step 1, guest 150 (step 0's) converts
 * only with step 1, to 150 - 5000 mod 2^64 = 18446744073709546766, and is
 * outside; the cursor stays at 1.
 */
static bool cursor_never_back(void)
{
	struct vcpu *v = vcpu_with(offset_step, ARRAY_SIZE(offset_step));

	return converts(v, 1, 150, 18446744073709546766ull, 1, true, false);
}

/*
 * [entry, exit): one step, runs [200, 300). Guest 200 and 299 (offset 0)
 * are inside; guest 300, the exit's tick, is not: placed at 300, outside.
 */
static const struct hand_step one_run[] = {
	{ 0, 1000, 0, 200, 300 },
};

static bool run_half_open(void)
{
	struct vcpu *v = vcpu_with(one_run, ARRAY_SIZE(one_run));

	return converts(v, 0, 200, 200, 0, false, false) &&
	       converts(v, 0, 299, 299, 0, false, false) &&
	       converts(v, 0, 300, 300, 0, true, false);
}

/*
 * The write's own tick belongs to the new values: offset 0 until the
 * write at 310, 1000 from it, the vCPU entering at 310 and 600 (step 0's
 * runs cut at 310, scan.c's push_step()). Guest 1310 is host 310 with step
 * 1, inside. Guest 310 is host 310 with step 0, past its span [0, 310):
 * outside, at distance 310 - 310 + 1 = 1; step 1 would put it at 310 -
 * 1000 mod 2^64, much further. It stays at 310, cursor at 0.
 */
static const struct hand_step write_tick[] = {
	{ 0, 310, 0, 200, 310 },
	{ 310, 700, 1000, 310, 650 },
};

static bool write_tick_is_new(void)
{
	struct vcpu *v = vcpu_with(write_tick, ARRAY_SIZE(write_tick));

	return converts(v, 0, 1310, 310, 1, false, false) &&
	       converts(v, 0, 310, 310, 0, true, false);
}

/*
 * test_ambiguous: offset 0, then -150 at 310; runs [200, 300), [400, 500).
 * Guest 250 is host 250 in step 0 and host 400 in step 1, both in runs:
 * the first is taken and the event is ambiguous.
 */
static const struct hand_step set_back[] = {
	{ 0, 310, 0, 200, 300 },
	{ 310, 600, -150ull, 400, 500 },
};

static bool set_back_ambiguous(void)
{
	struct vcpu *v = vcpu_with(set_back, ARRAY_SIZE(set_back));

	return converts(v, 0, 250, 250, 0, false, true);
}

/*
 * The first step whose runs hold the tick wins, not the one whose span
 * holds it: guest 60 is host 60 in step 0 (span [0, 100), runs [10, 50):
 * not in them) and host 160 in step 1 (offset -100, runs [150, 190)).
 */
static const struct hand_step runs_not_span[] = {
	{ 0, 100, 0, 10, 50 },
	{ 100, 200, -100ull, 150, 190 },
};

static bool runs_choose_step(void)
{
	struct vcpu *v = vcpu_with(runs_not_span, ARRAY_SIZE(runs_not_span));

	return converts(v, 0, 60, 160, 1, false, false);
}

/*
 * The span of a step's runs covers the gaps between them: runs [100, 200)
 * and [300, 400) make the span [100, 400), and guest 250 is placed there
 * with the step (the merge marks it outside later, seeing no run).
 */
static const struct hand_step two_runs[] = {
	{ 0, 500, 0, 100, 400 },
};

static bool gap_in_span(void)
{
	struct vcpu *v = vcpu_with(two_runs, ARRAY_SIZE(two_runs));

	return converts(v, 0, 250, 250, 0, false, false);
}

/*
 * No step's runs hold it: the nearest step's span wins. Step 0 [0, 100)
 * offset 0, step 1 [100, 200) offset 10, runs [10, 50) and [150, 190).
 * Guest 105: step 0 gives 105, 105 - 100 + 1 = 6 past its span; step 1
 * gives 95, 100 - 95 = 5 before it: step 1's 95.
 */
static const struct hand_step nearest[] = {
	{ 0, 100, 0, 10, 50 },
	{ 100, 200, 10, 150, 190 },
};

static bool outside_nearest(void)
{
	struct vcpu *v = vcpu_with(nearest, ARRAY_SIZE(nearest));

	return converts(v, 0, 105, 95, 0, true, false);
}

/*
 * Of two steps equally near, the earlier: with step 1's offset 11, guest
 * 105 is step 1's 94, 6 before its span, as far as step 0's 105: host 105.
 */
static const struct hand_step tie[] = {
	{ 0, 100, 0, 10, 50 },
	{ 100, 200, 11, 150, 190 },
};

static bool outside_tie_earlier(void)
{
	struct vcpu *v = vcpu_with(tie, ARRAY_SIZE(tie));

	return converts(v, 0, 105, 105, 0, true, false);
}

/*
 * Steps that cannot place anything are passed over: step 0 has runs but
 * multiplier 0 (before the vCPU's creation), step 1 is an inactive L2
 * step. Guest 150 (offset 0) goes to step 2's run [100, 200); guest 20,
 * in no run, is placed with step 2 too, 100 - 20 before it, the cursor
 * left at 0.
 */
static const struct hand_step unusable_steps[] = {
	{ 0, 50, 0, 10, 40 },
	{ 50, 100, 0, 60, 90 },
	{ 100, 300, 0, 100, 200 },
};

static bool unusable_passed_over(void)
{
	struct vcpu *v = vcpu_with(unusable_steps, ARRAY_SIZE(unusable_steps));

	steps[0].mult = 0;
	steps[1].active = false;
	return converts(v, 0, 150, 150, 2, false, false) &&
	       converts(v, 0, 20, 20, 0, true, false);
}

/*
 * VMX scaling through a step (test_scaling_intel): mult 1.5, offset
 * -10^12, run [3999999999999000, 4000000000001000): guest 5999 * 10^12 + 1
 * is host 4 * 10^15 + 1, inside.
 */
static bool scaled_step(void)
{
	static const struct hand_step intel[] = {
		{ 0, 5000000000000000ull, -1000000000000ull,
		  3999999999999000ull, 4000000000001000ull },
	};
	struct vcpu *v = vcpu_with(intel, ARRAY_SIZE(intel));

	steps[0].mult = 0x1800000000000ull;
	steps[0].frac = 48;
	return converts(v, 0, 5999000000000001ull, 4000000000000001ull, 0, false, false);
}

/*
 * No step can invert it: mult 0.75 at frac_bits 48 needs host 2^64 for
 * guest 3 * 2^62 (scaled_vmx_past_top): an error, not a placement.
 */
static bool no_step_inverts(void)
{
	struct vcpu *v = vcpu_with(one_run, ARRAY_SIZE(one_run));
	struct guest_cursor c = { .level = LEVEL_L1 };
	struct conversion out;

	steps[0].mult = 3ull << 46;
	steps[0].frac = 48;
	if (!convert_guest_ts(v, &c, 3ull << 62, &out))
		return true;
	printf("# placed at %" PRIu64 ", expected no step\n", out.host);
	return false;
}

/*
 * After conversion the merge checks the vCPU's state: an event is outside
 * when no step's runs held it, when the vCPU is not running, and when it
 * runs the other level (an L1 event while L2 runs).
 */
static bool outside_run_check(void)
{
	struct conversion c = { .no_step_run = false };
	struct vcpu v = { .running = true, .run_level = LEVEL_L1 };
	bool ok = !conversion_outside_run(&c, &v, LEVEL_L1);

	c.no_step_run = true;
	ok &= conversion_outside_run(&c, &v, LEVEL_L1);
	c.no_step_run = false;
	v.run_level = LEVEL_L2;
	ok &= conversion_outside_run(&c, &v, LEVEL_L1);
	v.running = false;
	v.run_level = LEVEL_L1;
	ok &= conversion_outside_run(&c, &v, LEVEL_L1);
	if (!ok)
		printf("# a case of the run check is wrong\n");
	return ok;
}

static const struct {
	bool (*run)(void);
	const char *what;
} tests[] = {
	{ unscaled_vmx, "tscmath: mult 1 << 48 is guest - offset mod 2^64, up to 2^64 - 1" },
	{ unscaled_svm, "tscmath: mult 1 << 32 with offset 2^63 wraps exactly" },
	{ unscaled_frac63, "tscmath: frac_bits 63 with mult 1 << 63 is unscaled" },
	{ scaled_vmx_128bit, "tscmath: frac_bits 48, mult 1.5, offset -10^12: exact with a 128-bit product" },
	{ scaled_vmx_top_tick, "tscmath: frac_bits 48, mult 0.75: the guest value of host 2^64 - 1 gives it back" },
	{ scaled_vmx_past_top, "tscmath: a guest value no tick below 2^64 reads has no host tick" },
	{ scaled_svm_slower_first_tick, "tscmath: frac_bits 32, slower guest: the first host tick reading the value" },
	{ scaled_svm_faster_skips, "tscmath: frac_bits 32, faster guest: a skipped value is the next value's tick" },
	{ no_inverse_bad_scale, "tscmath: multiplier 0 and frac_bits 64 convert nothing" },
	{ ns_exact, "tscmath: host ticks to ns in 128 bits, truncated" },
	{ step_each_side, "convert: an offset step: each side with its own step, the cursor follows" },
	{ cursor_never_back, "convert: the cursor never goes back: an earlier step's value is outside" },
	{ run_half_open, "convert: a run is [entry, exit): the exit's tick is outside" },
	{ write_tick_is_new, "convert: a TSC write's own tick belongs to the new values" },
	{ set_back_ambiguous, "convert: a value two steps' runs hold takes the first, ambiguous" },
	{ runs_choose_step, "convert: the first step whose runs hold the tick, not whose span does" },
	{ gap_in_span, "convert: a tick between two runs of a step is placed with it" },
	{ outside_nearest, "convert: held by no runs: the step whose span is nearest" },
	{ outside_tie_earlier, "convert: held by no runs, two steps as near: the earlier" },
	{ unusable_passed_over, "convert: steps with multiplier 0 or inactive are passed over" },
	{ scaled_step, "convert: a frac_bits 48 scaled step places exactly" },
	{ no_step_inverts, "convert: no step can invert the value: an error" },
	{ outside_run_check, "convert: outside when no runs held it, the vCPU is out or at the other level" },
};

static bool result(unsigned int nr, bool ok, const char *what)
{
	printf("%s %u - %s\n", ok ? "ok" : "not ok", nr, what);
	return ok;
}

int main(void)
{
	unsigned int i, failed = 0;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		failed += !result(i + 1, tests[i].run(), tests[i].what);
	printf("# Totals: pass:%zu fail:%u xfail:0 xpass:0 skip:0 error:0\n",
	       ARRAY_SIZE(tests) - failed, failed);
	return failed ? 1 : 0;
}
