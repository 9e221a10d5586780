/*
 * cli_serve_http.c - `ptybox serve --http [ADDR]`: the server (server.h)
 * with no default session, fed by HTTP (http_server.c) instead of standard
 * input. It runs until a signal: then it stops listening, every session
 * ends (server_shutdown) and the process exits.
 *
 * The runtime's version is asked of the Python the sessions run, once,
 * before the loop starts (Piston's runtimes names it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "http_server.h"
#include "server.h"

/* The longest token file taken. */
#define SERVE_HTTP_MAX_TOKEN 4096

struct serve_http {
	uv_loop_t *loop;
	struct server *server;
	struct http_server *http;
	uv_signal_t sig[CLI_NSIGNALS];
	bool stopping;
	int exit_code;
};

static void serve_http_stop(struct serve_http *s, const char *why)
{
	if (s->stopping)
		return;
	s->stopping = true;
	cli_signals_close(s->sig);
	if (s->http)
		http_server_stop(s->http);
	server_shutdown(s->server, why);
}

static void serve_http_on_stopped(struct server *sv, void *data)
{
	struct serve_http *s = data;
	/* Every session and process is gone; h2o's connections and timers are
	 * not worth a close each: the process ends. */
	uv_stop(s->loop);
}

static void serve_http_on_kill_server(struct server *sv, void *data)
{
	serve_http_stop(data, "shutting down");
}

static void serve_http_signal_cb(uv_signal_t *h, int signum)
{
	struct serve_http *s = h->data;
	s->exit_code = 128 + signum;
	serve_http_stop(s, "shutting down");
}

/* The token: the file's first line, at least 16 bytes. */
static int serve_http_token(const char *path, char *tok, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		cli_error("serve: --token-file %s: %s", path, strerror(errno));
		return -1;
	}
	size_t n = fread(tok, 1, cap - 1, f);
	fclose(f);
	tok[n] = '\0';
	tok[strcspn(tok, "\r\n")] = '\0';
	if (strlen(tok) < 16) {
		cli_error("serve: --token-file %s: the token must be at least 16 bytes", path);
		return -1;
	}
	return 0;
}

/* python3's version ("3.11.2"), of the interpreter the sessions run. */
static void serve_http_pyversion(const char *python, char *out, size_t cap)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "'%s' -c 'import platform; print(platform.python_version())' 2>/dev/null",
		 python && !strchr(python, '\'') ? python : "python3");
	snprintf(out, cap, "3");
	FILE *p = popen(cmd, "re");
	if (!p)
		return;
	char line[64];
	if (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] >= '0' && line[0] <= '9')
			snprintf(out, cap, "%s", line);
	}
	pclose(p);
}

int cli_serve_http(const char *addr, const char *token_file, unsigned pool, unsigned max_active,
		   const char *python, const struct http_limits *limits)
{
	static char token[SERVE_HTTP_MAX_TOKEN];
	if (token_file && serve_http_token(token_file, token, sizeof(token)) < 0)
		return CLI_EXIT_USAGE;
	/* Thousands of connections and sessions: every fd the hard limit gives. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	char pyversion[64];
	serve_http_pyversion(python, pyversion, sizeof(pyversion));
	struct serve_http s = {.loop = uv_default_loop()};
	struct server_config cfg = {
		.on_kill_server = serve_http_on_kill_server,
		.on_stopped = serve_http_on_stopped,
		.data = &s,
	};
	char err[512] = "out of memory";
	if (server_new(s.loop, &cfg, &s.server) < 0) {
		cli_error("serve: out of memory");
		return CLI_EXIT_FAILED;
	}
	struct http_config hc = {
		.addr = addr,
		.token = token_file ? token : NULL,
		.pyversion = pyversion,
		.pool = pool,
		.max_active = max_active,
		.limits = limits,
	};
	int rc = http_server_start(s.loop, s.server, &hc, &s.http, err, sizeof(err));
	if (rc < 0) {
		cli_error("serve: %s", err);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
	}
	fprintf(stderr, "ptybox: serving Piston's API on http://%s/api/v2/\n",
		addr ? addr : HTTP_DEFAULT_ADDR);
	cli_signals_start(s.loop, s.sig, serve_http_signal_cb, &s);
	uv_run(s.loop, UV_RUN_DEFAULT);
	fflush(NULL);
	_exit(s.exit_code); /* (h2o's handles are not closed one by one: see on_stopped) */
}
