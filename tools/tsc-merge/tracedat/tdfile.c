// SPDX-License-Identifier: GPL-2.0
/*
 * tdfile.c: read a trace.dat's file header and the option sections of
 * version 7, and write a copy with one more section appended.
 *
 * In version 7 the options live in a chain of sections: the file header
 * gives the offset of the first, and each ends with a DONE option whose
 * 8 bytes hold the offset of the next (0 at the last). trace-cmd extends a
 * file the same way, so a copy with the last link pointed at a section
 * appended at its end is a file every libtracecmd reads, and all other
 * bytes stay those of the input. Only this file-level walk is done here:
 * the events are libtracecmd's business.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracedat/tdfile.h"

#define OPTION_DONE		0
#define SECTION_HEADER_SIZE	16	/* u16 id, u16 flags, u32 desc, u64 size */
#define OPTION_HEADER_SIZE	6	/* u16 id, u32 size */
#define HEADER_READ		4096
#define MAX_SECTIONS		4096

static const char magic[] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

/* The file is a trace.dat whose structure does not hold: say what. */
int td_damaged(const struct td_file *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(f->path, "a trace.dat file, but cut short or damaged", fmt, ap);
	va_end(ap);
	return -1;
}

static int td_error(const struct td_file *f, const char *what)
{
	fprintf(stderr, "%s: %s\n", f->path, what);
	return -1;
}

uint64_t td_number(const struct td_file *f, const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++)
		v |= (uint64_t)p[f->big_endian ? bytes - 1 - i : i] << (8 * i);
	return v;
}

static void put_number(const struct td_file *f, unsigned char *p, uint64_t v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[f->big_endian ? bytes - 1 - i : i] = v >> (8 * i);
}

int td_read_at(const struct td_file *f, uint64_t off, void *buf, size_t len)
{
	ssize_t n;

	if (off > f->size || len > f->size - off)
		return td_damaged(f, "a section points past the end of %s",
				  f->mem ? "a compressed block" : "the file");
	if (f->mem) {
		memcpy(buf, f->mem + off, len);
		return 0;
	}
	n = pread(f->fd, buf, len, off);
	if (n != (ssize_t)len)
		return n < 0 ? td_error(f, strerror(errno)) : td_damaged(f, "it ends inside a section");
	return 0;
}

/* A NUL-terminated string of the header at *@pos, moved past it. */
static int skip_string(const struct td_file *f, const unsigned char *buf, size_t len,
		       size_t *pos, const char **str)
{
	const unsigned char *end = memchr(buf + *pos, '\0', len - *pos);

	if (!end)
		return td_damaged(f, "a string of its header runs on");
	if (str)
		*str = (const char *)buf + *pos;
	*pos = end - buf + 1;
	return 0;
}

/*
 * Magic, version, endianness, long size, page size; in version 7 also the
 * compression and the offset of the first option section.
 */
static int read_header(struct td_file *f)
{
	unsigned char buf[HEADER_READ];
	size_t len = f->size < sizeof(buf) ? f->size : sizeof(buf);
	size_t pos = sizeof(magic);
	const char *version, *compression = "";

	if (pread(f->fd, buf, len, 0) != (ssize_t)len)
		return td_error(f, strerror(errno));
	if (len < sizeof(magic) || memcmp(buf, magic, sizeof(magic)))
		return td_error(f, "not a trace-cmd trace.dat file");
	if (skip_string(f, buf, len, &pos, &version))
		return -1;
	if (strcmp(version, "6") && strcmp(version, "7")) {
		fprintf(stderr, "%s: trace.dat version '%s', not 6 or 7\n", f->path, version);
		return -1;
	}
	f->version = *version - '0';
	if (pos + 6 > len)
		return td_damaged(f, "it ends inside its header");
	f->big_endian = buf[pos];
	f->long_size = buf[pos + 1];
	f->page_size = td_number(f, buf + pos + 2, 4);
	pos += 6;
	if (f->version == 6) {
		f->header_end = pos;
		return 0;
	}
	if (skip_string(f, buf, len, &pos, &compression) ||
	    skip_string(f, buf, len, &pos, NULL))	/* its version */
		return -1;
	f->zip = td_zip_of(compression);
	if (f->zip == TD_ZIP_UNKNOWN) {
		fprintf(stderr, "%s: compressed with '%s', which libtracecmd reads only as zstd or zlib\n",
			f->path, compression);
		return -1;
	}
	if (pos + 8 > len)
		return td_damaged(f, "it ends inside its header");
	f->first_options = td_number(f, buf + pos, 8);
	f->header_end = pos + 8;
	return 0;
}

