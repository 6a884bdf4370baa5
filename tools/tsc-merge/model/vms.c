// SPDX-License-Identifier: GPL-2.0
/*
 * vms.c: which host thread belongs to which VMM process, the VMs and vCPUs
 * found in the host trace, and tying each guest trace to one VM.
 *
 * trace.dat records no thread group ids, so the VMM process of a vCPU
 * thread comes from task:task_newtask: a clone with CLONE_THREAD joins its
 * parent's process. A thread created before the recording began counts as
 * a process of its own, which is why the host must be recorded before its
 * guests start (tools/record-host/record-host.sh). A thread id is reused
 * after an exit, so a thread's process is kept as of each clone event, and
 * looked up as of a record's time in every pass.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tracecmd-private.h"

#define THREAD_HASH_BITS 12

/* From host TSC @since on (to the next owner's), the thread is @tgid's. */
struct owner {
	uint64_t since;
	int tgid;
};

struct thread {
	int tid;
	struct owner *owners;		/* by @since; the first since 0 */
	unsigned int nr_owners;
	unsigned int alloc_owners;
	struct thread *next;
};

struct vm_table {
	struct thread *threads[1 << THREAD_HASH_BITS];
	struct vm *by_pid[1 << THREAD_HASH_BITS];	/* chained by pid_next */
	struct vm **vms;
	unsigned int nr_vms;
	size_t alloc_vms;
	char unseen[128];		/* needed events the host trace has none of */
};

static unsigned int hash_tid(int tid)
{
	return ((unsigned int)tid * 2654435761u) >> (32 - THREAD_HASH_BITS);
}

static struct thread *find_thread(const struct vm_table *t, int tid)
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

static void free_vcpu(struct vcpu *v)
{
	unsigned int l;

	for (l = 0; l < NR_LEVELS; l++)
		free(v->steps[l].steps);
	free(v);
}

void vm_table_free(struct vm_table *t)
{
	unsigned int i, j;

	if (!t)
		return;
	for (i = 0; i < (1u << THREAD_HASH_BITS); i++) {
		while (t->threads[i]) {
			struct thread *th = t->threads[i];

			t->threads[i] = th->next;
			free(th->owners);
			free(th);
		}
	}
	for (i = 0; i < t->nr_vms; i++) {
		struct vm *vm = t->vms[i];

		for (j = 0; j < vm->nr_vcpus; j++)
			free_vcpu(vm->vcpus[j]);
		free(vm->vcpus);
		free(vm);
	}
	free(t->vms);
	free(t);
}

static struct thread *get_thread(struct vm_table *t, int tid)
{
	struct thread *th = find_thread(t, tid);

	if (!th) {
		th = xcalloc(1, sizeof(*th));
		th->tid = tid;
		th->owners = xcalloc(1, sizeof(*th->owners));
		th->owners[0].tgid = tid;
		th->nr_owners = 1;
		th->alloc_owners = 1;
		th->next = t->threads[hash_tid(tid)];
		t->threads[hash_tid(tid)] = th;
	}
	return th;
}

/* The owner of @th at host TSC @ts: the last one since then or before. */
static struct owner *owner_at(const struct thread *th, uint64_t ts)
{
	unsigned int lo = 1, hi = th->nr_owners;

