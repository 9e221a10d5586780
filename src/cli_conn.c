/*
 * cli_conn.c - a verb's connection to a server: the local socket (starting the
 * server on first use, as tmux does) or `ssh HOST ptybox dial-stdio` for -H,
 * hello, requests and replies with blocking I/O and deadlines: a client has
 * nobody else to serve. The verbs are in cli_client.c.
 */
#define _GNU_SOURCE
#include "cli_conn_internal.h"
#include "cli_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "linebuf.h"
#include "options.h"
#include "protocol.h"
#include "server.h"
#include "server_socket.h"

int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

volatile sig_atomic_t client_interrupts;

void client_on_sigint(int sig)
{
	client_interrupts++;
}

extern char **environ;

/* How long a client keeps trying to reach a server that is starting, or to
 * start one while the last one still exits (it holds its lock until then). */
#define CLIENT_START_MS 5000

/* `ptybox server -S path`, waited for: 0 once it listens, or once another
 * client's start (or a server still exiting) holds the socket's lock. What
 * the server says on its standard error is the user's only when it failed. */
static int client_start_server(const char *path, char *err, size_t errlen)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(err, errlen, "cannot find ptybox's own binary to start the server");
		return -ENOENT;
	}
	exe[n] = '\0';
	char *argv[] = {exe, "server", "-S", (char *)path, NULL};
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		snprintf(err, errlen, "starting the server: %s", strerror(e));
		return -e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
	pid_t pid;
	int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(ep[1]);
	if (rc != 0) {
		close(ep[0]);
		snprintf(err, errlen, "starting the server: %s", strerror(rc));
		return -rc;
	}
	/* Its exit first: the daemon it forked may hold the pipe a while yet;
	 * the line it wrote (if any) waits in the pipe. */
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char said[512];
	size_t got = 0;
	ssize_t r;
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	while (got < sizeof(said) - 1 &&
	       ((r = read(ep[0], said + got, sizeof(said) - 1 - got)) > 0 ||
		(r < 0 && errno == EINTR)))
		got += r > 0 ? (size_t)r : 0;
	close(ep[0]);
	said[got] = '\0';
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == CLI_EXIT_SERVER_RUNNING)
		return -EADDRINUSE;
	/* its first line, as "server: why" */
	said[strcspn(said, "\n")] = '\0';
	const char *why = strncmp(said, "ptybox: ", 8) == 0 ? said + 8 : said;
	if (why[0])
		snprintf(err, errlen, "%s", why);
	else
		snprintf(err, errlen, "the server did not start (its log: %s.log)", path);
	return -ECHILD;
}

int cli_client_connect_local(const char *label, const char *spath, bool autostart, char *err,
			     size_t errlen)
{
	char path[SERVER_SOCKET_PATH_MAX];
	int rc = server_socket_path(label, spath, autostart, path, sizeof(path), err, errlen);
	if (rc == -ENOENT && !autostart) { /* (no folder: no server ever ran) */
		char why[512];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "no server running (%s)", why);
		return rc;
	}
	if (rc < 0)
		return rc;
	int fd = server_socket_connect(path);
	/* A server another client started may not listen yet, and one that
	 * was told to end holds its lock until it has: try again, a while. */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((fd == -ENOENT || fd == -ECONNREFUSED) && autostart) {
		rc = client_start_server(path, err, errlen);
		if (rc < 0 && rc != -EADDRINUSE)
			return rc;
		fd = server_socket_connect(path);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
		    CLIENT_START_MS)
			break;
		if (fd == -ENOENT || fd == -ECONNREFUSED)
			usleep(20 * 1000);
	}
	if (fd == -ENOENT || fd == -ECONNREFUSED)
		snprintf(err, errlen, "no server running at %s", path);
	else if (fd < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-fd));
	return fd;
}

/* ssh://[user@]host[:port] as ssh's arguments: [-p PORT] DEST. */
static int client_ssh_argv(const char *url, char *dest, size_t destlen, char *port, size_t portlen,
			   char *err, size_t errlen)
{
	if (strncmp(url, "ssh://", 6) != 0) {
		snprintf(err, errlen, "-H %s: expected ssh://[user@]host[:port]", url);
		return -EINVAL;
	}
	const char *rest = url + 6, *at = strchr(rest, '@');
	const char *host = at ? at + 1 : rest, *colon;
	port[0] = '\0';
	if (host[0] == '[') { /* [v6]:port */
		const char *close = strchr(host, ']');
		if (!close) {
			snprintf(err, errlen, "-H %s: no ']' after an IPv6 address", url);
			return -EINVAL;
		}
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] && !colon) {
			snprintf(err, errlen, "-H %s: expected ':PORT' after ']'", url);
			return -EINVAL;
		}
		snprintf(dest, destlen, "%.*s%.*s", at ? (int)(at - rest + 1) : 0, rest,
			 (int)(close - host - 1), host + 1);
	} else {
		colon = strchr(host, ':');
		snprintf(dest, destlen, "%.*s", colon ? (int)(colon - rest) : (int)strlen(rest),
			 rest);
	}
	if (colon)
		snprintf(port, portlen, "%s", colon + 1);
	unsigned p;
	if ((colon && options_parse_uint(port, 1, 65535, &p) < 0) ||
	    !dest[at ? at - rest + 1 : 0] || dest[0] == '-' || strpbrk(dest, " \t\n/")) {
		snprintf(err, errlen, "-H %s: expected ssh://[user@]host[:port]", url);
		return -EINVAL;
	}
	return 0;
}

