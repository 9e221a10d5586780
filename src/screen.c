/*
 * screen.c - the screen of one session: what `ptybox capture` and `"render": true` show.
 *
 * The server feeds it a session's transcript (transcript.c: each execution's code as after a
 * prompt, then its output), made from decoded events, never raw PTY bytes. A libvterm terminal
 * interprets them; nothing it wants to answer (DA, DSR) goes anywhere, since a reply would be input
 * typed on the sandbox's behalf.
 *
 * Memory is shaped by the server's budget of 128 KiB per idle session: libvterm keeps about 36
 * bytes per cell (75 KiB at 80x24), so
 *   - a line that scrolls off is kept rendered, as UTF-8 text with SGR sequences, in one buffer
 *     bounded by scrollback_bytes (oldest lines dropped), never as cells;
 *   - screen_shrink lets the terminal go while the session is idle and keeps its picture as
 *     rendered lines; the next feed rebuilds a terminal from them (cursor moves and SGR).
 * Both stores hold only text this file rendered, so the one escape they can contain is our own
 * SGR, and capture without escapes strips it by skipping ESC ... m.
 *
 * libvterm 0.1.4 (Debian 12) has traps that output from the sandbox could spring, found by
 * fuzzing; each is stepped around here and has a unit test: marks combining on one cell without
 * end grow a buffer without bound (a terminal past SCREEN_VT_SLACK is rebuilt from its picture);
 * REP after a zero-width glyph loops forever and a CSI of over 16 arguments writes past its
 * array (screen_feed); a wide character on a one-column screen writes through NULL
 * (screen_new); a UTF-8 character cut between two writes is lost after text (held whole).
 */
#include "screen.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "term_safe.h"
#include "transcript.h"

#define SCREEN_CHUNK	4096
#define SCREEN_CSI_SEPS 15 /* libvterm 0.1.4 keeps 16 CSI arguments */
#define SCREEN_VT_SLACK (64u << 10)
/* Room for one cell's SGR: "\x1b[0;1;3;4;5;7;9;38;2;255;255;255;48;2;255;255;255m". */
#define SCREEN_SGR_MAX 64
/* The rows of screen_render's terminal: lines above it are final, as in a real terminal. */
#define SCREEN_RENDER_ROWS 50

struct screen_buf {
	char *p;
	size_t start, len, cap; /* bytes in use are p[start, len) */
};

struct screen {
	VTerm *vt; /* NULL while shrunk or before the first feed */
	VTermScreen *vs;
	int rows, cols;
	size_t vt_bytes, vt_base; /* libvterm's allocations; after screen_vt_open */
	size_t replies;
	int err; /* -ENOMEM met inside a libvterm callback */
	enum { SCREEN_TEXT, SCREEN_ESC, SCREEN_CSI, SCREEN_DROP } esc; /* screen_feed's scan */
	unsigned seps; /* the ";" and ":" of this CSI */
	char held[4];  /* a UTF-8 character cut at the end of the last feed */
	size_t nheld;

	struct screen_buf sb; /* scrollback: lines, each ending "\n", oldest first */
	size_t sb_limit;
	unsigned long sb_dropped; /* lines the limit dropped */

	/* While vt is NULL: the picture, rows lines each ending "\n" (empty: a blank screen), the
	 * cursor and the pen's SGR. */
	struct screen_buf pic;
	VTermPos cursor;
	char pen[SCREEN_SGR_MAX];
};

/* libvterm dereferences what its allocator returns without a check, so running out of memory
 * here cannot be reported: it is fatal, as STYLE.md has it. Each block carries its size, so
 * that screen_memory can count what libvterm holds. */
static void *screen_vt_malloc(size_t size, void *data)
{
	struct screen *s = data;
	max_align_t *p = calloc(1, sizeof(max_align_t) + size);

	if (p == NULL)
		abort();
	*(size_t *)p = size;
	s->vt_bytes += size;
	return p + 1;
}

static void screen_vt_free(void *ptr, void *data)
{
	struct screen *s = data;
	max_align_t *p = ptr;

	if (p == NULL)
		return;
	s->vt_bytes -= *(size_t *)(p - 1);
	free(p - 1);
}

static VTermAllocatorFunctions screen_vt_alloc = {screen_vt_malloc, screen_vt_free};

