// SPDX-License-Identifier: GPL-2.0
/*
 * tdcheck.c: check a trace.dat's metadata before libtracecmd opens it: the
 * sizes and counts against the bytes really in the file, and the parts
 * that Debian 12's libtracecmd 1.3.1 and libtraceevent 1.7.1 crash on.
 *
 * libtracecmd mallocs whatever a size field says (an event format,
 * kallsyms, the saved cmdlines, an option, a compressed block, a buffer's
 * CPUs) and only then finds the file too short: one damaged 16 kB file made
 * it allocate and clear 2.5 GB. A failure while it sets up its CPUs ends in
 * tracecmd_close() on a half-made handle, and some damaged event formats
 * and hook options crash their parsers (fmtcheck.c, fuzz/README). The walk
 * here follows the file the way libtracecmd reads it while opening
 * (version 6 front to back, version 7 through its option sections to the
 * sections they point at) and refuses the first thing that would break
 * it, naming the file. The events are not looked at.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracedat/tdfile.h"
#include "tracecmd-private.h"

#define SECTION_HEADER_SIZE	16
#define BUFFER_CPU_SIZE		20	/* u32 cpu, u64 offset, u64 size */
#define MIN_PAGE_SIZE		4096u
#define MAX_PAGE_SIZE		(1u << 24)
#define PAGE_COMMIT_MASK	((1u << 27) - 1)	/* libtraceevent's kbuffer */
#define OPTION_DATE		1
#define OPTION_CPUSTAT		2
#define OPTION_TRACECLOCK	4
#define OPTION_UNAME		5
#define OPTION_CPUCOUNT		8
#define OPTION_VERSION		9
#define OPTION_BUFFER_TEXT	22

/* A part of the file: what is read inside must fit inside. */
struct cursor {
	struct td_file *f;
	uint64_t pos;
	uint64_t end;
};

static int read_number(struct cursor *c, int bytes, uint64_t *v, const char *what)
{
	unsigned char buf[8];

	*v = 0;
	if (c->end - c->pos < (uint64_t)bytes)
		return td_damaged(c->f, "it ends inside %s", what);
	if (td_read_at(c->f, c->pos, buf, bytes))
		return -1;
	*v = td_number(c->f, buf, bytes);
	c->pos += bytes;
	return 0;
}

/* A size of @bytes bytes and the block it sizes. */
static int skip_sized(struct cursor *c, int bytes, const char *what)
{
	uint64_t size;

	if (read_number(c, bytes, &size, what))
		return -1;
	if (size > c->end - c->pos)
		return td_damaged(c->f, "%s claims %" PRIu64 " bytes where %" PRIu64 " are left",
			       what, size, c->end - c->pos);
	c->pos += size;
	return 0;
}

/* A sized block, read into memory (at most the file's size): NUL-terminated. */
static char *read_sized(struct cursor *c, int bytes, const char *what, uint64_t *size)
{
	uint64_t start = c->pos + bytes;
	char *text;

	if (skip_sized(c, bytes, what))
		return NULL;
	*size = c->pos - start;
	text = xcalloc(*size + 1, 1);
	if (td_read_at(c->f, start, text, *size)) {
		free(text);
		return NULL;
	}
	return text;
}

/* A tag of @len bytes with its NUL, e.g. "header_page". */
static int expect_tag(struct cursor *c, const char *tag, size_t len)
{
	char buf[16];

	if (c->end - c->pos < len || td_read_at(c->f, c->pos, buf, len) || memcmp(buf, tag, len))
		return td_damaged(c->f, "no '%s' where it belongs", tag);
	c->pos += len;
	return 0;
}

static int skip_string(struct cursor *c, const char *what)
{
	char buf[256];

	while (c->pos < c->end) {
		size_t len = c->end - c->pos < sizeof(buf) ? c->end - c->pos : sizeof(buf);
		char *nul;

		if (td_read_at(c->f, c->pos, buf, len))
			return -1;
		nul = memchr(buf, '\0', len);
		if (nul) {
			c->pos += nul - buf + 1;
			return 0;
		}
		c->pos += len;
	}
	return td_damaged(c->f, "%s runs on", what);
}

