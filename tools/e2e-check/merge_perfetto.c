// SPDX-License-Identifier: GPL-2.0
/*
 * merge_perfetto.c: kvm-tsc-merge's Perfetto trace (-p) decoded by protoc
 * and read back: what trace_processor's import of ftrace bundles and
 * machines relies on (the rules of tools/tsc-merge/tests/pftrace-check.c),
 * and the guest's events, machine 1, at the timeline's host ns, each
 * marker at the checker's.
 *
 * The rules: every ftrace bundle names its CPU and its events' times do
 * not go back; a packet sequence stays on one machine and none is 1 (the
 * service's); every guest machine with events is named by a track on it;
 * every machine with events, the host too, has a SystemInfo naming it;
 * a compact_sched block's switch arrays are of one length, its waking
 * arrays too, its comm indexes inside its intern_table, and its times,
 * delta-decoded, after every event of its CPU's earlier bundles.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "events.h"
#include "report.h"

#define MAX_DEPTH	16
#define MAX_NAME	48
#define MAX_MACHINES	64
#define MAX_KEYS	16

/* One array of a compact_sched block: its key and length. */
struct array_len {
	char key[MAX_NAME];
	size_t n;
};

/* A machine's last time on one CPU, over the bundles read so far. */
struct cpu_time {
	int machine;
	int cpu;
	uint64_t max;
};

/* A packet sequence and the machine it is on. */
struct sequence {
	unsigned long long id;
	int machine;
};

/* What one packet holds, read until its closing brace gives its machine. */
struct packet {
	int machine;
	unsigned long long seq;
	bool has_seq;
	bool track;
	bool machine_name;
	bool bundle;
	int cpu;
	bool has_cpu;
	uint64_t last;
	uint64_t max;
	/* Its bundle's events; compact ones marked, whose times must pass earlier bundles'. */
	struct out_events events;
	struct out_events compact;
	/* Its compact_sched block's arrays, running times and largest comm index. */
	struct array_len arrays[MAX_KEYS];
	int nr_arrays;
	uint64_t switch_ts;
	uint64_t waking_ts;
	long long max_comm;
};

struct reader {
	const struct placements *placed;
	char stack[MAX_DEPTH][MAX_NAME];
	int depth;
	unsigned long nr;
	struct packet pk;
	struct out_event ev;
	struct sequence *seqs;
	size_t nr_seqs;
	struct cpu_time *cpus;
	size_t nr_cpus;
	bool named[MAX_MACHINES];
	bool info[MAX_MACHINES];
	bool bundles[MAX_MACHINES];
	unsigned long nr_bundles;
	unsigned long failures;
	/* Machine 1's events: the guest's. */
	struct out_events guest;
};

static void PRINTF(2, 3) fail(struct reader *r, const char *fmt, ...)
{
	char msg[160];

	if (r->failures++ >= MAX_SHOWN)
		return;
	FORMAT_ARGS(msg, sizeof(msg), fmt);
	report_msg("  decoded line %lu: %s", r->nr, msg);
}

static bool in(const struct reader *r, int depth, const char *name)
{
	return r->depth > depth && !strcmp(r->stack[depth], name);
}

static void reset_packet(struct packet *pk)
{
	events_free(&pk->events);
	events_free(&pk->compact);
	*pk = (struct packet){ 0 };
}

static size_t *array_len(struct packet *pk, const char *key)
{
	int i;

	for (i = 0; i < pk->nr_arrays; i++)
		if (!strcmp(pk->arrays[i].key, key))
			return &pk->arrays[i].n;
	if (pk->nr_arrays == MAX_KEYS)
		return NULL;
	snprintf(pk->arrays[i].key, MAX_NAME, "%s", key);
	pk->arrays[i].n = 0;
	pk->nr_arrays++;
	return &pk->arrays[i].n;
}

/* A compact_sched entry: its length counted, times delta-decoded into events. */
static void read_compact(struct reader *r, const char *key, const char *value)
{
	struct packet *pk = &r->pk;
	struct out_event e = { .marker = MARKER_NONE };
	unsigned long long v = strtoull(value, NULL, 10);
	size_t *n = array_len(pk, key);

	if (n)
		(*n)++;
	if (strstr(key, "_comm_index") && (long long)v > pk->max_comm)
		pk->max_comm = v;
	if (strcmp(key, "switch_timestamp") && strcmp(key, "waking_timestamp"))
		return;
	e.ts = key[0] == 's' ? (pk->switch_ts += v) : (pk->waking_ts += v);
	snprintf(e.event, sizeof(e.event), key[0] == 's' ? "sched_switch" : "sched_waking");
	events_add(&pk->compact, &e);
}

