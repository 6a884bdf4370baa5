/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tp_attach.h: attach probes to tracepoints by name, as lttng-modules'
 * probes do, wherever the tracepoints are: in vmlinux, or in a module
 * (kvm.ko) that may load after the prober, come and go, and is never pinned.
 * kvm_tsc_probe and test_kvm_tsc each build tp_attach.c into themselves
 * (see Kbuild).
 *
 * A prober lists its probes with TP_PROBE(), which also has the compiler
 * check each probe against its tracepoint's prototype: the file that does
 * so must include the trace header that declares the tracepoints.
 */
#ifndef TP_ATTACH_H
#define TP_ATTACH_H

#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/types.h>

struct tracepoint;

struct tp_probe {
	const char *name;	/* the tracepoint's */
	void *fn;
	bool unwanted;		/* left unattached, by the prober's choice */
	struct tracepoint *tp;	/* attached to, or NULL */
	const char *owner;	/* "vmlinux" or the module's name, while attached */
};

/*
 * @probe on tracepoint @tpname, named once for both the string attach()
 * looks for and the prototype check, so the two cannot drift apart: the
 * zero added to the name is a build error unless @probe is what
 * check_trace_callback_type_@tpname() takes, as the trace header declares.
 * @tpname may be a macro that names the tracepoint (tsc_event_names.h's
 * TSC_*_TP): it is expanded before __TP_PROBE() pastes and stringifies it.
 */
#define TP_PROBE(tpname, probe) __TP_PROBE(tpname, probe)
#define __TP_PROBE(tpname, probe)						\
	{									\
		.name = #tpname + BUILD_BUG_ON_ZERO(!__same_type(		\
			check_trace_callback_type_##tpname,			\
			void (typeof(probe) *))),				\
		.fn = (probe),							\
	}

struct tp_probes {
	const char *system;	/* the tracepoints', in messages: "kvm" */
	bool verbose;		/* log each attach, detach and failure */
	struct tp_probe *probes;
	unsigned int nr;
	/* Serializes the table between the prober and the module notifier. */
	struct mutex lock;
	struct notifier_block nb;
	bool notifier_registered;
};

#define DEFINE_TP_PROBES(_name, _system, _probes, _verbose)			\
	struct tp_probes _name = {						\
		.system = (_system),						\
		.verbose = (_verbose),						\
		.probes = (_probes),						\
		.nr = ARRAY_SIZE(_probes),					\
		.lock = __MUTEX_INITIALIZER(_name.lock),			\
	}

/*
 * Attaches every wanted probe whose tracepoint is loaded, then follows
 * modules as they come and go. On error nothing is left attached.
 */
int tp_attach_all(struct tp_probes *set);

/* Detaches all; no probe runs any more once it returns. */
void tp_detach_all(struct tp_probes *set);

#endif
