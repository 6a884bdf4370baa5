// SPDX-License-Identifier: GPL-2.0
/*
 * perfetto.c: the Perfetto protobuf sink (-p): the host as one machine and
 * each guest trace as a machine of its own (TracePacket.machine_id), a
 * track per vCPU with the guest's events, the host's threads with an "in
 * guest" slice from each kvm_entry to its kvm_exit, and counter tracks of
 * each vCPU's TSC offset and multiplier. Timestamps are host nanoseconds.
 *
 * The messages come from proto/perfetto_trace.proto through protobuf-c.
 * Names and guest event texts are interned, one packet sequence per
 * machine, and only guest events carry their text, so that a packet stays
 * near 30 bytes; host events are named instants (their text is what
 * --sync-out gives trace-cmd and KernelShark). Each packet is written as it
 * is made: memory holds the tracks and fixed tables of names and texts,
 * not the events.
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

#define SEQ_INCREMENTAL_STATE_CLEARED	1
#define SEQ_NEEDS_INCREMENTAL_STATE	2
#define TRACE_PACKET_TAG		0x0a	/* Trace.packet: field 1, bytes */
#define NAME_SLOTS			1024	/* interned names, all sources */
#define TRACK_SLOTS			4096	/* tracks, open addressing */
#define TEXT_SLOTS			4096	/* interned texts, direct-mapped */
#define TEXT_MAX			256	/* longer texts go inline */

/* Names interned on every sequence with these iids; event names follow. */
enum { ANNOTATION_INFO = 1, ANNOTATION_GUEST_TSC, ANNOTATION_VCPU };
enum { NAME_IN_GUEST = 1, FIRST_EVENT_NAME };

static const char *const annotation_names[] = {
	[ANNOTATION_INFO] = "info",
	[ANNOTATION_GUEST_TSC] = "guest_tsc",
	[ANNOTATION_VCPU] = "vcpu",
};

/* What a track stands for; its uuid is its order of first use. */
enum track_kind {
	TRACK_HOST_PROCESS,
	TRACK_HOST_THREAD,
	TRACK_GUEST,
	TRACK_GUEST_VCPU,
	TRACK_TSC_OFFSET,
	TRACK_TSC_MULT,
};

struct track {
	uint64_t key;			/* kind, machine and id; 0: free */
	uint64_t uuid;
};

struct name {
	unsigned int machine;
	int id;
	uint64_t iid;			/* 0: free */
};

/*
 * A text recently interned: a slot taken by another text gives the new
 * one a new iid, so an iid never changes its meaning on a sequence.
 */
struct text {
	unsigned int machine;
	unsigned int len;
	uint64_t iid;			/* 0: free */
	char text[TEXT_MAX];
};

/* One packet sequence per machine: 0 the host, 1 + n guest n. */
struct sequence {
	uint64_t next_iid;
	uint64_t next_text_iid;
	bool started;
};

struct pf_sink {
	struct sink_out o;
	struct sequence *seqs;
	struct name names[NAME_SLOTS];
	struct track tracks[TRACK_SLOTS];
	struct text *texts;
	uint64_t next_uuid;
	uint8_t *buf;
	size_t alloc;
	bool full;			/* a table ran out of slots */
};

void *perfetto_sink_new(const struct sink_out *o)
{
	struct pf_sink *p = xcalloc(1, sizeof(*p));

	p->o = *o;
	p->seqs = xcalloc(o->desc->nr_guests + 1, sizeof(*p->seqs));
	p->texts = xcalloc(TEXT_SLOTS, sizeof(*p->texts));
	p->next_uuid = 1;
	return p;
}

/*
 * A Trace is its packets, each a length-delimited field 1: so the file can
 * be written one packet at a time, with that tag and length put here.
 */
static void write_packet(struct pf_sink *p, Packet *pkt)
{
	size_t len = protobuf_c_message_get_packed_size(&pkt->base);
	uint8_t head[1 + 10];
	size_t n = 0, v;

	if (len > p->alloc) {
		p->alloc = len * 2;
		p->buf = xrealloc(p->buf, p->alloc, 1);
	}
	protobuf_c_message_pack(&pkt->base, p->buf);
	head[n++] = TRACE_PACKET_TAG;
	for (v = len; v >= 0x80; v >>= 7)
		head[n++] = (v & 0x7f) | 0x80;
	head[n++] = v;
	fwrite(head, 1, n, p->o.f);
	fwrite(p->buf, 1, len, p->o.f);
}

