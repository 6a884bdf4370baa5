// SPDX-License-Identifier: GPL-2.0
/*
 * pftrace-events.c: pftrace-check --events, the tracks and events of a
 * Perfetto trace as protoc --decode prints it, one per line with names
 * resolved.
 *
 * Prints, tab-separated: timestamp, machine id, track name, event type,
 * event name, annotations ("name=value" joined by ";"); and one line
 * "track<TAB>machine<TAB>uuid<TAB>name<TAB>parent name<TAB>kind" per track
 * descriptor, kind being process, thread, counter or plain; and one line
 * "ftrace<TAB>machine<TAB>cpu<TAB>timestamp<TAB>pid<TAB>event<TAB>fields"
 * per event of an ftrace bundle, fields "name=value" joined by ";", a
 * generic event's as a typed one's (value=V first on a counter); a track
 * event's time and track as its sequence's defaults and incremental clock
 * (a ClockSnapshot's clock marked is_incremental, its last time) give them; a
 * compact_sched switch or waking as such a line, delta-decoded, its comm
 * looked up, with no pid (the task its CPU's previous switch put on it) and
 * fields "compact;prev_state=S;next_comm=C;next_pid=P;next_prio=R" or
 * "compact;comm=C;pid=P;prio=R;target_cpu=T". Interned names are looked up
 * per packet sequence, as Perfetto does; an iid that sequence never
 * interned prints as "?iid".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace.h"

#define SEP		"\034"

/* Text being put together, NUL-terminated. */
struct text {
	char *s;
	size_t len, size;
};

struct lister {
	/* The packet: its fields by path ("track_descriptor.uuid"), its ftrace lines. */
	struct table pk;
	struct table ftrace;
	/* Its track event's annotations, name iid to value, in order. */
	struct table ann;
	/* The ftrace event being read: its fields by key, its name, its "name=value" fields. */
	struct table ev;
	struct text ev_name, ev_fields;
	/* A generic event's field being read: its name and value. */
	struct text field_name, field_value;
	/* A compact_sched block's arrays, each's entries in order. */
	struct compact_keys keys;
	struct table columns[MAX_ARRAYS];
	/* An interned or annotation block's fields; the names the packet interns. */
	struct table blk, pending_names, pending_anames;
	/* Per sequence: interned names (SEQ\034IID), defaults, incremental clocks' times. */
	struct table names, anames, default_clock, default_track, clock_at;
	/* Track names by uuid. */
	struct table tracks;
};

static void text_add(struct text *t, const char *s)
{
	size_t len = strlen(s);

	while (t->len + len + 1 > t->size)
		t->s = grow(t->s, &t->size, t->size, 1);
	memcpy(t->s + t->len, s, len + 1);
	t->len += len;
}

static void text_set(struct text *t, const char *s)
{
	t->len = 0;
	text_add(t, s);
}

static void add_pair(struct text *t, const char *name, const char *value)
{
	text_add(t, name);
	text_add(t, value);
}

static const char *text_of(const struct text *t)
{
	return t->len ? t->s : "";
}

/* A key's value, "" when it has none. */
static const char *get(const struct table *t, const char *key)
{
	const char *v = table_get(t, key);

	return v ? v : "";
}

static bool has(const struct table *t, const char *key)
{
	return table_get(t, key);
}

static void append(struct table *t, const char *key, const char *value)
{
	t->e = grow(t->e, &t->size, t->n, sizeof(*t->e));
	t->e[t->n++] = (struct entry){ copy(key), copy(value) };
}

/* Every \X of @s, X being @c, as X. */
static void unescape(char *s, char c)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] == c)
			s++;
		*d++ = *s++;
	}
	*d = '\0';
}

