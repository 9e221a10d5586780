/*
 * cli_serve.c - `ptybox serve --stdio`: the server's protocol on standard
 * input and output, in this process, with one session ("default") started
 * from the command line's options. Requests without "session" go to it, so a
 * program that knows one session needs no more; every other op of the server
 * works too (new, ls, watch...), so one program can hold many sessions here.
 *
 * At the end of input, every request read is still answered (server_pending:
 * executions, starts, queries, kills); then every session ends and so does
 * serve.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conn.h"
#include "options.h"
#include "http_limits.h"
#include "http_server.h"
#include "server.h"
#include "stdio_lines.h"

/* Replies waiting for a reader that does not read: past this, serve stops. */
#define SERVE_MAX_QUEUE ((size_t)256 << 20)

struct serve {
	uv_loop_t *loop;
	struct server *server;
	struct server_client *client;
	struct conn *out;
	ptybox_pool *pool;
	struct stdio_lines in; /* standard input, unless it is a pipe: */
	struct conn *pin;      /* then this, on the loop */
	uv_signal_t sig[CLI_NSIGNALS];
	bool eof, stopping, stopped;
	bool stop_at_eof; /* --stop-at-eof: the end of input ends what runs too */
	bool quiet;	  /* --quiet: a start failure is told on stdout only */
	int exit_code;
};

static const char serve_usage[] =
	"Usage: ptybox serve --stdio [OPTIONS]\n"
	"       ptybox serve --http [ADDR] [--token-file FILE] [--pool N] [--allow-net]\n"
	"                    [--timeout S] [--memory SIZE] [--cpus N] [--pids N] ...\n"
	"Drive sessions with JSON lines on standard input and output\n"
	"(ptybox-protocol(7)); requests without \"session\" go to the one started here.\n"
	"\n"
	"  {\"id\":1,\"op\":\"exec\",\"code\":\"x = 1\"}   run code (optional \"timeout\", "
	"\"stream\")\n"
	"  {\"id\":2,\"op\":\"interrupt\"}              stop the running snippet, keep state\n"
	"  {\"id\":3,\"op\":\"restart\"}                fresh interpreter\n"
	"  {\"id\":4,\"op\":\"ping\"}\n"
	"  (and new, result, ls, cancel, kill, watch, capture, complete, is_complete:\n"
	"  see ptybox-protocol(7))\n"
	"\n"
	"  --stdio             JSON lines on stdin/stdout\n"
	"  --http [ADDR]       instead: Piston's API (/api/v2/runtimes, /api/v2/execute)\n"
	"                      over HTTP on ADDR (default 127.0.0.1:2000); each execute\n"
	"                      a fresh sandbox from a warm pool of --pool (default 4)\n"
	"  --token-file FILE   with --http: every request needs Authorization: Bearer\n"
	"                      TOKEN (the file's first line); needed off loopback\n"
	"  --max-executes N    with --http: executes at once (default 64); past it\n"
	"                      429 with Retry-After\n"
	"  --allow-net         with --http: a session may ask \"net\" (the host's\n"
	"                      network, its loopback too); refused otherwise\n"
	"  with --http, the limits below (--timeout, --memory, --cpus, --pids,\n"
	"  --tmp-size, --nofile, --max-file-size, --max-output, --max-get,\n"
	"  --kill-grace) are the most and the default a request gets: it may\n"
	"  lower one, never raise it nor lift it (0); one not given is the default's\n"
	"  --pool N            keep N interpreters started ahead, so a restart is\n"
	"                      a swap (default 0)\n"
	"  --stop-at-eof       at the end of standard input, stop at once (as\n"
	"                      kill-server): what runs is ended, not waited for\n"
	"  --quiet             a session that cannot start is said only on standard\n"
	"                      output (its cannot_start notice), not on stderr too\n"
	"  -h, --help          this help\n"
	"\n";