/* Names a packet interns: the standard ones, an event's name and text. */
struct interning {
	Perfetto__Protos__InternedData data;
	Perfetto__Protos__EventName *event_names[2];
	Perfetto__Protos__InternedString string, *strings[1];
};

static void init_interning(struct interning *in)
{
	perfetto__protos__interned_data__init(&in->data);
	in->data.event_names = in->event_names;
}

static void intern_in_packet(Packet *pkt, struct interning *in, Perfetto__Protos__EventName *en)
{
	in->event_names[in->data.n_event_names++] = en;
	pkt->interned_data = &in->data;
}

/*
 * The first packet of a sequence clears its state and interns the names
 * every sequence uses.
 */
static void start_packet(struct pf_sink *p, Packet *pkt, unsigned int machine,
			 struct interning *interned)
{
	static Perfetto__Protos__DebugAnnotationName names[ARRAY_SIZE(annotation_names)];
	static Perfetto__Protos__DebugAnnotationName *list[ARRAY_SIZE(annotation_names)];
	static Perfetto__Protos__EventName in_guest = PERFETTO__PROTOS__EVENT_NAME__INIT;
	struct sequence *s = &p->seqs[machine];
	size_t i;

	PB_SET(*pkt, trusted_packet_sequence_id, machine + 1);
	PB_SET(*pkt, sequence_flags, SEQ_NEEDS_INCREMENTAL_STATE);
	if (machine) {
		PB_SET(*pkt, machine_id, machine);
	}
	if (s->started)
		return;
	s->started = true;
	s->next_iid = FIRST_EVENT_NAME;
	s->next_text_iid = 1;
	pkt->sequence_flags |= SEQ_INCREMENTAL_STATE_CLEARED;
	PB_SET(in_guest, iid, NAME_IN_GUEST);
	in_guest.name = "in guest";
	intern_in_packet(pkt, interned, &in_guest);
	for (i = 1; i < ARRAY_SIZE(annotation_names); i++) {
		perfetto__protos__debug_annotation_name__init(&names[i]);
		PB_SET(names[i], iid, i);
		names[i].name = (char *)annotation_names[i];
		list[i - 1] = &names[i];
	}
	interned->data.n_debug_annotation_names = ARRAY_SIZE(annotation_names) - 1;
	interned->data.debug_annotation_names = list;
}

/* A new track's descriptor, on its machine's sequence; returns its uuid. */
static uint64_t write_descriptor(struct pf_sink *p, unsigned int machine, TrackDescriptor *td)
{
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	struct interning interned;

	init_interning(&interned);
	start_packet(p, &pkt, machine, &interned);
	pkt.track_descriptor = td;
	write_packet(p, &pkt);
	return td->uuid;
}

static uint64_t track_key(enum track_kind kind, unsigned int machine, uint64_t id)
{
	return ((uint64_t)kind + 1) << 56 | (uint64_t)machine << 40 | id;
}

/*
 * The uuid of a track in @td; true when the track is new, to be
 * described now.
 */
static bool new_track(struct pf_sink *p, uint64_t key, TrackDescriptor *td)
{
	unsigned int i = (key * 0x9e3779b97f4a7c15ull) >> 52;
	unsigned int n;

	for (n = 0; n < TRACK_SLOTS; n++, i = (i + 1) % TRACK_SLOTS) {
		if (p->tracks[i].key == key) {
			td->uuid = p->tracks[i].uuid;
			return false;
		}
		if (p->tracks[i].key)
			continue;
		p->tracks[i].key = key;
		p->tracks[i].uuid = p->next_uuid++;
		PB_SET(*td, uuid, p->tracks[i].uuid);
		return true;
	}
	p->full = true;
	td->uuid = 0;
	return false;
}

static uint64_t host_process_track(struct pf_sink *p, int pid, const char *comm)
{
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;

	if (!new_track(p, track_key(TRACK_HOST_PROCESS, 0, pid), &td))
		return td.uuid;
	PB_SET(pd, pid, pid);
	pd.process_name = (char *)comm;
	td.process = &pd;
	return write_descriptor(p, 0, &td);
}

