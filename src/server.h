/*
 * server.h - the multiplexer: named sessions on one loop, and the JSON-lines
 * requests that every kind of connection feeds it (`serve --stdio`, the
 * server's socket, `dial-stdio`). No sockets here: a client is a sink for
 * lines, and what it sends comes in one line at a time.
 *
 * An execution belongs to its session, not to the client that asked for it:
 * it runs on when the client goes, and its result is kept (a bounded history
 * per session) for `result`.
 */
#ifndef PTYBOX_SERVER_H
#define PTYBOX_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "ptybox.h"

/* The protocol clients and server speak (hello's "protocol"). */
#define SERVER_PROTOCOL 1
/* A client's first request, {"id":0,"op":"hello","protocol":SERVER_PROTOCOL}
 * (the caller deletes it). */
cJSON *server_hello_request(void);
#define SERVER_NAME_MAX 64
/* Per session: results kept for `result`, by count and by their bytes. */
#define SERVER_HISTORY_COUNT 100
#define SERVER_HISTORY_BYTES ((size_t)16 << 20)
/* Sessions one server holds. */
#define SERVER_MAX_SESSIONS 4096
/* The longest request line. */
#define SERVER_MAX_LINE ((size_t)96 << 20)
/* The longest id of a request, in bytes of JSON (about): an id comes back in
 * every reply and event of its request, each watcher's event printing it
 * again, so a 2 MiB one made every event of the session cost milliseconds. */
#define SERVER_MAX_ID 1024
/* Executions queued in one session, and the bytes of their code. */
#define SERVER_MAX_QUEUE       4096
#define SERVER_MAX_QUEUE_BYTES ((size_t)256 << 20)
/* Clients connected at once; more are refused (told so in one line). */
#define SERVER_MAX_CLIENTS 1024
/* The bytes of unfinished request lines the server holds for all its clients
 * together: each may send a line of SERVER_MAX_LINE, but 1024 of them would
 * be 96 GiB. Past it, the client whose line grows is dropped. Room for two
 * lines of the most and many ordinary ones; what it costs is at most about
 * twice this (a buffer doubles as it grows). */
#define SERVER_LINES_BUDGET ((size_t)256 << 20)
/* How long a connection has to say hello; then it is closed (one that never
 * does would hold its place under SERVER_MAX_CLIENTS for good). */
#define SERVER_HELLO_MS 10000

struct server;
struct server_client;

/* Sends one line (newline included), taking it (malloc'd). Negative: the
 * connection is going; the server sends it nothing more and waits for
 * server_client_gone. */
typedef int (*server_send_fn)(void *conn, char *line, size_t len);

struct server_config {
	/* Requests through dial-stdio may name the ssh: and exec: transports and
	 * --python (the remote user could run them anyway, but need not). */
	bool allow_remote_transports;
	/* No execution queued or running anywhere (serve --stdio ends at EOF then). */
	void (*on_idle)(struct server *sv, void *data);
	/* A client asked kill-server. */
	void (*on_kill_server)(struct server *sv, void *data);
	/* After server_shutdown: every session is closed, every process gone. */
	void (*on_stopped)(struct server *sv, void *data);
	void *data;
};

/* The default session's client: requests without "session" go to
 * "default", and hello is optional (serve --stdio). */
#define SERVER_CLIENT_STDIO 1u
/* A client of another machine (serve --http): refused what dial-stdio's are
 * (ssh:, exec:, none, python, mount, wheels, record) unless allowed. */
#define SERVER_CLIENT_REMOTE 2u

int server_new(uv_loop_t *loop, const struct server_config *cfg, struct server **out);
/* The session "default", with options the caller keeps alive (serve --stdio).
 * fatal is called if it cannot start, after which its queued executions end
 * in results. 0, or -errno with err filled. */
int server_add_default(struct server *sv, const struct ptybox_options *o,
		       void (*fatal)(struct server *sv, const char *why, void *data), char *err,
		       size_t errlen);
struct server_client *server_client_new(struct server *sv, unsigned flags, server_send_fn send,
					void *conn);
void server_client_line(struct server_client *c, const char *line, size_t len);
/* A request line passed SERVER_MAX_LINE and was skipped. */
void server_client_too_long(struct server_client *c);
/* The client's input ended: its watches end; true when nothing else is
 * owed to it (close now), else drained(conn) comes once the last reply owed
 * is sent. */
bool server_client_eof(struct server_client *c);
void server_client_set_drained(struct server_client *c, void (*drained)(void *conn));
/* The connection is closed: nothing more is sent to it. Its executions run on. */
void server_client_gone(struct server_client *c);
/* Replies still to come by themselves, in every session: executions queued
 * or running, starts (new), queries (complete, is_complete), kills. */
size_t server_pending(const struct server *sv);
/* Closes every session (what waits on one is answered with why); on_stopped
 * follows once all are gone. Clients still connected are sent nothing more. */
void server_shutdown(struct server *sv, const char *why);
/* After on_stopped (or before any session was started). */
void server_free(struct server *sv);
/* {"error":msg,"code":code} to c (no id: it answers no request). */
void server_client_notice(struct server_client *c, const char *code, const char *msg);
/* The same as a line of its own (newline included, *len its bytes), for a
 * connection that has no client, or is being dropped: malloc'd, NULL when out
 * of memory. */
char *server_error_line(const char *code, const char *msg, size_t *len);
/* Whether c said hello (a connection to the socket must, within SERVER_HELLO_MS). */
bool server_client_said_hello(const struct server_client *c);

/* The first member of req (an object) that op does not take, or NULL (none,
 * or op is not one of the protocol's); *takes (may be NULL): what op takes
 * beside id and op, as "a, b, " (empty: nothing). Pure. */
const char *server_request_unknown_member(const cJSON *req, const char *op, const char **takes);

/* Whether name may name a session: 1..64 bytes of printable UTF-8, no '/',
 * not "." or "..", not starting with '-'. NULL, or why not. Pure. */
const char *server_name_invalid(const char *name, size_t len);

#endif
