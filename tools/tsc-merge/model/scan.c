// SPDX-License-Identifier: GPL-2.0
/*
 * scan.c: the first pass over the host trace. It rebuilds, for every vCPU,
 * the step functions of (offset, multiplier) for L1 and L2 from the TSC
 * events, and bounds the host run intervals inside each step, so the merge
 * can choose the right step for a guest timestamp before it is placed.
 */
#include <stdlib.h>
#include <string.h>

#include "tsc_event.h"
#include "model/model.h"
#include "progress.h"

struct scan {
	struct host_events he;
	struct trace_file *host;
	struct vm_table *vms;
	uint64_t events;
	uint64_t last_ts;
	uint64_t unknown_frac;
	const char *path;
	bool damaged;
	uint64_t *next_offset;		/* per CPU of all buffers, for record_repeats() */
	struct td_release *release;	/* per CPU of all buffers */
	int nr_cpus;
	uint64_t seen[HOST_SNAPSHOT + 1];	/* records of each kind */
	struct progress progress;
};

/*
 * Whether libtracecmd gives global CPU @cpu's record again; the distance
 * from the CPU's last record is how much more of the file was read.
 */
static bool repeats(struct scan *sc, const struct tep_record *r, int cpu)
{
	uint64_t at;
	bool again;

	if (cpu >= sc->nr_cpus) {
		int n = cpu + 1 > 2 * sc->nr_cpus ? cpu + 1 : 2 * sc->nr_cpus;

		sc->next_offset = xrealloc(sc->next_offset, n, sizeof(*sc->next_offset));
		memset(sc->next_offset + sc->nr_cpus, 0, (n - sc->nr_cpus) * sizeof(*sc->next_offset));
		sc->release = xrealloc(sc->release, n, sizeof(*sc->release));
		for (int i = sc->nr_cpus; i < n; i++)
			td_release_init(&sc->release[i], sc->path);
		sc->nr_cpus = n;
	}
	td_release_behind(&sc->release[cpu], r);
	at = sc->next_offset[cpu];
	again = record_repeats(&sc->next_offset[cpu], r, sc->path, r->cpu);
	if (at)
		progress_add(&sc->progress, sc->next_offset[cpu] - at);
	return again;
}

/* Values no KVM writes: a damaged file, stopped here, before any use. */
static bool check_values(struct scan *sc, const struct host_ev *ev)
{
	if (ev->vcpu_id > KVM_MAX_VCPU_ID)
		fprintf(stderr, "%s: an event at host TSC %llu has vcpu_id %u, beyond KVM's largest vCPU id %u: the file is damaged\n",
			sc->path, (unsigned long long)ev->ts, ev->vcpu_id, KVM_MAX_VCPU_ID);
	else if (ev->kind == HOST_MULT && ev->frac > TSC_MAX_FRAC_BITS)
		fprintf(stderr, "%s: a kvm_write_tsc_multiplier at host TSC %llu has frac_bits %u, beyond %u: the file is damaged\n",
			sc->path, (unsigned long long)ev->ts, ev->frac, TSC_MAX_FRAC_BITS);
	else
		return true;
	sc->damaged = true;
	return false;
}

static struct tsc_step *last_step(struct step_list *l)
{
	return l->nr ? &l->steps[l->nr - 1] : NULL;
}

/*
 * A step begins where a value changes. Two changes at one timestamp (the
 * multiplier and then the offset of a new vCPU) make one step.
 */
static struct tsc_step *push_step(struct step_list *l, uint64_t start,
				  const char *cause)
{
	struct tsc_step *last = last_step(l), *s;

	if (last && last->start == start && !last->runs) {
		last->cause = cause;
		return last;
	}
	if (last) {
		last->end = start;
		/* A run cannot span a TSC write: a lost kvm_exit ends here. */
		if (last->runs && last->run_last > start)
			last->run_last = start;
	}
	l->steps = xgrow(l->steps, l->nr, &l->alloc, sizeof(*l->steps));
	s = &l->steps[l->nr++];
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->cause = cause;
	return s;
}