	/* The first owner that came after @ts; the one before it holds. */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (th->owners[mid].since <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &th->owners[lo - 1];
}

/* A clone event at host TSC @ts: from then on @tid is @tgid's, reused or new. */
void vm_table_add_thread(struct vm_table *t, int tid, int tgid, uint64_t ts)
{
	struct thread *th = get_thread(t, tid);

	/* A damaged file may clone one tid again and again: grown by doubling. */
	if (th->nr_owners == th->alloc_owners) {
		th->alloc_owners *= 2;
		th->owners = xrealloc(th->owners, th->alloc_owners, sizeof(*th->owners));
	}
	th->owners[th->nr_owners++] = (struct owner){ .since = ts, .tgid = tgid };
}

/*
 * A GUEST option (@ts 0) or a snapshot at @ts says @tid runs a vCPU of
 * @tgid: so it has done since its last clone event before @ts, or since
 * the recording began when none came.
 */
void vm_table_pin_thread(struct vm_table *t, int tid, int tgid, uint64_t ts)
{
	owner_at(get_thread(t, tid), ts)->tgid = tgid;
}

/* The process @tid belonged to at host TSC @ts; itself when nothing said. */
int vm_table_tgid_at(const struct vm_table *t, int tid, uint64_t ts)
{
	const struct thread *th = find_thread(t, tid);

	return th ? owner_at(th, ts)->tgid : tid;
}

/* Until which host TSC (exclusive) what vm_table_tgid_at() said at @ts holds. */
uint64_t vm_table_tgid_until(const struct vm_table *t, int tid, uint64_t ts)
{
	const struct thread *th = find_thread(t, tid);
	const struct owner *o = th ? owner_at(th, ts) : NULL;

	return o && o < th->owners + th->nr_owners - 1 ? o[1].since : UINT64_MAX;
}

static struct vm *add_vm(struct vm_table *t, int pid, unsigned int gen,
			 const char *comm, uint64_t born)
{
	struct vm *vm = xcalloc(1, sizeof(*vm));

	t->vms = xgrow(t->vms, t->nr_vms, &t->alloc_vms, sizeof(*t->vms));
	vm->pid = pid;
	vm->gen = gen;
	vm->born = born;
	vm->index = t->nr_vms;
	vm->current = true;
	snprintf(vm->comm, sizeof(vm->comm), "%s", comm);
	t->vms[t->nr_vms++] = vm;
	vm->pid_next = t->by_pid[hash_tid(pid)];
	t->by_pid[hash_tid(pid)] = vm;
	return vm;
}

/*
 * VM @gen of process @pid, or with @gen 0 its current one. Every KVM
 * event looks its VM up: by a hash of the pid, as a file may make
 * thousands of VMs.
 */
static struct vm *find_vm(const struct vm_table *t, int pid, unsigned int gen)
{
	struct vm *vm;