/* @s without its quotes, \" and then \\ read; into @t. */
static const char *unquote(struct text *t, const char *s)
{
	size_t len;

	text_set(t, s + (*s == '"'));
	len = t->len;
	if (len && t->s[len - 1] == '"')
		t->s[--t->len] = '\0';
	unescape(t->s, '"');
	unescape(t->s, '\\');
	t->len = strlen(t->s);
	return t->s;
}

/* "SEQ\034IID" into @t. */
static const char *seq_key(struct text *t, const char *seq, const char *iid)
{
	text_set(t, seq);
	text_add(t, SEP);
	text_add(t, iid);
	return t->s;
}

/* @seq's interned name of @iid in @names; "?IID" when it has none. */
static const char *lookup(struct text *t, const struct table *names, const char *seq,
			  const char *iid)
{
	const char *name = table_get(names, seq_key(t, seq, iid));

	if (name)
		return text_set(t, name), t->s;
	text_set(t, "?");
	text_add(t, iid);
	return t->s;
}

/* The messages from a packet's field down to @s's innermost, joined by ".", then @key. */
static const char *path_of(struct text *t, const struct stack *s, const char *key)
{
	int i;

	t->len = 0;
	text_add(t, "");
	for (i = 2; i <= s->depth && i <= MAX_DEPTH; i++) {
		if (i > 2)
			text_add(t, ".");
		text_add(t, s->name[i]);
	}
	if (key) {
		if (s->depth > 1)
			text_add(t, ".");
		text_add(t, key);
	}
	return t->s;
}

static struct table *column_of(struct lister *l, const char *key)
{
	return &l->columns[compact_array(&l->keys, key)];
}

/* The @k-th entry of a compact_sched array, "" past its end. */
static const char *entry_of(struct lister *l, const char *key, size_t k)
{
	const struct table *c = column_of(l, key);

	return k < c->n ? c->e[k].value : "";
}

static void add_ftrace_field(struct lister *l, const char *name, const char *value)
{
	struct text v = { 0 };

	if (l->ev_fields.len)
		text_add(&l->ev_fields, ";");
	text_add(&l->ev_fields, name);
	text_add(&l->ev_fields, "=");
	text_add(&l->ev_fields, unquote(&v, value));
	free(v.s);
}

/* An ftrace line of the packet: its machine_id, read after its events, prefixes it at the end. */
static void add_ftrace_line(struct lister *l, const char *const parts[5])
{
	struct text line = { 0 };
	int i;

	for (i = 0; i < 5; i++) {
		if (i)
			text_add(&line, "\t");
		text_add(&line, parts[i]);
	}
	append(&l->ftrace, "", line.s);
	free(line.s);
}

static void end_ftrace_event(struct lister *l)
{
	const char *parts[5] = { get(&l->pk, "ftrace_events.cpu"), get(&l->ev, "timestamp"),
				 get(&l->ev, "pid"), text_of(&l->ev_name), text_of(&l->ev_fields) };

	add_ftrace_line(l, parts);
	table_free(&l->ev);
	l->ev_name.len = l->ev_fields.len = 0;
}

/* The intern_table's comm at the index @index holds; "" outside it. */
static const char *comm_of(struct lister *l, struct text *t, const char *index)
{
	long long k = strtoll(index, NULL, 10);
	const struct table *table = column_of(l, "intern_table");

	return unquote(t, k >= 0 && (size_t)k < table->n ? table->e[k].value : "");
}

