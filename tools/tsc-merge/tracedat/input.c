// SPDX-License-Identifier: GPL-2.0
/*
 * input.c: open a trace.dat with libtracecmd, refuse what cannot be merged,
 * and list the buffers (top level and instances) that hold its events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tracedat/tdfile.h"
#include "tracecmd-private.h"

/* libtracecmd says why it failed only on its own log; name the file here. */
static int check_readable(const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: not a regular file\n", path);
		return -1;
	}
	if (!st.st_size) {
		fprintf(stderr, "%s: empty file, not a trace.dat\n", path);
		return -1;
	}
	return 0;
}

/*
 * Raw x86-tsc counter values are what the formula converts. trace-cmd's
 * tsc2nsec clock records the same counts and only shows them as ns (its
 * TSC2NSEC option): read raw, they are x86-tsc. Any other clock would give
 * a timeline that looks right and is wrong. (libtracecmd names a tsc2nsec
 * recording's clock x86-tsc in version 7 and tsc2nsec in version 6.)
 */
static int check_clock(const struct trace_file *tf)
{
	const char *clock = tracecmd_get_trace_clock(tf->handle);

	if (!clock) {
		fprintf(stderr, "%s: the file does not say which trace clock it used; record with 'trace-cmd record -C %s'\n",
			tf->path, TSC_CLOCK);
		return -1;
	}
	if (strcmp(clock, TSC_CLOCK) && strcmp(clock, TSC2NSEC_CLOCK)) {
		fprintf(stderr, "%s: recorded with the '%s' trace clock, not %s or %s: its timestamps cannot be converted; record with 'trace-cmd record -C %s'\n",
			tf->path, clock, TSC_CLOCK, TSC2NSEC_CLOCK, TSC_CLOCK);
		return -1;
	}
	return 0;
}

/* A CPU count sizes the merge's streams: check it first. */
static int check_cpus(const struct trace_file *tf, struct tracecmd_input *h)
{
	int cpus = tracecmd_cpus(h);

	if (cpus <= MAX_TRACE_CPUS)
		return 0;
	fprintf(stderr, "%s: claims %d CPUs, more than Linux's %d: the file is damaged\n",
		tf->path, cpus, MAX_TRACE_CPUS);
	return -1;
}

static void add_buffer(struct trace_file *tf, struct tracecmd_input *h, const char *name)
{
	tf->buffers = xrealloc(tf->buffers, tf->nr_buffers + 1, sizeof(*tf->buffers));
	tf->buffer_names = xrealloc(tf->buffer_names, tf->nr_buffers + 1,
				    sizeof(*tf->buffer_names));
	tf->buffer_names[tf->nr_buffers] = name;
	tf->buffers[tf->nr_buffers++] = h;
}

/*
 * `trace-cmd record -B inst` stores the instance as a buffer of its own
 * and may leave the top level empty: merge every buffer that has CPUs.
 */
static int collect_buffers(struct trace_file *tf)
{
	int i, n = tracecmd_buffer_instances(tf->handle);

	if (check_cpus(tf, tf->handle))
		return -1;
	if (tracecmd_cpus(tf->handle) > 0)
		add_buffer(tf, tf->handle, NULL);
	for (i = 0; i < n; i++) {
		struct tracecmd_input *h = tracecmd_buffer_instance_handle(tf->handle, i);

		if (!h) {
			fprintf(stderr, "%s: cannot read buffer instance '%s'\n", tf->path,
				tracecmd_buffer_instance_name(tf->handle, i));
			return -1;
		}
		if (check_cpus(tf, h)) {
			tracecmd_close(h);
			return -1;
		}
		if (tracecmd_cpus(h) <= 0) {
			tracecmd_close(h);
			continue;
		}
		add_buffer(tf, h, tracecmd_buffer_instance_name(tf->handle, i));
	}
	if (!tf->nr_buffers) {
		fprintf(stderr, "%s: the file holds no CPU data\n", tf->path);
		return -1;
	}
	return 0;
}

