/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tsc-merge.h: the types kvm-tsc-merge's parts share: input files, VMs,
 * vCPUs with their TSC step functions, and the output sinks.
 */
#ifndef TSC_MERGE_H
#define TSC_MERGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <trace-cmd/trace-cmd.h>
#include <traceevent/event-parse.h>

#include "tsc_event.h"

/*
 * Exported by libtracecmd.so.1 (trace-cmd 3.1) but declared only in its
 * private header; later releases make them public with these prototypes.
 */
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
int tracecmd_cpus(struct tracecmd_input *handle);
void tracecmd_set_flag(struct tracecmd_input *handle, int flag);
int tracecmd_page_size(struct tracecmd_input *handle);
struct tep_record *tracecmd_peek_data(struct tracecmd_input *handle, int cpu);
struct hook_list;
struct hook_list *tracecmd_create_event_hook(const char *arg);
void tracecmd_free_hooks(struct hook_list *hooks);
/*
 * libtracecmd's handle flag for raw timestamps (trace-cmd-private.h): no
 * TIME_SHIFT, TSC2NSEC, --date or offset is applied to what it reads.
 */
#define TRACECMD_FL_RAW_TS	(1 << 3)

#define TSC_CLOCK "x86-tsc"
/* trace-cmd's clock of x86-tsc counts that it shows in ns (TSC2NSEC). */
#define TSC2NSEC_CLOCK "tsc2nsec"
/*
 * The largest vCPU id KVM gives: KVM_MAX_VCPU_IDS - 1 with the largest
 * CONFIG_KVM_MAX_NR_VCPUS (4096, times KVM_VCPU_ID_RATIO 4). A trace with a
 * larger one is damaged; its id must never size a table.
 */
#define KVM_MAX_VCPU_ID 16383
/* Linux's largest NR_CPUS (CONFIG_MAXSMP): more CPUs is a damaged file. */
#define MAX_TRACE_CPUS 8192
/* The most fraction bits a multiplier can have and still be shifted. */
#define TSC_MAX_FRAC_BITS 63
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Levels of a step function: what runs on the vCPU. */
enum tsc_level {
	LEVEL_L1,
	LEVEL_L2,
	NR_LEVELS,
};

/*
 * One step of a vCPU's step function: from host TSC @start (inclusive)
 * until @end, guest_tsc = ((host_tsc * mult) >> frac) + offset.
 * @run_first and @run_last bound the host run intervals (kvm_entry to
 * kvm_exit) at this level inside the step; a step without runs cannot hold
 * guest events. @cause names the host event that began the step. An L2
 * list alternates active steps (L2 runs) and inactive ones (back in L1).
 */
struct tsc_step {
	uint64_t start;
	uint64_t end;			/* exclusive: next step or trace end */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	uint64_t run_first;
	uint64_t run_last;
	uint64_t runs;
	const char *cause;
	bool active;
};

struct step_list {
	struct tsc_step *steps;
	size_t nr;
	size_t alloc;
};

struct vm;

struct vcpu {
	unsigned int id;
	struct vm *vm;
	int tid;			/* host thread seen in kvm_entry */
	/* L1 values as the scan goes; known once an event told them. */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	bool offset_known;
	bool mult_known;
	/* Known from a snapshot only: the first event's previous value wins. */
	bool offset_from_snapshot;
	bool mult_from_snapshot;
	enum tsc_level level;		/* what kvm_entry enters now */
	enum tsc_level scan_run_level;	/* of the last kvm_entry */
	struct step_list steps[NR_LEVELS];
	/* Merge-time state. */
	enum tsc_level merge_level;
	bool running;
	enum tsc_level run_level;
	uint64_t guest_events;
	uint64_t outside;
	uint64_t ambiguous;
	uint64_t entries;
	/* Against trace-cmd's TIME_SHIFT of its guest file, if it had one. */
	uint64_t shift_events;
	uint64_t shift_max_error;	/* host TSC ticks */
};

struct guest;

