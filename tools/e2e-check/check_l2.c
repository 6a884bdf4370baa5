// SPDX-License-Identifier: GPL-2.0
/*
 * check_l2.c: mode nested: L2's markers (tsc_nested_payload's rdtsc
 * values in L1's trace) and its TSC jump, judged against L1's trace (its
 * KVM runs L2) and L0's (whose KVM sees L2's ucall exits first), and the
 * chain from L2's TSC through L1's to L0's against L0's own pair for L2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "report.h"

/* The levels an L2 marker is placed at: L1's trace, whose KVM runs L2, then L0's. */
enum level {
	IN_L1,
	IN_L0,
	NR_LEVELS,
};

/* An L2 marker at one level: paired with ucall exit k of vCPU v there, placed at host tick h. */
struct hop {
	bool placed;
	unsigned int v;
	size_t k;
	uint64_t h;
};

/* One L2 marker on its way down: L1's tick, then L0's. */
struct chain_marker {
	struct payload_marker m;
	struct hop hop[NR_LEVELS];
};

/* One level's trace, and the ucall exits and TSC steps there of each vCPU it runs. */
struct level_facts {
	const struct recording *r;
	struct port_exit *exits[MAX_VCPUS];
	size_t nr_exits[MAX_VCPUS];
	struct tsc_steps steps[MAX_VCPUS];
};

struct chain {
	struct chain_marker *cm;
	size_t n;
	struct level_facts lv[NR_LEVELS];
};

/* L1's TSC rate: the scenario's, else L0's own. */
static uint64_t calc_l1_khz(const struct ctx *c)
{
	return c->s->l1_tsc_khz ? c->s->l1_tsc_khz : c->l0->tsc_khz;
}

/* L2's multiplier, from the scenario, for an L1 trace that shows none. */
static struct tsc_step l2_fallback(const struct ctx *c)
{
	return make_fallback(c->s->l2_tsc_khz, calc_l1_khz(c), c->l1->isa);
}

/* The ucall port exits and the steps of @vcpus vCPUs in @r into @lv. */
static void read_level(const struct ctx *c, const struct recording *r, unsigned int vcpus,
		       const struct tsc_step *fallback, struct level_facts *lv)
{
	const char *why;
	unsigned int v;

	lv->r = r;
	for (v = 0; v < vcpus; v++) {
		lv->nr_exits[v] = recording_port_exits(r, v, c->s->ucall_port, &lv->exits[v]);
		if (tsc_build_steps(r, v, fallback, &lv->steps[v], &why))
			lv->steps[v] = (struct tsc_steps){ 0 };
	}
}

/* Each marker of L2 vCPU @cpu against its k-th ucall exit in L1's trace, placed on L1's TSC. */
static void place_in_l1(struct chain *ch, unsigned int cpu)
{
	const struct level_facts *lv = &ch->lv[IN_L1];
	size_t i, k = 0;

	for (i = 0; i < ch->n; i++) {
		struct chain_marker *cm = &ch->cm[i];
		struct hop *hop = &cm->hop[IN_L1];

		if (cm->m.cpu != cpu)
			continue;
		hop->v = cpu;
		hop->k = k++;
		if (hop->k >= lv->nr_exits[cpu] || !tsc_place(&lv->steps[cpu], cm->m.tsc, &hop->h))
			continue;
		hop->placed = true;
		cm->hop[IN_L0].v = lv->exits[cpu][hop->k].rec_cpu;
	}
}

static int by_l1_tick(const void *a, const void *b)
{
	const struct hop *x = &(*(struct chain_marker *const *)a)->hop[IN_L1];
	const struct hop *y = &(*(struct chain_marker *const *)b)->hop[IN_L1];

	return x->h < y->h ? -1 : x->h > y->h;
}

/* The markers L1's vCPU @w ran, in L1's time order, against its ucall exits in L0's trace. */
static void place_in_l0(struct chain *ch, unsigned int w)
{
	struct chain_marker **ran = calloc(ch->n + 1, sizeof(*ran));
	const struct level_facts *lv = &ch->lv[IN_L0];
	size_t i, n = 0;

	if (!ran)
		report_bail("out of memory");
	for (i = 0; i < ch->n; i++)
		if (ch->cm[i].hop[IN_L1].placed && ch->cm[i].hop[IN_L0].v == w)
			ran[n++] = &ch->cm[i];
	qsort(ran, n, sizeof(*ran), by_l1_tick);
	for (i = 0; i < n && i < lv->nr_exits[w]; i++) {
		struct hop *hop = &ran[i]->hop[IN_L0];

		hop->k = i;
		hop->placed = tsc_place(&lv->steps[w], ran[i]->hop[IN_L1].h, &hop->h);
	}
	free(ran);
}

