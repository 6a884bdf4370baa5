/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pftrace.h: a Perfetto trace as protoc --decode prints it, read line by
 * line for pftrace-check's two modes: its import rules checked
 * (pftrace-check.c) and its tracks and events listed (pftrace-events.c).
 */
#ifndef PFTRACE_H
#define PFTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_DEPTH	32
#define MAX_NAME	64
#define MAX_ARRAYS	32

/* The messages open at a line: name[1] a packet's field, name[depth] the innermost. */
struct stack {
	char name[MAX_DEPTH + 1][MAX_NAME];
	int depth;
	unsigned long line;
};

/* What a mode does at a message's opening (pushed), its closing (not yet popped) and a field. */
struct text_handler {
	void (*open)(void *data, const struct stack *s);
	void (*close)(void *data, const struct stack *s);
	void (*field)(void *data, const struct stack *s, const char *key, char *value);
	void *data;
};

/*
 * Every line of @in, each a message opening or closing or a field
 * "KEY: VALUE", given to @h; the number of lines read.
 */
unsigned long read_text(FILE *in, const struct text_handler *h);
/* The message at @depth of @s is @name. */
bool stack_in(const struct stack *s, int depth, const char *name);

/* Text keyed by text, a later value of a key replacing the earlier. */
struct table {
	struct entry {
		char *key;
		char *value;
	} *e;
	size_t n, size;
};

void table_set(struct table *t, const char *key, const char *value);
/* @key's value; NULL when it has none. */
const char *table_get(const struct table *t, const char *key);
/* Every key starting with @prefix dropped. */
void table_drop(struct table *t, const char *prefix);
void table_free(struct table *t);

/* The arrays of a compact_sched block by their keys, in the order they came. */
struct compact_keys {
	char key[MAX_ARRAYS][MAX_NAME];
	int n;
};

/* The index of @key's array in @k, added when new; exits beyond MAX_ARRAYS arrays. */
int compact_array(struct compact_keys *k, const char *key);

/* @p, of @n elements of @elem bytes, with room for one more, doubling @size; exits when out of memory. */
void *grow(void *p, size_t *size, size_t n, size_t elem);
/* strdup, exiting when out of memory. */
char *copy(const char *s);

/* pftrace-events.c: the tracks and events of protoc's text on standard input, listed; 0. */
int list_events(void);

#endif
