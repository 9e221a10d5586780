/*
 * conn.c - a client's connection: lines in through linebuf, lines out through
 * uv_try_write and, for what the kernel did not take, a queue bounded in bytes.
 */
#define _GNU_SOURCE
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_READ_CHUNK (64 * 1024)
#define CONN_PIPE_SIZE	(1024 * 1024) /* bytes an output pipe holds, if the system lets us */

struct conn_write {
	uv_write_t req;
	char *buf;
	size_t len;
};

static void conn_drop(struct conn *c, const char *why);

void conn_abort(struct conn *c, const char *why)
{
	conn_drop(c, why);
}

void conn_abort_saying(struct conn *c, char *line, size_t len, const char *why)
{
	if (line && c->has_pipe && !c->finished && !c->writes) {
		uv_buf_t b = uv_buf_init(line, (unsigned)len);
		(void)uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
	}
	free(line);
	conn_drop(c, why);
}

void conn_set_budget(struct conn *c, struct conn_budget *b)
{
	c->budget = b;
}

/* Its line's bytes counted anew in the budget: false when they grew past it. */
static bool conn_count(struct conn *c)
{
	struct conn_budget *b = c->budget;
	if (!b)
		return true;
	size_t now = c->lines.len; /* (0 while a line past the cap is skipped) */
	bool grew = now > c->counted;
	b->used = b->used - c->counted + now;
	c->counted = now;
	return !grew || b->used <= b->max;
}

/* No more input: the line buffer and its share of the budget go (not while
 * linebuf is calling back: its caller frees them once it returns). */
static void conn_lines_release(struct conn *c)
{
	if (c->in_read)
		return;
	if (c->budget)
		c->budget->used -= c->counted;
	c->counted = 0;
	linebuf_free(&c->lines);
}

static void conn_closed_cb(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (c->cb) /* (NULL: it never opened, nobody to tell) */
		c->cb->on_close(c, c->why);
	conn_lines_release(c);
	free(c);
}

static void conn_finish(struct conn *c)
{
	if (c->finished)
		return;
	c->finished = true;
	if (c->has_pipe) {
		if (!uv_is_closing((uv_handle_t *)&c->pipe))
			uv_close((uv_handle_t *)&c->pipe, conn_closed_cb);
		return;
	}
	/* Never inside conn_send: its caller may be walking a list that on_close
	 * frees (the server's waiters), so on_close comes on the next loop turn. */
	uv_timer_init(c->loop, &c->later);
	c->later.data = c;
	uv_close((uv_handle_t *)&c->later, conn_closed_cb);
}

static void conn_set_why(struct conn *c, const char *why)
{
	if (!c->why[0])
		snprintf(c->why, sizeof(c->why), "%s", why);
}

void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	c->closing = true;
	conn_set_why(c, why);
	if (c->reading)
		uv_read_stop((uv_stream_t *)&c->pipe);
	c->reading = false;
	conn_lines_release(c);
	if (!c->writes) /* else the last write's callback finishes */
		conn_finish(c);
}

/* Dropped now, whatever is queued: a client that does not read. */
static void conn_drop(struct conn *c, const char *why)
{
	if (c->finished)
		return;
	conn_set_why(c, why);
	c->closing = true;
	if (c->reading)
		uv_read_stop((uv_stream_t *)&c->pipe);
	c->reading = false;
	conn_lines_release(c);
	conn_finish(c); /* (uv_close cancels the writes in flight) */
}

static void conn_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct conn *c = h->data;
	if (linebuf_reserve(&c->lines, CONN_READ_CHUNK) < 0) {
		*b = uv_buf_init(NULL, 0); /* read_cb gets UV_ENOBUFS */
		return;
	}
	*b = uv_buf_init(c->lines.buf + c->lines.len, CONN_READ_CHUNK);
}

static void conn_line(void *data, const char *line, size_t len, bool too_long)
{
	struct conn *c = data;
	if (!c->closing)
		c->cb->on_line(c, line, len, too_long);
}

