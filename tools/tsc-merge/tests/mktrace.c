// SPDX-License-Identifier: GPL-2.0
/*
 * mktrace: write a trace.dat holding exactly the events a spec lists, so the
 * merge tool's tests and benchmarks get traces with chosen values.
 *
 *   mktrace -t TRACEFS_DIR -o OUT.dat [SPEC|-]
 *
 * TRACEFS_DIR holds events/header_page and events/SYSTEM/EVENT/format files
 * copied from a kernel; libtraceevent parses them and gives every field's
 * offset and size. Records go into one file per CPU in the ring buffer's
 * page format (the bytes trace_pipe_raw returns), written page by page while
 * the spec streams in, and libtracecmd assembles them with the headers into
 * trace.dat the way `trace-cmd restore` does, plus the chosen trace clock.
 *
 * Spec lines (a word starting with '#' starts a comment):
 *
 *   clock NAME                  trace clock stored in the file (x86-tsc)
 *   cpus N                      number of CPUs (1 + highest CPU used)
 *   comm PID NAME               a saved_cmdlines entry
 *   CPU TS PID SYSTEM:EVENT [FIELD=VALUE ...]
 *
 * TS is the raw clock value. Numbers are decimal or 0x-hex, negative ones are
 * stored as two's complement in the field's size. char arrays and a trailing
 * char[] (ftrace:print's buf) take a string; "double quotes" keep spaces and
 * \n \t \" \\ are decoded anywhere. Unset fields are 0. On any error mktrace
 * names the spec line, exits 1 and leaves no OUT.dat behind.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "../common.h"
#include "../tracecmd-private.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mktrace writes host-endian pages with little-endian event headers"
#endif

/*
 * The ring buffer's event header (events/header_event): a u32 with type_len
 * in the low 5 bits and time_delta in the upper 27, then array[0] for
 * time extends and for records longer than 28 words.
 */
#define TYPE_LEN_BITS		5
#define TIME_DELTA_BITS		27
#define TYPE_TIME_EXTEND	30
#define TIME_EXTEND_SIZE	8
#define MAX_SMALL_DATA		(28 * 4)
/* The header of a longer record: the u32 and array[0] = length + 4. */
#define LONG_HEADER		8
/* A time extend carries 27 + 32 bits of delta; larger gaps start a page. */
#define MAX_EXTEND_BITS		(TIME_DELTA_BITS + 32)

#define MAX_WORDS		64
#define MAX_CPUS		8192
#define DEFAULT_CLOCK		"x86-tsc"

/* The sub-buffer ("page") layout that events/header_page describes. */
struct page_layout {
	int size;		/* bytes of one page */
	int ts_size;		/* u64 timestamp at offset 0 */
	int commit_size;	/* local_t commit: bytes of data in use */
	int data_offset;	/* data follows the two */
};

/* One CPU's per-CPU data file and the page being filled. */
struct cpu_buffer {
	FILE *file;
	unsigned char *page;
	int used;			/* data bytes in the page, 0 = not started */
	unsigned long long last_ts;
	unsigned long last_line;	/* spec line of last_ts, for messages */
};

/* The record of the spec line being read. */
struct record {
	unsigned char *data;
	int size;
	struct tep_format_field *tail;	/* trailing char[], if any */
};

/* Everything the spec lines write to, from the formats to the CPU files. */
struct writer {
	struct tep_handle *tep;
	struct page_layout page;
	struct record rec;
	struct cpu_buffer **cpus;
	int nr_cpus;			/* 1 + highest CPU seen */
	int declared_cpus;		/* from a cpus line, 0 if none */
	unsigned long cpus_line;
	char clock[64];
	FILE *cmdlines;
};

static const char *spec_name;
static unsigned long spec_line;		/* 0 while no line is being read */
static const char *out_path;
static char *workdir;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	if (remove(path))
		fprintf(stderr, "mktrace: cannot remove %s: %s\n", path, strerror(errno));
	return 0;
}

