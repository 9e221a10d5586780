/* server_internal.h - what server.c, server_session.c and server_request.c share. */
#ifndef PTYBOX_SERVER_INTERNAL_H
#define PTYBOX_SERVER_INTERNAL_H

#include <cjson/cJSON.h>

#include "cli.h"
#include "server.h"
#include "transcript.h"

struct screen;
struct record;
struct record_config;

/* Someone waiting on an execution (its result, and its output as it comes
 * when stream), a `new` (the session's start), a `kill` (its end) or
 * watching a session. */
/* An unfinished upload (a put with "more") and the client that started it: when the client
 * goes, the upload is aborted (its temporary file would pin the session's space). */
struct srv_upload {
	struct srv_upload *next;
	struct server_client *client;
	uint64_t used_ms; /* its last chunk's answer */
	char token[65];	  /* (PROTOCOL_UPLOAD_MAX + 1) */
};
/* Unfinished uploads a session's kernel keeps, at most (its FILE_UPLOADS): past
 * it, it drops the oldest, whoever's it is; so a put that would start one more
 * is refused (busy) here instead. Counted with those being started. */
#define SRV_UPLOADS 64
/* Unfinished uploads of one client in one session: a quarter of the kernel's,
 * so that one client never fills it (cp sends one file at a time). */
#define SRV_CLIENT_UPLOADS 16
/* The kernel forgets an upload unused this long (its FILE_IDLE); so do we. */
#define SRV_UPLOAD_IDLE_MS ((uint64_t)600 * 1000)

struct srv_waiter {
	struct srv_waiter *next;
	struct server_client *client;
	cJSON *id; /* the client's, owned */
	bool stream;
	bool upload;	/* a file op's: a put that starts an unfinished upload */
	uint64_t query; /* a query's (complete, is_complete): its id for the session */
};

enum srv_exec_state { X_QUEUED, X_RUNNING, X_DONE };

struct srv_exec {
	struct srv_exec *next; /* the session's, oldest first */
	uint64_t id;
	enum srv_exec_state state;
	bool stop_on_error, render;
	enum ptybox_status status;
	struct srv_waiter *waiters;
	/* Who asked for it, for its late output (threads): not owned. */
	struct server_client *origin;
	cJSON *origin_id;
	char *code; /* until it runs: for the screen */
	size_t code_len;
	/* The result: a JSON object without "id", escaped, NUL-terminated. */
	char *result;
	size_t result_len;
};

enum srv_state { SS_STARTING, SS_IDLE, SS_BUSY, SS_RESTARTING, SS_DEAD, SS_CLOSING };

struct srv_session {
	struct srv_session *next;
	struct server *server;
	char name[SERVER_NAME_MAX + 1];
	ptybox_session *ps;
	enum srv_state state;
	bool ready_once;
	struct cli_session_opts so; /* its strings live in strings */
	char *strings[CLI_MAX_ENV + 4];
	size_t nstrings;
	uint64_t created_ms;
	uint64_t next_exec, executions;
	enum ptybox_status last_status;
	bool has_last;
	struct srv_exec *execs, *execs_tail;
	struct srv_exec *first_live;   /* every exec before it is done; NULL: all are */
	size_t live, done, done_bytes; /* execs queued/running; kept results */
	size_t queued_bytes;	       /* the code of those queued or running */
	struct srv_waiter *new_waiters, *kill_waiters, *watchers;
	struct srv_waiter *queries; /* (each answered within seconds: session.c) */
	uint64_t next_query;
	struct srv_waiter *files; /* file ops asked, oldest first (server_files.c) */
	uint64_t next_file;
	struct srv_upload *uploads; /* unfinished uploads, newest first, at most SRV_UPLOADS */
	size_t nwatchers;
	struct screen *screen;
	char *tail; /* output not yet fed to the screen (server_session.c) */
	size_t tail_len, tail_cap;
	bool tail_cut, screen_open;
	uint64_t screen_used_ms;
	/* What the session shows, fed to the screen and the recording alike. */
	struct transcript ts;
	struct record *rec; /* `new --record`: from its creation to its end; may be NULL */
	void (*fatal)(struct server *sv, const char *why, void *data); /* the default's */
	/* new --with: the session whose sandbox this one runs in (killed with it) */
	struct srv_session *with;
};

