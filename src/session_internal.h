/*
 * session_internal.h - what the files of a session (session.c and the
 * concepts split from it) share: its queue items and its state. Not public.
 */
#ifndef PTYBOX_SESSION_INTERNAL_H
#define PTYBOX_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>
#include <uv.h>

#include "display_list.h"
#include "outbuf.h"
#include "ptybox.h"
#include "transport.h"

struct instance;
struct log;
struct protocol_frame;

#define SESSION_QUEUE_CAP 4096
/* How long, past the kill grace, the relay has to restart a kernel we asked it
 * to kill before the whole interpreter is replaced. */
#define SESSION_RELAY_GRACE_MS 2000

enum session_state { S_STARTING, S_IDLE, S_RUNNING, S_FATAL, S_CLOSING };

/* Why ptybox stopped the running snippet. */
enum exec_stop { STOP_NONE, STOP_TIMEOUT, STOP_INTERRUPT };

/* A file op's own part of its queue item (session_files.c). */
struct file_op {
	const char *op; /* "put", "get", "files" or "remove" */
	char *line;	/* its request (a put's data lines after it) until sent */
	size_t line_len;
	size_t put_len;	     /* a put's data bytes, counted in put_waiting until sent */
	unsigned char *data; /* a get's bytes so far */
	size_t len, cap;
	uint64_t want; /* a get's most bytes: more is an error */
	bool bad;      /* its data passed want or did not inflate */
};

/* Put data waiting per session, at most: past it, a put is -ENOBUFS. */
#define SESSION_PUT_CAP ((size_t)256 << 20)

struct exec {
	struct exec *next;
	uint64_t id;
	/* The request until it is handed to the PTY: encoded only then, since whether the
	 * relay may busy-poll for it is decided at send time (session_exec_line). */
	char *code;
	size_t code_len;
	char *filename; /* a file's run: its name and argv (NULL-terminated); else NULL */
	char **argv;
	char **env; /* "K=V", NULL-terminated; NULL: none */
	char *cwd;
	void *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	bool stdin_stream; /* fd 0 is the session's stdin stream (session_stdin.c) */
	double timeout;
	bool stream, ctrl_c_sent;
	bool restart;	      /* not a snippet: a restart queued in order */
	struct file_op *file; /* not a snippet: a file op queued in order (session_files.c) */
	enum exec_stop stop;
	uint64_t sent_ns;
	struct display_list display; /* for the result (display_list.h) */
	bool cut;		     /* the driver cut its value, error or a display's text */
};

/* Queries (complete, is_complete) in flight per session; their wire ids are
 * apart from snippets' (the relay's interrupt names an id). A query is
 * answered within SESSION_QUERY_MS whatever the interpreter does. */
#define SESSION_QUERY_CAP  64
#define SESSION_QUERY_WIRE ((uint64_t)1 << 52)
#define SESSION_QUERY_MS   5000

struct query {
	struct query *next;
	uint64_t id, wire;
	bool is_complete;
	long cursor;
	uint64_t deadline_ms;
	char *reply; /* the answer, told on the next loop turn; NULL: awaited */
};

struct ptybox_session {
	uv_loop_t *loop;
	struct ptybox_options opts;
	struct transport_options topts;
	struct ptybox_callbacks cb;
	void *data;
	struct log *log;  /* --log: this session's own; NULL: the process's */
	char warned[256]; /* the last warning told (each is told once) */

	/* --with: the session whose sandbox this one's interpreter runs in, and
	 * the others that run in this one's (a list through next_sharer) */
	ptybox_session *with;
	ptybox_session *sharers, *next_sharer;
	uint64_t with_wait_until; /* uv_now: while with restarts, this one waits */
	unsigned with_boot_fails; /* boots in a row that died while joining (SESSION_WITH_BOOTS) */

	enum session_state state;
	struct instance *in;
	struct instance *told; /* the instance told the terminal (size, tty) */
	bool started_once;
	bool restarting_told;	/* on_restarting said so for the restart under way */
	bool kernel_restarting; /* the relay starts a fresh kernel: ready ends the wait */
	uint64_t restart_seq;	/* ids of our restart requests; 0: the wait is for any ready */
	uint64_t restart_awaited;
	uv_timer_t timer;
	uv_idle_t spin; /* active: the loop polls, not sleeps (session_spin_cb) */
	uint64_t spin_until;
	/* A moving average of the time from sending a snippet to its result (ns, each
	 * sample capped at twice the poll): the loop spins only for results that tend
	 * to come within busy_poll_us; for later ones spinning takes a CPU for nothing. */
	int64_t result_ns;
	int closing_parts; /* the timers, the spin and the instance, once closing */
	struct query *queries;
	size_t nqueries;
	uint64_t next_query;
	uv_timer_t query_timer; /* the next query due: answered, or past its time */

