// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs.c: /sys/kernel/debug/kvm_tsc_probe, readable by root only:
 * state (a line per vCPU), counters, violations (the last ones),
 * attached (each tracepoint and where it was found), selftest, and reset
 * (write anything to clear the state and the counters).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>

#include "kvm_tsc_probe.h"

static struct dentry *dir;

#define KTT_SHOW_FILE(name)						\
static int name##_show(struct seq_file *m, void *unused)		\
{									\
	ktt_show_##name(m);						\
	return 0;							\
}									\
DEFINE_SHOW_ATTRIBUTE(name)

KTT_SHOW_FILE(state);
KTT_SHOW_FILE(counters);
KTT_SHOW_FILE(violations);
KTT_SHOW_FILE(attached);
KTT_SHOW_FILE(selftest);

static ssize_t reset_write(struct file *file, const char __user *buf, size_t count,
			   loff_t *ppos)
{
	ktt_state_reset();
	return count;
}

static const struct file_operations reset_fops = {
	.owner = THIS_MODULE,
	.write = reset_write,
	.llseek = noop_llseek,
};

int ktt_debugfs_init(void)
{
	dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(dir))
		return PTR_ERR(dir);
	debugfs_create_file("state", 0400, dir, NULL, &state_fops);
	debugfs_create_file("counters", 0400, dir, NULL, &counters_fops);
	debugfs_create_file("violations", 0400, dir, NULL, &violations_fops);
	debugfs_create_file("attached", 0400, dir, NULL, &attached_fops);
	debugfs_create_file("selftest", 0400, dir, NULL, &selftest_fops);
	debugfs_create_file("reset", 0200, dir, NULL, &reset_fops);
	return 0;
}

void ktt_debugfs_exit(void)
{
	debugfs_remove_recursive(dir);
}