/*
 * The ring-buffer page layout, parsed by the same libtraceevent call
 * libtracecmd makes: it refuses a timestamp that is not 8 bytes only after
 * setting up its CPUs, and a later CPU's failure there ends in
 * tracecmd_close() on a half-made handle (a NULL dereference).
 */
static int parse_page_header(struct cursor *c)
{
	struct tep_handle *tep = tep_alloc();
	int ts_size = 0, ret = -1;
	uint64_t size;
	char *text;

	text = read_sized(c, 8, "the header_page format", &size);
	if (!text)
		goto out;
	if (tep && !tep_parse_header_page(tep, text, size, c->f->long_size))
		ts_size = tep_get_header_timestamp_size(tep);
	if (ts_size != 8) {
		td_damaged(c->f, "its header_page format gives a %d-byte timestamp, not 8", ts_size);
		goto out;
	}
	/* As libtracecmd sets up its kbuffer: 8 bytes, or else 4. */
	c->f->commit_size = tep_get_header_page_size(tep) == 8 ? 8 : 4;
	ret = 0;
out:
	tep_free(tep);
	free(text);
	return ret;
}

static int check_header_info(struct cursor *c)
{
	return expect_tag(c, "header_page", 12) || parse_page_header(c) ||
	       expect_tag(c, "header_event", 13) || skip_sized(c, 8, "the header_event format");
}

/* "name: NAME" of a format, for messages: at most 64 characters. */
static int event_name_len(const char *text, size_t size, const char **name)
{
	const char *p = size > 6 && !memcmp(text, "name: ", 6) ? text + 6 : NULL;
	int n = 0;

	while (p && p + n < text + size && n < 64 && isgraph((unsigned char)p[n]))
		n++;
	*name = p ? p : "?";
	return p ? n : 1;
}

/* One event format: its size, then a text whose print fmt fmtcheck.c checks. */
static int check_format(struct cursor *c, const char *what)
{
	const char *byte, *field, *token, *name;
	uint64_t size;
	size_t len;
	char *text;
	int ret = 0, n;

	text = read_sized(c, 8, what, &size);
	if (!text)
		return -1;
	byte = format_unprintable_byte(text, size);
	if (!byte)
		byte = format_bad_declaration(text, size);
	field = format_undeclared_field(text, size, &len);
	token = format_unparsed_token(text, size);
	n = event_name_len(text, size, &name);
	if (byte)
		ret = td_damaged(c->f, "the format of event '%.*s' has a byte 0x%02x at %td where no kernel format has one (libtraceevent 1.7.1 crashes on some such formats)",
				 n, name, (unsigned char)*byte, byte - text);
	else if (field)
		ret = td_damaged(c->f, "the print fmt of event '%.*s' names a field REC->%.*s it does not declare (libtraceevent 1.7.1 crashes on some such formats)",
				 n, name, (int)(len < 64 ? len : 64), field);
	else if (token)
		ret = td_damaged(c->f, "the print fmt of event '%.*s' has a '%c' where no kernel format has one (libtraceevent 1.7.1 crashes on some such formats)",
				 n, name, isprint((unsigned char)*token) ? *token : '?');
	free(text);
	return ret;
}

/* A count, then that many sized formats: each takes 8 bytes at least. */
static int check_formats(struct cursor *c, const char *what)
{
	uint64_t count, i;

	if (read_number(c, 4, &count, what))
		return -1;
	for (i = 0; i < count; i++)
		if (check_format(c, what))
			return -1;
	return 0;
}

static int check_event_systems(struct cursor *c)
{
	uint64_t systems, i;

	if (read_number(c, 4, &systems, "the event systems"))
		return -1;
	for (i = 0; i < systems; i++)
		if (skip_string(c, "an event system's name") ||
		    check_formats(c, "an event format"))
			return -1;
	return 0;
}