static void build_chain(const struct ctx *c, struct chain *ch)
{
	struct tsc_step f1 = l1_fallback(c), f2 = l2_fallback(c);
	unsigned int v;
	size_t i;

	memset(ch, 0, sizeof(*ch));
	ch->n = c->l1->nr_payload_markers;
	ch->cm = calloc(ch->n + 1, sizeof(*ch->cm));
	if (!ch->cm)
		report_bail("out of memory");
	for (i = 0; i < ch->n; i++)
		ch->cm[i].m = c->l1->payload_markers[i];
	read_level(c, c->l1, c->s->l2_vcpus, &f2, &ch->lv[IN_L1]);
	read_level(c, c->l0, c->s->l1_vcpus, &f1, &ch->lv[IN_L0]);
	for (v = 0; v < c->s->l2_vcpus; v++)
		place_in_l1(ch, v);
	for (v = 0; v < c->s->l1_vcpus; v++)
		place_in_l0(ch, v);
}

static void free_chain(struct chain *ch)
{
	unsigned int l, v;

	for (l = 0; l < NR_LEVELS; l++) {
		for (v = 0; v < MAX_VCPUS; v++) {
			free(ch->lv[l].exits[v]);
			free(ch->lv[l].steps[v].step);
		}
	}
	free(ch->cm);
}

void check_l2_markers(const struct ctx *c)
{
	const struct scenario *s = c->s;
	const struct recording *r = c->l1;
	uint64_t count[MAX_VCPUS] = { 0 }, last_tsc[MAX_VCPUS] = { 0 };
	unsigned int shown = 0, v;
	char what[WHAT], text[MARKER_TEXT];
	bool ok = true;
	size_t i;

	if (!start_check(what, r, NULL, "%s has %llu 'ktt-n-marker' lines per vCPU of L2 (%llu), seq 0 to %llu in order, each tsc above the one before",
			 r->name, (unsigned long long)s->l2_markers, (unsigned long long)s->l2_vcpus,
			 (unsigned long long)s->l2_markers - 1))
		return;
	for (i = 0; i < r->nr_payload_markers; i++) {
		const struct payload_marker *m = &r->payload_markers[i];
		bool good = m->cpu < s->l2_vcpus && m->seq == count[m->cpu] &&
			    (!m->seq || m->tsc > last_tsc[m->cpu]);

		if (!good && shown++ < MAX_SHOWN) {
			payload_marker_text(text, sizeof(text), m);
			report_msg("'%s': not the next marker of an L2 vCPU", text);
		}
		ok &= good;
		if (m->cpu < s->l2_vcpus) {
			count[m->cpu]++;
			last_tsc[m->cpu] = m->tsc;
		}
	}
	for (v = 0; v < s->l2_vcpus; v++) {
		report_msg("%s: %llu markers of L2's vcpu %u", r->name, (unsigned long long)count[v], v);
		ok &= count[v] == s->l2_markers;
	}
	report_result(ok, "%s", what);
}

void check_l2_exits_in_l0(const struct ctx *c)
{
	const struct scenario *s = c->s;
	uint64_t expected = s->l2_vcpus * s->l2_markers, total;
	char what[WHAT];
	bool ok;

	if (!start_check(what, c->l0, NULL, "%s has one kvm_exit for the ucall port 0x%llx per L2 marker on L1's vCPUs (%llu in all)",
			 c->l0->name, (unsigned long long)s->ucall_port, (unsigned long long)expected))
		return;
	ok = judge_port_exits(c->l0, s->ucall_port, s->l1_vcpus, ANY_COUNT, ", a vCPU L1 has not",
			      &total);
	report_result(ok && total == expected, "%s", what);
}

