/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tdfile.h: the trace.dat reader (tracedat/): a file's structure read and
 * checked before libtracecmd trusts it (tdfile.c, tdcheck.c, tdzip.c,
 * fmtcheck.c), what trace-cmd's own options say of its time and guests
 * (tdmeta.c), the file opened with libtracecmd (input.c), and the records
 * libtraceevent cannot print safely (damage.c).
 */
#ifndef TSC_MERGE_TDFILE_H
#define TSC_MERGE_TDFILE_H

#include <string.h>
#include <traceevent/event-parse.h>
#include <trace-cmd/trace-cmd.h>

#include "common.h"

#define TSC_CLOCK "x86-tsc"
/* trace-cmd's clock of x86-tsc counts that it shows in ns (TSC2NSEC). */
#define TSC2NSEC_CLOCK "tsc2nsec"

/* tdmeta.c: what trace-cmd's own options say of a file's time and guests */
struct td_guest_map {			/* a GUEST option of a host file */
	const char *name;		/* in @tids' allocation, after them */
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
	const char *name;		/* in @payload; "": the top-level buffer */
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

struct td_file;
int td_read_meta(const struct td_file *f, struct td_meta *m);
void td_meta_free(struct td_meta *m);
unsigned long td_meta_tsc_khz(const struct td_meta *m);
uint64_t td_shift_apply(const struct td_time_shift *s, unsigned int cpu, uint64_t ts);

/* A trace.dat file and the buffers (top level and instances) it holds. */
struct trace_file {
	const char *path;
	struct tracecmd_input *handle;
	struct tracecmd_input **buffers;
	const char **buffer_names;	/* an instance's; NULL: the top level */
	int nr_buffers;
	struct td_meta meta;
	uint64_t data_bytes;		/* its CPU data, all buffers, as stored */
	/* Decompressed: libtracecmd numbers the records' offsets in these. */
	uint64_t page_bytes;
	unsigned long snapshot_khz;	/* host: record-host.sh's tsc_khz line */
	/*
	 * host: no kvm_write_tsc_multiplier format, and no snapshot says that
	 * KVM has no TSC scaling: a vCPU's multiplier is told only by a
	 * snapshot or a time sync sample.
	 */
	bool mult_untold;
	uint64_t first_ts;		/* host: its first event's TSC */
};

/* input.c */
/*
 * libtracecmd reads an uncompressed file's CPU data through mappings of
 * the file as large as that data, so the pages a merge has read stay in
 * its RSS to the end: the footprint would grow with the trace. A stream
 * gives back the pages of the file mapping behind its current record.
 */
struct td_release {
	bool ok;			/* false: not a mapped file, or given up */
	unsigned int misses;
	dev_t dev;
	ino_t ino;
	uintptr_t done;			/* released below this address */
};

void td_release_init(struct td_release *rl, const char *path);
void td_release_behind(struct td_release *rl, const struct tep_record *r);

/*
 * A record's common_type and common_pid, read as tep_data_type() and
 * tep_data_pid() do (from the first event's format, in the file's byte
 * order) without their per-call lookups, and the events of recent types:
 * what the merge asks of every record.
 */
#define TD_EVENT_SLOTS 16
struct td_common_field {
	int offset, size;		/* size 0: ask libtraceevent */
};

struct td_common {
	struct tep_handle *tep;
	struct td_common_field type, pid;
	bool swap;			/* the file's byte order is not ours */
	struct {
		int type;
		bool valid;
		struct tep_event *event;
	} slots[TD_EVENT_SLOTS];
};

void td_common_init(struct td_common *c, struct tep_handle *tep);
int td_record_type(const struct td_common *c, const struct tep_record *r);
int td_record_pid(const struct td_common *c, const struct tep_record *r);
struct tep_event *td_record_event(struct td_common *c, struct tep_record *r, int *type);

/*
 * tep_read_number(), read in place when the file's byte order is ours
 * (@swap false): the merge reads numbers of every record, and a call each
 * costs more than the read. Inline for the same reason.
 */
static inline unsigned long long td_read_number(struct tep_handle *tep, bool swap,
						const char *p, int size)
{
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	if (swap)
		return tep_read_number(tep, p, size);
	switch (size) {
	case 1:
		return *(const unsigned char *)p;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	case 8:
		memcpy(&u64, p, 8);
		return u64;
	default:
		return tep_read_number(tep, p, size);
	}
}

uint64_t td_read_field(const struct td_common *c, const struct tep_record *r,
		       const struct tep_format_field *f);
int trace_file_open(struct trace_file *tf, const char *path);
void trace_file_close(struct trace_file *tf);
int trace_file_count_cpus(struct trace_file *tf);

/* damage.c: records libtraceevent cannot print safely */
enum damage {
	DAMAGE_NONE,
	DAMAGE_SHORT,			/* shorter than its format says */
	DAMAGE_DIVISION,		/* its print format would divide by zero */
	DAMAGE_FORMAT,			/* its event format's field lines do not parse */
};

bool record_fits_format(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r);
enum damage record_damage(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r);
void damage_forget_events(void);
bool record_repeats(uint64_t *next, const struct tep_record *r, const char *path, int cpu);

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
	uint64_t page_bytes;		/* the same, decompressed */
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
int td_check_sizes(struct td_file *f);

/* fmtcheck.c */
const char *format_unprintable_byte(const char *text, size_t size);
const char *format_bad_declaration(const char *text, size_t size);
const char *format_undeclared_field(const char *text, size_t size, size_t *len);
const char *format_unparsed_token(const char *text, size_t size);
const char *printk_unparsed_line(const char *text, size_t size);

#endif
