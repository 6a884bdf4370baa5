// SPDX-License-Identifier: GPL-2.0
/*
 * test_kvm_tsc_main.c: a kselftest test module that makes KVM write TSC offsets
 * and multipliers from its own init and checks that each write fires
 * exactly the tracepoint event it predicts, value for value.
 *
 * KVM binds a VM to the mm that created it, so everything runs in module
 * init, in the process that loads the module, as kselftest's test modules
 * do: ioctl arguments and guest RAM are user memory of that process
 * (vm_mmap()), the VM and vCPU fds are taken back out of its file table as
 * soon as KVM installs them, and a vCPU's kvm_run page is read through a
 * shared mapping of the vCPU file. The results are KTAP lines in the kernel
 * log, every event the probes saw among them ("# event: " and the event as
 * tracefs prints it), and the load fails unless every check passed.
 *
 * Its names start with ktk_, for kvm-tsc-trace's kernel test, apart from
 * kvm_tsc_probe's ktt_ (see Kbuild).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kvm_host.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <asm/cpufeature.h>
#include <asm/msr-index.h>
#include <asm/tsc.h>

#include "compat.h"
#include "tp_attach.h"
#include "tsc_event_names.h"
#include "tsc_tracepoints.h"

#define KTK_MAX_VCPUS		8
#define KTK_MAX_EVENTS		256
/* KVM_RUNs a guest gets to reach its HLT before the check gives up. */
#define KTK_MAX_EXITS		16
/* Per vCPU: creation, the offset attribute, IA32_TSC, the guest, the rate. */
#define KTK_CHECKS_PER_VCPU	5
/* The probes attached, no nested event, no event outside the steps. */
#define KTK_OTHER_CHECKS	3

/* Where a ioctl's struct goes in the argument page, and a u64 it points to. */
#define KTK_ARG_OFF		0
#define KTK_VALUE_OFF		2048

/*
 * The guest's RAM is the top 64 KiB below 4 GiB, so that a vCPU fresh from
 * reset (CS base 0xffff0000, IP 0xfff0) runs it without any register set.
 */
#define KTK_RAM_GPA		0xffff0000ULL
#define KTK_RAM_SIZE		0x10000UL
#define KTK_CODE_OFF		0xff80
#define KTK_RESET_OFF		0xfff0

static unsigned int nr_vcpus = 3;
module_param(nr_vcpus, uint, 0444);
MODULE_PARM_DESC(nr_vcpus, "vCPUs to create and check, 1 to 8");

static char *fail_step = "";
module_param(fail_step, charp, 0444);
MODULE_PARM_DESC(fail_step,
		 "make vCPU 0's step expect next + 1 (create, offset_attr, tsc_msr, guest_wrmsr)");

static bool guest_no_hlt;
module_param(guest_no_hlt, bool, 0444);
MODULE_PARM_DESC(guest_no_hlt, "the guest loops on OUT instead of reaching HLT");

static bool require_events;
module_param(require_events, bool, 0444);
MODULE_PARM_DESC(require_events, "a TSC tracepoint missing from the kernel fails instead of skips");

static const char * const ktk_fail_steps[] = {
	"create", "offset_attr", "tsc_msr", "guest_wrmsr",
};

enum ktk_kind { KTK_OFFSET, KTK_MULTIPLIER, KTK_NESTED, KTK_NR_KINDS };

struct ktk_event {
	enum ktk_kind kind;
	u32 vcpu_id;
	u64 prev;
	u64 next;
	u64 prev_multiplier;	/* kvm_nested_tsc_offset only */
	u64 multiplier;		/* kvm_nested_tsc_offset only */
	u8 frac_bits;		/* kvm_write_tsc_multiplier only */
	u8 guest_mode;		/* kvm_nested_tsc_offset only */
};

/*
 * What the probes saw, appended in the order KVM fired the events. The
 * probes run inside KVM's raw tsc_write_lock with interrupts off, hence a
 * raw spinlock and no allocation.
 */
static struct {
	raw_spinlock_t lock;
	pid_t tgid;		/* the loading process: the only one recorded */
	unsigned int nr;
	unsigned int lost;
	struct ktk_event ev[KTK_MAX_EVENTS];
} ktk_log = {
	.lock = __RAW_SPIN_LOCK_UNLOCKED(ktk_log.lock),
};

struct ktk_vcpu {
	struct file *file;
	unsigned long run;	/* user address of its kvm_run mapping, or 0 */
};

