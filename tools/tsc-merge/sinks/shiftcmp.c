// SPDX-License-Identifier: GPL-2.0
/*
 * shiftcmp.c: a sink that measures, per vCPU, how far trace-cmd's own time
 * sync (a guest file's TIME_SHIFT, from its agent's kvm or ptp protocol)
 * puts each guest event from the host time the merge found exactly: what
 * the summary reports, and what --sync-out's copies replace.
 */
#include "sinks/sinks.h"

static void compare_event(void *priv, const struct merged_event *e)
{
	const struct td_time_shift *s;
	uint64_t sampled, error;

	if (!e->guest || !e->vcpu || !(s = e->guest->file.meta.shift))
		return;
	sampled = td_shift_apply(s, e->cpu, e->guest_ts);
	error = sampled > e->host_ts ? sampled - e->host_ts : e->host_ts - sampled;
	e->vcpu->shift_events++;
	if (error > e->vcpu->shift_max_error)
		e->vcpu->shift_max_error = error;
}

const struct sink_ops shiftcmp_sink_ops = {
	.event = compare_event,
};
