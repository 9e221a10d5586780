/*
 * linebuf.h - newline-delimited lines out of a byte stream, bounded. Pure.
 *
 * A line longer than the cap is skipped up to its newline and reported once,
 * never buffered whole; a "\r\n" ending loses its "\r".
 */
#ifndef PTYBOX_LINEBUF_H
#define PTYBOX_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>

/* A complete line without its newline (NUL-terminated), or, with too_long,
 * the note that a line passed the cap and is being skipped. */
typedef void (*linebuf_cb)(void *data, const char *line, size_t len, bool too_long);

struct linebuf {
	char *buf;
	size_t len, cap, max_line;
	size_t scanned; /* bytes of buf already searched for a newline */
	bool skipping;
};

void linebuf_init(struct linebuf *lb, size_t max_line);
/* Room for at least want more bytes at buf + len: 0 or -ENOMEM. */
int linebuf_reserve(struct linebuf *lb, size_t want);
/* The n bytes just written at buf + len are in: every complete line goes to
 * cb, in order. cb may call linebuf_stop; then the rest is left unsplit. */
void linebuf_commit(struct linebuf *lb, size_t n, linebuf_cb cb, void *data);
/* Copies and splits n bytes: 0 or -ENOMEM. */
int linebuf_feed(struct linebuf *lb, const char *bytes, size_t n, linebuf_cb cb, void *data);
/* The end of the stream: a last line without a newline goes to cb. */
void linebuf_finish(struct linebuf *lb, linebuf_cb cb, void *data);
/* The end of the stream, where a line without its newline is not one: it is
 * dropped unread. Its bytes (0: none, or the rest of a skipped line). */
size_t linebuf_finish_cut(struct linebuf *lb);
void linebuf_free(struct linebuf *lb);

#endif
