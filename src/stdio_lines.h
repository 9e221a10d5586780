/* stdio_lines.h - newline-delimited lines from a file descriptor, on libuv. */
#ifndef PTYBOX_STDIO_LINES_H
#define PTYBOX_STDIO_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "linebuf.h"

struct stdio_lines;
/* A complete line without its newline (NUL-terminated), or, with too_long,
 * the note that a line passed the cap and was skipped. */
typedef void (*stdio_line_cb)(struct stdio_lines *l, const char *line, size_t len, bool too_long);
typedef void (*stdio_eof_cb)(struct stdio_lines *l, int err);

struct stdio_lines {
	uv_loop_t *loop;
	int fd;
	uv_fs_t req;
	uv_poll_t poll; /* readability of a non-blocking fd, once a read said EAGAIN */
	struct linebuf lines;
	bool reading, paused, eof;
	bool poll_open, closed;
	stdio_line_cb on_line;
	stdio_eof_cb on_eof;
	void *data;
};

int stdio_lines_start(struct stdio_lines *l, uv_loop_t *loop, int fd, size_t max_line,
		      stdio_line_cb on_line, stdio_eof_cb on_eof, void *data);
/* No callback after this; the poll handle, if one was needed, closes. A read
 * already in flight still ends (reading): free only once it has. */
void stdio_lines_close(struct stdio_lines *l);
/* After stdio_lines_close, once the loop ran its close callbacks. */
void stdio_lines_free(struct stdio_lines *l);

#endif
