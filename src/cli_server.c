/*
 * cli_server.c - `ptybox server`: the multiplexer as a daemon on its socket,
 * and `ptybox dial-stdio`: that socket on standard input and output, for a
 * client on another machine (ssh host ptybox dial-stdio).
 *
 * The server daemonizes as tmux does: `ptybox server` forks, the child starts
 * a session of its own (no terminal), takes the socket's lock, binds, and
 * tells the parent through a pipe that it listens (or why it cannot), and
 * the parent exits with that. Its standard output and error go to the log
 * beside the socket.
 *
 * The lock file goes at the end, as tmux's lock does once its server
 * listens: unlinked while still held, so whoever opened it before then and
 * gets it after holds a name nobody sees. Each taker checks that the file it
 * locked is still the one at the path, and tries again if not; so at any
 * time one server at most holds the lock of the path. The log stays: it
 * says why the server ended (a signal, a sanitizer's report at its exit),
 * and the next server of the name appends to it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "conn.h"
#include "protocol.h"
#include "server.h"
#include "server_socket.h"

/* Replies a client may leave unread before it is dropped, beyond the largest
 * one (conn.c): one get's reply is an 86 MB line for a 64 MiB file. */
#define DAEMON_MAX_QUEUE ((size_t)64 << 20)
/* At the end, how long clients get to read what is left for them. */
#define DAEMON_FLUSH_MS 1000
/* The log beside the socket: past this, it starts over. */
#define DAEMON_LOG_MAX ((off_t)4 << 20)
/* How long `ptybox server` waits for its daemon to listen. */
#define DAEMON_START_MS 10000
/* How often connections are checked for their hello (SERVER_HELLO_MS). */
#define DAEMON_HELLO_SWEEP_MS 1000
/* Failed accepts (out of descriptors) are logged once in this long, counted. */
#define DAEMON_ACCEPT_LOG_MS 10000

struct daemon_conn {
	struct daemon_conn *next, *prev;
	struct daemon *d;
	struct conn *conn;
	struct server_client *client;
	uint64_t since_ms; /* accepted then: it has SERVER_HELLO_MS to say hello */
};

struct daemon {
	uv_loop_t *loop;
	struct server *server;
	uv_pipe_t listener;
	uv_signal_t sig[CLI_NSIGNALS];
	uv_timer_t flush;
	struct daemon_conn *conns;
	size_t nconns;
	struct conn_budget lines; /* every client's unfinished request line */
	uv_timer_t hellos;	  /* closes connections that say no hello */
	uint64_t accept_logged_ms;
	unsigned accept_failed; /* since the last log line of it */
	char path[SERVER_SOCKET_PATH_MAX];
	dev_t dev;
	ino_t ino;
	int lock_fd; /* held (flock) from listening to exit; -1 before */
	dev_t lock_dev;
	ino_t lock_ino;
	bool stopping;
};

/* How many times a server tries for a lock file that was unlinked under it
 * (each time by a server that ended: a handful at most). */
#define DAEMON_LOCK_TRIES 100

