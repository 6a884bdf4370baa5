// SPDX-License-Identifier: GPL-2.0
/*
 * convert.c: place one guest timestamp on the host clock, choosing the
 * step of the vCPU's step function that was in force when it was taken.
 *
 * Around a change the choice is not obvious: a step that set the TSC back
 * makes one guest value occur twice. A guest CPU's events come in the order
 * they happened, so the step never goes back: the right step is the first
 * one from the last used whose host run intervals hold the converted time.
 * When a later step would hold it too, nothing in the traces tells them
 * apart: the event is placed with the first and reported as ambiguous. (The
 * guest's own ring buffer does not show the TSC going back either: it
 * clamps a negative delta to 0.) Once the merge has followed the host up
 * to the event, conversion_outside_run() checks the exact run interval.
 */
#include "model/model.h"

static bool usable(const struct tsc_step *s)
{
	return s->active && s->mult;
}

/* How far @host lies from the span of @s; 0 inside it. */
static uint64_t distance(const struct tsc_step *s, uint64_t host)
{
	if (host < s->start)
		return s->start - host;
	return host >= s->end ? host - s->end + 1 : 0;
}

/* Converted with step @i, does the time fall inside its runs? */
static bool fits_runs(const struct tsc_step *s, uint64_t guest, uint64_t *host)
{
	return usable(s) && s->runs &&
	       tsc_guest_to_host(guest, s->mult, s->frac, s->offset, host) &&
	       *host >= s->run_first && *host < s->run_last;
}

/*
 * No step holds the time in one of its runs: the event lies outside every
 * run of its vCPU. Place it with the step whose span it is nearest to, and
 * leave the cursor alone; the merge counts it as outside.
 */
static bool convert_outside(const struct step_list *l, size_t from,
			    uint64_t guest, uint64_t *host)
{
	uint64_t h, best = UINT64_MAX;
	bool found = false;
	size_t i;

	for (i = from; i < l->nr; i++) {
		const struct tsc_step *s = &l->steps[i];

		if (!usable(s) || !tsc_guest_to_host(guest, s->mult, s->frac, s->offset, &h))
			continue;
		if (found && distance(s, h) >= best)
			continue;
		best = distance(s, h);
		*host = h;
		found = true;
	}
	return found;
}

/* The first step from @from whose runs hold @guest; @l->nr: none does. */
static size_t first_fit(const struct step_list *l, size_t from, uint64_t guest,
			uint64_t *host)
{
	while (from < l->nr && !fits_runs(&l->steps[from], guest, host))
		from++;
	return from;
}

bool convert_guest_ts(struct vcpu *v, struct guest_cursor *c, uint64_t guest,
		      struct conversion *out)
{
	const struct step_list *l = &v->steps[c->level];
	size_t i = first_fit(l, c->step, guest, &out->host);
	uint64_t h;

	out->ambiguous = false;
	out->no_step_run = i == l->nr;
	if (out->no_step_run)
		return convert_outside(l, c->step, guest, &out->host);
	c->step = i;
	out->ambiguous = first_fit(l, i + 1, guest, &h) < l->nr;
	return true;
}

/*
 * Would a step of @c's level, from the cursor on, hold @guest in its runs?
 * For a guest event outside every run of the level it was given at: a
 * trace recorded inside L2 but given without ,l2 fits L2's runs.
 */
bool convert_fits_runs(const struct vcpu *v, struct guest_cursor *c, uint64_t guest)
{
	const struct step_list *l = &v->steps[c->level];
	uint64_t h;
	size_t i = first_fit(l, c->step, guest, &h);

	if (i == l->nr)
		return false;
	c->step = i;
	return true;
}

/*
 * Is the guest event converted to @c outside every host run of its vCPU
 * @v? So it is when no step's runs hold its time, and when, as the merge
 * has followed the host up to that time, @v does not run the guest's
 * @level: a step's first and last run bound it, not the exits between.
 */
bool conversion_outside_run(const struct conversion *c, const struct vcpu *v,
			    enum tsc_level level)
{
	return c->no_step_run || !v->running || v->run_level != level;
}
