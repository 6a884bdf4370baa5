// SPDX-License-Identifier: GPL-2.0
/*
 * recording.c: read one trace.dat with libtracecmd, every buffer in time
 * order and every timestamp raw, and keep what the checks judge: markers,
 * IA32_TSC writes, payload lines, I/O exits, vCPU runs and threads, TSC
 * events, and who made which thread; and a marker's text written back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <trace-cmd/trace-cmd.h>

#include "recording.h"
#include "report.h"

/*
 * libtracecmd 1.3 exports these without declaring them in its public
 * header (trace-cmd's lib/trace-cmd/include/private/trace-cmd-private.h).
 */
const char *tracecmd_get_trace_clock(struct tracecmd_input *handle);
int tracecmd_cpus(struct tracecmd_input *handle);
void tracecmd_set_flag(struct tracecmd_input *handle, int flag);
int tracecmd_get_flags(struct tracecmd_input *handle);
/* Times in ns: its clock counts them, or its TSC2NSEC converts the TSC's. */
#define TRACECMD_FL_IN_USECS	(1 << 2)
/* No TIME_SHIFT, TSC2NSEC or offset applied: the TSC counts as recorded. */
#define TRACECMD_FL_RAW_TS	(1 << 3)

#define MAX_FIELDS	6
#define MAX_BUFFERS	8
#define MSR_IA32_TSC	0x10
/* The exit reasons of an I/O instruction. */
#define VMX_EXIT_IO	30
#define SVM_EXIT_IO	0x7b

struct event_reader;
typedef int (*read_fn)(struct recording *r, const struct tep_record *rec, const uint64_t *v);

/* One event the checks use: its fields, read by name, handed to @read in order. */
struct event_reader {
	const char *system;
	const char *name;
	const char *fields[MAX_FIELDS];
	read_fn read;
	int id;
	struct tep_format_field *field[MAX_FIELDS];
};

/* What one pass over a file's buffers needs. */
struct pass {
	struct recording *r;
	struct event_reader *readers;
	int nr_readers;
	struct tep_format_field *print_buf;
	int print_id;
};

void *grow(void *p, size_t n, size_t size)
{
	if (n && (n < 16 || (n & (n - 1))))
		return p;
	p = realloc(p, (n < 16 ? 16 : 2 * n) * size);
	if (!p)
		report_bail("out of memory");
	return p;
}

static struct vcpu_facts *vcpu_of(struct recording *r, uint64_t id)
{
	if (id >= MAX_VCPUS) {
		snprintf(r->error, sizeof(r->error), "vcpu_id %llu: the checker takes %d vCPUs at most",
			 (unsigned long long)id, MAX_VCPUS);
		return NULL;
	}
	return &r->vcpu[id];
}

static int read_exit(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	uint64_t reason = v[0], isa = v[1], info1 = v[2];
	struct vcpu_facts *vc = vcpu_of(r, v[3]);
	struct port_exit *e;

	if (!vc)
		return -1;
	vc->nr_exits++;
	if (vc->running) {
		vc->runs = grow(vc->runs, vc->nr_runs, sizeof(*vc->runs));
		vc->runs[vc->nr_runs++] = (struct run){ vc->entry, rec->ts };
		vc->running = false;
	}
	r->isa = isa;
	if (reason != (isa == ISA_VMX ? VMX_EXIT_IO : SVM_EXIT_IO))
		return 0;
	/* Bits 31:16 of SVM's EXITINFO1 and of VMX's exit qualification alike. */
	r->port_exits = grow(r->port_exits, r->nr_port_exits, sizeof(*r->port_exits));
	e = &r->port_exits[r->nr_port_exits++];
	*e = (struct port_exit){ rec->ts, rec->cpu, v[3], (info1 >> 16) & 0xffff };
	return 0;
}

static int read_entry(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	struct vcpu_facts *vc = vcpu_of(r, v[0]);

	if (!vc)
		return -1;
	vc->tid = v[1];
	vc->nr_entries++;
	vc->entry = rec->ts;
	vc->running = true;
	return 0;
}

static int add_tsc_event(struct recording *r, uint64_t vcpu, const struct tsc_event *ev)
{
	struct vcpu_facts *vc = vcpu_of(r, vcpu);

	if (!vc)
		return -1;
	vc->tsc = grow(vc->tsc, vc->nr_tsc, sizeof(*vc->tsc));
	vc->tsc[vc->nr_tsc++] = *ev;
	return 0;
}

