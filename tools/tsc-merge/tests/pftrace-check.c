// SPDX-License-Identifier: GPL-2.0
/*
 * pftrace-check.c: check a Perfetto trace, as protoc --decode prints it,
 * against what trace_processor's import of ftrace bundles and machines
 * relies on; or, with --events, list its tracks and events (pftrace-events.c).
 *
 *   protoc --decode=perfetto.protos.Trace --proto_path=proto perfetto_trace.proto <T.pftrace |
 *       pftrace-check [--names | --events]
 *
 * Written from Perfetto's import rules, independently of the sink:
 *   - every ftrace bundle names its CPU, and its events' timestamps do not
 *     go back (Perfetto sorts a CPU's events bundle by bundle);
 *   - a packet sequence stays on one machine, and no sequence is 1 (the
 *     service's own);
 *   - every guest machine that has events is named: a track on it;
 *   - every machine that has events, the host too, has a SystemInfo with
 *     its machine_name (trace_processor's machine table);
 *   - --names: every pid an event runs in was named before, on its
 *     machine (task_newtask, task_rename, sched_switch, sched_waking or
 *     sched_wakeup, a thread track or a process tree's thread), as Perfetto
 *     names threads from them;
 *   - a bundle's compact_sched: its switch arrays of one length, its waking
 *     arrays of one length, every comm index inside its intern_table, and
 *     its times, delta-decoded, after every event of its CPU's earlier
 *     bundles (trace_processor takes a compact switch's prev_* from the
 *     CPU's switch before it); a compact switch names its next_pid.
 * Prints each violation and a last line "ok BUNDLES EVENTS" or "FAILED N";
 * exits 1 on a violation, 2 on a usage or memory error.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pftrace.h"

#define MAX_MACHINES	1024

/* A growing list of numbers; a pid is kept as pid + 1, 0 meaning none. */
struct list {
	uint64_t *v;
	size_t n, size;
};

/* A machine's largest time on one CPU, over the bundles read so far. */
struct cpu_time {
	uint64_t machine, cpu, max;
};

/* What one packet holds, read until its closing brace gives its machine. */
struct packet {
	uint64_t machine, seq, cpu, tid;
	bool has_seq, has_cpu, has_tid, bundle, track, machine_name;
	uint64_t last, max;
	/* In order: a pid named (name) or run in (run), each as pid + 1. */
	struct list names_runs;
	struct list is_run;
	/* Its compact_sched events' times. */
	struct list compact;
};

struct checker {
	bool check_names;
	unsigned long line;
	struct packet pk;
	/* The event being read: its time, its pid + 1, the pids it names + 1. */
	uint64_t ev_ts, ev_pid;
	struct list ev_tasks;
	/* A compact_sched block's arrays, each's entries in order. */
	struct compact_keys keys;
	struct list arrays[MAX_ARRAYS];
	/* Sequences and their machines; (machine, pid) pairs named. */
	struct list seqs, seq_machines, named_machines, named_pids;
	struct cpu_time *cpus;
	size_t nr_cpus, cpus_size;
	bool named[MAX_MACHINES], info[MAX_MACHINES], bundles[MAX_MACHINES];
	bool used[MAX_MACHINES];
	unsigned long nr_bundles, nr_events, failures;
};

static void add(struct list *l, uint64_t v)
{
	l->v = grow(l->v, &l->size, l->n, sizeof(*l->v));
	l->v[l->n++] = v;
}

