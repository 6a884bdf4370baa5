// SPDX-License-Identifier: GPL-2.0
/*
 * perfetto.c: the Perfetto protobuf sink (-p): every event as Perfetto's
 * own ftrace data, so that trace_processor builds CPU scheduling tracks,
 * thread states, task names and event args from it, and on top what
 * Perfetto cannot infer: an "in guest" slice on each vCPU thread from each
 * kvm_entry to its kvm_exit (on a packet sequence per vCPU whose defaults
 * name its thread's track and an incremental clock, so that a slice's
 * packet holds a time delta and little else), each vCPU's TSC offset and multiplier as
 * integer counters, and each guest's name. Timestamps are host nanoseconds.
 *
 * The host is one machine and each guest trace a machine of its own
 * (TracePacket.machine_id): a guest's CPUs are its vCPUs. Events go into
 * FtraceEventBundles, one per machine and CPU, each written when it holds
 * BUNDLE_EVENTS events, so that memory holds a bundle per CPU, not the
 * trace. The messages are those of proto/perfetto_trace.proto. A packet
 * written once per track, task or sequence is packed by protobuf-c; what
 * is written for every event (its FtraceEvent, a slice's packet) is put
 * in the wire format here, as Perfetto's own protozero does, with the
 * field numbers of protobuf-c's descriptors or the tags below: protobuf-c
 * packs a message by walking its descriptor field by field, several
 * times the cost of the merge itself. An event is a typed message when
 * that message has a field of the same name and kind for each field of
 * the event's format, else a GenericFtraceEvent. x86's kvm_entry and kvm_exit are self-described
 * messages (Perfetto v50+): FtraceEvent fields 65536 and up, which each
 * bundle holding one describes (FtraceEventBundle.generic_event_descriptors).
 *
 * sched_switch and sched_waking go into the bundle's compact_sched, as
 * traced writes them, where that loses nothing: a switch whose prev_pid,
 * prev_comm and prev_prio are those the CPU's last switch put on it, a
 * waking run by that task. Any other (a CPU's first switch, one after a
 * gap or a rename) is a typed event.
 */
#include <stdlib.h>
#include <string.h>

#include "sinks/sinks.h"
#include "perfetto_trace.pb-c.h"

/* protobuf-c's optional scalar: its value and the flag that it is set. */
#define PB_SET(msg, field, value) ((msg).has_##field = true, (msg).field = (value))

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__TrackDescriptor TrackDescriptor;
typedef Perfetto__Protos__FtraceEvent FtraceEvent;

#define SEQ_INCREMENTAL_STATE_CLEARED	1
#define SEQ_NEEDS_INCREMENTAL_STATE	2
#define CLOCK_INCREMENTAL		64	/* the first sequence-scoped clock id */
/* Tags: field number << 3 | wire type (0 varint, 2 length-delimited). */
#define TRACE_PACKET_TAG		0x0a	/* Trace.packet = 1 */
#define PACKET_FTRACE_TAG		0x0a	/* TracePacket.ftrace_events = 1 */
#define PACKET_MACHINE_TAG		(98 << 3)	/* TracePacket.machine_id */
#define BUNDLE_CPU_TAG			0x08	/* FtraceEventBundle.cpu = 1 */
#define BUNDLE_EVENT_TAG		0x12	/* FtraceEventBundle.event = 2 */
#define BUNDLE_COMPACT_TAG		0x22	/* FtraceEventBundle.compact_sched = 4 */
#define BUNDLE_DESCRIPTOR_TAG		0x5a	/* .generic_event_descriptors = 11 */
#define COMPACT_INTERN_TAG		0x2a	/* CompactSched.intern_table = 5 */
#define COMPACT_COMMS			256	/* comms a bundle interns at most */
#define COMM_MAX			64	/* a comm compared, with its NUL */
#define VARINT_MAX			10
#define BUNDLE_EVENTS			1024	/* events a bundle holds at most */
#define PACKET_HEAD			(1 + VARINT_MAX)	/* a packet's tag and length */
#define FTRACE_TIMESTAMP_TAG		0x08	/* FtraceEvent.timestamp = 1 */
#define FTRACE_PID_TAG			0x10	/* FtraceEvent.pid = 2 */
/* GenericFtraceEvent { event_name = 1, field = 2 { name = 1, str/int/uint_value = 3/4/5 } } */
enum { GENERIC_NAME = 1, GENERIC_FIELD = 2, GENERIC_STR = 3, GENERIC_INT = 4, GENERIC_UINT = 5 };
/* A slice's packet: TracePacket and TrackEvent fields, a DebugAnnotation's. */
#define PACKET_TIMESTAMP_TAG		(8 << 3)
#define PACKET_SEQUENCE_TAG		(10 << 3)
#define PACKET_TRACK_EVENT_TAG		(11 << 3 | 2)
#define PACKET_FLAGS_TAG		(13 << 3)
#define TRACK_EVENT_ANNOTATION_TAG	(4 << 3 | 2)
#define TRACK_EVENT_TYPE_TAG		(9 << 3)
#define TRACK_EVENT_NAME_TAG		(10 << 3)
#define TRACK_EVENT_TRACK_TAG		(11 << 3)
#define ANNOTATION_NAME_TAG		(1 << 3)
#define ANNOTATION_UINT_TAG		(3 << 3)
#define SLICE_PACKET_MAX		64	/* a slice's TrackEvent: four numbers and an annotation */

/* Names interned on every sequence with these iids. */
enum { ANNOTATION_VCPU = 1, ANNOTATION_OFFSET, ANNOTATION_MULT };
enum { NAME_IN_GUEST = 1 };

/*
 * What a track stands for; its uuid is its key, hashed. A task is no
 * track, but named once per machine as a track is described once.
 */
enum track_kind {
	TRACK_TASK,
	TRACK_HOST_PROCESS,
	TRACK_HOST_THREAD,
	TRACK_GUEST,
	TRACK_TSC_OFFSET,
	TRACK_TSC_MULT,
};

/* A growing byte buffer. */
struct bytes {
	uint8_t *buf;
	size_t len;
	size_t alloc;
};

/*
 * CompactSched's packed arrays, in the order of their field numbers here:
 * each kind's time, then its four values (compact_add()).
 */
enum {
	CS_SWITCH_TS, CS_PREV_STATE, CS_NEXT_PID, CS_NEXT_PRIO, CS_NEXT_COMM,
	CS_WAKING_TS, CS_WAKING_PID, CS_WAKING_CPU, CS_WAKING_PRIO, CS_WAKING_COMM,
	CS_ARRAYS
};
static const uint8_t compact_field[CS_ARRAYS] = { 1, 2, 3, 4, 6, 7, 8, 9, 10, 11 };