/* A VM: the vCPUs one VMM process created; @gen counts VMs of one pid. */
struct vm {
	int pid;
	unsigned int gen;
	uint64_t born;			/* host TSC of its first vCPU (gen > 1) */
	bool current;			/* the pid's VM at this point of a pass */
	char comm[32];
	struct vcpu **vcpus;		/* indexed by vcpu_id, may have holes */
	unsigned int nr_vcpus;		/* size of @vcpus */
	unsigned int index;		/* position in the VM list */
	struct guest *guest[NR_LEVELS];	/* its own trace, its L2's */
};

/* tdmeta.c: what trace-cmd's own options say of a file's time and guests */
struct td_guest_map {			/* a GUEST option of a host file */
	char *name;
	uint64_t trace_id;
	unsigned int nr_cpus;
	int *tids;			/* host thread per guest CPU; -1: none */
};

struct td_shift_sample {		/* as libtracecmd holds them */
	int64_t time;
	int64_t offset;
	int64_t scaling;
	int64_t fraction;
};

struct td_shift_cpu {
	struct td_shift_sample *samples;
	unsigned int nr;
};

struct td_time_shift {
	uint64_t peer;
	uint32_t flags;
	unsigned int nr_cpus;
	struct td_shift_cpu *cpus;
};

struct td_buffer {			/* a version 7 BUFFER option */
	char *name;			/* "": the top-level buffer */
	unsigned char *payload;		/* the option's bytes */
	uint32_t len;
	uint32_t name_end;		/* payload offset just past the name's NUL */
	uint64_t at;			/* file offset of the payload */
	uint64_t cpus_at;		/* file offset of its CPU count */
	uint32_t cpus;
};

struct td_meta {
	uint64_t trace_id;		/* 0: no TRACEID */
	struct td_buffer *buffers;
	unsigned int nr_buffers;
	uint32_t tsc2nsec_mult;		/* 0: no TSC2NSEC */
	uint32_t tsc2nsec_shift;
	struct td_guest_map *guests;
	unsigned int nr_guests;
	struct td_time_shift *shift;	/* the TIME_SHIFT libtracecmd would use */
};

int td_read_meta(const char *path, struct td_meta *m);
void td_meta_free(struct td_meta *m);
unsigned long td_meta_tsc_khz(const struct td_meta *m);
uint64_t td_shift_apply(const struct td_time_shift *s, unsigned int cpu, uint64_t ts);

/* A trace.dat file and the buffers (top level and instances) it holds. */
struct trace_file {
	const char *path;
	struct tracecmd_input *handle;
	struct tracecmd_input **buffers;
	int nr_buffers;
	struct td_meta meta;
	uint64_t data_bytes;		/* its CPU data, all buffers, as stored */
	unsigned long snapshot_khz;	/* host: record-host.sh's tsc_khz line */
	uint64_t first_ts;		/* host: its first event's TSC */
};

/* A guest trace tied to a VM; @level picks the steps that convert it. */
struct guest {
	const char *name;
	char *default_name;		/* owns @name when the user gave none */
	struct trace_file file;
	int want_pid;			/* 0: match automatically */
	int want_gen;			/* 0: any */
	enum tsc_level level;
	struct vm *vm;
	int nr_cpus;
	uint64_t events;
	uint64_t outside;
	uint64_t ambiguous;
};

/* What one merged event is, for the sinks. */
struct merged_event {
	uint64_t host_ts;
	uint64_t guest_ts;
	struct tep_handle *tep;
	struct tep_record *record;
	struct tep_event *event;
	int cpu;
	struct guest *guest;		/* NULL for a host event */
	struct vcpu *vcpu;		/* guest events; host KVM events */
	const struct host_ev *host;	/* host events: as decoded */
	bool outside;
	bool ambiguous;
	bool damaged;			/* record_damage(): never printed */
	bool was_running;		/* host: the vCPU ran before this event */
};

/* alloc.c */
void *xrealloc(void *p, size_t n, size_t size);
void *xcalloc(size_t n, size_t size);

/* tscmath.c */
bool tsc_guest_to_host(uint64_t guest, uint64_t mult, unsigned int frac,
		       uint64_t offset, uint64_t *host);

/* input.c */
int trace_file_open(struct trace_file *tf, const char *path);
void trace_file_close(struct trace_file *tf);
int trace_file_count_cpus(struct trace_file *tf);