static size_t length_of(struct packet *pk, const char *key)
{
	int i;

	for (i = 0; i < pk->nr_arrays; i++)
		if (!strcmp(pk->arrays[i].key, key))
			return pk->arrays[i].n;
	return 0;
}

/* A closed compact_sched block's arrays: of one length per kind, comm indexes in the table. */
static void judge_compact(struct reader *r)
{
	struct packet *pk = &r->pk;
	size_t sw = length_of(pk, "switch_timestamp"), wk = length_of(pk, "waking_timestamp");
	int i;

	for (i = 0; i < pk->nr_arrays; i++) {
		const struct array_len *a = &pk->arrays[i];

		if (!strncmp(a->key, "switch_", 7) && a->n != sw)
			fail(r, "compact_sched: %zu of an array beside %zu switch timestamps", a->n, sw);
		if (!strncmp(a->key, "waking_", 7) && strcmp(a->key, "waking_common_flags") &&
		    a->n != wk)
			fail(r, "compact_sched: %zu of an array beside %zu waking timestamps", a->n, wk);
	}
	if (pk->max_comm >= (long long)length_of(pk, "intern_table"))
		fail(r, "compact_sched: comm index %lld outside an intern_table of %zu",
		     pk->max_comm, length_of(pk, "intern_table"));
}

/* One field line "KEY: VALUE" where the stack says what it belongs to. */
static void read_field(struct reader *r, const char *key, char *value)
{
	struct packet *pk = &r->pk;

	if (r->depth == 1 && !strcmp(key, "machine_id"))
		pk->machine = atoi(value);
	else if (r->depth == 1 && !strcmp(key, "trusted_packet_sequence_id"))
		pk->has_seq = (pk->seq = strtoull(value, NULL, 10), true);
	else if (r->depth == 2 && in(r, 1, "ftrace_events") && !strcmp(key, "cpu"))
		pk->has_cpu = (pk->cpu = atoi(value), true);
	else if (r->depth == 2 && in(r, 1, "system_info") && !strcmp(key, "machine_name"))
		pk->machine_name = true;
	else if (r->depth == 3 && in(r, 2, "compact_sched"))
		read_compact(r, key, value);
	else if (r->depth == 3 && in(r, 2, "event") && !strcmp(key, "timestamp"))
		r->ev.ts = strtoull(value, NULL, 10);
	else if (r->depth == 4 && in(r, 2, "event") && !strcmp(key, "event_name"))
		snprintf(r->ev.event, sizeof(r->ev.event), "%.*s", (int)strcspn(value + 1, "\""),
			 value + 1);
	else if (r->depth == 4 && in(r, 3, "print") && !strcmp(key, "buf") && value[0] == '"') {
		value[strlen(value) - 1] = '\0';
		r->ev.marker = events_marker_of(r->placed, value + 1);
	}
}

/* A message opens: an event's typed message names it (x86's kvm_entry_x86 is kvm_entry). */
static void open_message(struct reader *r, const char *name)
{
	size_t len = strlen(name);

	if (r->depth == 1 && !strcmp(name, "ftrace_events"))
		r->pk.bundle = true;
	else if (r->depth == 1 && !strcmp(name, "track_descriptor"))
		r->pk.track = true;
	else if (r->depth == 2 && in(r, 1, "ftrace_events") && !strcmp(name, "event"))
		r->ev = (struct out_event){ .marker = MARKER_NONE };
	else if (r->depth == 3 && in(r, 2, "event") && strcmp(name, "generic"))
		snprintf(r->ev.event, sizeof(r->ev.event), "%.*s",
			 (int)(len > 4 && !strcmp(name + len - 4, "_x86") ? len - 4 : len), name);
	if (r->depth < MAX_DEPTH)
		snprintf(r->stack[r->depth], MAX_NAME, "%s", name);
	r->depth++;
}

