// SPDX-License-Identifier: GPL-2.0
/*
 * fields.c: an event's fields as name and value pairs, read from its
 * record with its format once, for the sinks that write fields rather
 * than text (Perfetto's ftrace events).
 */
#include <stdlib.h>
#include <string.h>

#include "merge/merge.h"

/* One event's fields: reused for each event, grown to the widest format. */
struct field_buf {
	struct sink_field *fields;
	unsigned int alloc;
	char *strings;			/* the string values, NUL-terminated */
	size_t str_alloc;
	const struct tep_handle *tep;	/* whose byte order @swap is */
	bool swap;			/* the file's byte order is not ours */
};

struct field_buf *field_buf_new(void)
{
	return xcalloc(1, sizeof(struct field_buf));
}

void field_buf_free(struct field_buf *b)
{
	if (!b)
		return;
	free(b->fields);
	free(b->strings);
	free(b);
}

/* A char array or a __data_loc string: its bytes in the record. */
static const char *field_bytes(struct event_text *t, struct tep_event *ev,
			       struct tep_format_field *f, int *len)
{
	char *data = t->record->data;

	if (f->flags & TEP_FIELD_IS_DYNAMIC)
		return tep_get_field_raw(NULL, ev, f->name, t->record, len, 0);
	/* print's buf[]: a last array of no fixed size runs to the record's end. */
	*len = f->size ? f->size : t->record->size - f->offset;
	return data + f->offset;
}

static bool is_string(const struct tep_format_field *f)
{
	return (f->flags & TEP_FIELD_IS_STRING) ||
	       ((f->flags & TEP_FIELD_IS_ARRAY) && f->elementsize == 1);
}

static void read_number(const struct field_buf *b, struct event_text *t,
			struct tep_format_field *f, struct sink_field *v)
{
	const char *p = (const char *)t->record->data + f->offset;
	unsigned long long n = td_read_number(t->tep, b->swap, p, f->size);
	unsigned int bits = f->size * 8;

	v->kind = SINK_FIELD_UINT;
	v->u = n;
	if (!(f->flags & TEP_FIELD_IS_SIGNED))
		return;
	v->kind = SINK_FIELD_INT;
	v->i = bits < 64 && n >> (bits - 1) ? (int64_t)(n | ~0ull << bits) : (int64_t)n;
}

/*
 * Numbers and strings; other arrays are left out, as libtraceevent has no
 * one value for them. A damaged record has no fields: none may be read.
 */
static unsigned int read_fields(struct field_buf *b, struct event_text *t)
{
	struct tep_event *ev = t->event;
	struct tep_format_field *f;
	size_t size, used = 0;
	unsigned int n = 0;
	const char *s;
	int len;

	if (!ev || t->damaged)
		return 0;
	if (b->tep != t->tep) {
		b->tep = t->tep;
		b->swap = tep_is_file_bigendian(t->tep) != tep_is_local_bigendian(t->tep);
	}
	if (ev->format.nr_fields > (int)b->alloc) {
		b->alloc = ev->format.nr_fields;
		b->fields = xrealloc(b->fields, b->alloc, sizeof(*b->fields));
	}
	/*
	 * Room for every string before the first is copied, as the buffer
	 * may move while it grows: the strings lie in the record, each gets
	 * a NUL.
	 */
	size = t->record->size + ev->format.nr_fields;
	if (size > b->str_alloc) {
		b->str_alloc = size * 2;
		b->strings = xrealloc(b->strings, b->str_alloc, 1);
	}
	for (f = ev->format.fields; f; f = f->next) {
		struct sink_field *v = &b->fields[n];

		v->name = f->name;
		if (!is_string(f)) {
			if ((f->flags & TEP_FIELD_IS_ARRAY) || f->size > 8 || !f->size)
				continue;
			read_number(b, t, f, v);
			n++;
			continue;
		}
		s = field_bytes(t, ev, f, &len);
		if (!s)
			continue;
		len = strnlen(s, len);
		/* Not a string in the record (damaged, not caught): left out. */
		if (used + len + 1 > size)
			continue;
		v->kind = SINK_FIELD_STR;
		v->str = memcpy(b->strings + used, s, len);
		b->strings[used + len] = '\0';
		used += len + 1;
		n++;
	}
	return n;
}

const struct sink_field *sink_event_fields(const struct sink_event *e, unsigned int *nr)
{
	struct event_text *t = e->text;

	if (!t->fields_read) {
		t->nr_fields = read_fields(t->field_buf, t);
		t->fields_read = true;
	}
	*nr = t->nr_fields;
	return t->field_buf->fields;
}