static void daemon_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void daemon_log(const char *fmt, ...)
{
	char when[32];
	struct stat st;
	/* (the daemon's stderr is the log: it starts over past its cap) */
	if (fstat(2, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > DAEMON_LOG_MAX &&
	    ftruncate(2, 0) < 0)
		return;
	time_t t = time(NULL);
	struct tm tm;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	fprintf(stderr, "%s ", when);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static int daemon_send(void *conn, char *line, size_t len)
{
	return conn_send(conn, line, len);
}

static void daemon_on_line(struct conn *c, const char *line, size_t len, bool too_long)
{
	struct daemon_conn *dc = c->data;
	if (!dc->client)
		return;
	if (too_long)
		server_client_too_long(dc->client);
	else
		server_client_line(dc->client, line, len);
}

static void daemon_on_close(struct conn *c, const char *why)
{
	struct daemon_conn *dc = c->data;
	struct daemon *d = dc->d;
	if (strncmp(why, "dropped", 7) == 0)
		daemon_log("client %p %s", (void *)dc, why);
	if (dc->client)
		server_client_gone(dc->client);
	if (dc->prev)
		dc->prev->next = dc->next;
	else
		d->conns = dc->next;
	if (dc->next)
		dc->next->prev = dc->prev;
	d->nconns--;
	free(dc);
}

/* Its input ended (a half-close, dial-stdio at the end of its input): the
 * replies owed still go, then it closes. */
static void daemon_drained(void *conn)
{
	conn_close(conn, "end of input");
}

static void daemon_on_eof(struct conn *c)
{
	struct daemon_conn *dc = c->data;
	if (!dc->client || server_client_eof(dc->client))
		conn_close(c, "end of input");
}

/* The input ended in the middle of a line: not parsed, but answered. */
static void daemon_on_cut(struct conn *c, size_t len)
{
	struct daemon_conn *dc = c->data;
	char msg[160];
	snprintf(msg, sizeof(msg),
		 "the input ended in the middle of a request line (%zu bytes without "
		 "a newline): skipped",
		 len);
	if (dc->client)
		server_client_notice(dc->client, "malformed", msg);
}

static void daemon_on_over_budget(struct conn *c, const char *why)
{
	size_t n = 0;
	char *line = server_error_line("limit", why, &n);
	conn_abort_saying(c, line, n, why); /* (on_close logs why) */
}

static const struct conn_callbacks daemon_conn_callbacks = {
	.on_line = daemon_on_line,
	.on_eof = daemon_on_eof,
	.on_cut = daemon_on_cut,
	.on_over_budget = daemon_on_over_budget,
	.on_close = daemon_on_close,
};

/* A connection that said no hello within SERVER_HELLO_MS is closed, told
 * why: else a client that leaks connections holds the server's places. */
static void daemon_hellos_cb(uv_timer_t *t)
{
	struct daemon *d = t->data;
	uint64_t now = uv_now(d->loop);
	unsigned closed = 0;
	for (struct daemon_conn *dc = d->conns; dc; dc = dc->next) {
		if (!dc->client || server_client_said_hello(dc->client) ||
		    now - dc->since_ms < SERVER_HELLO_MS)
			continue;
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "no hello within %d s: closed (a connection starts with "
			 "{\"op\":\"hello\",\"protocol\":%d})",
			 SERVER_HELLO_MS / 1000, SERVER_PROTOCOL);
		size_t n = 0;
		char *line = server_error_line("protocol", msg, &n);
		server_client_gone(dc->client); /* (nothing more to or from it) */
		dc->client = NULL;
		conn_abort_saying(dc->conn, line, n, "no hello");
		closed++;
	}
	if (closed) /* (one line for them all: the log is bounded) */
		daemon_log("closed %u connection%s: no hello within %d s", closed,
			   closed == 1 ? "" : "s", SERVER_HELLO_MS / 1000);
}

static void daemon_on_connection(uv_stream_t *listener, int status)
{
	struct daemon *d = listener->data;
	if (status < 0 && !d->stopping) {
		/* (out of descriptors: libuv took the connection and closed it) */
		uint64_t now = uv_now(d->loop);
		d->accept_failed++;
		if (!d->accept_logged_ms || now - d->accept_logged_ms >= DAEMON_ACCEPT_LOG_MS) {
			daemon_log("accept: %s (%u client%s refused)", uv_strerror(status),
				   d->accept_failed, d->accept_failed == 1 ? "" : "s");
			d->accept_logged_ms = now;
			d->accept_failed = 0;
		}
	}
	if (status < 0 || d->stopping)
		return;
	struct daemon_conn *dc = calloc(1, sizeof(*dc));
	if (!dc)
		return;
	dc->d = d;
	int rc = conn_accept(listener, SERVER_MAX_LINE, DAEMON_MAX_QUEUE, &daemon_conn_callbacks,
			     dc, &dc->conn);
	if (rc < 0) {
		daemon_log("accept: %s", uv_strerror(rc));
		free(dc);
		return;
	}
	conn_set_budget(dc->conn, &d->lines);
	dc->since_ms = uv_now(d->loop);
	dc->next = d->conns;
	if (d->conns)
		d->conns->prev = dc;
	d->conns = dc;
	if (++d->nconns > SERVER_MAX_CLIENTS) {
		char msg[128];
		snprintf(msg, sizeof(msg), "refused: %d clients are connected, the most",
			 SERVER_MAX_CLIENTS);
		daemon_log("%s", msg);
		size_t n = 0;
		char *line = server_error_line("limit", msg, &n);
		conn_abort_saying(dc->conn, line, n, "refused: too many clients");
		return;
	}
	uv_os_fd_t fd;
	unsigned uid = 0;
	if (uv_fileno((uv_handle_t *)&dc->conn->pipe, &fd) < 0 ||
	    !server_socket_peer_ok(fd, &uid)) {
		daemon_log("refused a client of uid %u (the server is uid %u's)", uid,
			   (unsigned)getuid());
		conn_abort(dc->conn, "refused: another user");
		return;
	}
	dc->client = server_client_new(d->server, 0, daemon_send, dc->conn);
	if (!dc->client)
		conn_abort(dc->conn, "dropped: out of memory");
	else
		server_client_set_drained(dc->client, daemon_drained);
}

static void daemon_closed_cb(uv_handle_t *h)
{
}

static void daemon_flush_cb(uv_timer_t *t)
{
	struct daemon *d = t->data;
	for (struct daemon_conn *dc = d->conns, *next; dc; dc = next) {
		next = dc->next;
		conn_abort(dc->conn, "the server stopped");
	}
	uv_close((uv_handle_t *)t, daemon_closed_cb);
}

static void daemon_on_stopped(struct server *sv, void *data)
{
	struct daemon *d = data;
	struct stat st;
	/* Only our socket: a server started since may have its own there. */
	if (lstat(d->path, &st) == 0 && st.st_dev == d->dev && st.st_ino == d->ino)
		unlink(d->path);
	daemon_log("stopped");
	for (struct daemon_conn *dc = d->conns, *next; dc; dc = next) {
		next = dc->next;
		if (dc->client)
			server_client_gone(dc->client);
		dc->client = NULL;
		conn_close(dc->conn, "the server stopped");
	}
	uv_timer_init(d->loop, &d->flush);
	d->flush.data = d;
	uv_timer_start(&d->flush, daemon_flush_cb, DAEMON_FLUSH_MS, 0);
	uv_unref((uv_handle_t *)&d->flush);
}

static void daemon_stop(struct daemon *d, const char *why)
{
	if (d->stopping)
		return;
	d->stopping = true;
	daemon_log("%s", why);
	uv_close((uv_handle_t *)&d->listener, daemon_closed_cb);
	uv_close((uv_handle_t *)&d->hellos, daemon_closed_cb);
	cli_signals_close(d->sig);
	server_shutdown(d->server, why);
}

static void daemon_on_kill_server(struct server *sv, void *data)
{
	daemon_stop(data, "shutting down: kill-server");
}

static void daemon_signal_cb(uv_signal_t *h, int signum)
{
	char why[96];
	snprintf(why, sizeof(why), "shutting down: stopped by signal %d (%s)", signum,
		 strsignal(signum));
	daemon_stop(h->data, why);
}

/* The socket's lock: taken, and still the file at its path (one that ended
 * may have unlinked the file we opened before we locked it). 0 or -errno. */
static int daemon_lock(struct daemon *d, char *err, size_t errlen)
{
	char lock[SERVER_SOCKET_PATH_MAX + 8];
	snprintf(lock, sizeof(lock), "%s.lock", d->path);
	for (int tries = 0; tries < DAEMON_LOCK_TRIES; tries++) {
		int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lfd < 0) {
			int e = errno;
			snprintf(err, errlen, "%s: %s", lock, strerror(e));
			return -e;
		}
		if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
			snprintf(err, errlen, "a server is already running at %s", d->path);
			close(lfd);
			return -EADDRINUSE;
		}
		struct stat held, named;
		if (fstat(lfd, &held) == 0 && lstat(lock, &named) == 0 &&
		    held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
			d->lock_fd = lfd; /* (open, and locked, as long as we live) */
			d->lock_dev = held.st_dev;
			d->lock_ino = held.st_ino;
			return 0;
		}
		close(lfd);
	}
	snprintf(err, errlen, "%s: unlinked under us %d times: refused", lock, DAEMON_LOCK_TRIES);
	return -EAGAIN;
}

