// SPDX-License-Identifier: GPL-2.0
/*
 * text.c: the text timeline sink: one line per event, in host-time order,
 * with the columns the user picked (in the spirit of `trace-cmd report` and
 * of kvmtrace_format's rule files).
 */
#include <stdlib.h>
#include <string.h>

#include "sinks/sinks.h"

enum column {
	COL_TIME,
	COL_SOURCE,
	COL_CPU,
	COL_TASK,
	COL_COMM,
	COL_PID,
	COL_EVENT,
	COL_INFO,
	COL_GUEST_TS,
	NR_COLUMNS,
};

static const char *const column_names[NR_COLUMNS] = {
	[COL_TIME] = "time",
	[COL_SOURCE] = "source",
	[COL_CPU] = "cpu",
	[COL_TASK] = "task",
	[COL_COMM] = "comm",
	[COL_PID] = "pid",
	[COL_EVENT] = "event",
	[COL_INFO] = "info",
	[COL_GUEST_TS] = "guest_ts",
};

/* Each line is built here and written with one call. */
struct line {
	char *buf;
	size_t len;
	size_t alloc;
};

struct text_sink {
	struct sink_out o;
	enum column cols[NR_COLUMNS * 2];
	int nr_cols;
	struct line line;
};

static int parse_column(const char *name, size_t len)
{
	int i;

	for (i = 0; i < NR_COLUMNS; i++)
		if (strlen(column_names[i]) == len && !strncmp(column_names[i], name, len))
			return i;
	return -1;
}

static int parse_fields(struct text_sink *t, const char *fields)
{
	const char *p = fields;

	while (*p) {
		size_t len = strcspn(p, ",");
		int col = parse_column(p, len);

		if (col < 0 || t->nr_cols == (int)ARRAY_SIZE(t->cols))
			return -1;
		t->cols[t->nr_cols++] = col;
		p += len;
		if (*p)
			p++;
	}
	return t->nr_cols ? 0 : -1;
}

bool text_fields_valid(const char *fields)
{
	struct text_sink t = { 0 };

	return !parse_fields(&t, fields);
}

/* @fields passed text_fields_valid() when the options were read. */
void *text_sink_new(const struct sink_out *o, const char *fields)
{
	struct text_sink *t = xcalloc(1, sizeof(*t));

	parse_fields(t, fields);
	t->o = *o;
	return t;
}

/* Room for @n more bytes; a buffer even for none, so that it is never NULL + 0. */
static char *reserve(struct line *l, size_t n)
{
	if (!l->buf || l->len + n > l->alloc) {
		l->alloc = (l->len + n) * 2 + 64;
		l->buf = xrealloc(l->buf, l->alloc, 1);
	}
	return l->buf + l->len;
}

static void put_chars(struct line *l, const char *s, size_t n)
{
	memcpy(reserve(l, n), s, n);
	l->len += n;
}

static void put_pad(struct line *l, size_t n)
{
	memset(reserve(l, n), ' ', n);
	l->len += n;
}

/* @s in a field of @width: right-aligned, or left-aligned if @left. */
static void put_field(struct line *l, const char *s, size_t n, size_t width, bool left)
{
	size_t pad = n < width ? width - n : 0;

	if (!left)
		put_pad(l, pad);
	put_chars(l, s, n);
	if (left)
		put_pad(l, pad);
}

static void put_string(struct line *l, const char *s, size_t width, bool left)
{
	put_field(l, s, strlen(s), width, left);
}

/* Decimal, at least @digits of them (zero-padded), in a field of @width. */
static void put_number(struct line *l, uint64_t v, size_t digits, size_t width, bool left)
{
	char buf[24];
	size_t n = 0, i;

	do {
		buf[sizeof(buf) - ++n] = '0' + v % 10;
		v /= 10;
	} while (v);
	for (i = n; i < digits; i++)
		buf[sizeof(buf) - ++n] = '0';
	put_field(l, buf + sizeof(buf) - n, n, width, left);
}

static void put_signed(struct line *l, int v, size_t width, bool left)
{
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%d", v);

	put_field(l, buf, n, width, left);
}

/* Seconds, exact to the nanosecond, when the host TSC rate is known. */
static void print_time(struct text_sink *t, uint64_t tsc)
{
	unsigned __int128 ns;

	if (!t->o.tsc_khz) {
		put_number(&t->line, tsc, 1, 20, false);
		return;
	}
	ns = tsc_to_ns(tsc, t->o.tsc_khz);
	put_number(&t->line, ns / 1000000000, 1, 10, false);
	put_chars(&t->line, ".", 1);
	put_number(&t->line, ns % 1000000000, 9, 9, false);
}

static void print_source(struct text_sink *t, const struct sink_event *e)
{
	char buf[64];

	if (!e->machine) {
		put_string(&t->line, "host", 10, true);
		return;
	}
	snprintf(buf, sizeof(buf), "%s:%d%s%s", t->o.desc->guests[e->machine - 1].name, e->cpu,
		 e->outside ? "!" : "", e->ambiguous ? "?" : "");
	put_string(&t->line, buf, 10, true);
}

static void print_column(struct text_sink *t, enum column col, const struct sink_event *e)
{
	struct line *l = &t->line;
	unsigned int len;
	const char *info;

	switch (col) {
	case COL_TIME:
		print_time(t, e->host_ts);
		break;
	case COL_SOURCE:
		print_source(t, e);
		break;
	case COL_CPU:
		put_chars(l, "[", 1);
		put_number(l, e->cpu, 3, 3, false);
		put_chars(l, "]", 1);
		break;
	case COL_TASK:
		put_string(l, e->comm, 16, false);
		put_chars(l, "-", 1);
		put_signed(l, e->pid, 7, true);
		break;
	case COL_COMM:
		put_string(l, e->comm, 0, false);
		break;
	case COL_PID:
		put_signed(l, e->pid, 0, false);
		break;
	case COL_EVENT:
		put_string(l, e->name, 0, false);
		put_chars(l, ":", 1);
		break;
	case COL_INFO:
		info = sink_event_text(e, &len);
		put_chars(l, info, len);
		break;
	case COL_GUEST_TS:
		if (e->machine)
			put_number(l, e->guest_ts, 1, 20, false);
		else
			put_string(l, "-", 20, false);
		break;
	default:
		break;
	}
}

static void text_event(void *priv, const struct sink_event *e)
{
	struct text_sink *t = priv;
	int i;

	t->line.len = 0;
	for (i = 0; i < t->nr_cols; i++) {
		if (i)
			put_chars(&t->line, " ", 1);
		print_column(t, t->cols[i], e);
	}
	put_chars(&t->line, "\n", 1);
	fwrite(t->line.buf, 1, t->line.len, t->o.f);
}

static void text_finish(void *priv)
{
	struct text_sink *t = priv;

	free(t->line.buf);
	free(t);
}

const struct sink_ops text_sink_ops = {
	.event = text_event,
	.finish = text_finish,
	.tasks = true,
};