static int read_offset(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	struct tsc_event ev = { .ts = rec->ts, .kind = TSC_OFFSET, .prev = v[1], .next = v[2] };

	return add_tsc_event(r, v[0], &ev);
}

static int read_multiplier(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	struct tsc_event ev = { .ts = rec->ts, .kind = TSC_MULTIPLIER, .prev = v[1], .next = v[2],
				.frac = v[3] };

	return add_tsc_event(r, v[0], &ev);
}

static int read_nested(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	struct tsc_event ev = { .ts = rec->ts, .kind = TSC_NESTED, .guest_mode = v[1],
				.prev = v[2], .next = v[3], .mult = v[4] };

	if (ev.guest_mode && !r->l2_runner)
		r->l2_runner = v[5];
	return add_tsc_event(r, v[0], &ev);
}

static int read_new_task(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	(void)rec;
	r->new_tasks = grow(r->new_tasks, r->nr_new_tasks, sizeof(*r->new_tasks));
	r->new_tasks[r->nr_new_tasks++] = (struct new_task){ v[0], v[1] };
	return 0;
}

static int read_msr(struct recording *r, const struct tep_record *rec, const uint64_t *v)
{
	if (v[0] != MSR_IA32_TSC || rec->cpu >= MAX_VCPUS)
		return 0;
	r->msr_write[rec->cpu] = (struct msr_write){ rec->ts, v[1], v[2] };
	r->nr_msr_writes[rec->cpu]++;
	return 0;
}

const char *phase_name(enum phase phase)
{
	return phase == PHASE_BEFORE ? "before" : "after";
}

void marker_text(char *buf, size_t size, const struct marker *m)
{
	snprintf(buf, size, "ktt-marker %s cpu=%u seq=%u", phase_name(m->phase), m->cpu, m->seq);
}

void payload_marker_text(char *buf, size_t size, const struct payload_marker *m)
{
	snprintf(buf, size, "ktt-n-marker cpu=%u seq=%u tsc=%llu", m->cpu, m->seq,
		 (unsigned long long)m->tsc);
}

static void add_marker(struct recording *r, const struct tep_record *rec, const char *phase,
		       unsigned int cpu, unsigned int seq)
{
	r->markers = grow(r->markers, r->nr_markers, sizeof(*r->markers));
	r->markers[r->nr_markers++] = (struct marker){
		rec->ts, rec->cpu, cpu, seq, strcmp(phase, "before") ? PHASE_AFTER : PHASE_BEFORE };
}

static void add_payload_marker(struct recording *r, const struct tep_record *rec,
			       unsigned int cpu, unsigned int seq, unsigned long long tsc)
{
	r->payload_markers = grow(r->payload_markers, r->nr_payload_markers,
				  sizeof(*r->payload_markers));
	r->payload_markers[r->nr_payload_markers++] =
		(struct payload_marker){ rec->ts, cpu, seq, tsc };
}

static void add_payload_jump(struct recording *r, const struct tep_record *rec, unsigned int cpu,
			     unsigned long long from, unsigned long long to)
{
	if (cpu >= MAX_VCPUS)
		return;
	r->payload_jump[cpu] = (struct payload_jump){ rec->ts, cpu, from, to };
	r->nr_payload_jumps[cpu]++;
}

/*
 * kvm-tsc-record's "kvm-tsc-snapshot vm=... vcpu=N tid=T tsc_offset=O" line
 * of one vCPU, with "tsc_scaling_ratio=R tsc_scaling_ratio_frac_bits=F"
 * where KVM has TSC scaling. Its first line counts: start's snapshot has the
 * values before the recording's TSC writes, stop's those after them.
 */
static void read_snapshot_vcpu(struct recording *r, const char *text)
{
	struct snapshot_vcpu snap = { .known = true };
	unsigned long long ratio;
	long long offset;
	unsigned int vcpu;
	int end = 0;

	if (sscanf(text, "kvm-tsc-snapshot vm=%*s pid=%*d vcpu=%u tid=%*d tsc_offset=%lld%n", &vcpu,
		   &offset, &end) != 2 || !end || vcpu >= MAX_VCPUS || r->vcpu[vcpu].snapshot.known)
		return;
	snap.offset = offset;
	if (sscanf(text + end, " tsc_scaling_ratio=%llu tsc_scaling_ratio_frac_bits=%u", &ratio,
		   &snap.frac) == 2) {
		snap.scaling = true;
		snap.ratio = ratio;
	}
	r->vcpu[vcpu].snapshot = snap;
}