/* Whether libtracecmd gives any CPU of any buffer a record. */
static bool has_events(const struct trace_file *tf)
{
	int b, cpu;

	/* Peeked, not read: the scan and the merge start from these records. */
	for (b = 0; b < tf->nr_buffers; b++)
		for (cpu = 0; cpu < tracecmd_cpus(tf->buffers[b]); cpu++)
			if (tracecmd_peek_data(tf->buffers[b], cpu))
				return true;
	return false;
}

/*
 * CPU data that yields no record (a compressed CPU of 0 chunks, a page
 * whose commit was zeroed) would lose every event of the file without a
 * word; a recording in which nothing happened has no data bytes.
 */
static int check_events(const struct trace_file *tf)
{
	if (!tf->data_bytes || has_events(tf))
		return 0;
	fprintf(stderr, "%s: its CPU data (%llu bytes) yields no events: damaged or truncated\n",
		tf->path, (unsigned long long)tf->data_bytes);
	return -1;
}

/*
 * Raw timestamps: the TSC counts themselves, with neither a trace-cmd
 * agent's time shift nor tsc2nsec's conversion to ns applied. The flag
 * must be set before libtracecmd reads the options that would set them up.
 */
static struct tracecmd_input *open_raw(const char *path)
{
	/* No plugins: "info" is what the kernel's own print format says. */
	struct tracecmd_input *h = tracecmd_open_head(path, TRACECMD_FL_LOAD_NO_PLUGINS);

	if (!h)
		return NULL;
	tracecmd_set_flag(h, TRACECMD_FL_RAW_TS);
	if (tracecmd_init_data(h) < 0) {
		tracecmd_close(h);
		return NULL;
	}
	return h;
}

/*
 * The file's structure, checked before libtracecmd reads it, and what
 * trace-cmd's options say: one open, its header read once.
 */
static int read_structure(struct trace_file *tf)
{
	struct td_file f;
	int ret;

	if (td_open_header(&f, tf->path))
		return -1;
	ret = td_check_sizes(&f) || td_read_meta(&f, &tf->meta);
	tf->data_bytes = f.data_bytes;
	tf->page_bytes = f.page_bytes;
	td_close(&f);
	return ret ? -1 : 0;
}

int trace_file_open(struct trace_file *tf, const char *path)
{
	memset(tf, 0, sizeof(*tf));
	tf->path = path;
	if (check_readable(path) || read_structure(tf))
		return -1;
	tf->handle = open_raw(path);
	if (!tf->handle) {
		fprintf(stderr, "%s: a trace.dat file, but cut short or damaged: libtracecmd cannot read it\n",
			path);
		return -1;
	}
	if (check_clock(tf) || collect_buffers(tf) || check_events(tf)) {
		trace_file_close(tf);
		return -1;
	}
	return 0;
}

void trace_file_close(struct trace_file *tf)
{
	int i;

	for (i = 0; i < tf->nr_buffers; i++)
		if (tf->buffers[i] != tf->handle)
			tracecmd_close(tf->buffers[i]);
	free(tf->buffers);
	free(tf->buffer_names);
	tf->buffers = NULL;
	tf->buffer_names = NULL;
	tf->nr_buffers = 0;
	if (tf->handle)
		tracecmd_close(tf->handle);
	tf->handle = NULL;
	td_meta_free(&tf->meta);
	damage_forget_events();
}

/* The number of CPUs of the first buffer: a guest's vCPU count. */
int trace_file_count_cpus(struct trace_file *tf)
{
	return tracecmd_cpus(tf->buffers[0]);
}

/* libtraceevent reads a common field of every record at the first event's offset. */
static struct td_common_field find_common(struct tep_event *first, const char *name)
{
	struct tep_format_field *f = first ? tep_find_common_field(first, name) : NULL;

	return f ? (struct td_common_field){ f->offset, f->size } : (struct td_common_field){ 0 };
}

void td_common_init(struct td_common *c, struct tep_handle *tep)
{
	struct tep_event *first = tep_get_event(tep, 0);

	memset(c, 0, sizeof(*c));
	c->tep = tep;
	c->swap = tep_is_file_bigendian(tep) != tep_is_local_bigendian(tep);
	c->type = find_common(first, "common_type");
	c->pid = find_common(first, "common_pid");
}

/*
 * tep_read_number() of common field @f as an int, as __parse_common()
 * returns it; @ask, libtraceevent's own reader, when @f has no place.
 */
