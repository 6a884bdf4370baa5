// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot.c: read the lines tools/record-host/record-host.sh writes into the host
 * recording when it starts: the host's TSC rate and, per vCPU of every VM
 * that already runs, KVM's debugfs TSC state and the thread that runs it.
 *
 *   kvm-tsc-snapshot tsc_khz=KHZ
 *   kvm-tsc-snapshot vm=PID-FD pid=PID vcpu=N tid=TID tsc_offset=S64
 *       [tsc_scaling_ratio=U64 tsc_scaling_ratio_frac_bits=U]   (one line)
 *   kvm-tsc-snapshot end vms=N vcpus=N [tsc_scaling=0|1]
 *
 * A recording that starts while VMs run has neither the clone events that
 * tie a vCPU thread to its VMM nor each vCPU's first offset: these lines
 * give both. On a kernel without kvm_write_tsc_multiplier they are all
 * that tells a vCPU's multiplier, or (tsc_scaling=0) that KVM has none.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* The value of "NAME=" in @line, or NULL. */
static const char *field(const char *line, const char *name)
{
	size_t len = strlen(name);
	const char *p = line;

	while ((p = strstr(p, name))) {
		if ((p == line || p[-1] == ' ') && p[len] == '=')
			return p + len + 1;
		p += len;
	}
	return NULL;
}

static bool number(const char *line, const char *name, bool is_signed, uint64_t max,
		   uint64_t *v)
{
	const char *s = field(line, name);
	char *end;

	if (!s || !*s || *s == ' ' || (!is_signed && *s == '-'))
		return false;
	errno = 0;
	*v = is_signed ? (uint64_t)strtoll(s, &end, 10) : strtoull(s, &end, 10);
	return !errno && (*end == ' ' || !*end) && (is_signed || *v <= max);
}

/* @v is written only when the whole line parses. */
static enum snapshot_kind parse_vcpu(const char *line, struct snapshot_vcpu *v)
{
	bool has_mult = field(line, "tsc_scaling_ratio");
	uint64_t pid, id, tid, offset, mult = 0, frac = 0;

	if (!number(line, "pid", false, INT32_MAX, &pid) || !pid ||
	    !number(line, "vcpu", false, KVM_MAX_VCPU_ID, &id) ||
	    !number(line, "tid", false, INT32_MAX, &tid) ||
	    !number(line, "tsc_offset", true, 0, &offset))
		return SNAPSHOT_BAD;
	if (has_mult &&
	    (!number(line, "tsc_scaling_ratio", false, UINT64_MAX, &mult) || !mult ||
	     !number(line, "tsc_scaling_ratio_frac_bits", false, TSC_MAX_FRAC_BITS, &frac)))
		return SNAPSHOT_BAD;
	*v = (struct snapshot_vcpu){ .pid = pid, .vcpu_id = id, .tid = tid, .offset = offset,
				     .mult = mult, .frac = frac, .has_mult = has_mult };
	return SNAPSHOT_VCPU;
}

/* One line, with the prefix; SNAPSHOT_BAD names a line that does not parse. */
enum snapshot_kind snapshot_parse(const char *line, struct snapshot_vcpu *v,
				  unsigned long *khz)
{
	uint64_t k;

	line += strlen(SNAPSHOT_PREFIX);
	if (field(line, "vm"))
		return parse_vcpu(line, v);
	if (field(line, "tsc_scaling")) {
		if (!number(line, "tsc_scaling", false, 1, &k))
			return SNAPSHOT_BAD;
		return k ? SNAPSHOT_OTHER : SNAPSHOT_UNSCALED;
	}
	if (field(line, "tsc_khz")) {
		if (!number(line, "tsc_khz", false, ULONG_MAX, &k) || !k)
			return SNAPSHOT_BAD;
		*khz = k;
		return SNAPSHOT_KHZ;
	}
	return SNAPSHOT_OTHER;
}