	size_t put_waiting;	  /* bytes of put data queued, not yet sent (SESSION_PUT_CAP) */
	bool awaiting;		  /* counted in session_awaiting */
	struct exec *head, *tail; /* head is the running one in S_RUNNING */
	size_t queued;
	struct outbuf out, err;
	bool frame_dropped;
	bool state_lost_pending;
	int send_error; /* errno of the running snippet's failed write, told next turn */
	/* The stdin stream (session_stdin.c): one chunk at a time, the next once
	 * the relay acked it. */
	struct {
		char *line; /* the chunk's request, until its instance is ready */
		size_t line_len;
		bool inflight;	     /* a chunk was given and is not acked yet */
		bool eof;	     /* the end was given */
		struct instance *to; /* the instance the last request went to */
		uint64_t seq;	     /* ids of the requests */
	} in_stream;
	/* The head's result, held while its interpreter is replaced. */
	struct {
		bool on;
		enum ptybox_status status;
		cJSON *error;	    /* owned */
		double duration_ms; /* until its interpreter was gone */
		char what[640];	    /* what happened to it */
		const char *done;   /* follows what when the fresh interpreter is up */
	} held;
};

/* session.c: queues e behind everything queued, and starts it if nothing runs. */
void session_push(ptybox_session *s, struct exec *e);

/* session_stdin.c, for session.c: the relay acked a chunk; an instance is
 * ready (a fresh one, maybe: what went to the old one is lost); freed at close. */
void session_stdin_ack(ptybox_session *s, const struct protocol_frame *f);
void session_stdin_ready(ptybox_session *s);
void session_stdin_free(ptybox_session *s);

/* session_files.c, for session.c: */
void session_file_free(struct file_op *f);
/* Takes a get's binary frame into f (z: a zlib stream). */
void session_file_binary(struct file_op *f, const char *data, size_t len, bool z);
/* The reply for the file frame root (changed: its type and id go); cJSON_free it. */
char *session_file_reply(struct file_op *f, cJSON *root);
/* The reply of a file op that did not run to its end: {"ok":false,...}. */
char *session_file_error(const struct file_op *f, const char *message, const char *code);

/* session_query.c: the interpreter went, so what it was asked is answered
 * without it; a reply frame, its query's answer. */
void session_queries_fail(ptybox_session *s);
void session_on_reply(ptybox_session *s, struct protocol_frame *f);

/* session_with.c (--with). How often a session whose with restarts looks again. */
#define SESSION_WITH_RETRY_MS 20
/* Boots in a row that may die joining a sandbox whose init is on its way out
 * (it lets go of its namespaces before it is seen to exit) before it is fatal. */
#define SESSION_WITH_BOOTS 10
/* The session given (or its own with: there is one sandbox per chain) into
 * *out, if s may share it: 0, or -errno with err filled. */
int session_with_check(ptybox_session *s, ptybox_session *given, ptybox_session **out, char *err,
		       size_t errlen);
/* s shares with's sandbox from now on (with NULL: nothing). */
void session_with_join(ptybox_session *s, ptybox_session *with);
/* At a start: 1 with s->topts.sandbox.join set, 0 to try again soon (with is
 * restarting), -1 with why filled. */
int session_with_sandbox(ptybox_session *s, char *why, size_t whylen);
/* Out of the sharing both ways (at close). */
void session_unshare(ptybox_session *s);

/* session.c, for the files of a session: */
void session_exec_free(struct exec *e);
void session_start(ptybox_session *s);
void session_first_start_cb(uv_timer_t *t);
void session_arm(ptybox_session *s, uint64_t ms, uv_timer_cb cb);
void session_finish(ptybox_session *s, enum ptybox_status status, cJSON *bundle, cJSON *error,
		    double duration_ms, bool state_lost, const char *message);

/* session_restart.c, for session.c: the interpreter died, was killed or
 * cannot start. A held result's message ends in one of these when the
 * restart worked. */
extern const char session_restarted[], session_and_restarted[];
void session_fatal(ptybox_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void session_finish_held(ptybox_session *s, const char *fatal);
void session_drop_restarts(ptybox_session *s);
void session_replace(ptybox_session *s, enum ptybox_status status, const char *what,
		     const char *done);
void session_replace_with(ptybox_session *s, enum ptybox_status status, cJSON *error,
			  const char *what, const char *done);
void session_restart_kernel(ptybox_session *s, enum ptybox_status status, const char *what,
			    const char *done);
void session_on_died(ptybox_session *s, struct protocol_frame *f);
void session_on_dead(struct instance *in, const char *why, bool during_boot);

#endif
