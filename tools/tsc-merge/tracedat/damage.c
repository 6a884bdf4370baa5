// SPDX-License-Identifier: GPL-2.0
/*
 * damage.c: keep records that libtraceevent 1.7.1 cannot print safely away
 * from its printing. Fuzzing found two kinds (fuzz/README): a record
 * shorter than its event format says, which it copies past (bus errors),
 * and a print format that divides by a value that is zero in the record,
 * which it evaluates (SIGFPE). Both mean a damaged file; the merge counts
 * such records and names the first, no sink prints them, and the host's
 * events are decoded only from records that fit. A third kind is a ring
 * buffer libtracecmd 1.3.1 reads the same record of forever: the readers
 * stop at the first record that does not move on.
 */
#include <stdlib.h>
#include <string.h>

#include "tracedat/tdfile.h"
#include "tracecmd-private.h"

#define EVENT_SLOTS 256

/*
 * What the checks need of a file's handle, remembered for the few handles
 * a merge reads: libtracecmd's and libtraceevent's getters are calls.
 */
#define HANDLE_SLOTS 8
struct handle_slot {
	const struct tracecmd_input *h;
	struct tep_handle *tep;
	unsigned int page_size;
	bool swap;			/* the file's byte order is not ours */
};

static struct handle_slot handle_cache[HANDLE_SLOTS];
static unsigned int handle_next;

static const struct handle_slot *handle_info(struct tracecmd_input *h)
{
	struct handle_slot *s;
	unsigned int i;

	for (i = 0; i < HANDLE_SLOTS; i++)
		if (handle_cache[i].h == h)
			return &handle_cache[i];
	s = &handle_cache[handle_next++ % HANDLE_SLOTS];
	s->h = h;
	s->tep = tracecmd_get_tep(h);
	s->page_size = tracecmd_page_size(h);
	s->swap = tep_is_file_bigendian(s->tep) != tep_is_local_bigendian(s->tep);
	return s;
}

/*
 * Does the record end inside its ring-buffer page? A damaged length makes
 * kbuffer give a size that runs past it. r->offset is that of the event's
 * header in the page: 4 bytes, or 8 when the word before the data holds
 * the length (kbuffer's type_len 0: the data's size plus those 4 bytes).
 */
static bool record_inside_page(const struct handle_slot *hs, struct tep_record *r)
{
	unsigned int page_size = hs->page_size;
	unsigned long long in_page, header = 4;
	uint32_t word;

	in_page = page_size && !(page_size & (page_size - 1)) ? r->offset & (page_size - 1) :
								 r->offset % page_size;
	if (in_page + 8 <= page_size) {
		memcpy(&word, (char *)r->data - 4, 4);
		if (hs->swap)
			word = __builtin_bswap32(word);
		if (word == (unsigned int)r->size + 4)
			header = 8;
	}
	return in_page + header + (unsigned int)r->size <= page_size;
}

static bool is_division(const struct tep_print_arg *a)
{
	return a->type == TEP_PRINT_OP && a->op.op &&
	       (!strcmp(a->op.op, "/") || !strcmp(a->op.op, "%"));
}

typedef bool (*print_arg_fn)(struct tep_print_arg *a, void *data);

/* Whether @fn holds for an argument of the list @list. */
static bool any_in_list(struct tep_print_arg *list, print_arg_fn fn, void *data)
{
	for (; list; list = list->next)
		if (fn(list, data))
			return true;
	return false;
}

/* Calls @fn on each argument directly inside @a. */
static bool any_child(struct tep_print_arg *a, print_arg_fn fn, void *data)
{
	switch (a->type) {
	case TEP_PRINT_OP:
		return (a->op.left && fn(a->op.left, data)) || (a->op.right && fn(a->op.right, data));
	case TEP_PRINT_TYPE:
		return a->typecast.item && fn(a->typecast.item, data);
	case TEP_PRINT_FLAGS:
		return a->flags.field && fn(a->flags.field, data);
	case TEP_PRINT_SYMBOL:
		return a->symbol.field && fn(a->symbol.field, data);
	case TEP_PRINT_HEX:
	case TEP_PRINT_HEX_STR:
		return (a->hex.field && fn(a->hex.field, data)) || (a->hex.size && fn(a->hex.size, data));
	case TEP_PRINT_INT_ARRAY:
		return (a->int_array.field && fn(a->int_array.field, data)) ||
		       (a->int_array.count && fn(a->int_array.count, data)) ||
		       (a->int_array.el_size && fn(a->int_array.el_size, data));
	case TEP_PRINT_FUNC:
		return any_in_list(a->func.args, fn, data);
	default:
		return false;
	}
}

static bool has_division(struct tep_print_arg *a, void *unused)
{
	return is_division(a) || any_child(a, has_division, NULL);
}

/* Whether an event's print format divides at all. */
static bool format_divides(struct tep_event *ev)
{
	return any_in_list(ev->print_fmt.args, has_division, NULL);
}

/*
 * What the checks need of an event's format, remembered per event (one
 * lookup per record): how far its fixed fields reach (the largest offset +
 * size, as the check below sums them), whether it has dynamic ones, so a
 * record is checked against them, not against every field, and whether
 * its print format divides at all, and whether its field lines parsed.
 */