/* At every exit: a finished trace.dat has been renamed out of it by then. */
static void remove_workdir(void)
{
	if (workdir)
		nftw(workdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Report an error, naming the spec line being read, and leave no OUT.dat. */
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	char where[PATH_MAX + 32];
	va_list ap;

	if (spec_line)
		snprintf(where, sizeof(where), "%s:%lu", spec_name, spec_line);
	va_start(ap, fmt);
	vreport("mktrace", spec_line ? where : NULL, fmt, ap);
	va_end(ap);
	if (out_path)
		unlink(out_path);
	exit(1);
}

static void *zalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb, size);

	if (!p)
		die("out of memory");
	return p;
}

static char *join_path(const char *dir, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		die("out of memory");
	return path;
}

static char *read_whole_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, n;

	if (!f)
		die("cannot open %s: %s", path, strerror(errno));
	do {
		buf = realloc(buf, len + BUFSIZ + 1);
		if (!buf)
			die("out of memory");
		n = fread(buf + len, 1, BUFSIZ, f);
		len += n;
	} while (n == BUFSIZ);
	if (ferror(f))
		die("cannot read %s: %s", path, strerror(errno));
	fclose(f);
	buf[len] = '\0';
	*size = len;
	return buf;
}

static bool is_directory(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static void parse_header_page(struct writer *w, const char *events_dir)
{
	char *path = join_path(events_dir, "header_page");
	struct page_layout *page = &w->page;
	size_t size;
	char *buf = read_whole_file(path, &size);

	if (tep_parse_header_page(w->tep, buf, size, sizeof(long)))
		die("%s: libtraceevent cannot parse it", path);
	page->size = tep_get_sub_buffer_size(w->tep);
	page->ts_size = tep_get_header_timestamp_size(w->tep);
	page->commit_size = tep_get_header_page_size(w->tep);
	page->data_offset = page->ts_size + page->commit_size;
	if (page->ts_size != 8 || page->commit_size > 8 ||
	    page->data_offset + MAX_SMALL_DATA > page->size)
		die("%s: unexpected page layout (timestamp %d, commit %d, page %d bytes)",
		    path, page->ts_size, page->commit_size, page->size);
	free(buf);
	free(path);
}

/*
 * Call @fn with each subdirectory of @dir, but . and .., in readdir's
 * order: its path, its name, and @name, the name of @dir.
 */
static void for_each_subdir(struct writer *w, const char *dir, const char *name,
			    void (*fn)(struct writer *w, const char *path,
				       const char *sub, const char *name))
{
	DIR *d = opendir(dir);
	struct dirent *ent;

	if (!d)
		die("cannot open %s: %s", dir, strerror(errno));
	while ((errno = 0, ent = readdir(d))) {
		char *path = join_path(dir, ent->d_name);

		if (ent->d_name[0] != '.' && is_directory(path))
			fn(w, path, ent->d_name, name);
		free(path);
	}
	if (errno)
		die("cannot read %s: %s", dir, strerror(errno));
	closedir(d);
}

/* SYSTEM/EVENT/format, if the event directory has one. */
static void parse_event_format(struct writer *w, const char *event_dir,
			       const char *event, const char *system)
{
	char *path = join_path(event_dir, "format");
	size_t size;
	char *buf;

	if (!access(path, F_OK)) {
		buf = read_whole_file(path, &size);
		if (tep_parse_event(w->tep, buf, size, system))
			die("%s: libtraceevent cannot parse it", path);
		free(buf);
	}
	free(path);
}

static void parse_system_formats(struct writer *w, const char *system_dir,
				 const char *system, const char *events)
{
	for_each_subdir(w, system_dir, system, parse_event_format);
}

/* Parse TRACEFS_DIR/events: the page header and every SYSTEM/EVENT/format. */
static void parse_formats(struct writer *w, const char *events_dir)
{
	parse_header_page(w, events_dir);
	for_each_subdir(w, events_dir, "events", parse_system_formats);
}

/*
 * The work directory sits next to OUT.dat so the per-CPU data and the final
 * rename stay on one file system. It is the tracing dir libtracecmd reads:
 * events links to the fixture's, saved_cmdlines is written from the spec.
 */
static void make_workdir(struct writer *w, const char *tracefs_dir)
{
	char *out_copy = strdup(out_path);
	char *events = join_path(tracefs_dir, "events");
	char *events_abs = realpath(events, NULL);
	char *link;

	if (!out_copy)
		die("out of memory");
	if (!events_abs)
		die("%s: %s", events, strerror(errno));
	workdir = join_path(dirname(out_copy), ".mktrace.XXXXXX");
	if (!mkdtemp(workdir)) {
		const char *err = strerror(errno);

		free(workdir);
		workdir = NULL;
		die("cannot create a work directory next to %s: %s", out_path, err);
	}
	link = join_path(workdir, "events");
	if (symlink(events_abs, link))
		die("cannot create %s: %s", link, strerror(errno));
	free(link);
	link = join_path(workdir, "saved_cmdlines");
	w->cmdlines = fopen(link, "w");
	if (!w->cmdlines)
		die("cannot create %s: %s", link, strerror(errno));
	free(link);
	free(events_abs);
	free(events);
	free(out_copy);
}

static char decode_escape(char c)
{
	switch (c) {
	case 'n':
		return '\n';
	case 't':
		return '\t';
	case '"':
	case '\\':
		return c;
	case '\0':
		die("backslash at the end of the line");
	default:
		die("unknown escape \\%c", c);
	}
}

/*
 * Split @line in place into words separated by blanks; double quotes keep
 * blanks inside a word and are dropped, escapes are decoded. A word that
 * starts with '#' ends the line. Returns the number of words.
 */
static int split_words(char *line, char **words)
{
	char *in = line, *out, end;
	bool quoted;
	int n = 0;

	for (;;) {
		while (isspace((unsigned char)*in))
			in++;
		if (!*in || *in == '#')
			return n;
		if (n == MAX_WORDS)
			die("more than %d words", MAX_WORDS);
		words[n++] = out = in;
		quoted = false;
		while (*in && (quoted || !isspace((unsigned char)*in))) {
			if (*in == '"') {
				quoted = !quoted;
				in++;
			} else if (*in == '\\') {
				*out++ = decode_escape(in[1]);
				in += 2;
			} else {
				*out++ = *in++;
			}
		}
		if (quoted)
			die("unterminated quote");
		end = *in;
		*out = '\0';	/* may overwrite *in, the blank that ended the word */
		if (!end)
			return n;
		in++;
	}
}

/* Parse decimal or 0x-hex, with an optional '-': magnitude and sign. */
static unsigned long long parse_number(const char *s, bool *negative, const char *what)
{
	const char *digits = s;
	unsigned long long val;
	int base = 10;
	char *end;

	*negative = *digits == '-';
	if (*negative)
		digits++;
	if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
		digits += 2;
		base = 16;
	}
	if (!isxdigit((unsigned char)*digits))
		die("%s: '%s' is not a number", what, s);
	errno = 0;
	val = strtoull(digits, &end, base);
	if (*end)
		die("%s: '%s' is not a number", what, s);
	if (errno == ERANGE)
		die("%s: '%s' does not fit 64 bits", what, s);
	return val;
}

