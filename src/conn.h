/*
 * conn.h - one client's connection to the server: lines in, a bounded queue
 * of lines out, on a libuv stream (the socket, a pipe) or, for output only, a
 * file or terminal written as it comes.
 *
 * A client that does not read is dropped once its queue passes the cap: the
 * loop never waits for anyone. (What it holds is at most the cap plus one
 * line, which the server bounds: a result's size.)
 */
#ifndef PTYBOX_CONN_H
#define PTYBOX_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "linebuf.h"

struct conn;

/* Bytes shared by connections for their unfinished lines (a server's clients):
 * one that grows its line past the budget is told (on_over_budget) or
 * dropped. used is the sum of what each holds now. */
struct conn_budget {
	size_t used, max;
};

struct conn_callbacks {
	/* A request line (NUL-terminated), or too_long: one passed the cap. */
	void (*on_line)(struct conn *c, const char *line, size_t len, bool too_long);
	/* The end of input (optional: without it, the connection closes). */
	void (*on_eof)(struct conn *c);
	/* The input ended in the middle of a line (len bytes without their
	 * newline), which is not parsed (optional: without it, that last line goes
	 * to on_line). */
	void (*on_cut)(struct conn *c, size_t len);
	/* The connection's unfinished line passed its budget (why says so): it
	 * must end now, through conn_abort or conn_abort_saying (optional:
	 * without it, conn_abort). */
	void (*on_over_budget)(struct conn *c, const char *why);
	/* The connection is closed (why says how: "end of input", a read error,
	 * "dropped: ..."); memory goes after this returns. */
	void (*on_close)(struct conn *c, const char *why);
};

struct conn {
	uv_loop_t *loop;
	uv_pipe_t pipe;
	uv_timer_t later; /* without a pipe: on_close comes from its close callback */
	bool has_pipe, reading, closing, finished;
	int out_fd; /* >= 0: output written to it as it comes (a file, a terminal) */
	struct linebuf lines;
	struct conn_budget *budget; /* may be NULL */
	size_t counted;		    /* bytes of its unfinished line counted in budget */
	bool in_read;		    /* lines is being split: on_line may be running */
	size_t queued, max_queue;   /* bytes accepted by uv_write and not yet written */
	unsigned writes;	    /* uv_write requests in flight */
	size_t largest;		    /* the longest of them since none was in flight */
	char why[160];
	const struct conn_callbacks *cb;
	void *data;
};

/* Accepts a connection on server; reads lines at once. 0 or -errno. */
int conn_accept(uv_stream_t *server, size_t max_line, size_t max_queue,
		const struct conn_callbacks *cb, void *data, struct conn **out);
/* An output-only connection on fd (serve's standard output): a pipe or socket
 * gets the queue, anything else plain writes. 0 or -errno. */
int conn_open_output(uv_loop_t *loop, int fd, size_t max_queue, const struct conn_callbacks *cb,
		     void *data, struct conn **out);
/* An input-only connection on fd when it is a pipe (serve's standard input:
 * read on the loop, not through the thread pool). -ENOTSUP for anything
 * else. */
int conn_open_input(uv_loop_t *loop, int fd, size_t max_line, const struct conn_callbacks *cb,
		    void *data, struct conn **out);
/* Sends len bytes of line (a whole line, newline included), taking it (it
 * was malloc'd). -ENOBUFS when the queue passed its cap (the connection is
 * being dropped), -EPIPE when it is closing. */
int conn_send(struct conn *c, char *line, size_t len);
/* Closes, once queued lines are written when there is a queue; on_close follows. */
void conn_close(struct conn *c, const char *why);
/* Closes now, queued lines lost; on_close follows. */
void conn_abort(struct conn *c, const char *why);
/* The same, after one last line (taken, malloc'd; may be NULL) that goes only
 * if nothing is queued and the socket takes it now: the server never waits. */
void conn_abort_saying(struct conn *c, char *line, size_t len, const char *why);
/* c's unfinished line counts in b from now on (set before the loop runs
 * again after conn_accept). */
void conn_set_budget(struct conn *c, struct conn_budget *b);

#endif