/* One trace_marker line: the checks' markers, the payload's, kvm-tsc-record's snapshot. */
static void read_print(struct recording *r, const struct tep_record *rec, const char *text)
{
	unsigned long long a, b;
	unsigned int cpu, seq, scaling;
	char phase[8];

	if (sscanf(text, "ktt-marker %7s cpu=%u seq=%u", phase, &cpu, &seq) == 3)
		add_marker(r, rec, phase, cpu, seq);
	else if (sscanf(text, "ktt-n-marker cpu=%u seq=%u tsc=%llu", &cpu, &seq, &a) == 3)
		add_payload_marker(r, rec, cpu, seq, a);
	else if (sscanf(text, "ktt-n-jump cpu=%u from=%llu to=%llu", &cpu, &a, &b) == 3)
		add_payload_jump(r, rec, cpu, a, b);
	else if (sscanf(text, "kvm-tsc-snapshot tsc_khz=%llu", &a) == 1)
		r->tsc_khz = a;
	else if (sscanf(text, "kvm-tsc-snapshot end vms=%*u vcpus=%*u tsc_scaling=%u", &scaling) == 1)
		r->no_tsc_scaling |= !scaling;
	else
		read_snapshot_vcpu(r, text);
}

#define READER(sys, ev, fn, ...) \
	{ .system = sys, .name = ev, .fields = { __VA_ARGS__ }, .read = fn }

static const struct event_reader event_readers[] = {
	READER("kvm", "kvm_exit", read_exit, "exit_reason", "isa", "info1", "vcpu_id"),
	READER("kvm", "kvm_entry", read_entry, "vcpu_id", "common_pid"),
	READER("kvm", "kvm_write_tsc_offset", read_offset,
	       "vcpu_id", "previous_tsc_offset", "next_tsc_offset"),
	READER("kvm", "kvm_write_tsc_multiplier", read_multiplier,
	       "vcpu_id", "previous_tsc_multiplier", "next_tsc_multiplier", "frac_bits"),
	READER("kvm", "kvm_nested_tsc_offset", read_nested, "vcpu_id", "guest_mode",
	       "previous_tsc_offset", "next_tsc_offset", "tsc_multiplier", "common_pid"),
	READER("task", "task_newtask", read_new_task, "pid", "common_pid"),
	READER("msr", "write_msr", read_msr, "msr", "val", "failed"),
};

#define NR_READERS	((int)(sizeof(event_readers) / sizeof(event_readers[0])))

/* Each reader's event id and fields in this file; -1: the file has not the event. */
static int find_fields(struct pass *p, struct tep_handle *tep)
{
	struct tep_event *ev;
	int i, j;

	for (i = 0; i < p->nr_readers; i++) {
		struct event_reader *er = &p->readers[i];

		ev = tep_find_event_by_name(tep, er->system, er->name);
		er->id = ev ? ev->id : -1;
		for (j = 0; ev && j < MAX_FIELDS && er->fields[j]; j++) {
			er->field[j] = tep_find_any_field(ev, er->fields[j]);
			if (!er->field[j]) {
				snprintf(p->r->error, sizeof(p->r->error), "%s:%s has no field %s",
					 er->system, er->name, er->fields[j]);
				return -1;
			}
		}
	}
	ev = tep_find_event_by_name(tep, "ftrace", "print");
	p->print_id = ev ? ev->id : -1;
	p->print_buf = ev ? tep_find_field(ev, "buf") : NULL;
	if (ev && !p->print_buf) {
		snprintf(p->r->error, sizeof(p->r->error), "ftrace:print has no field buf");
		return -1;
	}
	return 0;
}

static int read_print_record(struct pass *p, const struct tep_record *rec)
{
	int offset = p->print_buf->offset;
	char text[256];
	int len;

	if (offset >= rec->size)
		return 0;
	len = strnlen((const char *)rec->data + offset, rec->size - offset);
	snprintf(text, sizeof(text), "%.*s", len, (const char *)rec->data + offset);
	read_print(p->r, rec, text);
	return 0;
}

