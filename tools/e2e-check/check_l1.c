// SPDX-License-Identifier: GPL-2.0
/*
 * check_l1.c: modes own, agent and late: L1's markers and its TSC write
 * in L1's own trace, judged against L0's trace: one marker port exit per
 * marker, each marker right before its own, the kvm_write_tsc_offset of
 * the write and L1's TSC multiplier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "report.h"

/* The markers of guest CPU @cpu, in time order, into *@out (freed by the caller). */
static size_t markers_of(const struct recording *r, unsigned int cpu, struct marker **out)
{
	size_t i, n = 0;

	*out = NULL;
	for (i = 0; i < r->nr_markers; i++) {
		if (r->markers[i].cpu != cpu)
			continue;
		*out = grow(*out, n, sizeof(**out));
		(*out)[n++] = r->markers[i];
	}
	return n;
}

/* Whether @m is one the scenario has, recorded once, on its own CPU; @seen marks it. */
static bool judge_marker(const struct scenario *s, const struct marker *m, bool *seen,
			 unsigned int *shown)
{
	const char *problem = NULL;
	char text[MARKER_TEXT];
	size_t i;

	marker_text(text, sizeof(text), m);
	if (m->cpu >= s->l1_vcpus || !m->seq || m->seq > s->l1_markers) {
		problem = "not in the scenario";
	} else {
		i = (m->cpu * 2 + m->phase) * s->l1_markers + m->seq - 1;
		if (seen[i])
			problem = "recorded twice";
		else if (m->rec_cpu != (int)m->cpu)
			problem = "recorded on another CPU";
		seen[i] = true;
	}
	if (problem && (*shown)++ < MAX_SHOWN)
		report_msg("'%s' on CPU %d: %s", text, m->rec_cpu, problem);
	return !problem;
}

/* The diagnostic for a missing marker: @seq of @phase of guest CPU @cpu. */
static void report_missing(unsigned int cpu, enum phase phase, unsigned int seq)
{
	const struct marker m = { .cpu = cpu, .seq = seq, .phase = phase };
	char text[MARKER_TEXT];

	marker_text(text, sizeof(text), &m);
	report_msg("no '%s'", text);
}

void check_l1_markers(const struct ctx *c)
{
	const struct scenario *s = c->s;
	unsigned int shown = 0, cpu, phase, seq;
	bool ok = true, *seen;
	char what[WHAT];
	size_t i;

	if (!start_check(what, c->l1, NULL, "%s has %llu 'ktt-marker before' and %llu 'after' markers on each of its %llu vCPUs, each (cpu, phase, seq) once, on its own CPU",
			 c->l1->name, (unsigned long long)s->l1_markers, (unsigned long long)s->l1_markers,
			 (unsigned long long)s->l1_vcpus))
		return;
	seen = calloc(s->l1_vcpus * 2 * s->l1_markers + 1, sizeof(*seen));
	if (!seen)
		report_bail("out of memory");
	for (i = 0; i < c->l1->nr_markers; i++)
		ok &= judge_marker(s, &c->l1->markers[i], seen, &shown);
	for (cpu = 0; cpu < s->l1_vcpus; cpu++)
		for (phase = 0; phase < 2; phase++)
			for (seq = 1; seq <= s->l1_markers; seq++) {
				if (seen[(cpu * 2 + phase) * s->l1_markers + seq - 1])
					continue;
				ok = false;
				if (shown++ < MAX_SHOWN)
					report_missing(cpu, phase, seq);
			}
	free(seen);
	report_msg("%s: %zu markers in all", c->l1->name, c->l1->nr_markers);
	report_result(ok, "%s", what);
}

void check_l1_port_exits(const struct ctx *c)
{
	const struct scenario *s = c->s;
	uint64_t expected = 2 * s->l1_markers;
	char what[WHAT];
	bool ok;

	if (!start_check(what, c->l0, NULL, "%s has one kvm_exit for the marker port 0x%llx per marker on each vCPU (%llu each)",
			 c->l0->name, (unsigned long long)s->marker_port, (unsigned long long)expected))
		return;
	ok = judge_port_exits(c->l0, s->marker_port, s->l1_vcpus, expected,
			      ", a vCPU the scenario has not", NULL);
	report_result(ok, "%s", what);
}