/* The self-described messages: FtraceEvent field 65536 + index. */
struct described {
	const char *event;
	const char *field;		/* in our FtraceEvent */
	const char *group;
};
static const struct described described[] = {
	{ "kvm_entry", "kvm_entry_x86", "kvm" },
	{ "kvm_exit", "kvm_exit_x86", "kvm" },
};

/*
 * One CPU's events not written yet: packed FtraceEvents, the compact
 * arrays and their comms, the self-described messages used. The task on
 * the CPU as its last switch says, and the last time, hold across bundles.
 */
struct bundle {
	struct bytes events;
	unsigned int nr;
	uint64_t last_ts;		/* the bundle's last event's */
	uint64_t max_ts;		/* the CPU's latest event's */
	struct bytes compact[CS_ARRAYS];
	uint64_t switch_ts, waking_ts;	/* the arrays' last absolute times */
	bool has_switch, has_waking;
	char *comms[COMPACT_COMMS];
	unsigned int nr_comms;
	unsigned int described;		/* bit n: described[n] used */
	bool running_known;
	int running_pid, running_prio;
	char running_comm[COMM_MAX];
	/* The CPU's last task: named already, and its host thread's track. */
	int named_pid;
	int thread_pid;
	uint64_t thread_track;
};

/* A vCPU's slice sequence: the track its defaults name, its clock's last time. */
struct vcpu_seq {
	bool started;
	uint64_t track;
	uint64_t ts;
};

/* The fields compact_switch and compact_waking read, by index in a format. */
enum { SW_PREV_COMM, SW_NEXT_COMM, SW_PREV_PID, SW_PREV_PRIO, SW_PREV_STATE,
       SW_NEXT_PID, SW_NEXT_PRIO, SW_FIELDS };
enum { WK_COMM, WK_SUCCESS, WK_PID, WK_PRIO, WK_TARGET_CPU, WK_FIELDS };
#define PLAN_FIELDS	7	/* SW_FIELDS, the more */

enum plan_kind { PLAN_OTHER, PLAN_SWITCH, PLAN_WAKING };

/* The names of the fields above, by plan kind; NULL: none. */
static const char *const plan_field_names[][PLAN_FIELDS] = {
	[PLAN_SWITCH] = {
		[SW_PREV_COMM] = "prev_comm", [SW_NEXT_COMM] = "next_comm",
		[SW_PREV_PID] = "prev_pid", [SW_PREV_PRIO] = "prev_prio",
		[SW_PREV_STATE] = "prev_state", [SW_NEXT_PID] = "next_pid",
		[SW_NEXT_PRIO] = "next_prio",
	},
	[PLAN_WAKING] = {
		[WK_COMM] = "comm", [WK_SUCCESS] = "success", [WK_PID] = "pid",
		[WK_PRIO] = "prio", [WK_TARGET_CPU] = "target_cpu",
	},
};

/* A typed message's field as it is written: the event's field it takes, its tag and type. */
struct wire_field {
	unsigned int from;
	uint32_t tag;
	ProtobufCType type;
};

/*
 * How an event of one format becomes an FtraceEvent, looked up by name
 * once: its fields' names and kinds as the plan was made for them, the
 * typed message's field in FtraceEvent (NULL: a generic event) and the
 * fields as written there, in the order of their numbers (as protobuf-c
 * would pack them), and where compact_switch's or compact_waking's fields
 * are (-1: absent).
 */
struct event_plan {
	int event_id;
	bool made;
	unsigned int nr;
	const char **names;
	enum sink_field_kind *kinds;
	const ProtobufCFieldDescriptor *fd;
	struct wire_field *wire;
	int described;			/* index in described[], -1: none */
	enum plan_kind kind;
	int at[PLAN_FIELDS];
};
_Static_assert(SW_FIELDS <= PLAN_FIELDS && WK_FIELDS <= PLAN_FIELDS, "plan fields");

/* A machine: 0 the host, 1 + n guest n; a bundle per CPU. */
struct machine {
	struct bundle *cpus;
	int nr_cpus;
	bool started;			/* its packet sequence began */
	struct event_plan *plans;	/* sorted by event id */
	unsigned int nr_plans;
	size_t alloc_plans;
};

struct pf_sink {
	struct sink_out o;
	struct machine *machines;
	struct vcpu_seq *vcpu_seqs;	/* per desc->vcpus */
	struct key_set tracks;		/* the tracks described and tasks named so far */
	struct bytes msg;		/* an event's message, before its FtraceEvent */
	uint8_t *buf;
	size_t alloc;
	bool clock_said;
	struct event_plan scratch;	/* a plan for an event its format's does not fit */
	struct bytes descriptors[ARRAY_SIZE(described)];	/* each a whole bundle field */
};

/*
 * A machine's packet sequence: an odd multiple is a bijection of 32-bit
 * numbers, so machines get distinct ids, none 0 or 1 (the service's own)
 * for any machine count a run can have.
 */
static uint32_t sequence_id(unsigned int machine)
{
	return (machine + 1) * 0x9e3779b1u;
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		out[n++] = (v & 0x7f) | 0x80;
	out[n++] = v;
	return n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static uint8_t *bytes_room(struct bytes *b, size_t n)
{
	if (b->len + n > b->alloc) {
		b->alloc = (b->len + n) * 2;
		b->buf = xrealloc(b->buf, b->alloc, 1);
	}
	return b->buf + b->len;
}

static void bytes_varint(struct bytes *b, uint64_t v)
{
	b->len += put_varint(bytes_room(b, VARINT_MAX), v);
}

static void bytes_put(struct bytes *b, const void *data, size_t n)
{
	memcpy(bytes_room(b, n), data, n);
	b->len += n;
}

/* A length-delimited field: its tag, length and bytes. */
static void bytes_field(struct bytes *b, uint32_t field, const void *data, size_t n)
{
	bytes_varint(b, field << 3 | 2);
	bytes_varint(b, n);
	bytes_put(b, data, n);
}

static void bytes_varint_field(struct bytes *b, uint32_t field, uint64_t v)
{
	bytes_varint(b, field << 3);
	bytes_varint(b, v);
}

/* google.protobuf.FieldDescriptorProto.Type of a field of ours. */
static int descriptor_type(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
		return 3;
	case PROTOBUF_C_TYPE_UINT64:
		return 4;
	case PROTOBUF_C_TYPE_INT32:
		return 5;
	case PROTOBUF_C_TYPE_FIXED64:
		return 6;
	case PROTOBUF_C_TYPE_STRING:
		return 9;
	case PROTOBUF_C_TYPE_UINT32:
		return 13;
	default:
		abort();
	}
}

/*
 * A self-described message's GenericEventDescriptor, as the bundle field
 * that carries it: { field_id, event_descriptor: DescriptorProto { name:
 * the event, field { name, number, label optional, type }... }, group_name }.
 */
