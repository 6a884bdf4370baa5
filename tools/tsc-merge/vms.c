// SPDX-License-Identifier: GPL-2.0
/*
 * vms.c: which host thread belongs to which VMM process, the VMs and vCPUs
 * found in the host trace, and tying each guest trace to one VM.
 *
 * trace.dat records no thread group ids, so the VMM process of a vCPU
 * thread comes from task:task_newtask: a clone with CLONE_THREAD joins its
 * parent's process. A thread created before the recording began counts as
 * a process of its own, which is why the host must be recorded before its
 * guests start (scripts/record-host.sh).
 */
#include <stdlib.h>
#include <string.h>

#include "tsc-merge.h"

#define THREAD_HASH_BITS 12

struct thread {
	int tid;
	int tgid;
	struct thread *next;
};

struct vm_table {
	struct thread *threads[1 << THREAD_HASH_BITS];
	struct vm **vms;
	unsigned int nr_vms;
};

static unsigned int hash_tid(int tid)
{
	return ((unsigned int)tid * 2654435761u) >> (32 - THREAD_HASH_BITS);
}

static struct thread *find_thread(struct vm_table *t, int tid)
{
	struct thread *th;

	for (th = t->threads[hash_tid(tid)]; th; th = th->next)
		if (th->tid == tid)
			return th;
	return NULL;
}

struct vm_table *vm_table_new(void)
{
	return xcalloc(1, sizeof(struct vm_table));
}

void vm_table_free(struct vm_table *t)
{
	unsigned int i, j, l;

	if (!t)
		return;
	for (i = 0; i < (1u << THREAD_HASH_BITS); i++) {
		while (t->threads[i]) {
			struct thread *th = t->threads[i];

			t->threads[i] = th->next;
			free(th);
		}
	}
	for (i = 0; i < t->nr_vms; i++) {
		struct vm *vm = t->vms[i];

		for (j = 0; j < vm->nr_vcpus; j++) {
			if (!vm->vcpus[j])
				continue;
			for (l = 0; l < NR_LEVELS; l++)
				free(vm->vcpus[j]->steps[l].steps);
			free(vm->vcpus[j]);
		}
		free(vm->vcpus);
		free(vm);
	}
	free(t->vms);
	free(t);
}

/* Remember a new thread; a tid reused after an exit takes the new owner. */
void vm_table_add_thread(struct vm_table *t, int tid, int tgid)
{
	struct thread *th = find_thread(t, tid);

	if (!th) {
		th = xcalloc(1, sizeof(*th));
		th->tid = tid;
		th->next = t->threads[hash_tid(tid)];
		t->threads[hash_tid(tid)] = th;
	}
	th->tgid = tgid;
}

int vm_table_tgid_of(struct vm_table *t, int tid)
{
	struct thread *th = find_thread(t, tid);

	return th ? th->tgid : tid;
}

static struct vm *add_vm(struct vm_table *t, int pid, unsigned int gen,
			 const char *comm, uint64_t born)
{
	struct vm *vm = xcalloc(1, sizeof(*vm));

	t->vms = xrealloc(t->vms, t->nr_vms + 1, sizeof(*t->vms));
	vm->pid = pid;
	vm->gen = gen;
	vm->born = born;
	vm->index = t->nr_vms;
	vm->current = true;
	snprintf(vm->comm, sizeof(vm->comm), "%s", comm);
	t->vms[t->nr_vms++] = vm;
	return vm;
}

static struct vm *find_vm(const struct vm_table *t, int pid, unsigned int gen)
{
	unsigned int i;

	for (i = 0; i < t->nr_vms; i++)
		if (t->vms[i]->pid == pid && (!gen || t->vms[i]->gen == gen) &&
		    (gen || t->vms[i]->current))
			return t->vms[i];
	return NULL;
}

/* The VM a VMM process runs now; @comm names the process if it is new. */
struct vm *vm_table_vm_of_process(struct vm_table *t, int pid, const char *comm)
{
	struct vm *vm = find_vm(t, pid, 0);

	return vm ? vm : add_vm(t, pid, 1, comm, 0);
}

/*
 * The same process created a vCPU id it already had, at host TSC @born:
 * from there on its events belong to a new VM.
 */
struct vm *vm_table_new_generation(struct vm_table *t, struct vm *vm,
				   uint64_t born)
{
	vm->current = false;
	return add_vm(t, vm->pid, vm->gen + 1, vm->comm, born);
}

/* Start again from each process's first VM, for a second pass. */
void vm_table_rewind(struct vm_table *t)
{
	unsigned int i;

	for (i = 0; i < t->nr_vms; i++)
		t->vms[i]->current = t->vms[i]->gen == 1;
}

/* In a second pass, follow the switch the first pass found at @ts. */
struct vm *vm_table_follow_generation(struct vm_table *t, struct vm *vm,
				      uint64_t ts)
{
	struct vm *next = find_vm(t, vm->pid, vm->gen + 1);

	if (!next || next->born != ts)
		return vm;
	vm->current = false;
	next->current = true;
	return next;
}

struct vcpu *vm_find_vcpu(const struct vm *vm, unsigned int id)
{
	return id < vm->nr_vcpus ? vm->vcpus[id] : NULL;
}