static const char serve_usage_tail[] =
	"\n"
	"Exit status: 0 standard input ended and every request was answered, 1\n"
	"standard output was closed early, 2 usage error, 125 the session could not\n"
	"be started, 128+N stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP).\n";

/* Every line goes out escaped by protocol_json_escape_unsafe. */
static void serve_stop(struct serve *sv, const char *why)
{
	if (sv->stopping)
		return;
	sv->stopping = true;
	stdio_lines_close(&sv->in);
	if (sv->pin)
		conn_abort(sv->pin, "stopped");
	cli_signals_close(sv->sig);
	server_shutdown(sv->server, why);
}

static int serve_send(void *conn, char *line, size_t len)
{
	return conn_send(conn, line, len);
}

/* Nobody reads the replies any more: nothing is worth running on. */
static void serve_out_closed(struct conn *c, const char *why)
{
	struct serve *sv = c->data;
	sv->out = NULL;
	if (strncmp(why, "write: ", 7) == 0)
		why += 7;
	if (strncmp(why, "broken pipe", 11) != 0 && strncmp(why, "Broken pipe", 11) != 0 &&
	    !sv->stopped)
		cli_error("serve: standard output: %s", why);
	if (!sv->stopped) {
		if (sv->client)
			server_client_gone(sv->client);
		sv->client = NULL;
		sv->exit_code = CLI_EXIT_FAILED;
		serve_stop(sv, "shutting down");
	}
}

static const struct conn_callbacks serve_out_callbacks = {.on_close = serve_out_closed};

static void serve_on_idle(struct server *server, void *data)
{
	struct serve *sv = data;
	if (sv->eof)
		serve_stop(sv, "shutting down");
}

static void serve_on_stopped(struct server *server, void *data)
{
	struct serve *sv = data;
	sv->stopped = true;
	if (sv->pool)
		ptybox_pool_close(sv->pool);
	sv->pool = NULL;
	if (sv->client)
		server_client_gone(sv->client);
	sv->client = NULL;
	if (sv->out)
		conn_close(sv->out, "done");
	/* A read of stdin may never end. */
	if (sv->in.reading)
		uv_stop(sv->loop);
}

static void serve_on_kill_server(struct server *server, void *data)
{
	serve_stop(data, "shutting down");
}

/* The default session cannot start: its queued snippets end in results, not
 * run; then serve ends. */
static void serve_on_fatal(struct server *server, const char *message, void *data)
{
	struct serve *sv = data;
	char why[640];
	snprintf(why, sizeof(why), "the session could not be started: %s", message);
	if (!sv->quiet)
		cli_error("serve: %s", why);
	if (sv->client)
		server_client_notice(sv->client, "cannot_start", why);
	sv->exit_code = CLI_EXIT_CANNOT_START;
	sv->eof = true;
	stdio_lines_close(&sv->in);
	if (sv->pin)
		conn_abort(sv->pin, "stopped");
	if (server_pending(server) == 0) /* (else once their results are out) */
		serve_stop(sv, "shutting down");
}

/* SIGINT, SIGTERM, SIGHUP: stop now. The requests still queued are answered
 * with an error. */
static void serve_signal_cb(uv_signal_t *h, int signum)
{
	struct serve *sv = h->data;
	char why[96];
	snprintf(why, sizeof(why), "shutting down: stopped by signal %d (%s)", signum,
		 strsignal(signum));
	sv->exit_code = 128 + signum;
	sv->eof = true;
	serve_stop(sv, why);
}

static void serve_on_line(struct stdio_lines *l, const char *line, size_t len, bool too_long)
{
	struct serve *sv = l->data;
	if (!sv->client || sv->stopping)
		return;
	if (too_long)
		server_client_too_long(sv->client);
	else
		server_client_line(sv->client, line, len);
}

static void serve_eof(struct serve *sv)
{
	sv->eof = true;
	if (sv->stop_at_eof || server_pending(sv->server) == 0)
		serve_stop(sv, "shutting down");
}

