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

/* One L2 marker on its way down: L1's tick, then L0's, and its ucall exits. */
struct chain_marker {
	struct payload_marker m;
	/* Paired with its ucall exit k1 of its vCPU in L1's trace and placed at h1. */
	bool in_l1;
	uint64_t h1;
	size_t k1;
	/* L1's vCPU that ran it, its ucall exit k0 of that vCPU in L0's trace, h0 there. */
	unsigned int w;
	bool in_l0;
	uint64_t h0;
	size_t k0;
};

struct chain {
	struct chain_marker *cm;
	size_t n;
	/* Per L2 vCPU in L1's trace, per L1 vCPU in L0's. */
	struct port_exit *l1_exits[MAX_VCPUS];
	size_t nr_l1_exits[MAX_VCPUS];
	struct tsc_steps l1_steps[MAX_VCPUS];
	struct port_exit *l0_exits[MAX_VCPUS];
	size_t nr_l0_exits[MAX_VCPUS];
	struct tsc_steps l0_steps[MAX_VCPUS];
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

/* The ucall port exits of every vCPU in @r, and its steps, into @exits, @nr and @steps. */
static void read_vcpus(const struct ctx *c, const struct recording *r, unsigned int vcpus,
		       const struct tsc_step *fallback, struct port_exit **exits, size_t *nr,
		       struct tsc_steps *steps)
{
	const char *why;
	unsigned int v;