/* At the very end, our lock file goes, still held: see the top of the file. */
static void daemon_unlock(struct daemon *d)
{
	char lock[SERVER_SOCKET_PATH_MAX + 8];
	struct stat st;
	if (d->lock_fd < 0)
		return;
	snprintf(lock, sizeof(lock), "%s.lock", d->path);
	if (lstat(lock, &st) == 0 && st.st_dev == d->lock_dev && st.st_ino == d->lock_ino)
		unlink(lock);
	close(d->lock_fd);
	d->lock_fd = -1;
}

/* Lock, bind, listen: 0 or -errno with err filled. */
static int daemon_listen(struct daemon *d, char *err, size_t errlen)
{
	int rc = daemon_lock(d, err, errlen);
	if (rc < 0)
		return rc;
	struct stat st;
	if (lstat(d->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a socket: refused", d->path);
			return -EEXIST;
		}
		unlink(d->path); /* a dead server's: nobody holds the lock */
	}
	uv_pipe_init(d->loop, &d->listener, 0);
	d->listener.data = d;
	mode_t old = umask(0177); /* the socket is born 0600 */
	rc = uv_pipe_bind(&d->listener, d->path);
	umask(old);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&d->listener, 128, daemon_on_connection);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", d->path, uv_strerror(rc));
		return rc;
	}
	if (lstat(d->path, &st) == 0) {
		d->dev = st.st_dev;
		d->ino = st.st_ino;
	}
	return 0;
}

