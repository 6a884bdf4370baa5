// SPDX-License-Identifier: GPL-2.0
/*
 * pftrace-text.c: protoc's text format of a Perfetto trace read line by
 * line into message openings, closings and fields, and the text table and
 * compact_sched arrays both of pftrace-check's modes keep what they read in.
 */
#include <stdlib.h>
#include <string.h>

#include "pftrace.h"

static void *exit_if_null(void *p)
{
	if (!p) {
		fprintf(stderr, "pftrace-check: out of memory\n");
		exit(2);
	}
	return p;
}

void *grow(void *p, size_t *size, size_t n, size_t elem)
{
	if (n < *size)
		return p;
	*size = *size ? 2 * *size : 16;
	return exit_if_null(realloc(p, *size * elem));
}

char *copy(const char *s)
{
	return exit_if_null(strdup(s));
}

bool stack_in(const struct stack *s, int depth, const char *name)
{
	return depth >= 1 && depth <= s->depth && depth <= MAX_DEPTH &&
	       !strcmp(s->name[depth], name);
}

static bool is_name(const char *s, size_t len)
{
	return len && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

static void open_message(struct stack *s, const struct text_handler *h, const char *name)
{
	s->depth++;
	if (s->depth <= MAX_DEPTH)
		snprintf(s->name[s->depth], MAX_NAME, "%s", name);
	h->open(h->data, s);
}

static void close_message(struct stack *s, const struct text_handler *h)
{
	if (!s->depth)
		return;
	h->close(h->data, s);
	s->depth--;
}

/* One line: "NAME {", "}" or "KEY: VALUE", each indented; a line of another shape skipped. */
static void read_line(struct stack *s, const struct text_handler *h, char *line)
{
	char *p = line + strspn(line, " ");
	size_t len = strcspn(p, "\n"), key_len;

	p[len] = '\0';
	key_len = strcspn(p, ":");
	if (!strcmp(p, "}")) {
		close_message(s, h);
		return;
	}
	if (len > 2 && !strcmp(p + len - 2, " {") && is_name(p, len - 2)) {
		p[len - 2] = '\0';
		open_message(s, h, p);
		return;
	}
	if (p[key_len] != ':' || !is_name(p, key_len) || p[key_len + 1] != ' ')
		return;
	p[key_len] = '\0';
	h->field(h->data, s, p, p + key_len + 2);
}

unsigned long read_text(FILE *in, const struct text_handler *h)
{
	struct stack s = { .depth = 0 };
	char *line = NULL;
	size_t size = 0;

	while (getline(&line, &size, in) > 0) {
		s.line++;
		read_line(&s, h, line);
	}
	free(line);
	return s.line;
}

static struct entry *find(const struct table *t, const char *key)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->e[i].key, key))
			return &t->e[i];
	return NULL;
}

void table_set(struct table *t, const char *key, const char *value)
{
	struct entry *e = find(t, key);

	if (e) {
		free(e->value);
		e->value = copy(value);
		return;
	}
	t->e = grow(t->e, &t->size, t->n, sizeof(*t->e));
	t->e[t->n++] = (struct entry){ copy(key), copy(value) };
}

const char *table_get(const struct table *t, const char *key)
{
	const struct entry *e = find(t, key);

	return e ? e->value : NULL;
}

void table_drop(struct table *t, const char *prefix)
{
	size_t i, kept = 0, len = strlen(prefix);

	for (i = 0; i < t->n; i++) {
		if (strncmp(t->e[i].key, prefix, len)) {
			t->e[kept++] = t->e[i];
			continue;
		}
		free(t->e[i].key);
		free(t->e[i].value);
	}
	t->n = kept;
}

void table_free(struct table *t)
{
	table_drop(t, "");
	free(t->e);
	*t = (struct table){ 0 };
}

int compact_array(struct compact_keys *k, const char *key)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (!strcmp(k->key[i], key))
			return i;
	if (k->n == MAX_ARRAYS) {
		fprintf(stderr, "pftrace-check: more than %d compact_sched arrays\n", MAX_ARRAYS);
		exit(2);
	}
	snprintf(k->key[i], MAX_NAME, "%s", key);
	return k->n++;
}
