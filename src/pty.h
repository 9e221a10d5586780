/*
 * pty.h - one pseudo-terminal and the process tree started on its slave side,
 * on a libuv loop.
 */
#ifndef PTYBOX_PTY_H
#define PTYBOX_PTY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <uv.h>

#include "reap.h"
#include "transport.h"

struct pty;

struct pty_callbacks {
	/* Bytes from the master, in order. */
	void (*on_data)(struct pty *p, const char *buf, size_t len);
	/* The slave side is closed by every process (read gave EIO): no more data. */
	void (*on_hangup)(struct pty *p);
	/* The child the transport started exited (waitpid status). */
	void (*on_exit)(struct pty *p, int wstatus);
	/* The poll handle is closed and the child reaped (pty_close does not
	 * kill it: its owner does); the struct may be freed. */
	void (*on_closed)(struct pty *p);
};

struct pty_wbuf;

struct pty {
	uv_loop_t *loop;
	int master;
	pid_t pid;
	uv_poll_t poll;
	struct reap_watch reap; /* the loop's reaper tells the child's exit */
	int poll_events;
	bool hung_up, exited, closing, poll_closed;
	struct pty_wbuf *wq_head, *wq_tail;
	size_t wq_bytes;
	const struct pty_callbacks *cb;
	void *data;
	struct log *log; /* its owner's (borrowed); NULL: the process's */
};

/* Opens a PTY, forks, and lets the transport start its child on the slave
 * side. Returns 0, or a negative errno with one line in err (then nothing is
 * left to close). With setup_fd NULL it waits for the child's set-up verdict;
 * else *setup_fd gets the non-blocking, close-on-exec pipe on which the verdict
 * comes (EOF: the child exec'd; a line: why it did not), which the caller
 * watches and closes. */
int pty_spawn(struct pty *p, uv_loop_t *loop, struct transport *t, unsigned short cols,
	      unsigned short rows, const struct pty_callbacks *cb, void *data, int *setup_fd,
	      char *err, size_t errlen);
/* Queues bytes for the master without blocking the loop; copies them.
 * -ENOBUFS past the queue's cap, -EPIPE after hang-up. */
int pty_write(struct pty *p, const char *buf, size_t len);
/* Same, taking ownership of buf (malloc'd). */
int pty_write_take(struct pty *p, char *buf, size_t len);
size_t pty_queued(const struct pty *p);
int pty_resize(struct pty *p, unsigned short cols, unsigned short rows);
/* Reads whatever the master has now, without waiting (drain after exit). */
void pty_drain(struct pty *p);
/* Stops I/O, closes the handle and the master; on_closed follows once the
 * child is reaped too. */
void pty_close(struct pty *p);

#endif