/* The k-th marker of vCPU @v against its k-th marker port exit, for every k. */
static bool place_vcpu_markers(const struct ctx *c, unsigned int v, const struct tsc_step *fallback,
			       struct gap *gaps, unsigned int *shown)
{
	struct port_exit *exits;
	struct tsc_steps steps;
	struct marker *m;
	size_t nm, ne, k;
	char text[MARKER_TEXT];
	bool ok = true;
	uint64_t h;

	if (!build_steps(c->l0, v, fallback, &steps))
		return false;
	nm = markers_of(c->l1, v, &m);
	ne = recording_port_exits(c->l0, v, c->s->marker_port, &exits);
	if (nm != ne) {
		report_msg("vcpu %u: %zu markers and %zu marker port exits", v, nm, ne);
		ok = false;
	}
	for (k = 0; k < nm && k < ne; k++) {
		marker_text(text, sizeof(text), &m[k]);
		if (!tsc_place(&steps, m[k].ts, &h)) {
			if ((*shown)++ < MAX_SHOWN)
				report_msg("'%s': no TSC step of vcpu %u in %s places its %llu", text, v,
					   c->l0->name, (unsigned long long)m[k].ts);
			ok = false;
			continue;
		}
		place_marker(c, text, v, h, 0, exits, k);
		ok &= judge_placement(text, h, exits, k, &c->l0->vcpu[v], &gaps[m[k].phase], shown);
	}
	free(m);
	free(exits);
	free(steps.step);
	return ok;
}

void check_l1_placement(const struct ctx *c)
{
	struct gap gaps[2] = { { 0 } };
	struct tsc_step fallback;
	unsigned int shown = 0, v, p;
	char what[WHAT];
	bool ok = true;

	if (!start_check(what, c->l0, c->l1, "every marker of %s is right before its own port exit in %s: the k-th of a vCPU, placed on L0's TSC by %s's offsets and multipliers, is inside a run of that vCPU, after its (k-1)-th marker port exit and at or before its k-th",
			 c->l1->name, c->l0->name, c->l0->name))
		return;
	fallback = l1_fallback(c);
	if (!c->s->l1_tsc_khz)
		report_msg("L1 at L0's rate: unscaled where %s shows no multiplier", c->l0->name);
	else
		report_msg("where %s shows no multiplier: %llu >> %u, for %llu kHz on L0's %llu kHz (%s)",
			   c->l0->name, (unsigned long long)fallback.mult, fallback.frac,
			   (unsigned long long)c->s->l1_tsc_khz, (unsigned long long)c->l0->tsc_khz,
			   c->l0->tsc_khz_from ? c->l0->tsc_khz_from : "unknown: not placed");
	for (v = 0; v < c->s->l1_vcpus; v++)
		ok &= place_vcpu_markers(c, v, &fallback, gaps, &shown);
	for (p = 0; p < 2; p++)
		report_msg("%s markers: %u right before their port exit, at most %llu ticks before it",
			   phase_name(p), gaps[p].n, (unsigned long long)gaps[p].max);
	report_result(ok, "%s", what);
}

/* False, with check @what skipped, unless L1's kernel has msr:write_msr (@use: what for). */
static bool has_write_msr(const struct ctx *c, const char *what, const char *use)
{
	if (c->l1->has_write_msr)
		return true;
	report_skip("%s: L1's kernel has no msr:write_msr event%s", what, use);
	return false;
}

/* The one IA32_TSC write recorded on CPU @cpu; NULL, with a diagnostic, unless one. */
static const struct msr_write *write_on(const struct recording *r, unsigned int cpu)
{
	unsigned int n = r->nr_msr_writes[cpu];

	if (n == 1 && !r->msr_write[cpu].failed)
		return &r->msr_write[cpu];
	report_msg("cpu %u: %u IA32_TSC writes%s", cpu, n, n == 1 ? ", which failed (#GP)" : "");
	return NULL;
}

/* The value every vCPU's write wrote, each write into @w; false unless one. */
static bool read_written_value(const struct ctx *c, const struct msr_write **w, uint64_t *value)
{
	unsigned int cpu;
	bool ok = true;

	for (cpu = 0; cpu < c->s->l1_vcpus; cpu++) {
		w[cpu] = write_on(c->l1, cpu);
		if (!w[cpu])
			ok = false;
		else if (w[cpu]->value != w[0]->value)
			report_msg("cpu %u wrote %llu, cpu 0 %llu", cpu,
				   (unsigned long long)w[cpu]->value,
				   (unsigned long long)w[0]->value);
		ok &= w[cpu] && w[cpu]->value == w[0]->value;
	}
	if (ok)
		*value = w[0]->value;
	return ok;
}