static void conn_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = s->data;
	if (n > 0) {
		c->in_read = true;
		linebuf_commit(&c->lines, (size_t)n, conn_line, c);
		c->in_read = false;
		if (c->closing) {
			conn_lines_release(c);
		} else if (!conn_count(c)) {
			char why[160];
			snprintf(why, sizeof(why),
				 "dropped: its unfinished request line (%zu MiB) passed the %zu "
				 "MiB that the server holds for all clients' unfinished lines",
				 c->lines.len >> 20, c->budget->max >> 20);
			conn_lines_release(c);
			if (c->cb->on_over_budget)
				c->cb->on_over_budget(c, why);
			else
				conn_drop(c, why);
		}
		return;
	}
	if (n == 0)
		return;
	if (n == UV_EOF) {
		c->in_read = true;
		if (!c->cb->on_cut) {
			linebuf_finish(&c->lines, conn_line, c);
		} else {
			/* A line without its newline is as good as cut: never parsed,
			 * nor megabytes of it read on the loop. */
			size_t cut = linebuf_finish_cut(&c->lines);
			if (cut && !c->closing)
				c->cb->on_cut(c, cut);
		}
		c->in_read = false;
		conn_lines_release(c);
		if (c->cb->on_eof && !c->closing) { /* (a half-close: replies may still go) */
			uv_read_stop(s);
			c->reading = false;
			c->cb->on_eof(c);
		} else {
			conn_close(c, "end of input");
		}
		return;
	}
	char why[96];
	snprintf(why, sizeof(why), "read: %s", uv_strerror((int)n));
	conn_drop(c, why);
}

static struct conn *conn_alloc(uv_loop_t *loop, size_t max_line, size_t max_queue,
			       const struct conn_callbacks *cb, void *data)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->loop = loop;
	c->out_fd = -1;
	c->max_queue = max_queue;
	c->cb = cb;
	c->data = data;
	linebuf_init(&c->lines, max_line);
	return c;
}

/* A connection read at once: accepted on server, or opened on fd. */
static int conn_reader(uv_loop_t *loop, uv_stream_t *server, int fd, size_t max_line,
		       size_t max_queue, const struct conn_callbacks *cb, void *data,
		       struct conn **out)
{
	struct conn *c = conn_alloc(loop, max_line, max_queue, cb, data);
	if (!c)
		return -ENOMEM;
	int rc = uv_pipe_init(loop, &c->pipe, 0);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->has_pipe = true;
	c->pipe.data = c;
	rc = server ? uv_accept(server, (uv_stream_t *)&c->pipe) : uv_pipe_open(&c->pipe, fd);
	uv_os_fd_t sfd;
	if (rc == 0 && server && uv_fileno((uv_handle_t *)&c->pipe, &sfd) == 0) {
		/* As for a pipe (conn_open_output): a big result in few wake-ups. The
		 * system caps it (wmem_max); the kernel holds it only while the client
		 * does not read, and the queue behind it is ours, bounded. */
		int size = CONN_PIPE_SIZE;
		(void)setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	}
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&c->pipe, conn_alloc_cb, conn_read_cb);
	if (rc < 0) {
		c->cb = NULL; /* (never opened: nobody to tell) */
		uv_close((uv_handle_t *)&c->pipe, conn_closed_cb);
		return rc;
	}
	c->reading = true;
	*out = c;
	return 0;
}

int conn_accept(uv_stream_t *server, size_t max_line, size_t max_queue,
		const struct conn_callbacks *cb, void *data, struct conn **out)
{
	return conn_reader(server->loop, server, -1, max_line, max_queue, cb, data, out);
}