/* @er's fields of @rec into @v, in the order @er names them. */
static int read_fields(struct recording *r, const struct event_reader *er,
		       const struct tep_record *rec, uint64_t *v)
{
	unsigned long long val;
	int j;

	for (j = 0; j < MAX_FIELDS && er->fields[j]; j++) {
		const struct tep_format_field *f = er->field[j];

		if (f->offset + f->size > rec->size ||
		    tep_read_number_field(er->field[j], rec->data, &val)) {
			snprintf(r->error, sizeof(r->error), "a %s record whose %s cannot be read",
				 er->name, er->fields[j]);
			return -1;
		}
		v[j] = val;
	}
	return 0;
}

static int read_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *data)
{
	struct pass *p = data;
	int type = tep_data_type(tracecmd_get_tep(h), rec), i;
	uint64_t v[MAX_FIELDS];

	(void)cpu;
	p->r->nr_events++;
	p->r->last_ts = rec->ts > p->r->last_ts ? rec->ts : p->r->last_ts;
	if (type == p->print_id)
		return read_print_record(p, rec);
	for (i = 0; i < p->nr_readers; i++) {
		const struct event_reader *er = &p->readers[i];

		if (er->id == type)
			return read_fields(p->r, er, rec, v) ? -1 : er->read(p->r, rec, v);
	}
	return 0;
}

static struct tracecmd_input *open_raw(struct recording *r)
{
	struct tracecmd_input *h;
	const char *clock;

	if (access(r->path, R_OK)) {
		snprintf(r->error, sizeof(r->error), "cannot read it: %s", strerror(errno));
		return NULL;
	}
	h = tracecmd_open_head(r->path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!h) {
		snprintf(r->error, sizeof(r->error),
			 "libtracecmd cannot open it: not a trace.dat, or cut short");
		return NULL;
	}
	tracecmd_set_flag(h, TRACECMD_FL_RAW_TS);
	if (tracecmd_init_data(h) < 0) {
		snprintf(r->error, sizeof(r->error), "libtracecmd cannot read its data (cut short?)");
		tracecmd_close(h);
		return NULL;
	}
	clock = tracecmd_get_trace_clock(h);
	if (!clock || (strcmp(clock, "x86-tsc") && strcmp(clock, "tsc2nsec"))) {
		snprintf(r->error, sizeof(r->error), "trace clock %s: its timestamps are not TSC counts",
			 clock ? clock : "unknown");
		tracecmd_close(h);
		return NULL;
	}
	return h;
}

/* The top buffer and every instance with CPU data, in @bufs; their number. */
static int collect_buffers(struct recording *r, struct tracecmd_input *top,
			   struct tracecmd_input **bufs)
{
	int i, n = 0, nr_instances = tracecmd_buffer_instances(top);

	if (tracecmd_cpus(top) > 0)
		bufs[n++] = top;
	for (i = 0; i < nr_instances && n < MAX_BUFFERS; i++) {
		struct tracecmd_input *h = tracecmd_buffer_instance_handle(top, i);

		if (!h) {
			snprintf(r->error, sizeof(r->error), "cannot read its buffer %s",
				 tracecmd_buffer_instance_name(top, i));
			return -1;
		}
		if (tracecmd_cpus(h) > 0)
			bufs[n++] = h;
		else
			tracecmd_close(h);
	}
	if (!n)
		snprintf(r->error, sizeof(r->error), "it holds no CPU data");
	return n ? n : -1;
}

static void read_buffers(struct recording *r, struct tracecmd_input *top)
{
	struct event_reader readers[NR_READERS];
	struct tracecmd_input *bufs[MAX_BUFFERS];
	struct pass p = { r, readers, NR_READERS, NULL, -1 };
	struct tep_handle *tep = tracecmd_get_tep(top);
	int i, n = collect_buffers(r, top, bufs);

	if (n < 0)
		return;
	memcpy(readers, event_readers, sizeof(readers));
	if (!find_fields(&p, tep)) {
		r->has_write_msr = tep_find_event_by_name(tep, "msr", "write_msr") != NULL;
		if (tracecmd_iterate_events_multi(bufs, n, read_record, &p) < 0 && !r->error[0])
			snprintf(r->error, sizeof(r->error), "libtracecmd failed reading its records");
	}
	for (i = 0; i < n; i++)
		if (bufs[i] != top)
			tracecmd_close(bufs[i]);
}

