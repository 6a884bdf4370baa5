// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c: kvm_tsc_probe's entry points: attach probes to KVM's TSC
 * tracepoints and hand each event to the state tracker.
 *
 * The tracepoints are found by name, in vmlinux when KVM is built in and
 * through the tracepoint module notifier when kvm.ko comes and goes, so the
 * module neither pins kvm.ko nor needs it loaded first. Including KVM's own
 * trace.h makes the compiler check each probe against the tracepoint's
 * prototype.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kvm_host.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include <../arch/x86/kvm/kvm_cache_regs.h>
#include <../arch/x86/kvm/trace.h>

#include "kvm_tsc_probe.h"

static unsigned int max_vcpus = 256;
module_param(max_vcpus, uint, 0444);
MODULE_PARM_DESC(max_vcpus, "vCPUs tracked at most (1-65536); the least recently changed is evicted beyond");

static char *events = "kvm_write_tsc_offset,kvm_write_tsc_multiplier,kvm_nested_tsc_offset";
module_param(events, charp, 0444);
MODULE_PARM_DESC(events, "comma-separated TSC tracepoints to attach (the multiplier's always is)");

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest, "check the validator on a known inconsistent sequence at load");

static void probe_offset(void *data, unsigned int vcpu_id, __u64 prev, __u64 next)
{
	ktt_on_offset(current->tgid, vcpu_id, prev, next);
}

#ifdef KTT_HAVE_TSC_MULTIPLIER
static void probe_multiplier(void *data, unsigned int vcpu_id, u64 prev, u64 next, u8 frac_bits)
{
	ktt_on_multiplier(current->tgid, vcpu_id, prev, next, frac_bits);
}
#endif

#ifdef KTT_HAVE_NESTED_TSC_OFFSET
/* The event passes the vCPU; its fields are read as its TP_fast_assign does. */
static void probe_nested(void *data, struct kvm_vcpu *vcpu, u64 prev,
			 u64 prev_multiplier)
{
	ktt_on_nested(current->tgid, vcpu->vcpu_id, is_guest_mode(vcpu), prev,
		      vcpu->arch.tsc_offset, prev_multiplier,
		      vcpu->arch.tsc_scaling_ratio);
}
#endif

struct ktt_probe {
	const char *name;
	void *fn;
	bool wanted;
	struct tracepoint *tp;	/* attached to, or NULL */
	const char *owner;	/* "vmlinux" or the module's name */
};

static struct ktt_probe probes[] = {
	{ .name = "kvm_write_tsc_offset", .fn = probe_offset },
#ifdef KTT_HAVE_TSC_MULTIPLIER
	{ .name = "kvm_write_tsc_multiplier", .fn = probe_multiplier },
#endif
#ifdef KTT_HAVE_NESTED_TSC_OFFSET
	{ .name = "kvm_nested_tsc_offset", .fn = probe_nested },
#endif
};

/* Serializes attaching and detaching, from init, exit and the notifier. */
static DEFINE_MUTEX(probes_lock);

/* Compile-time only: a probe that does not match its tracepoint fails here. */
static void __maybe_unused check_probe_prototypes(void)
{
	check_trace_callback_type_kvm_write_tsc_offset(probe_offset);
#ifdef KTT_HAVE_TSC_MULTIPLIER
	check_trace_callback_type_kvm_write_tsc_multiplier(probe_multiplier);
#endif
#ifdef KTT_HAVE_NESTED_TSC_OFFSET
	check_trace_callback_type_kvm_nested_tsc_offset(probe_nested);
#endif
}

static void attach(struct tracepoint *tp, const char *owner)
{
	struct ktt_probe *p;
	int ret;

	for (p = probes; p < probes + ARRAY_SIZE(probes); p++) {
		if (!p->wanted || p->tp || strcmp(tp->name, p->name))
			continue;
		ret = tracepoint_probe_register(tp, p->fn, NULL);
		if (ret) {
			pr_err("no probe on kvm:%s in %s: error %d\n", p->name, owner, ret);
			continue;
		}
		p->tp = tp;
		p->owner = owner;
		pr_info("attached to kvm:%s in %s\n", p->name, owner);
	}
}