int conn_open_output(uv_loop_t *loop, int fd, size_t max_queue, const struct conn_callbacks *cb,
		     void *data, struct conn **out)
{
	struct conn *c = conn_alloc(loop, 0, max_queue, cb, data);
	if (!c)
		return -ENOMEM;
	uv_handle_type t = uv_guess_handle(fd);
	/* A pipe takes 64 KiB at a time: a 20 MB result was 300 wake-ups of each side.
	 * Up to the system's unprivileged maximum; the default stays on failure. */
	if (t == UV_NAMED_PIPE)
		(void)fcntl(fd, F_SETPIPE_SZ, CONN_PIPE_SIZE);
	if (t == UV_NAMED_PIPE || t == UV_UNKNOWN_HANDLE) { /* (a socket pair is "unknown") */
		int rc = uv_pipe_init(loop, &c->pipe, 0);
		if (rc == 0) {
			c->pipe.data = c;
			c->has_pipe = true;
			rc = uv_pipe_open(&c->pipe, fd);
			if (rc < 0) { /* not a stream after all: plain writes */
				c->cb = NULL;
				c->has_pipe = false;
				uv_close((uv_handle_t *)&c->pipe, NULL);
			}
		}
		/* (the pipe handle lives in c; a failed open was closed synchronously
		 * enough for us: it was never started) */
	}
	if (!c->has_pipe)
		c->out_fd = fd;
	c->cb = cb;
	*out = c;
	return 0;
}

static void conn_write_cb(uv_write_t *req, int status)
{
	struct conn_write *w = req->data;
	struct conn *c = w->req.handle->data;
	c->queued -= w->len;
	c->writes--;
	free(w->buf);
	free(w);
	if (status < 0 && status != UV_ECANCELED && !c->closing) {
		char why[96];
		snprintf(why, sizeof(why), "write: %s", uv_strerror(status));
		conn_drop(c, why);
		return;
	}
	if (c->closing && !c->writes && status != UV_ECANCELED)
		conn_finish(c);
}

/* A file or a terminal: written as it comes (neither stalls for long). */
static int conn_write_fd(struct conn *c, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(c->out_fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int conn_send(struct conn *c, char *line, size_t len)
{
	if (c->closing) {
		free(line);
		return -EPIPE;
	}
	if (!c->has_pipe) {
		int rc = conn_write_fd(c, line, len);
		free(line);
		if (rc < 0) {
			char why[96];
			snprintf(why, sizeof(why), "write: %s", strerror(-rc));
			conn_drop(c, why);
		}
		return rc;
	}
	size_t done = 0;
	if (!c->writes) { /* nothing queued: what the socket takes now goes now */
		uv_buf_t b = uv_buf_init(line, (unsigned)len);
		int n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
		if (n > 0)
			done = (size_t)n;
		else if (n < 0 && n != UV_EAGAIN) {
			free(line);
			char why[96];
			snprintf(why, sizeof(why), "write: %s", uv_strerror(n));
			conn_drop(c, why);
			return -EPIPE;
		}
	}
	if (done == len) {
		free(line);
		return 0;
	}
	/* The cap is on the backlog before this line beyond its longest line: one
	 * line of any size (a big result, a get's file) goes, and what comes behind
	 * it while it is read; a client that reads nothing is dropped at the cap. */
	if (c->queued > c->largest && c->queued - c->largest > c->max_queue) {
		free(line);
		char why[128];
		snprintf(why, sizeof(why),
			 "dropped: not reading (more than %zu MiB of replies waiting)",
			 c->max_queue >> 20);
		conn_drop(c, why);
		return -ENOBUFS;
	}
	struct conn_write *w = malloc(sizeof(*w));
	if (!w) {
		free(line);
		conn_drop(c, "dropped: out of memory");
		return -ENOBUFS;
	}
	w->buf = line;
	w->len = len - done;
	w->req.data = w;
	uv_buf_t b = uv_buf_init(line + done, (unsigned)(len - done));
	int rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, conn_write_cb);
	if (rc < 0) {
		free(line);
		free(w);
		char why[96];
		snprintf(why, sizeof(why), "write: %s", uv_strerror(rc));
		conn_drop(c, why);
		return -EPIPE;
	}
	c->queued += w->len;
	if (!c->writes++ || w->len > c->largest)
		c->largest = w->len;
	return 0;
}

int conn_open_input(uv_loop_t *loop, int fd, size_t max_line, const struct conn_callbacks *cb,
		    void *data, struct conn **out)
{
	if (uv_guess_handle(fd) != UV_NAMED_PIPE)
		return -ENOTSUP;
	return conn_reader(loop, NULL, fd, max_line, 0, cb, data, out);
}