struct ktk_ctx {
	struct file *kvm;
	struct file *vm;
	struct ktk_vcpu vcpus[KTK_MAX_VCPUS];
	unsigned long args;	/* user page for ioctl arguments, or 0 */
	unsigned long ram;	/* user mapping of the guest's RAM, or 0 */
	long run_size;
	bool has_tsc_control;
	bool attached[KTK_NR_KINDS];
	u8 frac_bits;
	unsigned int test_nr;
	unsigned int failed;
	unsigned int skipped;
	unsigned int cursor;	/* first event of ktk_log no check consumed yet */
};

static void ktk_record(const struct ktk_event *e)
{
	unsigned long flags;

	/* KVM fires these for every VM on the machine: keep the loader's. */
	if (current->tgid != READ_ONCE(ktk_log.tgid))
		return;
	raw_spin_lock_irqsave(&ktk_log.lock, flags);
	if (ktk_log.nr < KTK_MAX_EVENTS)
		ktk_log.ev[ktk_log.nr++] = *e;
	else
		ktk_log.lost++;
	raw_spin_unlock_irqrestore(&ktk_log.lock, flags);
}

static void ktk_probe_offset(void *data, unsigned int vcpu_id, u64 prev, u64 next)
{
	struct ktk_event e = {
		.kind = KTK_OFFSET, .vcpu_id = vcpu_id, .prev = prev, .next = next,
	};

	ktk_record(&e);
}

static void ktk_probe_multiplier(void *data, unsigned int vcpu_id, u64 prev, u64 next,
				 u8 frac_bits)
{
	struct ktk_event e = {
		.kind = KTK_MULTIPLIER, .vcpu_id = vcpu_id, .prev = prev, .next = next,
		.frac_bits = frac_bits,
	};

	ktk_record(&e);
}

/* The event passes the vCPU; its fields are read as its TP_fast_assign does. */
static void ktk_probe_nested(void *data, struct kvm_vcpu *vcpu, u64 prev,
			     u64 prev_multiplier)
{
	struct ktk_event e = {
		.kind = KTK_NESTED, .vcpu_id = vcpu->vcpu_id, .prev = prev,
		.next = vcpu->arch.tsc_offset, .prev_multiplier = prev_multiplier,
		.multiplier = vcpu->arch.tsc_scaling_ratio, .guest_mode = ktt_guest_mode(vcpu),
	};

	ktk_record(&e);
}

static struct tp_probe ktk_probes[KTK_NR_KINDS] = {
	[KTK_OFFSET] = TP_PROBE(TSC_OFFSET_TP, ktk_probe_offset),
	[KTK_MULTIPLIER] = TP_PROBE(TSC_MULTIPLIER_TP, ktk_probe_multiplier),
	[KTK_NESTED] = TP_PROBE(TSC_NESTED_TP, ktk_probe_nested),
};

static const char * const ktk_kind_names[KTK_NR_KINDS] = {
	[KTK_OFFSET] = TSC_OFFSET_EVENT,
	[KTK_MULTIPLIER] = TSC_MULTIPLIER_EVENT,
	[KTK_NESTED] = TSC_NESTED_EVENT,
};

/* Quiet: the kernel log is this module's KTAP output. */
static DEFINE_TP_PROBES(ktk_tp_probes, TSC_EVENT_SYSTEM, ktk_probes, false);

static int ktk_attach_probes(struct ktk_ctx *t)
{
	int kind, ret;

	WRITE_ONCE(ktk_log.tgid, current->tgid);
	ret = tp_attach_all(&ktk_tp_probes);
	if (ret)
		return ret;
	/* The open /dev/kvm pins kvm.ko: what is attached now stays. */
	mutex_lock(&ktk_tp_probes.lock);
	for (kind = 0; kind < KTK_NR_KINDS; kind++)
		t->attached[kind] = ktk_probes[kind].tp;
	mutex_unlock(&ktk_tp_probes.lock);
	return 0;
}

static void ktk_print_event(const char *label, const struct ktk_event *e)
{
	switch (e->kind) {
	case KTK_OFFSET:
		pr_info("# %s: %s: vcpu=%u prev=%llu next=%llu\n",
			label, ktk_kind_names[e->kind], e->vcpu_id, e->prev, e->next);
		break;
	case KTK_MULTIPLIER:
		pr_info("# %s: %s: vcpu=%u prev=%#llx next=%#llx frac_bits=%u\n",
			label, ktk_kind_names[e->kind], e->vcpu_id, e->prev, e->next, e->frac_bits);
		break;
	default:
		pr_info("# %s: %s: vcpu=%u guest_mode=%u prev=%llu next=%llu multiplier %#llx -> %#llx\n",
			label, ktk_kind_names[e->kind], e->vcpu_id, e->guest_mode, e->prev, e->next,
			e->prev_multiplier, e->multiplier);
		break;
	}
}