static void __attribute__((format(printf, 2, 3))) fail(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	printf("line %lu: ", c->line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	c->failures++;
}

/* A pid named on @machine, kept when --names asks; @pid_1 is the pid + 1, 0 for none. */
static void name_task(struct checker *c, uint64_t machine, uint64_t pid_1)
{
	if (!pid_1 || !c->check_names)
		return;
	add(&c->named_machines, machine);
	add(&c->named_pids, pid_1);
}

static bool is_named(const struct checker *c, uint64_t machine, uint64_t pid_1)
{
	size_t i;

	for (i = c->named_pids.n; i-- > 0;)
		if (c->named_pids.v[i] == pid_1 && c->named_machines.v[i] == machine)
			return true;
	return false;
}

static struct list *array_of(struct checker *c, const char *key)
{
	return &c->arrays[compact_array(&c->keys, key)];
}

static size_t length_of(struct checker *c, const char *key)
{
	return array_of(c, key)->n;
}

static void note(struct packet *pk, uint64_t pid_1, bool run)
{
	add(&pk->names_runs, pid_1);
	add(&pk->is_run, run);
}

static void close_event(struct checker *c)
{
	struct packet *pk = &c->pk;
	size_t i;

	if (c->ev_ts < pk->last)
		fail(c, "a bundle's time goes back: %llu after %llu", (unsigned long long)c->ev_ts,
		     (unsigned long long)pk->last);
	pk->last = c->ev_ts;
	pk->max = pk->last > pk->max ? pk->last : pk->max;
	c->nr_events++;
	/* In order: an event names its tasks, then runs in its pid. */
	for (i = 0; i < c->ev_tasks.n; i++)
		note(pk, c->ev_tasks.v[i], false);
	note(pk, c->ev_pid, true);
	c->ev_tasks.n = 0;
	c->ev_ts = c->ev_pid = 0;
}

/* A compact_sched array of a kind, beside that kind's timestamps. */
static void judge_length(struct checker *c, const char *key, const struct list *a)
{
	const char *kind = !strncmp(key, "switch_", 7) ? "switch_timestamp" :
			   !strncmp(key, "waking_", 7) ? "waking_timestamp" : NULL;
	size_t n;

	if (!kind || !strcmp(key, "waking_common_flags"))
		return;
	n = length_of(c, kind);
	if (a->n != n)
		fail(c, "compact_sched: %zu %s beside %zu timestamps", a->n, key, n);
}

static void judge_comms(struct checker *c, const char *key, const struct list *a)
{
	size_t len = strlen(key), table = length_of(c, "intern_table"), k;

	if (len < 11 || strcmp(key + len - 11, "_comm_index"))
		return;
	for (k = 0; k < a->n; k++)
		if (a->v[k] >= table)
			fail(c, "compact_sched: %s %llu outside an intern_table of %zu", key,
			     (unsigned long long)a->v[k], table);
}

/* A compact_sched block: its arrays checked, its events kept for the packet. */
static void close_compact(struct checker *c)
{
	static const char *const kinds[] = { "switch_timestamp", "waking_timestamp" };
	struct list *ts, *next_pid = array_of(c, "switch_next_pid");
	uint64_t t;
	size_t k;
	int i, n = c->keys.n;

	for (i = 0; i < n; i++)
		judge_length(c, c->keys.key[i], &c->arrays[i]);
	for (i = 0; i < n; i++)
		judge_comms(c, c->keys.key[i], &c->arrays[i]);
	for (i = 0; i < 2; i++) {
		ts = array_of(c, kinds[i]);
		for (k = 0, t = 0; k < ts->n; k++) {
			t += ts->v[k];
			add(&c->pk.compact, t);
			if (!i)
				note(&c->pk, k < next_pid->n ? next_pid->v[k] + 1 : 0, false);
		}
	}
	for (i = 0; i < c->keys.n; i++)
		c->arrays[i].n = 0;
	c->keys.n = 0;
}

static struct cpu_time *cpu_time_of(struct checker *c, uint64_t machine, uint64_t cpu, bool *seen)
{
	size_t i;

	for (i = 0; i < c->nr_cpus; i++)
		if (c->cpus[i].machine == machine && c->cpus[i].cpu == cpu)
			return *seen = true, &c->cpus[i];
	c->cpus = grow(c->cpus, &c->cpus_size, c->nr_cpus, sizeof(*c->cpus));
	c->cpus[c->nr_cpus] = (struct cpu_time){ machine, cpu, 0 };
	*seen = false;
	return &c->cpus[c->nr_cpus++];
}

/* A bundle's compact times after its CPU's earlier bundles. */
static void close_bundle(struct checker *c)
{
	struct packet *pk = &c->pk;
	struct cpu_time *t;
	bool seen;
	size_t i;

	c->nr_bundles++;
	if (!pk->has_cpu)
		fail(c, "a bundle without its CPU");
	c->used[pk->machine] |= pk->machine != 0;
	c->bundles[pk->machine] = true;
	t = cpu_time_of(c, pk->machine, pk->cpu, &seen);
	for (i = 0; i < pk->compact.n; i++)
		if (seen && pk->compact.v[i] <= t->max)
			fail(c, "machine %llu CPU %llu: a compact event at %llu not after %llu, an earlier bundle's",
			     (unsigned long long)pk->machine, (unsigned long long)pk->cpu,
			     (unsigned long long)pk->compact.v[i], (unsigned long long)t->max);
	for (i = 0; i < pk->compact.n; i++)
		pk->max = pk->compact.v[i] > pk->max ? pk->compact.v[i] : pk->max;
	if (!seen || pk->max > t->max)
		t->max = pk->max;
	c->nr_events += pk->compact.n;
}

/* A packet's sequence on one machine, not the service's. */
static void judge_sequence(struct checker *c)
{
	struct packet *pk = &c->pk;
	size_t i;

	if (!pk->has_seq)
		return;
	if (pk->seq == 1)
		fail(c, "packet sequence 1 is the service's");
	for (i = 0; i < c->seqs.n && c->seqs.v[i] != pk->seq; i++)
		;
	if (i == c->seqs.n) {
		add(&c->seqs, pk->seq);
		add(&c->seq_machines, pk->machine);
	} else if (c->seq_machines.v[i] != pk->machine) {
		fail(c, "sequence %llu on machines %llu and %llu", (unsigned long long)pk->seq,
		     (unsigned long long)c->seq_machines.v[i], (unsigned long long)pk->machine);
		c->seq_machines.v[i] = pk->machine;
	}
}

/* The pids a packet's events name and run in, in order: a bundle's machine_id follows them. */
static void judge_tasks(struct checker *c)
{
	struct packet *pk = &c->pk;
	size_t i;

	if (pk->has_tid)
		name_task(c, pk->machine, pk->tid + 1);
	for (i = 0; i < pk->names_runs.n; i++) {
		uint64_t pid_1 = pk->names_runs.v[i];

		if (!pk->is_run.v[i])
			name_task(c, pk->machine, pid_1);
		else if (c->check_names && pid_1 != 1 && !is_named(c, pk->machine, pid_1)) {
			if (pid_1)
				fail(c, "machine %llu: pid %llu runs unnamed",
				     (unsigned long long)pk->machine, (unsigned long long)pid_1 - 1);
			else
				fail(c, "machine %llu: pid  runs unnamed",
				     (unsigned long long)pk->machine);
		}
	}
}

static void close_packet(struct checker *c)
{
	struct packet *pk = &c->pk;

	if (pk->machine >= MAX_MACHINES) {
		fprintf(stderr, "pftrace-check: machine %llu: takes machines below %d\n",
			(unsigned long long)pk->machine, MAX_MACHINES);
		exit(2);
	}
	judge_sequence(c);
	c->named[pk->machine] |= pk->track;
	c->info[pk->machine] |= pk->machine_name;
	judge_tasks(c);
	if (pk->bundle)
		close_bundle(c);
	pk->names_runs.n = pk->is_run.n = pk->compact.n = 0;
	*pk = (struct packet){ .names_runs = pk->names_runs, .is_run = pk->is_run,
			       .compact = pk->compact };
}

static void open_message(void *data, const struct stack *s)
{
	struct checker *c = data;

	if (s->depth == 2 && stack_in(s, 2, "ftrace_events")) {
		c->pk.bundle = true;
		c->pk.last = 0;
	}
	if (s->depth == 2 && stack_in(s, 2, "track_descriptor"))
		c->pk.track = true;
}

static void close_message(void *data, const struct stack *s)
{
	struct checker *c = data;

	c->line = s->line;
	if (s->depth == 1)
		close_packet(c);
	else if (s->depth == 3 && stack_in(s, 2, "ftrace_events") && stack_in(s, 3, "event"))
		close_event(c);
	else if (s->depth == 3 && stack_in(s, 2, "ftrace_events") &&
		 stack_in(s, 3, "compact_sched"))
		close_compact(c);
}

static bool names_task(const struct stack *s, const char *key)
{
	static const char *const by_pid[] = { "task_newtask", "task_rename", "sched_waking",
					      "sched_wakeup" };
	size_t i;

	if (s->depth != 4)
		return false;
	for (i = 0; i < ARRAY_SIZE(by_pid); i++)
		if (stack_in(s, 4, by_pid[i]))
			return !strcmp(key, "pid");
	return stack_in(s, 4, "sched_switch") &&
	       (!strcmp(key, "prev_pid") || !strcmp(key, "next_pid"));
}

/* @value's first word, without its quotes. */
static const char *first_word(char *value)
{
	size_t len;

	value += strspn(value, " \t");
	value[strcspn(value, " \t")] = '\0';
	value += *value == '"';
	len = strlen(value);
	if (len && value[len - 1] == '"')
		value[len - 1] = '\0';
	return value;
}

/* One field "KEY: VALUE" where the stack says what it belongs to. */
static void read_field(void *data, const struct stack *s, const char *key, char *text)
{
	struct checker *c = data;
	struct packet *pk = &c->pk;
	const char *value = first_word(text);
	uint64_t v = strtoull(value, NULL, 10);
	bool in_event = s->depth == 3 && stack_in(s, 2, "ftrace_events") && stack_in(s, 3, "event");

	if (s->depth == 1 && !strcmp(key, "machine_id"))
		pk->machine = v;
	else if (s->depth == 1 && !strcmp(key, "trusted_packet_sequence_id"))
		pk->has_seq = (pk->seq = v, true);
	else if (s->depth == 2 && stack_in(s, 2, "ftrace_events") && !strcmp(key, "cpu"))
		pk->has_cpu = (pk->cpu = v, true);
	else if (s->depth == 3 && stack_in(s, 2, "ftrace_events") &&
		 stack_in(s, 3, "compact_sched"))
		add(array_of(c, key), v);
	else if (in_event && !strcmp(key, "timestamp"))
		c->ev_ts = v;
	else if (in_event && !strcmp(key, "pid"))
		c->ev_pid = v + 1;
	else if (s->depth == 2 && stack_in(s, 2, "system_info") && !strcmp(key, "machine_name"))
		pk->machine_name |= *value != '\0';
	else if (s->depth == 3 && (stack_in(s, 3, "thread") || stack_in(s, 3, "threads")) &&
		 !strcmp(key, "tid"))
		pk->has_tid = (pk->tid = v, true);
	else if (names_task(s, key))
		add(&c->ev_tasks, v + 1);
}

/* Every machine with events named by a track (the host aside) and by a SystemInfo. */
static void judge_machines(struct checker *c)
{
	int m;

	for (m = 0; m < MAX_MACHINES; m++)
		if (c->used[m] && !c->named[m])
			fail(c, "machine %d has events but no name", m);
	for (m = 0; m < MAX_MACHINES; m++)
		if (c->bundles[m] && !c->info[m])
			fail(c, "machine %d has events but no SystemInfo naming it", m);
}

/* The rules over protoc's text on standard input; --names: tasks named too. */
static int run_checks(bool names)
{
	static struct checker c;
	const struct text_handler h = { open_message, close_message, read_field, &c };

	c.check_names = names;
	c.line = read_text(stdin, &h);
	judge_machines(&c);
	if (c.failures)
		printf("FAILED %lu\n", c.failures);
	else
		printf("ok %lu %lu\n", c.nr_bundles, c.nr_events);
	return c.failures != 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--events"))
		return list_events();
	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--names"))) {
		fprintf(stderr, "usage: pftrace-check [--names | --events] <DECODED\n");
		return 2;
	}
	return run_checks(argc == 2);
}
