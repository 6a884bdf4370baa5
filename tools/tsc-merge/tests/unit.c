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
 * the comment above its case, from guest = ((host * mult) >> frac) +
 * offset, so a test fails when the arithmetic or the rule changes.
 *
 * The TAP lines are this file's own, the C side's one TAP writer
 * (result() and main()); run-tests.sh numbers them on in its stream.
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

/* One guest value and the host tick it inverts to; @none: no such tick. */
struct inverse {
	uint64_t guest;
	uint64_t host;
	bool none;
};

#define TICK(g, h)	{ .guest = (g), .host = (h) }
#define NO_TICK(g)	{ .guest = (g), .none = true }

/* tsc_guest_to_host() with one (mult, frac, offset), on up to 5 values. */
struct inverse_case {
	const char *what;
	uint64_t mult;
	unsigned int frac;
	uint64_t offset;
	struct inverse values[5];
	size_t nr;
};

static const struct inverse_case inverse_cases[] = {
	/*
	 * mult == 1 << 48 is no scaling: host = guest - offset mod 2^64. Offset
	 * 10: guest 5 is 2^64 - 5 = 18446744073709551611, guest 2^64 - 1 is
	 * 2^64 - 11 = 18446744073709551605.
	 */
	{ "tscmath: mult 1 << 48 is guest - offset mod 2^64",
	  MULT_ONE_48, 48, 10,
	  { TICK(5, 18446744073709551611ull), TICK(UINT64_MAX, 18446744073709551605ull) }, 2 },
	/* The same at SVM's 32 bits: guest 2^64 - 1, offset 2^63 gives 2^63 - 1. */
	{ "tscmath: mult 1 << 32 with offset 2^63 wraps exactly",
	  MULT_ONE_32, 32, 1ull << 63, { TICK(UINT64_MAX, (1ull << 63) - 1) }, 1 },
	/* frac_bits 63, the most a multiplier can have: 1 << 63 is still 1.0. */
	{ "tscmath: frac_bits 63 with mult 1 << 63 is unscaled",
	  1ull << 63, 63, 0, { TICK(42, 42) }, 1 },
	/*
	 * VMX, mult 1.5 (0x1800000000000), offset -10^12 (run-tests.sh's
	 * test_scaling_intel): guest 5999 * 10^12 gives d = 6 * 10^15, and
	 * d * 2^48 / (1.5 * 2^48) = 4 * 10^15 exactly; one guest tick more is
	 * d = 6 * 10^15 + 1, 4 * 10^15 + 2/3, rounded up to 4 * 10^15 + 1.
	 * d << 48 is about 2^100: the product needs the 128 bits.
	 */
	{ "tscmath: frac_bits 48, mult 1.5, offset -10^12: exact with a 128-bit product",
	  0x1800000000000ull, 48, -1000000000000ull,
	  { TICK(5999000000000000ull, 4000000000000000ull),
	    TICK(5999000000000001ull, 4000000000000001ull) }, 2 },
	/*
	 * VMX, mult 0.75 (3 << 46), offset 0, the largest host tick: host
	 * 2^64 - 1 reads floor((2^64 - 1) * 3 / 4) = 3 * 2^62 - 1 =
	 * 13835058055282163711, and back: ceil((3 * 2^62 - 1) * 4 / 3) =
	 * ceil(2^64 - 4/3) = 2^64 - 1. One guest value more, 3 * 2^62, needs
	 * host 2^64: no 64-bit host tick reads it.
	 */
	{ "tscmath: frac_bits 48, mult 0.75: host 2^64 - 1 and back; the next value has no tick",
	  3ull << 46, 48, 0,
	  { TICK(13835058055282163711ull, UINT64_MAX), NO_TICK(3ull << 62) }, 2 },
	/*
	 * SVM, mult 0.75 (0xc0000000), offset 7 (test_scaling_amd): a guest
	 * slower than the host reads one value at several host ticks; the
	 * first is the one. Host 999 reads floor(749.25) + 7 = 756, 1000 reads
	 * 757, 1001 reads floor(750.75) + 7 = 757 too: guest 757 is host 1000.
	 * Guest 758: d = 751, ceil(751 * 4 / 3) = ceil(1001.33) = 1002, and
	 * 1002 reads 751 + 7. Guest 1207: d = 1200, 1600 exactly.
	 */
	{ "tscmath: frac_bits 32, slower guest: the first host tick reading the value",
	  0xc0000000, 32, 7, { TICK(757, 1000), TICK(758, 1002), TICK(1207, 1600) }, 3 },
	/*
	 * SVM, mult 1.5 (0x180000000), offset 0, the contract's example: host
	 * 100, 101, 102, 103 read 150, 151, 153, 154. The skipped 152 goes to
	 * the first tick reading more, 102 (ceil(152 * 2 / 3) = ceil(101.33)),
	 * as 153 does.
	 */
	{ "tscmath: frac_bits 32, faster guest: a skipped value is the next value's tick",
	  0x180000000ull, 32, 0,
	  { TICK(150, 100), TICK(151, 101), TICK(152, 102), TICK(153, 102), TICK(154, 103) }, 5 },
	/* A zero multiplier (a vCPU being created) inverts nothing. */
	{ "tscmath: multiplier 0 converts nothing", 0, 48, 0, { NO_TICK(100) }, 1 },
	/* Nor do frac_bits beyond 63, whatever the multiplier. */
	{ "tscmath: frac_bits 64 converts nothing", 1ull << 63, 64, 0, { NO_TICK(100) }, 1 },
};