/* A compact_sched's switches (@waking false) or wakings, times delta-decoded. */
static void list_compact(struct lister *l, bool waking)
{
	const char *const keys[2][5] = {
		{ "switch_timestamp", "switch_prev_state", "switch_next_comm_index",
		  "switch_next_pid", "switch_next_prio" },
		{ "waking_timestamp", "waking_comm_index", "waking_pid", "waking_prio",
		  "waking_target_cpu" } };
	const char *const *key = keys[waking];
	struct text fields = { 0 }, comm = { 0 };
	char ts_text[24];
	uint64_t ts = 0;
	size_t k, n = column_of(l, key[0])->n;

	for (k = 0; k < n; k++) {
		const char *parts[5] = { get(&l->pk, "ftrace_events.cpu"), ts_text, "",
					 waking ? "sched_waking" : "sched_switch", NULL };
		const char *comm_text;

		ts += strtoull(entry_of(l, key[0], k), NULL, 10);
		snprintf(ts_text, sizeof(ts_text), "%llu", (unsigned long long)ts);
		text_set(&fields, "compact;");
		if (waking) {
			comm_text = comm_of(l, &comm, entry_of(l, key[1], k));
			add_pair(&fields, "comm=", comm_text);
			add_pair(&fields, ";pid=", entry_of(l, key[2], k));
			add_pair(&fields, ";prio=", entry_of(l, key[3], k));
			add_pair(&fields, ";target_cpu=", entry_of(l, key[4], k));
		} else {
			comm_text = comm_of(l, &comm, entry_of(l, key[2], k));
			add_pair(&fields, "prev_state=", entry_of(l, key[1], k));
			add_pair(&fields, ";next_comm=", comm_text);
			add_pair(&fields, ";next_pid=", entry_of(l, key[3], k));
			add_pair(&fields, ";next_prio=", entry_of(l, key[4], k));
		}
		parts[4] = fields.s;
		add_ftrace_line(l, parts);
	}
	free(fields.s);
	free(comm.s);
}

/* A bundle's compact_sched, after its events: each array's entries in order. */
static void end_compact(struct lister *l)
{
	int i;

	list_compact(l, false);
	list_compact(l, true);
	for (i = 0; i < l->keys.n; i++)
		table_free(&l->columns[i]);
	l->keys.n = 0;
}

/* An interned name, an annotation's name or an annotation closes. */
static void end_block(struct lister *l, const char *name)
{
	struct text t = { 0 };

	if (!strcmp(name, "event_names"))
		table_set(&l->pending_names, get(&l->blk, "iid"), unquote(&t, get(&l->blk, "name")));
	else if (!strcmp(name, "debug_annotation_names"))
		table_set(&l->pending_anames, get(&l->blk, "iid"),
			  unquote(&t, get(&l->blk, "name")));
	else
		append(&l->ann, get(&l->blk, "name_iid"),
		       has(&l->blk, "int_value") ? get(&l->blk, "int_value") :
						   get(&l->blk, "uint_value"));
	table_free(&l->blk);
	free(t.s);
}

static bool is_block(const char *name)
{
	return !strcmp(name, "event_names") || !strcmp(name, "debug_annotation_names") ||
	       !strcmp(name, "debug_annotations");
}

static void print_line(const char *const parts[], int n)
{
	int i;

	for (i = 0; i < n; i++)
		printf("%s%s", i ? "\t" : "", parts[i]);
	printf("\n");
}

/* A packet's names interned on @seq: its sequence's, after clearing them when it says so. */
static void intern_names(struct lister *l, const char *seq)
{
	struct text t = { 0 };
	size_t i;

	if (strtoll(get(&l->pk, "sequence_flags"), NULL, 10) % 2) {
		table_drop(&l->names, seq_key(&t, seq, ""));
		table_drop(&l->anames, seq_key(&t, seq, ""));
	}
	for (i = 0; i < l->pending_names.n; i++)
		table_set(&l->names, seq_key(&t, seq, l->pending_names.e[i].key),
			  l->pending_names.e[i].value);
	for (i = 0; i < l->pending_anames.n; i++)
		table_set(&l->anames, seq_key(&t, seq, l->pending_anames.e[i].key),
			  l->pending_anames.e[i].value);
	table_free(&l->pending_names);
	table_free(&l->pending_anames);
	free(t.s);
}