static int check_printk(struct cursor *c)
{
	uint64_t size;
	char *text = read_sized(c, 4, "the printk formats", &size);
	const char *line;
	int ret = 0;

	if (!text)
		return -1;
	line = printk_unparsed_line(text, size);
	if (line)
		ret = td_damaged(c->f, "the printk formats have a line at byte %td without an address, a ':' and a format of 3 bytes or more (libtraceevent 1.7.1 reads outside such a line)",
				 line - text);
	free(text);
	return ret;
}

/* The metadata section libtracecmd reads for option @id (16-21). */
static int check_metadata(struct cursor *c, unsigned int id)
{
	switch (id) {
	case TD_OPTION_HEADER_INFO:
		return check_header_info(c);
	case TD_OPTION_HEADER_INFO + 1:
		return check_formats(c, "an ftrace event format");
	case TD_OPTION_HEADER_INFO + 2:
		return check_event_systems(c);
	case TD_OPTION_HEADER_INFO + 3:
		return skip_sized(c, 4, "kallsyms");
	case TD_OPTION_HEADER_INFO + 4:
		return check_printk(c);
	default:
		return skip_sized(c, 8, "the saved cmdlines");
	}
}

/* A part of @size bytes at @off, all of it inside the file. */
static int cursor_at(struct cursor *c, struct td_file *f, uint64_t off, uint64_t size,
		     const char *what)
{
	if (off > f->size || size > f->size - off)
		return td_damaged(f, "%s at %" PRIu64 " claims %" PRIu64 " bytes, the file has %" PRIu64,
			       what, off, size, f->size);
	c->f = f;
	c->pos = off;
	c->end = off + size;
	return 0;
}

/*
 * A section marked compressed in a file that names no compression sends
 * libtracecmd into its decompression with no algorithm, and a failure
 * while it sets up the CPUs ends in tracecmd_close() on a half-made handle.
 */
static int check_flags(struct td_file *f, uint64_t off, uint64_t flags)
{
	if ((flags & TD_SECTION_COMPRESSED) && f->zip == TD_ZIP_NONE)
		return td_damaged(f, "the section at %" PRIu64 " is marked compressed, the file names no compression",
				  off);
	return 0;
}

/*
 * A compressed section is read by libtracecmd from its decompressed
 * block, never past it: the same checks, on that block. The page layout
 * found there is the file's.
 */
static int check_compressed_section(struct td_file *f, unsigned int id, uint64_t off,
				    uint64_t size)
{
	struct td_file block;
	struct cursor c;
	unsigned char *data;
	uint64_t len;
	int ret;

	data = td_uncompress_block(f, off, size, &len);
	if (!data)
		return -1;
	td_open_block(&block, f, data, len);
	ret = cursor_at(&c, &block, 0, len, "a compressed section") || check_metadata(&c, id);
	f->commit_size = block.commit_size;
	free(data);
	return ret;
}

/* The section an option 16-21 points at: its header, then its contents. */
static int check_section(struct td_file *f, unsigned int id, uint64_t off)
{
	unsigned char hdr[SECTION_HEADER_SIZE];
	struct cursor c;
	uint64_t size;

	if (cursor_at(&c, f, off, sizeof(hdr), "a metadata section header") ||
	    td_read_at(f, off, hdr, sizeof(hdr)))
		return -1;
	if (td_number(f, hdr, 2) != id)
		return td_damaged(f, "option %u points at a section of another kind", id);
	size = td_number(f, hdr + 8, 8);
	if (check_flags(f, off, td_number(f, hdr + 2, 2)))
		return -1;
	if (td_number(f, hdr + 2, 2) & TD_SECTION_COMPRESSED)
		return cursor_at(&c, f, off + sizeof(hdr), size, "a metadata section") ||
		       check_compressed_section(f, id, off + sizeof(hdr), size);
	/*
	 * libtracecmd reads a section's contents from the file, not from
	 * the section: an empty kallsyms section borrows the next bytes.
	 */
	return cursor_at(&c, f, off + sizeof(hdr), size, "a metadata section") ||
	       cursor_at(&c, f, off + sizeof(hdr), f->size - off - sizeof(hdr), "a metadata section") ||
	       check_metadata(&c, id);
}