static unsigned long long parse_unsigned(const char *s, unsigned long long max, const char *what)
{
	bool negative;
	unsigned long long val = parse_number(s, &negative, what);

	if (negative || val > max)
		die("%s: '%s' is not between 0 and %llu", what, s, max);
	return val;
}

static void store_int(unsigned char *dst, int size, unsigned long long val)
{
	unsigned char b = val;
	unsigned short h = val;
	unsigned int i = val;

	switch (size) {
	case 1:
		memcpy(dst, &b, 1);
		break;
	case 2:
		memcpy(dst, &h, 2);
		break;
	case 4:
		memcpy(dst, &i, 4);
		break;
	default:
		memcpy(dst, &val, 8);
	}
}

/* An integer field takes any value that fits its size, unsigned or signed. */
static void set_int_field(struct record *rec, struct tep_format_field *field, const char *s)
{
	int bits = field->size * 8;
	unsigned long long max = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	bool negative;
	unsigned long long val = parse_number(s, &negative, field->name);

	if (negative && val > max / 2 + 1)
		die("%s: %s is below the %d-bit minimum", field->name, s, bits);
	if (!negative && val > max)
		die("%s: %s does not fit %d bits", field->name, s, bits);
	store_int(rec->data + field->offset, field->size, negative ? -val : val);
}