static int note_option(struct td_file *f, unsigned int id, const unsigned char *data,
		       uint32_t size)
{
	if (id == TD_OPTION_TRACEID && size >= 8)
		f->trace_id = td_number(f, data, 8);
	return 0;
}

/*
 * The contents of the option section at @off, whose header is @hdr:
 * decompressed when the section is compressed.
 */
static unsigned char *read_options(struct td_file *f, uint64_t off, const unsigned char *hdr,
				   uint64_t *size)
{
	unsigned char *data;

	if (td_number(f, hdr + 2, 2) & TD_SECTION_COMPRESSED) {
		f->compressed_options = off;
		return td_uncompress_block(f, off + SECTION_HEADER_SIZE, *size, size);
	}
	data = xcalloc(*size ? *size : 1, 1);
	if (td_read_at(f, off + SECTION_HEADER_SIZE, data, *size)) {
		free(data);
		return NULL;
	}
	return data;
}

/*
 * Give each option of the section at @off to @visit; *@next: the DONE
 * option's link. Where an option lies in the file (f->option_at, and the
 * last link) is known only in an uncompressed section; in a compressed one
 * it is 0.
 */
static int read_section(struct td_file *f, uint64_t off, td_option_fn visit, uint64_t *next)
{
	unsigned char hdr[SECTION_HEADER_SIZE], *data;
	uint64_t size, pos = 0, base;
	int ret = -1;

	*next = 0;
	if (td_read_at(f, off, hdr, sizeof(hdr)))
		return -1;
	if (td_number(f, hdr, 2) != OPTION_DONE)
		return td_damaged(f, "an option section link points at something else");
	size = td_number(f, hdr + 8, 8);
	if (size > f->size - off - sizeof(hdr))
		return td_damaged(f, "an option section is larger than the file");
	f->desc = td_number(f, hdr + 4, 4);
	data = read_options(f, off, hdr, &size);
	if (!data)
		return -1;
	base = td_number(f, hdr + 2, 2) & TD_SECTION_COMPRESSED ? 0 : off + sizeof(hdr);
	while (pos + OPTION_HEADER_SIZE <= size) {
		unsigned int id = td_number(f, data + pos, 2);
		uint32_t len = td_number(f, data + pos + 2, 4);

		pos += OPTION_HEADER_SIZE;
		if (len > size - pos)
			break;
		if (id == OPTION_DONE && len == 8) {
			f->last_link = base ? base + pos : 0;
			*next = td_number(f, data + pos, 8);
			ret = 0;
			goto out;
		}
		f->option_at = base ? base + pos : 0;
		if (visit(f, id, data + pos, len))
			goto out;
		pos += len;
	}
	td_damaged(f, "an option section has no DONE option");
out:
	free(data);
	return ret;
}

/* Walk a version 7 file's chain of option sections, giving each option to @visit. */
int td_walk_options(struct td_file *f, td_option_fn visit)
{
	uint64_t off, next;
	int n;

	/* trace-cmd only appends: a link that does not go forward is damage. */
	for (n = 0, off = f->first_options; off; n++, off = next) {
		if (n == MAX_SECTIONS || read_section(f, off, visit, &next))
			return -1;
		if (next && next <= off)
			return td_damaged(f, "its option sections link backwards");
	}
	return 0;
}

/* Open @path and read its file header; version 6 or 7. */
int td_open_header(struct td_file *f, const char *path)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st)) {
		td_error(f, strerror(errno));
		td_close(f);
		return -1;
	}
	f->size = st.st_size;
	if (read_header(f)) {
		td_close(f);
		return -1;
	}
	return 0;
}

