// SPDX-License-Identifier: GPL-2.0
/*
 * summary.c: what the merge found, per VM and vCPU: the offsets and
 * multipliers in force with the host time and event that set them, run
 * and event counts, and the guest events outside every host run interval.
 */
#include "merge/merge.h"

static void print_step(FILE *out, const struct tsc_step *s)
{
	if (!s->active) {
		fprintf(out, "      from %20llu  back in L1 (%s)\n",
			(unsigned long long)s->start, s->cause);
		return;
	}
	fprintf(out, "      from %20llu  offset %#18llx (%lld)  multiplier %#llx frac %u  runs %llu  (%s)\n",
		(unsigned long long)s->start, (unsigned long long)s->offset,
		(long long)s->offset, (unsigned long long)s->mult, s->frac,
		(unsigned long long)s->runs, s->cause);
}

/* What trace-cmd's own time sync of the guest file would have made of it. */
static void print_shift_error(FILE *out, const struct vcpu *v, unsigned long tsc_khz)
{
	if (!v->shift_events)
		return;
	fprintf(out, "    trace-cmd's time sync (TIME_SHIFT) puts its %llu guest events up to %llu host TSC ticks",
		(unsigned long long)v->shift_events, (unsigned long long)v->shift_max_error);
	if (tsc_khz)
		fprintf(out, " (%llu ns)", (unsigned long long)((unsigned __int128)v->shift_max_error *
								1000000 / tsc_khz));
	fprintf(out, " from their exact host time%s\n",
		v->shift_max_error ? "; --sync-out writes the exact steps in its place" : "");
}

static void print_vcpu(FILE *out, const struct vcpu *v, unsigned long tsc_khz)
{
	static const char *const level_names[NR_LEVELS] = { "L1", "L2" };
	size_t i;
	int l;

	fprintf(out, "  vCPU %u, host thread %d: %llu runs, %llu guest events, %llu outside host run intervals, %llu ambiguous\n",
		v->id, v->tid, (unsigned long long)v->entries,
		(unsigned long long)v->guest_events, (unsigned long long)v->outside,
		(unsigned long long)v->ambiguous);
	print_shift_error(out, v, tsc_khz);
	for (l = 0; l < NR_LEVELS; l++) {
		if (!v->steps[l].nr)
			continue;
		fprintf(out, "    %s steps (host TSC from which each applies):\n", level_names[l]);
		for (i = 0; i < v->steps[l].nr; i++)
			print_step(out, &v->steps[l].steps[i]);
	}
}

static void print_vm(FILE *out, const struct vm *vm, unsigned long tsc_khz)
{
	unsigned int i;
	int l;

	fprintf(out, "VM @%d.%u (%s), %u vCPUs ran", vm->pid, vm->gen, vm->comm,
		vm_count_running_vcpus(vm));
	for (l = 0; l < NR_LEVELS; l++)
		if (vm->guest[l])
			fprintf(out, "; %s guest '%s' from %s", l == LEVEL_L1 ? "its" : "L2",
				vm->guest[l]->name, vm->guest[l]->file.path);
	fputc('\n', out);
	for (i = 0; i < vm->nr_vcpus; i++)
		print_vcpu(out, vm->vcpus[i], tsc_khz);
}

void summary_print(FILE *out, const struct trace_file *host,
		   struct vm_table *vms, const struct guest *guests,
		   int nr_guests, const struct merge_stats *stats, unsigned long tsc_khz)
{
	unsigned int i;
	int g;

	fprintf(out, "host %s: %llu events, %u VMs\n", host->path,
		(unsigned long long)stats->host_events, vm_table_count(vms));
	for (i = 0; i < vm_table_count(vms); i++)
		print_vm(out, vm_table_get(vms, i), tsc_khz);
	for (g = 0; g < nr_guests; g++)
		fprintf(out, "guest '%s' %s: %llu events, %llu outside host run intervals, %llu ambiguous\n",
			guests[g].name, guests[g].file.path,
			(unsigned long long)guests[g].events,
			(unsigned long long)guests[g].outside,
			(unsigned long long)guests[g].ambiguous);
	if (stats->before_host)
		fprintf(out, "%llu guest events came before the host recording began: placed with the values before the first TSC event, not checked against host runs\n",
			(unsigned long long)stats->before_host);
	fprintf(out, "total: %llu host events, %llu guest events, %llu outside host run intervals, %llu ambiguous, %llu out of order, %llu damaged records\n",
		(unsigned long long)stats->host_events,
		(unsigned long long)stats->guest_events,
		(unsigned long long)stats->outside,
		(unsigned long long)stats->ambiguous,
		(unsigned long long)stats->out_of_order,
		(unsigned long long)stats->damaged);
}