/* A char array keeps its NUL, as the kernel's comm fields do. */
static void set_string_field(struct record *rec, struct tep_format_field *field, const char *s)
{
	size_t len = strlen(s);

	if (len >= (size_t)field->size)
		die("%s: \"%s\" is longer than %d characters", field->name, s, field->size - 1);
	memset(rec->data + field->offset, 0, field->size);
	memcpy(rec->data + field->offset, s, len);
}

/* The trailing char[] grows the record; it must still fit in one page. */
static void set_tail_field(struct record *rec, struct writer *w, const char *s)
{
	size_t len = strlen(s);
	size_t max = w->page.size - w->page.data_offset - LONG_HEADER - rec->tail->offset - 1;

	if (len > max)
		die("%s: string of %zu bytes does not fit a page (max %zu)", rec->tail->name,
		    len, max);
	memcpy(rec->data + rec->tail->offset, s, len + 1);
	rec->size = rec->tail->offset + len + 1;
}

static void set_field(struct writer *w, struct tep_format_field *field, const char *value)
{
	struct record *rec = &w->rec;

	if (field == rec->tail)
		set_tail_field(rec, w, value);
	else if ((field->flags & TEP_FIELD_IS_DYNAMIC) ||
		 ((field->flags & TEP_FIELD_IS_ARRAY) && !(field->flags & TEP_FIELD_IS_STRING)))
		die("%s: fields of type '%s' are not supported", field->name, field->type);
	else if (field->flags & TEP_FIELD_IS_ARRAY)
		set_string_field(rec, field, value);
	else if (field->size == 1 || field->size == 2 || field->size == 4 || field->size == 8)
		set_int_field(rec, field, value);
	else
		die("%s: %d-byte integers are not supported", field->name, field->size);
}

static struct tep_format_field *find_field(struct tep_event *event, const char *name)
{
	struct tep_format_field *field = tep_find_any_field(event, name);

	if (!field)
		die("%s:%s has no field '%s'", event->system, event->name, name);
	return field;
}

static struct tep_event *find_event(struct writer *w, char *system_event)
{
	char *name = strchr(system_event, ':');
	struct tep_event *event;

	if (!name)
		die("'%s' is not SYSTEM:EVENT", system_event);
	*name++ = '\0';
	event = tep_find_event_by_name(w->tep, system_event, name);
	if (!event)
		die("unknown event %s:%s (no format file for it)", system_event, name);
	return event;
}

/*
 * Start @event's record with every field 0: its size is the end of the last
 * field, or the trailing char[] holds an empty string.
 */
static void start_record(struct writer *w, struct tep_event *event)
{
	int max = w->page.size - w->page.data_offset - LONG_HEADER;
	struct record *rec = &w->rec;
	struct tep_format_field *field;
	int end = 0;

	rec->tail = NULL;
	for (field = event->format.fields; field; field = field->next) {
		if (field->offset + field->size > end)
			end = field->offset + field->size;
		if ((field->flags & TEP_FIELD_IS_STRING) && !field->size)
			rec->tail = field;
	}
	if (rec->tail && rec->tail->offset != end)
		die("%s:%s: char[] field %s is not the last one", event->system, event->name,
		    rec->tail->name);
	rec->size = end + (rec->tail ? 1 : 0);
	if (rec->size > max)
		die("%s:%s: records of %d bytes do not fit a page (max %d)", event->system,
		    event->name, rec->size, max);
	memset(rec->data, 0, rec->size);
	field = find_field(event, "common_type");
	store_int(rec->data + field->offset, field->size, event->id);
}

static void put_u32(struct cpu_buffer *buf, const struct page_layout *page, unsigned int val)
{
	memcpy(buf->page + page->data_offset + buf->used, &val, 4);
	buf->used += 4;
}

/* Write the page with its header; commit counts the data bytes used. */
static void flush_page(struct cpu_buffer *buf, const struct page_layout *page, int cpu)
{
	unsigned long long commit = buf->used;

	memcpy(buf->page + page->ts_size, &commit, page->commit_size);
	if (fwrite(buf->page, page->size, 1, buf->file) != 1)
		die("cannot write CPU %d data to %s: %s", cpu, workdir, strerror(errno));
	memset(buf->page, 0, page->size);
	buf->used = 0;
}