static int daemon_run(const char *path, bool allow_remote, int ready_fd)
{
	struct daemon d = {
		.loop = uv_default_loop(), .lock_fd = -1, .lines = {.max = SERVER_LINES_BUDGET}};
	/* SERVER_MAX_CLIENTS connections and the sessions' own descriptors: every
	 * fd the hard limit gives (as serve --http), else a soft limit of 1024 runs
	 * out before the cap, and a client past it is closed unheard. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(d.path, sizeof(d.path), "%s", path);
	char err[512];
	struct server_config cfg = {
		.allow_remote_transports = allow_remote,
		.on_kill_server = daemon_on_kill_server,
		.on_stopped = daemon_on_stopped,
		.data = &d,
	};
	int rc = server_new(d.loop, &cfg, &d.server);
	if (rc == 0)
		rc = daemon_listen(&d, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "out of memory");
	if (ready_fd >= 0) {
		char msg[600];
		int n = snprintf(msg, sizeof(msg), "%s\n", rc == 0 ? "ok" : err);
		cli_write_all(ready_fd, msg, (size_t)n);
		close(ready_fd);
	}
	if (rc < 0) {
		cli_error("server: %s", err);
		daemon_unlock(&d);
		return CLI_EXIT_FAILED;
	}
	daemon_log("ptybox %s listening on %s (pid %d)", ptybox_version(), path, (int)getpid());
	cli_signals_start(d.loop, d.sig, daemon_signal_cb, &d);
	uv_timer_init(d.loop, &d.hellos);
	d.hellos.data = &d;
	uv_timer_start(&d.hellos, daemon_hellos_cb, DAEMON_HELLO_SWEEP_MS, DAEMON_HELLO_SWEEP_MS);
	uv_unref((uv_handle_t *)&d.hellos); /* (it never keeps the loop alive) */
	uv_run(d.loop, UV_RUN_DEFAULT);
	server_free(d.server);
	uv_loop_close(d.loop);
	daemon_unlock(&d);
	return CLI_EXIT_OK;
}

static const char server_usage[] =
	"Usage: ptybox server [-L NAME | -S PATH] [--foreground] [--allow-remote-transports]\n"
	"Start the server that holds named sessions (new starts it on first use).\n"
	"\n"
	"  -L NAME             the server's name (default \"default\")\n"
	"  -S PATH             the server's socket\n"
	"  --foreground        do not daemonize; log on standard error\n"
	"  --allow-remote-transports  let clients through dial-stdio start sessions\n"
	"                      --via ssh:, --via exec:, --via none and --python\n"
	"  -h, --help          this help\n";