/*
 * libtracecmd divides by the page size and maps pages at multiples of it:
 * a power of two, from the smallest page Linux has to a large sub-buffer.
 */
static int check_page_size(struct td_file *f)
{
	uint32_t size = f->page_size;

	if (size < MIN_PAGE_SIZE || size > MAX_PAGE_SIZE || (size & (size - 1)))
		return td_damaged(f, "its page size %u is not a power of two from %u to %u",
				  size, MIN_PAGE_SIZE, MAX_PAGE_SIZE);
	return 0;
}

/*
 * A page of a CPU's data, @avail bytes of it there: kbuffer reads as many
 * bytes of events as its commit field says, past the page when that says
 * more (SIGSEGV in kbuffer_load_subbuffer()), and libtracecmd gives up on
 * the first page while opening, with the half-made handle. @at: where the
 * page starts, in the file or in the CPU's decompressed data.
 */
static int check_page(struct td_file *f, uint64_t cpu, uint64_t at, const unsigned char *page,
		      uint64_t avail)
{
	uint64_t header = 8 + f->commit_size, commit;

	if (avail < header)
		return td_damaged(f, "CPU %" PRIu64 "'s page at %" PRIu64 " is shorter than a page header",
				  cpu, at);
	commit = td_number(f, page + 8, f->commit_size) & PAGE_COMMIT_MASK;
	if (header + commit > avail)
		return td_damaged(f, "CPU %" PRIu64 "'s page at %" PRIu64 " claims %" PRIu64 " bytes of events, it holds %" PRIu64,
				  cpu, at, commit, avail - header);
	return 0;
}

/* The pages of @len bytes of a CPU's data in memory, the first at @at. */
static int check_pages_in(struct td_file *f, uint64_t cpu, uint64_t at, const unsigned char *data,
			  uint64_t len)
{
	uint64_t pos;

	for (pos = 0; pos < len; pos += f->page_size)
		if (check_page(f, cpu, at + pos, data + pos,
			       len - pos < f->page_size ? len - pos : f->page_size))
			return -1;
	return 0;
}

/*
 * Compressed CPU data: u32 count, then that many chunks of whole pages.
 * libtracecmd decompresses them all while opening, and any that fails
 * ends in tracecmd_close() on a half-made handle; a count of 0 gives a
 * CPU with data and no event. The size trace-cmd 3.1.6 writes for the
 * CPU is that of the chunks: the count comes on top.
 */
static int check_cpu_chunks(struct td_file *f, uint64_t cpu, uint64_t off, uint64_t size)
{
	struct cursor c = { .f = f, .pos = off, .end = off + size + 4 };
	uint64_t count, i, len, used, at = 0;
	unsigned char *data;
	int ret = 0;

	if (c.end > f->size)
		return td_damaged(f, "CPU %" PRIu64 "'s compressed data at %" PRIu64 " claims %" PRIu64 " bytes and its chunk count, the file has %" PRIu64,
				  cpu, off, size, f->size);

	if (read_number(&c, 4, &count, "a CPU's compressed data"))
		return -1;
	if (!count)
		return td_damaged(f, "CPU %" PRIu64 "'s compressed data (%" PRIu64 " bytes) holds no chunk",
				  cpu, size);
	for (i = 0; i < count && !ret; i++) {
		data = td_uncompress_chunk(f, c.pos, c.end - c.pos, &len, &used);
		if (!data)
			return -1;
		ret = check_pages_in(f, cpu, at, data, len);
		c.pos += used;
		at += len;
		free(data);
	}
	f->page_bytes += at;
	return ret;
}

