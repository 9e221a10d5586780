/*
 * cli_client.h - the verbs that talk to a server (new, exec, result, ls,
 * interrupt, restart, kill, kill-server, capture, watch): thin clients of its
 * protocol, over its socket or, with -H ssh://host, through
 * `ssh host ptybox dial-stdio`.
 */
#ifndef PTYBOX_CLI_CLIENT_H
#define PTYBOX_CLI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

/* `ptybox server` could not start because one runs already. */
#define CLI_EXIT_SERVER_RUNNING 3
/* result --no-wait: the execution still runs or waits its turn (ptybox(1)). */
#define CLI_EXIT_NOT_ENDED 4

/* A connected fd to the local server's socket (starting the server first
 * when autostart and none runs), or -errno with err filled. */
int cli_client_connect_local(const char *label, const char *spath, bool autostart, char *err,
			     size_t errlen);

/* A connection to a server, hello said, for a client with a loop of its own
 * (attach): it reads rfd and writes wfd (the same socket, or ssh's pipes). */
struct cli_client_link {
	int rfd, wfd;
	pid_t ssh; /* -H: the ssh process (the caller waits for it), else 0 */
	char where[4160];
};
/* label, spath or host as -L, -S and -H give them (all NULL: the default
 * server, not started if none runs). 0, or an exit status with the message
 * printed. */
int cli_client_dial(const char *cmd, const char *label, const char *spath, const char *host,
		    struct cli_client_link *out);

/* A connection as the verbs here have it, for a verb in a file of its own (cp): hello said,
 * replies read with blocking I/O. */
struct cli_conn;
/* 0, or an exit status with the message printed. */
int cli_conn_open(const char *cmd, const char *label, const char *spath, const char *host,
		  struct cli_conn **out);
/* Sends req (taken) with the next id: that id, or 0 when the server is gone. */
uint64_t cli_conn_send(struct cli_conn *c, cJSON *req);
/* The next line from the server (the caller deletes it), or NULL at its end or on ^C
 * (*interrupted set; the caller sets up SIGINT as cli_client does, or not at all). */
cJSON *cli_conn_next(struct cli_conn *c, bool *interrupted);
/* A line's "id", 0 for none. */
uint64_t cli_conn_id(const cJSON *o);
/* An error reply (or NULL: the server gone) said as "CMD: why": its exit status. */
int cli_conn_error_exit(const char *cmd, struct cli_conn *c, const cJSON *reply);
/* Where the server is, for messages. */
const char *cli_conn_where(const struct cli_conn *c);
void cli_conn_close(struct cli_conn *c);
/* `ptybox cp` (cli_cp.c). */
int cli_cp(int argc, char **argv);

/* The verbs; argv[0] is the verb. */
int cli_client(int argc, char **argv);
/* Whether cmd is one of them. */
bool cli_client_verb(const char *cmd);

int cli_server(int argc, char **argv);
int cli_dial_stdio(int argc, char **argv);

#endif
