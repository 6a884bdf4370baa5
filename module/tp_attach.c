// SPDX-License-Identifier: GPL-2.0
/*
 * tp_attach.c: attach probes to tracepoints by name (see tp_attach.h).
 *
 * The tracepoints are found by name, in vmlinux when their subsystem is
 * built in and through the tracepoint module notifier when its module comes
 * and goes, so the prober neither pins the module nor needs it loaded first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/container_of.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "tp_attach.h"

static void attach(struct tp_probes *set, struct tracepoint *tp, const char *owner)
{
	struct tp_probe *p;
	int ret;

	for (p = set->probes; p < set->probes + set->nr; p++) {
		if (p->unwanted || p->tp || strcmp(tp->name, p->name))
			continue;
		ret = tracepoint_probe_register(tp, p->fn, NULL);
		if (ret) {
			if (set->verbose)
				pr_err("no probe on %s:%s in %s: error %d\n",
				       set->system, p->name, owner, ret);
			continue;
		}
		p->tp = tp;
		p->owner = owner;
		if (set->verbose)
			pr_info("attached to %s:%s in %s\n", set->system, p->name, owner);
	}
}

static void detach(struct tp_probes *set, struct tracepoint *tp)
{
	struct tp_probe *p;

	for (p = set->probes; p < set->probes + set->nr; p++) {
		if (p->tp != tp)
			continue;
		tracepoint_probe_unregister(tp, p->fn, NULL);
		if (set->verbose)
			pr_info("detached from %s:%s in %s\n", set->system, p->name, p->owner);
		p->tp = NULL;
		p->owner = NULL;
	}
}

static void attach_builtin(struct tracepoint *tp, void *set)
{
	attach(set, tp, "vmlinux");
}

/*
 * A module's tracepoints as it comes and goes. Registering the notifier
 * calls this for every module already loaded, unregistering it again with
 * MODULE_STATE_GOING, which detaches their probes.
 */
static int on_tracepoint_module(struct notifier_block *nb, unsigned long state, void *data)
{
	struct tp_probes *set = container_of(nb, struct tp_probes, nb);
	struct tp_module *tp_mod = data;
	struct module *mod = tp_mod->mod;
	unsigned int i;

	mutex_lock(&set->lock);
	for (i = 0; i < mod->num_tracepoints; i++) {
		struct tracepoint *tp = tracepoint_ptr_deref(&mod->tracepoints_ptrs[i]);

		if (state == MODULE_STATE_COMING)
			attach(set, tp, mod->name);
		else if (state == MODULE_STATE_GOING)
			detach(set, tp);
	}
	mutex_unlock(&set->lock);
	return NOTIFY_OK;
}

static void detach_attached(struct tp_probes *set)
{
	struct tp_probe *p;

	mutex_lock(&set->lock);
	for (p = set->probes; p < set->probes + set->nr; p++)
		if (p->tp)
			detach(set, p->tp);
	mutex_unlock(&set->lock);
}

int tp_attach_all(struct tp_probes *set)
{
	int ret;

	mutex_lock(&set->lock);
	for_each_kernel_tracepoint(attach_builtin, set);
	mutex_unlock(&set->lock);
	set->nb.notifier_call = on_tracepoint_module;
	ret = register_tracepoint_module_notifier(&set->nb);
	if (ret) {
		detach_attached(set);
		tracepoint_synchronize_unregister();
		return ret;
	}
	set->notifier_registered = true;
	return 0;
}

void tp_detach_all(struct tp_probes *set)
{
	if (set->notifier_registered)
		unregister_tracepoint_module_notifier(&set->nb);
	set->notifier_registered = false;
	detach_attached(set);
	/* No probe may still run on what the prober frees next. */
	tracepoint_synchronize_unregister();
}