static void close_event(struct reader *r)
{
	struct packet *pk = &r->pk;

	if (r->ev.ts < pk->last)
		fail(r, "a bundle's time goes back: %llu after %llu", (unsigned long long)r->ev.ts,
		     (unsigned long long)pk->last);
	pk->last = r->ev.ts;
	pk->max = r->ev.ts > pk->max ? r->ev.ts : pk->max;
	events_add(&pk->events, &r->ev);
}

static struct cpu_time *cpu_time_of(struct reader *r, int machine, int cpu)
{
	size_t i;

	for (i = 0; i < r->nr_cpus; i++)
		if (r->cpus[i].machine == machine && r->cpus[i].cpu == cpu)
			return &r->cpus[i];
	r->cpus = grow(r->cpus, r->nr_cpus, sizeof(*r->cpus));
	r->cpus[r->nr_cpus] = (struct cpu_time){ machine, cpu, 0 };
	return &r->cpus[r->nr_cpus++];
}

/* A bundle's compact times after its CPU's earlier bundles; its events kept for machine 1. */
static void close_bundle(struct reader *r)
{
	struct packet *pk = &r->pk;
	struct cpu_time *t = cpu_time_of(r, pk->machine, pk->cpu);
	bool first = !t->max;
	size_t i, j;

	r->nr_bundles++;
	r->bundles[pk->machine] = true;
	if (!pk->has_cpu)
		fail(r, "a bundle without its CPU (%zu events)", pk->events.n);
	for (i = 0; i < pk->compact.n; i++) {
		if (!first && pk->compact.e[i].ts <= t->max)
			fail(r, "a compact event at %llu not after %llu, an earlier bundle's",
			     (unsigned long long)pk->compact.e[i].ts, (unsigned long long)t->max);
		pk->max = pk->compact.e[i].ts > pk->max ? pk->compact.e[i].ts : pk->max;
	}
	t->max = pk->max > t->max ? pk->max : t->max;
	if (pk->machine != 1)
		return;
	for (j = 0; j < 2; j++) {
		const struct out_events *l = j ? &pk->compact : &pk->events;

		for (i = 0; i < l->n; i++) {
			struct out_event e = l->e[i];

			e.cpu = e.guest_cpu = pk->cpu;
			events_add(&r->guest, &e);
		}
	}
}

static void close_packet(struct reader *r)
{
	struct packet *pk = &r->pk;
	size_t i;

	if (pk->machine < 0 || pk->machine >= MAX_MACHINES) {
		fail(r, "machine %d: e2e-check takes machines below %d", pk->machine, MAX_MACHINES);
		reset_packet(pk);
		return;
	}
	if (pk->has_seq && pk->seq == 1)
		fail(r, "packet sequence 1 is the service's");
	for (i = 0; pk->has_seq && i < r->nr_seqs && r->seqs[i].id != pk->seq; i++)
		;
	if (pk->has_seq && i < r->nr_seqs && r->seqs[i].machine != pk->machine)
		fail(r, "sequence %llu on machines %d and %d", pk->seq, r->seqs[i].machine, pk->machine);
	if (pk->has_seq && i == r->nr_seqs) {
		r->seqs = grow(r->seqs, r->nr_seqs, sizeof(*r->seqs));
		r->seqs[r->nr_seqs++] = (struct sequence){ pk->seq, pk->machine };
	}
	r->named[pk->machine] |= pk->track;
	r->info[pk->machine] |= pk->machine_name;
	if (pk->bundle)
		close_bundle(r);
	reset_packet(pk);
}

static void close_message(struct reader *r)
{
	r->depth--;
	if (r->depth == 0)
		close_packet(r);
	else if (r->depth == 2 && in(r, 1, "ftrace_events") && !strcmp(r->stack[2], "event"))
		close_event(r);
	else if (r->depth == 2 && in(r, 1, "ftrace_events") && !strcmp(r->stack[2], "compact_sched"))
		judge_compact(r);
}

/* One line of protoc's text format. */
static void read_line(struct reader *r, char *line)
{
	char *p = line + strspn(line, " "), *colon;
	size_t len = strcspn(p, "\n");

	p[len] = '\0';
	if (!strcmp(p, "}")) {
		if (r->depth)
			close_message(r);
		return;
	}
	if (len > 2 && !strcmp(p + len - 2, " {")) {
		p[len - 2] = '\0';
		open_message(r, p);
		return;
	}
	colon = strstr(p, ": ");
	if (!colon)
		return;
	*colon = '\0';
	read_field(r, p, colon + 2);
}

