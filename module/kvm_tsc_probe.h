/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm_tsc_probe.h: what the parts of the module share: the event handlers
 * that keep per-vCPU TSC state and check its invariants, and the views of
 * that state for debugfs. Its names start with ktt_, for kvm-tsc-trace
 * (the prefixes are explained in Kbuild).
 */
#ifndef KVM_TSC_PROBE_H
#define KVM_TSC_PROBE_H

#include <linux/seq_file.h>
#include <linux/types.h>

/* Event handlers; @tgid is the VMM process the event came from. */
void ktt_on_offset(pid_t tgid, u32 vcpu_id, u64 prev, u64 next);
void ktt_on_multiplier(pid_t tgid, u32 vcpu_id, u64 prev, u64 next, u8 frac_bits);
void ktt_on_nested(pid_t tgid, u32 vcpu_id, bool guest_mode, u64 prev, u64 next,
		   u64 prev_multiplier, u64 multiplier);

int ktt_state_init(unsigned int max_vcpus);
void ktt_state_exit(void);
void ktt_state_reset(void);
u64 ktt_violations(void);

void ktt_show_state(struct seq_file *m);
void ktt_show_counters(struct seq_file *m);
void ktt_show_violations(struct seq_file *m);
void ktt_show_attached(struct seq_file *m);

int ktt_debugfs_init(void);
void ktt_debugfs_exit(void);

int ktt_selftest(void);
void ktt_show_selftest(struct seq_file *m);

#endif