struct event_slot {
	const struct tep_event *event;
	unsigned int end;
	bool dynamic;
	bool divides;
	bool unparsed;
};

static struct event_slot event_cache[EVENT_SLOTS];

static void fill_event_slot(struct event_slot *s, struct tep_event *ev)
{
	struct tep_format_field *f;
	int listed = 0;

	s->event = ev;
	s->end = 0;
	s->dynamic = false;
	for (f = ev->format.fields; f; f = f->next) {
		unsigned int end = (unsigned int)f->offset + (unsigned int)f->size;

		if (end > s->end)
			s->end = end;
		s->dynamic |= !!(f->flags & TEP_FIELD_IS_DYNAMIC);
		listed++;
	}
	s->divides = format_divides(ev);
	/*
	 * libtraceevent keeps an event whose field lines fail to parse part
	 * way, flagged failed, with the fields before the damage listed and
	 * nr_fields left 0: what its records hold past them is unknown.
	 */
	s->unparsed = (ev->flags & TEP_EVENT_FL_FAILED) && listed != ev->format.nr_fields;
}

/* Inline, as fits_format(): both run for every record. */
static inline const struct event_slot *event_info(struct tep_event *ev)
{
	struct event_slot *s = &event_cache[((uintptr_t)ev / 64) % EVENT_SLOTS];

	if (s->event != ev)
		fill_event_slot(s, ev);
	return s;
}

/*
 * Does the record lie inside its page, every field of the format inside
 * the record, and every dynamic field's data (__data_loc: offset in the
 * low 16 bits, length in the high 16, from the record or, __rel_loc, from
 * the field's end)? Nothing may read a field of a record that does not.
 */
static inline bool fits_format(const struct handle_slot *hs, const struct event_slot *es,
			struct tep_event *ev, struct tep_record *r)
{
	struct tep_format_field *f;
	unsigned long long loc, start;

	if (!record_inside_page(hs, r))
		return false;
	if (es->end > (unsigned int)r->size)
		return false;
	if (!es->dynamic)
		return true;
	for (f = ev->format.fields; f; f = f->next) {
		if (!(f->flags & TEP_FIELD_IS_DYNAMIC))
			continue;
		loc = tep_read_number(hs->tep, (char *)r->data + f->offset, f->size);
		start = (loc & 0xffff) + (f->flags & TEP_FIELD_IS_RELATIVE ? f->offset + f->size : 0);
		if (start + (loc >> 16) > (unsigned int)r->size)
			return false;
	}
	return true;
}

bool record_fits_format(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r)
{
	const struct event_slot *es = event_info(ev);

	return !es->unparsed && fits_format(handle_info(h), es, ev, r);
}

/* The caches are keyed by event: a closed file's events may be freed. */
void damage_forget_events(void)
{
	memset(event_cache, 0, sizeof(event_cache));
	memset(handle_cache, 0, sizeof(handle_cache));
}

struct record_ref {
	struct tep_handle *tep;
	struct tep_event *event;
	struct tep_record *record;
};

/* A divisor that is a constant or a field can be read; anything else is refused. */
static bool divisor_is_zero(const struct record_ref *ref, const struct tep_print_arg *d)
{
	struct tep_format_field *f;

	if (d->type == TEP_PRINT_ATOM)
		return !d->atom.atom || !strtoull(d->atom.atom, NULL, 0);
	if (d->type != TEP_PRINT_FIELD)
		return true;
	f = d->field.field ? d->field.field : tep_find_any_field(ref->event, d->field.name);
	return !f || !tep_read_number(ref->tep, (char *)ref->record->data + f->offset, f->size);
}

static bool divides_by_zero(struct tep_print_arg *a, void *data)
{
	if (is_division(a) && (!a->op.right || divisor_is_zero(data, a->op.right)))
		return true;
	return any_child(a, divides_by_zero, data);
}

enum damage record_damage(struct tracecmd_input *h, struct tep_event *ev, struct tep_record *r)
{
	const struct handle_slot *hs = handle_info(h);
	struct record_ref ref = { hs->tep, ev, r };
	const struct event_slot *es;

	if (!ev)
		return DAMAGE_SHORT;
	es = event_info(ev);
	if (es->unparsed)
		return DAMAGE_FORMAT;
	if (!fits_format(hs, es, ev, r))
		return DAMAGE_SHORT;
	if (es->divides && any_in_list(ev->print_fmt.args, divides_by_zero, &ref))
		return DAMAGE_DIVISION;
	return DAMAGE_NONE;
}

/*
 * Within one CPU of one buffer, record offsets only grow: a record at or
 * before the previous one is libtracecmd going round a damaged page, and
 * says so. @next: where the CPU's next record may start (0 at first).
 */
bool record_repeats(uint64_t *next, const struct tep_record *r, const char *path, int cpu)
{
	if (r->offset < *next) {
		fprintf(stderr, "%s: CPU %d: libtracecmd returns the record at file offset %llu again: the ring buffer is damaged\n",
			path, cpu, r->offset);
		return true;
	}
	*next = r->offset + 1;
	return false;
}
