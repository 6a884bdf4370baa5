// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c: kvm_tsc_probe's entry points: attach probes to KVM's TSC
 * tracepoints and hand each event to the state tracker.
 *
 * tp_attach.c finds the tracepoints by name, in vmlinux when KVM is built in
 * and as kvm.ko comes and goes, so the module neither pins kvm.ko nor needs
 * it loaded first. TP_PROBE() checks each probe against the tracepoint's
 * prototype, as tsc_tracepoints.h declares it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "kvm_tsc_probe.h"
#include "tp_attach.h"
#include "tsc_event_names.h"
#include "tsc_tracepoints.h"

static unsigned int max_vcpus = 256;
module_param(max_vcpus, uint, 0444);
MODULE_PARM_DESC(max_vcpus, "vCPUs tracked at most (1-65536); the least recently changed is evicted beyond");

static char *events = TSC_OFFSET_EVENT "," TSC_MULTIPLIER_EVENT "," TSC_NESTED_EVENT;
module_param(events, charp, 0444);
MODULE_PARM_DESC(events, "comma-separated TSC tracepoints to attach (the multiplier's always is)");

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest, "check the validator on a known inconsistent sequence at load");

static void probe_offset(void *data, unsigned int vcpu_id, __u64 prev, __u64 next)
{
	ktt_on_offset(current->tgid, vcpu_id, prev, next);
}

static void probe_multiplier(void *data, unsigned int vcpu_id, u64 prev, u64 next, u8 frac_bits)
{
	ktt_on_multiplier(current->tgid, vcpu_id, prev, next, frac_bits);
}

/* The event passes the vCPU; its fields are read as its TP_fast_assign does. */
static void probe_nested(void *data, struct kvm_vcpu *vcpu, u64 prev,
			 u64 prev_multiplier)
{
	ktt_on_nested(current->tgid, vcpu->vcpu_id, ktt_guest_mode(vcpu), prev,
		      vcpu->arch.tsc_offset, prev_multiplier,
		      vcpu->arch.tsc_scaling_ratio);
}

static struct tp_probe probes[] = {
	TP_PROBE(TSC_OFFSET_TP, probe_offset),
	TP_PROBE(TSC_MULTIPLIER_TP, probe_multiplier),
	TP_PROBE(TSC_NESTED_TP, probe_nested),
};

static DEFINE_TP_PROBES(kvm_probes, TSC_EVENT_SYSTEM, probes, true);

static void select_probes(void)
{
	struct tp_probe *p;

	for (p = probes; p < probes + ARRAY_SIZE(probes); p++) {
		p->unwanted = !strstr(events, p->name);
		/* The multiplier's write from 0 is how VMs of a process are told apart. */
		if (p->unwanted && !strcmp(p->name, TSC_MULTIPLIER_EVENT)) {
			pr_info(TSC_EVENT_SYSTEM ":%s attached anyway: it marks vCPU creation\n",
				p->name);
			p->unwanted = false;
		}
		if (p->unwanted)
			pr_info(TSC_EVENT_SYSTEM ":%s not wanted (events=%s)\n", p->name, events);
	}
}

void ktt_show_attached(struct seq_file *m)
{
	struct tp_probe *p;

	mutex_lock(&kvm_probes.lock);
	for (p = probes; p < probes + ARRAY_SIZE(probes); p++)
		seq_printf(m, "%s %s\n", p->name,
			   p->tp ? p->owner : p->unwanted ? "not wanted" : "waiting");
	mutex_unlock(&kvm_probes.lock);
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
	ret = tp_attach_all(&kvm_probes);
	if (ret)
		goto out_debugfs;
	return 0;

out_debugfs:
	ktt_debugfs_exit();
out_state:
	ktt_state_exit();
	return ret;
}

static void __exit ktt_exit(void)
{
	/* No probe may still run on the state freed below. */
	tp_detach_all(&kvm_probes);
	ktt_debugfs_exit();
	ktt_state_exit();
}

module_init(ktt_init);
module_exit(ktt_exit);
MODULE_DESCRIPTION("Probe and validator of KVM's TSC tracepoints");
MODULE_LICENSE("GPL");