static const char *track_name(const struct table *pk)
{
	static const char *const keys[] = { "track_descriptor.name",
					    "track_descriptor.thread.thread_name",
					    "track_descriptor.process.process_name" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (has(pk, keys[i]))
			return get(pk, keys[i]);
	return "";
}

static const char *track_kind(const struct table *pk)
{
	return has(pk, "track_descriptor.thread.tid") ? "thread" :
	       has(pk, "track_descriptor.process.pid") ? "process" :
	       has(pk, "track_descriptor.counter") ? "counter" : "plain";
}

static void list_track(struct lister *l, const char *machine)
{
	const char *uuid = get(&l->pk, "track_descriptor.uuid");
	struct text name = { 0 };
	const char *parts[6] = { "track", machine, uuid, unquote(&name, track_name(&l->pk)), NULL,
				 track_kind(&l->pk) };

	table_set(&l->tracks, uuid, name.s);
	parts[4] = get(&l->tracks, get(&l->pk, "track_descriptor.parent_uuid"));
	print_line(parts, 6);
	free(name.s);
}

/* A sequence's default clock and track; an incremental clock's time, its last clock's. */
static void keep_defaults(struct lister *l, const char *seq)
{
	struct text t = { 0 };

	if (has(&l->pk, "trace_packet_defaults.timestamp_clock_id"))
		table_set(&l->default_clock, seq,
			  get(&l->pk, "trace_packet_defaults.timestamp_clock_id"));
	if (has(&l->pk, "trace_packet_defaults.track_event_defaults.track_uuid"))
		table_set(&l->default_track, seq,
			  get(&l->pk, "trace_packet_defaults.track_event_defaults.track_uuid"));
	if (!strcmp(get(&l->pk, "clock_snapshot.clocks.is_incremental"), "true"))
		table_set(&l->clock_at, seq_key(&t, seq, get(&l->pk, "clock_snapshot.clocks.clock_id")),
			  get(&l->pk, "clock_snapshot.clocks.timestamp"));
	free(t.s);
}

/* A track event's time on its sequence's incremental default clock, when it has one. */
static void resolve_time(struct lister *l, const char *seq)
{
	const char *clock = table_get(&l->default_clock, seq);
	struct text t = { 0 };
	const char *at = clock ? table_get(&l->clock_at, seq_key(&t, seq, clock)) : NULL;
	char ns[24];

	if (at) {
		snprintf(ns, sizeof(ns), "%llu", strtoull(at, NULL, 10) +
			 strtoull(get(&l->pk, "timestamp"), NULL, 10));
		table_set(&l->clock_at, t.s, ns);
		table_set(&l->pk, "timestamp", ns);
	}
	free(t.s);
}

/* A track event's annotations, its counter's value first. */
static void annotations_of(struct lister *l, const char *seq, struct text *args)
{
	struct text t = { 0 };
	size_t k;

	if (has(&l->pk, "track_event.counter_value")) {
		text_add(args, "value=");
		text_add(args, get(&l->pk, "track_event.counter_value"));
	}
	for (k = 0; k < l->ann.n; k++) {
		if (args->len)
			text_add(args, ";");
		text_add(args, lookup(&t, &l->anames, seq, l->ann.e[k].key));
		text_add(args, "=");
		text_add(args, l->ann.e[k].value);
	}
	free(t.s);
}

static void list_track_event(struct lister *l, const char *seq, const char *machine)
{
	struct text args = { 0 }, name = { 0 };
	const char *parts[6];

	if (!has(&l->pk, "track_event.track_uuid") && has(&l->default_track, seq))
		table_set(&l->pk, "track_event.track_uuid", get(&l->default_track, seq));
	resolve_time(l, seq);
	annotations_of(l, seq, &args);
	if (has(&l->pk, "track_event.name_iid"))
		lookup(&name, &l->names, seq, get(&l->pk, "track_event.name_iid"));
	parts[0] = get(&l->pk, "timestamp");
	parts[1] = machine;
	parts[2] = get(&l->tracks, get(&l->pk, "track_event.track_uuid"));
	parts[3] = get(&l->pk, "track_event.type");
	parts[4] = text_of(&name);
	parts[5] = text_of(&args);
	print_line(parts, 6);
	free(args.s);
	free(name.s);
}

static void end_packet(struct lister *l)
{
	const char *seq = get(&l->pk, "trusted_packet_sequence_id");
	const char *machine = has(&l->pk, "machine_id") ? get(&l->pk, "machine_id") : "0";
	size_t k;

	for (k = 0; k < l->ftrace.n; k++)
		printf("ftrace\t%s\t%s\n", machine, l->ftrace.e[k].value);
	intern_names(l, seq);
	if (has(&l->pk, "track_descriptor.uuid"))
		list_track(l, machine);
	keep_defaults(l, seq);
	if (has(&l->pk, "track_event.type"))
		list_track_event(l, seq, machine);
}

static void open_message(void *data, const struct stack *s)
{
	struct lister *l = data;
	struct text path = { 0 };

	if (s->depth == 1) {
		table_free(&l->pk);
		table_free(&l->ftrace);
		table_free(&l->ann);
	}
	/* An empty message is still present. */
	if (s->depth > 1)
		table_set(&l->pk, path_of(&path, s, NULL), "1");
	free(path.s);
}

static void close_message(void *data, const struct stack *s)
{
	struct lister *l = data;
	bool in_bundle = stack_in(s, 2, "ftrace_events");
	struct text name = { 0 };

	if (s->depth == 1)
		end_packet(l);
	else if (s->depth == 3 && in_bundle && stack_in(s, 3, "event"))
		end_ftrace_event(l);
	else if (s->depth == 3 && in_bundle && stack_in(s, 3, "compact_sched"))
		end_compact(l);
	else if (s->depth == 5 && in_bundle)
		add_ftrace_field(l, unquote(&name, text_of(&l->field_name)),
				 text_of(&l->field_value));
	else if (s->depth <= MAX_DEPTH && is_block(s->name[s->depth]))
		end_block(l, s->name[s->depth]);
	free(name.s);
}

/* A field of an ftrace bundle's event: x86's self-described kvm_entry is our kvm_entry_x86. */
static void read_ftrace_field(struct lister *l, const struct stack *s, const char *key,
			      const char *value)
{
	struct text t = { 0 };
	size_t len;

	if (s->depth == 3)
		table_set(&l->ev, key, value);
	else if (s->depth == 4 && !strcmp(key, "event_name"))
		text_set(&l->ev_name, unquote(&t, value));
	else if (s->depth == 4)
		add_ftrace_field(l, key, value);
	else
		text_set(strcmp(key, "name") ? &l->field_value : &l->field_name, value);
	if (s->depth == 4 && !stack_in(s, 4, "generic")) {
		text_set(&l->ev_name, s->name[4]);
		len = l->ev_name.len;
		if (len > 4 && !strcmp(l->ev_name.s + len - 4, "_x86"))
			l->ev_name.s[l->ev_name.len = len - 4] = '\0';
	}
	free(t.s);
}

static void read_field(void *data, const struct stack *s, const char *key, char *value)
{
	struct lister *l = data;
	struct text path = { 0 };

	if (s->depth == 3 && stack_in(s, 2, "ftrace_events") && stack_in(s, 3, "compact_sched"))
		append(column_of(l, key), "", value);
	else if (s->depth >= 3 && stack_in(s, 2, "ftrace_events"))
		read_ftrace_field(l, s, key, value);
	else if (s->depth <= MAX_DEPTH && is_block(s->name[s->depth]))
		table_set(&l->blk, key, value);
	else
		table_set(&l->pk, path_of(&path, s, key), value);
	free(path.s);
}

int list_events(void)
{
	static struct lister l;
	const struct text_handler h = { open_message, close_message, read_field, &l };

	read_text(stdin, &h);
	return 0;
}