static uint64_t host_thread_track(struct pf_sink *p, const struct sink_event *e)
{
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;

	if (!new_track(p, track_key(TRACK_HOST_THREAD, 0, (uint32_t)e->pid), &td))
		return td.uuid;
	PB_SET(td, parent_uuid, host_process_track(p, e->tgid, e->process_comm));
	PB_SET(thd, pid, e->tgid);
	PB_SET(thd, tid, e->pid);
	thd.thread_name = (char *)e->comm;
	td.thread = &thd;
	return write_descriptor(p, 0, &td);
}

/* A track per vCPU under its guest's, on the guest's machine. */
static uint64_t guest_vcpu_track(struct pf_sink *p, const struct sink_event *e)
{
	TrackDescriptor vm = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	unsigned int machine = e->machine;
	char name[32];

	if (new_track(p, track_key(TRACK_GUEST, machine, 0), &vm)) {
		vm.name = (char *)p->o.desc->guests[machine - 1].label;
		write_descriptor(p, machine, &vm);
	}
	if (!new_track(p, track_key(TRACK_GUEST_VCPU, machine, (uint32_t)e->cpu), &td))
		return td.uuid;
	snprintf(name, sizeof(name), "vCPU %d", e->cpu);
	PB_SET(td, parent_uuid, vm.uuid);
	td.name = name;
	return write_descriptor(p, machine, &td);
}

/*
 * The iid of an event's name on its machine's sequence; 0: new, in @en.
 * An event id names one format in its machine's trace: every buffer of a
 * file shares its formats.
 */
static uint64_t intern_name(struct pf_sink *p, const struct sink_event *e,
			    Perfetto__Protos__EventName *en)
{
	unsigned int i = (e->machine * 61 + (unsigned int)e->event_id) % NAME_SLOTS;
	unsigned int n;

	for (n = 0; n < NAME_SLOTS; n++, i = (i + 1) % NAME_SLOTS) {
		struct name *s = &p->names[i];

		if (s->iid && s->machine == e->machine && s->id == e->event_id)
			return s->iid;
		if (s->iid)
			continue;
		s->machine = e->machine;
		s->id = e->event_id;
		s->iid = p->seqs[e->machine].next_iid++;
		PB_SET(*en, iid, s->iid);
		en->name = (char *)e->name;
		return 0;
	}
	p->full = true;
	return 0;
}

/* The iid of @text on @machine's sequence; 0: new, put in @in. */
static uint64_t intern_text(struct pf_sink *p, unsigned int machine, const char *text,
			    unsigned int len, struct interning *in)
{
	struct text *t = &p->texts[hash_slot(machine, text, len, TEXT_SLOTS)];

	if (t->iid && t->machine == machine && t->len == len && !memcmp(t->text, text, len))
		return t->iid;
	t->machine = machine;
	t->len = len;
	t->iid = p->seqs[machine].next_text_iid++;
	memcpy(t->text, text, len);
	perfetto__protos__interned_string__init(&in->string);
	PB_SET(in->string, iid, t->iid);
	PB_SET(in->string, str, ((ProtobufCBinaryData){ len, (uint8_t *)t->text }));
	in->strings[0] = &in->string;
	in->data.n_debug_annotation_string_values = 1;
	in->data.debug_annotation_string_values = in->strings;
	return 0;
}

/* A string annotation refers to its text by iid when the text is short. */
static void intern_annotation(struct pf_sink *p, unsigned int machine, Packet *pkt,
			      struct interning *in, Perfetto__Protos__DebugAnnotation *a)
{
	unsigned int len = strlen(a->string_value);

	if (len >= TEXT_MAX)
		return;
	PB_SET(*a, string_value_iid, intern_text(p, machine, a->string_value, len, in));
	if (!a->string_value_iid) {
		a->string_value_iid = in->string.iid;
		pkt->interned_data = &in->data;
	}
	a->string_value = NULL;
}

/*
 * An event on a track at the event's time; @named: named after the trace
 * event, whose name is interned on first use, as is the text of its string
 * annotation (it has one at most).
 */
