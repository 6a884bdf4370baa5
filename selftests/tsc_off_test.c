// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_off_test: off means off. With kvm_write_tsc_offset disabled in the
 * instance, TSC writes record nothing; and an instance can be removed while
 * a VM that wrote events into it still lives, with KVM carrying on.
 */
#include <limits.h>

#include "tsc_fixture.h"

#define TSC_VALUE 1000000000000ULL

TEST_F(tsc, disabled_event_records_nothing)
{
	struct tsc_event evs[TSC_MAX_EVENTS];
	int ret, nr;

	ret = _trace_disable_event(self->inst, TSC_OFFSET_EVENT);
	ASSERT_EQ(0, ret) TH_LOG("cannot disable kvm:%s: %s", TSC_OFFSET_EVENT, strerror(-ret));
	tsc_create_vm(_metadata, self, 1);
	vcpu_set_msr(self->vcpus[0], MSR_IA32_TSC, TSC_VALUE);
	nr = tsc_read_events(_metadata, self, evs, TSC_MAX_EVENTS);
	TSC_EXPECT_EVENT_EQ(TSC_RULE_ONLY_ENABLING_INSTANCE, 0,
			    tsc_count_events(evs, nr, TSC_OFFSET, 0),
			    "disabled kvm_write_tsc_offset events of vCPU creation and IA32_TSC");
}

TEST_F(tsc, remove_instance_with_live_vm)
{
	char dir[PATH_MAX], *inst_dir;
	int ret;

	inst_dir = tracefs_instance_get_dir(self->inst);
	ASSERT_NE(NULL, inst_dir);
	snprintf(dir, sizeof(dir), "%s", inst_dir);
	tracefs_put_tracing_file(inst_dir);
	tsc_create_vm(_metadata, self, 1);

	ret = _trace_instance_remove(self->inst);
	self->inst = NULL;
	EXPECT_EQ(0, ret) TH_LOG("cannot remove %s: %s", dir, strerror(-ret));
	ret = access(dir, F_OK) ? errno : 0;
	EXPECT_EQ(ENOENT, ret) TH_LOG("%s is still there after its removal", dir);
	ret = _vcpu_set_msr(self->vcpus[0], MSR_IA32_TSC, TSC_VALUE);
	EXPECT_EQ(1, ret) TH_LOG("KVM_SET_MSRS after the removal: %s",
				 ret < 0 ? strerror(errno) : "no MSR set");
}

TEST_HARNESS_MAIN
