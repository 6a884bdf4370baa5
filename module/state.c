// SPDX-License-Identifier: GPL-2.0
/*
 * state.c: per-VM, per-vCPU TSC state rebuilt from the events, and the
 * invariants checked on every event.
 *
 * The table is allocated once, at load, with max_vcpus entries; when it is
 * full the vCPU changed least recently is evicted, so memory stays bounded
 * whatever the VMs do, and nothing refers to KVM's own objects. A VM is
 * named by its VMM's tgid and a number, never reused, that changes when that
 * process creates a vCPU id it already has, which KVM announces by writing
 * the multiplier from 0.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jhash.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>

#include "kvm_tsc_probe.h"
#include "tsc_event_names.h"

#define KTT_MAX_VMMS	64
#define KTT_MAX_VCPUS	65536
#define KTT_LOG_SIZE	16
#define KTT_LOG_LEN	160

/*
 * Whether the vCPU runs L1 or L2 is known from its creation or from a
 * kvm_nested_tsc_offset on; an entry made while L2 runs (the module loaded,
 * reset or the entry evicted then) starts unknown.
 */
enum ktt_mode { MODE_UNKNOWN, MODE_L1, MODE_L2 };

struct ktt_vcpu {
	struct hlist_node hash;
	struct list_head lru;		/* least recently changed first */
	bool used;
	pid_t tgid;
	u32 vm_seq;
	u32 vcpu_id;
	u64 l1_offset;
	u64 l1_multiplier;
	enum ktt_mode mode;
	u64 l2_offset;
	u64 l2_multiplier;
	u64 nr_offset;
	u64 nr_multiplier;
	u64 nr_nested;
	u64 nr_violations;
	u64 changed_ns;
};

/* A VMM process and the sequence number of its newest VM. */
struct ktt_vmm {
	pid_t tgid;
	u32 vm_seq;
	u64 used_ns;
};

enum { EV_OFFSET, EV_MULTIPLIER, EV_NESTED, NR_EVENT_KINDS };

/* Raw: the probes run under KVM's raw tsc_write_lock, even on PREEMPT_RT. */
static DEFINE_RAW_SPINLOCK(ktt_lock);
static struct ktt_vcpu *table;
static struct hlist_head *buckets;
static unsigned int table_size, hash_bits;
static LIST_HEAD(free_list);
static LIST_HEAD(lru_list);
static struct ktt_vmm vmms[KTT_MAX_VMMS];
static u64 nr_events[NR_EVENT_KINDS], nr_violations, nr_evictions;
static u32 last_vm_seq;
static int frac_bits = -1;
static char violation_log[KTT_LOG_SIZE][KTT_LOG_LEN];
static unsigned int log_next;

static struct hlist_head *bucket_of(pid_t tgid, u32 vm_seq, u32 vcpu_id)
{
	return &buckets[jhash_3words(tgid, vm_seq, vcpu_id, 0) & ((1U << hash_bits) - 1)];
}

static struct ktt_vcpu *find_vcpu(pid_t tgid, u32 vm_seq, u32 vcpu_id)
{
	struct ktt_vcpu *v;

	hlist_for_each_entry(v, bucket_of(tgid, vm_seq, vcpu_id), hash)
		if (v->tgid == tgid && v->vm_seq == vm_seq && v->vcpu_id == vcpu_id)
			return v;
	return NULL;
}

/* The VMM's entry; a new process takes a free or the least used slot. */
static struct ktt_vmm *find_vmm(pid_t tgid)
{
	struct ktt_vmm *vmm, *oldest = &vmms[0];

	for (vmm = vmms; vmm < vmms + KTT_MAX_VMMS; vmm++) {
		if (vmm->tgid == tgid)
			return vmm;
		if (vmm->used_ns < oldest->used_ns)
			oldest = vmm;
	}
	oldest->tgid = tgid;
	oldest->vm_seq = ++last_vm_seq;
	return oldest;
}

static struct ktt_vcpu *take_entry(void)
{
	struct ktt_vcpu *v;

	if (!list_empty(&free_list)) {
		v = list_first_entry(&free_list, struct ktt_vcpu, lru);
	} else {
		v = list_first_entry(&lru_list, struct ktt_vcpu, lru);
		hlist_del(&v->hash);
		nr_evictions++;
	}
	list_del(&v->lru);
	return v;
}

static struct ktt_vcpu *get_vcpu(struct ktt_vmm *vmm, u32 vcpu_id)
{
	struct ktt_vcpu *v = find_vcpu(vmm->tgid, vmm->vm_seq, vcpu_id);

	vmm->used_ns = ktime_get_ns();
	if (v)
		return v;
	v = take_entry();
	memset(v, 0, sizeof(*v));
	v->used = true;
	v->tgid = vmm->tgid;
	v->vm_seq = vmm->vm_seq;
	v->vcpu_id = vcpu_id;
	hlist_add_head(&v->hash, bucket_of(v->tgid, v->vm_seq, vcpu_id));
	list_add_tail(&v->lru, &lru_list);
	return v;
}