static void start_page(struct cpu_buffer *buf, unsigned long long ts)
{
	memcpy(buf->page, &ts, sizeof(ts));
	buf->last_ts = ts;
}

/*
 * Append the record to @cpu's page as the kernel's ring buffer does: a
 * 4-byte header for up to 28 words of data, else an 8-byte one with the
 * length; a time extend before it when the delta needs more than 27 bits.
 */
static void add_record(struct writer *w, int cpu, unsigned long long ts)
{
	const struct page_layout *page = &w->page;
	struct cpu_buffer *buf = w->cpus[cpu];
	int data_size = page->size - page->data_offset;
	int len = (w->rec.size + 3) & ~3;
	int hdr = len > MAX_SMALL_DATA ? LONG_HEADER : 4;
	unsigned long long delta = ts - buf->last_ts;
	int extend = delta >> TIME_DELTA_BITS ? TIME_EXTEND_SIZE : 0;

	if (buf->used && (delta >> MAX_EXTEND_BITS ||
			  buf->used + extend + hdr + len > data_size))
		flush_page(buf, page, cpu);
	if (!buf->used) {
		start_page(buf, ts);
		delta = 0;
		extend = 0;
	}
	if (extend) {
		put_u32(buf, page, TYPE_TIME_EXTEND | (delta << TYPE_LEN_BITS));
		put_u32(buf, page, delta >> TIME_DELTA_BITS);
		delta = 0;
	}
	if (hdr == LONG_HEADER) {
		put_u32(buf, page, delta << TYPE_LEN_BITS);
		put_u32(buf, page, len + 4);
	} else {
		put_u32(buf, page, len / 4 | delta << TYPE_LEN_BITS);
	}
	memcpy(buf->page + page->data_offset + buf->used, w->rec.data, w->rec.size);
	buf->used += len;
	buf->last_ts = ts;
	buf->last_line = spec_line;
}

static char *cpu_file_path(int cpu)
{
	char name[32];

	snprintf(name, sizeof(name), "cpu%d", cpu);
	return join_path(workdir, name);
}

static struct cpu_buffer *open_cpu_buffer(const struct page_layout *page, int cpu)
{
	struct cpu_buffer *buf = zalloc(1, sizeof(*buf));
	char *path = cpu_file_path(cpu);

	buf->file = fopen(path, "w");
	if (!buf->file)
		die("cannot create %s: %s", path, strerror(errno));
	buf->page = zalloc(1, page->size);
	free(path);
	return buf;
}

static struct cpu_buffer *get_cpu_buffer(struct writer *w, int cpu)
{
	if (cpu >= w->nr_cpus) {
		w->cpus = realloc(w->cpus, (cpu + 1) * sizeof(*w->cpus));
		if (!w->cpus)
			die("out of memory");
		memset(w->cpus + w->nr_cpus, 0, (cpu + 1 - w->nr_cpus) * sizeof(*w->cpus));
		w->nr_cpus = cpu + 1;
	}
	if (!w->cpus[cpu])
		w->cpus[cpu] = open_cpu_buffer(&w->page, cpu);
	return w->cpus[cpu];
}

static void check_cpu_count(struct writer *w, int cpu)
{
	if (w->declared_cpus && cpu >= w->declared_cpus)
		die("CPU %d, but line %lu says cpus %d", cpu, w->cpus_line, w->declared_cpus);
}