static uint64_t last_before_marker(const struct recording *r)
{
	uint64_t last = 0;
	size_t i;

	for (i = 0; i < r->nr_markers; i++)
		if (r->markers[i].phase == PHASE_BEFORE && r->markers[i].ts > last)
			last = r->markers[i].ts;
	return last;
}

void check_l1_tsc_write(const struct ctx *c)
{
	const struct msr_write *w[MAX_VCPUS];
	uint64_t value, read, last;
	unsigned int cpu;
	char what[WHAT];
	bool ok;

	if (!start_check(what, c->l1, NULL, "%s has each vCPU's IA32_TSC write (msr:write_msr 0x10), all of one value: CPU 0's TSC after the 'before' markers plus %llu",
			 c->l1->name, (unsigned long long)c->s->l1_tsc_jump) ||
	    !has_write_msr(c, what, ""))
		return;
	ok = read_written_value(c, w, &value);
	if (!ok) {
		report_result(false, "%s", what);
		return;
	}
	read = value - c->s->l1_tsc_jump;
	last = last_before_marker(c->l1);
	report_msg("value %llu: CPU 0's TSC read at %llu, %lld ticks after the last 'before' marker",
		   (unsigned long long)value, (unsigned long long)read, (long long)(read - last));
	ok = (int64_t)(read - last) > 0;
	for (cpu = 0; cpu < c->s->l1_vcpus; cpu++) {
		report_msg("cpu %u: its write_msr event %lld ticks after the value, on the new count",
			   cpu, (long long)(w[cpu]->ts - value));
		ok &= (int64_t)(w[cpu]->ts - value) >= 0;
	}
	report_result(ok, "%s", what);
}

/*
 * The kvm_write_tsc_offset of vCPU @v whose next offset puts L1's TSC at
 * the event 0 to @bound ticks past @value; NULL unless exactly one.
 */
static const struct tsc_event *find_write(const struct recording *r, unsigned int v,
					  const struct tsc_steps *steps, uint64_t value,
					  uint64_t bound)
{
	const struct tsc_event *ev, *found = NULL;
	unsigned int n = 0;
	uint64_t past;
	size_t i = 0;

	while ((ev = tsc_next_write(&r->vcpu[v], steps, value, bound, &i, &past))) {
		found = ev;
		n++;
	}
	return n == 1 ? found : NULL;
}

/* vCPU @v's write in @steps: the guest's TSC there by the next offset, and by the previous. */
static bool judge_offset(const struct ctx *c, unsigned int v, const struct tsc_steps *steps,
			 uint64_t value, uint64_t bound)
{
	const struct tsc_event *ev = find_write(c->l0, v, steps, value, bound);
	struct tsc_step before;
	uint64_t now, then;

	if (!ev) {
		report_msg("vcpu %u: not one kvm_write_tsc_offset puts L1's TSC 0 to %llu ticks past %llu",
			   v, (unsigned long long)bound, (unsigned long long)value);
		return false;
	}
	before = *tsc_step_at(steps, ev->ts);
	now = tsc_guest_at(&before, ev->ts);
	before.offset = ev->prev;
	then = tsc_guest_at(&before, ev->ts);
	report_msg("vcpu %u: kvm_write_tsc_offset at %llu, prev=%llu next=%llu: L1's TSC there %llu ticks past the value (at most %llu); by the previous offset %lld past the value less the jump",
		   v, (unsigned long long)ev->ts, (unsigned long long)ev->prev,
		   (unsigned long long)ev->next, (unsigned long long)(now - value),
		   (unsigned long long)bound,
		   (long long)(then - (value - c->s->l1_tsc_jump)));
	if (v || (int64_t)(then - (value - c->s->l1_tsc_jump)) >= 0)
		return true;
	report_msg("vcpu 0's TSC before the write, %llu, is below the value less %llu",
		   (unsigned long long)then, (unsigned long long)c->s->l1_tsc_jump);
	return false;
}