void check_l2_exits_in_l1(const struct ctx *c)
{
	const struct scenario *s = c->s;
	char what[WHAT];
	bool ok;

	if (!start_check(what, c->l1, NULL, "%s has one kvm_exit for the ucall port 0x%llx per L2 marker on each L2 vCPU (%llu each)",
			 c->l1->name, (unsigned long long)s->ucall_port, (unsigned long long)s->l2_markers))
		return;
	ok = judge_port_exits(c->l1, s->ucall_port, s->l2_vcpus, s->l2_markers, "", NULL);
	report_result(ok, "%s", what);
}

void check_l2_multiplier(const struct ctx *c)
{
	const struct scenario *s = c->s;
	uint64_t l1_khz = calc_l1_khz(c), expected;
	char what[WHAT];
	unsigned int v;
	bool ok = true;

	if (!start_check(what, c->l1, s->l2_tsc_khz ? c->l0 : NULL, "%s has each L2 vCPU's TSC multiplier for %s",
			 c->l1->name, s->l2_tsc_khz ? "L2's rate: 2^frac_bits * l2_tsc_khz / L1's kHz, rounded down" :
					 "L1's own rate: 1 << frac_bits"))
		return;
	for (v = 0; v < s->l2_vcpus; v++) {
		const struct tsc_event *last = tsc_find_event(&c->l1->vcpu[v], TSC_MULTIPLIER, true);

		if (!last) {
			report_msg("vcpu %u: no kvm_write_tsc_multiplier", v);
			ok = false;
			continue;
		}
		expected = ratio_for(s->l2_tsc_khz, l1_khz, last->frac);
		report_msg("vcpu %u: multiplier %llu >> %u; expected %llu", v,
			   (unsigned long long)last->next, last->frac,
			   (unsigned long long)expected);
		ok &= last->next == expected;
	}
	report_result(ok, "%s", what);
}

void check_l2_nested_offsets(const struct ctx *c)
{
	const struct scenario *s = c->s;
	uint64_t expected = s->l2_vcpus * s->l2_markers, n = 0;
	char what[WHAT];
	unsigned int v;
	size_t i;

	if (!start_check(what, c->l0, NULL, "%s has kvm_nested_tsc_offset into guest mode on L1's vCPUs, at least once per L2 marker (%llu)",
			 c->l0->name, (unsigned long long)expected))
		return;
	for (v = 0; v < s->l1_vcpus; v++) {
		const struct vcpu_facts *vc = &c->l0->vcpu[v];

		for (i = 0; i < vc->nr_tsc; i++)
			n += vc->tsc[i].kind == TSC_NESTED && vc->tsc[i].guest_mode;
	}
	report_msg("%s: %llu kvm_nested_tsc_offset with guest_mode=1", c->l0->name,
		   (unsigned long long)n);
	report_result(n >= expected, "%s", what);
}

/* The jump's value against the markers: from at or past the tsc before it, below the one after. */
static bool judge_jump_value(const struct ctx *c, const struct payload_jump *j)
{
	uint64_t before = 0, after = UINT64_MAX;
	size_t i;

	for (i = 0; i < c->l1->nr_payload_markers; i++) {
		const struct payload_marker *m = &c->l1->payload_markers[i];

		if (m->cpu != j->cpu)
			continue;
		if (m->ts < j->ts)
			before = m->tsc;
		else if (after == UINT64_MAX)
			after = m->tsc;
	}
	report_msg("vcpu %u: IA32_TSC %llu -> %llu; the markers around it read %llu and %llu", j->cpu,
		   (unsigned long long)j->from, (unsigned long long)j->to,
		   (unsigned long long)before, (unsigned long long)after);
	return j->to == j->from + c->s->l2_tsc_jump && j->from >= before && after >= j->to;
}