void recording_read(struct recording *r, const char *dir, const char *name)
{
	struct tracecmd_input *h;

	memset(r, 0, sizeof(*r));
	r->name = name;
	snprintf(r->path, sizeof(r->path), "%s/%s", dir, name);
	h = open_raw(r);
	if (!h)
		return;
	read_buffers(r, h);
	tracecmd_close(h);
	if (!r->error[0] && !r->nr_events)
		snprintf(r->error, sizeof(r->error), "it holds no events");
	if (r->tsc_khz)
		r->tsc_khz_from = "its kvm-tsc-snapshot tsc_khz";
}

int recording_shows_ns(const char *path, bool *ns)
{
	struct tracecmd_input *h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);

	if (!h)
		return -1;
	*ns = tracecmd_get_flags(h) & TRACECMD_FL_IN_USECS;
	tracecmd_close(h);
	return 0;
}

void recording_free(struct recording *r)
{
	int i;

	for (i = 0; i < MAX_VCPUS; i++) {
		free(r->vcpu[i].runs);
		free(r->vcpu[i].tsc);
	}
	free(r->markers);
	free(r->payload_markers);
	free(r->port_exits);
	free(r->new_tasks);
}

int recording_l2_vmm(const struct recording *r)
{
	size_t i;

	for (i = 0; r->l2_runner && i < r->nr_new_tasks; i++)
		if (r->new_tasks[i].pid == r->l2_runner)
			return r->new_tasks[i].parent;
	return 0;
}

size_t recording_port_exits(const struct recording *r, unsigned int vcpu, unsigned int port,
			    struct port_exit **out)
{
	size_t i, n = 0;

	*out = NULL;
	for (i = 0; i < r->nr_port_exits; i++) {
		if (r->port_exits[i].vcpu != vcpu || r->port_exits[i].port != port)
			continue;
		*out = grow(*out, n, sizeof(**out));
		(*out)[n++] = r->port_exits[i];
	}
	return n;
}

/* The first and the last record of @cpu in @h: their timestamps; false when fewer than two. */
static bool read_cpu_span(struct tracecmd_input *h, int cpu, uint64_t *first, uint64_t *last)
{
	struct tep_record *rec = tracecmd_read_cpu_first(h, cpu);
	int n = 0;

	for (; rec; rec = tracecmd_read_data(h, cpu), n++) {
		if (!n)
			*first = rec->ts;
		*last = rec->ts;
		tracecmd_free_record(rec);
	}
	return n > 1;
}

/*
 * trace-cmd's TSC2NSEC option, which libtracecmd applies unless told not
 * to, holds the kernel's cyc2ns: mult / 2^shift ns a tick, mult rounded
 * from 10^6 * 2^shift / tsc_khz. One CPU's records read raw and converted
 * give that slope; over 0.1 s or more of records the rounding of both is
 * below 0.1 kHz, so rounding 10^6 / slope gives tsc_khz back.
 */
void recording_read_tsc2nsec(struct recording *r)
{
	struct tracecmd_input *raw = open_raw(r), *ns;
	uint64_t raw0, raw1, ns0, ns1;
	int cpu;

	if (!raw)
		return;
	ns = tracecmd_open(r->path, TRACECMD_FL_LOAD_NO_PLUGINS);
	for (cpu = 0; ns && cpu < tracecmd_cpus(raw); cpu++) {
		if (!read_cpu_span(raw, cpu, &raw0, &raw1) || !read_cpu_span(ns, cpu, &ns0, &ns1))
			continue;
		if (ns1 - ns0 < 100000000 || raw1 - raw0 == ns1 - ns0)
			break;
		r->tsc_khz = ((unsigned __int128)(raw1 - raw0) * 2000000 + (ns1 - ns0)) /
			     (2 * (unsigned __int128)(ns1 - ns0));
		r->tsc_khz_from = "the slope of its TSC2NSEC conversion";
		break;
	}
	if (ns)
		tracecmd_close(ns);
	tracecmd_close(raw);
}