/* Each page of uncompressed CPU data, read from the file. */
static int check_cpu_pages(struct td_file *f, uint64_t cpu, uint64_t off, uint64_t size)
{
	unsigned char hdr[16];
	uint64_t pos, len;

	for (pos = off; pos < off + size; pos += f->page_size) {
		len = off + size - pos < f->page_size ? off + size - pos : f->page_size;
		if (td_read_at(f, pos, hdr, len < sizeof(hdr) ? len : sizeof(hdr)))
			return -1;
		if (len < sizeof(hdr))
			memset(hdr + len, 0, sizeof(hdr) - len);
		if (check_page(f, cpu, pos, hdr, len))
			return -1;
	}
	return 0;
}

/* Where a CPU's data is, and each of its pages. */
static int check_cpu_data(struct td_file *f, uint64_t cpu, uint64_t off, uint64_t size,
			  bool compressed)
{
	if (off > f->size || size > f->size - off)
		return td_damaged(f, "CPU %" PRIu64 "'s data at %" PRIu64 " claims %" PRIu64 " bytes, the file has %" PRIu64,
				  cpu, off, size, f->size);
	if (!size)
		return 0;
	f->data_bytes += size;
	if (compressed)
		return check_cpu_chunks(f, cpu, off, size);
	f->page_bytes += size;
	/* libtracecmd maps the data from its first byte. */
	if (off % f->page_size)
		return td_damaged(f, "CPU %" PRIu64 "'s data at %" PRIu64 " does not start on a page", cpu, off);
	return check_cpu_pages(f, cpu, off, size);
}

/* Whether the flyrecord section at @off, a BUFFER option's, is compressed. */
static int check_flyrecord(struct td_file *f, uint64_t off, bool *compressed)
{
	unsigned char hdr[SECTION_HEADER_SIZE];

	if (off > f->size || f->size - off < sizeof(hdr) || td_read_at(f, off, hdr, sizeof(hdr)))
		return td_damaged(f, "a buffer's CPU data section at %" PRIu64 " is beyond the file", off);
	*compressed = td_number(f, hdr + 2, 2) & TD_SECTION_COMPRESSED;
	return check_flags(f, off, td_number(f, hdr + 2, 2));
}

/*
 * A BUFFER option: offset, name, clock, page size, CPUs, and each CPU's
 * data. libtracecmd reads an instance's pages at the buffer's page size,
 * the top buffer's (name "") at the file header's.
 */
static int check_buffer(struct td_file *f, const unsigned char *data, uint32_t len)
{
	const unsigned char *p = data + 8, *end = data + len, *s;
	uint32_t file_page_size = f->page_size;
	uint64_t cpus, i;
	bool compressed = false, top = len > 8 && !*p;
	int ret = 0;

	if (check_flyrecord(f, td_number(f, data, 8), &compressed))
		return -1;

	for (i = 0; i < 2; i++) {			/* name and clock */
		s = p < end ? memchr(p, '\0', end - p) : NULL;
		if (!s)
			return td_damaged(f, "a buffer option's strings run on");
		p = s + 1;
	}
	if (end - p < 8)
		return td_damaged(f, "a buffer option is cut short");
	cpus = td_number(f, p + 4, 4);
	if (!top)
		f->page_size = td_number(f, p, 4);
	p += 8;
	if (cpus > (uint64_t)(end - p) / BUFFER_CPU_SIZE)
		ret = td_damaged(f, "a buffer option claims %" PRIu64 " CPUs in %td bytes",
				 cpus, end - p);
	else if (cpus && !top)
		ret = check_page_size(f);
	for (i = 0; i < cpus && !ret; i++, p += BUFFER_CPU_SIZE) {
		uint64_t cpu = td_number(f, p, 4);
		uint64_t off = td_number(f, p + 4, 8), size = td_number(f, p + 12, 8);

		if (cpu >= MAX_TRACE_CPUS)
			ret = td_damaged(f, "a buffer option names CPU %" PRIu64 ", more than Linux's %d",
					 cpu, MAX_TRACE_CPUS);
		else
			ret = check_cpu_data(f, cpu, off, size, compressed);
	}
	f->page_size = file_page_size;
	return ret;
}