static bool inverse_case_holds(const struct inverse_case *c)
{
	const struct inverse *in;
	uint64_t host = 0;
	bool ok = true;

	for (in = c->values; in < c->values + c->nr; in++) {
		if (tsc_guest_to_host(in->guest, c->mult, c->frac, c->offset, &host) == in->none) {
			printf("# guest %" PRIu64 ": %s\n", in->guest,
			       in->none ? "a host tick, expected none" : "no host tick");
			ok = false;
		} else if (!in->none) {
			ok &= expect_u64("host tick", host, in->host);
		}
	}
	return ok;
}

/*
 * One conversion from cursor step @from: the host tick, the step the
 * cursor is at after it, and whether it is outside or ambiguous.
 */
struct conv {
	size_t from;
	uint64_t guest;
	uint64_t host;
	size_t step;
	bool outside;
	bool ambiguous;
};

#define INSIDE(from, g, h, step)	{ (from), (g), (h), (step), false, false }
#define OUTSIDE(from, g, h, step)	{ (from), (g), (h), (step), true, false }
#define AMBIGUOUS(from, g, h, step)	{ (from), (g), (h), (step), false, true }

/* A vCPU's L1 step list, as scan.c leaves it, and conversions through it. */
struct convert_case {
	const char *what;
	struct tsc_step steps[3];
	size_t nr_steps;
	struct conv convs[3];
	size_t nr_convs;
};

/* An active unscaled step at frac_bits 32 over [@s, @e), runs [@first, @last). */
#define STEP(s, e, off, first, last) \
	{ .start = (s), .end = (e), .offset = (off), .mult = MULT_ONE_32, .frac = 32, \
	  .run_first = (first), .run_last = (last), .runs = 1, .active = true }

