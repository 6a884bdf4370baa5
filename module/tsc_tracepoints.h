/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc_tracepoints.h: the prototypes of the KVM tracepoints the modules
 * probe, declared here as lttng-modules declares the tracepoints it probes,
 * so that the modules build against a distribution's headers package, which
 * has no arch/x86/kvm/trace.h. They are the same in every kernel version
 * Kbuild accepts: kvm_write_tsc_offset is upstream's, the other two are the
 * series', and its 6.1 backport keeps them as they are in 6.12.
 *
 * Against a full source tree, Kbuild names each of them that KVM's trace.h
 * declares (KTT_KVM_HAS_<tracepoint>); this header then includes trace.h and
 * checks each such declaration against its own instead of declaring it: a
 * prototype that differs fails the build, naming the tracepoint and the
 * kernel, and no probe is built for it. A tracepoint the tree lacks (a tree
 * without the series) is declared as on a headers-only build, since the
 * series' KVM modules may be loaded in place of the tree's.
 */
#ifndef TSC_TRACEPOINTS_H
#define TSC_TRACEPOINTS_H

#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/kconfig.h>
#include <linux/kvm_host.h>
#include <linux/tracepoint.h>
#include <generated/utsrelease.h>

#include "tsc_event_names.h"

#ifdef KTT_KVM_TRACE_H
#include <../arch/x86/kvm/trace.h>
#endif

/*
 * KTT_TRACEPOINT(tp, proto, args): declare tracepoint @tp, or check trace.h's
 * declaration of it against @proto when Kbuild found one. @tp may be a
 * tsc_event_names.h TSC_*_TP macro: it is expanded before it is pasted.
 */
#define KTT_TRACEPOINT(tp, proto, args) __KTT_TRACEPOINT(tp, PARAMS(proto), PARAMS(args))
#define __KTT_TRACEPOINT(tp, proto, args)					\
	__PASTE(KTT_TRACEPOINT_, __is_defined(KTT_KVM_HAS_##tp))(tp, PARAMS(proto), PARAMS(args))
#define KTT_TRACEPOINT_0(tp, proto, args)					\
	DECLARE_TRACE(tp, PARAMS(proto), PARAMS(args))
/* Only the types are compared: names and TP_ARGS are not part of them. */
#define KTT_TRACEPOINT_1(tp, proto, ...)					\
	static_assert(__same_type(check_trace_callback_type_##tp,		\
				  void (void (*)(void *__data, proto))),	\
		      "tsc_tracepoints.h declares " #tp				\
		      " unlike arch/x86/kvm/trace.h of " UTS_RELEASE)

KTT_TRACEPOINT(TSC_OFFSET_TP,
	       TP_PROTO(unsigned int vcpu_id, __u64 previous_tsc_offset,
			__u64 next_tsc_offset),
	       TP_ARGS(vcpu_id, previous_tsc_offset, next_tsc_offset));

KTT_TRACEPOINT(TSC_MULTIPLIER_TP,
	       TP_PROTO(unsigned int vcpu_id, u64 previous_tsc_multiplier,
			u64 next_tsc_multiplier, u8 frac_bits),
	       TP_ARGS(vcpu_id, previous_tsc_multiplier, next_tsc_multiplier, frac_bits));

KTT_TRACEPOINT(TSC_NESTED_TP,
	       TP_PROTO(struct kvm_vcpu *vcpu, u64 previous_tsc_offset,
			u64 previous_tsc_multiplier),
	       TP_ARGS(vcpu, previous_tsc_offset, previous_tsc_multiplier));

/*
 * Whether @vcpu runs L2, as KVM's is_guest_mode() tells, which is in
 * arch/x86/kvm/kvm_cache_regs.h: not in a headers package either.
 */
static inline bool ktt_guest_mode(struct kvm_vcpu *vcpu)
{
	return vcpu->arch.hflags & HF_GUEST_MASK;
}

#endif
