/*
 * cli_mcp.c - `ptybox mcp`: an MCP server on standard input and output
 * (newline-delimited JSON-RPC), for agents. mcp.c turns its messages into
 * the server's protocol; this file carries the lines: from stdin to mcp.c,
 * from mcp.c to a server, and back to stdout through the same bounded queue
 * serve --stdio writes through (conn.c).
 *
 * The server is one of this process (sessions that end with it, as serve
 * --stdio's do) or, with -L, -S or -H, another's: then an agent and a
 * person (ptybox attach, ptybox exec) share its sessions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "conn.h"
#include "mcp.h"
#include "mount.h"
#include "options.h"
#include "server.h"
#include "stdio_lines.h"

/* The longest line an MCP client may send: a put_file's content in base64
 * (a larger one is answered with one error line and skipped). */
#define MCP_MAX_LINE ((size_t)64 << 20)
/* Replies waiting for a client that does not read: past this, mcp stops. */
#define MCP_MAX_QUEUE ((size_t)256 << 20)
/* The longest line from a server: a result (some 4x --max-output) or a get. */
#define MCP_SERVER_LINE ((size_t)1 << 30)

/* A line for the server in this process, held until the next loop turn: the
 * server must not be entered from inside its own send callback. The queue
 * empties every turn, so it holds what one turn's input made: one read's
 * lines (64 KiB), two requests each at most, and mcp.c caps the calls
 * waiting (MCP_MAX_CALLS). */
struct mcp_pending_line {
	struct mcp_pending_line *next;
	char *line;
	size_t len;
};

struct mcp_cli {
	uv_loop_t *loop;
	struct mcp *mcp;
	struct conn *out;      /* standard output */
	struct conn *pin;      /* standard input when it is a pipe, */
	struct stdio_lines in; /* else this */
	/* in this process */
	struct server *server;
	struct server_client *client;
	struct mcp_pending_line *queue, **queue_tail;
	uv_idle_t flush;
	bool flush_open;
	bool stop_soon; /* the last call answered after the end of input: stop next turn */
	/* another server's */
	struct conn *srv_in, *srv_out;
	pid_t ssh;
	cJSON *options;
	uv_signal_t sig[CLI_NSIGNALS];
	bool eof, stopping, stopped;
	int exit_code;
};

static const char mcp_usage[] =
	"Usage: ptybox mcp [-L NAME | -S PATH | -H ssh://HOST] [SESSION OPTIONS]\n"
	"An MCP server (Model Context Protocol, revision " MCP_PROTOCOL_LATEST
	") on standard input\n"
	"and output, for agents: tools run_code, new_session, list_sessions, interrupt,\n"
	"restart, kill_session, put_file and get_file. Pictures come back as images.\n"
	"\n"
	"Without -L, -S or -H its sessions are its own and end with it; with one of\n"
	"them they are that server's (started if none runs, for -L and -S), shared\n"
	"with ptybox attach and ptybox exec. The session options apply to each\n"
	"session it makes.\n"
	"\n"
	"  -L NAME             the server named NAME\n"
	"  -S PATH             the server at socket PATH\n"
	"  -H ssh://[user@]host[:port]  the server on another machine (ptybox\n"
	"                      must be installed there; -L or -S: which one there)\n"
	"  --pool N            keep N interpreters of these options started ahead\n"
	"  -h, --help          this help\n"
	"\n";

static const char mcp_usage_tail[] =
	"\n"
	"An mcpServers entry: {\"command\": \"ptybox\", \"args\": [\"mcp\"]}.\n"
	"Exit status: 0 standard input ended, 1 the server or standard output went\n"
	"away, 2 usage error, 128+N stopped by signal N.\n";

static void mcp_cli_stop(struct mcp_cli *mc);

/* ---- the server in this process ---- */

