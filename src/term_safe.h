/*
 * term_safe.h - text from the sandbox made safe to show on a terminal.
 * Pure and incremental: bytes in, bytes out, a sequence split across two
 * writes is held until it is whole.
 */
#ifndef PTYBOX_TERM_SAFE_H
#define PTYBOX_TERM_SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest SGR sequence passed, ESC [ and m included ("38;2;R;G;B" for
 * both colours fits); a longer one is shown escaped. Also the most bytes held
 * between two writes. */
#define TERM_SAFE_HOLD_MAX 48
/* The room out needs for term_safe_feed of len bytes (len 0: term_safe_end).
 * One byte shows as four at most (\xNN); held bytes come out with it. */
#define TERM_SAFE_OUT_MAX(len) (4 * ((size_t)(len) + TERM_SAFE_HOLD_MAX))

struct term_safe {
	unsigned char held[TERM_SAFE_HOLD_MAX]; /* the start of an unfinished sequence */
	size_t nheld;
	bool pass_cr; /* a CR alone passes (see term_safe_pass_cr) */
};

void term_safe_init(struct term_safe *t);
/* From now on a CR alone passes as it is: a progress bar redraws its line
 * (--tty, where the user asked for the terminal's behaviour). It moves the
 * cursor to the start of the line and nothing else: it can overwrite what
 * this line showed, never another line, a title or the clipboard. */
void term_safe_pass_cr(struct term_safe *t);
/* Filters len bytes of in into out (room: TERM_SAFE_OUT_MAX(len)); returns
 * the bytes written. Printable UTF-8, newline, tab, CR LF and SGR colour
 * sequences pass; any other byte shows as \xNN (ESC as \x1b, a CR alone as
 * \x0d, an invalid UTF-8 byte as itself), and a character that
 * term_safe_hidden names as \uXXXX. */
size_t term_safe_feed(struct term_safe *t, const char *in, size_t len, char *out);
/* The text ends: what is held comes out escaped (room: TERM_SAFE_OUT_MAX(0)),
 * and t is fresh again. */
size_t term_safe_end(struct term_safe *t, char *out);
/* Whether code point cp, valid UTF-8 though it may be, is shown escaped: the
 * C1 controls U+0080..U+009F (a terminal may act on them), and the bidi
 * controls U+061C, U+200E, U+200F, U+202A..U+202E and U+2066..U+2069 (they
 * reorder what is shown, so that text reads otherwise than it is). */
bool term_safe_hidden(uint32_t cp);

#endif
