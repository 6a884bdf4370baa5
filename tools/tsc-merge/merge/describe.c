// SPDX-License-Identifier: GPL-2.0
/*
 * describe.c: the run as the sinks see it: each guest trace with its VM's
 * label and threads, and each vCPU with its ids and process, copied out of
 * the model once the host scan has tied every guest, so that no sink
 * reaches into a VM or a vCPU.
 */
#include <stdlib.h>

#include "merge/merge.h"
#include "tracecmd-private.h"

static int file_cpus(const struct trace_file *f)
{
	int n = tracecmd_cpus(f->handle);

	return n > 0 ? n : 0;
}

/* Its CPUs' host threads go to @threads; returns what follows them. */
static int *describe_guest(struct sink_guest *sg, struct guest *g, int *threads)
{
	int c;

	sg->name = g->name;
	sg->file = &g->file;
	guest_label(g, sg->label, sizeof(sg->label));
	guest_vm_spec(g, sg->vm_spec, sizeof(sg->vm_spec));
	sg->slot = guest_slot(g);
	sg->nested = g->level == LEVEL_L2;
	sg->nr_cpus = file_cpus(&g->file);
	sg->uname = tracecmd_get_uname(g->file.handle);
	sg->cpu_threads = threads;
	for (c = 0; c < sg->nr_cpus; c++)
		sg->cpu_threads[c] = guest_cpu_thread(g, c);
	return threads + sg->nr_cpus;
}

static void describe_vm(struct sink_desc *d, const struct vm *vm, struct tep_handle *tep)
{
	unsigned int i;

	d->vm_first[vm->index] = d->nr_vcpus;
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct sink_vcpu *sv = &d->vcpus[d->nr_vcpus++];

		sv->id = vm->vcpus[i]->id;
		sv->key = vcpu_key(vm->vcpus[i]);
		sv->process = vm->pid;
		sv->process_comm = tep_data_comm_from_pid(tep, vm->pid);
		sv->later_vm = vm->gen > 1;
	}
}

/*
 * The description is one allocation: the struct, then its guests, its
 * vCPUs, their index and the guests' CPU threads, each part aligned as
 * the one before it is, so describe_free() is one free().
 */
_Static_assert(_Alignof(struct sink_guest) <= _Alignof(struct sink_desc) &&
	       _Alignof(struct sink_vcpu) <= _Alignof(struct sink_guest) &&
	       _Alignof(unsigned int) <= _Alignof(struct sink_vcpu) &&
	       _Alignof(int) <= _Alignof(unsigned int), "describe_run()'s block");

struct sink_desc *describe_run(struct trace_file *host, struct guest *guests,
			       int nr_guests, const struct vm_table *vms)
{
	struct tep_handle *tep = tracecmd_get_tep(host->handle);
	unsigned int i, nr_vms = vm_table_count(vms), nr_vcpus = 0;
	size_t nr_threads = 0;
	struct sink_desc *d;
	int *threads;
	int g;

	/* A slot per vCPU of each VM, found by its place there. */
	for (i = 0; i < nr_vms; i++)
		nr_vcpus += vm_table_get(vms, i)->nr_vcpus;
	for (g = 0; g < nr_guests; g++)
		nr_threads += file_cpus(&guests[g].file);
	d = xcalloc(1, sizeof(*d) + nr_guests * sizeof(*d->guests) +
		    (nr_vcpus + 1) * sizeof(*d->vcpus) + (nr_vms + 1) * sizeof(*d->vm_first) +
		    nr_threads * sizeof(int));
	d->host = host;
	d->host_uname = tracecmd_get_uname(host->handle);
	d->host_cpus = file_cpus(host);
	d->nr_guests = nr_guests;
	d->guests = (struct sink_guest *)(d + 1);
	d->vcpus = (struct sink_vcpu *)(d->guests + nr_guests);
	d->vm_first = (unsigned int *)(d->vcpus + nr_vcpus + 1);
	threads = (int *)(d->vm_first + nr_vms + 1);
	for (g = 0; g < nr_guests; g++)
		threads = describe_guest(&d->guests[g], &guests[g], threads);
	for (i = 0; i < nr_vms; i++)
		describe_vm(d, vm_table_get(vms, i), tep);
	return d;
}

void describe_free(struct sink_desc *d)
{
	free(d);
}

/* @v as described; NULL for none. */
const struct sink_vcpu *describe_vcpu(const struct sink_desc *d, const struct vcpu *v)
{
	return v ? &d->vcpus[d->vm_first[v->vm->index] + v->index] : NULL;
}