/*
 * A HOOK option (trace-cmd record's old -H): libtracecmd parses its text
 * with tracecmd_create_event_hook() and uses the result unchecked, so a
 * text it cannot parse, or one without its NUL, is a NULL dereference or
 * a read past the option. Parsed here by the same function.
 */
static int check_hook(struct td_file *f, const unsigned char *data, uint32_t len)
{
	struct hook_list *hook;

	if (!memchr(data, '\0', len))
		return td_damaged(f, "a hook option's text runs on");
	hook = tracecmd_create_event_hook((const char *)data);
	if (!hook)
		return td_damaged(f, "a hook option's text is not a hook");
	tracecmd_free_hooks(hook);
	return 0;
}

/*
 * The options libtracecmd reads without looking at their size: as a C
 * string (strdup(), strtoll(), strtok_r()), as a u32, or by writing the
 * byte before the end; and the hook.
 */
static int check_option(struct td_file *f, unsigned int id, const unsigned char *data,
			uint32_t len)
{
	switch (id) {
	case OPTION_DATE:
	case TD_OPTION_OFFSET:
	case OPTION_TRACECLOCK:
	case OPTION_UNAME:
	case OPTION_VERSION:
		if (!memchr(data, '\0', len))
			return td_damaged(f, "option %u's text has no terminating NUL (libtracecmd 1.3.1 reads it as a C string)",
					  id);
		return 0;
	case OPTION_CPUSTAT:
		return len ? 0 : td_damaged(f, "a CPUSTAT option is empty (libtracecmd 1.3.1 writes the byte before it)");
	case OPTION_CPUCOUNT:
		return len >= 4 ? 0 : td_damaged(f, "a CPUCOUNT option has %u bytes, not 4", len);
	case TD_OPTION_HOOK:
		return check_hook(f, data, len);
	case OPTION_BUFFER_TEXT:
		return td_damaged(f, "a latency buffer (BUFFER_TEXT option): only flyrecord data has per-CPU events (libtracecmd 1.3.1 leaves such a buffer's CPUs unset)");
	}
	return 0;
}

static int check_metadata_option(struct td_file *f, unsigned int id, const unsigned char *data,
				 uint32_t len)
{
	if (id >= TD_OPTION_HEADER_INFO && id <= TD_OPTION_CMDLINES && len >= 8)
		return check_section(f, id, td_number(f, data, 8));
	return check_option(f, id, data, len);
}

static int check_buffer_option(struct td_file *f, unsigned int id, const unsigned char *data,
			       uint32_t len)
{
	if (id != TD_OPTION_BUFFER)
		return 0;
	f->buffers++;
	return len >= 8 ? check_buffer(f, data, len) : 0;
}

/*
 * libtracecmd reads all options, then the sections: the page layout first.
 * CPU data is reached only through a BUFFER option, and trace-cmd writes
 * one for every buffer it records, empty or not.
 */
static int check_v7(struct td_file *f)
{
	if (td_walk_options(f, check_metadata_option))
		return -1;
	if (!f->commit_size)
		return td_damaged(f, "no header_page format");
	if (td_walk_options(f, check_buffer_option))
		return -1;
	if (!f->buffers)
		return td_damaged(f, "no BUFFER option: its CPU data cannot be reached");
	return 0;
}

/* Version 6: what libtracecmd reads after the CPU count, per buffer. */
struct v6_tail {
	uint64_t cpus;			/* a CPUCOUNT option replaces the count */
	uint64_t *instances;		/* where each BUFFER option's tail is */
	unsigned int nr_instances;
};

/*
 * A version 6 option: u32 size and its data, checked as in version 7. A
 * BUFFER option (u64 offset, name) gives where an instance's own options
 * and CPU data are; libtracecmd reads them there with the CPU count of
 * the top buffer's options. @t is NULL inside an instance's tail, where
 * libtracecmd reads neither.
 */
