// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_module_state_test: with kvm_tsc_probe loaded, the module's state for
 * each vCPU of this process's newest VM equals the last event seen in the
 * instance: L1 offset and, where the kernel has the event, multiplier.
 */
#include "tsc_fixture.h"

#define STATE_FILE	"/sys/kernel/debug/kvm_tsc_probe/state"
#define NR_VCPUS	3

struct module_vcpu {
	bool seen;
	unsigned int vm_seq;
	long long offset;
	unsigned long long multiplier;
};

/* The module's lines for this process's newest VM. */
static void read_module_state(struct __test_metadata *_metadata, struct module_vcpu *vcpus)
{
	unsigned int seq, id, newest = 0;
	unsigned long long multiplier;
	char line[512];
	long long offset;
	int pid, fields;
	FILE *f;

	f = fopen(STATE_FILE, "r");
	ASSERT_NE(NULL, f) TH_LOG("cannot open %s: %s", STATE_FILE, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		fields = sscanf(line, "vm=%d.%u vcpu=%u l1_offset=%lld l1_multiplier=%llu",
				&pid, &seq, &id, &offset, &multiplier);
		ASSERT_EQ(5, fields) TH_LOG("unexpected line in %s: %s", STATE_FILE, line);
		if (pid != getpid() || id >= NR_VCPUS || seq < newest)
			continue;
		if (seq > newest)
			memset(vcpus, 0, NR_VCPUS * sizeof(*vcpus));
		newest = seq;
		vcpus[id] = (struct module_vcpu){ true, seq, offset, multiplier };
	}
	fclose(f);
}

/* Every vCPU is checked, even after another one failed. */
static void check_vcpu(struct __test_metadata *_metadata, unsigned int id,
		       const struct module_vcpu *mv, const struct tsc_event *evs, int nr)
{
	const struct tsc_event *offset = tsc_last_event(evs, nr, TSC_OFFSET, id);
	const struct tsc_event *mult = tsc_last_event(evs, nr, TSC_MULTIPLIER, id);

	EXPECT_TRUE(mv->seen) TH_LOG("vCPU %u: not in the module's state", id);
	EXPECT_NE(NULL, offset) TH_LOG("vCPU %u: no kvm_write_tsc_offset in the instance", id);
	if (!mv->seen || !offset)
		return;
	TSC_EXPECT_EVENT_EQ(TSC_RULE_STATE_IS_LAST_NEXT, offset->next, (uint64_t)mv->offset,
			    "vCPU %u: the module's L1 offset against the last next_tsc_offset", id);
	if (mult)
		TSC_EXPECT_EVENT_EQ(TSC_RULE_STATE_IS_LAST_NEXT, mult->next, mv->multiplier,
				    "vCPU %u: the module's multiplier against the last next_tsc_multiplier",
				    id);
}

TEST_F(tsc, module_state_is_last_event)
{
	struct module_vcpu vcpus[NR_VCPUS] = { 0 };
	struct tsc_event evs[TSC_MAX_EVENTS];
	int i, nr;

	if (access(STATE_FILE, R_OK))
		SKIP(return, "the kvm_tsc_probe module is not loaded (%s)", STATE_FILE);
	tsc_create_vm(_metadata, self, NR_VCPUS);
	for (i = 0; i < NR_VCPUS; i++)
		vcpu_set_msr(self->vcpus[i], MSR_IA32_TSC, (i + 1ULL) << 42);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	read_module_state(_metadata, vcpus);
	for (i = 0; i < NR_VCPUS; i++)
		check_vcpu(_metadata, i, &vcpus[i], evs, nr);
}

TEST_HARNESS_MAIN
