// SPDX-License-Identifier: GPL-2.0
/*
 * convert.c: place one guest timestamp on the host clock, choosing the
 * step of the vCPU's step function that was in force when it was taken.
 *
 * Around a change the choice is not obvious: a step that set the TSC back
 * makes one guest value occur twice. A guest CPU's events come in the order
 * they happened, so the step never goes back, and the right step is the
 * first one from the last used whose host run intervals hold the converted
 * time. The merge then checks the exact interval.
 */
#include "tsc-merge.h"

static bool usable(const struct tsc_step *s)
{
	return s->active && s->mult;
}

static uint64_t step_end(const struct step_list *l, size_t i)
{
	return i + 1 < l->nr ? l->steps[i + 1].start : UINT64_MAX;
}

/*
 * No step holds the time in one of its runs: the event lies outside every
 * run of its vCPU. Place it with the step whose span holds it, or failing
 * that the first usable one, and leave the cursor alone; the merge counts
 * it as outside.
 */
static bool convert_outside(const struct step_list *l, size_t from,
			    uint64_t guest, uint64_t *host)
{
	bool found = false;
	uint64_t h;
	size_t i;

	for (i = from; i < l->nr; i++) {
		const struct tsc_step *s = &l->steps[i];

		if (!usable(s) || !tsc_guest_to_host(guest, s->mult, s->frac, s->offset, &h))
			continue;
		if (h >= s->start && h < step_end(l, i)) {
			*host = h;
			return true;
		}
		if (!found)
			*host = h;
		found = true;
	}
	return found;
}

bool convert_guest_ts(struct vcpu *v, enum tsc_level level, uint64_t guest,
		      uint64_t *host)
{
	const struct step_list *l = &v->steps[level];
	uint64_t h;
	size_t i;

	for (i = v->cursor[level]; i < l->nr; i++) {
		const struct tsc_step *s = &l->steps[i];

		if (!usable(s) || !s->runs ||
		    !tsc_guest_to_host(guest, s->mult, s->frac, s->offset, &h))
			continue;
		if (h >= s->run_first && h <= s->run_last) {
			v->cursor[level] = i;
			*host = h;
			return true;
		}
	}
	return convert_outside(l, v->cursor[level], guest, host);
}
