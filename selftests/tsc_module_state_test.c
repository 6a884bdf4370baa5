// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_module_state_test: with kvm_tsc_probe loaded, the module's state for
 * each vCPU of this process's newest VM equals the last event seen in the
 * instance: L1 offset and, where the kernel has the event, multiplier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

#define STATE_FILE	"/sys/kernel/debug/kvm_tsc_probe/state"
#define NR_VCPUS	3

struct module_vcpu {
	bool seen;
	unsigned int vm_seq;
	long long offset;
	unsigned long long multiplier;
};

/* The module's lines for this process's newest VM. */
static void read_module_state(struct module_vcpu *vcpus)
{
	unsigned int seq, id, newest = 0;
	unsigned long long multiplier;
	char line[512];
	long long offset;
	FILE *f;
	int pid;

	f = fopen(STATE_FILE, "r");
	if (!f)
		tap_bail_out("cannot open %s", STATE_FILE);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "vm=%d.%u vcpu=%u l1_offset=%lld l1_multiplier=%llu", &pid, &seq,
			   &id, &offset, &multiplier) != 5)
			tap_bail_out("unexpected line in %s: %s", STATE_FILE, line);
		if (pid != getpid() || id >= NR_VCPUS || seq < newest)
			continue;
		if (seq > newest)
			memset(vcpus, 0, NR_VCPUS * sizeof(*vcpus));
		newest = seq;
		vcpus[id] = (struct module_vcpu){ true, seq, offset, multiplier };
	}
	fclose(f);
}

static bool check_vcpu(int id, const struct module_vcpu *mv, const struct tsc_event *evs, int nr)
{
	const struct tsc_event *offset = tsc_last_event(evs, nr, TSC_OFFSET, id);
	const struct tsc_event *mult = tsc_last_event(evs, nr, TSC_MULTIPLIER, id);
	bool ok;

	if (!mv->seen || !offset) {
		tap_diag("vCPU %d: %s", id, mv->seen ? "no event in the instance" : "not in the module's state");
		return false;
	}
	ok = tap_check_u64(offset->next, mv->offset, "vCPU %d: module's L1 offset", id);
	if (mult)
		ok &= tap_check_u64(mult->next, mv->multiplier, "vCPU %d: module's multiplier", id);
	return ok;
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct module_vcpu vcpus[NR_VCPUS] = { 0 };
	struct tracefs_instance *inst;
	int vcpu_fds[NR_VCPUS], vm_fd, i, nr;
	struct tsc_event evs[64];

	trace_require_kvm_event(TSC_OFFSET_EVENT);
	if (access(STATE_FILE, R_OK))
		tap_skip_all("the kvm_tsc_probe module is not loaded (%s)", STATE_FILE);
	inst = trace_instance_create("module-state");
	trace_kvm_event_enable(inst, TSC_OFFSET_EVENT);
	if (trace_kvm_event_exists(TSC_MULTIPLIER_EVENT))
		trace_kvm_event_enable(inst, TSC_MULTIPLIER_EVENT);
	tap_plan(NR_VCPUS);

	vm_fd = vm_create(kvm_fd);
	vm_create_vcpus(vm_fd, NR_VCPUS, vcpu_fds);
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(vcpu_fds[i], MSR_IA32_TSC, (i + 1ULL) << 42);
	nr = trace_read_tsc_events(inst, evs, 64);
	read_module_state(vcpus);
	for (i = 0; i < NR_VCPUS; i++)
		tap_ok(check_vcpu(i, &vcpus[i], evs, nr),
		       "vCPU %d: the module's state is the last event's", i);

	for (i = 0; i < NR_VCPUS; i++)
		close(vcpu_fds[i]);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