/* vms.c */
struct vm_table;
struct vm_table *vm_table_new(void);
void vm_table_free(struct vm_table *t);
void vm_table_add_thread(struct vm_table *t, int tid, int tgid);
void vm_table_pin_thread(struct vm_table *t, int tid, int tgid);
void vm_table_absorb(struct vm_table *t, struct vm *into, struct vm *from);
struct vm *vm_table_find_process(struct vm_table *t, int pid);
int vm_table_tgid_of(struct vm_table *t, int tid);
struct vm *vm_table_vm_of_process(struct vm_table *t, int pid, const char *comm);
struct vm *vm_table_new_generation(struct vm_table *t, struct vm *vm,
				   uint64_t born);
void vm_table_rewind(struct vm_table *t);
struct vm *vm_table_follow_generation(struct vm_table *t, struct vm *vm,
				      uint64_t ts);
struct vcpu *vm_get_vcpu(struct vm *vm, unsigned int id);
struct vcpu *vm_find_vcpu(const struct vm *vm, unsigned int id);
unsigned int vm_count_running_vcpus(const struct vm *vm);
unsigned int vm_table_count(const struct vm_table *t);
struct vm *vm_table_get(const struct vm_table *t, unsigned int index);
void vm_table_add_guest_options(struct vm_table *t, const struct trace_file *host);
int vm_table_tie_guest(struct vm_table *t, struct guest *g, const struct trace_file *host);
int guest_check_cpus(struct guest *g);

/* hostev.c */
enum host_kind {
	HOST_OTHER,
	HOST_OFFSET,
	HOST_MULT,
	HOST_NESTED,
	HOST_ENTRY,
	HOST_EXIT,
	HOST_NEWTASK,
	HOST_SNAPSHOT,			/* a record-host.sh snapshot line */
};

struct host_events {
	struct tep_handle *tep;
	struct tep_event *offset, *mult, *nested, *entry, *exit, *newtask, *print;
	struct tep_format_field *off_vcpu, *off_prev, *off_next;
	struct tep_format_field *mul_vcpu, *mul_prev, *mul_next, *mul_frac;
	struct tep_format_field *nes_vcpu, *nes_mode, *nes_prev, *nes_next;
	struct tep_format_field *nes_mult, *ent_vcpu, *exit_vcpu;
	struct tep_format_field *nt_pid, *nt_flags, *print_buf;
};

struct host_ev {
	enum host_kind kind;
	uint64_t ts;
	int pid;
	unsigned int vcpu_id;
	uint64_t prev;
	uint64_t next;
	uint64_t mult;			/* kvm_nested_tsc_offset */
	unsigned int frac;		/* kvm_write_tsc_multiplier */
	bool guest_mode;
	int child;			/* task_newtask */
	bool thread;
	char text[256];			/* a snapshot line, NUL-terminated */
};

int host_events_init(struct host_events *he, struct trace_file *host);
void host_events_warn_missing(const struct host_events *he, const char *path);
enum host_kind host_event_decode(const struct host_events *he, struct tracecmd_input *h,
				 struct tep_record *r, struct host_ev *ev);
struct vm *host_event_vm(const struct host_events *he, struct vm_table *vms,
			 const struct host_ev *ev);

/* snapshot.c: record-host.sh's "kvm-tsc-snapshot" lines */
#define SNAPSHOT_PREFIX "kvm-tsc-snapshot "

struct snapshot_vcpu {
	int pid;			/* the VMM process */
	unsigned int vcpu_id;
	int tid;			/* 0: the vCPU never ran */
	uint64_t offset;
	uint64_t mult;
	unsigned int frac;
	bool has_mult;
};

enum snapshot_kind {
	SNAPSHOT_OTHER,			/* "end", or a field this reader ignores */
	SNAPSHOT_KHZ,
	SNAPSHOT_VCPU,
	SNAPSHOT_BAD,
};

enum snapshot_kind snapshot_parse(const char *line, struct snapshot_vcpu *v,
				  unsigned long *khz);