static void describe(struct bytes *out, const struct described *d)
{
	const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field_by_name(
		&perfetto__protos__ftrace_event__descriptor, d->field);
	const ProtobufCMessageDescriptor *md = fd->descriptor;
	struct bytes msg = { 0 }, field = { 0 }, gd = { 0 };
	unsigned int i;

	bytes_field(&msg, 1, d->event, strlen(d->event));
	for (i = 0; i < md->n_fields; i++) {
		field.len = 0;
		bytes_field(&field, 1, md->fields[i].name, strlen(md->fields[i].name));
		bytes_varint_field(&field, 3, md->fields[i].id);
		bytes_varint_field(&field, 4, 1);
		bytes_varint_field(&field, 5, descriptor_type(md->fields[i].type));
		bytes_field(&msg, 2, field.buf, field.len);
	}
	bytes_varint_field(&gd, 1, fd->id);
	bytes_field(&gd, 2, msg.buf, msg.len);
	bytes_field(&gd, 3, d->group, strlen(d->group));
	bytes_field(out, 11, gd.buf, gd.len);
	free(msg.buf);
	free(field.buf);
	free(gd.buf);
}

void *perfetto_sink_new(const struct sink_out *o)
{
	struct pf_sink *p = xcalloc(1, sizeof(*p));
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(described); i++)
		describe(&p->descriptors[i], &described[i]);

	p->o = *o;
	p->machines = xcalloc(o->desc->nr_guests + 1, sizeof(*p->machines));
	p->vcpu_seqs = xcalloc(o->desc->nr_vcpus + 1, sizeof(*p->vcpu_seqs));
	return p;
}

/*
 * A Trace is its packets, each a length-delimited field 1: so the file can
 * be written one packet at a time, with that tag and length put here.
 */
static void write_packet_head(struct pf_sink *p, size_t len)
{
	uint8_t head[1 + VARINT_MAX];

	head[0] = TRACE_PACKET_TAG;
	fwrite(head, 1, 1 + put_varint(head + 1, len), p->o.f);
}

/* Room in p->buf for a packet of @len bytes after PACKET_HEAD, its tag's and length's. */
static void packet_room(struct pf_sink *p, size_t len)
{
	if (PACKET_HEAD + len > p->alloc) {
		p->alloc = (PACKET_HEAD + len) * 2;
		p->buf = xrealloc(p->buf, p->alloc, 1);
	}
}

/* The packet of @len bytes packed at p->buf + PACKET_HEAD, with its tag and length before. */
static void emit_packet(struct pf_sink *p, size_t len)
{
	uint8_t *at = p->buf + PACKET_HEAD - 1 - varint_len(len);

	at[0] = TRACE_PACKET_TAG;
	put_varint(at + 1, len);
	fwrite(at, 1, p->buf + PACKET_HEAD + len - at, p->o.f);
}

static void write_packet(struct pf_sink *p, Packet *pkt)
{
	size_t len = protobuf_c_message_get_packed_size(&pkt->base);

	packet_room(p, len);
	protobuf_c_message_pack(&pkt->base, p->buf + PACKET_HEAD);
	emit_packet(p, len);
}

/*
 * A bundle's packet, put together here as the bundle's events are already
 * packed: TracePacket { ftrace_events { cpu, event... }, machine_id }.
 */
static void flush_bundle(struct pf_sink *p, unsigned int machine, int cpu)
{
	struct bundle *b = &p->machines[machine].cpus[cpu];
	uint8_t head[2 + 3 * VARINT_MAX], tail[2 + VARINT_MAX];
	struct bytes more = { 0 }, compact = { 0 };
	size_t bundle_len, n = 0, t = 0;
	unsigned int i;

	if (!b->nr)
		return;
	if (b->has_switch || b->has_waking) {
		for (i = 0; i < b->nr_comms; i++) {
			bytes_field(&compact, 5, b->comms[i], strlen(b->comms[i]));
			free(b->comms[i]);
		}
		for (i = 0; i < CS_ARRAYS; i++) {
			if (b->compact[i].len)
				bytes_field(&compact, compact_field[i], b->compact[i].buf,
					    b->compact[i].len);
			b->compact[i].len = 0;
		}
		bytes_field(&more, 4, compact.buf, compact.len);
		free(compact.buf);
	}
	for (i = 0; i < ARRAY_SIZE(described); i++)
		if (b->described & 1u << i)
			bytes_put(&more, p->descriptors[i].buf, p->descriptors[i].len);
	bundle_len = 1 + varint_len(cpu) + b->events.len + more.len;
	head[n++] = PACKET_FTRACE_TAG;
	n += put_varint(head + n, bundle_len);
	head[n++] = BUNDLE_CPU_TAG;
	n += put_varint(head + n, cpu);
	/* The host has no machine_id: Perfetto's default machine. */
	if (machine) {
		t += put_varint(tail, PACKET_MACHINE_TAG);
		t += put_varint(tail + t, machine);
	}
	write_packet_head(p, n + b->events.len + more.len + t);
	fwrite(head, 1, n, p->o.f);
	fwrite(b->events.buf, 1, b->events.len, p->o.f);
	fwrite(more.buf, 1, more.len, p->o.f);
	fwrite(tail, 1, t, p->o.f);
	free(more.buf);
	b->events.len = 0;
	b->nr = 0;
	b->nr_comms = 0;
	b->has_switch = b->has_waking = false;
	b->described = 0;
}

static struct bundle *cpu_bundle(struct pf_sink *p, unsigned int machine, int cpu)
{
	struct machine *m = &p->machines[machine];

	if (cpu >= m->nr_cpus) {
		m->cpus = xrealloc(m->cpus, cpu + 1, sizeof(*m->cpus));
		memset(m->cpus + m->nr_cpus, 0, (cpu + 1 - m->nr_cpus) * sizeof(*m->cpus));
		m->nr_cpus = cpu + 1;
	}
	return &m->cpus[cpu];
}

/* The names every sequence interns, in @in. */
static void intern_names(Perfetto__Protos__InternedData *in)
{
	static Perfetto__Protos__DebugAnnotationName vcpu = PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
	static Perfetto__Protos__DebugAnnotationName offset = PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
	static Perfetto__Protos__DebugAnnotationName mult = PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
	static Perfetto__Protos__EventName in_guest = PERFETTO__PROTOS__EVENT_NAME__INIT;
	static Perfetto__Protos__DebugAnnotationName *annotation_names[] = { &vcpu, &offset, &mult };
	static Perfetto__Protos__EventName *event_names[] = { &in_guest };

	PB_SET(in_guest, iid, NAME_IN_GUEST);
	in_guest.name = "in guest";
	PB_SET(vcpu, iid, ANNOTATION_VCPU);
	vcpu.name = "vcpu";
	PB_SET(offset, iid, ANNOTATION_OFFSET);
	offset.name = "tsc_offset";
	PB_SET(mult, iid, ANNOTATION_MULT);
	mult.name = "tsc_multiplier";
	in->n_event_names = ARRAY_SIZE(event_names);
	in->event_names = event_names;
	in->n_debug_annotation_names = ARRAY_SIZE(annotation_names);
	in->debug_annotation_names = annotation_names;
}