static int client_open_ssh(struct client *cl, const struct client_target *t, char *err,
			   size_t errlen)
{
	char dest[512], port[16];
	int rc = client_ssh_argv(t->host, dest, sizeof(dest), port, sizeof(port), err, errlen);
	if (rc < 0)
		return rc;
	const char *remote = getenv("PTYBOX_REMOTE");
	char *argv[16];
	int n = 0;
	argv[n++] = "ssh";
	argv[n++] = "-T"; /* no terminal: the protocol is lines, not keys */
	argv[n++] = "-oBatchMode=yes";
	if (port[0]) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	argv[n++] = "--";
	argv[n++] = dest;
	argv[n++] = (char *)(remote && remote[0] ? remote : "ptybox");
	argv[n++] = "dial-stdio";
	if (t->label) {
		argv[n++] = "-L";
		argv[n++] = (char *)t->label;
	} else if (t->spath) {
		argv[n++] = "-S";
		argv[n++] = (char *)t->spath;
	}
	argv[n] = NULL;
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	rc = posix_spawnp(&cl->ssh, "ssh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		snprintf(err, errlen, "ssh: %s", strerror(rc));
		return -rc;
	}
	cl->wfd = in[1];
	cl->rfd = out[0];
	snprintf(cl->where, sizeof(cl->where), "%s", t->host);
	return 0;
}

void client_close(struct client *cl)
{
	if (cl->wfd >= 0 && cl->wfd != cl->rfd)
		close(cl->wfd);
	if (cl->rfd >= 0)
		close(cl->rfd);
	cl->rfd = cl->wfd = -1;
	if (cl->ssh > 0) {
		int st;
		while (waitpid(cl->ssh, &st, 0) < 0 && errno == EINTR)
			;
	}
	for (size_t i = 0; i < cl->nqueue; i++)
		cJSON_Delete(cl->queue[(cl->qhead + i) % cl->qcap]);
	free(cl->queue);
	cl->queue = NULL;
	cl->nqueue = cl->qhead = cl->qcap = 0;
	linebuf_free(&cl->lines);
}

static void client_line(void *data, const char *line, size_t len, bool too_long)
{
	struct client *cl = data;
	if (too_long) {
		cl->too_long = true;
		return;
	}
	cJSON *o = cJSON_ParseWithLength(line, len);
	if (!o)
		return;
	const char *error = protocol_str(o, "error");
	if (error && !cJSON_GetObjectItemCaseSensitive(o, "id"))
		snprintf(cl->said, sizeof(cl->said), "%.*s",
			 (int)protocol_utf8_prefix(error, strlen(error), sizeof(cl->said) - 1),
			 error);
	if (cl->nqueue == cl->qcap) {
		size_t ncap = cl->qcap ? cl->qcap * 2 : 64;
		cJSON **nq = malloc(ncap * sizeof(*nq));
		if (!nq)
			abort(); /* out of memory is fatal (STYLE.md) */
		for (size_t i = 0; i < cl->nqueue; i++)
			nq[i] = cl->queue[(cl->qhead + i) % cl->qcap];
		free(cl->queue);
		cl->queue = nq;
		cl->qcap = ncap;
		cl->qhead = 0;
	}
	cl->queue[(cl->qhead + cl->nqueue++) % cl->qcap] = o;
}

/* The next line from the server, or NULL at its end (or on ^C when
 * interruptible: *interrupted is set). */