static void write_event(struct pf_sink *p, const struct sink_event *e, uint64_t track,
			TrackEvent *te, bool named)
{
	unsigned int machine = e->machine;
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT;
	Packet pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	struct interning interned;
	size_t i;

	init_interning(&interned);
	start_packet(p, &pkt, machine, &interned);
	for (i = 0; i < te->n_debug_annotations; i++)
		if (te->debug_annotations[i]->string_value)
			intern_annotation(p, machine, &pkt, &interned, te->debug_annotations[i]);
	PB_SET(pkt, timestamp, (uint64_t)tsc_to_ns(e->host_ts, p->o.tsc_khz));
	PB_SET(*te, track_uuid, track);
	if (named) {
		PB_SET(*te, name_iid, intern_name(p, e, &en));
		if (!te->name_iid) {
			te->name_iid = en.iid;
			intern_in_packet(&pkt, &interned, &en);
		}
	}
	pkt.track_event = te;
	write_packet(p, &pkt);
}

static void write_instant(struct pf_sink *p, const struct sink_event *e, uint64_t track,
			  Perfetto__Protos__DebugAnnotation **args, size_t nr_args)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;

	PB_SET(te, type, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT);
	te.n_debug_annotations = nr_args;
	te.debug_annotations = args;
	write_event(p, e, track, &te, true);
}

static void write_slice(struct pf_sink *p, const struct sink_event *e, uint64_t track,
			bool begin)
{
	Perfetto__Protos__DebugAnnotation vcpu = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	Perfetto__Protos__DebugAnnotation *args[] = { &vcpu };
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;

	if (begin) {
		PB_SET(te, type, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN);
		PB_SET(te, name_iid, NAME_IN_GUEST);
		PB_SET(vcpu, name_iid, ANNOTATION_VCPU);
		PB_SET(vcpu, uint_value, e->vcpu->id);
		te.n_debug_annotations = 1;
		te.debug_annotations = args;
	} else {
		PB_SET(te, type, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END);
	}
	write_event(p, e, track, &te, false);
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
	return write_descriptor(p, 0, &td);
}

static void write_counter(struct pf_sink *p, const struct sink_event *e,
			  enum track_kind kind, uint64_t value)
{
	TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	uint64_t track = counter_track(p, e, kind);

	PB_SET(te, type, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER);
	PB_SET(te, counter_value, (int64_t)value);
	write_event(p, e, track, &te, false);
}

/* The TSC values an event puts in force on its vCPU. */
static void host_event(struct pf_sink *p, const struct sink_event *e)
{
	uint64_t track = host_thread_track(p, e);

	if (e->kvm == SINK_KVM_ENTRY)
		write_slice(p, e, track, true);
	/* A trace that begins inside a run has no begin for its first exit. */
	if (e->kvm == SINK_KVM_EXIT && e->was_running)
		write_slice(p, e, track, false);
	/* The TSC values the event puts in force on its vCPU. */
	if (e->sets_offset)
		write_counter(p, e, TRACK_TSC_OFFSET, e->offset);
	if (e->sets_mult)
		write_counter(p, e, TRACK_TSC_MULT, e->mult);
	write_instant(p, e, track, NULL, 0);
}

static void guest_event(struct pf_sink *p, const struct sink_event *e)
{
	Perfetto__Protos__DebugAnnotation info = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	Perfetto__Protos__DebugAnnotation tsc = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	Perfetto__Protos__DebugAnnotation *args[] = { &info, &tsc };
	unsigned int len;

	PB_SET(info, name_iid, ANNOTATION_INFO);
	info.string_value = (char *)sink_event_text(e, &len);
	PB_SET(tsc, name_iid, ANNOTATION_GUEST_TSC);
	PB_SET(tsc, uint_value, e->guest_ts);
	write_instant(p, e, guest_vcpu_track(p, e), args, 2);
}

static void perfetto_event(void *priv, const struct sink_event *e)
{
	struct pf_sink *p = priv;

	if (e->machine)
		guest_event(p, e);
	else
		host_event(p, e);
}

static int perfetto_finish(void *priv)
{
	struct pf_sink *p = priv;
	int ret = 0;

	if (p->full) {
		fprintf(stderr, "kvm-tsc-merge: more than %d tracks or %d event names: the Perfetto trace is incomplete\n",
			TRACK_SLOTS, NAME_SLOTS);
		ret = -1;
	}
	free(p->texts);
	free(p->seqs);
	free(p->buf);
	free(p);
	return ret;
}

const struct sink_ops perfetto_sink_ops = {
	.event = perfetto_event,
	.finish = perfetto_finish,
	.tasks = true,
};