/* The first packet of a sequence clears its state and interns its names. */
static void start_packet(struct pf_sink *p, Packet *pkt, unsigned int machine,
			 Perfetto__Protos__InternedData *in)
{
	PB_SET(*pkt, trusted_packet_sequence_id, sequence_id(machine));
	PB_SET(*pkt, sequence_flags, SEQ_NEEDS_INCREMENTAL_STATE);
	if (machine)
		PB_SET(*pkt, machine_id, machine);
	if (p->machines[machine].started)
		return;
	p->machines[machine].started = true;
	pkt->sequence_flags |= SEQ_INCREMENTAL_STATE_CLEARED;
	intern_names(in);
	pkt->interned_data = in;
}

/* A new track's descriptor, on its machine's sequence. */
static void write_descriptor(struct pf_sink *p, unsigned int machine, TrackDescriptor *td)
{
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	start_packet(p, &pkt, machine, &in);
	pkt.track_descriptor = td;
	write_packet(p, &pkt);
}

static uint64_t track_key(enum track_kind kind, unsigned int machine, uint64_t id)
{
	return ((uint64_t)kind + 1) << 56 | (uint64_t)machine << 40 | id;
}

/*
 * The uuid of a track in @td, a hash of its key so that it is unique
 * beside other producers' tracks; true when the track is new, to be
 * described now.
 */
static bool new_track(struct pf_sink *p, uint64_t key, TrackDescriptor *td)
{
	PB_SET(*td, uuid, mix64(key));
	return key_set_add(&p->tracks, key);
}

static uint64_t host_process_track(struct pf_sink *p, int pid, const char *comm)
{
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;

	if (!new_track(p, track_key(TRACK_HOST_PROCESS, 0, (uint32_t)pid), &td))
		return td.uuid;
	PB_SET(pd, pid, pid);
	pd.process_name = (char *)comm;
	td.process = &pd;
	write_descriptor(p, 0, &td);
	return td.uuid;
}

/* The track of @e's host thread; @b, its CPU's bundle, remembers the last. */
static uint64_t host_thread_track(struct pf_sink *p, const struct sink_event *e,
				  struct bundle *b)
{
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;

	if (b->thread_track && b->thread_pid == e->pid)
		return b->thread_track;
	b->thread_pid = e->pid;
	if (!new_track(p, track_key(TRACK_HOST_THREAD, 0, (uint32_t)e->pid), &td))
		return b->thread_track = td.uuid;
	PB_SET(td, parent_uuid, host_process_track(p, e->tgid, e->process_comm));
	PB_SET(thd, pid, e->tgid);
	PB_SET(thd, tid, e->pid);
	thd.thread_name = (char *)e->comm;
	td.thread = &thd;
	write_descriptor(p, 0, &td);
	return b->thread_track = td.uuid;
}

/* A guest's name, "VM a (qemu pid 1000.1)", as a track on its machine. */
static void guest_track(struct pf_sink *p, unsigned int machine)
{
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;

	if (!new_track(p, track_key(TRACK_GUEST, machine, 0), &td))
		return;
	td.name = (char *)p->o.desc->guests[machine - 1].label;
	write_descriptor(p, machine, &td);
}

static void write_task_name(struct pf_sink *p, const struct sink_event *e);

/*
 * Names @e's task on its machine the first time it runs, with the name its
 * trace saved, as Perfetto names no thread from an event's pid alone. The
 * idle task and tasks the trace has no name for stay unnamed. @b, the
 * bundle of @e's CPU, remembers the last task looked up.
 */
static void name_task(struct pf_sink *p, const struct sink_event *e, struct bundle *b)
{
	if (!e->pid || e->pid == b->named_pid || !e->comm || !strcmp(e->comm, "<...>"))
		return;
	b->named_pid = e->pid;
	if (key_set_add(&p->tracks, track_key(TRACK_TASK, e->machine, (uint32_t)e->pid)))
		write_task_name(p, e);
}

/* The packet that names @e's task: apart, so that an event whose task is named pays nothing for it. */
static void write_task_name(struct pf_sink *p, const struct sink_event *e)
{
	Perfetto__Protos__ProcessTree__Thread th = PERFETTO__PROTOS__PROCESS_TREE__THREAD__INIT;
	Perfetto__Protos__ProcessTree__Thread *threads[] = { &th };
	Perfetto__Protos__ProcessTree tree = PERFETTO__PROTOS__PROCESS_TREE__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	PB_SET(th, tid, e->pid);
	th.name = (char *)e->comm;
	/* Only the host's tasks have a known process. */
	if (!e->machine)
		PB_SET(th, tgid, e->tgid);
	tree.n_threads = 1;
	tree.threads = threads;
	pkt.process_tree = &tree;
	PB_SET(pkt, timestamp, (uint64_t)tsc_to_ns(e->host_ts, p->o.tsc_khz));
	if (e->machine)
		PB_SET(pkt, machine_id, e->machine);
	write_packet(p, &pkt);
}

/*
 * The clock of the trace's times, said once, at the first event. Perfetto reads ftrace and
 * track event times as BOOTTIME unless told otherwise; the times here are
 * the host's TSC in ns, which is what BOOTTIME stands for in this trace:
 * there is no other clock to tie them to (the host trace's clock is
 * x86-tsc), so the snapshot names one clock, as the primary one.
 */
static void say_clock(struct pf_sink *p, uint64_t ts)
{
	Perfetto__Protos__ClockSnapshot__Clock boottime = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[] = { &boottime };
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	p->clock_said = true;
	PB_SET(boottime, clock_id, PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME);
	PB_SET(boottime, timestamp, ts);
	cs.n_clocks = 1;
	cs.clocks = clocks;
	PB_SET(cs, primary_trace_clock, PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME);
	pkt.clock_snapshot = &cs;
	PB_SET(pkt, timestamp, ts);
	PB_SET(pkt, trusted_packet_sequence_id, sequence_id(0));
	write_packet(p, &pkt);
}

/*
 * A machine's SystemInfo, which trace_processor's machine table shows: its
 * name (the host's node name, a guest's label), its CPUs and the kernel
 * that trace-cmd's UNAME option names ("sysname nodename release machine").
 */