/*
 * Every event starts here: the entry of vCPU @vcpu_id of @tgid's newest
 * VM, with ktt_lock held until end_event(). KVM writes the multiplier from
 * 0 only when it creates a vCPU: @creating, for an id that the VM already
 * has, means that the process made a new VM.
 */
static struct ktt_vcpu *begin_event(pid_t tgid, u32 vcpu_id, bool creating,
				    unsigned long *flags)
	__acquires(&ktt_lock)
{
	struct ktt_vmm *vmm;
	struct ktt_vcpu *v;

	raw_spin_lock_irqsave(&ktt_lock, *flags);
	vmm = find_vmm(tgid);
	if (creating) {
		v = find_vcpu(tgid, vmm->vm_seq, vcpu_id);
		if (v && v->nr_multiplier)
			vmm->vm_seq = ++last_vm_seq;
	}
	return get_vcpu(vmm, vcpu_id);
}

/* The event of @kind on @v, applied: counted, and @v the most recently changed. */
static void end_event(struct ktt_vcpu *v, int kind, unsigned long flags)
	__releases(&ktt_lock)
{
	nr_events[kind]++;
	v->changed_ns = ktime_get_ns();
	list_move_tail(&v->lru, &lru_list);
	raw_spin_unlock_irqrestore(&ktt_lock, flags);
}

static void report(struct ktt_vcpu *v, const char *what, u64 expected, u64 seen)
{
	char *line = violation_log[log_next++ % KTT_LOG_SIZE];

	nr_violations++;
	v->nr_violations++;
	snprintf(line, KTT_LOG_LEN, "VM %d.%u vCPU %u: %s: expected %llu, seen %llu",
		 v->tgid, v->vm_seq, v->vcpu_id, what, expected, seen);
	pr_warn_ratelimited("%s\n", line);
}

static void check_equal(struct ktt_vcpu *v, const char *what, u64 expected, u64 seen)
{
	if (expected != seen)
		report(v, what, expected, seen);
}

void ktt_on_offset(pid_t tgid, u32 vcpu_id, u64 prev, u64 next)
{
	unsigned long flags;
	struct ktt_vcpu *v = begin_event(tgid, vcpu_id, false, &flags);

	if (v->nr_offset)
		check_equal(v, TSC_OFFSET_EVENT " previous", v->l1_offset, prev);
	v->l1_offset = next;
	v->nr_offset++;
	end_event(v, EV_OFFSET, flags);
}

void ktt_on_multiplier(pid_t tgid, u32 vcpu_id, u64 prev, u64 next, u8 bits)
{
	unsigned long flags;
	struct ktt_vcpu *v = begin_event(tgid, vcpu_id, !prev, &flags);

	if (!prev)
		v->mode = MODE_L1;
	if (v->nr_multiplier)
		check_equal(v, TSC_MULTIPLIER_EVENT " previous", v->l1_multiplier, prev);
	if (!next)
		report(v, TSC_MULTIPLIER_EVENT " next (never 0)", 1ULL << bits, next);
	if (frac_bits >= 0)
		check_equal(v, "frac_bits", frac_bits, bits);
	else
		frac_bits = bits;
	v->l1_multiplier = next;
	v->nr_multiplier++;
	end_event(v, EV_MULTIPLIER, flags);
}

/*
 * guest_mode 1 is a nested VM-Enter or a change while L2 runs; guest_mode 0
 * is only possible while L2 runs, and gives L1's offset and multiplier back.
 */
void ktt_on_nested(pid_t tgid, u32 vcpu_id, bool guest_mode, u64 prev, u64 next,
		   u64 prev_multiplier, u64 multiplier)
{
	unsigned long flags;
	struct ktt_vcpu *v = begin_event(tgid, vcpu_id, false, &flags);

	if (v->mode == MODE_L2) {
		check_equal(v, TSC_NESTED_EVENT " previous (L2)", v->l2_offset, prev);
		check_equal(v, TSC_NESTED_EVENT " previous multiplier (L2)",
			    v->l2_multiplier, prev_multiplier);
	} else if (v->mode == MODE_L1) {
		if (v->nr_offset)
			check_equal(v, TSC_NESTED_EVENT " previous (L1)", v->l1_offset, prev);
		if (v->nr_multiplier)
			check_equal(v, TSC_NESTED_EVENT " previous multiplier (L1)",
				    v->l1_multiplier, prev_multiplier);
	}
	if (!guest_mode && v->mode == MODE_L1)
		report(v, TSC_NESTED_EVENT " guest_mode 0 outside L2", 1, 0);
	if (!guest_mode && v->nr_offset)
		check_equal(v, TSC_NESTED_EVENT " next (L1)", v->l1_offset, next);
	if (!guest_mode && v->nr_multiplier)
		check_equal(v, TSC_NESTED_EVENT " multiplier (L1)", v->l1_multiplier,
			    multiplier);
	/* Without a multiplier write (no TSC scaling, rate caught up) it stays 0. */
	if (!multiplier && v->nr_multiplier)
		report(v, TSC_NESTED_EVENT " multiplier (never 0)", v->l1_multiplier, 0);
	v->mode = guest_mode ? MODE_L2 : MODE_L1;
	v->l2_offset = next;
	v->l2_multiplier = multiplier;
	v->nr_nested++;
	end_event(v, EV_NESTED, flags);
}

