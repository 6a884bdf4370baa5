// SPDX-License-Identifier: GPL-2.0
/*
 * scenario.c: read a .scenario file ("key=value" lines, "#" comments on
 * lines of their own) into a struct scenario, every key known, given once
 * and valid.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

#define MAX_LINE	256
/* Of a wrong line, what a message quotes. */
#define MAX_SHOWN_LINE	80

enum key_type {
	KEY_WORD,
	KEY_NUMBER,
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset;
	/* KEY_WORD: the values allowed, space-separated; KEY_NUMBER: the largest. */
	const char *words;
	uint64_t max;
};

#define WORD(field, allowed) \
	{ #field, KEY_WORD, offsetof(struct scenario, field), allowed, 0 }
#define NUMBER(field, largest) \
	{ #field, KEY_NUMBER, offsetof(struct scenario, field), NULL, largest }

/* x86 I/O ports have 16 bits. */
#define MAX_PORT	0xffff

static const struct key keys[] = {
	WORD(mode, "own agent late nested linux-n"),
	WORD(l0_recorder, "kvm-tsc-record trace-cmd-agent"),
	WORD(l0_record_from, "boot ready"),
	WORD(l1_recorder, "self agent kvm-tsc-record"),
	WORD(l1_record_from, "boot ready"),
	NUMBER(l1_vcpus, MAX_VCPUS),
	NUMBER(l1_mem_mb, 65536),
	NUMBER(l1_tsc_khz, UINT32_MAX),
	NUMBER(l1_markers, 1000000),
	NUMBER(marker_port, MAX_PORT),
	NUMBER(l1_tsc_jump, 1ull << 62),
	WORD(l2_recorder, "none payload self"),
	NUMBER(l2_vcpus, MAX_VCPUS),
	NUMBER(l2_mem_mb, 65536),
	NUMBER(l2_markers, 1000000),
	NUMBER(l2_tsc_jump, 1ull << 62),
	NUMBER(l2_tsc_khz, UINT32_MAX),
	NUMBER(ucall_port, MAX_PORT),
	NUMBER(l1_timeout, 86400),
	NUMBER(l2_timeout, 86400),
	NUMBER(silence, 86400),
};

#define NR_KEYS	(sizeof(keys) / sizeof(keys[0]))

static const struct key *find_key(const char *name)
{
	size_t i;

	for (i = 0; i < NR_KEYS; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static bool word_allowed(const char *allowed, const char *value)
{
	size_t len = strlen(value);
	const char *p = allowed;

	while ((p = strstr(p, value))) {
		if ((p == allowed || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return true;
		p += len;
	}
	return false;
}

/* One value into its field of @s; an error message into @err. */
static int set_value(struct scenario *s, const struct key *k, const char *value, char *err,
		     int err_size)
{
	char *field = (char *)s + k->offset;
	uint64_t number;
	char *end;

	if (k->type == KEY_WORD) {
		if (!word_allowed(k->words, value)) {
			snprintf(err, err_size, "%s=%.*s: use one of %s", k->name, SCENARIO_WORD, value,
				 k->words);
			return -1;
		}
		snprintf(field, SCENARIO_WORD, "%.*s", SCENARIO_WORD - 1, value);
		return 0;
	}
	errno = 0;
	number = strtoull(value, &end, 0);
	if (errno || end == value || *end || value[0] == '-' || number > k->max) {
		snprintf(err, err_size, "%s=%s: give a number from 0 to %llu", k->name, value,
			 (unsigned long long)k->max);
		return -1;
	}
	memcpy(field, &number, sizeof(number));
	return 0;
}

/* "key=value" with no space around "=" and none in the value. */
static int parse_assignment(struct scenario *s, char *line, bool *seen, char *err, int err_size)
{
	char *eq = strchr(line, '=');
	const struct key *k;

	if (!eq || eq == line || strpbrk(line, " \t\"'")) {
		snprintf(err, err_size, "'%.*s': expected key=value, no spaces or quotes", MAX_SHOWN_LINE,
			 line);
		return -1;
	}
	*eq = '\0';
	k = find_key(line);
	if (!k) {
		snprintf(err, err_size, "unknown key '%.*s'", MAX_SHOWN_LINE, line);
		return -1;
	}
	if (seen[k - keys]) {
		snprintf(err, err_size, "%s given twice", k->name);
		return -1;
	}
	seen[k - keys] = true;
	return set_value(s, k, eq + 1, err, err_size);
}

static int read_file(struct scenario *s, const char *path, bool *seen, char *err, int err_size)
{
	char line[MAX_LINE], msg[MAX_LINE];
	int nr = 0, ret = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		nr++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		ret = parse_assignment(s, line, seen, msg, sizeof(msg));
		if (ret)
			snprintf(err, err_size, "%s:%d: %s", path, nr, msg);
	}
	fclose(f);
	return ret;
}

static int check_complete(const bool *seen, const char *path, char *err, int err_size)
{
	size_t i;

	for (i = 0; i < NR_KEYS; i++) {
		if (!seen[i]) {
			snprintf(err, err_size, "%s: no %s= line", path, keys[i].name);
			return -1;
		}
	}
	return 0;
}

int scenario_load(struct scenario *s, const char *path, char *err, int err_size)
{
	bool seen[NR_KEYS] = { false };

	memset(s, 0, sizeof(*s));
	if (read_file(s, path, seen, err, err_size))
		return -1;
	return check_complete(seen, path, err, err_size);
}