	for (v = 0; v < vcpus; v++) {
		nr[v] = recording_port_exits(r, v, c->s->ucall_port, &exits[v]);
		if (tsc_build_steps(r, v, fallback, &steps[v], &why))
			steps[v] = (struct tsc_steps){ 0 };
	}
}

/* Each marker of L2 vCPU @cpu against its k-th ucall exit in L1's trace, placed on L1's TSC. */
static void place_in_l1(struct chain *ch, unsigned int cpu)
{
	size_t i, k = 0;

	for (i = 0; i < ch->n; i++) {
		struct chain_marker *cm = &ch->cm[i];

		if (cm->m.cpu != cpu)
			continue;
		cm->k1 = k++;
		if (cm->k1 >= ch->nr_l1_exits[cpu] ||
		    !tsc_place(&ch->l1_steps[cpu], cm->m.tsc, &cm->h1))
			continue;
		cm->in_l1 = true;
		cm->w = ch->l1_exits[cpu][cm->k1].rec_cpu;
	}
}

static int by_h1(const void *a, const void *b)
{
	const struct chain_marker *x = *(struct chain_marker *const *)a;
	const struct chain_marker *y = *(struct chain_marker *const *)b;

	return x->h1 < y->h1 ? -1 : x->h1 > y->h1;
}

/* The markers L1's vCPU @w ran, in L1's time order, against its ucall exits in L0's trace. */
static void place_in_l0(struct chain *ch, unsigned int w)
{
	struct chain_marker **ran = calloc(ch->n + 1, sizeof(*ran));
	size_t i, n = 0;

	if (!ran)
		report_bail("out of memory");
	for (i = 0; i < ch->n; i++)
		if (ch->cm[i].in_l1 && ch->cm[i].w == w)
			ran[n++] = &ch->cm[i];
	qsort(ran, n, sizeof(*ran), by_h1);
	for (i = 0; i < n && i < ch->nr_l0_exits[w]; i++) {
		ran[i]->k0 = i;
		ran[i]->in_l0 = tsc_place(&ch->l0_steps[w], ran[i]->h1, &ran[i]->h0);
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
	read_vcpus(c, c->l1, c->s->l2_vcpus, &f2, ch->l1_exits, ch->nr_l1_exits, ch->l1_steps);
	read_vcpus(c, c->l0, c->s->l1_vcpus, &f1, ch->l0_exits, ch->nr_l0_exits, ch->l0_steps);
	for (v = 0; v < c->s->l2_vcpus; v++)
		place_in_l1(ch, v);
	for (v = 0; v < c->s->l1_vcpus; v++)
		place_in_l0(ch, v);
}

static void free_chain(struct chain *ch)
{
	unsigned int v;

	for (v = 0; v < MAX_VCPUS; v++) {
		free(ch->l1_exits[v]);
		free(ch->l1_steps[v].step);
		free(ch->l0_exits[v]);
		free(ch->l0_steps[v].step);
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

	snprintf(what, sizeof(what),
		 "%s has %llu 'ktt-n-marker' lines per vCPU of L2 (%llu), seq 0 to %llu in order, each tsc above the one before",
		 r->name, (unsigned long long)s->l2_markers, (unsigned long long)s->l2_vcpus,
		 (unsigned long long)s->l2_markers - 1);
	if (!usable(r, what))
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

	snprintf(what, sizeof(what),
		 "%s has one kvm_exit for the ucall port 0x%llx per L2 marker on L1's vCPUs (%llu in all)",
		 c->l0->name, (unsigned long long)s->ucall_port, (unsigned long long)expected);
	if (!usable(c->l0, what))
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

	snprintf(what, sizeof(what),
		 "%s has one kvm_exit for the ucall port 0x%llx per L2 marker on each L2 vCPU (%llu each)",
		 c->l1->name, (unsigned long long)s->ucall_port, (unsigned long long)s->l2_markers);
	if (!usable(c->l1, what))
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
	size_t i;

	snprintf(what, sizeof(what), "%s has each L2 vCPU's TSC multiplier for %s",
		 c->l1->name, s->l2_tsc_khz ? "L2's rate: 2^frac_bits * l2_tsc_khz / L1's kHz, rounded down" :
					      "L1's own rate: 1 << frac_bits");
	if (!usable(c->l1, what) || (s->l2_tsc_khz && !usable(c->l0, what)))
		return;
	for (v = 0; v < s->l2_vcpus; v++) {
		const struct vcpu_facts *vc = &c->l1->vcpu[v];
		const struct tsc_event *last = NULL;

		for (i = 0; i < vc->nr_tsc; i++)
			if (vc->tsc[i].kind == TSC_MULTIPLIER)
				last = &vc->tsc[i];
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

	snprintf(what, sizeof(what),
		 "%s has kvm_nested_tsc_offset into guest mode on L1's vCPUs, at least once per L2 marker (%llu)",
		 c->l0->name, (unsigned long long)expected);
	if (!usable(c->l0, what))
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

/* L2 vCPU @cpu's one 'ktt-n-jump' line; NULL unless one. */
static const struct payload_jump *jump_of(const struct recording *r, unsigned int cpu)
{
	const struct payload_jump *j = NULL;
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < r->nr_payload_jumps; i++) {
		if (r->payload_jumps[i].cpu != cpu)
			continue;
		j = &r->payload_jumps[i];
		n++;
	}
	return n == 1 ? j : NULL;
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
	const struct vcpu_facts *vc = &c->l1->vcpu[j->cpu];
	const struct tsc_step *at;
	struct tsc_steps steps;
	unsigned int n = 0;
	uint64_t bound, d;
	const char *why;
	size_t i;

	if (tsc_build_steps(c->l1, j->cpu, fallback, &steps, &why)) {
		report_msg("vcpu %u: %s", j->cpu, why);
		return false;
	}
	at = tsc_step_at(&steps, j->ts);
	bound = at ? tsc_guest_at(at, j->ts) - j->to : 0;
	for (i = 0; i < vc->nr_tsc; i++) {
		const struct tsc_event *ev = &vc->tsc[i];

		at = tsc_step_at(&steps, ev->ts);
		if (ev->kind != TSC_OFFSET || !at || !at->mult)
			continue;
		d = tsc_guest_at(at, ev->ts) - j->to;
		if (d > bound)
			continue;
		report_msg("vcpu %u: kvm_write_tsc_offset at %llu, next=%llu: L2's TSC there %llu ticks past the value (at most %llu, its 'ktt-n-jump' line)",
			   j->cpu, (unsigned long long)ev->ts, (unsigned long long)ev->next,
			   (unsigned long long)d, (unsigned long long)bound);
		n++;
	}
	free(steps.step);
	return n == 1;
}

void check_l2_tsc_write(const struct ctx *c)
{
	struct tsc_step fallback = l2_fallback(c);
	const struct payload_jump *j;
	char what[WHAT];
	unsigned int v;
	bool ok = true;

	snprintf(what, sizeof(what),
		 "%s has each L2 vCPU's TSC jump, 'ktt-n-jump' to = from + %llu between the markers around it, as one kvm_write_tsc_offset putting L2's TSC 0 to B ticks past 'to' (B: to the 'ktt-n-jump' line)",
		 c->l1->name, (unsigned long long)c->s->l2_tsc_jump);
	if (!usable(c->l1, what))
		return;
	for (v = 0; v < c->s->l2_vcpus; v++) {
		j = jump_of(c->l1, v);
		if (!j) {
			report_msg("vcpu %u: not one 'ktt-n-jump' line", v);
			ok = false;
			continue;
		}
		ok &= judge_jump_value(c, j) && judge_jump_offset(c, j, &fallback);
	}
	report_result(ok, "%s", what);
}

void check_l2_placement(const struct ctx *c)
{
	unsigned int shown = 0;
	struct gap gap = { 0 };
	struct chain ch;
	char what[WHAT], text[MARKER_TEXT];
	bool ok = true;
	size_t i;

	snprintf(what, sizeof(what),
		 "every L2 marker's tsc, placed on L1's TSC by %s's offsets and multipliers, is right before its own ucall exit there: inside a run of its vCPU, after the vCPU's (k-1)-th ucall exit and at or before its k-th",
		 c->l1->name);
	if (!usable(c->l1, what) || !usable(c->l0, what))
		return;
	build_chain(c, &ch);
	for (i = 0; i < ch.n; i++) {
		const struct chain_marker *cm = &ch.cm[i];

		payload_marker_text(text, sizeof(text), &cm->m);
		if (!cm->in_l1) {
			if (shown++ < MAX_SHOWN)
				report_msg("'%s': no ucall exit of its own, or no TSC step places it", text);
			ok = false;
			continue;
		}
		ok &= judge_placement(text, cm->h1, ch.l1_exits[cm->m.cpu], cm->k1,
				      &c->l1->vcpu[cm->m.cpu], &gap, &shown);
	}
	report_msg("%u of %zu markers right before their ucall exit in %s, at most %llu ticks before it",
		   gap.n, ch.n, c->l1->name, (unsigned long long)gap.max);
	free_chain(&ch);
	report_result(ok && ch.n, "%s", what);
}

void check_l2_chain(const struct ctx *c)
{
	unsigned int shown = 0;
	struct gap gap = { 0 };
	struct chain ch;
	char what[WHAT], text[MARKER_TEXT];
	bool ok = true;
	size_t i;

	snprintf(what, sizeof(what),
		 "every L2 marker's tsc, placed on L1's TSC by %s and then on L0's by %s, is right before its own ucall exit in %s: inside a run of L1's vCPU, after its (k-1)-th ucall exit and at or before its k-th",
		 c->l1->name, c->l0->name, c->l0->name);
	if (!usable(c->l1, what) || !usable(c->l0, what))
		return;
	build_chain(c, &ch);
	for (i = 0; i < ch.n; i++) {
		const struct chain_marker *cm = &ch.cm[i];

		payload_marker_text(text, sizeof(text), &cm->m);
		if (!cm->in_l0) {
			if (shown++ < MAX_SHOWN)
				report_msg("'%s': not placed in %s, or no ucall exit of its own there",
					   text, c->l0->name);
			ok = false;
			continue;
		}
		ok &= judge_placement(text, cm->h0, ch.l0_exits[cm->w], cm->k0, &c->l0->vcpu[cm->w],
				      &gap, &shown);
	}
	report_msg("%u of %zu markers right before their ucall exit in %s, at most %llu ticks before it",
		   gap.n, ch.n, c->l0->name, (unsigned long long)gap.max);
	free_chain(&ch);
	report_result(ok && ch.n, "%s", what);
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
 * against h0; h0 and the bound kept for stage 2, which judges
 * kvm-tsc-merge's direct conversion by them.
 */
static bool judge_direct(const struct ctx *c, const struct chain *ch, const struct chain_marker *cm,
			 const struct tsc_steps *nested, double *worst, unsigned int *shown)
{
	uint64_t exit = ch->l0_exits[cm->w][cm->k0].ts, direct;
	const struct tsc_step *l1 = tsc_step_at(&ch->l0_steps[cm->w], exit);
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
	diff = fabs((double)(int64_t)(direct - cm->h0));
	*worst = diff > *worst ? diff : *worst;
	bound = chain_bound(l1, l2, direct);
	place_marker(c, text, cm->m.cpu, cm->h0, floor(bound), ch->l0_exits[cm->w], cm->k0);
	if (diff <= bound)
		return true;
	if ((*shown)++ < MAX_SHOWN)
		report_msg("'%s': %llu the long way, %llu by kvm_nested_tsc_offset", text,
			   (unsigned long long)cm->h0, (unsigned long long)direct);
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

	snprintf(what, sizeof(what),
		 "%s's kvm_nested_tsc_offset pair gives every L2 marker the host tick of the long way through %s: the same unscaled, within Documentation/contract.md's bound scaled",
		 c->l0->name, c->l1->name);
	if (!usable(c->l1, what) || !usable(c->l0, what))
		return;
	build_chain(c, &ch);
	for (v = 0; v < c->s->l1_vcpus; v++)
		tsc_build_nested_steps(c->l0, v, l1_frac(c, &ch.l0_steps[v]), &nested[v]);
	for (i = 0; i < ch.n; i++) {
		const struct chain_marker *cm = &ch.cm[i];

		if (!cm->in_l0) {
			ok = false;
			continue;
		}
		ok &= judge_direct(c, &ch, cm, &nested[cm->w], &worst, &shown);
	}
	report_msg("%zu markers, the largest difference %.0f ticks", ch.n, worst);
	for (v = 0; v < c->s->l1_vcpus; v++)
		free(nested[v].step);
	free_chain(&ch);
	report_result(ok && ch.n, "%s", what);
}