static void write_system_info(struct pf_sink *p, unsigned int machine, const char *uname,
			      int nr_cpus, const char *name)
{
	Perfetto__Protos__Utsname uts = PERFETTO__PROTOS__UTSNAME__INIT;
	Perfetto__Protos__SystemInfo si = PERFETTO__PROTOS__SYSTEM_INFO__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	char node[65], sysname[65], release[65], arch[65];

	if (uname && sscanf(uname, "%64s %64s %64s %64s", sysname, node, release, arch) == 4) {
		uts.sysname = sysname;
		uts.release = release;
		uts.machine = arch;
		si.utsname = &uts;
		/* A VM's kernel often has no node name: "(none)". */
		if (!name && strcmp(node, "(none)"))
			name = node;
	}
	si.machine_name = (char *)(name ? name : "host");
	if (nr_cpus)
		PB_SET(si, num_cpus, nr_cpus);
	pkt.system_info = &si;
	PB_SET(pkt, trusted_packet_sequence_id, sequence_id(machine));
	if (machine)
		PB_SET(pkt, machine_id, machine);
	write_packet(p, &pkt);
}

/* Each machine's SystemInfo, before any of their events. */
static void describe_machines(struct pf_sink *p)
{
	const struct sink_desc *d = p->o.desc;
	int g;

	write_system_info(p, 0, d->host_uname, d->host_cpus, NULL);
	for (g = 0; g < d->nr_guests; g++)
		write_system_info(p, 1 + g, d->guests[g].uname, d->guests[g].nr_cpus,
				  d->guests[g].label);
}

/* A TrackEvent on a track at the event's time. */
static void write_event(struct pf_sink *p, const struct sink_event *e, uint64_t track,
			TrackEvent *te)
{
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	start_packet(p, &pkt, e->machine, &in);
	PB_SET(pkt, timestamp, (uint64_t)tsc_to_ns(e->host_ts, p->o.tsc_khz));
	PB_SET(*te, track_uuid, track);
	pkt.track_event = te;
	write_packet(p, &pkt);
}

/*
 * A ClockSnapshot on sequence @seq: its incremental clock at @ts, BOOTTIME's
 * time then. The next packet's time is a delta from @ts.
 */
static void snapshot_incremental(struct pf_sink *p, uint32_t seq, uint64_t ts)
{
	Perfetto__Protos__ClockSnapshot__Clock boottime = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock delta = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[] = { &boottime, &delta };
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	PB_SET(boottime, clock_id, PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_BOOTTIME);
	PB_SET(boottime, timestamp, ts);
	PB_SET(delta, clock_id, CLOCK_INCREMENTAL);
	PB_SET(delta, timestamp, ts);
	PB_SET(delta, is_incremental, true);
	cs.n_clocks = 2;
	cs.clocks = clocks;
	pkt.clock_snapshot = &cs;
	/* No time of its own: the sequence's defaults would make it a delta. */
	PB_SET(pkt, trusted_packet_sequence_id, seq);
	write_packet(p, &pkt);
}

/*
 * A vCPU's slice sequence begins: its state cleared, names interned, its
 * defaults (the incremental clock, the thread's track), the clock's start.
 */
static void start_vcpu_sequence(struct pf_sink *p, struct vcpu_seq *vs, uint32_t seq,
				uint64_t ts, uint64_t track)
{
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	Perfetto__Protos__TracePacketDefaults defaults = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;

	PB_SET(pkt, trusted_packet_sequence_id, seq);
	PB_SET(pkt, sequence_flags, SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE);
	intern_names(&in);
	pkt.interned_data = &in;
	PB_SET(ted, track_uuid, track);
	PB_SET(defaults, timestamp_clock_id, CLOCK_INCREMENTAL);
	defaults.track_event_defaults = &ted;
	pkt.trace_packet_defaults = &defaults;
	write_packet(p, &pkt);
	snapshot_incremental(p, seq, ts);
	vs->started = true;
	vs->track = track;
	vs->ts = ts;
}

/* A varint field of tag @tag at @at; returns its end. */
static uint8_t *put_varint_field(uint8_t *at, uint32_t tag, uint64_t v)
{
	at += put_varint(at, tag);
	return at + put_varint(at, v);
}

/*
 * A slice's TrackEvent at @at: a begin names the slice and its vCPU, an
 * end nothing; the track only when it is not the sequence's default.
 * Returns its end.
 */
static uint8_t *put_slice(uint8_t *at, const struct sink_event *e, bool begin,
			  const uint64_t *track)
{
	uint8_t annotation[2 * (1 + VARINT_MAX)];
	size_t n;

	if (begin) {
		n = put_varint_field(annotation, ANNOTATION_NAME_TAG, ANNOTATION_VCPU) - annotation;
		n = put_varint_field(annotation + n, ANNOTATION_UINT_TAG, e->vcpu->id) - annotation;
		at = put_varint_field(at, TRACK_EVENT_ANNOTATION_TAG, n);
		at = (uint8_t *)memcpy(at, annotation, n) + n;
	}
	at = put_varint_field(at, TRACK_EVENT_TYPE_TAG,
			      begin ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN :
				      PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END);
	if (begin)
		at = put_varint_field(at, TRACK_EVENT_NAME_TAG, NAME_IN_GUEST);
	if (track)
		at = put_varint_field(at, TRACK_EVENT_TRACK_TAG, *track);
	return at;
}

/*
 * A slice on its vCPU's sequence: its time a delta, its track the
 * default unless the vCPU's thread changed. A time before the sequence's
 * last (never in host-time order) restarts its clock.
 */
static void write_slice(struct pf_sink *p, const struct sink_event *e, uint64_t ts,
			uint64_t track, bool begin)
{
	size_t idx = e->vcpu - p->o.desc->vcpus;
	struct vcpu_seq *vs = &p->vcpu_seqs[idx];
	uint32_t seq = sequence_id(p->o.desc->nr_guests + 1 + idx);
	uint8_t slice[SLICE_PACKET_MAX], *at, *end;

	if (!vs->started)
		start_vcpu_sequence(p, vs, seq, ts, track);
	else if (ts < vs->ts)
		snapshot_incremental(p, seq, vs->ts = ts);
	end = put_slice(slice, e, begin, track != vs->track ? &track : NULL);
	packet_room(p, 2 * SLICE_PACKET_MAX);	/* the slice and three numbers */
	at = p->buf + PACKET_HEAD;
	at = put_varint_field(at, PACKET_TIMESTAMP_TAG, ts - vs->ts);
	at = put_varint_field(at, PACKET_SEQUENCE_TAG, seq);
	at = put_varint_field(at, PACKET_TRACK_EVENT_TAG, end - slice);
	at = (uint8_t *)memcpy(at, slice, end - slice) + (end - slice);
	at = put_varint_field(at, PACKET_FLAGS_TAG, SEQ_NEEDS_INCREMENTAL_STATE);
	vs->ts = ts;
	emit_packet(p, at - (p->buf + PACKET_HEAD));
}

/* A counter track of a vCPU, under its VMM process: "vCPU n TSC offset". */
static uint64_t counter_track(struct pf_sink *p, const struct sink_event *e,
			      enum track_kind kind)
{
	const struct sink_vcpu *v = e->vcpu;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	char name[64];