static const struct convert_case convert_cases[] = {
	/*
	 * test_offset_step's vCPU: offset -100 until the write at 310, 5000
	 * from it; runs [200, 300) and [400, 500). Guest 150 is host 250 in
	 * step 0; guest 5450 is host 450 in step 1, and the cursor moves there.
	 */
	{ "convert: an offset step: each side with its own step, the cursor follows",
	  { STEP(0, 310, -100ull, 200, 300), STEP(310, 600, 5000, 400, 500) }, 2,
	  { INSIDE(0, 150, 250, 0), INSIDE(0, 5450, 450, 1) }, 2 },
	/*
	 * The cursor never goes back: from step 1, guest 150 (step 0's)
	 * converts only with step 1, to 150 - 5000 mod 2^64 =
	 * 18446744073709546766, and is outside; the cursor stays at 1.
	 */
	{ "convert: the cursor never goes back: an earlier step's value is outside",
	  { STEP(0, 310, -100ull, 200, 300), STEP(310, 600, 5000, 400, 500) }, 2,
	  { OUTSIDE(1, 150, 18446744073709546766ull, 1) }, 1 },
	/*
	 * [entry, exit): one step, runs [200, 300). Guest 200 and 299 (offset
	 * 0) are inside; guest 300, the exit's tick, is not: placed at 300,
	 * outside.
	 */
	{ "convert: a run is [entry, exit): the exit's tick is outside",
	  { STEP(0, 1000, 0, 200, 300) }, 1,
	  { INSIDE(0, 200, 200, 0), INSIDE(0, 299, 299, 0), OUTSIDE(0, 300, 300, 0) }, 3 },
	/*
	 * The write's own tick belongs to the new values: offset 0 until the
	 * write at 310, 1000 from it, the vCPU entering at 310 and 600 (step
	 * 0's runs cut at 310, scan.c's push_step()). Guest 1310 is host 310
	 * with step 1, inside. Guest 310 is host 310 with step 0, past its span
	 * [0, 310): outside, at distance 310 - 310 + 1 = 1; step 1 would put
	 * it at 310 - 1000 mod 2^64, much further. It stays at 310, cursor 0.
	 */
	{ "convert: a TSC write's own tick belongs to the new values",
	  { STEP(0, 310, 0, 200, 310), STEP(310, 700, 1000, 310, 650) }, 2,
	  { INSIDE(0, 1310, 310, 1), OUTSIDE(0, 310, 310, 0) }, 2 },
	/*
	 * test_ambiguous: offset 0, then -150 at 310; runs [200, 300) and
	 * [400, 500). Guest 250 is host 250 in step 0 and host 400 in step 1,
	 * both in runs: the first is taken and the event is ambiguous.
	 */
	{ "convert: a value two steps' runs hold takes the first, ambiguous",
	  { STEP(0, 310, 0, 200, 300), STEP(310, 600, -150ull, 400, 500) }, 2,
	  { AMBIGUOUS(0, 250, 250, 0) }, 1 },
	/*
	 * The first step whose runs hold the tick wins, not the one whose span
	 * holds it: guest 60 is host 60 in step 0 (span [0, 100), runs
	 * [10, 50): not in them) and host 160 in step 1 (offset -100, runs
	 * [150, 190)).
	 */
	{ "convert: the first step whose runs hold the tick, not whose span does",
	  { STEP(0, 100, 0, 10, 50), STEP(100, 200, -100ull, 150, 190) }, 2,
	  { INSIDE(0, 60, 160, 1) }, 1 },
	/*
	 * The span of a step's runs covers the gaps between them: runs
	 * [100, 200) and [300, 400) make the span [100, 400), and guest 250 is
	 * placed there with the step (the merge marks it outside later,
	 * seeing no run).
	 */
	{ "convert: a tick between two runs of a step is placed with it",
	  { STEP(0, 500, 0, 100, 400) }, 1, { INSIDE(0, 250, 250, 0) }, 1 },
	/*
	 * No step's runs hold it: the nearest step's span wins. Step 0 [0, 100)
	 * offset 0, step 1 [100, 200) offset 10, runs [10, 50) and [150, 190).
	 * Guest 105: step 0 gives 105, 105 - 100 + 1 = 6 past its span; step 1
	 * gives 95, 100 - 95 = 5 before it: step 1's 95, the cursor left at 0.
	 */
	{ "convert: held by no runs: the step whose span is nearest",
	  { STEP(0, 100, 0, 10, 50), STEP(100, 200, 10, 150, 190) }, 2,
	  { OUTSIDE(0, 105, 95, 0) }, 1 },
	/*
	 * Of two steps equally near, the earlier: with step 1's offset 11,
	 * guest 105 is step 1's 94, 6 before its span, as far as step 0's
	 * 105: host 105.
	 */
	{ "convert: held by no runs, two steps as near: the earlier",
	  { STEP(0, 100, 0, 10, 50), STEP(100, 200, 11, 150, 190) }, 2,
	  { OUTSIDE(0, 105, 105, 0) }, 1 },
	/*
	 * Steps that cannot place anything are passed over: step 0 has runs
	 * but multiplier 0 (before the vCPU's creation), step 1 is an inactive
	 * L2 step (offset 5). Guest 150 goes to step 2's run [100, 200) (offset
	 * 0). Guest 70 would be host 65 in step 1's run [60, 90), and guest 20
	 * host 15, nearer step 1 than step 2: both are placed with step 2
	 * instead, at 70 and 20, outside, the cursor left at 0.
	 */
	{ "convert: steps with multiplier 0 or inactive are passed over",
	  { { .start = 0, .end = 50, .frac = 32, .run_first = 10, .run_last = 40,
	      .runs = 1, .active = true },
	    { .start = 50, .end = 100, .offset = 5, .mult = MULT_ONE_32, .frac = 32,
	      .run_first = 60, .run_last = 90, .runs = 1 },
	    STEP(100, 300, 0, 100, 200) }, 3,
	  { INSIDE(0, 150, 150, 2), OUTSIDE(0, 70, 70, 0), OUTSIDE(0, 20, 20, 0) }, 3 },
	/*
	 * VMX scaling through a step (test_scaling_intel): mult 1.5, offset
	 * -10^12, run [3999999999999000, 4000000000001000): guest
	 * 5999 * 10^12 + 1 is host 4 * 10^15 + 1, inside.
	 */
	{ "convert: a frac_bits 48 scaled step places exactly",
	  { { .start = 0, .end = 5000000000000000ull, .offset = -1000000000000ull,
	      .mult = 0x1800000000000ull, .frac = 48, .run_first = 3999999999999000ull,
	      .run_last = 4000000000001000ull, .runs = 1, .active = true } }, 1,
	  { INSIDE(0, 5999000000000001ull, 4000000000000001ull, 0) }, 1 },
};

