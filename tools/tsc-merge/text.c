// SPDX-License-Identifier: GPL-2.0
/*
 * text.c: the text timeline sink: one line per event, in host-time order,
 * with the columns the user picked (in the spirit of `trace-cmd report` and
 * of kvmtrace_format's rule files).
 */
#include <stdlib.h>
#include <string.h>

#include "tsc-merge.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

struct text_sink {
	FILE *out;
	unsigned long tsc_khz;
	enum column cols[NR_COLUMNS * 2];
	int nr_cols;
	struct trace_seq seq;
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
void *text_sink_new(FILE *out, const char *fields, unsigned long tsc_khz)
{
	struct text_sink *t = xcalloc(1, sizeof(*t));

	parse_fields(t, fields);
	t->out = out;
	t->tsc_khz = tsc_khz;
	trace_seq_init(&t->seq);
	return t;
}

/* Seconds, exact to the nanosecond, when the host TSC rate is known. */
static void print_time(struct text_sink *t, uint64_t tsc)
{
	unsigned __int128 ns;

	if (!t->tsc_khz) {
		fprintf(t->out, "%20llu", (unsigned long long)tsc);
		return;
	}
	ns = (unsigned __int128)tsc * 1000000 / t->tsc_khz;
	fprintf(t->out, "%10llu.%09llu", (unsigned long long)(ns / 1000000000),
		(unsigned long long)(ns % 1000000000));
}

static void print_source(struct text_sink *t, const struct merged_event *e)
{
	char buf[64];

	if (!e->guest)
		snprintf(buf, sizeof(buf), "host");
	else
		snprintf(buf, sizeof(buf), "%s:%d%s%s", e->guest->name, e->cpu,
			 e->outside ? "!" : "", e->ambiguous ? "?" : "");
	fprintf(t->out, "%-10s", buf);
}

/* One line per event: a trace_marker text keeps its newline; drop it. */
static void print_info(struct text_sink *t)
{
	unsigned int len = t->seq.len;

	while (len && t->seq.buffer[len - 1] == '\n')
		len--;
	fwrite(t->seq.buffer, 1, len, t->out);
}

static void print_column(struct text_sink *t, enum column col,
			 const struct merged_event *e, int pid)
{
	const char *name = e->event ? e->event->name : "unknown";

	switch (col) {
	case COL_TIME:
		print_time(t, e->host_ts);
		break;
	case COL_SOURCE:
		print_source(t, e);
		break;
	case COL_CPU:
		fprintf(t->out, "[%03d]", e->cpu);
		break;
	case COL_TASK:
		fprintf(t->out, "%16s-%-7d", tep_data_comm_from_pid(e->tep, pid), pid);
		break;
	case COL_COMM:
		fprintf(t->out, "%s", tep_data_comm_from_pid(e->tep, pid));
		break;
	case COL_PID:
		fprintf(t->out, "%d", pid);
		break;
	case COL_EVENT:
		fprintf(t->out, "%s:", name);
		break;
	case COL_INFO:
		trace_seq_reset(&t->seq);
		tep_print_event(e->tep, &t->seq, e->record, "%s", TEP_PRINT_INFO);
		print_info(t);
		break;
	case COL_GUEST_TS:
		if (e->guest)
			fprintf(t->out, "%20llu", (unsigned long long)e->guest_ts);
		else
			fprintf(t->out, "%20s", "-");
		break;
	default:
		break;
	}
}

static void text_event(void *priv, const struct merged_event *e)
{
	struct text_sink *t = priv;
	int i, pid = tep_data_pid(e->tep, e->record);

	for (i = 0; i < t->nr_cols; i++) {
		if (i)
			fputc(' ', t->out);
		print_column(t, t->cols[i], e, pid);
	}
	fputc('\n', t->out);
}

static int text_finish(void *priv)
{
	struct text_sink *t = priv;
	int ret = fflush(t->out) || ferror(t->out) ? -1 : 0;

	trace_seq_destroy(&t->seq);
	free(t);
	return ret;
}

const struct sink_ops text_sink_ops = {
	.event = text_event,
	.finish = text_finish,
};
