/*
 * screen.h - the screen of one session, as `ptybox capture` shows it: a libvterm terminal fed
 * with the session's transcript (each execution's code as after a prompt, then its output), and
 * a bounded scrollback of rendered lines. Pure: bytes in, text out, no I/O.
 */
#ifndef PTYBOX_SCREEN_H
#define PTYBOX_SCREEN_H

#include <stdbool.h>
#include <stddef.h>

/* The largest screen screen_new accepts. */
#define SCREEN_ROWS_MAX 500
#define SCREEN_COLS_MAX 1000
/* The most scrollback screen_new accepts, in bytes of rendered text. */
#define SCREEN_SCROLLBACK_MAX (16u << 20)
/* The memory one idle 80x24 screen holds after screen_shrink, its scrollback aside (the unit
 * tests hold the module to it); before screen_shrink, libvterm's cells cost about 75 KiB. */
#define SCREEN_IDLE_BUDGET (8u << 10)

/* screen_render: input past SCREEN_RENDER_IN_MAX bytes is -E2BIG; the text it gives keeps the
 * last SCREEN_RENDER_OUT_MAX bytes of rendered lines, after a line that says how many it
 * dropped. */
#define SCREEN_RENDER_IN_MAX  (64u << 20)
#define SCREEN_RENDER_OUT_MAX (4u << 20)

struct screen;

/* A blank screen of rows x cols (1..SCREEN_ROWS_MAX, 2..SCREEN_COLS_MAX: libvterm 0.1.4 writes
 * through NULL for a wide character on a screen one column wide) whose scrollback keeps
 * up to scrollback_bytes (at most SCREEN_SCROLLBACK_MAX) of rendered lines: when full, the
 * oldest go until a quarter is free. Returns 0, -EINVAL or -ENOMEM. */
int screen_new(struct screen **out, unsigned rows, unsigned cols, size_t scrollback_bytes);
void screen_free(struct screen *s);

/* Terminal output, as a terminal behind pipes shows it: a bare LF also returns to column 0 (a
 * tty's onlcr). Sequences may be cut anywhere between two calls. Queries (DA, DSR, ...) get no
 * reply: nothing is ever answered on the sandbox's behalf. REP (CSI Ps b) is ignored and a CSI
 * of 15 separators or more cut off, since libvterm 0.1.4 hangs or crashes on them. Returns 0 or
 * -ENOMEM. */
int screen_feed(struct screen *s, const char *bytes, size_t len);
/* An execution's code as the Python REPL echoes it: on a line of its own, ">>> " before the
 * first line and "... " before each next one, then a newline. Control characters in the code
 * show as ^X, as a tty's echoctl shows them, so the code cannot draw on the screen. Returns 0
 * or -ENOMEM. */
int screen_feed_input(struct screen *s, const char *code, size_t len);

/* The screen as text, like `tmux capture-pane -p [-e] [-S start]`: rows from start to the
 * screen's last row, a row per line ending in "\n". start >= 0 is a row of the visible screen;
 * start < 0 reaches that many lines back into the scrollback (LONG_MIN: all of it). Trailing
 * blank cells of each line and blank lines at the end are left out. With escapes, colours and
 * attributes are SGR sequences, reset at each line's end; no other control character than "\n"
 * is ever in the text. *out is NUL-terminated, the caller frees it. Returns 0 or -ENOMEM. */
int screen_capture(struct screen *s, bool escapes, long start, char **out, size_t *len);

/* The session is idle: the terminal is let go and its picture kept as rendered lines (a few
 * KiB), to be rebuilt from them by the next feed. What is not in the picture is lost: modes
 * (scroll region, insert, origin), charsets, tab stops, a sequence cut in the middle. Call it
 * between executions only. Returns 0 or -ENOMEM (the screen is then as it was). */
int screen_shrink(struct screen *s);
/* The bytes the screen holds: its own allocations and libvterm's, counted as asked for. */
size_t screen_memory(const struct screen *s);
/* Bytes libvterm wanted to send back (replies to queries), all dropped. For tests. */
size_t screen_replies_dropped(const struct screen *s);

/* A result's output as a screen cols wide shows it (`"render": true`): every line kept, a
 * progress bar redrawn with "\r" a thousand times as one line in its last state. Bounded by
 * SCREEN_RENDER_IN_MAX and SCREEN_RENDER_OUT_MAX. *out is NUL-terminated, the caller frees it.
 * Returns 0, -EINVAL (cols), -E2BIG (len) or -ENOMEM. */
int screen_render(const char *bytes, size_t len, unsigned cols, bool escapes, char **out,
		  size_t *olen);
/* What screen_render's work on bytes grows with, at most: the rows its terminal scrolls or
 * moves (~7 us each with libvterm 0.1.4, and 50 under ASan): a newline, each cols columns of a
 * line, an escape sequence that scrolls (IND, NEL, RI; SU, SD, IL, DL by their count, up to the
 * screen's height). Counted up to past max only. A caller on a loop bounds it (hostile-9). */
size_t screen_render_rows(const char *bytes, size_t len, unsigned cols, size_t max);

#endif
