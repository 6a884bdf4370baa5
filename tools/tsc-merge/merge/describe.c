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

static void describe_guest(struct sink_guest *sg, struct guest *g)
{
	int c;

	sg->name = g->name;
	sg->file = &g->file;
	guest_label(g, sg->label, sizeof(sg->label));
	guest_vm_spec(g, sg->vm_spec, sizeof(sg->vm_spec));
	sg->slot = guest_slot(g);
	sg->vcpu_ids = guest_vcpu_ids(g);
	sg->nr_cpus = tracecmd_cpus(g->file.handle);
	sg->cpu_threads = xcalloc(sg->nr_cpus > 0 ? sg->nr_cpus : 1, sizeof(int));
	for (c = 0; c < sg->nr_cpus; c++)
		sg->cpu_threads[c] = guest_cpu_thread(g, c);
}

static void describe_vm(struct sink_desc *d, const struct vm *vm, struct tep_handle *tep)
{
	unsigned int i;

	d->vm_first[vm->index] = d->nr_vcpus;
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct sink_vcpu *sv = &d->vcpus[d->nr_vcpus++];

		if (!vm->vcpus[i])
			continue;
		sv->id = i;
		sv->key = vcpu_key(vm->vcpus[i]);
		sv->process = vm->pid;
		sv->process_comm = tep_data_comm_from_pid(tep, vm->pid);
		sv->later_vm = vm->gen > 1;
	}
}

struct sink_desc *describe_run(struct trace_file *host, struct guest *guests,
			       int nr_guests, const struct vm_table *vms)
{
	struct sink_desc *d = xcalloc(1, sizeof(*d));
	struct tep_handle *tep = tracecmd_get_tep(host->handle);
	unsigned int i, nr_vcpus = 0;
	int g;

	d->host = host;
	d->nr_guests = nr_guests;
	d->guests = xcalloc(nr_guests, sizeof(*d->guests));
	for (g = 0; g < nr_guests; g++)
		describe_guest(&d->guests[g], &guests[g]);
	/* A slot per vCPU id of each VM, holes too: found by id, not searched. */
	for (i = 0; i < vm_table_count(vms); i++)
		nr_vcpus += vm_table_get(vms, i)->nr_vcpus;
	d->vcpus = xcalloc(nr_vcpus + 1, sizeof(*d->vcpus));
	d->vm_first = xcalloc(vm_table_count(vms) + 1, sizeof(*d->vm_first));
	for (i = 0; i < vm_table_count(vms); i++)
		describe_vm(d, vm_table_get(vms, i), tep);
	return d;
}

void describe_free(struct sink_desc *d)
{
	int g;

	if (!d)
		return;
	for (g = 0; g < d->nr_guests; g++)
		free(d->guests[g].cpu_threads);
	free(d->guests);
	free(d->vcpus);
	free(d->vm_first);
	free(d);
}

/* @v as described; NULL for none. */
const struct sink_vcpu *describe_vcpu(const struct sink_desc *d, const struct vcpu *v)
{
	return v ? &d->vcpus[d->vm_first[v->vm->index] + v->id] : NULL;
}