/* The kvm_write_tsc_offset in L1's trace that moved L2 vCPU @cpu's TSC to the jump's value. */
static bool judge_jump_offset(const struct ctx *c, const struct payload_jump *j,
			      const struct tsc_step *fallback)
{
	const struct tsc_event *ev;
	const struct tsc_step *at;
	struct tsc_steps steps;
	unsigned int n = 0;
	uint64_t bound, d;
	size_t i = 0;

	if (!build_steps(c->l1, j->cpu, fallback, &steps))
		return false;
	at = tsc_step_at(&steps, j->ts);
	bound = at ? tsc_guest_at(at, j->ts) - j->to : 0;
	while ((ev = tsc_next_write(&c->l1->vcpu[j->cpu], &steps, j->to, bound, &i, &d))) {
		report_msg("vcpu %u: kvm_write_tsc_offset at %llu, next=%llu: L2's TSC there %llu ticks past the value (at most %llu, its 'ktt-n-jump' line)",
			   j->cpu, (unsigned long long)ev->ts, (unsigned long long)ev->next,
			   (unsigned long long)d, (unsigned long long)bound);
		n++;
	}
	free(steps.step);
	return n == 1;
}

/* L2 vCPU @v's one 'ktt-n-jump' line: its value, and the kvm_write_tsc_offset that made it. */
static bool judge_jump(const struct ctx *c, unsigned int v, const struct tsc_step *fallback)
{
	const struct payload_jump *j = &c->l1->payload_jump[v];

	if (c->l1->nr_payload_jumps[v] == 1)
		return judge_jump_value(c, j) && judge_jump_offset(c, j, fallback);
	report_msg("vcpu %u: not one 'ktt-n-jump' line", v);
	return false;
}

void check_l2_tsc_write(const struct ctx *c)
{
	struct tsc_step fallback = l2_fallback(c);
	char what[WHAT];
	unsigned int v;
	bool ok = true;

	if (!start_check(what, c->l1, NULL, "%s has each L2 vCPU's TSC jump, 'ktt-n-jump' to = from + %llu between the markers around it, as one kvm_write_tsc_offset putting L2's TSC 0 to B ticks past 'to' (B: to the 'ktt-n-jump' line)",
			 c->l1->name, (unsigned long long)c->s->l2_tsc_jump))
		return;
	for (v = 0; v < c->s->l2_vcpus; v++)
		ok &= judge_jump(c, v, &fallback);
	report_result(ok, "%s", what);
}

/*
 * Each L2 marker at level @l right before its own ucall exit there, as
 * judge_placement says; @unplaced says what a marker not placed there
 * lacks. The result says @what.
 */
static void judge_level(const struct ctx *c, const char *what, enum level l, const char *unplaced)
{
	unsigned int shown = 0;
	char text[MARKER_TEXT];
	struct gap gap = { 0 };
	struct chain ch;
	bool ok = true;
	size_t i;

	build_chain(c, &ch);
	for (i = 0; i < ch.n; i++) {
		const struct hop *hop = &ch.cm[i].hop[l];
		const struct level_facts *lv = &ch.lv[l];

		payload_marker_text(text, sizeof(text), &ch.cm[i].m);
		if (!hop->placed) {
			if (shown++ < MAX_SHOWN)
				report_msg("'%s': %s", text, unplaced);
			ok = false;
			continue;
		}
		ok &= judge_placement(text, hop->h, lv->exits[hop->v], hop->k, &lv->r->vcpu[hop->v],
				      &gap, &shown);
	}
	report_msg("%u of %zu markers right before their ucall exit in %s, at most %llu ticks before it",
		   gap.n, ch.n, ch.lv[l].r->name, (unsigned long long)gap.max);
	free_chain(&ch);
	report_result(ok && ch.n, "%s", what);
}

void check_l2_placement(const struct ctx *c)
{
	char what[WHAT];

	if (!start_check(what, c->l1, c->l0, "every L2 marker's tsc, placed on L1's TSC by %s's offsets and multipliers, is right before its own ucall exit there: inside a run of its vCPU, after the vCPU's (k-1)-th ucall exit and at or before its k-th",
			 c->l1->name))
		return;
	judge_level(c, what, IN_L1, "no ucall exit of its own, or no TSC step places it");
}

void check_l2_chain(const struct ctx *c)
{
	char what[WHAT], unplaced[128];

	if (!start_check(what, c->l1, c->l0, "every L2 marker's tsc, placed on L1's TSC by %s and then on L0's by %s, is right before its own ucall exit in %s: inside a run of L1's vCPU, after its (k-1)-th ucall exit and at or before its k-th",
			 c->l1->name, c->l0->name, c->l0->name))
		return;
	snprintf(unplaced, sizeof(unplaced), "not placed in %s, or no ucall exit of its own there",
		 c->l0->name);
	judge_level(c, what, IN_L0, unplaced);
}