/* Open a version 7 file with uncompressed options, to append to a copy. */
int td_open(struct td_file *f, const char *path)
{
	if (td_open_header(f, path))
		return -1;
	if (f->version == 6) {
		fprintf(stderr, "%s: a version 6 trace.dat holds its options before the events, so nothing can be added; convert it first: trace-cmd convert --file-version 7 -i %s -o NEW.dat\n",
			f->path, f->path);
		goto fail;
	}
	if (td_walk_options(f, note_option))
		goto fail;
	if (f->compressed_options) {
		fprintf(stderr, "%s: its options are compressed; write an uncompressed copy first: trace-cmd convert --compression none -i %s -o NEW.dat\n",
			f->path, f->path);
		goto fail;
	}
	if (!f->last_link) {
		td_damaged(f, "no option section");
		goto fail;
	}
	return 0;
fail:
	td_close(f);
	return -1;
}

void td_close(struct td_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

void td_opt_init(struct td_options *o)
{
	memset(o, 0, sizeof(*o));
}

void td_opt_free(struct td_options *o)
{
	free(o->buf);
	memset(o, 0, sizeof(*o));
}

static unsigned char *grow(struct td_options *o, size_t len)
{
	if (o->len + len > o->alloc) {
		o->alloc = (o->len + len) * 2;
		o->buf = xrealloc(o->buf, o->alloc, 1);
	}
	o->len += len;
	return o->buf + o->len - len;
}

/* Start option @id; its size is set by td_opt_end(). */
void td_opt_begin(struct td_options *o, unsigned int id)
{
	o->start = o->len;
	o->id = id;
	grow(o, OPTION_HEADER_SIZE);
}

void td_opt_put(struct td_options *o, const struct td_file *f, uint64_t v, int bytes)
{
	put_number(f, grow(o, bytes), v, bytes);
}

void td_opt_put_string(struct td_options *o, const char *s)
{
	memcpy(grow(o, strlen(s) + 1), s, strlen(s) + 1);
}

void td_opt_put_bytes(struct td_options *o, const void *p, size_t len)
{
	memcpy(grow(o, len), p, len);
}

void td_opt_end(struct td_options *o, const struct td_file *f)
{
	put_number(f, o->buf + o->start, o->id, 2);
	put_number(f, o->buf + o->start + 2, o->len - o->start - OPTION_HEADER_SIZE, 4);
}

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n <= 0)
			return -1;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/*
 * Copy @f's bytes to @fd: copy_file_range shares or copies in the kernel,
 * plain reads where it cannot.
 */
int td_copy(const struct td_file *f, int fd)
{
	char buf[1 << 16];
	loff_t off_in = 0, off_out = 0;

	while ((uint64_t)off_in < f->size) {
		ssize_t n = copy_file_range(f->fd, &off_in, fd, &off_out, f->size - off_in, 0);

		if (n > 0)
			continue;
		if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL &&
		    errno != EOPNOTSUPP)
			return -1;
		n = pread(f->fd, buf, sizeof(buf), off_in);
		if (n <= 0 || write_all(fd, buf, n, off_out))
			return -1;
		off_in += n;
		off_out += n;
	}
	return 0;
}

/*
 * To a copy of @f in @fd, append the options of @o in a new section and
 * link it from the last DONE option.
 */
/* In a copy of @f in @fd, overwrite @bytes bytes at @off with @v. */
int td_patch_number(const struct td_file *f, int fd, uint64_t off, uint64_t v, int bytes)
{
	unsigned char buf[8];

	put_number(f, buf, v, bytes);
	return write_all(fd, buf, bytes, off);
}

int td_patch_bytes(int fd, uint64_t off, const void *buf, size_t len)
{
	return write_all(fd, buf, len, off);
}

int td_append(const struct td_file *f, int fd, const struct td_options *o)
{
	unsigned char hdr[SECTION_HEADER_SIZE], link[8];
	struct td_options done;
	int ret;

	td_opt_init(&done);
	td_opt_begin(&done, OPTION_DONE);
	td_opt_put(&done, f, 0, 8);
	td_opt_end(&done, f);
	put_number(f, hdr, OPTION_DONE, 2);
	put_number(f, hdr + 2, 0, 2);
	put_number(f, hdr + 4, f->desc, 4);
	put_number(f, hdr + 8, o->len + done.len, 8);
	put_number(f, link, f->size, 8);
	ret = write_all(fd, hdr, sizeof(hdr), f->size) ||
	      write_all(fd, o->buf, o->len, f->size + sizeof(hdr)) ||
	      write_all(fd, done.buf, done.len, f->size + sizeof(hdr) + o->len) ||
	      write_all(fd, link, sizeof(link), f->last_link) ? -1 : 0;
	td_opt_free(&done);
	return ret;
}