cJSON *client_next(struct client *cl, bool interruptible, bool *interrupted)
{
	for (;;) {
		if (cl->nqueue) {
			cJSON *o = cl->queue[cl->qhead];
			cl->qhead = (cl->qhead + 1) % cl->qcap;
			cl->nqueue--;
			return o;
		}
		if (cl->eof)
			return NULL;
		if (interruptible && client_interrupts) {
			*interrupted = true;
			return NULL;
		}
		if (cl->deadline_ms) {
			int64_t left = cl->deadline_ms - client_now_ms();
			struct pollfd p = {.fd = cl->rfd, .events = POLLIN};
			int pr = left > 0 ? poll(&p, 1, (int)(left < 1000 ? left : 1000)) : 0;
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0 && left <= 1000) {
				cl->timed_out = true;
				return NULL;
			}
			if (pr == 0)
				continue; /* (a second at a time: ^C is looked at above) */
		}
		if (linebuf_reserve(&cl->lines, 64 * 1024) < 0)
			return NULL;
		ssize_t n = read(cl->rfd, cl->lines.buf + cl->lines.len, 64 * 1024);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			linebuf_finish(&cl->lines, client_line, cl);
			cl->eof = true;
			continue;
		}
		linebuf_commit(&cl->lines, (size_t)n, client_line, cl);
	}
}

/* Sends o with the next id; that id, or 0 when the server is gone. */
uint64_t client_send(struct client *cl, cJSON *o)
{
	uint64_t id = ++cl->next_id;
	protocol_json_add_uint(o, "id", id);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return 0;
	size_t n = strlen(s);
	if (n + 1 > SERVER_MAX_LINE) {
		cl->refused = n + 1;
		cJSON_free(s);
		return 0;
	}
	char *line = malloc(n + 1);
	if (line) {
		memcpy(line, s, n);
		line[n] = '\n';
	}
	int rc = line ? cli_write_all(cl->wfd, line, n + 1) : -ENOMEM;
	free(line);
	cJSON_free(s);
	return rc < 0 ? 0 : id;
}

bool client_idless_error(const cJSON *o)
{
	return !cJSON_GetObjectItemCaseSensitive(o, "id") && protocol_str(o, "error") &&
	       !cJSON_GetObjectItemCaseSensitive(o, "event");
}

uint64_t client_id(const cJSON *o)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	return cJSON_IsNumber(id) && id->valuedouble > 0 ? (uint64_t)id->valuedouble : 0;
}

/* The reply to request id (events before it are dropped), or NULL: the
 * server is gone, or did not answer within ms (cl->timed_out). */
static cJSON *client_reply(struct client *cl, uint64_t id, int ms)
{
	cJSON *o;
	cl->deadline_ms = ms ? client_now_ms() + ms : 0;
	while ((o = client_next(cl, false, NULL))) {
		if (cJSON_GetObjectItemCaseSensitive(o, "event"))
			; /* (not a reply) */
		else if (client_id(o) == id || client_idless_error(o))
			break; /* (an error without an id answers our only request) */
		cJSON_Delete(o);
	}
	cl->deadline_ms = 0;
	return o;
}

cJSON *client_request(const char *op, const char *session)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	if (session)
		cJSON_AddStringToObject(o, "session", session);
	return o;
}

const char *client_gone_why(const struct client *cl)
{
	return cl->said[0] ? cl->said : "the server closed the connection";
}

/* An error reply's exit status: 125 when a session could not start, 1 else. */
int client_error_exit(const char *cmd, struct client *cl, const cJSON *reply)
{
	const char *msg = protocol_str(reply, "error"), *code = protocol_str(reply, "code");
	if (!reply && cl->refused) {
		cli_error("%s: the request is %.1f MiB, past the server's %zu MiB per request: not "
			  "sent",
			  cmd, (double)cl->refused / (1 << 20), SERVER_MAX_LINE >> 20);
		return CLI_EXIT_USAGE;
	}
	if (!reply && cl->timed_out)
		cli_error("%s: %s: the server did not answer", cmd, cl->where);
	else if (!reply)
		cli_error("%s: %s: %s", cmd, cl->where, client_gone_why(cl));
	else if (client_idless_error(reply)) /* (what the server says of the connection) */
		cli_error("%s: %s: %s", cmd, cl->where, msg);
	else
		cli_error("%s: %s", cmd, msg ? msg : "unexpected reply");
	return code && (strcmp(code, "cannot_start") == 0 || strcmp(code, "dead") == 0)
		       ? CLI_EXIT_CANNOT_START
	       : code && strcmp(code, "usage") == 0 ? CLI_EXIT_USAGE
						    : CLI_EXIT_FAILED;
}

/* Whether ssh itself failed (its status 255: it could not connect or log in;
 * it has said why on our stderr), once the connection ended: reaped here, so
 * that client_close does not wait for it again. */
static bool client_ssh_failed(struct client *cl)
{
	if (cl->ssh <= 0 || !cl->eof)
		return false;
	int st;
	pid_t r;
	while ((r = waitpid(cl->ssh, &st, 0)) < 0 && errno == EINTR)
		;
	if (r != cl->ssh)
		return false;
	cl->ssh = 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 255;
}