struct vcpu *vm_get_vcpu(struct vm *vm, unsigned int id)
{
	struct vcpu *v = vm_find_vcpu(vm, id);

	if (v)
		return v;
	if (id >= vm->nr_vcpus) {
		unsigned int n = id + 1;

		vm->vcpus = xrealloc(vm->vcpus, n, sizeof(*vm->vcpus));
		memset(vm->vcpus + vm->nr_vcpus, 0, (n - vm->nr_vcpus) * sizeof(*vm->vcpus));
		vm->nr_vcpus = n;
	}
	v = xcalloc(1, sizeof(*v));
	v->id = id;
	v->vm = vm;
	v->tid = -1;
	v->mult = 1;			/* no scaling until an event says */
	vm->vcpus[id] = v;
	return v;
}

/* vCPUs the host actually ran: a guest trace has one CPU for each. */
unsigned int vm_count_running_vcpus(const struct vm *vm)
{
	unsigned int i, n = 0;

	for (i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i] && vm->vcpus[i]->entries)
			n++;
	return n;
}

unsigned int vm_table_count(const struct vm_table *t)
{
	return t->nr_vms;
}

struct vm *vm_table_get(const struct vm_table *t, unsigned int index)
{
	return index < t->nr_vms ? t->vms[index] : NULL;
}

static void list_candidates(const struct vm_table *t, FILE *out)
{
	unsigned int i;

	for (i = 0; i < t->nr_vms; i++) {
		const struct vm *vm = t->vms[i];

		fprintf(out, "  @%d.%u  %s, %u vCPUs ran%s\n", vm->pid, vm->gen,
			vm->comm, vm_count_running_vcpus(vm),
			vm->guest[LEVEL_L1] || vm->guest[LEVEL_L2] ? " (tied)" : "");
	}
}

static struct vm *pick_by_pid(struct vm_table *t, struct guest *g)
{
	struct vm *found = NULL;
	unsigned int i, n = 0;

	for (i = 0; i < t->nr_vms; i++) {
		struct vm *vm = t->vms[i];

		if (vm->pid != g->want_pid || (g->want_gen && vm->gen != (unsigned int)g->want_gen))
			continue;
		found = vm;
		n++;
	}
	if (n == 1)
		return found;
	fprintf(stderr, "%s: %s VM of pid %d in the host trace; the VMs are:\n",
		g->file.path, n ? "more than one" : "no", g->want_pid);
	return NULL;
}

static struct vm *pick_automatically(struct vm_table *t, struct guest *g)
{
	struct vm *found = NULL;
	unsigned int i, n = 0;

	/* A nested guest's CPUs say nothing about which VM runs it. */
	if (g->level == LEVEL_L2) {
		fprintf(stderr, "%s: a nested (,l2) guest needs the VMM pid of the VM that runs it: --guest %s=%s@PID,l2; the VMs are:\n",
			g->file.path, g->name, g->file.path);
		return NULL;
	}

	for (i = 0; i < t->nr_vms; i++) {
		struct vm *vm = t->vms[i];

		if (vm->guest[g->level] || vm_count_running_vcpus(vm) != (unsigned int)g->nr_cpus)
			continue;
		found = vm;
		n++;
	}
	if (n == 1)
		return found;
	fprintf(stderr, "%s: %s VM with %d vCPUs in the host trace: say which with --guest %s=%s@PID[.N]; the VMs are:\n",
		g->file.path, n ? "more than one" : "no", g->nr_cpus, g->name,
		g->file.path);
	return NULL;
}

/*
 * Every guest CPU that holds events must be a vCPU the host trace knows,
 * with steps at the guest's level; say so now rather than mid-merge.
 */
int guest_check_cpus(struct guest *g)
{
	int b, cpu, errors = 0;

	for (b = 0; b < g->file.nr_buffers; b++) {
		for (cpu = 0; cpu < tracecmd_cpus(g->file.buffers[b]); cpu++) {
			struct vcpu *v = vm_find_vcpu(g->vm, cpu);
			struct tep_record *r = tracecmd_read_cpu_first(g->file.buffers[b], cpu);

			if (!r)
				continue;
			tracecmd_free_record(r);
			if (v && v->steps[g->level].nr)
				continue;
			fprintf(stderr, "%s: CPU %d has events, but %s\n", g->file.path, cpu,
				!v ? "the VM has no vCPU with that id in the host trace" :
				"the host trace has no kvm_nested_tsc_offset for that vCPU");
			errors++;
		}
	}
	return errors ? -1 : 0;
}

/* Never guess: an ambiguous or missing VM is an error listing the choices. */
int vm_table_tie_guest(struct vm_table *t, struct guest *g)
{
	struct vm *vm = g->want_pid ? pick_by_pid(t, g) : pick_automatically(t, g);

	if (!vm) {
		list_candidates(t, stderr);
		if (!t->nr_vms)
			fprintf(stderr, "  (none: no kvm_entry in the host trace)\n");
		return -1;
	}
	if (vm->guest[g->level]) {
		fprintf(stderr, "%s: VM @%d.%u is already tied to %s\n", g->file.path,
			vm->pid, vm->gen, vm->guest[g->level]->file.path);
		return -1;
	}
	vm->guest[g->level] = g;
	g->vm = vm;
	return 0;
}