	for (vm = t->by_pid[hash_tid(pid)]; vm; vm = vm->pid_next)
		if (vm->pid == pid && (gen ? vm->gen == gen : vm->current))
			return vm;
	return NULL;
}

/*
 * Where vCPU @id is, or would go, in @vm's vCPUs: they are kept sorted by
 * id without holes, so that a table is sized by the vCPUs there are, not
 * by an id the file chooses.
 */
static unsigned int vcpu_position(const struct vm *vm, unsigned int id)
{
	unsigned int lo = 0, hi = vm->nr_vcpus;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (vm->vcpus[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct vcpu *vm_find_vcpu(const struct vm *vm, unsigned int id)
{
	unsigned int at = vcpu_position(vm, id);

	return at < vm->nr_vcpus && vm->vcpus[at]->id == id ? vm->vcpus[at] : NULL;
}

/* @v into @vm at its id's place; the vCPUs after it move up one. */
static void insert_vcpu(struct vm *vm, struct vcpu *v)
{
	unsigned int at = vcpu_position(vm, v->id), i;

	vm->vcpus = xinsert(vm->vcpus, vm->nr_vcpus, &vm->alloc_vcpus, at, sizeof(*vm->vcpus));
	vm->vcpus[at] = v;
	vm->nr_vcpus++;
	v->vm = vm;
	for (i = at; i < vm->nr_vcpus; i++)
		vm->vcpus[i]->index = i;
}

struct vcpu *vm_get_vcpu(struct vm *vm, unsigned int id)
{
	struct vcpu *v = vm_find_vcpu(vm, id);

	if (v)
		return v;
	v = xcalloc(1, sizeof(*v));
	v->id = id;
	v->tid = -1;
	v->mult = 1;			/* no scaling until an event says */
	insert_vcpu(vm, v);
	return v;
}

static void remove_vm(struct vm_table *t, struct vm *vm)
{
	struct vm **link = &t->by_pid[hash_tid(vm->pid)];
	unsigned int i;

	while (*link != vm)
		link = &(*link)->pid_next;
	*link = vm->pid_next;

	for (i = vm->index + 1; i < t->nr_vms; i++) {
		t->vms[i - 1] = t->vms[i];
		t->vms[i - 1]->index = i - 1;
	}
	t->nr_vms--;
	free(vm->vcpus);
	free(vm);
}

/*
 * Before the snapshot told it, @from collected the events of one vCPU
 * thread as if it were a process of its own: its vCPUs go to @into, the VM
 * of their real process, and it leaves the table.
 */
void vm_table_absorb(struct vm_table *t, struct vm *into, struct vm *from)
{
	unsigned int i;

	for (i = 0; i < from->nr_vcpus; i++) {
		struct vcpu *v = from->vcpus[i];

		if (vm_find_vcpu(into, v->id)) {
			fprintf(stderr, "warning: vCPU %u of VM @%d is named twice, by its thread %d and its process %d; the thread's events before the snapshot are dropped\n",
				v->id, into->pid, from->pid, into->pid);
			free_vcpu(v);
			continue;
		}
		insert_vcpu(into, v);
	}
	remove_vm(t, from);
}

/*
 * A GUEST option's guess made a VM for its guest's first vCPU thread;
 * when the clone events put that thread in another process, the guess
 * holds no vCPU and is no VM.
 */
void vm_table_drop_empty(struct vm_table *t)
{
	unsigned int i = t->nr_vms;

	while (i--)
		if (!t->vms[i]->nr_vcpus)
			remove_vm(t, t->vms[i]);
}

struct vm *vm_table_find_process(struct vm_table *t, int pid)
{
	return find_vm(t, pid, 0);
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

/* vCPUs the host actually ran: a guest trace has one CPU for each. */
unsigned int vm_count_running_vcpus(const struct vm *vm)
{
	unsigned int i, n = 0;

	for (i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i]->entries)
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

/*
 * What the outputs know of a guest's VM: a slot of its own (its VM's
 * place, then its level), its label and its vCPUs' host threads, so that
 * they need not know how VMs are kept.
 */
unsigned int vm_table_guest_slots(const struct vm_table *t)
{
	return t->nr_vms * NR_LEVELS;
}

/* The guest in @slot, in VM order; NULL: none is tied there. */
const struct guest *vm_table_guest(const struct vm_table *t, unsigned int slot)
{
	return t->vms[slot / NR_LEVELS]->guest[slot % NR_LEVELS];
}

unsigned int guest_slot(const struct guest *g)
{
	return g->vm->index * NR_LEVELS + g->level;
}

/* "VM NAME (L2 in COMM pid PID.GEN)" */
void guest_label(const struct guest *g, char *buf, size_t size)
{
	const struct vm *vm = g->vm;

	snprintf(buf, size, "VM %s (%s%s pid %d.%u)", g->name,
		 g->level == LEVEL_L2 ? "L2 in " : "", vm->comm, vm->pid, vm->gen);
}

/*
 * The host thread that ran guest CPU @cpu; -1: none did (no such vCPU, or
 * one the host trace never enters, which a GUEST option cannot name).
 */
int guest_cpu_thread(const struct guest *g, unsigned int cpu)
{
	const struct vcpu *v = vm_find_vcpu(g->vm, cpu);

	return v && v->entries ? v->tid : -1;
}

/* "@PID.GEN", as the user ties a guest to its VM. */
void guest_vm_spec(const struct guest *g, char *buf, size_t size)
{
	snprintf(buf, size, "@%d.%u", g->vm->pid, g->vm->gen);
}

/* A number of its own for each vCPU of every VM. */
uint64_t vcpu_key(const struct vcpu *v)
{
	return (uint64_t)v->vm->index << 20 | v->id;
}

/* "vCPU ID WHAT", and which VM when its process made more than one. */
void vcpu_label(const struct vcpu *v, const char *what, char *buf, size_t size)
{
	snprintf(buf, size, "vCPU %u %s%s", v->id, what, v->vm->gen > 1 ? " (a later VM)" : "");
}

/* The VMM process that created the vCPU. */
int vcpu_process(const struct vcpu *v)
{
	return v->vm->pid;
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

/* The one VM @fits takes for @g, or NULL; *@n counts the VMs it takes. */
static struct vm *only_vm(const struct vm_table *t, const struct guest *g,
			  bool (*fits)(const struct vm *vm, const struct guest *g),
			  unsigned int *n)
{
	struct vm *found = NULL;
	unsigned int i;

	*n = 0;
	for (i = 0; i < t->nr_vms; i++) {
		if (!fits(t->vms[i], g))
			continue;
		found = t->vms[i];
		(*n)++;
	}
	return *n == 1 ? found : NULL;
}

static bool has_wanted_pid(const struct vm *vm, const struct guest *g)
{
	return vm->pid == g->want_pid && (!g->want_gen || vm->gen == (unsigned int)g->want_gen);
}

static struct vm *pick_by_pid(struct vm_table *t, struct guest *g)
{
	unsigned int n;
	struct vm *vm = only_vm(t, g, has_wanted_pid, &n);

	if (vm)
		return vm;
	fprintf(stderr, "%s: %s VM of pid %d in the host trace; the VMs are:\n",
		g->file.path, n ? "more than one" : "no", g->want_pid);
	return NULL;
}

/* An untied VM that ran as many vCPUs as @g has CPUs. */
static bool fits_cpus(const struct vm *vm, const struct guest *g)
{
	return !vm->guest[g->level] && vm_count_running_vcpus(vm) == (unsigned int)g->nr_cpus;
}

static struct vm *pick_automatically(struct vm_table *t, struct guest *g)
{
	struct vm *vm;
	unsigned int n;

	/* A nested guest's CPUs say nothing about which VM runs it. */
	if (g->level == LEVEL_L2) {
		fprintf(stderr, "%s: a nested (,l2) guest needs the VMM pid of the VM that runs it: --guest %s=%s@PID,l2; the VMs are:\n",
			g->file.path, g->name, g->file.path);
		return NULL;
	}
	vm = only_vm(t, g, fits_cpus, &n);
	if (vm)
		return vm;
	fprintf(stderr, "%s: %s VM with %d vCPUs in the host trace: say which with --guest %s=%s@PID[.N]; the VMs are:\n",
		g->file.path, n ? "more than one" : "no", g->nr_cpus, g->name,
		g->file.path);
	return NULL;
}

static bool vm_has_l2_steps(const struct vm *vm)
{
	unsigned int i;

	for (i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i]->steps[LEVEL_L2].nr)
			return true;
	return false;
}

/*
 * A nested guest is converted with the L2 steps kvm_nested_tsc_offset
 * gives; with none for any vCPU of its VM, the cause is the recording or
 * the kernel, not one CPU: say once what gets the event.
 */
static int check_nested_recorded(const struct guest *g, const struct trace_file *host)
{
	if (g->level != LEVEL_L2 || vm_has_l2_steps(g->vm))
		return 0;
	fprintf(stderr, "%s: a nested (,l2) guest of VM @%d.%u, but the host trace %s has no kvm:kvm_nested_tsc_offset for that VM's vCPUs: the event comes from this project's kernel series (patches/, applied with make apply KSRC=/path/to/linux, or on a distribution kernel its KVM modules, make kvm-modules: README.md \"Your own kernel\") and must be recorded (-e kvm:kvm_nested_tsc_offset; tools/record-host/record-host.sh records it when the kernel has it), while the nested guest runs\n",
		g->file.path, g->vm->pid, g->vm->gen, host->path);
	return -1;
}

/*
 * Every guest CPU that holds events must be a vCPU the host trace knows,
 * with steps at the guest's level; say so now rather than mid-merge.
 */
int guest_check_cpus(struct guest *g, const struct trace_file *host)
{
	int b, cpu, errors = 0;

	if (check_nested_recorded(g, host))
		return -1;
	for (b = 0; b < g->file.nr_buffers; b++) {
		for (cpu = 0; cpu < tracecmd_cpus(g->file.buffers[b]); cpu++) {
			struct vcpu *v = vm_find_vcpu(g->vm, cpu);
			struct tep_record *r = tracecmd_read_cpu_first(g->file.buffers[b], cpu);

			if (!r)
				continue;
			tracecmd_free_record(r);
			if (v && v->entries && v->steps[g->level].nr)
				continue;
			fprintf(stderr, "%s: CPU %d has events, but %s\n", g->file.path, cpu,
				!v ? "the VM has no vCPU with that id in the host trace" :
				!v->entries ? "the host trace never runs that vCPU (no kvm_entry of it)" :
				"the host trace has no kvm_nested_tsc_offset for that vCPU");
			errors++;
		}
	}
	return errors ? -1 : 0;
}

/*
 * The host's GUEST option for @g's trace id, if trace-cmd wrote one that
 * maps CPUs: it writes none when it could not find every vCPU thread. Of
 * several, the last, as libtracecmd takes it: a --sync-out copy's comes
 * after the one its input had.
 */
static const struct td_guest_map *guest_map_of(const struct trace_file *host,
					       const struct guest *g)
{
	unsigned int i = host->meta.nr_guests;

	if (!g->file.meta.trace_id || g->level != LEVEL_L1)
		return NULL;
	while (i--)
		if (host->meta.guests[i].trace_id == g->file.meta.trace_id &&
		    host->meta.guests[i].nr_cpus)
			return &host->meta.guests[i];
	return NULL;
}

/*
 * The vCPU host thread @tid ran, in the first VM that has one: a GUEST
 * option's guess at the thread's process gives way to the clone events.
 */
static struct vcpu *vcpu_of_thread(const struct vm_table *t, int tid)
{
	unsigned int i, j;

	for (i = 0; i < t->nr_vms; i++) {
		const struct vm *vm = t->vms[i];

		for (j = 0; j < vm->nr_vcpus; j++)
			if (vm->vcpus[j]->tid == tid && vm->vcpus[j]->entries)
				return vm->vcpus[j];
	}
	return NULL;
}

/*
 * trace-cmd's GUEST option names the host thread of each guest CPU: the
 * VM whose vCPU N that thread ran, for every N it names a thread for,
 * with as many CPUs as the guest file has. A CPU no thread ran (-1, as a
 * --sync-out copy names a CPU beyond the VM's vCPUs or one never entered)
 * says nothing: the guest's CPUs that hold events must still be vCPUs of
 * the VM (guest_check_cpus()).
 */
static struct vm *pick_by_guest_option(struct vm_table *t, struct guest *g,
				       const struct trace_file *host,
				       const struct td_guest_map *map)
{
	struct vm *vm = NULL;
	unsigned int cpu;

	if ((unsigned int)g->nr_cpus != map->nr_cpus) {
		fprintf(stderr, "%s: has %d CPUs, but %s's GUEST option '%s' (trace id %#llx) names %u\n",
			g->file.path, g->nr_cpus, host->path, map->name,
			(unsigned long long)map->trace_id, map->nr_cpus);
		return NULL;
	}
	for (cpu = 0; cpu < map->nr_cpus; cpu++) {
		struct vcpu *v;

		if (map->tids[cpu] <= 0)
			continue;
		v = vcpu_of_thread(t, map->tids[cpu]);
		if (!v || v->id != cpu || (vm && v->vm != vm)) {
			fprintf(stderr, "%s: its GUEST option '%s' says host thread %d runs CPU %u of %s, but %s\n",
				host->path, map->name, map->tids[cpu], cpu, g->file.path,
				!v ? "the host data has no kvm_entry of that thread" :
				v->id != cpu ? "that thread runs another vCPU" :
				"that thread belongs to another VM");
			return NULL;
		}
		vm = v->vm;
	}
	if (!vm)
		fprintf(stderr, "%s: its GUEST option '%s' (trace id %#llx) names no host thread for any CPU of %s\n",
			host->path, map->name, (unsigned long long)map->trace_id, g->file.path);
	return vm;
}

/*
 * The vCPU threads of every guest the host's GUEST options name belong to
 * one VM each, before any clone event says otherwise: trace-cmd record -A
 * starts while the VMs run. The VM is named after the guest and numbered
 * after its first vCPU thread, since the option does not give the VMM's
 * pid.
 */
void vm_table_add_guest_options(struct vm_table *t, const struct trace_file *host)
{
	unsigned int i, cpu;

	for (i = 0; i < host->meta.nr_guests; i++) {
		const struct td_guest_map *map = &host->meta.guests[i];
		int first = -1;

		for (cpu = 0; cpu < map->nr_cpus; cpu++) {
			if (map->tids[cpu] <= 0)
				continue;
			if (first < 0)
				first = map->tids[cpu];
			vm_table_pin_thread(t, map->tids[cpu], first, 0);
		}
		if (first > 0 && !find_vm(t, first, 0))
			vm_table_vm_of_process(t, first, map->name);
	}
}

/* The scan's list of needed host events with no record: "" when it has all. */
void vm_table_set_unseen(struct vm_table *t, const char *events)
{
	snprintf(t->unseen, sizeof(t->unseen), "%s", events);
}

/*
 * Never guess: an ambiguous or missing VM is an error listing the choices,
 * and the events the VMs are found from, when the recording has none.
 */
int vm_table_tie_guest(struct vm_table *t, struct guest *g, const struct trace_file *host)
{
	const struct td_guest_map *map = g->want_pid ? NULL : guest_map_of(host, g);
	struct vm *vm;

	if (map) {
		vm = pick_by_guest_option(t, g, host, map);
		if (!vm)
			return -1;
	} else {
		vm = g->want_pid ? pick_by_pid(t, g) : pick_automatically(t, g);
	}

	if (!vm) {
		list_candidates(t, stderr);
		if (!t->nr_vms)
			fprintf(stderr, "  (none: no kvm_entry in the host trace)\n");
		if (t->unseen[0])
			fprintf(stderr, "%s: the host trace has no records of %s (left out of the recording, or filtered out), and the VMs and their vCPUs are found from them: record the host with tools/record-host/record-host.sh, as the user guide's \"Three ways to record\" says (Documentation/user-guide.md)\n",
				host->path, t->unseen);
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