/* Every machine with events named by a track (the host aside) and by a SystemInfo. */
static void judge_machines(struct reader *r)
{
	int m;

	for (m = 0; m < MAX_MACHINES; m++) {
		if (!r->bundles[m])
			continue;
		if (m && !r->named[m])
			fail(r, "machine %d has events but no track naming it", m);
		if (!r->info[m])
			fail(r, "machine %d has events but no SystemInfo naming it", m);
	}
}

/* protoc --decode of @pftrace read as it prints; false when protoc fails. */
static bool decode(const struct ctx *c, const char *pftrace, struct reader *r)
{
	char proto[PATH_MAX], path_arg[PATH_MAX + 16], err[PATH_MAX];
	char *argv[] = { "protoc", "--decode=perfetto.protos.Trace", path_arg, proto, NULL };
	char *line = NULL;
	size_t size = 0;
	struct child ch;
	int status;

	join_path(proto, c->t->proto_dir, "perfetto_trace.proto");
	snprintf(path_arg, sizeof(path_arg), "--proto_path=%s", c->t->proto_dir);
	if (child_open(&ch, argv, pftrace, work_path(c, "protoc.stderr", err)))
		return false;
	while (getline(&line, &size, ch.out) > 0) {
		r->nr++;
		read_line(r, line);
	}
	free(line);
	status = child_close(&ch);
	report_msg("protoc --decode=perfetto.protos.Trace: exit status %d, %lu lines, %lu bundles",
		   status, r->nr, r->nr_bundles);
	child_show(err, 4);
	return !status;
}

static void free_reader(struct reader *r)
{
	reset_packet(&r->pk);
	free(r->seqs);
	free(r->cpus);
	events_free(&r->guest);
}

/* kvm-tsc-merge -p into @pftrace, L0's rate given. */
static bool write_perfetto(const struct ctx *c, const char *pftrace)
{
	char khz[32], spec[PATH_MAX + 8], err[PATH_MAX];
	char *argv[] = { (char *)c->t->merge, "-q", "-n", "--host", c->l0->path, "--guest", spec,
			 "--tsc-khz", khz, "--perfetto", (char *)pftrace, NULL };
	int status;

	snprintf(khz, sizeof(khz), "%llu", (unsigned long long)c->l0->tsc_khz);
	snprintf(spec, sizeof(spec), "l1=%s", c->l1->path);
	unlink(pftrace);
	status = child_run(argv, NULL, NULL, work_path(c, "perfetto.stderr", err));
	report_msg("kvm-tsc-merge -n --tsc-khz %s --perfetto l1.pftrace: exit status %d", khz,
		   status);
	child_show(err, 4);
	return !status;
}

void check_perfetto(const struct ctx *c)
{
	/* Machine 1, the guest: its events read bundle by bundle, in an order of their own. */
	static const struct view guest = { "machine 1", .guest_only = true, .own_order = true,
					   .by_text = true };
	struct unit ns = { .kind = UNIT_KHZ, .khz = c->l0->tsc_khz };
	struct reader r = { .placed = &c->found->placed };
	char what[WHAT], pftrace[PATH_MAX];
	bool ok;

	if (!start_merge_check(what, c, "timeline", "the Perfetto trace (-p) decodes with protoc, keeps the import rules of ftrace bundles and machines, and has the guest's events at the timeline's host ns, each marker at the checker's"))
		return;
	if (!c->l0->tsc_khz) {
		report_result(false, "%s (no TSC rate of L0's known)", what);
		return;
	}
	report_msg("L0's rate: %llu kHz, from %s", (unsigned long long)c->l0->tsc_khz,
		   c->l0->tsc_khz_from);
	work_path(c, "l1.pftrace", pftrace);
	if (!write_perfetto(c, pftrace) || !decode(c, pftrace, &r)) {
		free_reader(&r);
		report_result(false, "%s", what);
		return;
	}
	judge_machines(&r);
	report_msg("the import rules: %lu broken", r.failures);
	ok = !r.failures;
	ok &= events_judge_output(c, &r.guest, &ns, &ns, &guest);
	free_reader(&r);
	report_result(ok, "%s", what);
}