static void serve_on_eof(struct stdio_lines *l, int err)
{
	struct serve *sv = l->data;
	if (err < 0)
		cli_error("serve: standard input: %s", uv_strerror(err));
	serve_eof(sv);
}

static void serve_pin_line(struct conn *c, const char *line, size_t len, bool too_long)
{
	struct serve *sv = c->data;
	serve_on_line(&sv->in, line, len, too_long);
}

static void serve_pin_close(struct conn *c, const char *why)
{
	struct serve *sv = c->data;
	sv->pin = NULL;
	if (strncmp(why, "read: ", 6) == 0)
		cli_error("serve: standard input: %s", why + 6);
	if (!sv->stopping)
		serve_eof(sv);
}

static const struct conn_callbacks serve_in_callbacks = {
	.on_line = serve_pin_line,
	.on_close = serve_pin_close,
};

int cli_serve(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"stdio", no_argument, NULL, 's'},
		{"http", no_argument, NULL, 'H'},
		{"token-file", required_argument, NULL, 'T'},
		{"max-executes", required_argument, NULL, 'M'},
		{"pool", required_argument, NULL, 'p'},
		{"allow-net", no_argument, NULL, 0x200},
		{"stop-at-eof", no_argument, NULL, 'e'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	bool stdio = false, stop_at_eof = false, quiet = false, http = false, session_opt = false;
	bool allow_net = false;
	struct http_limits limits;
	http_limits_init(&limits);
	const char *token_file = NULL, *addr = NULL;
	/* --http's ADDR is optional and no option's value: taken out first, so
	 * that the options after it are still read. */
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			break;
		} else if (strcmp(argv[i], "--http") == 0 && argv[i + 1][0] != '-') {
			addr = argv[i + 1];
			memmove(&argv[i + 1], &argv[i + 2], (size_t)(argc - i - 2) * sizeof(*argv));
			argc--;
			break;
		}
	unsigned pool = 0, max_active = 0;
	int opt, li = -1;
	optind = 1;
	opterr = 0;
	while ((li = -1, opt = getopt_long(argc, argv, "+:h", longopts, &li)) != -1) {
		if (optarg && cli_value_missing("serve", longopts, li, opt, optarg))
			return CLI_EXIT_USAGE;
		switch (opt) {
		case 's': stdio = true; break;
		case 'H': http = true; break;
		case 'T': token_file = optarg; break;
		case 'M':
			if (options_parse_uint(optarg, 1, HTTP_MAX_ACTIVE, &max_active) < 0) {
				cli_error(
					"serve: --max-executes %s: expected a number from 1 to %d",
					optarg, HTTP_MAX_ACTIVE);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'e': stop_at_eof = true; break;
		case 0x200: allow_net = true; break;
		case 'q': quiet = true; break;
		case 'p':
			if (options_parse_uint(optarg, 0, 64, &pool) < 0) {
				cli_error("serve: --pool %s: expected a number from 0 to 64",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			printf("%s%s%s", serve_usage, cli_session_help, serve_usage_tail);
			return CLI_EXIT_OK;
		case '?':
		case ':': cli_bad_option("serve", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		default:
			if (cli_session_opt(&so, opt, optarg, "serve") != 1)
				return CLI_EXIT_USAGE;
			if (http_limits_is_limit(opt))
				http_limits_set(&limits, opt, optarg); /* (checked just above) */
			else
				session_opt = true;
		}
	}
	if (http) {
		if (optind < argc) {
			cli_error("serve: unexpected argument '%s'", argv[optind]);
			return CLI_EXIT_USAGE;
		}
		if (stdio || stop_at_eof || quiet || session_opt) {
			cli_error(
				"serve: --http takes --pool, --token-file, --max-executes, "
				"--allow-net and the limits (--timeout, --memory, --cpus, --pids, "
				"...) only");
			return CLI_EXIT_USAGE;
		}
		limits.allow_net = allow_net;
		return cli_serve_http(addr, token_file, pool ? pool : 4, max_active, so.o.python,
				      &limits);
	}
	if (token_file || max_active || allow_net) {
		cli_error("serve: --%s goes with --http", token_file   ? "token-file"
							  : max_active ? "max-executes"
								       : "allow-net");
		return CLI_EXIT_USAGE;
	}
	if (optind < argc) {
		cli_error("serve: unexpected argument '%s'", argv[optind]);
		fprintf(stderr, "Try 'ptybox serve --help'.\n");
		return CLI_EXIT_USAGE;
	}
	if (!stdio) {
		cli_error("serve: say --stdio or --http [ADDR]");
		fprintf(stderr, "Try 'ptybox serve --help'.\n");
		return CLI_EXIT_USAGE;
	}
	if (cli_session_opts_check(&so, "serve") < 0)
		return CLI_EXIT_USAGE;
	cli_warn_unsandboxed(&so.o);
	cli_warn_unenforced(&so);
	struct serve sv = {.loop = uv_default_loop(), .stop_at_eof = stop_at_eof, .quiet = quiet};
	char err[512] = "out of memory";
	if (pool) {
		/* Interpreters started ahead: a restart is a swap. */
		int prc = ptybox_pool_new(sv.loop, &so.o, pool, &sv.pool, err, sizeof(err));
		if (prc < 0) {
			cli_error("serve: %s", err);
			return prc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
		}
		so.o.pool = sv.pool;
	}
	struct server_config cfg = {
		.on_idle = serve_on_idle,
		.on_kill_server = serve_on_kill_server,
		.on_stopped = serve_on_stopped,
		.data = &sv,
	};
	int rc = server_new(sv.loop, &cfg, &sv.server);
	if (rc == 0)
		rc = conn_open_output(sv.loop, 1, SERVE_MAX_QUEUE, &serve_out_callbacks, &sv,
				      &sv.out);
	if (rc == 0 &&
	    !(sv.client = server_client_new(sv.server, SERVER_CLIENT_STDIO, serve_send, sv.out)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = server_add_default(sv.server, &so.o, serve_on_fatal, err, sizeof(err));
	if (rc < 0) {
		cli_error("serve: %s", rc == -ENOMEM ? "out of memory" : err);
		if (sv.server) { /* (its on_stopped lets go of the client, output and pool) */
			server_shutdown(sv.server, "shutting down");
		} else if (sv.pool) {
			ptybox_pool_close(sv.pool);
			sv.pool = NULL;
		}
		uv_run(sv.loop, UV_RUN_DEFAULT); /* let the pool's interpreters close */
		if (sv.server)
			server_free(sv.server);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
	}
	cli_signals_start(sv.loop, sv.sig, serve_signal_cb, &sv);
	sv.in.data = &sv;
	if (conn_open_input(sv.loop, 0, SERVER_MAX_LINE, &serve_in_callbacks, &sv, &sv.pin) < 0)
		stdio_lines_start(&sv.in, sv.loop, 0, SERVER_MAX_LINE, serve_on_line, serve_on_eof,
				  &sv);
	uv_run(sv.loop, UV_RUN_DEFAULT);
	/* A read of stdin still in flight (the session died first) owns the buffer
	 * and the loop until the process exits; the interpreters' handles still
	 * close, so that none of their processes or cgroups outlive us. */
	for (int i = 0; sv.in.reading && i < 16; i++)
		uv_run(sv.loop, UV_RUN_NOWAIT);
	if (sv.in.reading) {
		/* That read blocks a libuv worker thread, which libuv's exit-time
		 * shutdown would join: wait for input that may never come. Leave
		 * now; everything of ours is closed. */
		fflush(NULL);
		_exit(sv.exit_code);
	}
	server_free(sv.server);
	stdio_lines_free(&sv.in);
	uv_loop_close(sv.loop);
	return sv.exit_code;
}
