// SPDX-License-Identifier: GPL-2.0
/*
 * fmtcheck.c: find what crashes libtraceevent's parser in an event format,
 * before libtraceevent parses it.
 *
 * libtraceevent 1.7.1 (process_entry()) marks the field that follows
 * __print_symbolic() or __print_flags() by looking it up and writing
 * through the result unchecked, and the mark stays set until the next
 * REC->NAME it meets, in this event or a later one: a REC->NAME the format
 * does not declare is a NULL dereference while tracecmd_open() reads the
 * file. Its expression parser (process_op()) goes on with a NULL operand
 * after a "?:" or an "[]" when the next token is one it gives no priority
 * (';', '=', '.', ...), after a bracket that closes nothing, or when
 * braces stand outside their call; it divides constants while parsing,
 * by zero too; and its tokenizer gives a byte that is not text no token.
 * No kernel format does any of that: the checks here refuse none of the
 * 2323 formats of a 6.18 kernel and the project's 8, so a format they
 * refuse is damaged.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <string.h>

#include "tracedat/tdfile.h"

/* Deeper than any kernel print fmt nests its brackets. */
#define MAX_NESTING 64

struct name {
	const char *s;
	size_t len;
};

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/*
 * The name a declaration between "field:" and ';' ends with:
 * "unsigned int vcpu_id", "char comm[16]", "__data_loc char[] name".
 */
static struct name declared_name(const char *decl, const char *end)
{
	const char *start;

	while (end > decl && isspace((unsigned char)end[-1]))
		end--;
	if (end > decl && end[-1] == ']') {
		while (end > decl && end[-1] != '[')
			end--;
		if (end > decl)
			end--;
		while (end > decl && isspace((unsigned char)end[-1]))
			end--;
	}
	for (start = end; start > decl && is_ident(start[-1]); start--)
		;
	return (struct name){ start, end - start };
}

/* Is @n among the "field:" declarations in [@text, @end)? */
static bool is_declared(const char *text, const char *end, struct name n)
{
	const char *p = text, *semi;

	while ((p = memmem(p, end - p, "field:", 6))) {
		struct name d;

		p += 6;
		semi = memchr(p, ';', end - p);
		if (!semi)
			break;
		d = declared_name(p, semi);
		if (d.len == n.len && !memcmp(d.s, n.s, n.len))
			return true;
		p = semi + 1;
	}
	return false;
}

/* Past the string or character literal that starts at @p. */
static const char *skip_literal(const char *p, const char *end)
{
	char quote = *p++;

	while (p < end && *p != quote)
		p += *p == '\\' ? 2 : 1;
	return p < end ? p + 1 : end;
}

/* REC->NAME at @p: NAME, or an empty name if @p starts no such reference. */
static struct name field_reference(const char *p, const char *start, const char *end)
{
	struct name n = { NULL, 0 };

	if (end - p < 3 || memcmp(p, "REC", 3) || (p > start && is_ident(p[-1])))
		return n;
	for (p += 3; p < end && isspace((unsigned char)*p); p++)
		;
	if (end - p < 2 || p[0] != '-' || p[1] != '>')
		return n;
	for (p += 2; p < end && isspace((unsigned char)*p); p++)
		;
	for (n.s = p; p < end && is_ident(*p); p++)
		;
	n.len = p - n.s;
	return n;
}

/*
 * The first REC->NAME of @text's print fmt that its fields do not declare,
 * with its length in *@len; NULL if there is none. Strings are not
 * skipped: a damaged quote would hide a reference libtraceevent sees.
 */
const char *format_undeclared_field(const char *text, size_t size, size_t *len)
{
	const char *end = text + size;
	const char *fmt = memmem(text, size, "print fmt:", 10);
	const char *p;

	if (!fmt)
		return NULL;
	for (p = fmt; p < end; ) {
		struct name n = field_reference(p, fmt, end);

		if (n.s && !is_declared(text, fmt, n)) {
			*len = n.len;
			return n.s;
		}
		p = n.s ? n.s + n.len : p + 1;
	}
	return NULL;
}

/*
 * The first byte of @text that is not printable ASCII, a tab or a newline;
 * NULL if there is none. libtraceevent's tokenizer gives such a byte no
 * token, and event_read_fields() then compares a NULL token inside a
 * field's brackets. No kernel format has one.
 */
const char *format_unprintable_byte(const char *text, size_t size)
{
	const char *p;

	for (p = text; p < text + size; p++)
		if (!(isprint((unsigned char)*p) && isascii((unsigned char)*p)) &&
		    *p != '\t' && *p != '\n')
			return p;
	return NULL;
}

/*
 * The first character of a "field:" declaration that is not one a kernel
 * declaration uses (a name, spaces, '*', one "[...]"); NULL if there is
 * none. A stray quote or bracket there makes libtraceevent read the
 * following fields differently from what the names say, so a print fmt
 * can name a field it then cannot find (see format_undeclared_field()).
 */
const char *format_bad_declaration(const char *text, size_t size)
{
	const char *fmt = memmem(text, size, "print fmt:", 10);
	const char *end = fmt ? fmt : text + size;
	const char *p = text, *semi;

	while ((p = memmem(p, end - p, "field:", 6))) {
		int brackets = 0;

		p += 6;
		semi = memchr(p, ';', end - p);
		if (!semi)
			return p;
		for (; p < semi; p++) {
			if (*p == '[')
				brackets++;
			if ((*p == '[' && brackets > 1) || (*p == ']' && brackets != 1) ||
			    !(is_ident(*p) || strchr(" *[]", *p)))
				return p;
		}
	}
	return NULL;
}

