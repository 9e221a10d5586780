/*
 * cli_conn_internal.h - a verb's connection to a server (cli_conn.c), as the
 * verbs of cli_client.c use it: the local socket (the server started on first
 * use) or `ssh HOST ptybox dial-stdio` for -H, hello said, replies read with
 * blocking I/O and deadlines. Files of their own use cli_client.h's cli_conn.
 */
#ifndef PTYBOX_CLI_CONN_INTERNAL_H
#define PTYBOX_CLI_CONN_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "linebuf.h"
#include "server_socket.h"

/* The longest reply line a client takes (a result is at most some 4x the
 * session's max output, plus change). */
#define CLIENT_MAX_LINE ((size_t)1 << 32)

struct client {
	int rfd, wfd;
	pid_t ssh; /* -H: the ssh process, else 0 */
	struct linebuf lines;
	/* Lines split but not yet taken, a ring that grows: one read's lines
	 * (at most 64 KiB of them) are all kept, since the next read waits for
	 * the queue to empty. */
	cJSON **queue;
	size_t nqueue, qhead, qcap;
	bool eof, too_long;
	/* A reply that must come soon (hello, the simple verbs) waits until
	 * deadline_ms (CLOCK_MONOTONIC; 0: no deadline), then timed_out. */
	int64_t deadline_ms;
	bool timed_out;
	/* client_send did not send a request of this many bytes: past SERVER_MAX_LINE, the server
	 * would skip it with an error that has no id (newuser-13). */
	size_t refused;
	uint64_t next_id;
	char where[SERVER_SOCKET_PATH_MAX + 64];
	/* The last error the server sent that answers no request (it refused us,
	 * or dropped us, and said why before closing): "" for none. */
	char said[256];
};

struct client_target {
	const char *label, *spath, *host;
};

/* How long a server may take to answer hello or a simple request: a server
 * that accepted and then hangs must not hang its clients (ssh also logs in). */
#define CLIENT_REPLY_MS	    5000
#define CLIENT_SSH_HELLO_MS 60000
/* How long kill-server waits for the server to be gone (it has said yes). */
#define CLIENT_STOP_MS 30000

/* The ^C's that came (SIGINT handled by client_on_sigint). */
extern volatile sig_atomic_t client_interrupts;
void client_on_sigint(int sig);
int64_t client_now_ms(void);
/* Connects to t's server (-L, -S or -H), hello said: 0, or the exit status
 * with the message printed; autostart: start a local server if none runs. */
int client_open(struct client *cl, const char *cmd, const struct client_target *t, bool autostart);
void client_close(struct client *cl);
/* The next line from the server, or NULL at its end (or on ^C when
 * interruptible: *interrupted is set). */
cJSON *client_next(struct client *cl, bool interruptible, bool *interrupted);
/* Sends o with the next id; that id, or 0 when the server is gone. */
uint64_t client_send(struct client *cl, cJSON *o);
/* A line's "id", 0 for none. */
uint64_t client_id(const cJSON *o);
/* Whether o is an error reply without an id: the server could not read a request of ours
 * (a line past SERVER_MAX_LINE, not JSON) and answers it so. */
bool client_idless_error(const cJSON *o);
/* {"op": op, "session": session} (session may be NULL). */
cJSON *client_request(const char *op, const char *session);
/* An error reply's exit status: 125 when a session could not start, 1 else. */
int client_error_exit(const char *cmd, struct client *cl, const cJSON *reply);
/* Why the connection ended: what the server said last, or that it closed it. */
const char *client_gone_why(const struct client *cl);
/* One request, its reply checked: 0, or the exit status (message printed).
 * Within ms (0: as long as the server takes, as new and restart may while
 * an interpreter starts). */
int client_simple_within(struct client *cl, const char *cmd, cJSON *req, cJSON **out, int ms);
int client_simple(struct client *cl, const char *cmd, cJSON *req, cJSON **out);

#endif