static void mcp_cli_flush_cb(uv_idle_t *h)
{
	struct mcp_cli *mc = h->data;
	/* (lines the server's replies add now wait for the next turn) */
	struct mcp_pending_line *l = mc->queue;
	mc->queue = NULL;
	mc->queue_tail = &mc->queue;
	uv_idle_stop(&mc->flush);
	while (l) {
		struct mcp_pending_line *next = l->next;
		if (mc->client && !mc->stopping)
			server_client_line(mc->client, l->line, l->len - 1);
		free(l->line);
		free(l);
		l = next;
	}
	if (mc->stop_soon && !mc->queue)
		mcp_cli_stop(mc);
}

static void mcp_cli_to_local(struct mcp_cli *mc, char *line, size_t len)
{
	struct mcp_pending_line *l = malloc(sizeof(*l));
	if (!l)
		abort();
	l->next = NULL;
	l->line = line;
	l->len = len;
	*mc->queue_tail = l;
	mc->queue_tail = &l->next;
	uv_idle_start(&mc->flush, mcp_cli_flush_cb);
}

/* The server's lines to this client (serve's send function, in effect). */
static int mcp_cli_local_send(void *conn, char *line, size_t len)
{
	struct mcp_cli *mc = conn;
	if (mc->mcp && !mc->stopped)
		mcp_server_line(mc->mcp, line, len && line[len - 1] == '\n' ? len - 1 : len);
	free(line);
	if (mc->eof && mc->mcp && mcp_pending(mc->mcp) == 0 && mc->flush_open) {
		/* (not from inside the server's own send: on the next turn) */
		mc->stop_soon = true;
		uv_idle_start(&mc->flush, mcp_cli_flush_cb);
	}
	return 0;
}

static void mcp_cli_on_stopped(struct server *server, void *data)
{
	struct mcp_cli *mc = data;
	mc->stopped = true;
	if (mc->client)
		server_client_gone(mc->client);
	mc->client = NULL;
	if (mc->out)
		conn_close(mc->out, "done");
	if (mc->flush_open)
		uv_close((uv_handle_t *)&mc->flush, NULL);
	mc->flush_open = false;
	if (mc->in.reading)
		uv_stop(mc->loop);
}

static void mcp_cli_on_kill_server(struct server *server, void *data)
{
	mcp_cli_stop(data);
}

/* ---- another server ---- */

static void mcp_cli_srv_line(struct conn *c, const char *line, size_t len, bool too_long)
{
	struct mcp_cli *mc = c->data;
	if (too_long) {
		cli_error("mcp: a line from the server passed %zu MiB: dropped",
			  MCP_SERVER_LINE >> 20);
		return;
	}
	mcp_server_line(mc->mcp, line, len);
	if (mc->eof && mcp_pending(mc->mcp) == 0)
		mcp_cli_stop(mc);
}

static void mcp_cli_srv_close(struct conn *c, const char *why)
{
	struct mcp_cli *mc = c->data;
	if (c == mc->srv_in)
		mc->srv_in = NULL;
	else
		mc->srv_out = NULL;
	if (!mc->stopping) {
		mcp_server_gone(mc->mcp, why);
		mc->exit_code = CLI_EXIT_FAILED;
		mcp_cli_stop(mc);
	}
	if (!mc->srv_in && !mc->srv_out && mc->out)
		conn_close(mc->out, "done");
}

static const struct conn_callbacks mcp_cli_srv_callbacks = {
	.on_line = mcp_cli_srv_line,
	.on_close = mcp_cli_srv_close,
};

/* ---- the sinks ---- */

static void mcp_cli_to_client(void *data, char *line, size_t len)
{
	struct mcp_cli *mc = data;
	if (!mc->out) {
		free(line);
		return;
	}
	conn_send(mc->out, line, len); /* (past its cap it drops itself: on_close) */
}

static void mcp_cli_to_server(void *data, char *line, size_t len)
{
	struct mcp_cli *mc = data;
	if (mc->server)
		mcp_cli_to_local(mc, line, len);
	else if (mc->srv_out)
		conn_send(mc->srv_out, line, len);
	else
		free(line);
}