static bool ktk_events_equal(const struct ktk_event *a, const struct ktk_event *b)
{
	return a->kind == b->kind && a->vcpu_id == b->vcpu_id && a->prev == b->prev &&
	       a->next == b->next && a->prev_multiplier == b->prev_multiplier &&
	       a->multiplier == b->multiplier &&
	       a->frac_bits == b->frac_bits && a->guest_mode == b->guest_mode;
}

/*
 * Consumes the events since the last check and prints them; true if they
 * are exactly @expect, in order. A negative @nr_expect (the step itself
 * failed) expects nothing in particular and returns false.
 */
static bool ktk_take_events(struct ktk_ctx *t, const struct ktk_event *expect, int nr_expect)
{
	unsigned long flags;
	unsigned int nr, i;
	bool match;

	/* Entries below nr never change: only this task appends, in ioctls. */
	raw_spin_lock_irqsave(&ktk_log.lock, flags);
	nr = ktk_log.nr;
	raw_spin_unlock_irqrestore(&ktk_log.lock, flags);
	match = nr_expect >= 0 && nr - t->cursor == nr_expect;
	for (i = t->cursor; i < nr; i++) {
		ktk_print_event("event", &ktk_log.ev[i]);
		if (match && !ktk_events_equal(&ktk_log.ev[i], &expect[i - t->cursor]))
			match = false;
	}
	t->cursor = nr;
	if (match || nr_expect < 0)
		return match;
	if (!nr_expect)
		pr_info("# expected: no event\n");
	for (i = 0; i < nr_expect; i++)
		ktk_print_event("expected", &expect[i]);
	return false;
}

/* One KTAP result line; @skip, when set, is why the check proves less. */
static __printf(4, 5) void ktk_report(struct ktk_ctx *t, bool ok, const char *skip,
				      const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	t->test_nr++;
	if (!ok) {
		t->failed++;
		pr_info("not ok %u %pV\n", t->test_nr, &vaf);
	} else if (skip) {
		t->skipped++;
		pr_info("ok %u %pV # SKIP %s\n", t->test_nr, &vaf, skip);
	} else {
		pr_info("ok %u %pV\n", t->test_nr, &vaf);
	}
	va_end(args);
}

/* fail_step=NAME: vCPU 0's step NAME expects a next off by one. */
static void ktk_spoil(const char *step, u32 vcpu_id, struct ktk_event *expect, int nr)
{
	if (vcpu_id || nr <= 0 || strcmp(fail_step, step))
		return;
	expect[nr - 1].next++;
	pr_info("# fail_step=%s: expecting a wrong next on purpose\n", step);
}

static long ktk_ioctl(struct file *f, unsigned int cmd, unsigned long arg, const char *name)
{
	long ret = vfs_ioctl(f, cmd, arg);

	if (ret < 0 && name)
		pr_info("# %s: error %ld\n", name, ret);
	return ret;
}

/* Passes @size bytes of @arg to the ioctl through the argument page. */
static long ktk_ioctl_in(struct ktk_ctx *t, struct file *f, unsigned int cmd,
			 const void *arg, size_t size, const char *name)
{
	if (copy_to_user((void __user *)(t->args + KTK_ARG_OFF), arg, size))
		return -EFAULT;
	return ktk_ioctl(f, cmd, t->args + KTK_ARG_OFF, name);
}

/* An ioctl that installs an fd in the loader's table: take it back out. */
static struct file *ktk_ioctl_file(struct file *f, unsigned int cmd, unsigned long arg,
				   const char *name)
{
	long fd = ktk_ioctl(f, cmd, arg, name);
	struct file *file;

	if (fd < 0)
		return ERR_PTR(fd);
	/* Hands over the table's reference: fput() it when done. */
	file = file_close_fd(fd);
	return file ?: ERR_PTR(-EBADF);
}

static int ktk_get_offset(struct ktk_ctx *t, u32 id, u64 *offset)
{
	struct kvm_device_attr attr = {
		.group = KVM_VCPU_TSC_CTRL, .attr = KVM_VCPU_TSC_OFFSET,
		.addr = t->args + KTK_VALUE_OFF,
	};
	long ret;

	ret = ktk_ioctl_in(t, t->vcpus[id].file, KVM_GET_DEVICE_ATTR, &attr, sizeof(attr),
			   "KVM_GET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET)");
	if (ret)
		return ret;
	return get_user(*offset, (u64 __user *)(t->args + KTK_VALUE_OFF));
}

