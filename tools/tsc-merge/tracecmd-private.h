/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracecmd-private.h: the libtracecmd functions and flags kvm-tsc-merge,
 * its test trace writer and its benchmark use that Debian's trace-cmd
 * headers do not declare, declared once here.
 *
 * libtracecmd.so.1 (trace-cmd 3.1) exports them but declares them only in
 * its lib/trace-cmd/include/private/trace-cmd-private.h; these are its
 * prototypes, which later releases make public.
 */
#ifndef TSC_MERGE_TRACECMD_PRIVATE_H
#define TSC_MERGE_TRACECMD_PRIVATE_H

#include <stdbool.h>

#include <trace-cmd/trace-cmd.h>

/* Reading. */
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
int tracecmd_cpus(struct tracecmd_input *handle);
int tracecmd_page_size(struct tracecmd_input *handle);
/* The UNAME option: "sysname nodename release machine"; NULL: none. */
const char *tracecmd_get_uname(struct tracecmd_input *handle);
void tracecmd_set_flag(struct tracecmd_input *handle, int flag);
struct tep_record *tracecmd_peek_data(struct tracecmd_input *handle, int cpu);
/*
 * The handle flag for raw timestamps: no TIME_SHIFT, TSC2NSEC, --date or
 * offset is applied to what it reads.
 */
#define TRACECMD_FL_RAW_TS	(1 << 3)

/* A HOOK option's text, parsed as libtracecmd does when it opens a file. */
struct hook_list;
struct hook_list *tracecmd_create_event_hook(const char *arg);
void tracecmd_free_hooks(struct hook_list *hooks);

/* Writing: tests/mktrace.c. */
struct tracecmd_output;
struct tracecmd_event_list;
struct tracecmd_output *tracecmd_output_create(const char *output_file);
void tracecmd_set_quiet(struct tracecmd_output *handle, bool set_quiet);
void tracecmd_set_out_clock(struct tracecmd_output *handle, const char *clock);
int tracecmd_output_set_trace_dir(struct tracecmd_output *handle, const char *tracing_dir);
int tracecmd_output_set_kallsyms(struct tracecmd_output *handle, const char *kallsyms);
int tracecmd_output_write_headers(struct tracecmd_output *handle,
				  struct tracecmd_event_list *list);
int tracecmd_write_cmdlines(struct tracecmd_output *handle);
int tracecmd_append_cpu_data(struct tracecmd_output *handle, int cpus,
			     char * const *cpu_data_files);
void tracecmd_output_close(struct tracecmd_output *handle);

#endif
