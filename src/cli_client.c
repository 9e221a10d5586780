/*
 * cli_client.c - the verbs that talk to a server: each opens a connection
 * (the local socket, or `ssh HOST ptybox dial-stdio` for -H), says hello,
 * sends its requests and shows the replies, with blocking I/O: a client has
 * nobody else to serve.
 */
#define _GNU_SOURCE
#include "cli_client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
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
#include "mount.h"
#include "cli_render.h"
#include "lang.h"
#include "linebuf.h"
#include "options.h"
#include "protocol.h"
#include "server.h"
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
	uint64_t next_id;
	char where[SERVER_SOCKET_PATH_MAX + 64];
};

/* How long a server may take to answer hello or a simple request: a server
 * that accepted and then hangs must not hang its clients (ssh also logs in). */
#define CLIENT_REPLY_MS	    5000
#define CLIENT_SSH_HELLO_MS 60000
/* How long kill-server waits for the server to be gone (it has said yes). */
#define CLIENT_STOP_MS 30000

static int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct client_target {
	const char *label, *spath, *host;
};

static volatile sig_atomic_t client_interrupts;

static void client_on_sigint(int sig)
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

static void client_close(struct client *cl)
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
static cJSON *client_next(struct client *cl, bool interruptible, bool *interrupted)
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
static uint64_t client_send(struct client *cl, cJSON *o)
{
	uint64_t id = ++cl->next_id;
	protocol_json_add_uint(o, "id", id);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return 0;
	size_t n = strlen(s);
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

static uint64_t client_id(const cJSON *o)
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
		if (client_id(o) == id && !cJSON_GetObjectItemCaseSensitive(o, "event"))
			break;
		cJSON_Delete(o);
	}
	cl->deadline_ms = 0;
	return o;
}

static cJSON *client_request(const char *op, const char *session)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	if (session)
		cJSON_AddStringToObject(o, "session", session);
	return o;
}