static int ktk_set_offset(struct ktk_ctx *t, u32 id, u64 offset)
{
	struct kvm_device_attr attr = {
		.group = KVM_VCPU_TSC_CTRL, .attr = KVM_VCPU_TSC_OFFSET,
		.addr = t->args + KTK_VALUE_OFF,
	};

	if (put_user(offset, (u64 __user *)(t->args + KTK_VALUE_OFF)))
		return -EFAULT;
	return ktk_ioctl_in(t, t->vcpus[id].file, KVM_SET_DEVICE_ATTR, &attr, sizeof(attr),
			    "KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET)");
}

static int ktk_set_tsc_msr(struct ktk_ctx *t, u32 id, u64 value)
{
	DEFINE_RAW_FLEX(struct kvm_msrs, msrs, entries, 1);
	long ret;

	msrs->nmsrs = 1;
	msrs->entries[0].index = MSR_IA32_TSC;
	msrs->entries[0].data = value;
	ret = ktk_ioctl_in(t, t->vcpus[id].file, KVM_SET_MSRS, msrs, struct_size(msrs, entries, 1),
			   "KVM_SET_MSRS(IA32_TSC)");
	/* KVM_SET_MSRS returns how many MSRs it set. */
	if (ret == 1)
		return 0;
	return ret < 0 ? ret : -EIO;
}

/* The guest's CPUID has only leaf 7 and in it TSC_ADJUST, which it writes. */
static int ktk_set_cpuid(struct ktk_ctx *t, u32 id)
{
	DEFINE_RAW_FLEX(struct kvm_cpuid2, cpuid, entries, 1);

	cpuid->nent = 1;
	cpuid->entries[0].function = 7;
	cpuid->entries[0].flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
	cpuid->entries[0].ebx = BIT(X86_FEATURE_TSC_ADJUST & 31);
	return ktk_ioctl_in(t, t->vcpus[id].file, KVM_SET_CPUID2, cpuid,
			    struct_size(cpuid, entries, 1), "KVM_SET_CPUID2");
}

static unsigned long ktk_map(struct file *file, unsigned long size, unsigned long flags)
{
	unsigned long addr = vm_mmap(file, 0, size, PROT_READ | PROT_WRITE, flags, 0);

	if (IS_ERR_VALUE(addr)) {
		pr_info("# vm_mmap of %lu bytes: error %ld\n", size, (long)addr);
		return 0;
	}
	return addr;
}

static void ktk_unmap(unsigned long *addr, unsigned long size)
{
	int ret;

	if (!*addr)
		return;
	ret = vm_munmap(*addr, size);
	if (ret)
		pr_info("# vm_munmap of %lu bytes at %#lx: error %d\n", size, *addr, ret);
	*addr = 0;
}

static int ktk_map_memory(struct ktk_ctx *t)
{
	t->args = ktk_map(NULL, PAGE_SIZE, MAP_PRIVATE | MAP_ANONYMOUS);
	t->ram = ktk_map(NULL, KTK_RAM_SIZE, MAP_PRIVATE | MAP_ANONYMOUS);
	return t->args && t->ram ? 0 : -ENOMEM;
}

/*
 * The reset vector jumps to code that writes @adjust to IA32_TSC_ADJUST
 * and halts (or, with guest_no_hlt, loops on an OUT). 16-bit real mode;
 * a jump's rel8 counts from the next instruction.
 */
static int ktk_write_guest(struct ktk_ctx *t, u64 adjust)
{
	u8 code[] = {
		0x66, 0xb9, 0, 0, 0, 0,		/* mov ecx, MSR_IA32_TSC_ADJUST */
		0x66, 0xb8, 0, 0, 0, 0,		/* mov eax, lower half */
		0x66, 0xba, 0, 0, 0, 0,		/* mov edx, upper half */
		0x0f, 0x30,			/* wrmsr */
		0xf4, 0xeb, 0xfd, 0x90,		/* hlt; jmp hlt */
	};
	u8 reset[] = { 0xeb, (u8)(KTK_CODE_OFF - (KTK_RESET_OFF + 2)) };	/* jmp code */
	void __user *ram = (void __user *)t->ram;

	put_unaligned_le32(MSR_IA32_TSC_ADJUST, &code[2]);
	put_unaligned_le32(lower_32_bits(adjust), &code[8]);
	put_unaligned_le32(upper_32_bits(adjust), &code[14]);
	if (guest_no_hlt) {
		/* out 0x80, al; jmp out: every run ends in KVM_EXIT_IO. */
		memcpy(&code[20], "\xe6\x80\xeb\xfc", 4);
	}
	if (copy_to_user(ram + KTK_CODE_OFF, code, sizeof(code)) ||
	    copy_to_user(ram + KTK_RESET_OFF, reset, sizeof(reset)))
		return -EFAULT;
	return 0;
}