static void set_l1_values(struct tsc_step *s, const struct vcpu *v)
{
	s->offset = v->offset;
	s->mult = v->mult;
	s->frac = v->frac;
	s->active = true;
}

/* Before a vCPU's first TSC event, the value that event replaces applies. */
static void ensure_first_step(struct vcpu *v)
{
	if (!v->steps[LEVEL_L1].nr)
		set_l1_values(push_step(&v->steps[LEVEL_L1], 0, "before the first TSC event"), v);
}

static void backfill_offset(struct vcpu *v, uint64_t offset)
{
	size_t i;

	for (i = 0; i < v->steps[LEVEL_L1].nr; i++)
		v->steps[LEVEL_L1].steps[i].offset = offset;
	v->offset = offset;
	v->offset_known = true;
}

static void backfill_mult(struct vcpu *v, uint64_t mult, unsigned int frac)
{
	size_t i;

	for (i = 0; i < v->steps[LEVEL_L1].nr; i++) {
		v->steps[LEVEL_L1].steps[i].mult = mult;
		v->steps[LEVEL_L1].steps[i].frac = frac;
	}
	v->mult = mult;
	v->frac = frac;
	v->mult_known = true;
}

/* A snapshot and an event disagree: the event's value is the one KVM had. */
static void warn_snapshot(const struct scan *sc, const struct vcpu *v, const char *what,
			  uint64_t snapshot, uint64_t event, uint64_t ts)
{
	fprintf(stderr, "%s: warning: vCPU %u of VM @%d: the snapshot says %s %#llx, the event at host TSC %llu says %#llx; the event's value is used\n",
		sc->path, v->id, v->vm->pid, what, (unsigned long long)snapshot,
		(unsigned long long)ts, (unsigned long long)event);
}

static void apply_offset(struct scan *sc, struct vcpu *v, const struct host_ev *ev)
{
	ensure_first_step(v);
	if (v->offset_from_snapshot && v->offset != ev->prev)
		warn_snapshot(sc, v, "offset", v->offset, ev->prev, ev->ts);
	if (!v->offset_known || v->offset_from_snapshot)
		backfill_offset(v, ev->prev);
	v->offset_from_snapshot = false;
	v->offset = ev->next;
	set_l1_values(push_step(&v->steps[LEVEL_L1], ev->ts, TSC_OFFSET_EVENT), v);
}

static void apply_mult(struct scan *sc, struct vcpu *v, const struct host_ev *ev)
{
	ensure_first_step(v);
	/* A vCPU being created (from 0) is no disagreement. */
	if (v->mult_from_snapshot && ev->prev && v->mult != ev->prev)
		warn_snapshot(sc, v, "multiplier", v->mult, ev->prev, ev->ts);
	if (!v->mult_known || v->mult_from_snapshot)
		backfill_mult(v, ev->prev, ev->frac);
	v->mult_from_snapshot = false;
	v->mult = ev->next;
	v->frac = ev->frac;
	set_l1_values(push_step(&v->steps[LEVEL_L1], ev->ts, TSC_MULTIPLIER_EVENT), v);
}

/*
 * kvm_nested_tsc_offset carries no frac_bits: take the vCPU's, or, on a
 * host without the multiplier event, recognise the two "no scaling"
 * values (1 << 48 on Intel, 1 << 32 on AMD). Anything else cannot be
 * converted, and a zero multiplier says so.
 */
static void set_l2_scale(struct scan *sc, struct tsc_step *s, const struct vcpu *v,
			 uint64_t mult)
{
	s->mult = mult;
	if (v->mult_known)
		s->frac = v->frac;
	else if (mult == 1ULL << 48)
		s->frac = 48;
	else if (mult == 1ULL << 32)
		s->frac = 32;
	else {
		s->mult = 0;
		sc->unknown_frac++;
	}
}