/* scan.c */
int scan_host(struct trace_file *host, struct vm_table *vms);
void vcpus_check_known(struct vm *vm, const char *host_path, int *errors);
void vcpu_offset_from_time_shift(struct vcpu *v, const struct guest *g);

/* convert.c: where one guest CPU's stream has got to in its step list */
struct guest_cursor {
	enum tsc_level level;
	size_t step;
};

/* @outside: no step's runs hold it; @ambiguous: two steps' runs do. */
struct conversion {
	uint64_t host;
	bool outside;
	bool ambiguous;
};

bool convert_guest_ts(struct vcpu *v, struct guest_cursor *c, uint64_t guest,
		      struct conversion *out);

/* Output sinks, called in host-time order. */
struct sink_ops {
	void (*event)(void *sink, const struct merged_event *e);
	int (*finish)(void *sink);
};

struct sink {
	const struct sink_ops *ops;
	void *priv;
};

/* merge.c */
struct merge_stats {
	uint64_t host_events;
	uint64_t guest_events;
	uint64_t outside;
	uint64_t ambiguous;
	uint64_t out_of_order;
	uint64_t damaged;		/* records record_damage() refused */
	uint64_t before_host;		/* guest events before the host's first */
};

int merge_traces(struct trace_file *host, struct guest *guests, int nr_guests,
		 struct vm_table *vms, struct sink *sinks, int nr_sinks,
		 struct merge_stats *stats, bool progress);

/* damage.c: records libtraceevent cannot print safely */
enum damage {
	DAMAGE_NONE,
	DAMAGE_SHORT,			/* shorter than its format says */
	DAMAGE_DIVISION,		/* its print format would divide by zero */
};

bool record_fits_format(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r);
enum damage record_damage(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r);
bool record_repeats(uint64_t *next, const struct tep_record *r, const char *path, int cpu);

/* info.c */
struct info_cache;
struct info_cache *info_cache_new(void);
void info_cache_free(struct info_cache *c);
const char *info_text(struct info_cache *c, const struct merged_event *e, unsigned int *len);

/* text.c */
bool text_fields_valid(const char *fields);
void *text_sink_new(FILE *out, const char *fields, unsigned long tsc_khz);
extern const struct sink_ops text_sink_ops;

/* json.c */
void *json_sink_new(FILE *out, struct vm_table *vms, unsigned long tsc_khz);
extern const struct sink_ops json_sink_ops;

/* perfetto.c */
void *perfetto_sink_new(FILE *out, struct vm_table *vms, unsigned long tsc_khz,
			struct guest *guests, int nr_guests);
extern const struct sink_ops perfetto_sink_ops;

/* shiftcmp.c */
extern const struct sink_ops shiftcmp_sink_ops;

/* outfile.c */
struct outfile {
	const char *path;		/* as the user named it; "-": stdout */
	char *target;			/* the regular file it names */
	char *tmp;			/* written until complete */
	FILE *f;
};

int create_temp_beside(const char *path, char **tmp);
int outfile_open(struct outfile *o, const char *path);
int outfile_commit(struct outfile *o);
void outfile_abort(struct outfile *o);

/* tdfile.c: a trace.dat's file-level structure; tdcheck.c: its sizes */
#define TD_OPTION_BUFFER	3
#define TD_OPTION_HOOK		6
#define TD_OPTION_OFFSET	7
#define TD_OPTION_TRACEID	11
#define TD_OPTION_TIME_SHIFT	12
#define TD_OPTION_GUEST		13
#define TD_OPTION_HEADER_INFO	16	/* 16-21: offsets of metadata sections */
#define TD_OPTION_CMDLINES	21
#define TD_SECTION_COMPRESSED	1

enum td_zip { TD_ZIP_NONE, TD_ZIP_ZSTD, TD_ZIP_ZLIB, TD_ZIP_UNKNOWN };