/* Runs vCPU @id until its guest halts, for KTK_MAX_EXITS exits at most. */
static int ktk_run_to_hlt(struct ktk_ctx *t, u32 id)
{
	struct kvm_run __user *run = (struct kvm_run __user *)t->vcpus[id].run;
	u32 reason = KVM_EXIT_UNKNOWN;
	unsigned int exits;
	long ret;

	for (exits = 0; exits < KTK_MAX_EXITS; exits++) {
		ret = ktk_ioctl(t->vcpus[id].file, KVM_RUN, 0, "KVM_RUN");
		if (ret < 0)
			return ret;
		if (get_user(reason, &run->exit_reason))
			return -EFAULT;
		if (reason == KVM_EXIT_HLT)
			return 0;
		/* A guest KVM cannot run goes no further on another try. */
		if (reason == KVM_EXIT_SHUTDOWN || reason == KVM_EXIT_FAIL_ENTRY ||
		    reason == KVM_EXIT_INTERNAL_ERROR)
			break;
	}
	pr_info("# the guest did not reach HLT within %u exits: last exit reason %u\n",
		exits < KTK_MAX_EXITS ? exits + 1 : exits, reason);
	return -ETIMEDOUT;
}

/* Values that differ per vCPU, so that one vCPU's event cannot pass for another's. */
static u64 ktk_attr_offset(u32 id)
{
	return -(u64)(id + 1) * 1000000000000ULL;
}

/* Far from any guest TSC the offset above leaves, and from each other. */
static u64 ktk_msr_tsc(u32 id)
{
	return (u64)(id + 1) * 1000000000000000ULL;
}

static u64 ktk_guest_adjust(u32 id)
{
	return (u64)(id + 1) * 1000000007ULL;
}

/* An offset step: one event from @before to @after; @sane: the step's own claim held. */
static void ktk_check_offset(struct ktk_ctx *t, const char *step, u32 id, int ret,
			     u64 before, u64 after, bool sane, const char *what)
{
	struct ktk_event expect = {
		.kind = KTK_OFFSET, .vcpu_id = id, .prev = before, .next = after,
	};
	bool ok;

	ktk_spoil(step, id, &expect, 1);
	ok = ktk_take_events(t, &expect, ret ? -1 : 1);
	ktk_report(t, ok && !ret && sane, NULL, "vcpu %u: %s", id, what);
}

/* vCPU @id's offset read before and after @act, which should move it. */
static int ktk_offset_around(struct ktk_ctx *t, u32 id, int (*act)(struct ktk_ctx *t, u32 id),
			     u64 *before, u64 *after)
{
	int ret = ktk_get_offset(t, id, before);

	if (!ret)
		ret = act(t, id);
	if (!ret)
		ret = ktk_get_offset(t, id, after);
	return ret;
}

static int ktk_write_attr_offset(struct ktk_ctx *t, u32 id)
{
	return ktk_set_offset(t, id, ktk_attr_offset(id));
}

static void ktk_step_offset_attr(struct ktk_ctx *t, u32 id)
{
	u64 value = ktk_attr_offset(id), before = 0, after = 0;
	int ret = ktk_offset_around(t, id, ktk_write_attr_offset, &before, &after);
	bool sane = after == value;

	if (!ret && !sane)
		pr_info("# the attribute reads %llu after %llu was written\n", after, value);
	ktk_check_offset(t, "offset_attr", id, ret, before, after, sane,
			 "KVM_SET_DEVICE_ATTR(KVM_VCPU_TSC_OFFSET) writes the offset it is given");
}

static int ktk_write_tsc_msr(struct ktk_ctx *t, u32 id)
{
	return ktk_set_tsc_msr(t, id, ktk_msr_tsc(id));
}

static void ktk_step_tsc_msr(struct ktk_ctx *t, u32 id)
{
	u64 before = 0, after = 0;
	int ret = ktk_offset_around(t, id, ktk_write_tsc_msr, &before, &after);
	bool sane = after != before;

	if (!ret && !sane)
		pr_info("# the offset stayed %llu: KVM took the write for a TSC sync\n", after);
	ktk_check_offset(t, "tsc_msr", id, ret, before, after, sane,
			 "KVM_SET_MSRS(IA32_TSC) moves the offset");
}