/* CPU TS PID SYSTEM:EVENT [FIELD=VALUE ...] */
static void handle_event(struct writer *w, char **words, int nr)
{
	struct tep_event *event;
	struct cpu_buffer *buf;
	unsigned long long ts;
	int cpu, i;

	if (nr < 4)
		die("expected clock, cpus, comm or CPU TS PID SYSTEM:EVENT [FIELD=VALUE ...]");
	cpu = parse_unsigned(words[0], MAX_CPUS - 1, "CPU");
	ts = parse_unsigned(words[1], ~0ULL, "timestamp");
	check_cpu_count(w, cpu);
	event = find_event(w, words[3]);
	start_record(w, event);
	set_field(w, find_field(event, "common_pid"), words[2]);
	for (i = 4; i < nr; i++) {
		char *value = strchr(words[i], '=');

		if (!value)
			die("'%s' is not FIELD=VALUE", words[i]);
		*value++ = '\0';
		set_field(w, find_field(event, words[i]), value);
	}
	buf = get_cpu_buffer(w, cpu);
	if (buf->last_line && ts < buf->last_ts)
		die("CPU %d: timestamp %llu is before %llu of line %lu", cpu, ts, buf->last_ts,
		    buf->last_line);
	add_record(w, cpu, ts);
}

static void handle_clock(struct writer *w, char **words, int nr)
{
	const char *c;

	if (nr != 2)
		die("expected clock NAME");
	for (c = words[1]; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
			die("clock name '%s' has a character other than [A-Za-z0-9_-]", words[1]);
	if (strlen(words[1]) >= sizeof(w->clock))
		die("clock name '%s' is too long", words[1]);
	strcpy(w->clock, words[1]);
}

static void handle_cpus(struct writer *w, char **words, int nr)
{
	if (nr != 2)
		die("expected cpus N");
	w->declared_cpus = parse_unsigned(words[1], MAX_CPUS, "cpus");
	if (!w->declared_cpus)
		die("cpus must be at least 1");
	if (w->nr_cpus > w->declared_cpus)
		die("cpus %d, but CPU %d has events", w->declared_cpus, w->nr_cpus - 1);
	w->cpus_line = spec_line;
}

/* saved_cmdlines lines are "PID COMM", as the kernel prints them. */
static void handle_comm(struct writer *w, char **words, int nr)
{
	long pid;

	if (nr != 3)
		die("expected comm PID NAME (quote a NAME with blanks)");
	pid = parse_unsigned(words[1], INT_MAX, "PID");
	if (strchr(words[2], '\n'))
		die("comm NAME must not contain a newline");
	if (fprintf(w->cmdlines, "%ld %s\n", pid, words[2]) < 0)
		die("cannot write %s/saved_cmdlines: %s", workdir, strerror(errno));
}

static void handle_line(struct writer *w, char *line)
{
	char *words[MAX_WORDS];
	int nr = split_words(line, words);

	if (!nr)
		return;
	if (!strcmp(words[0], "clock"))
		handle_clock(w, words, nr);
	else if (!strcmp(words[0], "cpus"))
		handle_cpus(w, words, nr);
	else if (!strcmp(words[0], "comm"))
		handle_comm(w, words, nr);
	else
		handle_event(w, words, nr);
}

static void read_spec(struct writer *w, FILE *spec)
{
	size_t cap = 0;
	char *line = NULL;
	ssize_t len;

	while ((len = getline(&line, &cap, spec)) >= 0) {
		spec_line++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (strlen(line) != (size_t)len)
			die("NUL byte in the line");
		handle_line(w, line);
	}
	if (ferror(spec))
		die("cannot read %s: %s", spec_name, strerror(errno));
	free(line);
	spec_line = 0;
}

/* Flush every CPU's last page; CPUs without events get an empty file. */
static void finish_cpu_files(struct writer *w, int cpus)
{
	int cpu;

	for (cpu = 0; cpu < cpus; cpu++) {
		struct cpu_buffer *buf = cpu < w->nr_cpus ? w->cpus[cpu] : NULL;

		if (!buf)
			buf = open_cpu_buffer(&w->page, cpu);
		if (buf->used)
			flush_page(buf, &w->page, cpu);
		if (fclose(buf->file))
			die("cannot write CPU %d data to %s: %s", cpu, workdir, strerror(errno));
		free(buf->page);
		free(buf);
	}
	free(w->cpus);
	w->cpus = NULL;
}

/*
 * What `trace-cmd restore -c -t DIR` and `trace-cmd restore -i` do, in one
 * handle so that the clock can be set: restore's second step stores the
 * clock of the machine's own tracefs, not DIR's. kallsyms names a file that
 * does not exist, so no symbols of this machine end up in the file.
 */
static void assemble_trace_dat(struct writer *w, const char *path, int cpus)
{
	char **cpu_files = zalloc((unsigned int)cpus, sizeof(*cpu_files));
	char *kallsyms = join_path(workdir, "kallsyms");
	struct tracecmd_output *out;
	int cpu;

	for (cpu = 0; cpu < cpus; cpu++)
		cpu_files[cpu] = cpu_file_path(cpu);
	out = tracecmd_output_create(path);
	if (!out)
		die("cannot create %s: %s", path, strerror(errno));
	tracecmd_set_quiet(out, true);
	tracecmd_set_out_clock(out, w->clock);
	if (tracecmd_output_set_trace_dir(out, workdir) ||
	    tracecmd_output_set_kallsyms(out, kallsyms))
		die("libtracecmd refused the settings for %s", path);
	if (tracecmd_output_write_headers(out, NULL))
		die("cannot write the headers of %s", path);
	if (tracecmd_write_cmdlines(out))
		die("cannot write the command lines of %s", path);
	if (tracecmd_append_cpu_data(out, cpus, cpu_files))
		die("cannot write the CPU data of %s", path);
	tracecmd_output_close(out);
	for (cpu = 0; cpu < cpus; cpu++)
		free(cpu_files[cpu]);
	free(cpu_files);
	free(kallsyms);
}

/* Read the file back with libtracecmd before it replaces OUT.dat. */
static void check_trace_dat(struct writer *w, const char *path, int cpus)
{
	struct tracecmd_input *in = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	const char *clock;

	if (!in)
		die("libtracecmd cannot open the file it wrote, %s", path);
	clock = tracecmd_get_trace_clock(in);
	if (!clock || strcmp(clock, w->clock))
		die("%s: clock reads back as '%s', not '%s'", path, clock ? clock : "(none)",
		    w->clock);
	if (tracecmd_cpus(in) != cpus)
		die("%s: %d CPUs read back, not %d", path, tracecmd_cpus(in), cpus);
	if (tracecmd_page_size(in) != w->page.size)
		die("%s: page size reads back as %d, not %d", path, tracecmd_page_size(in),
		    w->page.size);
	tracecmd_close(in);
}

static void finish_trace(struct writer *w)
{
	int cpus = w->declared_cpus ? w->declared_cpus : w->nr_cpus ? w->nr_cpus : 1;
	char *path = join_path(workdir, "trace.dat");

	if (fclose(w->cmdlines))
		die("cannot write %s/saved_cmdlines: %s", workdir, strerror(errno));
	finish_cpu_files(w, cpus);
	assemble_trace_dat(w, path, cpus);
	check_trace_dat(w, path, cpus);
	if (rename(path, out_path))
		die("cannot rename %s to %s: %s", path, out_path, strerror(errno));
	free(path);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: mktrace -t TRACEFS_DIR -o OUT.dat [SPEC|-]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct writer w = { .clock = DEFAULT_CLOCK };
	const char *tracefs_dir = NULL;
	char *events_dir;
	FILE *spec;
	int opt;

	while ((opt = getopt(argc, argv, "t:o:")) != -1) {
		if (opt == 't')
			tracefs_dir = optarg;
		else if (opt == 'o')
			out_path = optarg;
		else
			usage();
	}
	if (!tracefs_dir || !out_path || argc - optind > 1)
		usage();
	spec_name = optind < argc ? argv[optind] : "-";
	atexit(remove_workdir);

	w.tep = tep_alloc();
	if (!w.tep)
		die("out of memory");
	events_dir = join_path(tracefs_dir, "events");
	parse_formats(&w, events_dir);
	free(events_dir);
	w.rec.data = zalloc(1, w.page.size);
	make_workdir(&w, tracefs_dir);

	spec = strcmp(spec_name, "-") ? fopen(spec_name, "r") : stdin;
	if (!spec)
		die("cannot open %s: %s", spec_name, strerror(errno));
	read_spec(&w, spec);
	if (spec != stdin)
		fclose(spec);
	finish_trace(&w);
	tep_free(w.tep);
	free(w.rec.data);
	return 0;
}