int client_open(struct client *cl, const char *cmd, const struct client_target *t, bool autostart)
{
	char err[640] = "";
	memset(cl, 0, sizeof(*cl));
	cl->rfd = cl->wfd = -1;
	linebuf_init(&cl->lines, CLIENT_MAX_LINE);
	int rc;
	if (t->host) {
		rc = client_open_ssh(cl, t, err, sizeof(err));
	} else {
		rc = cli_client_connect_local(t->label, t->spath, autostart, err, sizeof(err));
		if (rc >= 0) {
			cl->rfd = cl->wfd = rc;
			char path[SERVER_SOCKET_PATH_MAX], e2[64];
			if (server_socket_path(t->label, t->spath, false, path, sizeof(path), e2,
					       sizeof(e2)) == 0)
				snprintf(cl->where, sizeof(cl->where), "%s", path);
		}
	}
	if (rc < 0) {
		cli_error("%s: %s", cmd, err);
		linebuf_free(&cl->lines);
		return -1;
	}
	cJSON *hello = client_request("hello", NULL);
	cJSON_AddNumberToObject(hello, "protocol", SERVER_PROTOCOL);
	uint64_t id = client_send(cl, hello);
	cJSON *reply =
		id ? client_reply(cl, id, t->host ? CLIENT_SSH_HELLO_MS : CLIENT_REPLY_MS) : NULL;
	if (!id) /* (closed before it read us: what it said first may be there still) */
		cJSON_Delete(client_reply(cl, UINT64_MAX, CLIENT_REPLY_MS));
	if (!reply || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		if (!reply && t->host && client_ssh_failed(cl))
			cli_error("%s: %s: ssh could not connect (exit status 255)", cmd, t->host);
		else if (!reply && t->host)
			cli_error("%s: %s: no answer through ssh (is ptybox installed there, on "
				  "the PATH of a non-interactive shell?)",
				  cmd, t->host);
		else
			client_error_exit(cmd, cl, reply);
		cJSON_Delete(reply);
		client_close(cl);
		return -1;
	}
	cJSON_Delete(reply);
	return 0;
}

/* One request, its reply checked: 0, or the exit status (message printed).
 * Within ms (0: as long as the server takes, as new and restart may while
 * an interpreter starts). */
int client_simple_within(struct client *cl, const char *cmd, cJSON *req, cJSON **out, int ms)
{
	uint64_t id = client_send(cl, req);
	cJSON *reply = id ? client_reply(cl, id, ms) : NULL;
	if (!reply || protocol_str(reply, "error")) {
		int rc = client_error_exit(cmd, cl, reply);
		cJSON_Delete(reply);
		return rc;
	}
	if (out)
		*out = reply;
	else
		cJSON_Delete(reply);
	return 0;
}

int cli_client_dial(const char *cmd, const char *label, const char *spath, const char *host,
		    struct cli_client_link *out)
{
	struct client cl;
	struct client_target t = {.label = label, .spath = spath, .host = host};
	if (client_open(&cl, cmd, &t, false) < 0)
		return CLI_EXIT_FAILED;
	out->rfd = cl.rfd;
	out->wfd = cl.wfd;
	out->ssh = cl.ssh;
	snprintf(out->where, sizeof(out->where), "%s", cl.where);
	cl.rfd = cl.wfd = -1; /* (handed over: client_close lets go of the rest) */
	cl.ssh = 0;
	client_close(&cl);
	return 0;
}

/* For the verbs in files of their own (cli_cp.c): the same connection, hello and deadlines. */
struct cli_conn {
	struct client cl;
};

int cli_conn_open(const char *cmd, const char *label, const char *spath, const char *host,
		  struct cli_conn **out)
{
	struct cli_conn *c = calloc(1, sizeof(*c));
	if (!c)
		abort(); /* out of memory is fatal (STYLE.md) */
	struct client_target t = {.label = label, .spath = spath, .host = host};
	if (client_open(&c->cl, cmd, &t, false) < 0) {
		free(c);
		return CLI_EXIT_FAILED;
	}
	*out = c;
	return 0;
}

uint64_t cli_conn_send(struct cli_conn *c, cJSON *req)
{
	return client_send(&c->cl, req);
}

cJSON *cli_conn_next(struct cli_conn *c, bool *interrupted)
{
	*interrupted = false;
	return client_next(&c->cl, true, interrupted);
}

uint64_t cli_conn_id(const cJSON *o)
{
	return client_id(o);
}

int cli_conn_error_exit(const char *cmd, struct cli_conn *c, const cJSON *reply)
{
	return client_error_exit(cmd, &c->cl, reply);
}

const char *cli_conn_where(const struct cli_conn *c)
{
	return c->cl.where;
}

void cli_conn_close(struct cli_conn *c)
{
	if (!c)
		return;
	client_close(&c->cl);
	free(c);
}

int client_simple(struct client *cl, const char *cmd, cJSON *req, cJSON **out)
{
	return client_simple_within(cl, cmd, req, out, 0);
}