static void ktk_step_guest_wrmsr(struct ktk_ctx *t, u32 id)
{
	u64 adjust = ktk_guest_adjust(id), before = 0, after = 0;
	bool sane;
	int ret;

	ret = ktk_write_guest(t, adjust);
	if (!ret)
		ret = ktk_offset_around(t, id, ktk_run_to_hlt, &before, &after);
	/* IA32_TSC_ADJUST starts at 0: the offset moves by what the guest wrote. */
	sane = after - before == adjust;
	if (!ret && !sane)
		pr_info("# the offset moved by %lld, the guest wrote %llu\n",
			(s64)(after - before), adjust);
	ktk_check_offset(t, "guest_wrmsr", id, ret, before, after, sane,
			 "the guest's WRMSR(IA32_TSC_ADJUST) moves the offset by its value");
}

/* Where KVM cannot scale, KVM_SET_TSC_KHZ below the host's rate is -EINVAL. */
static void ktk_step_tsc_khz(struct ktk_ctx *t, u32 id)
{
	u32 khz = tsc_khz / 4 * 3;
	u64 unscaled = 1ULL << t->frac_bits;
	struct ktk_event expect = {
		.kind = KTK_MULTIPLIER, .vcpu_id = id, .prev = unscaled,
		.frac_bits = t->frac_bits,
	};
	const char *what = "KVM_SET_TSC_KHZ 25% below the host's writes the exact ratio";
	long ret;
	bool ok;

	if (!khz) {
		ktk_take_events(t, NULL, -1);
		ktk_report(t, false, NULL, "vcpu %u: %s: the host's tsc_khz is 0", id, what);
		return;
	}
	/* set_tsc_khz()'s ratio, computed the same way. */
	expect.next = mul_u64_u32_div(unscaled, khz, tsc_khz);
	pr_info("# KVM_SET_TSC_KHZ %u, the host's tsc_khz %u\n", khz, tsc_khz);
	ret = ktk_ioctl(t->vcpus[id].file, KVM_SET_TSC_KHZ, khz, NULL);
	if (!t->attached[KTK_MULTIPLIER]) {
		ktk_take_events(t, NULL, -1);
		ktk_report(t, !require_events, TSC_MULTIPLIER_EVENT " is not in this kernel",
			   "vcpu %u: %s", id, what);
	} else if (!t->has_tsc_control) {
		ok = ktk_take_events(t, NULL, 0) && ret == -EINVAL;
		if (ret != -EINVAL)
			pr_info("# KVM_SET_TSC_KHZ returned %ld without TSC scaling\n", ret);
		ktk_report(t, ok, "no TSC scaling (KVM_CAP_TSC_CONTROL is 0): -EINVAL, no event",
			   "vcpu %u: %s", id, what);
	} else {
		ok = ktk_take_events(t, &expect, 1) && !ret;
		if (ret)
			pr_info("# KVM_SET_TSC_KHZ: error %ld\n", ret);
		ktk_report(t, ok, NULL, "vcpu %u: %s", id, what);
	}
}

/* Creation writes the default multiplier, then the first offset, both from 0. */
static void ktk_check_creation(struct ktk_ctx *t, u32 id, int ret, u64 offset)
{
	struct ktk_event expect[2] = {
		{ .kind = KTK_MULTIPLIER, .vcpu_id = id, .next = 1ULL << t->frac_bits,
		  .frac_bits = t->frac_bits },
		{ .kind = KTK_OFFSET, .vcpu_id = id, .next = offset },
	};
	/* Without the multiplier's tracepoint only the offset is expected. */
	struct ktk_event *first = t->attached[KTK_MULTIPLIER] ? expect : expect + 1;
	int nr = expect + 2 - first;
	bool ok;

	ktk_spoil("create", id, first, nr);
	ok = ktk_take_events(t, first, ret ? -1 : nr);
	if (nr == 2)
		ktk_report(t, ok && !ret, NULL,
			   "vcpu %u: KVM_CREATE_VCPU writes the multiplier 0 -> 1 << %u and the offset 0 -> its value",
			   id, t->frac_bits);
	else
		ktk_report(t, ok && !ret, NULL,
			   "vcpu %u: KVM_CREATE_VCPU writes the offset 0 -> its value", id);
}

