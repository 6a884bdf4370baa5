// SPDX-License-Identifier: GPL-2.0
/*
 * info.c: an event's "info" text, as the kernel's print format gives it,
 * remembering recent ones.
 *
 * libtraceevent formats an event by evaluating its print format's argument
 * tree every time, and that is most of what a text timeline costs. The text
 * depends on nothing but the event's format and the record's bytes, and
 * traces repeat themselves (the same task switch, the same exit at the same
 * guest rip): a record whose bytes equal those of a recent one of the same
 * format gets that one's text. The cache has a fixed number of slots, so
 * memory stays bounded however long the trace is; a slot is allocated when
 * first filled, so a short trace does not pay for all of them.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/merge.h"

#define INFO_SLOTS	4096
#define INFO_MAX_KEY	128		/* longer records are not remembered */
#define INFO_MAX_TEXT	512

struct info_slot {
	const struct tep_handle *tep;
	unsigned int key_len;
	unsigned int text_len;
	unsigned char key[INFO_MAX_KEY];
	char text[INFO_MAX_TEXT];
};

struct info_cache {
	struct trace_seq seq;
	struct info_slot **slots;
	uint64_t hits;
	uint64_t misses;
};

struct info_cache *info_cache_new(void)
{
	struct info_cache *c = xcalloc(1, sizeof(*c));

	c->slots = xcalloc(INFO_SLOTS, sizeof(*c->slots));
	trace_seq_init(&c->seq);
	return c;
}

void info_cache_free(struct info_cache *c)
{
	unsigned int i;

	if (!c)
		return;
	trace_seq_destroy(&c->seq);
	for (i = 0; i < INFO_SLOTS; i++)
		free(c->slots[i]);
	free(c->slots);
	free(c);
}

/* Format with libtraceevent; a trace_marker text's own newline goes. */
static const char *format_info(struct info_cache *c, const struct event_text *e,
			       unsigned int *len)
{
	trace_seq_reset(&c->seq);
	if (e->damaged)
		trace_seq_printf(&c->seq, "[damaged: a %d-byte record its format cannot print]",
				 e->record->size);
	else
		tep_print_event(e->tep, &c->seq, e->record, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&c->seq);
	*len = c->seq.len;
	while (*len && c->seq.buffer[*len - 1] == '\n')
		c->seq.buffer[--*len] = '\0';
	return c->seq.buffer;
}

/* The info text of @e, NUL-terminated, valid until the next call. */
static const char *info_text(struct info_cache *c, const struct event_text *e,
			     unsigned int *len)
{
	struct tep_handle *tep = e->tep;
	struct tep_record *r = e->record;
	unsigned int size = r->size;
	struct info_slot **slot, *s;
	const char *text;

	/* A damaged record's size may run past its page: never read as a key. */
	if (e->damaged || size > INFO_MAX_KEY) {
		c->misses++;
		return format_info(c, e, len);
	}
	/* The record's bytes and its format: the same bytes print per format. */
	slot = &c->slots[hash_slot((uintptr_t)tep, r->data, size, INFO_SLOTS)];
	s = *slot;
	if (s && s->tep == tep && s->key_len == size && !memcmp(s->key, r->data, size)) {
		c->hits++;
		*len = s->text_len;
		return s->text;
	}
	c->misses++;
	text = format_info(c, e, len);
	if (*len >= INFO_MAX_TEXT)
		return text;
	if (!s)
		s = *slot = xrealloc(NULL, 1, sizeof(*s));
	s->tep = tep;
	s->key_len = size;
	memcpy(s->key, r->data, size);
	s->text_len = *len;
	memcpy(s->text, text, *len + 1);
	return s->text;
}

/* The first sink that shows the text formats it; the others borrow it. */
const char *sink_event_text(const struct sink_event *e, unsigned int *len)
{
	struct event_text *t = e->text;

	if (!t->text)
		t->text = info_text(t->cache, t, &t->len);
	*len = t->len;
	return t->text;
}