/* An error reply's exit status: 125 when a session could not start, 1 else. */
static int client_error_exit(const char *cmd, struct client *cl, const cJSON *reply)
{
	const char *msg = protocol_str(reply, "error"), *code = protocol_str(reply, "code");
	if (!reply && cl->timed_out)
		cli_error("%s: %s: the server did not answer", cmd, cl->where);
	else if (!reply)
		cli_error("%s: %s: the server closed the connection", cmd, cl->where);
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

static int client_open(struct client *cl, const char *cmd, const struct client_target *t,
		       bool autostart)
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
static int client_simple_within(struct client *cl, const char *cmd, cJSON *req, cJSON **out, int ms)
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

static int client_simple(struct client *cl, const char *cmd, cJSON *req, cJSON **out)
{
	return client_simple_within(cl, cmd, req, out, 0);
}

/* ---- the verbs ---- */

struct verb {
	const char *name;
	int (*run)(struct client *cl, const struct client_target *t, int argc, char **argv);
	bool autostart;
	const char *usage;
};

#define CLIENT_COMMON_HELP                                                                         \
	"  -L NAME             the server named NAME (default \"default\")\n"                      \
	"  -S PATH             the server at socket PATH\n"                                        \
	"  -H ssh://[user@]host[:port]  the server on another machine, through\n"                  \
	"                      `ssh host ptybox dial-stdio` (ptybox must be installed there)\n"

static int verb_bad_args(const char *cmd, int argc, char **argv, int optind_, int want_min,
			 int want_max)
{
	int n = argc - optind_;
	if (n < want_min) {
		cli_error("%s: missing the session's name", cmd);
		fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
		return CLI_EXIT_USAGE;
	}
	if (n > want_max) {
		cli_error("%s: unexpected argument '%s'", cmd, argv[optind_ + want_max]);
		fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* new's session options, as given (already checked), for the server to parse again. */
struct new_args {
	const char *key[512], *val[512];
	int n;
	struct cli_record_opts rec;
	char record[PATH_MAX]; /* rec.path, made absolute */
};

/* --record's path as the server needs it: absolute, since the server's folder is not ours.
 * With -H the file is on the server's machine, where our folder means nothing: it must be
 * absolute as given. -1 with the message printed. */
static int new_record_path(struct new_args *na, const char *host)
{
	const char *path = na->rec.path;
	if (!path) {
		if (na->rec.max) {
			cli_error("new: --record-max needs --record FILE");
			return -1;
		}
		return 0;
	}
	if (path[0] != '/' && host) {
		cli_error("new: --record %s: with -H the file is written on %s: give an absolute "
			  "path",
			  path, host);
		return -1;
	}
	char cwd[PATH_MAX];
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		cli_error("new: --record %s: the current folder: %s", path, strerror(errno));
		return -1;
	}
	int n = path[0] == '/' ? snprintf(na->record, sizeof(na->record), "%s", path)
			       : snprintf(na->record, sizeof(na->record), "%s/%s",
					  strcmp(cwd, "/") == 0 ? "" : cwd, path);
	if (n < 0 || (size_t)n >= sizeof(na->record)) {
		cli_error("new: --record %s: the path is too long", path);
		return -1;
	}
	return 0;
}

/* The host path of --opt given (a --mount's spec, --wheels' folder) as the server
 * needs it (as --record's, above): absolute against our folder, or as given with
 * -H. Into out; -1 with the message printed. */
static int new_host_path(const char *opt, const char *given, const char *host, char *out,
			 size_t cap)
{
	char cwd[PATH_MAX];
	int n;
	if (given[0] == '/') {
		n = snprintf(out, cap, "%s", given);
	} else if (host) {
		cli_error("new: --%s %s: with -H the folder is on %s: give an absolute path", opt,
			  given, host);
		return -1;
	} else if (!getcwd(cwd, sizeof(cwd))) {
		cli_error("new: --%s %s: the current folder: %s", opt, given, strerror(errno));
		return -1;
	} else {
		n = snprintf(out, cap, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, given);
	}
	if (n < 0 || (size_t)n >= cap) {
		cli_error("new: --%s %s: the path is too long", opt, given);
		return -1;
	}
	return 0;
}

/* A --mount's spec with its host path made absolute (new_host_path). Into out
 * (PATH_MAX * 2 + 8 bytes); -1 with the message printed. */
static int new_mount_spec(const char *spec, const char *host, char *out, size_t cap)
{
	struct mount_spec m;
	char why[PATH_MAX + 128];
	if (mount_parse(spec, &m, why, sizeof(why)) < 0) { /* (checked already) */
		cli_error("new: --mount %s: %s", spec, why);
		return -1;
	}
	if (m.host[0] == '/') {
		snprintf(out, cap, "%s", spec);
		return 0;
	}
	return new_host_path("mount", spec, host, out, cap);
}

static int verb_new(struct client *cl, const char *name, const struct new_args *na,
		    const char *host)
{
	cJSON *req = client_request("new", name);
	cJSON *opts = cJSON_AddObjectToObject(req, "options");
	for (int i = 0; i < na->n; i++) {
		const char *key = na->key[i], *val = na->val[i];
		if (!val) {
			cJSON_AddBoolToObject(opts, key, 1);
			continue;
		}
		if (strcmp(key, "env") == 0 || strcmp(key, "mount") == 0) {
			char spec[PATH_MAX * 2 + 8];
			if (key[0] == 'm' && new_mount_spec(val, host, spec, sizeof(spec)) < 0) {
				cJSON_Delete(req);
				return CLI_EXIT_USAGE;
			}
			cJSON *env = cJSON_GetObjectItemCaseSensitive(opts, key);
			if (!env)
				env = cJSON_AddArrayToObject(opts, key);
			cJSON_AddItemToArray(env, cJSON_CreateString(key[0] == 'm' ? spec : val));
		} else {
			char abs[PATH_MAX];
			if (strcmp(key, "wheels") == 0) { /* (a host folder, as --mount's) */
				if (new_host_path(key, val, host, abs, sizeof(abs)) < 0) {
					cJSON_Delete(req);
					return CLI_EXIT_USAGE;
				}
				val = abs;
			}
			cJSON_DeleteItemFromObjectCaseSensitive(opts, key); /* the last one wins */
			cJSON_AddStringToObject(opts, key, val);
		}
	}
	if (na->rec.path)
		cJSON_AddStringToObject(req, "record", na->record);
	if (na->rec.max)
		protocol_json_add_uint(req, "record_max", na->rec.max);
	return client_simple(cl, "new", req, NULL);
}

static int verb_simple(struct client *cl, const char *op, const char *name, const char *exec)
{
	cJSON *req = client_request(op, name);
	if (exec) {
		unsigned long long n;
		char *end;
		errno = 0;
		n = strtoull(exec, &end, 10);
		if (!exec[0] || *end || errno || n == 0) {
			cJSON_Delete(req);
			cli_error("%s: '%s': expected an execution's id (1, 2, ...)", op, exec);
			return CLI_EXIT_USAGE;
		}
		protocol_json_add_uint(req, "exec", n);
	}
	cJSON *reply = NULL;
	int rc = client_simple(cl, op, req, &reply);
	const cJSON *done = cJSON_GetObjectItemCaseSensitive(reply, "interrupted");
	if (rc == 0 && cJSON_IsFalse(done)) { /* (interrupt NAME ID) */
		const char *state = protocol_str(reply, "state");
		cli_error("%s: execution %s is not running (%s): nothing to interrupt", op, exec,
			  state && strcmp(state, "done") == 0 ? "it has ended"
							      : "it waits its turn");
		rc = CLI_EXIT_FAILED;
	}
	cJSON_Delete(reply);
	if (rc == 0 && strcmp(op, "kill-server") == 0) {
		/* The server closes its connections once its sessions are gone and
		 * its socket removed: kill-server returns then, so that the next
		 * command finds no server (or starts a fresh one). */
		cl->deadline_ms = client_now_ms() + CLIENT_STOP_MS;
		while ((reply = client_next(cl, false, NULL)))
			cJSON_Delete(reply);
		cl->deadline_ms = 0;
	}
	return rc;
}

/* A result in human form or as a line (--json); its exit status. */
static int client_show_result(struct cli_render *r, cJSON *result, bool with_output)
{
	if (with_output && !r->json) {
		const char *out = protocol_str(result, "stdout");
		const char *err = protocol_str(result, "stderr");
		if (out)
			cli_render_text(r, 1, out, strlen(out));
		if (err)
			cli_render_text(r, 2, err, strlen(err));
		const cJSON *display = cJSON_GetObjectItemCaseSensitive(result, "display");
		const cJSON *d;
		cJSON_ArrayForEach(d, display) cli_render_display(r, d);
	}
	return cli_render_result_json(r, result) == 1 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* After ^C: the first of ours is interrupted if it runs, cancelled if it
 * still waits behind someone else's (one of the two does nothing); those
 * after it are cancelled. */
static void client_stop_exec(struct client *cl, const char *name, uint64_t exec, bool first)
{
	if (!exec)
		return;
	for (int i = first ? 0 : 1; i < 2; i++) {
		cJSON *req = client_request(i == 0 ? "interrupt" : "cancel", name);
		protocol_json_add_uint(req, "exec", exec);
		client_send(cl, req);
	}
}

struct exec_args {
	const char *codes[4096];
	size_t ncodes;
	char *file_code;
	size_t file_len;
	const char *file;	/* FILE, or "-" */
	const char **file_argv; /* sys.argv: FILE, its ARGS, NULL */
	bool json, raw, no_wait, stop_on_error, stdin;
	double timeout;
	bool has_timeout;
	const char *env[PROTOCOL_ENV_MAX]; /* --env K=V: each snippet's */
	size_t nenv;
	const char *cwd; /* --cwd PATH: the folder each runs in */
	void *in_data;	 /* our standard input: the first snippet's */
	size_t in_len;
	bool has_in;
};

/* FILE and its ARGS (argv[from..argc)), as run takes them: sys.argv is FILE, ARGS; one of
 * our options among them was meant for us (it goes before FILE, or after -- for FILE). 0, or
 * -1 with the message printed. */
static int exec_file_args(struct exec_args *a, const char *file, int argc, char **argv, int from,
			  const struct option *longopts)
{
	a->file = file;
	if (!file) /* (nothing after NAME) */
		return 0;
	if (!protocol_utf8_valid(file, strlen(file))) {
		cli_error("exec: %s: the file name is not valid UTF-8", file);
		return -1;
	}
	a->file_argv = calloc((size_t)(argc - from) + 2, sizeof(*a->file_argv));
	if (!a->file_argv)
		abort(); /* out of memory is fatal (STYLE.md) */
	size_t n = 0;
	a->file_argv[n++] = file;
	bool dashes = false;
	for (int i = from; i < argc; i++) {
		if (!dashes && strcmp(argv[i], "--") == 0) {
			dashes = true;
			continue;
		}
		if (!dashes && cli_is_option(longopts, "LSHch", argv[i])) {
			cli_error("exec: options go before FILE (got '%s' after '%s'; -- before it "
				  "passes it to FILE)",
				  argv[i], file);
			fprintf(stderr, "Try 'ptybox exec --help'.\n");
			return -1;
		}
		if (!protocol_utf8_valid(argv[i], strlen(argv[i]))) {
			cli_error("exec: argument %d: not valid UTF-8", i - from + 1);
			return -1;
		}
		if (n == 4096) { /* (the driver's cap: sys.argv of 4096 strings) */
			cli_error("exec: more than 4095 arguments for %s", file);
			return -1;
		}
		a->file_argv[n++] = argv[i];
	}
	return 0;
}

/* FILE's result ended by sys.exit(N), N other than 0 (0 is ok): the status python3 FILE
 * exits with, from the error's "exit" (-1 when it is no such end). In human form it then
 * shows as python3 shows it: no traceback, a message (sys.exit("why")) alone on stderr. */
static int exec_file_exit(cJSON *result, bool json)
{
	cJSON *error = cJSON_GetObjectItemCaseSensitive(result, "error");
	const char *ename = protocol_str(error, "name"), *value = protocol_str(error, "value");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(error, "exit");
	const char *status = protocol_str(result, "status");
	if (!status || strcmp(status, "error") != 0 || !ename ||
	    (strcmp(ename, "SystemExit") != 0 && strcmp(ename, "ExitStatus") != 0) ||
	    !cJSON_IsNumber(st) || st->valueint < 0 || st->valueint > 255)
		return -1;
	int n = st->valueint;
	if (json)
		return n;
	const char *v = value ? value + (value[0] == '-') : "";
	if (v[0] && strspn(v, "0123456789") == strlen(v)) {
		cJSON_DeleteItemFromObjectCaseSensitive(result, "error");
	} else {
		cJSON *why = cJSON_CreateObject();
		cJSON_AddStringToObject(why, "name", value ? value : "");
		cJSON_ReplaceItemInObjectCaseSensitive(result, "error", why);
	}
	return n;
}

static int verb_exec_run(struct client *cl, const char *name, struct exec_args *a)
{
	struct cli_render r;
	cli_render_init(&r, a->json, a->raw, "execution");
	size_t n = a->ncodes + (a->file_code ? 1 : 0);
	uint64_t first = 0;
	for (size_t i = 0; i < n; i++) {
		cJSON *req = client_request("exec", name);
		cJSON_AddStringToObject(req, "code", i < a->ncodes ? a->codes[i] : a->file_code);
		if (i == a->ncodes && a->file_argv) { /* FILE, run as python3 FILE ARGS runs it */
			cJSON_AddStringToObject(req, "filename",
						strcmp(a->file, "-") == 0 ? "<stdin>" : a->file);
			cJSON *args = cJSON_AddArrayToObject(req, "argv");
			for (size_t k = 0; a->file_argv[k]; k++)
				cJSON_AddItemToArray(args, cJSON_CreateString(a->file_argv[k]));
		}
		if (a->has_timeout)
			cJSON_AddNumberToObject(req, "timeout", a->timeout);
		cJSON *env = a->nenv ? cJSON_AddObjectToObject(req, "env") : NULL;
		for (size_t k = 0; k < a->nenv; k++) {
			const char *eq = strchr(a->env[k], '=');
			char *key = strndup(a->env[k], (size_t)(eq - a->env[k]));
			if (!key)
				abort(); /* out of memory is fatal (STYLE.md) */
			cJSON_DeleteItemFromObjectCaseSensitive(env, key); /* (the last one wins) */
			cJSON_AddStringToObject(env, key, eq + 1);
			free(key);
		}
		if (a->cwd)
			cJSON_AddStringToObject(req, "cwd", a->cwd);
		if (i == 0 && a->has_in) {
			cJSON *in = cJSON_CreateString(a->in_data); /* (checked: UTF-8, no NUL) */
			if (!in)
				abort();
			cJSON_AddItemToObject(req, "stdin", in);
		}
		if (a->no_wait) {
			cJSON_AddBoolToObject(req, "wait", 0);
		} else {
			cJSON_AddBoolToObject(req, "stream", !a->json);
			cJSON_AddBoolToObject(req, "ack", 1);
		}
		if (a->stop_on_error)
			cJSON_AddBoolToObject(req, "stop_on_error", 1);
		uint64_t id = client_send(cl, req);
		if (!id)
			return client_error_exit("exec", cl, NULL);
		if (!first)
			first = id;
	}
	size_t done = 0, failed = 0;
	int file_exit = -1;   /* FILE's sys.exit(N), N not 0 */
	uint64_t running = 0; /* the execution ids, as the acks tell them */
	uint64_t execs[4096] = {0};
	bool interrupted_once = false;
	while (done < n) {
		bool intr = false;
		cJSON *o = client_next(cl, true, &intr);
		if (intr) {
			client_interrupts = 0;
			if (interrupted_once) /* a second ^C: leave now; it runs on */
				return 130;
			interrupted_once = true;
			for (size_t i = done; i < n; i++)
				client_stop_exec(cl, name, execs[i], i == done);
			continue;
		}
		if (!o) {
			cli_error("exec: %s: the server closed the connection", cl->where);
			return CLI_EXIT_FAILED;
		}
		uint64_t id = client_id(o);
		const char *event = protocol_str(o, "event");
		size_t k = id >= first && id < first + n ? (size_t)(id - first) : n;
		if (k == n) { /* a reply to an interrupt or cancel of ours */
			cJSON_Delete(o);
			continue;
		}
		if (event && strcmp(event, "accepted") == 0) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec");
			execs[k] = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
			running = execs[done];
			if (interrupted_once) /* a ^C came before its id did */
				client_stop_exec(cl, name, execs[k], k == done);
		} else if (event && strcmp(event, "stream") == 0) {
			const char *sname = protocol_str(o, "name"),
				   *text = protocol_str(o, "text");
			if (sname && text)
				cli_render_stream(&r, sname, text, strlen(text));
		} else if (event && strcmp(event, "display") == 0) {
			cli_render_display(&r, cJSON_GetObjectItemCaseSensitive(o, "data"));
		} else if (!event && a->no_wait &&
			   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"))) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec");
			printf("%.0f\n", cJSON_IsNumber(x) ? x->valuedouble : 0.0);
			done++;
		} else if (!event && protocol_str(o, "error")) {
			client_error_exit("exec", cl, o);
			failed++;
			done++;
		} else if (!event) {
			int fx = k == a->ncodes && a->file_argv ? exec_file_exit(o, a->json) : -1;
			if (fx >= 0) /* (a failure of its own kind) */
				file_exit = fx;
			if (client_show_result(&r, o, false) != CLI_EXIT_OK && fx < 0)
				failed++;
			done++;
			running = done < n ? execs[done] : 0;
		}
		cJSON_Delete(o);
	}
	(void)running;
	cli_render_text_end(&r, 1);
	cli_render_text_end(&r, 2);
	fflush(stdout);
	return interrupted_once ? 130
	       : failed		? CLI_EXIT_FAILED
	       : file_exit >= 0 ? file_exit
				: CLI_EXIT_OK;
}

static const char exec_usage[] =
	"Usage: ptybox exec NAME [OPTIONS] [-c CODE]... [FILE | - [ARGS...]]\n"
	"Run snippets in the session NAME of the server, in order, with the output and\n"
	"exit status of `ptybox run`.\n"
	"\n"
	"  -c CODE             a snippet (repeatable)\n"
	"  FILE, -             one more snippet from a file, or from standard input,\n"
	"                      run as python3 FILE ARGS runs it (as in run; options go\n"
	"                      before FILE; -- before an ARG that is one of ours)\n"
	"  --json              one result object per snippet per line on stdout\n"
	"  --raw               write output to a terminal as it is\n"
	"  --timeout SEC       this snippet's time limit (default: the session's)\n"
	"  --env NAME=VALUE    in os.environ while each of these snippets runs, and no\n"
	"                      longer (repeatable)\n"
	"  --cwd PATH          the folder each of them runs in (the session's own again\n"
	"                      after it)\n"
	"  --no-wait           print each execution's id and return at once\n"
	"  --stop-on-error     if a snippet fails, drop the ones queued after it\n"
	"  -i, --stdin         our standard input (a pipe or a file), read whole, is the\n"
	"                      first snippet's stdin (UTF-8 text, at most 16 MiB);\n"
	"                      without -i it is not read: end of file at once\n" CLIENT_COMMON_HELP;

static const char *const verb_usages[][2] = {
	{"new", "Usage: ptybox new NAME [--pool N] [--record FILE] [SESSION OPTIONS]\n"
		"Create the session NAME in the server (started if none runs); returns once\n"
		"it is ready. Takes the session options of `ptybox run` but --log (the\n"
		"server keeps its own log). --record: the server records the session\n"
		"from now until it ends.\n"
		"  --pool N            the server keeps N interpreters of these options started\n"
		"                      ahead, so that the next new with them is ready at once\n"},
	{"result", "Usage: ptybox result NAME [ID] [--json] [--raw] [--no-wait]\n"
		   "The result of execution ID of session NAME (default: the last), waiting\n"
		   "for it if it runs (--no-wait: its state, running or queued, and exit\n"
		   "status 4).\n"},
	{"ls", "Usage: ptybox ls [--json]\nThe server's sessions, one per line.\n"},
	{"interrupt", "Usage: ptybox interrupt NAME [ID]\n"
		      "Interrupt what runs in session NAME (only if it is execution ID).\n"},
	{"cancel", "Usage: ptybox cancel NAME ID\nDrop execution ID, queued and not started.\n"},
	{"restart", "Usage: ptybox restart NAME\nA fresh interpreter for session NAME.\n"},
	{"kill", "Usage: ptybox kill NAME\nEnd session NAME and its sandbox.\n"},
	{"kill-server", "Usage: ptybox kill-server\nEnd every session and the server.\n"},
	{"capture", "Usage: ptybox capture NAME [-e] [-S START]\n"
		    "The session's screen as text (-e: with colours; -S -N: N lines of\n"
		    "scrollback too).\n"},
	{"watch", "Usage: ptybox watch NAME\n"
		  "Follow session NAME live, as JSON lines (ptybox-protocol(7)).\n"},
	{"exec", exec_usage},
};

static const char *verb_usage(const char *cmd)
{
	for (size_t i = 0; i < sizeof(verb_usages) / sizeof(verb_usages[0]); i++)
		if (strcmp(verb_usages[i][0], cmd) == 0)
			return verb_usages[i][1];
	return "";
}

bool cli_client_verb(const char *cmd)
{
	return verb_usage(cmd)[0] != '\0';
}

static void client_ls_print(const cJSON *sessions, bool json)
{
	const cJSON *s;
	if (!json && cJSON_GetArraySize(sessions))
		printf("%-16s %-10s %-10s %-7s %8s %6s %-11s %9s %s\n", "NAME", "STATE", "VIA",
		       "LANG", "UPTIME", "EXECS", "LAST", "MEMORY", "CLIENTS");
	cJSON_ArrayForEach(s, sessions)
	{
		if (json) {
			cli_render_json_line(s);
			continue;
		}
		const cJSON *up = cJSON_GetObjectItemCaseSensitive(s, "uptime_s");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(s, "memory");
		const cJSON *ex = cJSON_GetObjectItemCaseSensitive(s, "executions");
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(s, "clients");
		char uptime[32], memory[32], via[64];
		double u = cJSON_IsNumber(up) ? up->valuedouble : 0;
		if (u < 120)
			snprintf(uptime, sizeof(uptime), "%.0fs", u);
		else if (u < 7200)
			snprintf(uptime, sizeof(uptime), "%.0fm", u / 60);
		else
			snprintf(uptime, sizeof(uptime), "%.0fh", u / 3600);
		if (cJSON_IsNumber(mem))
			snprintf(memory, sizeof(memory), "%.1fM", mem->valuedouble / (1 << 20));
		else
			snprintf(memory, sizeof(memory), "-");
		/* (a name is printable by construction; --via is the user's own
		 * words, but shown safe all the same) */
		const char *v = protocol_str(s, "via");
		snprintf(via, sizeof(via), "%s", v ? v : "?");
		for (char *p = via; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		const char *last = protocol_str(s, "last_status");
		/* (a language the server knows: one of lang.c's names) */
		const char *lang = protocol_str(s, "lang");
		printf("%-16s %-10s %-10s %-7s %8s %6.0f %-11s %9s %.0f\n", protocol_str(s, "name"),
		       protocol_str(s, "state"), via, lang && lang_find(lang) ? lang : "?", uptime,
		       cJSON_IsNumber(ex) ? ex->valuedouble : 0, last ? last : "-", memory,
		       cJSON_IsNumber(cl) ? cl->valuedouble : 0);
	}
}

int cli_client(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct client_target t = {0};
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"raw", no_argument, NULL, 'r'},
		{"no-wait", no_argument, NULL, 'n'},
		{"stop-on-error", no_argument, NULL, 'E'},
		{"stdin", no_argument, NULL, 'i'},
		{"cwd", required_argument, NULL, 0x1c0},
		{"pool", required_argument, NULL, 'P'},
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		CLI_RECORD_LONGOPTS,
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	bool is_new = strcmp(cmd, "new") == 0, is_exec = strcmp(cmd, "exec") == 0;
	bool is_capture = strcmp(cmd, "capture") == 0;
	static struct exec_args a;
	memset(&a, 0, sizeof(a));
	bool escapes = false;
	const char *start = NULL;
	static struct new_args na;
	na.n = 0;
	memset(&na.rec, 0, sizeof(na.rec));
	int opt, ro;
	optind = 1;
	opterr = 0;
	/* (capture's -S is its scrollback start, as tmux's capture-pane has it) */
	/* (GNU order: the name first, options after it, as tmux takes them) */
	/* (exec: in order, "-": NAME, then FILE, after which all is FILE's ARGS, as
	 * run takes them) */
	const char *shortopts = is_capture ? ":L:H:c:ehS:"
				: is_exec  ? "-:L:S:H:c:hi"
					   : ":L:S:H:c:h";
	const char *exec_pos[2] = {NULL, NULL}; /* exec's NAME and FILE */
	int npos = 0;
	bool want_name = strcmp(cmd, "ls") != 0 && strcmp(cmd, "kill-server") != 0;
	int li = -1;
	while ((li = -1, opt = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
		if (opt != 'c' && optarg && cli_value_missing(cmd, longopts, li, opt, optarg))
			return CLI_EXIT_USAGE;
		if (opt == 1) { /* (exec only) */
			exec_pos[npos++] = optarg;
			if (npos == 2)
				break;
			continue;
		}
		switch (opt) {
		case 'L': t.label = optarg; break;
		case 'S':
			if (is_capture)
				start = optarg;
			else
				t.spath = optarg;
			break;
		case 'H': t.host = optarg; break;
		case 's': t.spath = optarg; break;
		case 'e': escapes = true; break;
		case 'h':
			printf("%s%s", verb_usage(cmd), is_exec ? "" : CLIENT_COMMON_HELP);
			if (is_new)
				printf("%s\n%s", cli_record_help, cli_server_session_help);
			return CLI_EXIT_OK;
		case 'j':
		case 'r':
		case 'n':
		case 'i':
		case 'E': {
			/* (each where its help lists it, and only there) */
			static const struct {
				int opt;
				const char *name, *takers, *said;
			} only[] = {
				{'j', "json", " exec result ls ", "exec, result and ls"},
				{'r', "raw", " exec result ", "exec and result"},
				{'n', "no-wait", " exec result ", "exec and result"},
				{'E', "stop-on-error", " exec ", "exec"},
				{'i', "stdin", " exec ", "exec"},
			};
			size_t i = 0;
			while (only[i].opt != opt)
				i++;
			char word[32];
			snprintf(word, sizeof(word), " %s ", cmd);
			if (!strstr(only[i].takers, word)) {
				cli_error("%s: option '--%s' is for %s", cmd, only[i].name,
					  only[i].said);
				return CLI_EXIT_USAGE;
			}
			a.json |= opt == 'j';
			a.raw |= opt == 'r';
			a.no_wait |= opt == 'n';
			a.stop_on_error |= opt == 'E';
			a.stdin |= opt == 'i';
			break;
		}
		case 'P':
			if (!is_new) {
				cli_error("%s: option '--pool' is for new", cmd);
				return CLI_EXIT_USAGE;
			}
			na.key[na.n] = "pool";
			na.val[na.n++] = optarg;
			break;
		case 'c':
			if (!is_exec) {
				cli_bad_option(cmd, '?', "-c");
				return CLI_EXIT_USAGE;
			}
			if (a.ncodes == 4096) {
				cli_error("exec: more than 4096 snippets");
				return CLI_EXIT_USAGE;
			}
			if (!protocol_utf8_valid(optarg, strlen(optarg))) {
				cli_error("exec: -c #%zu: not valid UTF-8", a.ncodes + 1);
				return CLI_EXIT_USAGE;
			}
			a.codes[a.ncodes++] = optarg;
			break;
		case '?':
			if (want_name && optopt && optopt != '?' &&
			    strncmp(argv[optind - 1], "--", 2) != 0) {
				/* ("new -bad": a name, or options? neither) */
				cli_error("%s: unknown option '-%c' (a session's name cannot start "
					  "with '-')",
					  cmd, optopt);
				fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
				return CLI_EXIT_USAGE;
			}
			cli_bad_option(cmd, opt, argv[optind - 1]);
			return CLI_EXIT_USAGE;
		case ':': /* (-c is exec's only) */
			cli_bad_option(cmd, optopt == 'c' && !is_exec ? '?' : opt,
				       argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			if (opt == 0x1c0 || (is_exec && opt == 0x10a)) { /* --cwd, --env: each's */
				const char *on = opt == 0x1c0 ? "cwd" : "env";
				if (!is_exec) {
					cli_error("%s: option '--%s' is for exec", cmd, on);
					return CLI_EXIT_USAGE;
				}
				if (!protocol_utf8_valid(optarg, strlen(optarg))) {
					cli_error("exec: --%s %s: not valid UTF-8", on, optarg);
					return CLI_EXIT_USAGE;
				}
				if (opt == 0x1c0) {
					if (!optarg[0]) {
						cli_error("exec: --cwd needs a folder");
						return CLI_EXIT_USAGE;
					}
					a.cwd = optarg;
					break;
				}
				const char *eq = strchr(optarg, '=');
				if (!eq || eq == optarg) {
					cli_error("exec: --env %s: expected NAME=VALUE", optarg);
					return CLI_EXIT_USAGE;
				}
				if (a.nenv == PROTOCOL_ENV_MAX) {
					cli_error("exec: more than %d --env", PROTOCOL_ENV_MAX);
					return CLI_EXIT_USAGE;
				}
				a.env[a.nenv++] = optarg;
				break;
			}
			if (is_exec && opt == 0x101) { /* --timeout: this snippet's */
				if (options_parse_seconds(optarg, &a.timeout) < 0) {
					cli_error("exec: --timeout %s: expected seconds from 0 to "
						  "31536000 (a year), e.g. 1.5",
						  optarg);
					return CLI_EXIT_USAGE;
				}
				a.has_timeout = true;
				break;
			}
			if (is_new && (ro = cli_record_opt(&na.rec, opt, optarg, "new")) != 0) {
				if (ro < 0)
					return CLI_EXIT_USAGE;
				break;
			}
			if (!is_new) {
				const struct option *lo = longopts;
				while (lo->name && lo->val != opt)
					lo++;
				cli_error("%s: option '--%s' is for %s", cmd,
					  lo->name ? lo->name : "?",
					  opt == 0x120 || opt == 0x121 ? "run, repl and attach"
					  : opt == 0x10c	       ? "run, repl and serve"
								       : "new");
				return CLI_EXIT_USAGE;
			}
			if (cli_session_opt(&so, opt, optarg, "new") != 1)
				return CLI_EXIT_USAGE;
			if (opt == 0x10c) {
				cli_error("new: --log: the server keeps its own log, beside its "
					  "socket");
				return CLI_EXIT_USAGE;
			}
			for (const struct option *lo = longopts; lo->name && na.n < 512; lo++)
				if (lo->val == opt) {
					na.key[na.n] = lo->name;
					na.val[na.n++] = lo->has_arg == no_argument ? NULL : optarg;
					break;
				}
		}
	}
	if (is_exec && npos < 2 && optind < argc) /* (after "--") */
		exec_pos[npos++] = argv[optind++];
	if (is_exec && npos < 2 && optind < argc)
		exec_pos[npos++] = argv[optind++];
	if (is_exec && !exec_pos[0]) {
		cli_error("exec: missing the session's name");
		fprintf(stderr, "Try 'ptybox exec --help'.\n");
		return CLI_EXIT_USAGE;
	}
	if (is_exec && exec_file_args(&a, exec_pos[1], argc, argv, optind, longopts) < 0) {
		free(a.file_argv);
		return CLI_EXIT_USAGE;
	}
	int want_min = strcmp(cmd, "ls") == 0 || strcmp(cmd, "kill-server") == 0 ? 0 : 1;
	int want_max = want_min == 0 ? 0
		       : is_exec     ? 2
		       : strcmp(cmd, "result") == 0 || strcmp(cmd, "interrupt") == 0 ||
				       strcmp(cmd, "cancel") == 0
			       ? 2
			       : 1;
	if (strcmp(cmd, "cancel") == 0)
		want_min = 2;
	if (strcmp(cmd, "cancel") == 0 && argc - optind == 1) {
		cli_error("cancel: missing the execution's id (ptybox cancel NAME ID)");
		return CLI_EXIT_USAGE;
	}
	int bad = is_exec ? 0 : verb_bad_args(cmd, argc, argv, optind, want_min, want_max);
	if (bad)
		return bad;
	const char *name = is_exec ? exec_pos[0] : want_min ? argv[optind] : NULL;
	if (is_exec) {
		if (a.file && !(a.file_code = cli_read_code("exec", a.file, &a.file_len))) {
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		if (a.ncodes == 0 && !a.file_code) {
			cli_error("exec: nothing to run: give -c CODE or a FILE (- for standard "
				  "input)");
			return CLI_EXIT_USAGE;
		}
		/* Our standard input is the first snippet's with -i alone (as docker exec
		 * -i): a caller that leaves an open pipe on it must not wait for us. */
		if (a.stdin && a.file && strcmp(a.file, "-") == 0) {
			cli_error("exec: -i and - both take standard input (the code comes from "
				  "it: leave out -i)");
			free(a.file_code);
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		int got = !a.stdin ? 0 : cli_read_stdin("exec", &a.in_data, &a.in_len);
		if (got > 0 && (memchr(a.in_data, '\0', a.in_len) ||
				!protocol_utf8_valid(a.in_data, a.in_len))) {
			cli_error("exec: standard input: not UTF-8 text without NUL (the "
				  "server takes a snippet's stdin as text)");
			got = -1;
		}
		if (got < 0) {
			free(a.in_data);
			free(a.file_code);
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		if (got > 0) { /* (a string for cJSON: its NUL) */
			char *buf = realloc(a.in_data, a.in_len + 1);
			if (!buf)
				abort();
			buf[a.in_len] = '\0';
			a.in_data = buf;
			a.has_in = true;
		}
	}
	if (is_new && new_record_path(&na, t.host) < 0)
		return CLI_EXIT_USAGE;
	if (is_new) {
		cli_warn_unsandboxed(&so.o);
		cli_warn_unenforced(&so);
	}
	struct client cl;
	if (client_open(&cl, cmd, &t, is_new) < 0) {
		free(a.file_code);
		free(a.in_data);
		free(a.file_argv);
		return CLI_EXIT_FAILED;
	}
	struct sigaction sa = {.sa_handler = client_on_sigint}; /* (no SA_RESTART: reads end) */
	sigaction(SIGINT, &sa, NULL);
	int rc = 0;
	if (is_new) {
		rc = verb_new(&cl, name, &na, t.host);
	} else if (is_exec) {
		rc = verb_exec_run(&cl, name, &a);
	} else if (strcmp(cmd, "ls") == 0) {
		cJSON *reply = NULL;
		rc = client_simple_within(&cl, cmd, client_request("ls", NULL), &reply,
					  CLIENT_REPLY_MS);
		if (rc == 0)
			client_ls_print(cJSON_GetObjectItemCaseSensitive(reply, "sessions"),
					a.json);
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "result") == 0) {
		cJSON *req = client_request("result", name);
		if (optind + 1 < argc) {
			char *end;
			unsigned long long n = strtoull(argv[optind + 1], &end, 10);
			if (!argv[optind + 1][0] || *end || n == 0) {
				cli_error("result: '%s': expected an execution's id (1, 2, ...)",
					  argv[optind + 1]);
				cJSON_Delete(req);
				client_close(&cl);
				return CLI_EXIT_USAGE;
			}
			protocol_json_add_uint(req, "exec", n);
		}
		if (a.no_wait)
			cJSON_AddBoolToObject(req, "wait", 0);
		cJSON *reply = NULL;
		rc = client_simple(&cl, cmd, req, &reply);
		if (rc == 0 && protocol_str(reply, "status")) {
			struct cli_render r;
			cli_render_init(&r, a.json, a.raw, "execution");
			rc = client_show_result(&r, reply, true);
		} else if (rc == 0) { /* --no-wait: it has not ended, which is not "ok" */
			printf("%s\n",
			       protocol_str(reply, "state") ? protocol_str(reply, "state") : "?");
			rc = CLI_EXIT_NOT_ENDED;
		}
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "interrupt") == 0 || strcmp(cmd, "cancel") == 0) {
		rc = verb_simple(&cl, cmd, name, optind + 1 < argc ? argv[optind + 1] : NULL);
	} else if (strcmp(cmd, "restart") == 0 || strcmp(cmd, "kill") == 0 ||
		   strcmp(cmd, "kill-server") == 0) {
		rc = verb_simple(&cl, cmd, name, NULL);
	} else if (is_capture) {
		cJSON *req = client_request("capture", name);
		if (escapes)
			cJSON_AddBoolToObject(req, "escapes", 1);
		if (start) {
			char *end;
			long n = strtol(start, &end, 10);
			if (!start[0] || *end) {
				cli_error("capture: -S %s: expected a line number (-100: 100 lines "
					  "of scrollback)",
					  start);
				cJSON_Delete(req);
				client_close(&cl);
				return CLI_EXIT_USAGE;
			}
			cJSON_AddNumberToObject(req, "start", (double)n);
		}
		cJSON *reply = NULL;
		rc = client_simple_within(&cl, cmd, req, &reply, CLIENT_REPLY_MS);
		const char *text = protocol_str(reply, "text");
		if (rc == 0 && text)
			cli_render_out(1, text, strlen(text));
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "watch") == 0) {
		uint64_t id = client_send(&cl, client_request("watch", name));
		cJSON *o;
		bool intr = false, ended = false;
		rc = CLI_EXIT_OK;
		while (id && (o = client_next(&cl, true, &intr))) {
			if (protocol_str(o, "error") && client_id(o) == id) {
				rc = client_error_exit(cmd, &cl, o);
				cJSON_Delete(o);
				break;
			}
			cli_render_json_line(o);
			const char *event = protocol_str(o, "event");
			ended = event && strcmp(event, "killed") == 0;
			cJSON_Delete(o);
			if (ended)
				break;
		}
		if (intr) {
			rc = 130;
		} else if (rc == CLI_EXIT_OK && !ended) { /* (the server went away) */
			cli_error("watch: %s: the server closed the connection", cl.where);
			rc = CLI_EXIT_FAILED;
		}
	}
	client_close(&cl);
	free(a.file_code);
	free(a.in_data);
	free(a.file_argv);
	return rc;
}