static int ktk_create_vcpu(struct ktk_ctx *t, u32 id)
{
	struct ktk_vcpu *vc = &t->vcpus[id];
	u64 offset = 0;
	int ret;

	vc->file = ktk_ioctl_file(t->vm, KVM_CREATE_VCPU, id, "KVM_CREATE_VCPU");
	ret = PTR_ERR_OR_ZERO(vc->file);
	if (ret)
		vc->file = NULL;
	if (!ret)
		ret = ktk_get_offset(t, id, &offset);
	ktk_check_creation(t, id, ret, offset);
	if (ret)
		return ret;
	/* The shared mapping holds its own reference to the vCPU file. */
	vc->run = ktk_map(vc->file, t->run_size, MAP_SHARED);
	if (!vc->run)
		return -ENOMEM;
	return ktk_set_cpuid(t, id);
}

static int ktk_create_vm(struct ktk_ctx *t)
{
	struct kvm_userspace_memory_region region = {
		.guest_phys_addr = KTK_RAM_GPA, .memory_size = KTK_RAM_SIZE,
		.userspace_addr = t->ram,
	};
	struct file *vm;

	vm = ktk_ioctl_file(t->kvm, KVM_CREATE_VM, KVM_X86_DEFAULT_VM, "KVM_CREATE_VM");
	if (IS_ERR(vm))
		return PTR_ERR(vm);
	t->vm = vm;
	return ktk_ioctl_in(t, vm, KVM_SET_USER_MEMORY_REGION, &region, sizeof(region),
			    "KVM_SET_USER_MEMORY_REGION");
}

/* The first check: which of the three TSC tracepoints the probes are on. */
static int ktk_report_attached(struct ktk_ctx *t)
{
	const char *skip = NULL;
	int kind;

	for (kind = 0; kind < KTK_NR_KINDS; kind++) {
		pr_info("# %s: %s\n", ktk_kind_names[kind],
			t->attached[kind] ? "attached" : "not in this kernel");
		if (!t->attached[kind])
			skip = "a TSC tracepoint is not in this kernel: its checks skip";
	}
	ktk_report(t, t->attached[KTK_OFFSET] && !(skip && require_events), skip,
		   "probes attached to the TSC tracepoints");
	return t->attached[KTK_OFFSET] ? 0 : -ENOENT;
}

/* No L2 runs here, so KVM must fire no kvm_nested_tsc_offset at all. */
static void ktk_check_no_nested(struct ktk_ctx *t)
{
	unsigned int i, nested = 0;

	for (i = 0; i < t->cursor; i++)
		nested += ktk_log.ev[i].kind == KTK_NESTED;
	if (!t->attached[KTK_NESTED]) {
		ktk_report(t, !require_events, TSC_NESTED_EVENT " is not in this kernel",
			   "no " TSC_NESTED_EVENT " without L2");
		return;
	}
	if (nested)
		pr_info("# %u " TSC_NESTED_EVENT " events\n", nested);
	ktk_report(t, !nested, NULL, "no " TSC_NESTED_EVENT " without L2");
}

static void ktk_check_no_stray(struct ktk_ctx *t)
{
	bool ok = ktk_take_events(t, NULL, 0);

	if (ktk_log.lost)
		pr_info("# %u events lost: more than %u\n", ktk_log.lost, KTK_MAX_EVENTS);
	ktk_report(t, ok && !ktk_log.lost, NULL, "no event outside the steps, none lost");
}

static void ktk_run_steps(struct ktk_ctx *t)
{
	u32 id;

	for (id = 0; id < nr_vcpus; id++) {
		ktk_step_offset_attr(t, id);
		ktk_step_tsc_msr(t, id);
		ktk_step_guest_wrmsr(t, id);
		ktk_step_tsc_khz(t, id);
	}
	ktk_check_no_nested(t);
	ktk_check_no_stray(t);
}

/*
 * Maps, probes, the VM and its vCPUs, each vCPU's creation a check; up to
 * the first error, whatever was done is ktk_tear_down()'s to undo.
 */
static int ktk_set_up(struct ktk_ctx *t)
{
	static int (* const steps[])(struct ktk_ctx *t) = {
		ktk_map_memory, ktk_attach_probes, ktk_report_attached, ktk_create_vm,
	};
	unsigned int i;
	int ret = 0;
	u32 id;

	for (i = 0; !ret && i < ARRAY_SIZE(steps); i++)
		ret = steps[i](t);
	for (id = 0; !ret && id < nr_vcpus; id++)
		ret = ktk_create_vcpu(t, id);
	return ret;
}