int cli_server(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"foreground", no_argument, NULL, 'f'},
		{"allow-remote-transports", no_argument, NULL, 'a'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *label = NULL, *spath = NULL;
	bool foreground = false, allow_remote = false;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:L:S:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'L': label = optarg; break;
		case 'S': spath = optarg; break;
		case 'f': foreground = true; break;
		case 'a': allow_remote = true; break;
		case 'h': fputs(server_usage, stdout); return CLI_EXIT_OK;
		default: cli_bad_option("server", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("server: unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	char path[SERVER_SOCKET_PATH_MAX], err[512];
	if (server_socket_path(label, spath, true, path, sizeof(path), err, sizeof(err)) < 0) {
		cli_error("server: %s", err);
		return CLI_EXIT_FAILED;
	}
	if (foreground)
		return daemon_run(path, allow_remote, -1);
	char log[SERVER_SOCKET_PATH_MAX + 8];
	snprintf(log, sizeof(log), "%s.log", path);
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		cli_error("server: pipe: %s", strerror(errno));
		return CLI_EXIT_FAILED;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("server: fork: %s", strerror(errno));
		return CLI_EXIT_FAILED;
	}
	if (pid == 0) {
		close(p[0]);
		setsid(); /* no terminal: a hang-up of the starter's does not reach us */
		if (chdir("/") < 0)
			_exit(CLI_EXIT_FAILED);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (null < 0 || lfd < 0) {
			char msg[256];
			int n = snprintf(msg, sizeof(msg), "%s: %s\n", log, strerror(errno));
			cli_write_all(p[1], msg, (size_t)n);
			_exit(CLI_EXIT_FAILED);
		}
		/* A log past its cap starts over: bounded like everything else. */
		struct stat lst;
		if (fstat(lfd, &lst) == 0 && lst.st_size > DAEMON_LOG_MAX && ftruncate(lfd, 0) < 0)
			_exit(CLI_EXIT_FAILED);
		dup2(null, 0);
		dup2(lfd, 1);
		dup2(lfd, 2);
		/* Nothing of the starter's but the pipe: a test's or a shell's
		 * pipes held open by a daemon would never see their end. */
		int ready = fcntl(p[1], F_DUPFD_CLOEXEC, 3);
		if (ready != 3 && dup3(ready, 3, O_CLOEXEC) == 3)
			ready = 3;
		close_range(4, ~0U, 0);
		_exit(daemon_run(path, allow_remote, ready));
	}
	close(p[1]);
	/* Its first line: "ok", or why it could not listen. */
	char msg[600];
	size_t n = 0;
	struct pollfd pfd = {.fd = p[0], .events = POLLIN};
	while (n < sizeof(msg) - 1 && poll(&pfd, 1, DAEMON_START_MS) > 0) {
		ssize_t r = read(p[0], msg + n, sizeof(msg) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(msg, '\n', n))
			break;
	}
	close(p[0]);
	msg[n] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	if (strcmp(msg, "ok") == 0)
		return CLI_EXIT_OK;
	cli_error("server: %s", n ? msg : "the server did not start (see its log)");
	waitpid(pid, NULL, WNOHANG);
	return strstr(msg, "already running") ? CLI_EXIT_SERVER_RUNNING : CLI_EXIT_FAILED;
}

static const char dial_usage[] =
	"Usage: ptybox dial-stdio [-L NAME | -S PATH]\n"
	"Connect standard input and output to the server's socket (starting the\n"
	"server if none runs), for a client on another machine:\n"
	"ptybox -H ssh://HOST ... runs `ssh HOST ptybox dial-stdio`.\n";

/* Bytes from one fd to another until the end: a pump, nothing parsed. */
static int dial_pump(int sock)
{
	char buf[64 * 1024];
	struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return CLI_EXIT_FAILED;
		}
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(p[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n == 0 && i == 0) {
				/* The far client said all it will: the server hears the
				 * end, and what it answers before closing still goes. */
				shutdown(sock, SHUT_WR);
				p[0].fd = -1;
				continue;
			}
			if (n <= 0) /* the server's end: the conversation is over */
				return CLI_EXIT_OK;
			if (cli_write_all(i == 0 ? sock : 1, buf, (size_t)n) < 0)
				return CLI_EXIT_OK;
		}
	}
}

int cli_dial_stdio(int argc, char **argv)
{
	const char *label = NULL, *spath = NULL;
	int opt;
	optind = 1;
	opterr = 0;
	static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
						 {"socket", required_argument, NULL, 'S'},
						 {NULL, 0, NULL, 0}};
	while ((opt = getopt_long(argc, argv, "+:L:S:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'L': label = optarg; break;
		case 'S': spath = optarg; break;
		case 'h': fputs(dial_usage, stdout); return CLI_EXIT_OK;
		default: cli_bad_option("dial-stdio", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		}
	}
	char err[512];
	int sock = cli_client_connect_local(label, spath, true, err, sizeof(err));
	if (sock < 0) {
		cli_error("dial-stdio: %s", err);
		return CLI_EXIT_FAILED;
	}
	/* This connection is remote, whatever the far client says. */
	char hello[96];
	int hn = snprintf(hello, sizeof(hello),
			  "{\"op\":\"hello\",\"protocol\":%d,\"via\":\"dial-stdio\"}\n",
			  SERVER_PROTOCOL);
	if (cli_write_all(sock, hello, (size_t)hn) < 0) {
		cli_error("dial-stdio: the server closed the connection");
		return CLI_EXIT_FAILED;
	}
	/* Its answer is ours, not the far client's: read it up to its newline. */
	char line[1024];
	size_t len = 0;
	ssize_t n;
	char c;
	while ((n = read(sock, &c, 1)) == 1 && c != '\n')
		if (len < sizeof(line) - 1)
			line[len++] = c;
	line[len] = '\0';
	cJSON *o = n == 1 ? cJSON_Parse(line) : NULL;
	const char *error = protocol_str(o, "error");
	if (n != 1 || error) {
		/* (the far client hears it too: refused, it is told why) */
		cli_error("dial-stdio: %s", error ? error : "the server closed the connection");
		if (error) {
			line[len] = '\n';
			(void)cli_write_all(1, line, len + 1);
		}
		cJSON_Delete(o);
		return CLI_EXIT_FAILED;
	}
	cJSON_Delete(o);
	return dial_pump(sock);
}