struct td_file {
	const char *path;
	int fd;
	bool big_endian;
	int version;			/* 6 or 7 */
	int long_size;			/* the traced kernel's, from the header */
	uint32_t page_size;		/* of its ring buffer */
	int commit_size;		/* a page's commit field: 4 or 8 bytes */
	uint64_t data_bytes;		/* tdcheck.c: the CPU data it checked */
	unsigned int buffers;		/* tdcheck.c: its BUFFER options */
	uint64_t header_end;		/* where the file header ends */
	uint64_t first_options;		/* version 7: the first option section */
	enum td_zip zip;		/* version 7: the compression it names */
	uint64_t compressed_options;	/* a compressed option section, or 0 */
	const unsigned char *mem;	/* a decompressed block: read here, not at fd */
	uint64_t size;
	uint64_t last_link;		/* where the last DONE option's link is */
	uint32_t desc;			/* an option section's description */
	uint64_t option_at;		/* where the option being visited lies */
	uint64_t trace_id;		/* 0: no TRACEID option */
};

/* Options being built, in the file's byte order. */
struct td_options {
	unsigned char *buf;
	size_t len;
	size_t alloc;
	size_t start;			/* of the option being built */
	unsigned int id;
};

typedef int (*td_option_fn)(struct td_file *f, unsigned int id, const unsigned char *data,
			    uint32_t len);

int td_damaged(const struct td_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t td_number(const struct td_file *f, const unsigned char *p, int bytes);
int td_read_at(const struct td_file *f, uint64_t off, void *buf, size_t len);
int td_open_header(struct td_file *f, const char *path);
int td_walk_options(struct td_file *f, td_option_fn visit);
int td_open(struct td_file *f, const char *path);
void td_close(struct td_file *f);
void td_opt_init(struct td_options *o);
void td_opt_free(struct td_options *o);
void td_opt_begin(struct td_options *o, unsigned int id);
void td_opt_put(struct td_options *o, const struct td_file *f, uint64_t v, int bytes);
void td_opt_put_string(struct td_options *o, const char *s);
void td_opt_put_bytes(struct td_options *o, const void *p, size_t len);
void td_opt_end(struct td_options *o, const struct td_file *f);
int td_copy(const struct td_file *f, int fd);
int td_append(const struct td_file *f, int fd, const struct td_options *o);
int td_patch_number(const struct td_file *f, int fd, uint64_t off, uint64_t v, int bytes);
int td_patch_bytes(int fd, uint64_t off, const void *buf, size_t len);

/* tdzip.c: trace-metadata and pages compress about 10:1, never beyond this. */
#define TD_MAX_RATIO		1024
enum td_zip td_zip_of(const char *name);
unsigned char *td_uncompress_block(const struct td_file *f, uint64_t off, uint64_t avail,
				   uint64_t *len);
unsigned char *td_uncompress_chunk(const struct td_file *f, uint64_t off, uint64_t avail,
				   uint64_t *len, uint64_t *used);
void td_open_block(struct td_file *block, const struct td_file *f, const unsigned char *data,
		   uint64_t len);

/* tdcheck.c */
int td_check_sizes(const char *path, uint64_t *data_bytes);

/* fmtcheck.c */
const char *format_unprintable_byte(const char *text, size_t size);
const char *format_bad_declaration(const char *text, size_t size);
const char *format_undeclared_field(const char *text, size_t size, size_t *len);
const char *format_unparsed_token(const char *text, size_t size);
const char *printk_unparsed_line(const char *text, size_t size);

/* pathcheck.c: a file the run reads or writes, as the user named it */
struct run_file {
	const char *path;
	const char *opt;		/* the option that names it: "-H", "-o" */
	const char *what;		/* for messages: "the host trace" */
	bool output;
};

int check_run_files(const struct run_file *files, int nr);

/* sync.c */
struct sync_out;
char *sync_copy_path(const char *dir, const char *input);
struct sync_out *sync_prepare(const char *dir, bool force, uint64_t max_error,
			      struct trace_file *host, struct guest *guests, int nr_guests);
int sync_write(struct sync_out *s);
int sync_commit(struct sync_out *s);
void sync_free(struct sync_out *s);
extern const struct sink_ops sync_sink_ops;

/* summary.c */
void summary_print(FILE *out, const struct trace_file *host,
		   struct vm_table *vms, const struct guest *guests,
		   int nr_guests, const struct merge_stats *stats, unsigned long tsc_khz);

#endif