/* Appends n bytes; the buffer grows by doubling up to limit (0: no limit). */
static int screen_buf_add(struct screen_buf *b, const char *data, size_t n, size_t limit)
{
	size_t cap;
	char *p;

	if (b->len + n + 1 > b->cap) {
		cap = b->cap * 2 > 256 ? b->cap * 2 : 256;
		if (cap < b->len + n + 1)
			cap = b->len + n + 1;
		if (limit != 0 && cap > limit)
			cap = limit;
		if (cap < b->len + n + 1)
			return -ENOMEM;
		p = realloc(b->p, cap);
		if (p == NULL)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static void screen_buf_free(struct screen_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static size_t screen_color(char *o, const VTermColor *c, int base, bool is_default)
{
	if (is_default)
		return 0;
	if (VTERM_COLOR_IS_RGB(c))
		return (size_t)sprintf(o, ";%d8;2;%u;%u;%u", base / 10, c->rgb.red, c->rgb.green,
				       c->rgb.blue);
	if (c->indexed.idx < 8)
		return (size_t)sprintf(o, ";%d", base + c->indexed.idx);
	if (c->indexed.idx < 16)
		return (size_t)sprintf(o, ";%d", base + 60 + c->indexed.idx - 8);
	return (size_t)sprintf(o, ";%d8;5;%u", base / 10, c->indexed.idx);
}

/* The SGR that sets a cell's look from a reset, or "" for the default look. */
static void screen_sgr(char *o, const VTermScreenCell *c)
{
	size_t n = 0;

	o[n++] = '\x1b';
	o[n++] = '[';
	o[n++] = '0';
	if (c->attrs.bold)
		n += (size_t)sprintf(o + n, ";1");
	if (c->attrs.italic)
		n += (size_t)sprintf(o + n, ";3");
	if (c->attrs.underline)
		n += (size_t)sprintf(o + n,
				     c->attrs.underline == VTERM_UNDERLINE_DOUBLE ? ";21" : ";4");
	if (c->attrs.blink)
		n += (size_t)sprintf(o + n, ";5");
	if (c->attrs.reverse)
		n += (size_t)sprintf(o + n, ";7");
	if (c->attrs.strike)
		n += (size_t)sprintf(o + n, ";9");
	n += screen_color(o + n, &c->fg, 30, VTERM_COLOR_IS_DEFAULT_FG(&c->fg));
	n += screen_color(o + n, &c->bg, 40, VTERM_COLOR_IS_DEFAULT_BG(&c->bg));
	if (n == 3)
		n = 0;
	else
		o[n++] = 'm';
	o[n] = '\0';
}

/* A cell shows nothing: no character, or a space on the default background. */
static bool screen_cell_blank(const VTermScreenCell *c)
{
	return (c->chars[0] == 0 || c->chars[0] == ' ') && !c->attrs.reverse &&
	       VTERM_COLOR_IS_DEFAULT_BG(&c->bg);
}

/* A code point as UTF-8. One that is no character, a control, or one that term_safe hides (C1,
 * bidi controls) is not shown, so that the text is safe on any terminal: as U+FFFD in its own
 * cell, left out where it combines (a U+FFFD there would take a cell when drawn again). */
static size_t screen_utf8(char *o, uint32_t cp, bool combining)
{
	if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
	    term_safe_hidden(cp)) {
		if (combining)
			return 0;
		cp = 0xfffd;
	}
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The colours are the same in what screen_color reads: the type (default flags included), then
 * only the members that type uses (as vterm_color_is_equal, without a call per cell). */
static bool screen_same_color(const VTermColor *a, const VTermColor *b)
{
	if (a->type != b->type)
		return false;
	if (VTERM_COLOR_IS_RGB(a))
		return a->rgb.red == b->rgb.red && a->rgb.green == b->rgb.green &&
		       a->rgb.blue == b->rgb.blue;
	return a->indexed.idx == b->indexed.idx;
}

/* The two cells look the same in what screen_sgr reads. */
static bool screen_same_look(const VTermScreenCell *a, const VTermScreenCell *b)
{
	return a->attrs.bold == b->attrs.bold && a->attrs.italic == b->attrs.italic &&
	       a->attrs.underline == b->attrs.underline && a->attrs.blink == b->attrs.blink &&
	       a->attrs.reverse == b->attrs.reverse && a->attrs.strike == b->attrs.strike &&
	       screen_same_color(&a->fg, &b->fg) && screen_same_color(&a->bg, &b->bg);
}

/* One row of cells as a line: trailing blank cells left out, SGR where the look changes and a
 * reset at the end, then "\n". A cell that looks like the one before it skips formatting its
 * SGR: a 20 MB print loop renders every line that scrolls off, and spent more there than in
 * the text. */
static int screen_render_row(struct screen_buf *b, const VTermScreenCell *cells, int n,
			     size_t limit)
{
	char cur[SCREEN_SGR_MAX] = "", sgr[SCREEN_SGR_MAX], ch[4 * VTERM_MAX_CHARS_PER_CELL];
	const VTermScreenCell *prev = NULL; /* the cell whose look cur is */
	size_t k;
	int end = n, err;

	while (end > 0 && screen_cell_blank(&cells[end - 1]))
		end--;
	for (int i = 0; i < end; i++) {
		const VTermScreenCell *c = &cells[i];
		if (c->chars[0] == (uint32_t)-1) /* the right half of a wide character */
			continue;
		if (!prev || !screen_same_look(prev, c)) {
			prev = c;
			screen_sgr(sgr, c);
			if (strcmp(sgr, cur) != 0) {
				err = screen_buf_add(b, sgr[0] ? sgr : "\x1b[0m",
						     sgr[0] ? strlen(sgr) : 4, limit);
				if (err < 0)
					return err;
				memcpy(cur, sgr, sizeof(cur));
			}
		}
		k = 0;
		if (c->chars[0] == 0)
			ch[k++] = ' ';
		for (int j = 0; j < VTERM_MAX_CHARS_PER_CELL && c->chars[j] != 0; j++)
			k += screen_utf8(ch + k, c->chars[j], j > 0);
		err = screen_buf_add(b, ch, k, limit);
		if (err < 0)
			return err;
	}
	if (cur[0])
		return screen_buf_add(b, "\x1b[0m\n", 5, limit);
	return screen_buf_add(b, "\n", 1, limit);
}

/* A line that scrolled off the top goes to the scrollback, oldest lines dropped to make room;
 * a line longer than the whole scrollback is dropped itself. */
static int screen_sb_pushline_cb(int cols, const VTermScreenCell *cells, void *user)
{
	struct screen *s = user;
	struct screen_buf line = {0};
	char *nl;
	int err;

	if (s->sb_limit == 0)
		return 1;
	err = screen_render_row(&line, cells, cols, 0);
	if (err < 0) {
		s->err = err;
		return 1;
	}
	if (line.len > s->sb_limit) {
		s->sb_dropped++;
		goto out;
	}
	/* Full: the oldest lines go until a quarter is free, and the rest moves down once, so
	 * that moving costs O(1) per byte kept, not O(scrollback) per line. */
	if (s->sb.len - s->sb.start + line.len > s->sb_limit) {
		while (s->sb.len > s->sb.start &&
		       s->sb.len - s->sb.start + line.len > s->sb_limit / 4 * 3) {
			nl = memchr(s->sb.p + s->sb.start, '\n', s->sb.len - s->sb.start);
			s->sb.start = (size_t)(nl + 1 - s->sb.p);
			s->sb_dropped++;
		}
		memmove(s->sb.p, s->sb.p + s->sb.start, s->sb.len - s->sb.start);
		s->sb.len -= s->sb.start;
		s->sb.start = 0;
	}
	err = screen_buf_add(&s->sb, line.p, line.len, s->sb_limit + 1);
	if (err < 0)
		s->err = err;
out:
	screen_buf_free(&line);
	return 1;
}

/* Replies to queries are counted and dropped. */
static void screen_output_cb(const char *bytes, size_t len, void *user)
{
	struct screen *s = user;

	s->replies += len;
}

static const VTermScreenCallbacks screen_vt_callbacks = {
	.sb_pushline = screen_sb_pushline_cb,
};

/* The visible rows as lines, into b. */
static int screen_render_visible(struct screen *s, struct screen_buf *b)
{
	VTermScreenCell *cells = calloc((size_t)s->cols, sizeof(*cells));
	int err = 0;

	if (cells == NULL)
		return -ENOMEM;
	for (int r = 0; r < s->rows && err == 0; r++) {
		for (int c = 0; c < s->cols; c++)
			vterm_screen_get_cell(s->vs, (VTermPos){r, c}, &cells[c]);
		err = screen_render_row(b, cells, s->cols, 0);
	}
	free(cells);
	return err;
}

/* libvterm 0.1.4 loses a UTF-8 character cut between two writes when text comes before it in
 * the first: writes are cut before a character, never inside one. */
static void screen_vt_write(struct screen *s, const char *p, size_t n)
{
	while (n > 0) {
		size_t k = n < SCREEN_CHUNK ? n : SCREEN_CHUNK;
		for (size_t j = 0; j < 3 && k < n && k > 1 && ((unsigned char)p[k] & 0xc0) == 0x80;
		     j++)
			k--;
		vterm_input_write(s->vt, p, k);
		p += k;
		n -= k;
	}
}

/* A terminal, with the picture drawn back if there is one. */
static void screen_vt_open(struct screen *s)
{
	char cup[32];
	const char *line = s->pic.p != NULL ? s->pic.p : "", *end = line + s->pic.len, *nl;

	s->vt_bytes = 0;
	s->esc = SCREEN_TEXT;
	s->vt = vterm_new_with_allocator(s->rows, s->cols, &screen_vt_alloc, s);
	vterm_set_utf8(s->vt, 1);
	vterm_output_set_callback(s->vt, screen_output_cb, s);
	s->vs = vterm_obtain_screen(s->vt);
	/* No alternate screen: it would cost a second set of cells, and what a full-screen program
	 * draws there belongs in the capture. */
	vterm_screen_set_callbacks(s->vs, &screen_vt_callbacks, s);
	vterm_screen_reset(s->vs, 1);
	/* Without autowrap, since a row libvterm 0.1.4 renders wider than the screen (a wide
	 * character whose right half was written over keeps its width) must not scroll. */
	vterm_input_write(s->vt, "\x1b[?7l", 5);
	for (int r = 0; r < s->rows; r++) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (nl == NULL)
			break;
		vterm_input_write(s->vt, cup, (size_t)sprintf(cup, "\x1b[%d;1H", r + 1));
		screen_vt_write(s, line, (size_t)(nl - line));
		line = nl + 1;
	}
	vterm_input_write(s->vt, "\x1b[?7h", 5);
	vterm_input_write(
		s->vt, cup,
		(size_t)sprintf(cup, "\x1b[%d;%dH", s->cursor.row + 1, s->cursor.col + 1));
	vterm_input_write(s->vt, s->pen, strlen(s->pen));
	screen_buf_free(&s->pic);
	s->vt_base = s->vt_bytes;
}

static void screen_vt_close(struct screen *s)
{
	vterm_free(s->vt);
	s->vt = NULL;
	s->vs = NULL;
}

int screen_new(struct screen **out, unsigned rows, unsigned cols, size_t scrollback_bytes)
{
	struct screen *s;

	*out = NULL;
	if (rows == 0 || rows > SCREEN_ROWS_MAX || cols < 2 || cols > SCREEN_COLS_MAX ||
	    scrollback_bytes > SCREEN_SCROLLBACK_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->rows = (int)rows;
	s->cols = (int)cols;
	s->sb_limit = scrollback_bytes;
	*out = s;
	return 0;
}

void screen_free(struct screen *s)
{
	if (s == NULL)
		return;
	if (s->vt != NULL)
		screen_vt_close(s);
	screen_buf_free(&s->sb);
	screen_buf_free(&s->pic);
	free(s);
}

int screen_shrink(struct screen *s)
{
	struct screen_buf pic = {0};
	VTermScreenCell pen = {0};
	VTermState *st;
	VTermValue v;
	int err;

	if (s->vt == NULL)
		return 0;
	err = screen_render_visible(s, &pic);
	if (err < 0) {
		screen_buf_free(&pic);
		return err;
	}
	st = vterm_obtain_state(s->vt);
	vterm_state_get_cursorpos(st, &s->cursor);
	vterm_state_get_penattr(st, VTERM_ATTR_BOLD, &v);
	pen.attrs.bold = v.boolean != 0;
	vterm_state_get_penattr(st, VTERM_ATTR_UNDERLINE, &v);
	pen.attrs.underline = (unsigned)v.number & 3;
	vterm_state_get_penattr(st, VTERM_ATTR_ITALIC, &v);
	pen.attrs.italic = v.boolean != 0;
	vterm_state_get_penattr(st, VTERM_ATTR_BLINK, &v);
	pen.attrs.blink = v.boolean != 0;
	vterm_state_get_penattr(st, VTERM_ATTR_REVERSE, &v);
	pen.attrs.reverse = v.boolean != 0;
	vterm_state_get_penattr(st, VTERM_ATTR_STRIKE, &v);
	pen.attrs.strike = v.boolean != 0;
	vterm_state_get_penattr(st, VTERM_ATTR_FOREGROUND, &v);
	pen.fg = v.color;
	vterm_state_get_penattr(st, VTERM_ATTR_BACKGROUND, &v);
	pen.bg = v.color;
	screen_sgr(s->pen, &pen);
	screen_vt_close(s);
	s->pic = pic;
	return 0;
}

/* Writes n bytes to the terminal, opening it first if need be. */
static int screen_write(struct screen *s, const char *p, size_t n)
{
	if (s->vt == NULL)
		screen_vt_open(s);
	s->err = 0;
	screen_vt_write(s, p, n);
	if (s->vt_bytes > s->vt_base + SCREEN_VT_SLACK) {
		int err = screen_shrink(s);
		if (err < 0)
			return err;
		screen_vt_open(s);
	}
	return s->err;
}

/* The bytes of the UTF-8 sequence that lead byte c starts (1: c starts none). */
static size_t screen_utf8_need(unsigned char c)
{
	return c > 0xf4 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
}

/* Output as a terminal behind pipes shows it, with three changes on the way to libvterm: a LF
 * becomes CR LF (a tty's onlcr); a CSI with SCREEN_CSI_SEPS separators or more is cut off by a
 * CAN there and the rest of it dropped (libvterm 0.1.4 writes past its 16 arguments and
 * crashes); and the final "b" of every CSI becomes "y", which libvterm ignores. libvterm 0.1.4
 * carries out REP (CSI Ps b) by stepping the last glyph's width, and loops forever when that width
 * is 0 or -1 (nothing printed yet, U+200B, a C1 code printed as a glyph): REP is lost, and no
 * output can hang the server. The scan follows ESC [ through anything but ESC, CAN, SUB and a final
 * byte, so it sees every CSI libvterm sees; where it sees one libvterm does not (inside an OSC
 * string), a "b" of that string changes, which is harmless. */
int screen_feed(struct screen *s, const char *bytes, size_t len)
{
	size_t start = 0;
	int err = 0;

	if (s->vt == NULL)
		screen_vt_open(s); /* first: opening resets the scan */
	/* The end of a character held from the last feed completes it in one write. */
	while (s->nheld > 0 && len > 0 && ((unsigned char)*bytes & 0xc0) == 0x80 &&
	       s->nheld < screen_utf8_need(s->held[0])) {
		s->held[s->nheld++] = *bytes++;
		len--;
	}
	if (s->nheld > 0 && (len > 0 || s->nheld == screen_utf8_need(s->held[0]))) {
		screen_vt_write(s, s->held, s->nheld);
		s->nheld = 0;
	}
	for (size_t i = 0; i < len && err == 0; i++) {
		unsigned char c = (unsigned char)bytes[i];
		const char *instead = NULL;
		if (c == '\n') {
			instead = "\r\n"; /* in a CSI too, where a control is carried out */
		} else if (s->esc == SCREEN_ESC) {
			/* Only a final byte ends an ESC sequence: libvterm takes "[" as CSI
			 * after C0 controls, DEL, intermediates and bytes past 0x7f too (ESC NUL [,
			 * ESC ! [, ESC 0xff [). */
			if (c == '[')
				s->esc = SCREEN_CSI;
			else if (c == 0x18 || c == 0x1a || (c >= 0x30 && c <= 0x7e))
				s->esc = SCREEN_TEXT;
			s->seps = 0;
		} else if (s->esc == SCREEN_CSI || s->esc == SCREEN_DROP) {
			bool drop = s->esc == SCREEN_DROP;
			if (c == 0x1b)
				s->esc = SCREEN_ESC;
			else if (c == 0x18 || c == 0x1a || (c >= 0x40 && c <= 0x7e))
				s->esc = SCREEN_TEXT;
			else if ((c == ';' || c == ':') && ++s->seps >= SCREEN_CSI_SEPS)
				s->esc = SCREEN_DROP;
			if (s->esc == SCREEN_DROP && !drop)
				instead = "\x18"; /* CAN: libvterm ends the CSI */
			else if (drop && s->esc != SCREEN_ESC)
				instead = "";
			else if (c == 'b')
				instead = "y";
		} else if (c == 0x1b) {
			s->esc = SCREEN_ESC;
		}
		if (instead != NULL) {
			err = screen_write(s, bytes + start, i - start);
			if (err == 0)
				err = screen_write(s, instead, strlen(instead));
			start = i + 1;
		}
	}
	/* A character cut at the end waits for the rest. */
	for (size_t back = 1; err == 0 && back <= 3 && back <= len - start; back++) {
		unsigned char c = (unsigned char)bytes[len - back];
		if ((c & 0xc0) == 0x80)
			continue;
		if (c >= 0xc0 && back < screen_utf8_need(c)) {
			memcpy(s->held, bytes + len - back, back);
			s->nheld = back;
			len -= back;
		}
		break;
	}
	if (err == 0)
		err = screen_write(s, bytes + start, len - start);
	return err;
}

int screen_feed_input(struct screen *s, const char *code, size_t len)
{
	VTermPos pos;
	char *buf = malloc(TRANSCRIPT_INPUT_MAX(len));
	int err;

	if (buf == NULL)
		return -ENOMEM;
	if (s->vt == NULL)
		screen_vt_open(s);
	vterm_state_get_cursorpos(vterm_obtain_state(s->vt), &pos);
	err = screen_feed(s, buf, transcript_input_format(code, len, pos.col == 0, buf));
	free(buf);
	return err;
}

/* Copies lines into out, without the SGR if !escapes (then trailing spaces that only a colour
 * showed go too). */
static int screen_copy(struct screen_buf *out, const char *p, size_t n, bool escapes)
{
	const char *end = p + n, *nl, *esc;
	int err = 0;

	if (escapes)
		return screen_buf_add(out, p, n, 0);
	while (p < end && err == 0) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t line = out->len;
		while (p < nl && err == 0) {
			esc = memchr(p, '\x1b', (size_t)(nl - p));
			if (esc == NULL)
				esc = nl;
			err = screen_buf_add(out, p, (size_t)(esc - p), 0);
			p = esc;
			if (p < nl)
				p = (const char *)memchr(p, 'm', (size_t)(nl - p)) + 1;
		}
		while (out->len > line && out->p[out->len - 1] == ' ')
			out->len--;
		if (err == 0)
			err = screen_buf_add(out, "\n", 1, 0);
		p = nl + 1;
	}
	return err;
}

int screen_capture(struct screen *s, bool escapes, long start, char **out, size_t *len)
{
	struct screen_buf o = {0}, vis = {0}, *v = &vis;
	const char *sb = s->sb.p != NULL ? s->sb.p + s->sb.start : "", *p;
	size_t sb_len = s->sb.len - s->sb.start;
	int err = 0;

	*out = NULL;
	*len = 0;
	if (s->vt != NULL)
		err = screen_render_visible(s, &vis);
	else
		v = &s->pic;
	if (err < 0)
		goto fail;
	/* Where the lines from start begin: back through the scrollback, or down the screen. */
	if (start < 0) {
		size_t at = sb_len;
		for (unsigned long k = 0ul - (unsigned long)start; at > 0 && k > 0; k--) {
			at--; /* onto the "\n" that ends the line before */
			while (at > 0 && sb[at - 1] != '\n')
				at--;
		}
		err = screen_copy(&o, sb + at, sb_len - at, escapes);
		start = 0;
	}
	p = v->p != NULL ? v->p + v->start : "";
	for (; start > 0 && *p != '\0'; start--)
		p = strchr(p, '\n') + 1;
	if (err == 0)
		err = screen_copy(&o, p, v->p != NULL ? v->len - (size_t)(p - v->p) : 0, escapes);
	if (err == 0)
		err = screen_buf_add(&o, "", 0, 0); /* NUL-terminated even when empty */
	if (err < 0)
		goto fail;
	while (o.len > 0 && o.p[o.len - 1] == '\n' && (o.len == 1 || o.p[o.len - 2] == '\n'))
		o.len--;
	o.p[o.len] = '\0';
	screen_buf_free(&vis);
	*out = o.p;
	*len = o.len;
	return 0;
fail:
	screen_buf_free(&vis);
	screen_buf_free(&o);
	return err;
}

size_t screen_memory(const struct screen *s)
{
	return sizeof(*s) + s->vt_bytes + s->sb.cap + s->pic.cap;
}

size_t screen_replies_dropped(const struct screen *s)
{
	return s->replies;
}

size_t screen_render_rows(const char *b, size_t len, unsigned cols, size_t max)
{
	size_t rows = 0, col = 0;
	for (size_t i = 0; i < len && rows <= max; i++) {
		unsigned char c = (unsigned char)b[i];
		if (c == '\n' || c == '\v' || c == '\f') {
			rows++;
			col = 0;
		} else if (c == '\r') {
			col = 0;
		} else if (c == '\t') {
			col = (col / 8 + 1) * 8;
		} else if (c == 0x1b && i + 1 < len && b[i + 1] && strchr("DEM", b[i + 1])) {
			rows++; /* (IND, NEL, RI) */
			i++;
		} else if (c == 0x1b && i + 1 < len && b[i + 1] == '#') {
			rows += SCREEN_RENDER_ROWS; /* (DECALN fills the screen) */
			i = i + 2 < len ? i + 2 : len;
		} else if (c == 0x1b && i + 1 < len && b[i + 1] == '[') {
			size_t j = i + 2, n = 0, mode = 0;
			bool digits = false, private = j < len && b[j] == '?';
			while (j < len && (unsigned char)b[j] >= 0x20 &&
			       (unsigned char)b[j] < 0x40) {
				if (b[j] >= '0' && b[j] <= '9' && n < SCREEN_RENDER_ROWS) {
					n = n * 10 + (size_t)(b[j] - '0');
					digits = true;
				}
				if (b[j] >= '0' && b[j] <= '9' && mode < 100000)
					mode = mode * 10 + (size_t)(b[j] - '0');
				else if (b[j] == ';')
					mode = 0; /* (the last mode of a list) */
				j++;
			}
			if (j < len && b[j] && strchr("STLM", b[j]))
				rows += !digits || n == 0	 ? 1
					: n > SCREEN_RENDER_ROWS ? SCREEN_RENDER_ROWS
								 : n;
			/* What erases or moves cells without scrolling costs as
			 * much: the display (ED, and the alternate screen's
			 * switch) as a screen of rows, a line's part (EL, ICH,
			 * DCH, ECH) as a row (review2-4: 1 MB of ESC [ 2 J counted
			 * none and stalled the loop 1.7 s). */
			else if (j < len && b[j] == 'J')
				rows += SCREEN_RENDER_ROWS;
			else if (j < len && b[j] && strchr("K@PX", b[j]))
				rows++;
			else if (j < len && (b[j] == 'h' || b[j] == 'l') && private &&
				 (mode == 47 || mode == 1047 || mode == 1049))
				rows += SCREEN_RENDER_ROWS;
			i = j < len ? j : len;
		} else if (c >= 0x20 && (c < 0x80 || c >= 0xC0)) {
			col += c >= 0xE1 ? 2 : 1; /* (a character; a wide one may take two) */
		}
		if (col >= cols) {
			rows++; /* (it wraps) */
			col -= cols;
		}
	}
	return rows;
}

int screen_render(const char *bytes, size_t len, unsigned cols, bool escapes, char **out,
		  size_t *olen)
{
	struct screen *s;
	char *text, *all, head[64];
	size_t n, hn = 0;
	int err;

	*out = NULL;
	*olen = 0;
	if (len > SCREEN_RENDER_IN_MAX)
		return -E2BIG;
	err = screen_new(&s, SCREEN_RENDER_ROWS, cols, SCREEN_RENDER_OUT_MAX);
	if (err < 0)
		return err;
	err = screen_feed(s, bytes, len);
	if (err == 0)
		err = screen_capture(s, escapes, LONG_MIN, &text, &n);
	if (err == 0 && s->sb_dropped > 0) {
		hn = (size_t)snprintf(head, sizeof(head), "[ptybox: %lu lines dropped]\n",
				      s->sb_dropped);
		all = malloc(hn + n + 1);
		if (all == NULL) {
			free(text);
			err = -ENOMEM;
		} else {
			memcpy(all, head, hn);
			memcpy(all + hn, text, n + 1);
			free(text);
			text = all;
		}
	}
	screen_free(s);
	if (err < 0)
		return err;
	*out = text;
	*olen = hn + n;
	return 0;
}