static void apply_nested(struct scan *sc, struct vcpu *v, const struct host_ev *ev)
{
	struct tsc_step *s;

	ensure_first_step(v);
	/*
	 * The trace began in L2: L2's pair, the one this exit replaces,
	 * applied until it; the multiplier after it is L1's.
	 */
	if (!v->steps[LEVEL_L2].nr && !ev->guest_mode) {
		s = push_step(&v->steps[LEVEL_L2], 0, "before the first TSC event");
		s->offset = ev->prev;
		s->active = true;
		set_l2_scale(sc, s, v, ev->prev_mult);
	}
	s = push_step(&v->steps[LEVEL_L2], ev->ts, TSC_NESTED_EVENT);
	s->active = ev->guest_mode;
	if (ev->guest_mode) {
		v->level = LEVEL_L2;
		s->offset = ev->next;
		set_l2_scale(sc, s, v, ev->mult);
		return;
	}
	v->level = LEVEL_L1;
	if (!v->offset_known || v->offset_from_snapshot)
		backfill_offset(v, ev->next);
	v->offset_from_snapshot = false;
}

/* A run that has not exited when the trace ends is open to the end. */
static void apply_entry(struct scan *sc, struct vcpu *v, const struct host_ev *ev)
{
	struct tsc_step *s;

	ensure_first_step(v);
	v->entries++;
	v->tid = ev->pid;
	v->scan_run_level = v->level;
	s = last_step(&v->steps[v->level]);
	if (!s)
		return;
	if (!s->runs)
		s->run_first = ev->ts;
	s->runs++;
	s->run_last = UINT64_MAX;
}

static void apply_exit(struct scan *sc, struct vcpu *v, const struct host_ev *ev)
{
	struct tsc_step *s = last_step(&v->steps[v->scan_run_level]);

	if (s && s->runs)
		s->run_last = ev->ts;
}

/*
 * The VM of a snapshot's vCPU: its thread now belongs to the VMM process
 * the snapshot names, and what the thread did before the snapshot, counted
 * as a process of its own for want of a clone event, goes with it.
 */
static struct vm *snapshot_vm(struct scan *sc, const struct snapshot_vcpu *s, uint64_t ts)
{
	struct vm *into = vm_table_vm_of_process(sc->vms, s->pid,
						 tep_data_comm_from_pid(sc->he.tep, s->pid));
	struct vm *from;

	if (s->tid <= 0 || s->tid == s->pid)
		return into;
	from = vm_table_tgid_at(sc->vms, s->tid, ts) == s->tid ?
	       vm_table_find_process(sc->vms, s->tid) : NULL;
	vm_table_pin_thread(sc->vms, s->tid, s->pid, ts);
	if (from && from != into)
		vm_table_absorb(sc->vms, into, from);
	return into;
}

/*
 * KVM's state when record-host.sh started: the values before the vCPU's
 * first TSC event, or, after one, what the events already say.
 */
static bool apply_snapshot(struct scan *sc, const struct host_ev *ev)
{
	struct snapshot_vcpu s;
	struct vcpu *v;

	switch (snapshot_parse(ev->text, &s, &sc->host->snapshot_khz)) {
	case SNAPSHOT_VCPU:
		break;
	case SNAPSHOT_UNSCALED:
		sc->host->mult_untold = false;
		return true;
	case SNAPSHOT_BAD:
		fprintf(stderr, "%s: the snapshot line at host TSC %llu does not parse: '%s'\n",
			sc->path, (unsigned long long)ev->ts, ev->text);
		sc->damaged = true;
		return false;
	default:
		return true;
	}
	v = vm_get_vcpu(snapshot_vm(sc, &s, ev->ts), s.vcpu_id);
	if (s.tid > 0 && v->tid < 0)
		v->tid = s.tid;
	if (!v->offset_known) {
		backfill_offset(v, s.offset);
		v->offset_from_snapshot = true;
	} else if (v->offset != s.offset) {
		warn_snapshot(sc, v, "offset", s.offset, v->offset, ev->ts);
	}
	/* KVM gives every vCPU the scaling files or none: none, no scaling. */
	if (!s.has_mult) {
		sc->host->mult_untold = false;
		return true;
	}
	if (!v->mult_known) {
		backfill_mult(v, s.mult, s.frac);
		v->mult_from_snapshot = true;
	} else if (v->mult != s.mult) {
		warn_snapshot(sc, v, "multiplier", s.mult, v->mult, ev->ts);
	}
	return true;
}