/* Convert @cv through @v and compare all the answer says. */
static bool converts(struct vcpu *v, const struct conv *cv)
{
	struct guest_cursor c = { .level = LEVEL_L1, .step = cv->from };
	struct conversion out;

	if (!convert_guest_ts(v, &c, cv->guest, &out)) {
		printf("# guest %" PRIu64 ": no step converts it\n", cv->guest);
		return false;
	}
	return expect_u64("host tick", out.host, cv->host) &&
	       expect_u64("cursor step", c.step, cv->step) &&
	       expect_u64("outside every step's runs", out.no_step_run, cv->outside) &&
	       expect_u64("ambiguous", out.ambiguous, cv->ambiguous);
}

static bool convert_case_holds(const struct convert_case *cc)
{
	struct tsc_step steps[ARRAY_SIZE(cc->steps)];
	struct vcpu v = { 0 };
	bool ok = true;
	size_t i;

	/* convert.c reads the steps through a vCPU that is not const. */
	memcpy(steps, cc->steps, sizeof(steps));
	v.steps[LEVEL_L1].steps = steps;
	v.steps[LEVEL_L1].nr = cc->nr_steps;
	for (i = 0; i < cc->nr_convs; i++)
		ok &= converts(&v, &cc->convs[i]);
	return ok;
}

/*
 * Nanoseconds in 128 bits: 2^64 - 1 ticks at 1 GHz are 2^64 - 1 ns; at
 * 1 kHz they are (2^64 - 1) * 10^6 ns, above 2^64: high half 10^6 - 1,
 * low half 2^64 - 10^6; 3 ticks at 2 GHz are 1.5 ns, truncated to 1.
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
 * No step can invert it: mult 0.75 at frac_bits 48 needs host 2^64 for
 * guest 3 * 2^62 (as in inverse_cases): an error, not a placement.
 */
static bool no_step_inverts(void)
{
	struct tsc_step step = { .end = 1000, .mult = 3ull << 46, .frac = 48,
				 .run_first = 200, .run_last = 300, .runs = 1, .active = true };
	struct vcpu v = { .steps[LEVEL_L1] = { .steps = &step, .nr = 1 } };
	struct guest_cursor c = { .level = LEVEL_L1 };
	struct conversion out;

	if (!convert_guest_ts(&v, &c, 3ull << 62, &out))
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
	{ ns_exact, "tscmath: host ticks to ns in 128 bits, truncated" },
	{ no_step_inverts, "convert: no step can invert the value: an error" },
	{ outside_run_check, "convert: outside when no runs held it, the vCPU is out or at the other level" },
};

static unsigned int nr_results;

/* One TAP result line; false when it failed. */
static bool result(bool ok, const char *what)
{
	printf("%s %u - %s\n", ok ? "ok" : "not ok", ++nr_results, what);
	return ok;
}

int main(void)
{
	unsigned int failed = 0;
	size_t i;

	printf("TAP version 13\n1..%zu\n",
	       ARRAY_SIZE(inverse_cases) + ARRAY_SIZE(convert_cases) + ARRAY_SIZE(tests));
	for (i = 0; i < ARRAY_SIZE(inverse_cases); i++)
		failed += !result(inverse_case_holds(&inverse_cases[i]), inverse_cases[i].what);
	for (i = 0; i < ARRAY_SIZE(convert_cases); i++)
		failed += !result(convert_case_holds(&convert_cases[i]), convert_cases[i].what);
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		failed += !result(tests[i].run(), tests[i].what);
	printf("# Totals: pass:%u fail:%u xfail:0 xpass:0 skip:0 error:0\n",
	       nr_results - failed, failed);
	return failed ? 1 : 0;
}
