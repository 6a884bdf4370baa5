// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_guest.c: a guest that reports its rdtsc through ucall, and the host
 * side that runs it for one value between two host TSC reads.
 */
#include "processor.h"
#include "ucall_common.h"

#include "tsc_guest.h"

void tsc_guest_code(void)
{
	for (;;)
		GUEST_SYNC(rdtsc());
}

/*
 * The guest reads its TSC after the host's first read and exits only after
 * that, so its value lies between the two host reads.
 */
void tsc_guest_read(struct kvm_vcpu *vcpu, struct tsc_sample *sample)
{
	struct ucall uc;

	sample->host_before = rdtsc();
	vcpu_run(vcpu);
	sample->host_after = rdtsc();
	TEST_ASSERT_KVM_EXIT_REASON(vcpu, KVM_EXIT_IO);
	switch (get_ucall(vcpu, &uc)) {
	case UCALL_SYNC:
		sample->guest = uc.args[1];
		break;
	case UCALL_ABORT:
		REPORT_GUEST_ASSERT(uc);
		break;
	default:
		TEST_FAIL("vCPU %u: unexpected ucall %lu", vcpu->id, uc.cmd);
	}
}
