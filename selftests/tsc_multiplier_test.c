// SPDX-License-Identifier: GPL-2.0
/*
 * tsc_multiplier_test: kvm_write_tsc_multiplier at vCPU creation goes from
 * 0 to the default ratio 1 << frac_bits (48 fractional bits with kvm_intel,
 * 32 with kvm_amd); with TSC scaling, KVM_SET_TSC_KHZ writes the ratio
 * (1 << frac_bits) * guest kHz / host kHz that KVM computes.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "kvm.h"
#include "tap.h"
#include "trace.h"

static unsigned int vendor_frac_bits(void)
{
	if (!access("/sys/module/kvm_intel", F_OK))
		return 48;
	if (!access("/sys/module/kvm_amd", F_OK))
		return 32;
	tap_skip_all("neither kvm_intel nor kvm_amd is loaded");
}

static bool check_creation(const struct tsc_event *ev, unsigned int frac_bits)
{
	bool ok;

	if (!ev) {
		tap_diag("no kvm_write_tsc_multiplier at vCPU creation");
		return false;
	}
	ok = tap_check_u64(frac_bits, ev->frac_bits, "frac_bits");
	ok &= tap_check_u64(0, ev->prev, "previous multiplier");
	ok &= tap_check_u64(1ULL << frac_bits, ev->next, "next multiplier");
	return ok;
}

static bool check_set_tsc_khz(struct tracefs_instance *inst, int vcpu_fd, unsigned int frac_bits)
{
	const struct tsc_event *ev;
	struct tsc_event evs[16];
	uint64_t expected;
	int host_khz, guest_khz, nr;

	host_khz = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);
	if (host_khz <= 0)
		tap_bail_out("KVM_GET_TSC_KHZ: %s", strerror(errno));
	guest_khz = host_khz / 2;
	if (ioctl(vcpu_fd, KVM_SET_TSC_KHZ, guest_khz) < 0) {
		tap_diag("KVM_SET_TSC_KHZ(%d): %s", guest_khz, strerror(errno));
		return false;
	}
	expected = ((unsigned __int128)1 << frac_bits) * guest_khz / host_khz;
	nr = trace_read_tsc_events(inst, evs, 16);
	ev = tsc_last_event(evs, nr, TSC_MULTIPLIER, 0);
	if (!ev) {
		tap_diag("no kvm_write_tsc_multiplier after KVM_SET_TSC_KHZ");
		return false;
	}
	return tap_check_u64(1ULL << frac_bits, ev->prev, "previous multiplier") &
	       tap_check_u64(expected, ev->next, "multiplier for %d kHz on a %d kHz host",
			     guest_khz, host_khz);
}

int main(void)
{
	int kvm_fd = kvm_open_or_skip();
	struct tracefs_instance *inst;
	unsigned int frac_bits;
	struct tsc_event evs[16];
	int vm_fd, vcpu_fd, nr;

	trace_require_kvm_event(TSC_MULTIPLIER_EVENT);
	frac_bits = vendor_frac_bits();
	inst = trace_instance_create("multiplier");
	trace_kvm_event_enable(inst, TSC_MULTIPLIER_EVENT);
	tap_plan(2);

	vm_fd = vm_create(kvm_fd);
	vcpu_fd = vcpu_create(vm_fd, 0);
	nr = trace_read_tsc_events(inst, evs, 16);
	tap_ok(check_creation(tsc_last_event(evs, nr, TSC_MULTIPLIER, 0), frac_bits),
	       "vCPU creation: multiplier 0 -> 1 << %u", frac_bits);
	if (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_CONTROL) <= 0)
		tap_skip("the host has no TSC scaling (KVM_CAP_TSC_CONTROL)",
			 "KVM_SET_TSC_KHZ writes the computed ratio");
	else
		tap_ok(check_set_tsc_khz(inst, vcpu_fd, frac_bits),
		       "KVM_SET_TSC_KHZ writes the computed ratio");

	close(vcpu_fd);
	close(vm_fd);
	trace_instance_remove(inst);
	return tap_finish();
}