static void mcp_cli_fatal(void *data, const char *why)
{
	struct mcp_cli *mc = data;
	cli_error("mcp: %s", why);
	mc->exit_code = CLI_EXIT_FAILED;
	mcp_cli_stop(mc);
}

/* ---- standard input and output ---- */

static void mcp_cli_stop(struct mcp_cli *mc)
{
	if (mc->stopping)
		return;
	mc->stopping = true;
	stdio_lines_close(&mc->in);
	if (mc->pin)
		conn_abort(mc->pin, "stopped");
	cli_signals_close(mc->sig);
	if (mc->server) {
		server_shutdown(mc->server, "shutting down");
		return;
	}
	/* (a server elsewhere: what runs there runs on, as for any client) */
	if (mc->srv_out)
		conn_close(mc->srv_out, "done");
	if (mc->srv_in)
		conn_abort(mc->srv_in, "done");
	if (!mc->srv_in && !mc->srv_out && mc->out)
		conn_close(mc->out, "done");
}

static void mcp_cli_out_closed(struct conn *c, const char *why)
{
	struct mcp_cli *mc = c->data;
	mc->out = NULL;
	if (strncmp(why, "write: ", 7) == 0)
		why += 7;
	if (strcmp(why, "done") != 0 && strncasecmp(why, "broken pipe", 11) != 0)
		cli_error("mcp: standard output: %s", why);
	if (!mc->stopping) {
		mc->exit_code = CLI_EXIT_FAILED;
		mcp_cli_stop(mc);
	}
}

static const struct conn_callbacks mcp_cli_out_callbacks = {.on_close = mcp_cli_out_closed};

static void mcp_cli_line(struct mcp_cli *mc, const char *line, size_t len, bool too_long)
{
	if (mc->stopping)
		return;
	if (too_long)
		mcp_client_too_long(mc->mcp, MCP_MAX_LINE);
	else
		mcp_client_line(mc->mcp, line, len);
}

static void mcp_cli_eof(struct mcp_cli *mc)
{
	mc->eof = true;
	if (mcp_pending(mc->mcp) == 0) /* (else once the last call is answered) */
		mcp_cli_stop(mc);
}

static void mcp_cli_in_line(struct stdio_lines *l, const char *line, size_t len, bool too_long)
{
	mcp_cli_line(l->data, line, len, too_long);
}

static void mcp_cli_in_eof(struct stdio_lines *l, int err)
{
	if (err < 0)
		cli_error("mcp: standard input: %s", uv_strerror(err));
	mcp_cli_eof(l->data);
}

static void mcp_cli_pin_line(struct conn *c, const char *line, size_t len, bool too_long)
{
	mcp_cli_line(c->data, line, len, too_long);
}

static void mcp_cli_pin_close(struct conn *c, const char *why)
{
	struct mcp_cli *mc = c->data;
	mc->pin = NULL;
	if (strncmp(why, "read: ", 6) == 0)
		cli_error("mcp: standard input: %s", why + 6);
	if (!mc->stopping)
		mcp_cli_eof(mc);
}

static const struct conn_callbacks mcp_cli_in_callbacks = {
	.on_line = mcp_cli_pin_line,
	.on_close = mcp_cli_pin_close,
};

static void mcp_cli_signal_cb(uv_signal_t *h, int signum)
{
	struct mcp_cli *mc = h->data;
	mc->exit_code = 128 + signum;
	mc->eof = true;
	mcp_cli_stop(mc);
}

/* ---- the options ---- */

/* A session option as new's "options" member has it (cli_client.c's verb_new
 * does the same for `ptybox new`): a host path must be absolute, since the
 * server's folder is not ours. -1 with the message printed. */