/*
 * Documentation/contract.md, "A nested guest's value the long way": the
 * two conversions differ by less than 1 + 1/r1 + 1/r + h * 2^-f / r host
 * ticks (r1 = m1 / 2^f, r = m / 2^f), and not at all unscaled.
 */
static double chain_bound(const struct tsc_step *l1, const struct tsc_step *l2, uint64_t h)
{
	double one = ldexp(1.0, l2->frac);

	if (l1->mult == 1ull << l1->frac && l2->mult == 1ull << l2->frac)
		return 0;
	return 1 + one / l1->mult + one / l2->mult + (double)h / l2->mult;
}

/*
 * The fraction bits of L2's pair: those of L1's multiplier, else KVM's for
 * the vendor (VMX 48, SVM 32) when the trace shows none.
 */
static unsigned int l1_frac(const struct ctx *c, const struct tsc_steps *l1)
{
	if (l1->n && l1->step[l1->n - 1].frac)
		return l1->step[l1->n - 1].frac;
	return pick_frac_bits(c->l0->isa);
}

/*
 * Marker @cm's direct conversion, by L0's pair for L2 at its ucall exit,
 * against its tick in L0's trace the long way; that tick and the bound
 * kept for stage 2, which judges kvm-tsc-merge's direct conversion by them.
 */
static bool judge_direct(const struct ctx *c, const struct chain *ch, const struct chain_marker *cm,
			 const struct tsc_steps *nested, double *worst, unsigned int *shown)
{
	const struct level_facts *lv = &ch->lv[IN_L0];
	const struct hop *hop = &cm->hop[IN_L0];
	uint64_t exit = lv->exits[hop->v][hop->k].ts, direct;
	const struct tsc_step *l1 = tsc_step_at(&lv->steps[hop->v], exit);
	const struct tsc_step *l2 = tsc_step_at(nested, exit);
	char text[MARKER_TEXT];
	double diff, bound;

	payload_marker_text(text, sizeof(text), &cm->m);
	if (!l1 || !l2 || !tsc_host_of(l2, cm->m.tsc, &direct)) {
		if ((*shown)++ < MAX_SHOWN)
			report_msg("'%s': no kvm_nested_tsc_offset into guest mode before its ucall exit",
				   text);
		return false;
	}
	diff = fabs((double)(int64_t)(direct - hop->h));
	*worst = diff > *worst ? diff : *worst;
	bound = chain_bound(l1, l2, direct);
	place_marker(c, text, cm->m.cpu, hop->h, floor(bound), lv->exits[hop->v], hop->k);
	if (diff <= bound)
		return true;
	if ((*shown)++ < MAX_SHOWN)
		report_msg("'%s': %llu the long way, %llu by kvm_nested_tsc_offset", text,
			   (unsigned long long)hop->h, (unsigned long long)direct);
	return false;
}

void check_l2_direct(const struct ctx *c)
{
	struct tsc_steps nested[MAX_VCPUS] = { { 0 } };
	unsigned int shown = 0, v;
	double worst = 0;
	struct chain ch;
	char what[WHAT];
	bool ok = true;
	size_t i;

	if (!start_check(what, c->l1, c->l0, "%s's kvm_nested_tsc_offset pair gives every L2 marker the host tick of the long way through %s: the same unscaled, within Documentation/contract.md's bound scaled",
			 c->l0->name, c->l1->name))
		return;
	build_chain(c, &ch);
	for (v = 0; v < c->s->l1_vcpus; v++)
		tsc_build_nested_steps(c->l0, v, l1_frac(c, &ch.lv[IN_L0].steps[v]), &nested[v]);
	for (i = 0; i < ch.n; i++) {
		const struct chain_marker *cm = &ch.cm[i];

		if (!cm->hop[IN_L0].placed) {
			ok = false;
			continue;
		}
		ok &= judge_direct(c, &ch, cm, &nested[cm->hop[IN_L0].v], &worst, &shown);
	}
	report_msg("%zu markers, the largest difference %.0f ticks", ch.n, worst);
	for (v = 0; v < c->s->l1_vcpus; v++)
		free(nested[v].step);
	free_chain(&ch);
	report_result(ok && ch.n, "%s", what);
}