	if (!new_track(p, track_key(kind, 0, v->key), &td))
		return td.uuid;
	snprintf(name, sizeof(name), "vCPU %u %s%s", v->id,
		 kind == TRACK_TSC_OFFSET ? "TSC offset" : "TSC multiplier",
		 v->later_vm ? " (a later VM)" : "");
	PB_SET(td, parent_uuid, host_process_track(p, v->process, v->process_comm));
	td.name = name;
	td.counter = &cd;
	write_descriptor(p, 0, &td);
	return td.uuid;
}

/*
 * An int64 counter: an offset shows as its two's complement. A counter's
 * value becomes a double in trace_processor, exact only below 2^53: the
 * event's argument keeps the value exact, the offset signed and the
 * multiplier unsigned.
 */
static void write_counter(struct pf_sink *p, const struct sink_event *e,
			  enum track_kind kind, uint64_t value)
{
	Perfetto__Protos__DebugAnnotation exact = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	Perfetto__Protos__DebugAnnotation *args[] = { &exact };
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	uint64_t track = counter_track(p, e, kind);

	PB_SET(te, type, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER);
	PB_SET(te, counter_value, (int64_t)value);
	if (kind == TRACK_TSC_OFFSET) {
		PB_SET(exact, name_iid, ANNOTATION_OFFSET);
		PB_SET(exact, int_value, (int64_t)value);
	} else {
		PB_SET(exact, name_iid, ANNOTATION_MULT);
		PB_SET(exact, uint_value, value);
	}
	te.n_debug_annotations = 1;
	te.debug_annotations = args;
	write_event(p, e, track, &te);
}

/* A number field @w after its tag, at @at, as protobuf encodes it; returns its end. */
static uint8_t *put_number(uint8_t *at, const struct wire_field *w, uint64_t v)
{
	unsigned int i;

	switch (w->type) {
	case PROTOBUF_C_TYPE_FIXED64:
		at += put_varint(at, w->tag);
		for (i = 0; i < 8; i++)
			*at++ = v >> 8 * i;
		return at;
	case PROTOBUF_C_TYPE_INT32:	/* a negative one sign-extended to 64 bits */
		v = (int64_t)(int32_t)v;
		break;
	case PROTOBUF_C_TYPE_UINT32:
		v = (uint32_t)v;
		break;
	default:
		break;
	}
	return put_varint_field(at, w->tag, v);
}

/* protobuf's wire type of a field of ours: 0 varint, 1 fixed 64 bits, 2 length-delimited. */
static uint32_t wire_type(ProtobufCType t)
{
	return t == PROTOBUF_C_TYPE_STRING ? 2 : t == PROTOBUF_C_TYPE_FIXED64 ? 1 : 0;
}

/*
 * @f's fields as FtraceEvent field @fd's message has them, into @wire in
 * the order of @f; false when @fd is no event message or a field has no
 * place of its kind there.
 */