/* Is the token at @p one libtraceevent's expression parser has no priority for? */
static bool is_unparsed_token(const char *p, const char *start, const char *end)
{
	switch (*p) {
	case ';': case '.': case '@': case '$': case '#': case '`':
		return true;
	case '=':
		/* "==", "!=", "<=", ">=" are operators. */
		return !(p + 1 < end && p[1] == '=') &&
		       !(p > start && strchr("=!<>", p[-1]));
	default:
		return false;
	}
}

/*
 * Is the number at @p zero as strtoull(p, NULL, 0) reads it? "0x" starts
 * hexadecimal digits, another leading '0' octal ones ("0000008" is 0).
 */
static bool number_is_zero(const char *p, const char *end)
{
	const char *digits = "0123456789";

	if (end - p > 1 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		digits = "0123456789abcdefABCDEF";
		p += 2;
	} else if (*p == '0') {
		digits = "01234567";
	}
	for (; p < end && *p && strchr(digits, *p); p++)
		if (*p != '0')
			return false;
	return true;
}

/*
 * Does the '/' or '%' at @p divide by something libtraceevent folds to 0
 * while parsing (consolidate_op_arg() divides two constants): a literal 0,
 * or a name that is neither REC nor a call, which it reads as the number
 * 0? Kernel formats divide by numbers and sizeof().
 */
static bool divides_by_zero(const char *p, const char *end)
{
	const char *name;

	if (*p != '/' && *p != '%')
		return false;
	for (p++; p < end && isspace((unsigned char)*p); p++)
		;
	if (p < end && isdigit((unsigned char)*p))
		return number_is_zero(p, end);
	for (name = p; p < end && is_ident(*p); p++)
		;
	if (p == name || (p - name == 3 && !memcmp(name, "REC", 3)))
		return false;
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p == end || *p != '(';
}

/* Is one of the brackets in @open[0..@depth) a '('? */
static bool inside_parentheses(const char **open, int depth)
{
	while (depth--)
		if (*open[depth] == '(')
			return true;
	return false;
}

/*
 * Does the bracket at @p nest: '(' '[' '{' opened, ')' ']' '}' closing the
 * last one opened, braces only inside parentheses (a __print_symbolic()
 * list)? @open holds the brackets still open.
 */
static bool nests(const char *p, const char **open, int *depth)
{
	static const char pairs[] = "()[]{}";
	const char *pair = *p ? strchr(pairs, *p) : NULL;

	if (!pair)
		return true;
	if ((pair - pairs) % 2 == 0) {
		if (*depth == MAX_NESTING || (*p == '{' && !inside_parentheses(open, *depth)))
			return false;
		open[(*depth)++] = p;
		return true;
	}
	return *depth && *open[--*depth] == pair[-1];
}

/*
 * The first token of @text's print fmt arguments that libtraceevent's
 * expression parser has no priority for, a bracket that does not nest or
 * is never closed ("_[print_symbolic(...)" makes it read an index it
 * cannot end), or a division by zero: outside literals and before any "({"
 * statement expression (which it refuses without crashing). NULL if there
 * is none.
 */
const char *format_unparsed_token(const char *text, size_t size)
{
	const char *end = text + size;
	const char *fmt = memmem(text, size, "print fmt:", 10);
	const char *open[MAX_NESTING];
	int depth = 0;
	const char *p;

	if (!fmt)
		return NULL;
	for (p = fmt + 10; p < end; p++) {
		if (*p == '"' || *p == '\'') {
			p = skip_literal(p, end) - 1;
			continue;
		}
		if (*p == '(' && p + 1 < end && p[1] == '{')
			return NULL;
		if (!nests(p, open, &depth) || is_unparsed_token(p, fmt, end) ||
		    divides_by_zero(p, end))
			return p;
	}
	return depth ? open[depth - 1] : NULL;
}

/*
 * The first line of a printk formats text ("ADDR : FORMAT" per line, up to
 * a NUL) that libtraceevent 1.7.1 would read outside: for each line,
 * tep_parse_printk_formats() copies from one byte after the ':' that ends
 * the address, and tep_register_print_string() drops one leading quote
 * and then compares the last three bytes with a "\n", before the copy's
 * start if it is shorter. A NUL inside a quoted format ends the text there
 * and leaves such a line. NULL if there is none.
 */
const char *printk_unparsed_line(const char *text, size_t size)
{
	const char *end = memchr(text, '\0', size);
	const char *line, *eol, *p;

	if (!end)
		end = text + size;
	for (line = text; line < end; line = eol + 1) {
		eol = memchr(line, '\n', end - line);
		if (!eol)
			eol = end;
		for (p = line; p < eol && *p == ':'; p++)
			;
		if (p == eol)
			continue;			/* strtok skips it */
		p = memchr(p, ':', eol - p);
		if (!p || p + 1 >= eol)
			return line;
		p += 2;					/* the ':' and a space */
		if (p < eol && *p == '"')
			p++;
		if (eol - p < 3)
			return line;
	}
	return NULL;
}