/*
 * KVM writes the multiplier from 0 only when it creates a vCPU: a second
 * creation of an id the process already has starts another VM.
 */
static struct vm *vm_for_multiplier(struct scan *sc, struct vm *vm,
				    const struct host_ev *ev)
{
	if (ev->prev || !vm_find_vcpu(vm, ev->vcpu_id))
		return vm;
	return vm_table_new_generation(sc->vms, vm, ev->ts);
}

/* What each KVM event, HOST_OFFSET to HOST_EXIT, does to its vCPU. */
static void (*const apply[NR_KVM_KINDS])(struct scan *sc, struct vcpu *v,
					 const struct host_ev *ev) = {
	[HOST_OFFSET] = apply_offset,
	[HOST_MULT] = apply_mult,
	[HOST_NESTED] = apply_nested,
	[HOST_ENTRY] = apply_entry,
	[HOST_EXIT] = apply_exit,
};

static int scan_record(struct tracecmd_input *handle, struct tep_record *r,
		       int cpu, void *data)
{
	struct scan *sc = data;
	struct host_ev ev;
	struct vm *vm;
	struct vcpu *v;

	if (repeats(sc, r, cpu)) {
		sc->damaged = true;
		return -1;
	}
	sc->events++;
	if (r->ts > sc->last_ts)
		sc->last_ts = r->ts;
	if (r->ts < sc->host->first_ts)
		sc->host->first_ts = r->ts;
	sc->seen[host_event_decode(&sc->he, handle, r, &ev)]++;
	switch (ev.kind) {
	case HOST_OTHER:
		return 0;
	case HOST_NEWTASK:
		vm_table_add_thread(sc->vms, ev.child,
				    ev.thread ? vm_table_tgid_at(sc->vms, ev.pid, ev.ts) : ev.child,
				    ev.ts);
		return 0;
	case HOST_SNAPSHOT:
		return apply_snapshot(sc, &ev) ? 0 : -1;
	default:
		break;
	}
	/* libtracecmd 1.3.1 stops iterating only on a negative return. */
	if (!check_values(sc, &ev))
		return -1;
	vm = host_event_vm(&sc->he, sc->vms, &ev);
	if (ev.kind == HOST_MULT)
		vm = vm_for_multiplier(sc, vm, &ev);
	v = vm_get_vcpu(vm, ev.vcpu_id);
	apply[ev.kind](sc, v, &ev);
	return 0;
}

/* The last step of each list lasts until the end of the trace. */
static void close_steps(struct vm_table *vms, uint64_t end)
{
	unsigned int i, c, l;

	for (i = 0; i < vm_table_count(vms); i++) {
		struct vm *vm = vm_table_get(vms, i);

		for (c = 0; c < vm->nr_vcpus; c++)
			for (l = 0; l < NR_LEVELS; l++)
				if (vm->vcpus[c]->steps[l].nr)
					last_step(&vm->vcpus[c]->steps[l])->end = end;
	}
}

/*
 * The events a vCPU needs that the host trace holds none of, though its
 * formats may: the recording left them out or filtered them. The VMs are
 * found from them, so an error about a VM names them.
 */
static void note_unseen(struct scan *sc)
{
	static const struct { enum host_kind kind; const char *name; } needed[] = {
		{ HOST_OFFSET, TSC_EVENT_SYSTEM ":" TSC_OFFSET_EVENT },
		{ HOST_ENTRY, "kvm:kvm_entry" },
		{ HOST_EXIT, "kvm:kvm_exit" },
		{ HOST_NEWTASK, "task:task_newtask" },
	};
	char names[128] = "";
	size_t i, len = 0;

	for (i = 0; i < ARRAY_SIZE(needed); i++)
		if (!sc->seen[needed[i].kind] && len < sizeof(names))
			len += snprintf(names + len, sizeof(names) - len, "%s%s",
					len ? ", " : "", needed[i].name);
	vm_table_set_unseen(sc->vms, names);
}

