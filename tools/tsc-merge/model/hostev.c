// SPDX-License-Identifier: GPL-2.0
/*
 * hostev.c: decode the host events the conversion depends on (the three
 * TSC events, kvm_entry, kvm_exit, task_newtask) into one plain struct,
 * and find the VM and vCPU a host event is about.
 */
#include <stddef.h>
#include <string.h>

#include "tsc_event.h"
#include "model/model.h"

#define CLONE_THREAD_FLAG 0x00010000UL

static struct tep_format_field *field_of(struct tep_event *e, const char *name,
					 const char *path, int *missing)
{
	struct tep_format_field *f = e ? tep_find_field(e, name) : NULL;

	if (e && !f) {
		fprintf(stderr, "%s: event %s:%s has no field '%s': not the format this tool knows\n",
			path, e->system, e->name, name);
		(*missing)++;
	}
	return f;
}

/*
 * kvm_write_tsc_offset, kvm_entry and kvm_exit are upstream and required;
 * the events of the series and task_newtask only make the result exact
 * in more cases, so their absence is a warning that says what it costs.
 */
void host_events_warn_missing(const struct host_events *he, const char *path)
{
	if (!he->kvm[HOST_MULT])
		fprintf(stderr, "%s: warning: no kvm:kvm_write_tsc_multiplier: a vCPU's TSC multiplier is known only from a record-host.sh snapshot or trace-cmd's time sync, and a VM created again by the same process is not told apart\n",
			path);
	if (!he->kvm[HOST_NESTED])
		fprintf(stderr, "%s: warning: no kvm:kvm_nested_tsc_offset: nested guests' time is not followed\n",
			path);
	if (!he->newtask)
		fprintf(stderr, "%s: warning: no task:task_newtask: a vCPU thread that neither a GUEST option nor a record-host.sh snapshot names counts as a process of its own\n",
			path);
}

/*
 * kvm_entry and kvm_exit, read into a struct tsc_event as the contract's
 * events are: only their vCPU matters here.
 */
static const struct tsc_event_type run_events[] = {
	{ .name = "kvm_entry", .nr_fields = 1,
	  .fields = { TSC_EVENT_FIELD("vcpu_id", vcpu_id) } },
	{ .name = "kvm_exit", .nr_fields = 1,
	  .fields = { TSC_EVENT_FIELD("vcpu_id", vcpu_id) } },
};

_Static_assert(HOST_MULT - HOST_OFFSET == (int)TSC_MULTIPLIER &&
	       HOST_NESTED - HOST_OFFSET == (int)TSC_NESTED &&
	       HOST_ENTRY - HOST_OFFSET == (int)TSC_NR_KINDS && TSC_OFFSET == 0,
	       "the host's KVM kinds start with the event model's, in its order");

/* The KVM events the conversion reads, by kind: the event model's first. */
static const struct tsc_event_type *kvm_event_type(int kind)
{
	return kind < HOST_ENTRY ? &tsc_event_types[kind - HOST_OFFSET] :
				   &run_events[kind - HOST_ENTRY];
}

static int event_id(const struct tep_event *e)
{
	return e ? e->id : -1;
}

int host_events_init(struct host_events *he, struct trace_file *host)
{
	struct tep_handle *tep = tracecmd_get_tep(host->handle);
	int bad = 0, k;
	unsigned int f;

	memset(he, 0, sizeof(*he));
	he->tep = tep;
	td_common_init(&he->common, tep);
	for (k = HOST_OFFSET; k < NR_KVM_KINDS; k++) {
		he->kvm[k] = tep_find_event_by_name(tep, TSC_EVENT_SYSTEM, kvm_event_type(k)->name);
		he->kvm_id[k] = event_id(he->kvm[k]);
	}
	he->newtask = tep_find_event_by_name(tep, "task", "task_newtask");
	he->newtask_id = event_id(he->newtask);
	he->print = tep_find_event_by_name(tep, "ftrace", "print");
	he->print_id = event_id(he->print);
	if (!he->kvm[HOST_OFFSET] || !he->kvm[HOST_ENTRY] || !he->kvm[HOST_EXIT]) {
		fprintf(stderr, "%s: the host trace lacks kvm:%s; record the host with tools/record-host/record-host.sh (trace-cmd record -C %s -e kvm:kvm_write_tsc_offset -e kvm:kvm_entry -e kvm:kvm_exit ...)\n",
			host->path, kvm_event_type(!he->kvm[HOST_OFFSET] ? HOST_OFFSET :
			!he->kvm[HOST_ENTRY] ? HOST_ENTRY : HOST_EXIT)->name, TSC_CLOCK);
		return -1;
	}
	for (k = HOST_OFFSET; k < NR_KVM_KINDS; k++)
		for (f = 0; f < kvm_event_type(k)->nr_fields; f++)
			he->kvm_fields[k][f] = field_of(he->kvm[k], kvm_event_type(k)->fields[f].name,
							host->path, &bad);
	he->nt_pid = field_of(he->newtask, "pid", host->path, &bad);
	he->nt_flags = field_of(he->newtask, "clone_flags", host->path, &bad);
	he->print_buf = field_of(he->print, "buf", host->path, &bad);
	return bad ? -1 : 0;
}

