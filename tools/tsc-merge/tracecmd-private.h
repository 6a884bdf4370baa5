/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracecmd-private.h: the libtracecmd functions and flags kvm-tsc-merge
 * uses that Debian's trace-cmd headers do not declare, declared once here
 * as trace-cmd's lib/trace-cmd/include/private/trace-cmd-private.h does.
 */
#ifndef TSC_MERGE_TRACECMD_PRIVATE_H
#define TSC_MERGE_TRACECMD_PRIVATE_H

#include <trace-cmd/trace-cmd.h>

/*
 * Exported by libtracecmd.so.1 (trace-cmd 3.1) but declared only in its
 * private header; later releases make them public with these prototypes.
 */
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
int tracecmd_cpus(struct tracecmd_input *handle);
void tracecmd_set_flag(struct tracecmd_input *handle, int flag);
/*
 * libtracecmd's handle flag for raw timestamps (trace-cmd-private.h): no
 * TIME_SHIFT, TSC2NSEC, --date or offset is applied to what it reads.
 */
#define TRACECMD_FL_RAW_TS	(1 << 3)

#endif