static int read_common(const struct td_common *c, const struct tep_record *r,
		       struct td_common_field f,
		       int (*ask)(struct tep_handle *tep, struct tep_record *rec))
{
	if (!f.size)
		return ask(c->tep, (struct tep_record *)r);
	return (int)td_read_number(c->tep, c->swap, (const char *)r->data + f.offset, f.size);
}

/*
 * Field @f of @r as tep_read_number_field() reads it (0 for a size it
 * does not read), without its calls: the merge reads one or more of every
 * host KVM record.
 */
uint64_t td_read_field(const struct td_common *c, const struct tep_record *r,
		       const struct tep_format_field *f)
{
	switch (f->size) {
	case 1:
	case 2:
	case 4:
	case 8:
		return td_read_number(c->tep, c->swap, (const char *)r->data + f->offset, f->size);
	default:
		return 0;
	}
}

int td_record_type(const struct td_common *c, const struct tep_record *r)
{
	return read_common(c, r, c->type, tep_data_type);
}

int td_record_pid(const struct td_common *c, const struct tep_record *r)
{
	return read_common(c, r, c->pid, tep_data_pid);
}

/*
 * tep_find_event_by_record(), remembering the event of each recent type:
 * events alternate between a few types, which its one-event cache misses.
 * @type: the record's type.
 */
struct tep_event *td_record_event(struct td_common *c, struct tep_record *r, int *type)
{
	unsigned int i;

	/* libtraceevent's own refusal, and its warning. */
	if (r->size < 0) {
		*type = td_record_type(c, r);
		return tep_find_event_by_record(c->tep, r);
	}
	*type = td_record_type(c, r);
	i = (unsigned int)*type % TD_EVENT_SLOTS;
	if (!c->slots[i].valid || c->slots[i].type != *type) {
		c->slots[i].type = *type;
		c->slots[i].event = tep_find_event(c->tep, *type);
		c->slots[i].valid = true;
	}
	return c->slots[i].event;
}

/* Release in steps of this much: a lookup in /proc/self/maps each. */
#define RELEASE_STEP	(2UL << 20)
#define RELEASE_MISSES	4

void td_release_init(struct td_release *rl, const char *path)
{
	struct stat st;

	memset(rl, 0, sizeof(*rl));
	if (stat(path, &st))
		return;
	rl->dev = st.st_dev;
	rl->ino = st.st_ino;
	rl->ok = true;
}

/*
 * The start of the private, read-only mapping of the file that holds
 * @addr; 0: none (libtracecmd read the page into memory of its own).
 */
static uintptr_t file_mapping_start(const struct td_release *rl, uintptr_t addr)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	unsigned long start, end, inode;
	unsigned int major, minor;
	uintptr_t found = 0;
	char perms[8], line[512];

	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		if (sscanf(line, "%lx-%lx %7s %*x %x:%x %lu", &start, &end, perms, &major,
			   &minor, &inode) != 6 || addr < start || addr >= end)
			continue;
		if (inode == rl->ino && makedev(major, minor) == rl->dev &&
		    !strcmp(perms, "r--p"))
			found = start;
		break;
	}
	fclose(maps);
	return found;
}

/*
 * Drop the pages of @r's mapping before @r's page from memory: the stream
 * has read them. @r must be alive (libtracecmd keeps its mapping while a
 * record of it is). The file's pages stay in the page cache; a mapping of
 * a file never written to reads them again if anything looks back.
 */
void td_release_behind(struct td_release *rl, const struct tep_record *r)
{
	static uintptr_t page_mask;
	uintptr_t page, start, from;

	if (!rl->ok)
		return;
	if (!page_mask)
		page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	page = (uintptr_t)r->data & page_mask;
	if (page < rl->done) {
		rl->done = page;		/* a mapping further down */
		return;
	}
	if (page - rl->done < RELEASE_STEP)
		return;
	start = file_mapping_start(rl, page);
	if (!start) {
		rl->ok = ++rl->misses < RELEASE_MISSES;
		rl->done = page;
		return;
	}
	from = rl->done > start ? rl->done : start;
	if (from < page)
		madvise((void *)from, page - from, MADV_DONTNEED);
	rl->done = page;
}
