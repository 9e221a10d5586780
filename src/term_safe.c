/*
 * term_safe.c - what of the sandbox's text reaches a terminal as it is.
 *
 * In human mode the sandbox's output goes to the user's terminal, and a
 * terminal acts on what it is sent: OSC 52 writes the clipboard, OSC 0 the
 * window title, a cursor move draws over lines already shown. So only this
 * passes:
 *
 *   text := ( char | "\n" | "\t" | "\r\n" | sgr )*
 *   char := a printable ASCII byte (0x20..0x7e), or a well-formed UTF-8
 *           sequence of a character that term_safe_hidden does not name
 *   sgr  := ESC "[" [0-9;]* "m"      (TERM_SAFE_HOLD_MAX bytes at most)
 *
 * and the rest is shown, escaped as in Python's string literals: a byte that
 * starts none of these as \xNN (an ESC that starts no SGR as \x1b, the rest
 * of its sequence then being plain text), a hidden character as \uXXXX.
 * Output comes in chunks cut anywhere, so the start of a sequence (a CR, an
 * ESC [ 3, a UTF-8 lead byte) is held until the byte after it decides; at
 * most TERM_SAFE_HOLD_MAX bytes, and term_safe_end lets them go. Fed by
 * cli_run.c, one filter per terminal it writes to.
 */
#include "term_safe.h"

#include <string.h>

#define TERM_SAFE_ESC 0x1b

static const char term_safe_hexdigits[] = "0123456789abcdef";

void term_safe_init(struct term_safe *t)
{
	t->nheld = 0;
	t->pass_cr = false;
}

void term_safe_pass_cr(struct term_safe *t)
{
	t->pass_cr = true;
}

bool term_safe_hidden(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static size_t term_safe_hex(char *out, unsigned char c)
{
	out[0] = '\\';
	out[1] = 'x';
	out[2] = term_safe_hexdigits[c >> 4];
	out[3] = term_safe_hexdigits[c & 15];
	return 4;
}

/* The length of the UTF-8 sequence that c starts (0: c starts none), and the
 * range its second byte must be in (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static size_t term_safe_utf8_len(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef) {
		if (c == 0xe0)
			*lo = 0xa0;
		else if (c == 0xed)
			*hi = 0x9f;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (c == 0xf0)
			*lo = 0x90;
		else if (c == 0xf4)
			*hi = 0x8f;
		return 4;
	}
	return 0;
}

/* What is held, which did not come whole, shown escaped: its printable bytes
 * (an ESC [ sequence's parameters) as they are. */
static size_t term_safe_release(struct term_safe *t, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < t->nheld; i++) {
		unsigned char c = t->held[i];
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += term_safe_hex(out + o, c);
	}
	t->nheld = 0;
	return o;
}

/* The held UTF-8 sequence, now whole: as it is, or as \uXXXX if hidden. */
static size_t term_safe_char(struct term_safe *t, char *out)
{
	size_t n = t->nheld;
	uint32_t cp = t->held[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (t->held[i] & 0x3f);
	t->nheld = 0;
	if (!term_safe_hidden(cp)) {
		memcpy(out, t->held, n);
		return n;
	}
	out[0] = '\\';
	out[1] = 'u';
	for (int i = 0; i < 4; i++)
		out[2 + i] = term_safe_hexdigits[(cp >> (12 - 4 * i)) & 15];
	return 6;
}

/* One byte, after what is held: it goes on a held sequence, ends it, or
 * breaks it (then what was held comes out escaped and c starts afresh). */
static size_t term_safe_byte(struct term_safe *t, unsigned char c, char *out)
{
	size_t o = 0;
	unsigned char lo, hi;
	if (t->nheld > 0) {
		unsigned char h = t->held[0];
		if (h == '\r') {
			if (c == '\n') {
				t->nheld = 0;
				memcpy(out, "\r\n", 2);
				return 2;
			}
		} else if (h == TERM_SAFE_ESC) {
			bool param = (c >= '0' && c <= '9') || c == ';';
			if (t->nheld > 1 && c == 'm') {
				memcpy(out, t->held, t->nheld);
				o = t->nheld;
				out[o++] = 'm';
				t->nheld = 0;
				return o;
			}
			/* (room is kept for the m) */
			if ((t->nheld == 1 ? c == '[' : param) &&
			    t->nheld < TERM_SAFE_HOLD_MAX - 1) {
				t->held[t->nheld++] = c;
				return 0;
			}
		} else {
			size_t n = term_safe_utf8_len(h, &lo, &hi);
			if (t->nheld == 1 ? c >= lo && c <= hi : (c & 0xc0) == 0x80) {
				t->held[t->nheld++] = c;
				return t->nheld < n ? 0 : term_safe_char(t, out);
			}
		}
		o = term_safe_release(t, out);
	}
	if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || (c == '\r' && t->pass_cr)) {
		out[o++] = (char)c;
	} else if (c == '\r' || c == TERM_SAFE_ESC || term_safe_utf8_len(c, &lo, &hi)) {
		t->held[0] = c;
		t->nheld = 1;
	} else {
		o += term_safe_hex(out + o, c);
	}
	return o;
}

size_t term_safe_feed(struct term_safe *t, const char *in, size_t len, char *out)
{
	const unsigned char *p = (const unsigned char *)in, *end = p + len;
	size_t o = 0;
	while (p < end) {
		/* Plain text, the bulk of output, is copied a run at a time. */
		const unsigned char *run = p;
		while (t->nheld == 0 && p < end &&
		       ((*p >= 0x20 && *p < 0x7f) || *p == '\n' || *p == '\t'))
			p++;
		memcpy(out + o, run, (size_t)(p - run));
		o += (size_t)(p - run);
		if (p < end)
			o += term_safe_byte(t, *p++, out + o);
	}
	return o;
}

size_t term_safe_end(struct term_safe *t, char *out)
{
	return term_safe_release(t, out);
}