/* What the caller knows of a record already: its event and whether it fits. */
struct known {
	int type;
	const struct tep_event *event;	/* NULL: nothing known */
	bool fits;			/* record_fits_format(@event) */
};

/*
 * @r is an event of @event's type (@id, its id, compared first: reading
 * the event's own costs a cache miss per record) that holds the fields its
 * format says: a damaged record is read as no event here (the merge
 * reports it).
 */
static bool is_event(struct tracecmd_input *h, struct tep_event *event, int id,
		     const struct known *k, struct tep_record *r)
{
	if (k->type != id || !event)
		return false;
	return k->event == event ? k->fits : record_fits_format(h, event, r);
}

/*
 * A trace_marker line of record-host.sh's snapshot: ftrace:print's buf, up
 * to the record's end, its newline dropped.
 */
static bool read_snapshot_line(const struct host_events *he, struct tep_record *r,
			       struct host_ev *ev)
{
	const char *buf = (const char *)r->data + he->print_buf->offset;
	size_t room = r->size > he->print_buf->offset ? r->size - he->print_buf->offset : 0;
	size_t len = strnlen(buf, room);

	if (len < strlen(SNAPSHOT_PREFIX) || memcmp(buf, SNAPSHOT_PREFIX, strlen(SNAPSHOT_PREFIX)))
		return false;
	if (len >= sizeof(ev->text))
		len = sizeof(ev->text) - 1;
	memcpy(ev->text, buf, len);
	ev->text[len] = '\0';
	ev->text[strcspn(ev->text, "\n")] = '\0';
	return true;
}

static enum host_kind decode(const struct host_events *he, struct tracecmd_input *h,
			     struct tep_record *r, const struct known *known, struct host_ev *ev)
{
	unsigned int f;
	int k;

	/* Not the text: only a snapshot line fills it. */
	memset(ev, 0, offsetof(struct host_ev, text));
	ev->text[0] = '\0';
	ev->ts = r->ts;
	for (k = HOST_OFFSET; k < NR_KVM_KINDS; k++) {
		const struct tsc_event_type *et;
		struct tsc_event t;

		if (!is_event(h, he->kvm[k], he->kvm_id[k], known, r))
			continue;
		et = kvm_event_type(k);
		memset(&t, 0, sizeof(t));
		for (f = 0; f < et->nr_fields; f++)
			tsc_event_store(&t, &et->fields[f],
					td_read_field(&he->common, r, he->kvm_fields[k][f]));
		ev->vcpu_id = t.vcpu_id;
		ev->guest_mode = t.guest_mode;
		ev->prev = t.prev;
		ev->next = t.next;
		ev->frac = t.frac_bits;
		ev->prev_mult = t.prev_multiplier;
		ev->mult = t.multiplier;
		ev->pid = td_record_pid(&he->common, r);
		return ev->kind = k;
	}
	if (is_event(h, he->print, he->print_id, known, r) && read_snapshot_line(he, r, ev)) {
		ev->kind = HOST_SNAPSHOT;
	} else if (is_event(h, he->newtask, he->newtask_id, known, r)) {
		ev->child = td_read_field(&he->common, r, he->nt_pid);
		ev->thread = td_read_field(&he->common, r, he->nt_flags) & CLONE_THREAD_FLAG;
		ev->kind = HOST_NEWTASK;
	} else {
		/* No pid: nothing reads another event's. */
		return ev->kind = HOST_OTHER;
	}
	ev->pid = td_record_pid(&he->common, r);
	return ev->kind;
}

enum host_kind host_event_decode(const struct host_events *he, struct tracecmd_input *h,
				 struct tep_record *r, struct host_ev *ev)
{
	struct known known = { .type = td_record_type(&he->common, r) };

	return decode(he, h, r, &known, ev);
}

/*
 * The same for a record whose type and event the caller has found (NULL:
 * none has that type) and checked against that event's format (@fits).
 */
enum host_kind host_event_decode_known(const struct host_events *he, struct tracecmd_input *h,
				       struct tep_record *r, int type, const struct tep_event *event,
				       bool fits, struct host_ev *ev)
{
	struct known known = { .type = type, .event = event, .fits = fits };

	return decode(he, h, r, &known, ev);
}

/* The VM whose vCPU thread or VMM thread logged @ev. */
struct vm *host_event_vm(const struct host_events *he, struct vm_table *vms,
			 const struct host_ev *ev)
{
	int tgid = vm_table_tgid_at(vms, ev->pid, ev->ts);
	struct vm *vm = vm_table_find_process(vms, tgid);

	/* The process's name is looked up only for a VM that is new. */
	return vm ? vm : vm_table_vm_of_process(vms, tgid, tep_data_comm_from_pid(he->tep, tgid));
}