static bool resolve_typed(const ProtobufCFieldDescriptor *fd, const struct sink_field *f,
			  unsigned int nr, struct wire_field *wire)
{
	const ProtobufCFieldDescriptor *in;
	unsigned int i;

	if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE || fd->id == PERFETTO__PROTOS__FTRACE_EVENT__EVENT_GENERIC ||
	    !(fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
		return false;
	for (i = 0; i < nr; i++) {
		in = protobuf_c_message_descriptor_get_field_by_name(fd->descriptor, f[i].name);
		if (!in || (in->type == PROTOBUF_C_TYPE_STRING) != (f[i].kind == SINK_FIELD_STR))
			return false;
		switch (in->type) {
		case PROTOBUF_C_TYPE_STRING:
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_INT64:
		case PROTOBUF_C_TYPE_UINT64:
		case PROTOBUF_C_TYPE_FIXED64:
			break;
		default:
			return false;
		}
		wire[i] = (struct wire_field){ i, in->id << 3 | wire_type(in->type), in->type };
	}
	return true;
}

/* The index of the field @name in @f, -1 when it has none or @name is NULL. */
static int field_index(const struct sink_field *f, unsigned int nr, const char *name)
{
	unsigned int i;

	for (i = 0; name && i < nr; i++)
		if (!strcmp(f[i].name, name))
			return i;
	return -1;
}

/* @plan's fields as written: by their numbers in its typed message. */
static void sort_wire(struct event_plan *plan)
{
	struct wire_field w;
	unsigned int i, j;

	for (i = 1; i < plan->nr; i++) {
		w = plan->wire[i];
		for (j = i; j > 0 && plan->wire[j - 1].tag >> 3 > w.tag >> 3; j--)
			plan->wire[j] = plan->wire[j - 1];
		plan->wire[j] = w;
	}
}

/*
 * @plan for @e's format with fields @f: a typed message, Perfetto's own or
 * a self-described one, when one fits, else a generic event.
 */
static void make_plan(struct event_plan *plan, const struct sink_event *e,
		      const struct sink_field *f, unsigned int nr)
{
	const ProtobufCMessageDescriptor *d = &perfetto__protos__ftrace_event__descriptor;
	unsigned int i;

	plan->made = true;
	plan->nr = nr;
	plan->names = xrealloc(plan->names, nr + 1, sizeof(*plan->names));
	plan->kinds = xrealloc(plan->kinds, nr + 1, sizeof(*plan->kinds));
	plan->wire = xrealloc(plan->wire, nr + 1, sizeof(*plan->wire));
	for (i = 0; i < nr; i++) {
		plan->names[i] = f[i].name;
		plan->kinds[i] = f[i].kind;
	}
	plan->names[nr] = e->name;
	plan->kind = PLAN_OTHER;
	if (!strcmp(e->name, "sched_switch"))
		plan->kind = PLAN_SWITCH;
	else if (!strcmp(e->name, "sched_waking"))
		plan->kind = PLAN_WAKING;
	for (i = 0; plan->kind != PLAN_OTHER && i < PLAN_FIELDS; i++)
		plan->at[i] = field_index(f, nr, plan_field_names[plan->kind][i]);
	plan->described = -1;
	plan->fd = protobuf_c_message_descriptor_get_field_by_name(d, e->name);
	if (!resolve_typed(plan->fd, f, nr, plan->wire)) {
		plan->fd = NULL;
		for (i = 0; i < ARRAY_SIZE(described); i++) {
			if (strcmp(e->name, described[i].event))
				continue;
			plan->fd = protobuf_c_message_descriptor_get_field_by_name(d, described[i].field);
			if (resolve_typed(plan->fd, f, nr, plan->wire))
				plan->described = i;
			else
				plan->fd = NULL;
			break;
		}
	}
	if (plan->fd)
		sort_wire(plan);
}

/* Whether @plan was made for @e's name and fields @f. */
static bool plan_fits(const struct event_plan *plan, const struct sink_event *e,
		      const struct sink_field *f, unsigned int nr)
{
	unsigned int i;

	if (!plan->made || plan->nr != nr || plan->names[nr] != e->name)
		return false;
	for (i = 0; i < nr; i++)
		if (plan->names[i] != f[i].name || plan->kinds[i] != f[i].kind)
			return false;
	return true;
}

/*
 * The plan slot of event @id in @m, added empty if it has none: the
 * table holds the events there are, as an id is the file's to choose.
 */
static struct event_plan *plan_slot(struct machine *m, int id)
{
	unsigned int lo = 0, hi = m->nr_plans;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (m->plans[mid].event_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nr_plans && m->plans[lo].event_id == id)
		return &m->plans[lo];
	m->plans = xinsert(m->plans, m->nr_plans, &m->alloc_plans, lo, sizeof(*m->plans));
	m->nr_plans++;
	memset(&m->plans[lo], 0, sizeof(m->plans[lo]));
	m->plans[lo].event_id = id;
	return &m->plans[lo];
}

/* The plan of @e's format, made the first time; a scratch one when it does not fit. */
static const struct event_plan *event_plan(struct pf_sink *p, const struct sink_event *e,
					   const struct sink_field *f, unsigned int nr)
{
	struct machine *m = &p->machines[e->machine];
	struct event_plan *plan = &p->scratch;

	if (e->event_id >= 0) {
		plan = plan_slot(m, e->event_id);
		if (plan_fits(plan, e, f, nr))
			return plan;
		if (plan->made)
			plan = &p->scratch;
	}
	make_plan(plan, e, f, nr);
	return plan;
}

static void free_plan(struct event_plan *plan)
{
	free(plan->names);
	free(plan->kinds);
	free(plan->wire);
}

static void free_plans(struct machine *m)
{
	unsigned int i;

	for (i = 0; i < m->nr_plans; i++)
		free_plan(&m->plans[i]);
	free(m->plans);
}

/* A number field's value as 64 bits: an INT's two's complement. */
static uint64_t field_bits(const struct sink_field *f)
{
	return f->kind == SINK_FIELD_INT ? (uint64_t)f->i : f->u;
}

/* @e as the typed message of @plan, in @m. */
static void put_typed(struct bytes *m, const struct event_plan *plan, const struct sink_field *f)
{
	const struct wire_field *w = plan->wire, *end = w + plan->nr;
	uint8_t *at;

	for (; w < end; w++) {
		if (w->type == PROTOBUF_C_TYPE_STRING) {
			bytes_field(m, w->tag >> 3, f[w->from].str, strlen(f[w->from].str));
		} else {
			at = bytes_room(m, 2 * VARINT_MAX);
			m->len += put_number(at, w, field_bits(&f[w->from])) - at;
		}
	}
}

static const struct sink_field *plan_field(const struct event_plan *plan,
					   const struct sink_field *f, int which)
{
	return plan->at[which] < 0 ? NULL : &f[plan->at[which]];
}

/* A number field's value; false when @f is absent or a string. */
static bool number(const struct sink_field *f, int64_t *v)
{
	if (!f || f->kind == SINK_FIELD_STR)
		return false;
	*v = field_bits(f);
	return true;
}

static bool comm_field(const struct sink_field *f)
{
	return f && f->kind == SINK_FIELD_STR && strlen(f->str) < COMM_MAX;
}

/* @comm's index in @b's intern table, added if new; -1: the table is full. */
static int intern_comm(struct bundle *b, const char *comm)
{
	unsigned int i;

	for (i = 0; i < b->nr_comms; i++)
		if (!strcmp(b->comms[i], comm))
			return i;
	if (b->nr_comms == COMPACT_COMMS)
		return -1;
	b->comms[b->nr_comms] = strcpy(xrealloc(NULL, strlen(comm) + 1, 1), comm);
	return b->nr_comms++;
}

/*
 * One compact event: its time into array @first as a delta from the last
 * (@last, @has: that array's), its four values into the arrays after it.
 */
static void compact_add(struct bundle *b, int first, uint64_t ts, uint64_t *last, bool *has,
			const int64_t values[4])
{
	int i;

	bytes_varint(&b->compact[first], *has ? ts - *last : ts);
	for (i = 0; i < 4; i++)
		bytes_varint(&b->compact[first + 1 + i], values[i]);
	*last = ts;
	*has = true;
}

/*
 * A sched_switch into the compact arrays when it loses nothing there: its
 * format's seven fields, its prev_* those of the task on the CPU, its time
 * after every earlier event of the CPU (trace_processor puts a bundle's
 * compact events before its others at one time). Records the task it puts
 * on the CPU either way; a switch back in time leaves that unknown.
 */
static bool compact_switch(struct bundle *b, const struct sink_event *e,
			   const struct event_plan *plan, const struct sink_field *f,
			   unsigned int nr, uint64_t ts)
{
	const struct sink_field *prev_comm = plan_field(plan, f, SW_PREV_COMM);
	const struct sink_field *next_comm = plan_field(plan, f, SW_NEXT_COMM);
	int64_t prev_pid, prev_prio, prev_state, next_pid, next_prio;
	bool fits;
	int comm;

	if (nr != 7 || !comm_field(prev_comm) || !comm_field(next_comm) ||
	    !number(plan_field(plan, f, SW_PREV_PID), &prev_pid) ||
	    !number(plan_field(plan, f, SW_PREV_PRIO), &prev_prio) ||
	    !number(plan_field(plan, f, SW_PREV_STATE), &prev_state) ||
	    !number(plan_field(plan, f, SW_NEXT_PID), &next_pid) ||
	    !number(plan_field(plan, f, SW_NEXT_PRIO), &next_prio)) {
		b->running_known = false;
		return false;
	}
	fits = b->running_known && ts > b->max_ts && prev_pid == b->running_pid &&
	       e->pid == prev_pid && prev_prio == b->running_prio &&
	       !strcmp(prev_comm->str, b->running_comm);
	comm = fits ? intern_comm(b, next_comm->str) : -1;
	if (ts < b->max_ts) {
		b->running_known = false;
	} else {
		b->running_known = true;
		b->running_pid = next_pid;
		b->running_prio = next_prio;
		strcpy(b->running_comm, next_comm->str);
	}
	if (comm < 0)
		return false;
	compact_add(b, CS_SWITCH_TS, ts, &b->switch_ts, &b->has_switch,
		    (const int64_t[]){ prev_state, next_pid, next_prio, comm });
	return true;
}

/*
 * A sched_waking into the compact arrays when it loses nothing there: run
 * by the task on the CPU, after every earlier event of the CPU, its fields
 * comm, pid, prio and target_cpu (and success, when 1).
 */
static bool compact_waking(struct bundle *b, const struct sink_event *e,
			   const struct event_plan *plan, const struct sink_field *f,
			   unsigned int nr, uint64_t ts)
{
	const struct sink_field *comm_f = plan_field(plan, f, WK_COMM);
	const struct sink_field *success = plan_field(plan, f, WK_SUCCESS);
	int64_t pid, prio, target_cpu, ok = 1;
	int comm;

	if (nr != 4u + !!success || !comm_field(comm_f) ||
	    !number(plan_field(plan, f, WK_PID), &pid) ||
	    !number(plan_field(plan, f, WK_PRIO), &prio) ||
	    !number(plan_field(plan, f, WK_TARGET_CPU), &target_cpu) ||
	    (success && (!number(success, &ok) || ok != 1)) ||
	    !b->running_known || ts <= b->max_ts || e->pid != b->running_pid)
		return false;
	comm = intern_comm(b, comm_f->str);
	if (comm < 0)
		return false;
	compact_add(b, CS_WAKING_TS, ts, &b->waking_ts, &b->has_waking,
		    (const int64_t[]){ pid, target_cpu, prio, comm });
	return true;
}

/* @e as a GenericFtraceEvent, in @m: its name and every field's name and value. */
static void put_generic(struct bytes *m, const struct sink_event *e, const struct sink_field *f,
			unsigned int nr)
{
	size_t name_len, value_len;
	unsigned int i;

	bytes_field(m, GENERIC_NAME, e->name, strlen(e->name));
	for (i = 0; i < nr; i++) {
		name_len = strlen(f[i].name);
		value_len = f[i].kind == SINK_FIELD_STR ? strlen(f[i].str) : 0;
		value_len = f[i].kind == SINK_FIELD_STR ? varint_len(value_len) + value_len :
							  varint_len(field_bits(&f[i]));
		bytes_varint(m, GENERIC_FIELD << 3 | 2);
		bytes_varint(m, 1 + varint_len(name_len) + name_len + 1 + value_len);
		bytes_field(m, GENERIC_NAME, f[i].name, name_len);
		if (f[i].kind == SINK_FIELD_STR)
			bytes_field(m, GENERIC_STR, f[i].str, strlen(f[i].str));
		else
			bytes_varint_field(m, f[i].kind == SINK_FIELD_INT ? GENERIC_INT : GENERIC_UINT,
					   field_bits(&f[i]));
	}
}

/*
 * @e into its CPU's bundle @b, at @ts. A bundle's times must not go back,
 * as Perfetto sorts a CPU's events by bundle: an event earlier than the
 * last (a guest event mapped before a host one) starts a new bundle.
 */
static void ftrace_event(struct pf_sink *p, const struct sink_event *e, struct bundle *b,
			 uint64_t ts)
{
	const struct event_plan *plan;
	const struct sink_field *f;
	unsigned int nr, tag;
	size_t len;
	uint8_t *at;

	if (b->nr && ts < b->last_ts)
		flush_bundle(p, e->machine, e->cpu);
	f = sink_event_fields(e, &nr);
	plan = event_plan(p, e, f, nr);
	if (plan->kind == PLAN_SWITCH && compact_switch(b, e, plan, f, nr, ts))
		goto added;
	if (plan->kind == PLAN_WAKING && compact_waking(b, e, plan, f, nr, ts))
		goto added;
	p->msg.len = 0;
	if (plan->fd) {
		put_typed(&p->msg, plan, f);
		tag = plan->fd->id << 3 | 2;
		if (plan->described >= 0)
			b->described |= 1u << plan->described;
	} else {
		put_generic(&p->msg, e, f, nr);
		tag = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_GENERIC << 3 | 2;
	}
	len = 1 + varint_len(ts) + 1 + varint_len((uint32_t)e->pid) + varint_len(tag) +
	      varint_len(p->msg.len) + p->msg.len;
	at = bytes_room(&b->events, 1 + VARINT_MAX + len);
	at = put_varint_field(at, BUNDLE_EVENT_TAG, len);
	at = put_varint_field(at, FTRACE_TIMESTAMP_TAG, ts);
	at = put_varint_field(at, FTRACE_PID_TAG, (uint32_t)e->pid);
	at = put_varint_field(at, tag, p->msg.len);
	/*
	 * A damaged record has no fields: its message may be empty, with no
	 * buffer yet when it is the first event (memcpy() from NULL).
	 */
	if (p->msg.len)
		at = (uint8_t *)memcpy(at, p->msg.buf, p->msg.len) + p->msg.len;
	b->events.len = at - b->events.buf;
added:
	b->last_ts = ts;
	if (ts > b->max_ts)
		b->max_ts = ts;
	if (++b->nr == BUNDLE_EVENTS)
		flush_bundle(p, e->machine, e->cpu);
}

/* The "in guest" slices and the TSC values an event puts in force. */
static void host_event(struct pf_sink *p, const struct sink_event *e, struct bundle *b,
		       uint64_t ts)
{
	uint64_t track;

	if (e->kvm == SINK_KVM_NONE && !e->sets_offset && !e->sets_mult)
		return;
	track = host_thread_track(p, e, b);
	if (e->kvm == SINK_KVM_ENTRY)
		write_slice(p, e, ts, track, true);
	/* A trace that begins inside a run has no begin for its first exit. */
	if (e->kvm == SINK_KVM_EXIT && e->was_running)
		write_slice(p, e, ts, track, false);
	if (e->sets_offset)
		write_counter(p, e, TRACK_TSC_OFFSET, e->offset);
	if (e->sets_mult)
		write_counter(p, e, TRACK_TSC_MULT, e->mult);
}

static void perfetto_event(void *priv, const struct sink_event *e)
{
	struct pf_sink *p = priv;
	uint64_t ts = tsc_to_ns(e->host_ts, p->o.tsc_khz);
	struct bundle *b = cpu_bundle(p, e->machine, e->cpu);

	if (!p->clock_said) {
		say_clock(p, ts);
		describe_machines(p);
	}
	if (e->machine)
		guest_track(p, e->machine);
	else
		host_event(p, e, b, ts);
	name_task(p, e, b);
	ftrace_event(p, e, b, ts);
}

static void perfetto_finish(void *priv)
{
	struct pf_sink *p = priv;
	int i, machine;

	for (machine = 0; machine <= p->o.desc->nr_guests; machine++) {
		struct machine *m = &p->machines[machine];

		for (i = 0; i < m->nr_cpus; i++) {
			struct bundle *b = &m->cpus[i];
			int a;

			flush_bundle(p, machine, i);
			free(b->events.buf);
			for (a = 0; a < CS_ARRAYS; a++)
				free(b->compact[a].buf);
		}
		free(m->cpus);
		free_plans(m);
	}
	free(p->machines);
	free(p->vcpu_seqs);
	key_set_free(&p->tracks);
	free(p->msg.buf);
	free_plan(&p->scratch);
	for (i = 0; i < (int)ARRAY_SIZE(described); i++)
		free(p->descriptors[i].buf);
	free(p->buf);
	free(p);
}

const struct sink_ops perfetto_sink_ops = {
	.event = perfetto_event,
	.finish = perfetto_finish,
	.tasks = true,
};