/* Every path: nothing mapped, no file held, no probe left running. */
static void ktk_tear_down(struct ktk_ctx *t)
{
	u32 id;

	/* No probe may still run on ktk_log once this module is gone. */
	tp_detach_all(&ktk_tp_probes);
	for (id = 0; id < KTK_MAX_VCPUS; id++) {
		ktk_unmap(&t->vcpus[id].run, t->run_size);
		if (t->vcpus[id].file)
			fput(t->vcpus[id].file);
	}
	/* The last reference: KVM destroys the VM as the loader returns to user space. */
	if (t->vm)
		fput(t->vm);
	ktk_unmap(&t->ram, KTK_RAM_SIZE);
	ktk_unmap(&t->args, PAGE_SIZE);
	if (t->kvm)
		filp_close(t->kvm, NULL);
}

/* The frac_bits of KVM's multipliers: 48 on VMX, 32 on SVM (the contract). */
static u8 ktk_frac_bits(void)
{
	return boot_cpu_has(X86_FEATURE_VMX) ? 48 : 32;
}

/*
 * Opening /dev/kvm may request_module() KVM: no lock of ours is held. No
 * /dev/kvm, or KVM not loaded, is -ENODEV, which no other path returns.
 */
static int ktk_open_kvm(struct ktk_ctx *t)
{
	struct file *kvm = filp_open("/dev/kvm", O_RDWR, 0);

	if (IS_ERR(kvm)) {
		pr_info("1..0 # SKIP cannot open /dev/kvm (error %ld): no KVM on this machine or KVM not loaded\n",
			PTR_ERR(kvm));
		return -ENODEV;
	}
	t->kvm = kvm;
	t->run_size = ktk_ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0, "KVM_GET_VCPU_MMAP_SIZE");
	if (t->run_size <= 0) {
		pr_info("1..0 # SKIP /dev/kvm gives no kvm_run size: not a KVM device\n");
		return -ENODEV;
	}
	t->has_tsc_control = ktk_ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_TSC_CONTROL, NULL) > 0;
	t->frac_bits = ktk_frac_bits();
	return 0;
}

static int ktk_check_params(void)
{
	unsigned int i;

	if (!nr_vcpus || nr_vcpus > KTK_MAX_VCPUS) {
		pr_err("nr_vcpus=%u: 1 to %u\n", nr_vcpus, KTK_MAX_VCPUS);
		return -EINVAL;
	}
	if (!*fail_step)
		return 0;
	for (i = 0; i < ARRAY_SIZE(ktk_fail_steps); i++)
		if (!strcmp(fail_step, ktk_fail_steps[i]))
			return 0;
	pr_err("fail_step=%s: not a step that expects an event\n", fail_step);
	return -EINVAL;
}

/* Like kselftest_module.h's kstm_report(): -EINVAL unless every check passed. */
static int ktk_finish(struct ktk_ctx *t, int ret)
{
	/* -ENODEV stays the skip's: a failed setup is an error, not a skip. */
	if (ret == -ENODEV)
		ret = -EIO;
	if (ret)
		pr_info("Bail out! setup failed with error %d\n", ret);
	pr_info("# Totals: pass:%u fail:%u xfail:0 xpass:0 skip:%u error:%u\n",
		t->test_nr - t->failed - t->skipped, t->failed, t->skipped, !!ret);
	if (ret)
		return ret;
	return t->failed || t->test_nr != nr_vcpus * KTK_CHECKS_PER_VCPU + KTK_OTHER_CHECKS ?
	       -EINVAL : 0;
}

static void ktk_reset_log(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&ktk_log.lock, flags);
	ktk_log.nr = 0;
	ktk_log.lost = 0;
	raw_spin_unlock_irqrestore(&ktk_log.lock, flags);
}

static int __init ktk_init(void)
{
	struct ktk_ctx t = { };
	int ret;

	ret = ktk_check_params();
	if (ret)
		return ret;
	ktk_reset_log();
	pr_info("KTAP version 1\n");
	pr_info("# loaded by pid %d\n", task_pid_nr(current));
	ret = ktk_open_kvm(&t);
	if (ret) {
		ktk_tear_down(&t);
		return ret;
	}
	pr_info("1..%u\n", nr_vcpus * KTK_CHECKS_PER_VCPU + KTK_OTHER_CHECKS);
	ret = ktk_set_up(&t);
	if (!ret)
		ktk_run_steps(&t);
	ktk_tear_down(&t);
	return ktk_finish(&t, ret);
}

/* Everything was released in init: nothing is left to undo. */
static void __exit ktk_exit(void)
{
}

module_init(ktk_init);
module_exit(ktk_exit);
MODULE_DESCRIPTION("Test module: KVM's TSC tracepoints fire exactly the predicted events");
MODULE_LICENSE("GPL");
MODULE_INFO(test, "Y");