static void detach(struct tracepoint *tp)
{
	struct ktt_probe *p;

	for (p = probes; p < probes + ARRAY_SIZE(probes); p++) {
		if (p->tp != tp)
			continue;
		tracepoint_probe_unregister(tp, p->fn, NULL);
		pr_info("detached from kvm:%s in %s\n", p->name, p->owner);
		p->tp = NULL;
		p->owner = NULL;
	}
}

static void attach_builtin(struct tracepoint *tp, void *priv)
{
	attach(tp, "vmlinux");
}

static int on_tracepoint_module(struct notifier_block *nb, unsigned long state, void *data)
{
	struct tp_module *tp_mod = data;
	struct module *mod = tp_mod->mod;
	unsigned int i;

	mutex_lock(&probes_lock);
	for (i = 0; i < mod->num_tracepoints; i++) {
		struct tracepoint *tp = tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);

		if (state == MODULE_STATE_COMING)
			attach(tp, mod->name);
		else if (state == MODULE_STATE_GOING)
			detach(tp);
	}
	mutex_unlock(&probes_lock);
	return NOTIFY_OK;
}

static struct notifier_block tracepoint_nb = {
	.notifier_call = on_tracepoint_module,
};

static void select_probes(void)
{
	struct ktt_probe *p;

	for (p = probes; p < probes + ARRAY_SIZE(probes); p++) {
		p->wanted = !!strstr(events, p->name);
		/* The multiplier's write from 0 is how VMs of a process are told apart. */
		if (!p->wanted && !strcmp(p->name, "kvm_write_tsc_multiplier")) {
			pr_info("kvm:%s attached anyway: it marks vCPU creation\n", p->name);
			p->wanted = true;
		}
		if (!p->wanted)
			pr_info("kvm:%s not wanted (events=%s)\n", p->name, events);
	}
}

static void detach_all(void)
{
	struct ktt_probe *p;

	mutex_lock(&probes_lock);
	for (p = probes; p < probes + ARRAY_SIZE(probes); p++)
		if (p->tp)
			detach(p->tp);
	mutex_unlock(&probes_lock);
}

void ktt_show_attached(struct seq_file *m)
{
	struct ktt_probe *p;

	mutex_lock(&probes_lock);
	for (p = probes; p < probes + ARRAY_SIZE(probes); p++)
		seq_printf(m, "%s %s\n", p->name,
			   p->tp ? p->owner : p->wanted ? "waiting" : "not wanted");
	mutex_unlock(&probes_lock);
}

static int __init ktt_init(void)
{
	int ret;

	ret = ktt_state_init(max_vcpus);
	if (ret)
		return ret;
	if (selftest) {
		ret = ktt_selftest();
		if (ret)
			goto out_state;
	}
	ret = ktt_debugfs_init();
	if (ret)
		goto out_state;
	select_probes();
	mutex_lock(&probes_lock);
	for_each_kernel_tracepoint(attach_builtin, NULL);
	mutex_unlock(&probes_lock);
	/* Also calls on_tracepoint_module() for every module already loaded. */
	ret = register_tracepoint_module_notifier(&tracepoint_nb);
	if (ret)
		goto out_detach;
	return 0;

out_detach:
	detach_all();
	tracepoint_synchronize_unregister();
	ktt_debugfs_exit();
out_state:
	ktt_state_exit();
	return ret;
}

static void __exit ktt_exit(void)
{
	unregister_tracepoint_module_notifier(&tracepoint_nb);
	detach_all();
	/* No probe may still run on the state freed below. */
	tracepoint_synchronize_unregister();
	ktt_debugfs_exit();
	ktt_state_exit();
}

module_init(ktt_init);
module_exit(ktt_exit);
MODULE_DESCRIPTION("Probe and validator of KVM's TSC tracepoints");
MODULE_LICENSE("GPL");