static int check_v6_option(struct cursor *c, unsigned int id, struct v6_tail *t)
{
	uint64_t len;
	unsigned char *data = (unsigned char *)read_sized(c, 4, "an option", &len);
	int ret;

	if (!data)
		return -1;
	ret = check_option(c->f, id, data, len);
	if (!ret && t && id == OPTION_CPUCOUNT)
		t->cpus = td_number(c->f, data, 4);
	if (!ret && t && id == TD_OPTION_BUFFER) {
		if (len < 9 || !memchr(data + 8, '\0', len - 8)) {
			ret = td_damaged(c->f, "a BUFFER option is cut short");
		} else {
			t->instances = xrealloc(t->instances, t->nr_instances + 1,
						sizeof(*t->instances));
			t->instances[t->nr_instances++] = td_number(c->f, data, 8);
		}
	}
	free(data);
	return ret;
}

/* The 10-byte tag of version 6's options or CPU data ("options  ", "flyrecord"). */
static int read_tag(struct cursor *c, char *tag, size_t len)
{
	if (c->end - c->pos < len || td_read_at(c->f, c->pos, tag, len))
		return td_damaged(c->f, "it ends before its options or CPU data");
	c->pos += len;
	return 0;
}

/*
 * Options until DONE, then "flyrecord" and where each CPU's data is.
 * Latency data ("latency") has no CPUs libtracecmd sets up: refused.
 */
static int check_v6_tail(struct cursor *c, struct v6_tail *t, uint64_t cpus)
{
	char tag[10];
	uint64_t id, i, off, size;

	if (read_tag(c, tag, sizeof(tag)))
		return -1;
	if (!strncmp(tag, "options", 7)) {
		for (;;) {
			if (read_number(c, 2, &id, "an option"))
				return -1;
			if (!id)
				break;
			if (check_v6_option(c, id, t))
				return -1;
		}
		if (t)
			cpus = t->cpus;
		if (read_tag(c, tag, sizeof(tag)))
			return -1;
	}
	if (strncmp(tag, "flyrecord", 10))
		return td_damaged(c->f, "no flyrecord CPU data where it belongs (latency data has no per-CPU events)");
	if (cpus > MAX_TRACE_CPUS)
		return td_damaged(c->f, "it claims %" PRIu64 " CPUs, more than Linux's %d",
				  cpus, MAX_TRACE_CPUS);
	for (i = 0; i < cpus; i++) {
		if (read_number(c, 8, &off, "the CPU data offsets") ||
		    read_number(c, 8, &size, "the CPU data offsets"))
			return -1;
		if (check_cpu_data(c->f, i, off, size, false))
			return -1;
	}
	return 0;
}

/* Each instance's tail, read with the top buffer's CPU count. */
static int check_v6_instances(struct td_file *f, const struct v6_tail *t)
{
	struct cursor c;
	unsigned int i;

	for (i = 0; i < t->nr_instances; i++)
		if (cursor_at(&c, f, t->instances[i], 0, "a buffer instance") ||
		    cursor_at(&c, f, t->instances[i], f->size - t->instances[i], "a buffer instance") ||
		    check_v6_tail(&c, NULL, t->cpus))
			return -1;
	return 0;
}

static int check_v6(struct td_file *f)
{
	struct cursor c = { .f = f, .pos = f->header_end, .end = f->size };
	struct v6_tail t = { 0 };
	unsigned int id;
	int ret;

	for (id = TD_OPTION_HEADER_INFO; id <= TD_OPTION_CMDLINES; id++)
		if (check_metadata(&c, id))
			return -1;
	if (read_number(&c, 4, &t.cpus, "the CPU count"))
		return -1;
	ret = check_v6_tail(&c, &t, t.cpus) || check_v6_instances(f, &t);
	free(t.instances);
	return ret ? -1 : 0;
}

/* @f opened by td_open_header(); f->data_bytes: the CPU data it holds. */
int td_check_sizes(struct td_file *f)
{
	if (check_page_size(f))
		return -1;
	return f->version == 6 ? check_v6(f) : check_v7(f);
}