u64 ktt_violations(void)
{
	return READ_ONCE(nr_violations);
}

/* Caller holds ktt_lock or owns the table. */
static void clear_table(void)
{
	unsigned int i;

	INIT_LIST_HEAD(&free_list);
	INIT_LIST_HEAD(&lru_list);
	for (i = 0; i < (1U << hash_bits); i++)
		INIT_HLIST_HEAD(&buckets[i]);
	for (i = 0; i < table_size; i++)
		list_add_tail(&table[i].lru, &free_list);
	memset(vmms, 0, sizeof(vmms));
	memset(nr_events, 0, sizeof(nr_events));
	for (i = 0; i < table_size; i++)
		table[i].used = false;
	memset(violation_log, 0, sizeof(violation_log));
	nr_violations = 0;
	nr_evictions = 0;
	log_next = 0;
	frac_bits = -1;
}

void ktt_state_reset(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ktt_lock, flags);
	clear_table();
	raw_spin_unlock_irqrestore(&ktt_lock, flags);
}

int ktt_state_init(unsigned int max_vcpus)
{
	if (!max_vcpus || max_vcpus > KTT_MAX_VCPUS) {
		pr_err("max_vcpus=%u: must be 1 to %u\n", max_vcpus, KTT_MAX_VCPUS);
		return -EINVAL;
	}
	table_size = max_vcpus;
	hash_bits = ilog2(roundup_pow_of_two(max_vcpus));
	table = vcalloc(table_size, sizeof(*table));
	buckets = vcalloc(1U << hash_bits, sizeof(*buckets));
	if (!table || !buckets) {
		ktt_state_exit();
		return -ENOMEM;
	}
	clear_table();
	return 0;
}

void ktt_state_exit(void)
{
	vfree(buckets);
	vfree(table);
	buckets = NULL;
	table = NULL;
}

/* One entry at a time: the lock, which KVM's TSC writes wait for, is short. */
void ktt_show_state(struct seq_file *m)
{
	struct ktt_vcpu v;
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < table_size; i++) {
		raw_spin_lock_irqsave(&ktt_lock, flags);
		v = table[i];
		raw_spin_unlock_irqrestore(&ktt_lock, flags);
		if (!v.used)
			continue;
		seq_printf(m, "vm=%d.%u vcpu=%u l1_offset=%lld l1_multiplier=%llu in_l2=%d l2_offset=%lld l2_multiplier=%llu offset_events=%llu multiplier_events=%llu nested_events=%llu violations=%llu changed_ns=%llu\n",
			   v.tgid, v.vm_seq, v.vcpu_id, (s64)v.l1_offset, v.l1_multiplier,
			   v.mode == MODE_L2, (s64)v.l2_offset, v.l2_multiplier, v.nr_offset,
			   v.nr_multiplier, v.nr_nested, v.nr_violations, v.changed_ns);
	}
}

void ktt_show_counters(struct seq_file *m)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ktt_lock, flags);
	seq_printf(m, "%s %llu\n%s %llu\n%s %llu\nviolations %llu\nevictions %llu\ntable_size %u\ntable_bytes %zu\n",
		   TSC_OFFSET_EVENT, nr_events[EV_OFFSET], TSC_MULTIPLIER_EVENT,
		   nr_events[EV_MULTIPLIER], TSC_NESTED_EVENT, nr_events[EV_NESTED],
		   nr_violations, nr_evictions, table_size,
		   table_size * sizeof(*table) + (sizeof(*buckets) << hash_bits));
	raw_spin_unlock_irqrestore(&ktt_lock, flags);
}

void ktt_show_violations(struct seq_file *m)
{
	unsigned int i, first;
	unsigned long flags;

	raw_spin_lock_irqsave(&ktt_lock, flags);
	first = log_next > KTT_LOG_SIZE ? log_next - KTT_LOG_SIZE : 0;
	for (i = first; i < log_next; i++)
		seq_printf(m, "%s\n", violation_log[i % KTT_LOG_SIZE]);
	raw_spin_unlock_irqrestore(&ktt_lock, flags);
}
