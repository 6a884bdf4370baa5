// SPDX-License-Identifier: GPL-2.0
/*
 * tsc.c: guest = ((host * mult) >> frac) + offset modulo 2^64, the product
 * in 128 bits, and its inverse rounded up, in integers only; and the
 * steps of a vCPU rebuilt from a host recording's TSC events, and those
 * events searched.
 */
#include <stdlib.h>

#include "tsc.h"

uint64_t tsc_guest_at(const struct tsc_step *s, uint64_t host)
{
	return (uint64_t)(((unsigned __int128)host * s->mult) >> s->frac) + s->offset;
}

bool tsc_host_of(const struct tsc_step *s, uint64_t guest, uint64_t *host)
{
	uint64_t d = guest - s->offset;
	unsigned __int128 h;

	if (!s->mult || s->frac > 63)
		return false;
	if (s->mult == 1ull << s->frac) {
		*host = d;
		return true;
	}
	h = (((unsigned __int128)d << s->frac) + s->mult - 1) / s->mult;
	if (h > UINT64_MAX)
		return false;
	*host = h;
	return true;
}

bool tsc_place(const struct tsc_steps *st, uint64_t guest, uint64_t *host)
{
	size_t i;

	for (i = st->n; i-- > 0;) {
		uint64_t limit = i + 1 < st->n ? st->step[i + 1].start : st->end + 1;
		uint64_t h;

		if (tsc_host_of(&st->step[i], guest, &h) && h >= st->step[i].start && h < limit) {
			*host = h;
			return true;
		}
	}
	return false;
}

const struct tsc_step *tsc_step_at(const struct tsc_steps *st, uint64_t host)
{
	size_t i;

	for (i = st->n; i-- > 0;)
		if (st->step[i].start <= host)
			return &st->step[i];
	return NULL;
}

static void push_step(struct tsc_steps *st, const struct tsc_step *s)
{
	st->step = grow(st->step, st->n, sizeof(*st->step));
	st->step[st->n++] = *s;
}

bool tsc_snapshot_mult(const struct snapshot_vcpu *snap, struct tsc_step *s)
{
	if (!snap->known)
		return false;
	s->mult = snap->scaling ? snap->ratio : 1;
	s->frac = snap->scaling ? snap->frac : 0;
	return true;
}

const struct tsc_event *tsc_find_event(const struct vcpu_facts *vc, enum tsc_kind kind, bool last)
{
	const struct tsc_event *found = NULL;
	size_t i;

	for (i = 0; i < vc->nr_tsc; i++) {
		if (vc->tsc[i].kind != kind)
			continue;
		found = &vc->tsc[i];
		if (!last)
			break;
	}
	return found;
}

const struct tsc_event *tsc_next_write(const struct vcpu_facts *vc, const struct tsc_steps *steps,
				       uint64_t value, uint64_t bound, size_t *i, uint64_t *past)
{
	while (*i < vc->nr_tsc) {
		const struct tsc_event *ev = &vc->tsc[(*i)++];
		const struct tsc_step *s = tsc_step_at(steps, ev->ts);

		if (ev->kind != TSC_OFFSET || !s || !s->mult)
			continue;
		*past = tsc_guest_at(s, ev->ts) - value;
		if (*past <= bound)
			return ev;
	}
	return NULL;
}

/* The values in force before the vCPU's first TSC event. */
static int first_values(const struct vcpu_facts *vc, const struct tsc_step *fallback,
			struct tsc_step *s, const char **why)
{
	const struct tsc_event *off = tsc_find_event(vc, TSC_OFFSET, false);
	const struct tsc_event *mul = tsc_find_event(vc, TSC_MULTIPLIER, false);

	*s = (struct tsc_step){ 0 };
	if (off)
		s->offset = off->prev;
	else if (vc->snapshot.known)
		s->offset = vc->snapshot.offset;
	else {
		*why = "neither a kvm_write_tsc_offset nor a kvm-tsc-snapshot line gives its offset";
		return -1;
	}
	if (mul) {
		s->mult = mul->prev;
		s->frac = mul->frac;
	} else if (!tsc_snapshot_mult(&vc->snapshot, s)) {
		s->mult = fallback->mult;
		s->frac = fallback->frac;
	}
	return 0;
}

int tsc_build_steps(const struct recording *r, unsigned int vcpu, const struct tsc_step *fallback,
		    struct tsc_steps *out, const char **why)
{
	const struct vcpu_facts *vc = &r->vcpu[vcpu];
	struct tsc_step s;
	size_t i;

	*out = (struct tsc_steps){ .end = r->last_ts };
	if (first_values(vc, fallback, &s, why))
		return -1;
	push_step(out, &s);
	for (i = 0; i < vc->nr_tsc; i++) {
		const struct tsc_event *ev = &vc->tsc[i];

		if (ev->kind == TSC_NESTED)
			continue;
		if (ev->kind == TSC_OFFSET) {
			s.offset = ev->next;
		} else {
			s.mult = ev->next;
			s.frac = ev->frac;
		}
		s.start = ev->ts;
		push_step(out, &s);
	}
	return 0;
}

void tsc_build_nested_steps(const struct recording *r, unsigned int vcpu, unsigned int frac,
			    struct tsc_steps *out)
{
	const struct vcpu_facts *vc = &r->vcpu[vcpu];
	size_t i;

	*out = (struct tsc_steps){ .end = r->last_ts };
	for (i = 0; i < vc->nr_tsc; i++) {
		const struct tsc_event *ev = &vc->tsc[i];
		struct tsc_step s = { .start = ev->ts, .frac = frac };

		if (ev->kind != TSC_NESTED)
			continue;
		if (ev->guest_mode) {
			s.offset = ev->next;
			s.mult = ev->mult;
		}
		push_step(out, &s);
	}
}
