// SPDX-License-Identifier: GPL-2.0
/*
 * check.c: the check every mode starts with, that its recordings were
 * read, and the helpers the checks share, stage 1's record of where it
 * placed each marker among them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "report.h"

void check_read(const struct ctx *c)
{
	const struct recording *r[] = { c->l0, c->l1 };
	bool ok = true;
	int i;

	for (i = 0; i < 2; i++) {
		if (!r[i]->error[0]) {
			report_msg("%s: %llu events", r[i]->name, (unsigned long long)r[i]->nr_events);
			continue;
		}
		report_msg("%s: %s", r[i]->path, r[i]->error);
		ok = false;
	}
	report_result(ok, "libtracecmd reads %s (L0's trace) and %s (L1's), their clock the TSC",
		      c->l0->name, c->l1->name);
}

/* False, with a failed result naming the file and why, when @r could not be read. */
static bool usable(const struct recording *r, const char *what)
{
	if (!r->error[0])
		return true;
	report_result(false, "%s (%s: %s)", what, r->name, r->error);
	return false;
}

bool start_check(char *what, const struct recording *first, const struct recording *second,
		 const char *fmt, ...)
{
	FORMAT_ARGS(what, WHAT, fmt);
	return usable(first, what) && (!second || usable(second, what));
}

uint64_t ratio_for(uint64_t khz, uint64_t host_khz, unsigned int frac)
{
	if (!khz)
		return 1ull << frac;
	return ((unsigned __int128)khz << frac) / host_khz;
}

unsigned int pick_frac_bits(unsigned int isa)
{
	return isa == ISA_VMX ? 48 : 32;
}

struct tsc_step make_fallback(uint64_t khz, uint64_t host_khz, unsigned int isa)
{
	struct tsc_step s = { .mult = 1 };

	if (!khz)
		return s;
	s.frac = pick_frac_bits(isa);
	s.mult = host_khz ? ratio_for(khz, host_khz, s.frac) : 0;
	return s;
}

struct tsc_step l1_fallback(const struct ctx *c)
{
	return make_fallback(c->s->l1_tsc_khz, c->l0->tsc_khz, c->l0->isa);
}

bool build_steps(const struct recording *r, unsigned int v, const struct tsc_step *fallback,
		 struct tsc_steps *steps)
{
	const char *why;

	if (!tsc_build_steps(r, v, fallback, steps, &why))
		return true;
	report_msg("vcpu %u: %s", v, why);
	return false;
}

/* Where host tick *@key is against run @elem: before it, in it, or after it. */
static int cmp_run(const void *key, const void *elem)
{
	const uint64_t h = *(const uint64_t *)key;
	const struct run *r = elem;

	return h < r->entry ? -1 : h >= r->exit;
}

/* Whether @h is in [entry, exit) of one of @vc's runs, which are in time order and apart. */
static bool in_run(const struct vcpu_facts *vc, uint64_t h)
{
	return vc->nr_runs && bsearch(&h, vc->runs, vc->nr_runs, sizeof(*vc->runs), cmp_run);
}

/* Whether the (@k-1)-th exit < @h <= the @k-th. */
static bool between_exits(uint64_t h, const struct port_exit *exits, size_t k)
{
	return (!k || h > exits[k - 1].ts) && h <= exits[k].ts;
}

bool judge_placement(const char *text, uint64_t h, const struct port_exit *exits, size_t k,
		     const struct vcpu_facts *vc, struct gap *g, unsigned int *shown)
{
	bool between = between_exits(h, exits, k), inside = in_run(vc, h);

	if (between && inside) {
		g->max = exits[k].ts - h > g->max ? exits[k].ts - h : g->max;
		g->n++;
		return true;
	}
	if ((*shown)++ < MAX_SHOWN)
		report_msg("'%s' at host tick %llu: %s%s (its port exit at %llu, the one before at %llu)",
			   text, (unsigned long long)h, between ? "" : "not right before its port exit",
			   inside ? "" : (between ? "outside every run of its vCPU" :
					  ", outside every run of its vCPU"),
			   (unsigned long long)exits[k].ts,
			   (unsigned long long)(k ? exits[k - 1].ts : 0));
	return false;
}

bool judge_port_exits(const struct recording *r, uint64_t port, uint64_t vcpus, uint64_t each,
		      const char *foreign, uint64_t *total)
{
	struct port_exit *exits;
	uint64_t sum = 0;
	unsigned int v;
	bool ok = true;
	size_t n;

	for (v = 0; v < MAX_VCPUS; v++) {
		n = recording_port_exits(r, v, port, &exits);
		free(exits);
		if (!n && (v >= vcpus || each == ANY_COUNT))
			continue;
		report_msg("%s: %zu kvm_exit of vcpu %u for port 0x%llx%s", r->name, n, v,
			   (unsigned long long)port, v >= vcpus ? foreign : "");
		ok &= v < vcpus && (each == ANY_COUNT || n == each);
		sum += n;
	}
	if (total)
		*total = sum;
	return ok;
}

const char *join_path(char *buf, const char *dir, const char *name)
{
	if (snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		report_bail("%s/%s: too long a path", dir, name);
	return buf;
}

const char *work_path(const struct ctx *c, const char *name, char *buf)
{
	return join_path(buf, c->t->work, name);
}

void place_marker(const struct ctx *c, const char *text, unsigned int cpu, uint64_t host,
		  uint64_t slack, const struct port_exit *exits, size_t k)
{
	struct placements *p = &c->found->placed;
	struct placed_marker *m;

	p->m = grow(p->m, p->n, sizeof(*p->m));
	m = &p->m[p->n++];
	*m = (struct placed_marker){ .cpu = cpu, .host = host, .slack = slack, .exit = exits[k],
				     .has_prev = k > 0 };
	snprintf(m->text, sizeof(m->text), "%s", text);
	if (k)
		m->prev = exits[k - 1];
}