int scan_host(struct trace_file *host, struct vm_table *vms, bool progress)
{
	struct scan sc = { .host = host, .vms = vms, .path = host->path };
	int ret;

	if (host_events_init(&sc.he, host))
		return -1;
	host->first_ts = UINT64_MAX;
	host->mult_untold = !sc.he.kvm[HOST_MULT];
	vm_table_add_guest_options(vms, host);
	host_events_warn_missing(&sc.he, host->path);
	progress_start(&sc.progress, progress, "scanning", host->path, host->page_bytes);
	ret = tracecmd_iterate_events_multi(host->buffers, host->nr_buffers, scan_record, &sc);
	progress_finish(&sc.progress, !sc.damaged && ret >= 0);
	free(sc.next_offset);
	free(sc.release);
	note_unseen(&sc);
	if (sc.damaged)
		return -1;
	if (ret < 0) {
		fprintf(stderr, "%s: reading the events failed; the file may be cut short\n",
			host->path);
		return -1;
	}
	close_steps(vms, sc.last_ts + 1);
	vm_table_drop_empty(vms);
	if (sc.unknown_frac)
		fprintf(stderr, "%s: %llu L2 multipliers cannot be used: no kvm_write_tsc_multiplier told their frac_bits\n",
			host->path, (unsigned long long)sc.unknown_frac);
	return 0;
}

/*
 * trace-cmd's kvm time sync samples KVM's debugfs: its first sample of
 * guest CPU @cpu holds -tsc-offset and, for a scaled vCPU, the ratio and
 * its frac bits (1 and 0 for the default ratio), the values when the
 * recording began; a --sync-out copy keeps that sample first (sync.c).
 * They describe a vCPU that no TSC event and no snapshot does; any TSC
 * event still wins.
 */
void vcpu_offset_from_time_shift(struct vcpu *v, const struct guest *g)
{
	const struct td_time_shift *s = g->file.meta.shift;
	const struct td_shift_sample *first;

	if (!s || v->id >= s->nr_cpus || !s->cpus[v->id].nr)
		return;
	first = &s->cpus[v->id].samples[0];
	if (!v->mult_known && first->scaling > 1 && first->fraction > 0 &&
	    first->fraction <= TSC_MAX_FRAC_BITS)
		backfill_mult(v, first->scaling, first->fraction);
	else if (first->scaling == 1)
		v->mult_known = true;	/* the default ratio: the vCPU's 1, 0 */
	if (v->offset_known)
		return;
	backfill_offset(v, -(uint64_t)first->offset);
	fprintf(stderr, "%s: vCPU %u: no TSC event tells its offset before host TSC %llu; taken from trace-cmd's time sync sample (%lld)\n",
		g->file.path, v->id, (unsigned long long)(v->steps[LEVEL_L1].nr > 1 ?
		v->steps[LEVEL_L1].steps[1].start : 0), (long long)v->offset);
}

/*
 * A vCPU no TSC event described cannot have its guest events converted;
 * nor can one whose multiplier nothing told on a host that may scale TSCs:
 * 1.0 would be a guess.
 */
void vcpus_check_known(struct vm *vm, const struct trace_file *host, int *errors)
{
	unsigned int i;

	for (i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = vm->vcpus[i];

		if (!v->offset_known) {
			fprintf(stderr, "%s: nothing tells the TSC offset of vCPU %u of VM @%d.%u: no kvm_write_tsc_offset, no snapshot, no time sync sample. Record it one of three ways: start tools/record-host/record-host.sh before the guest boots; start it while the guest runs (it writes a snapshot of KVM's debugfs); or record with trace-cmd record -A and its kvm time sync\n",
				host->path, v->id, vm->pid, vm->gen);
			(*errors)++;
		} else if (host->mult_untold && !v->mult_known) {
			fprintf(stderr, "%s: nothing tells the TSC multiplier of vCPU %u of VM @%d.%u: this kernel has no kvm_write_tsc_multiplier, and no snapshot or time sync sample names the vCPU. Stop tools/record-host/record-host.sh while the VM still runs (stop writes a snapshot of KVM's debugfs), record with trace-cmd record -A, or load the series' KVM modules (make kvm-modules)\n",
				host->path, v->id, vm->pid, vm->gen);
			(*errors)++;
		}
	}
}