/* A warm pool of the server: interpreters started ahead for sessions of one
 * option set (new's "pool": N). Kept until the server ends. */
struct srv_pool {
	struct srv_pool *next;
	char *key; /* the options as canonical JSON, "pool" aside */
	ptybox_pool *pool;
	struct cli_session_opts so; /* its strings live in strings */
	char *strings[CLI_MAX_ENV + 4];
	size_t nstrings;
};

struct server_client {
	struct server_client *next;
	struct server *server;
	unsigned flags;
	bool hello, remote, dead, eof, gone;
	size_t owed; /* its waiters: replies still owed to it */
	void (*drained)(void *conn);
	server_send_fn send;
	void *conn;
};

struct server {
	uv_loop_t *loop;
	struct server_config cfg;
	struct srv_session *sessions, *closing;
	size_t nsessions;
	struct server_client *clients;
	struct srv_pool *pools;
	size_t npools;
	bool shutting_down;
	uv_timer_t sweep; /* idle screens give back their terminals */
	char shutdown_why[128];
	uint64_t started_ms;
};

/* server.c: o as one line of JSON (not ended), escaped (C1, bidi): the
 * caller frees it with cJSON_free. NULL when out of memory. */
char *srv_print(const cJSON *o, size_t *n);
/* server.c: sending. Each takes o and deletes it. */
void srv_send(struct server_client *c, cJSON *o);
/* {"id":ID,"ok":true} plus o's members (o may be NULL). */
void srv_reply_ok(struct server_client *c, const cJSON *id, cJSON *o);
/* {"id":ID,"error":MSG,"code":CODE} */
void srv_reply_error(struct server_client *c, const cJSON *id, const char *code, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
/* A line built by hand: "{\"id\":" ID "," REST, REST starting after its '{'
 * and escaped already (srv_print). */
void srv_send_joined(struct server_client *c, const cJSON *id, const char *rest, size_t len);
void srv_waiters_free(struct srv_waiter **list);
void srv_waiter_free(struct srv_waiter *w);
void srv_waiters_drop_client(struct srv_waiter **list, struct server_client *c);
struct srv_waiter *srv_waiter_new(struct server_client *c, const cJSON *id, bool stream);
void srv_session_unlink(struct server *sv, struct srv_session *ss);
void srv_maybe_idle(struct server *sv);
/* Every session is gone: the pools go, then on_stopped. */
void srv_stopped(struct server *sv);

/* server_session.c */
/* rec: the recording to make of it (NULL: none); its path cannot be opened: -errno, with
 * err filled and *code "usage". */
int srv_session_start(struct server *sv, const char *name, const cJSON *options, bool remote,
		      const struct ptybox_options *given, const struct record_config *rec,
		      struct srv_session **out, char *err, size_t errlen, const char **code);
void srv_session_exec(struct srv_session *ss, struct server_client *c, const cJSON *req,
		      const cJSON *id, bool nul);
void srv_session_result(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id);
void srv_session_interrupt(struct srv_session *ss, struct server_client *c, const cJSON *req,
			   const cJSON *id);
void srv_session_cancel(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id);
void srv_session_restart(struct srv_session *ss, struct server_client *c, const cJSON *id);
void srv_session_kill(struct srv_session *ss, struct server_client *c, const cJSON *id);
/* {"op":"resize","cols":C,"rows":R}: the user's terminal, for the code's
 * COLUMNS and LINES (and its terminal, with tty). */
void srv_session_resize(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id);
void srv_session_watch(struct srv_session *ss, struct server_client *c, const cJSON *id);
/* complete and is_complete: answered from the interpreter, never behind a
 * snippet (ptybox_session_complete). */
void srv_session_query(struct srv_session *ss, struct server_client *c, const cJSON *req,
		       const cJSON *id, bool is_complete);
/* A big put line's "data", cut out before the rest is parsed (server_client_line): its base64
 * characters, where they lie in the line, and the whole line. */
struct srv_data {
	const char *b64;
	size_t len;
	const char *line;
	size_t line_len;
};
/* Lines from this long have their "data" cut out before cJSON reads them. */
#define SRV_DATA_CUT ((size_t)64 << 10)
/* server_files.c: put, get, files and remove (op), queued in the session; cut: a put's data,
 * cut out of its line (its "data" member then ""), or NULL. */
void srv_session_file(struct srv_session *ss, struct server_client *c, const cJSON *req,
		      const cJSON *id, const char *op, const struct srv_data *cut);
/* The session's on_file: the answer to whoever asked. */
void srv_on_file(ptybox_session *ps, uint64_t fid, const char *reply, const void *bytes, size_t len,
		 void *data);
void srv_session_capture(struct srv_session *ss, struct server_client *c, const cJSON *req,
			 const cJSON *id);
cJSON *srv_session_describe(const struct srv_session *ss);
void srv_pools_close(struct server *sv);
/* server_pool.c: the pool for these options ("pool": N asked), made on first
 * use; NULL with err filled on a bad N or a failure. */
ptybox_pool *srv_pool_for(struct server *sv, const cJSON *options, bool remote, char *err,
			  size_t errlen);
/* server_screen.c: output to the screen's tail; the tail fed to the screen. */
void srv_screen_out(struct srv_session *ss, const char *text, size_t len);
void srv_screen_flush(struct srv_session *ss);
void srv_screens_sweep(struct server *sv);
void srv_pools_free(struct server *sv);
void srv_session_client_gone(struct srv_session *ss, struct server_client *c);
/* server_files.c: c's unfinished uploads aborted (it is gone); all forgotten (the session is). */
void srv_uploads_client_gone(struct srv_session *ss, struct server_client *c);
void srv_uploads_free(struct srv_session *ss);
/* c's watches of ss end (the count ls shows with them). */
void srv_session_unwatch(struct srv_session *ss, struct server_client *c);
const char *srv_state_name(enum srv_state st);
/* The live session of that name, or NULL. */
struct srv_session *srv_session_find(struct server *sv, const char *name);

/* server_request.c: a request line as a JSON object, or NULL with the reply
 * to it sent (a line that is not one, lone surrogates, a NUL in the id).
 * *nul: the request holds a NUL somewhere (only exec's code may not). */
cJSON *srv_request_parse(struct server_client *c, const char *line, size_t len, bool *nul);
/* options (a JSON object, may be NULL) onto so; the strings it keeps are
 * strdup'd into keep[*nkeep]. remote: from dial-stdio, where ssh:, exec:,
 * none and python are refused unless allowed. 0, or -EINVAL with err filled. */
int srv_options_parse(const cJSON *options, bool remote, bool allow_remote,
		      struct cli_session_opts *so, char **keep, size_t *nkeep, size_t keep_cap,
		      char *err, size_t errlen);

/* server_session.c, for server_session_ops.c. Waiters on one execution, and
 * watchers of one session, at most. */
#define SRV_MAX_WAITERS	 1024
#define SRV_MAX_WATCHERS 256
/* ... and of one client: a share, so that one client never takes them all
 * (attach watches once, result waits once). */
#define SRV_CLIENT_WAITERS  16
#define SRV_CLIENT_WATCHERS 16
struct srv_exec *srv_exec_current(struct srv_session *ss);
struct srv_exec *srv_exec_find(struct srv_session *ss, uint64_t id);
void srv_watchers_state(struct srv_session *ss, const char *event, const char *why);
void srv_answer_live(struct srv_session *ss, const char *code, const char *why);

#endif