static int mcp_cli_add_option(cJSON *opts, const struct option *lo, const char *arg)
{
	if (lo->has_arg == no_argument) {
		cJSON_AddBoolToObject(opts, lo->name, 1);
		return 0;
	}
	if (strcmp(lo->name, "mount") == 0) {
		struct mount_spec m;
		char why[4200];
		if (mount_parse(arg, &m, why, sizeof(why)) < 0 || m.host[0] != '/') {
			cli_error("mcp: --mount %s: %s", arg,
				  m.host[0] != '/' ? "give the host folder as an absolute path"
						   : why);
			return -1;
		}
	}
	if (strcmp(lo->name, "wheels") == 0 && arg[0] != '/') {
		cli_error("mcp: --wheels %s: give an absolute path", arg);
		return -1;
	}
	if (strcmp(lo->name, "env") == 0 || strcmp(lo->name, "mount") == 0) {
		cJSON *list = cJSON_GetObjectItemCaseSensitive(opts, lo->name);
		if (!list)
			list = cJSON_AddArrayToObject(opts, lo->name);
		cJSON_AddItemToArray(list, cJSON_CreateString(arg));
		return 0;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(opts, lo->name); /* the last one wins */
	cJSON_AddStringToObject(opts, lo->name, arg);
	return 0;
}

static int mcp_cli_start_local(struct mcp_cli *mc)
{
	struct server_config cfg = {
		.on_kill_server = mcp_cli_on_kill_server,
		.on_stopped = mcp_cli_on_stopped,
		.data = mc,
	};
	int rc = server_new(mc->loop, &cfg, &mc->server);
	if (rc < 0)
		return rc;
	mc->client = server_client_new(mc->server, SERVER_CLIENT_STDIO, mcp_cli_local_send, mc);
	if (!mc->client)
		return -ENOMEM;
	mc->queue_tail = &mc->queue;
	uv_idle_init(mc->loop, &mc->flush);
	mc->flush.data = mc;
	mc->flush_open = true;
	return 0;
}

/* A connection to another server: hello is mcp.c's to say for the socket
 * (started if none runs), said already through ssh (-L and -S name the
 * server at the far end then). */
static int mcp_cli_start_remote(struct mcp_cli *mc, const char *label, const char *spath,
				const char *host, bool *hello)
{
	char err[512];
	int rfd, wfd;
	if (host) {
		struct cli_client_link link;
		int rc = cli_client_dial("mcp", label, spath, host, &link);
		if (rc)
			return -ECONNREFUSED;
		rfd = link.rfd;
		wfd = link.wfd;
		mc->ssh = link.ssh;
		*hello = false;
	} else {
		int fd = cli_client_connect_local(label, spath, true, err, sizeof(err));
		if (fd < 0) {
			cli_error("mcp: %s", err);
			return fd;
		}
		rfd = fd;
		/* (one fd, two handles: libuv watches each fd once) */
		wfd = dup(fd);
		if (wfd < 0) {
			int e = -errno;
			close(fd);
			cli_error("mcp: %s", strerror(-e));
			return e;
		}
		*hello = true;
	}
	int rc = conn_open_input(mc->loop, rfd, MCP_SERVER_LINE, &mcp_cli_srv_callbacks, mc,
				 &mc->srv_in);
	if (rc == 0)
		rc = conn_open_output(mc->loop, wfd, SERVER_MAX_LINE, &mcp_cli_srv_callbacks, mc,
				      &mc->srv_out);
	if (rc < 0)
		cli_error("mcp: the connection to the server: %s", uv_strerror(rc));
	return rc;
}

int cli_mcp(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"pool", required_argument, NULL, 'p'},
		{"socket", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *label = NULL, *spath = NULL, *host = NULL;
	cJSON *opts = cJSON_CreateObject();
	if (!opts)
		abort();
	int opt, li = -1, ret = CLI_EXIT_USAGE;
	optind = 1;
	opterr = 0;
	while ((li = -1, opt = getopt_long(argc, argv, "+:hL:S:H:", longopts, &li)) != -1) {
		if (optarg && cli_value_missing("mcp", longopts, li, opt, optarg))
			goto out;
		switch (opt) {
		case 'L': label = optarg; break;
		case 'S': spath = optarg; break;
		case 'H': host = optarg; break;
		case 'p': {
			unsigned pool;
			if (options_parse_uint(optarg, 0, 64, &pool) < 0) {
				cli_error("mcp: --pool %s: expected a number from 0 to 64", optarg);
				goto out;
			}
			cJSON_DeleteItemFromObjectCaseSensitive(opts, "pool");
			cJSON_AddNumberToObject(opts, "pool", pool);
			break;
		}
		case 'h':
			printf("%s%s%s", mcp_usage, cli_server_session_help, mcp_usage_tail);
			ret = CLI_EXIT_OK;
			goto out;
		case '?':
		case ':': cli_bad_option("mcp", opt, argv[optind - 1]); goto out;
		default:
			if (opt == 0x10c || opt == 0x120 || opt == 0x121) {
				cli_error("mcp: option '%s' is not for mcp", argv[optind - 1]);
				goto out;
			}
			if (cli_session_opt(&so, opt, optarg, "mcp") != 1)
				goto out;
			for (const struct option *lo = longopts; lo->name; lo++)
				if (lo->val == opt) {
					if (mcp_cli_add_option(opts, lo, optarg) < 0)
						goto out;
					break;
				}
		}
	}
	if (optind < argc) {
		cli_error("mcp: unexpected argument '%s'", argv[optind]);
		fprintf(stderr, "Try 'ptybox mcp --help'.\n");
		goto out;
	}
	if (label && spath) {
		cli_error("mcp: -L and -S each name a server: give one");
		goto out;
	}
	if (cli_session_opts_check(&so, "mcp") < 0)
		goto out;
	cli_warn_unsandboxed(&so.o);
	cli_warn_unenforced(&so);

	struct mcp_cli mc = {.loop = uv_default_loop(), .options = opts};
	bool hello = false;
	int rc = label || spath || host ? mcp_cli_start_remote(&mc, label, spath, host, &hello)
					: mcp_cli_start_local(&mc);
	if (rc == 0)
		rc = conn_open_output(mc.loop, 1, MCP_MAX_QUEUE, &mcp_cli_out_callbacks, &mc,
				      &mc.out);
	struct mcp_config cfg = {
		.version = ptybox_version(),
		.options = opts->child ? opts : NULL,
		.hello = hello,
		.to_client = mcp_cli_to_client,
		.to_server = mcp_cli_to_server,
		.fatal = mcp_cli_fatal,
		.data = &mc,
	};
	if (rc == 0 && !(mc.mcp = mcp_new(&cfg)))
		rc = -ENOMEM;
	if (rc < 0) {
		if (rc == -ENOMEM)
			cli_error("mcp: out of memory");
		mc.eof = true;
		mcp_cli_stop(&mc);
		uv_run(mc.loop, UV_RUN_DEFAULT);
		ret = CLI_EXIT_FAILED;
		goto done;
	}
	cli_signals_start(mc.loop, mc.sig, mcp_cli_signal_cb, &mc);
	mc.in.data = &mc;
	if (conn_open_input(mc.loop, 0, MCP_MAX_LINE, &mcp_cli_in_callbacks, &mc, &mc.pin) < 0)
		stdio_lines_start(&mc.in, mc.loop, 0, MCP_MAX_LINE, mcp_cli_in_line, mcp_cli_in_eof,
				  &mc);
	uv_run(mc.loop, UV_RUN_DEFAULT);
	for (int i = 0; mc.in.reading && i < 16; i++)
		uv_run(mc.loop, UV_RUN_NOWAIT);
	ret = mc.exit_code;
	if (mc.in.reading) {
		/* (as serve: a read of stdin blocks a worker thread that exit would join) */
		fflush(NULL);
		_exit(ret);
	}
done:
	if (mc.ssh > 0)
		while (waitpid(mc.ssh, NULL, 0) < 0 && errno == EINTR)
			;
	if (mc.server)
		server_free(mc.server);
	mcp_free(mc.mcp);
	stdio_lines_free(&mc.in);
	uv_loop_close(mc.loop);
out:
	cJSON_Delete(opts);
	return ret;
}