void check_l1_tsc_offset(const struct ctx *c)
{
	const struct msr_write *w[MAX_VCPUS];
	struct tsc_step fallback;
	struct tsc_steps steps;
	uint64_t value;
	char what[WHAT];
	unsigned int v;
	bool ok = true;

	if (!start_check(what, c->l0, c->l1, "%s has each vCPU's kvm_write_tsc_offset for that write: L1's TSC at the event 0 to B ticks past the value (B: to the vCPU's write_msr event), and vCPU 0's, by the previous offset, at or past the value less %llu",
			 c->l0->name, (unsigned long long)c->s->l1_tsc_jump) ||
	    !has_write_msr(c, what, " to name the value"))
		return;
	if (!read_written_value(c, w, &value)) {
		report_result(false, "%s (no one value written in %s)", what, c->l1->name);
		return;
	}
	fallback = l1_fallback(c);
	for (v = 0; v < c->s->l1_vcpus; v++) {
		if (!build_steps(c->l0, v, &fallback, &steps)) {
			ok = false;
			continue;
		}
		if ((int64_t)(w[v]->ts - value) < 0) {
			report_msg("vcpu %u: its write_msr event is before the value", v);
			ok = false;
		} else {
			ok &= judge_offset(c, v, &steps, value, w[v]->ts - value);
		}
		free(steps.step);
	}
	report_result(ok, "%s", what);
}

/*
 * vCPU @v's multiplier: its last kvm_write_tsc_multiplier, else the
 * snapshot's, else 1.0 where a snapshot says KVM has no TSC scaling.
 */
static const char *read_multiplier(const struct recording *r, unsigned int v, uint64_t *mult,
				   unsigned int *frac)
{
	const struct vcpu_facts *vc = &r->vcpu[v];
	const struct tsc_event *last = tsc_find_event(vc, TSC_MULTIPLIER, true);
	struct tsc_step s;

	if (last) {
		*mult = last->next;
		*frac = last->frac;
		return "its last kvm_write_tsc_multiplier";
	}
	if (!tsc_snapshot_mult(&vc->snapshot, &s)) {
		if (!r->no_tsc_scaling)
			return NULL;
		*mult = 1;
		*frac = 0;
		return "a kvm-tsc-snapshot end line's tsc_scaling=0: KVM has no TSC scaling";
	}
	*mult = s.mult;
	*frac = s.frac;
	return vc->snapshot.scaling ? "its kvm-tsc-snapshot line" :
				      "its kvm-tsc-snapshot line, without a ratio: KVM has no TSC scaling";
}

void check_l1_multiplier(const struct ctx *c)
{
	const struct scenario *s = c->s;
	unsigned int v, frac, found = 0;
	uint64_t mult, expected;
	char what[WHAT], rate[128];
	const char *from;
	bool ok = true;

	if (s->l1_tsc_khz)
		snprintf(rate, sizeof(rate),
			 "L1's %llu kHz on L0's rate: 2^frac_bits * %llu / L0's kHz, rounded down",
			 (unsigned long long)s->l1_tsc_khz, (unsigned long long)s->l1_tsc_khz);
	else
		snprintf(rate, sizeof(rate), "L0's own rate: 1 << frac_bits");
	if (!start_check(what, c->l0, NULL, "%s has each vCPU's TSC multiplier for %s",
			 c->l0->name, rate))
		return;
	if (s->l1_tsc_khz && !c->l0->tsc_khz) {
		report_result(false, "%s (%s tells no TSC rate of L0's)", what, c->l0->name);
		return;
	}
	if (s->l1_tsc_khz)
		report_msg("L0's rate: %llu kHz, from %s", (unsigned long long)c->l0->tsc_khz,
			   c->l0->tsc_khz_from);
	for (v = 0; v < s->l1_vcpus; v++) {
		from = read_multiplier(c->l0, v, &mult, &frac);
		if (!from)
			continue;
		found++;
		expected = ratio_for(s->l1_tsc_khz, c->l0->tsc_khz, frac);
		report_msg("vcpu %u: multiplier %llu >> %u, from %s; expected %llu", v,
			   (unsigned long long)mult, frac, from, (unsigned long long)expected);
		ok &= mult == expected;
	}
	if (found < s->l1_vcpus)
		report_msg("%s shows the multiplier of %u of L1's %llu vCPUs", c->l0->name, found,
			   (unsigned long long)s->l1_vcpus);
	report_result(ok && found == s->l1_vcpus, "%s", what);
}
