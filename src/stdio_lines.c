/*
 * stdio_lines.c - reads newline-delimited requests from a file descriptor.
 *
 * uv_fs_read works on every kind of standard input (pipe, terminal, socket,
 * regular file), where a uv_stream does not take files; reads are issued one
 * at a time, so lines come out in order (split by linebuf.c). An fd that
 * someone made non-blocking (the flag belongs to the open file, shared with
 * whoever gave it to us, so it is not ours to clear) answers EAGAIN: then a
 * uv_poll waits until it is readable, instead of reading again at once.
 */
#include "stdio_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STDIO_READ_CHUNK (256 * 1024)

static void stdio_lines_read(struct stdio_lines *l);

static void stdio_lines_line(void *data, const char *line, size_t len, bool too_long)
{
	struct stdio_lines *l = data;
	l->on_line(l, line, len, too_long);
}

static void stdio_lines_poll_cb(uv_poll_t *h, int status, int events)
{
	struct stdio_lines *l = h->data;
	uv_poll_stop(h);
	if (l->closed)
		return;
	if (status < 0) {
		l->eof = true;
		l->on_eof(l, status);
		return;
	}
	stdio_lines_read(l);
}

/* Nothing to read on a non-blocking fd: read again once it is readable. */
static void stdio_lines_wait(struct stdio_lines *l)
{
	int rc = 0;
	if (!l->poll_open) {
		rc = uv_poll_init(l->loop, &l->poll, l->fd);
		l->poll_open = rc == 0;
		l->poll.data = l;
	}
	if (rc == 0)
		rc = uv_poll_start(&l->poll, UV_READABLE, stdio_lines_poll_cb);
	if (rc < 0) {
		l->eof = true;
		l->on_eof(l, rc);
	}
}

static void stdio_lines_read_cb(uv_fs_t *req)
{
	struct stdio_lines *l = req->data;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	l->reading = false;
	if (l->closed)
		return;
	if (n == UV_EAGAIN) {
		stdio_lines_wait(l);
		return;
	}
	if (n < 0 && n != UV_EINTR) {
		l->eof = true;
		l->on_eof(l, (int)n);
		return;
	}
	if (n == 0) {
		l->eof = true;
		linebuf_finish(&l->lines, stdio_lines_line, l); /* a last line without newline */
		l->on_eof(l, 0);
		return;
	}
	if (n > 0)
		linebuf_commit(&l->lines, (size_t)n, stdio_lines_line, l);
	stdio_lines_read(l);
}

static void stdio_lines_read(struct stdio_lines *l)
{
	if (l->reading || l->eof || l->closed)
		return;
	if (linebuf_reserve(&l->lines, STDIO_READ_CHUNK) < 0) {
		l->eof = true;
		l->on_eof(l, -ENOMEM);
		return;
	}
	uv_buf_t b = uv_buf_init(l->lines.buf + l->lines.len, STDIO_READ_CHUNK);
	l->req.data = l;
	if (uv_fs_read(l->loop, &l->req, l->fd, &b, 1, -1, stdio_lines_read_cb) == 0)
		l->reading = true;
	else {
		l->eof = true;
		l->on_eof(l, -EIO);
	}
}

int stdio_lines_start(struct stdio_lines *l, uv_loop_t *loop, int fd, size_t max_line,
		      stdio_line_cb on_line, stdio_eof_cb on_eof, void *data)
{
	memset(l, 0, sizeof(*l));
	l->loop = loop;
	l->fd = fd;
	linebuf_init(&l->lines, max_line);
	l->on_line = on_line;
	l->on_eof = on_eof;
	l->data = data;
	stdio_lines_read(l);
	return 0;
}

static void stdio_lines_poll_closed_cb(uv_handle_t *h)
{
	struct stdio_lines *l = h->data;
	l->poll_open = false;
}

void stdio_lines_close(struct stdio_lines *l)
{
	l->closed = true;
	if (l->poll_open && !uv_is_closing((uv_handle_t *)&l->poll))
		uv_close((uv_handle_t *)&l->poll, stdio_lines_poll_closed_cb);
}

void stdio_lines_free(struct stdio_lines *l)
{
	linebuf_free(&l->lines);
}
