/*
 * cli_serve.c - `ptybox serve --stdio`: one session driven by JSON lines.
 *
 * Requests come one per line on stdin, replies one per line on stdout, so a
 * program can drive the session the way expect drives a terminal. Requests'
 * ids are the caller's (any JSON value) and come back untouched; inside, each
 * snippet gets a sequence number, and a short history maps late output of a
 * finished snippet back to the caller's id. A malformed line is answered
 * with an error and changes nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "options.h"
#include "protocol.h"
#include "stdio_lines.h"

#define SERVE_MAX_LINE ((size_t)96 << 20)
#define SERVE_HISTORY  64

struct serve_pending {
	struct serve_pending *next;
	uint64_t seq;
	cJSON *id; /* the caller's, owned */
};

struct serve {
	uv_loop_t *loop;
	ptybox_session *session;
	ptybox_pool *pool;
	struct stdio_lines in;
	uv_signal_t sig[CLI_NSIGNALS];
	bool eof, closing;
	int exit_code;
	int signum; /* the signal that stopped us, or 0 */
	uint64_t next_seq;
	struct serve_pending *pending, *pending_tail;
	/* seq -> caller's id of recent snippets, for late output */
	uint64_t hist_seq[SERVE_HISTORY];
	cJSON *hist_id[SERVE_HISTORY];
};

static const char serve_usage[] =
	"Usage: ptybox serve --stdio [OPTIONS]\n"
	"Drive one session with JSON lines on standard input and output.\n"
	"\n"
	"  {\"id\":1,\"op\":\"exec\",\"code\":\"x = 1\"}   run code (optional \"timeout\", "
	"\"stream\")\n"
	"  {\"id\":2,\"op\":\"interrupt\"}              stop the running snippet, keep state\n"
	"  {\"id\":3,\"op\":\"restart\"}                fresh interpreter\n"
	"  {\"id\":4,\"op\":\"ping\"}\n"
	"\n"
	"  --stdio             JSON lines on stdin/stdout (required)\n"
	"  --pool N            keep N interpreters started ahead, so a restart is\n"
	"                      a swap (default 0)\n"
	"  -h, --help          this help\n"
	"\n";

/* Every line goes out escaped by protocol_json_escape_unsafe. */
static void serve_emit(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	size_t n = s ? strlen(s) : 0;
	if (s)
		s = protocol_json_escape_unsafe(s, &n);
	if (s) {
		s[n] = '\n'; /* the buffer ends in the NUL we overwrite */
		int rc = cli_write_all(1, s, n + 1);
		if (rc < 0) { /* the replies are lost: say so, unless nobody reads */
			if (rc != -EPIPE)
				cli_error("serve: standard output: %s", strerror(-rc));
			_exit(CLI_EXIT_FAILED);
		}
		cJSON_free(s);
	}
	cJSON_Delete(o);
}

static void serve_reply(const cJSON *id, const char *key, const char *value)
{
	cJSON *o = cJSON_CreateObject();
	if (id)
		cJSON_AddItemToObject(o, "id", protocol_json_dup_exact(id));
	if (key)
		cJSON_AddStringToObject(o, key, value);
	else
		cJSON_AddBoolToObject(o, "ok", 1);
	serve_emit(o);
}

static void serve_maybe_finish(struct serve *sv)
{
	if (!sv->eof || sv->closing || (sv->session && ptybox_session_pending(sv->session)))
		return;
	sv->closing = true;
	if (sv->session)
		ptybox_session_close(sv->session);
	sv->session = NULL;
}

static const cJSON *serve_history(struct serve *sv, uint64_t seq)
{
	struct serve_pending *p;
	for (p = sv->pending; p; p = p->next)
		if (p->seq == seq)
			return p->id;
	size_t slot = seq % SERVE_HISTORY;
	return sv->hist_seq[slot] == seq ? sv->hist_id[slot] : NULL;
}

static void serve_on_stream(ptybox_session *s, uint64_t seq, const char *name, const char *text,
			    size_t len, bool late, void *data)
{
	struct serve *sv = data;
	const cJSON *id = serve_history(sv, seq);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON_AddStringToObject(o, "event", "stream");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "text", text);
	if (late)
		cJSON_AddBoolToObject(o, "late", 1);
	serve_emit(o);
}

static void serve_on_display(ptybox_session *s, uint64_t seq, const char *bundle, bool late,
			     void *data)
{
	struct serve *sv = data;
	const cJSON *id = serve_history(sv, seq);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON_AddStringToObject(o, "event", "display");
	cJSON_AddItemToObject(o, "data", cJSON_Parse(bundle));
	if (late)
		cJSON_AddBoolToObject(o, "late", 1);
	serve_emit(o);
}

static void serve_on_result(ptybox_session *s, const struct ptybox_result *r, void *data)
{
	struct serve *sv = data;
	struct serve_pending *p = sv->pending;
	cJSON *o = protocol_result_object(r);
	if (p && p->seq == r->id) {
		sv->pending = p->next;
		if (!sv->pending)
			sv->pending_tail = NULL;
		if (o)
			cJSON_ReplaceItemInObjectCaseSensitive(o, "id", cJSON_Duplicate(p->id, 1));
		size_t slot = p->seq % SERVE_HISTORY;
		cJSON_Delete(sv->hist_id[slot]);
		sv->hist_seq[slot] = p->seq;
		sv->hist_id[slot] = p->id;
		free(p);
	}
	if (o)
		serve_emit(o);
	serve_maybe_finish(sv);
}

static void serve_drop_pending(struct serve *sv, const char *why)
{
	while (sv->pending) {
		struct serve_pending *p = sv->pending;
		sv->pending = p->next;
		serve_reply(p->id, "error", why);
		cJSON_Delete(p->id);
		free(p);
	}
	sv->pending_tail = NULL;
}

static void serve_on_fatal(ptybox_session *s, const char *message, void *data)
{
	struct serve *sv = data;
	char why[640];
	snprintf(why, sizeof(why), "the session could not be started: %s", message);
	cli_error("serve: %s", why);
	/* (each queued snippet's result follows, not run) */
	serve_reply(NULL, "error", why);
	sv->exit_code = CLI_EXIT_CANNOT_START;
	sv->eof = true; /* nothing more can run */
	serve_maybe_finish(sv);
}

/* A restart queued last ends in no result: the new interpreter's start is
 * when the queue may have emptied. */
static void serve_on_ready(ptybox_session *s, void *data)
{
	serve_maybe_finish(data);
}

/* The session is gone: stop, even if a read of stdin is still pending. */
static void serve_on_closed(ptybox_session *s, void *data)
{
	struct serve *sv = data;
	if (sv->pool)
		ptybox_pool_close(sv->pool);
	sv->pool = NULL;
	stdio_lines_close(&sv->in);
	cli_signals_close(sv->sig);
	/* The session died first: a read of stdin may never end. */
	if (sv->in.reading)
		uv_stop(sv->loop);
}

/* SIGINT, SIGTERM, SIGHUP: stop now. Closing the session kills the
 * interpreter; the requests still queued are answered with an error. */
static void serve_signal_cb(uv_signal_t *h, int signum)
{
	struct serve *sv = h->data;
	sv->signum = signum;
	sv->exit_code = 128 + signum;
	sv->eof = true;
	cli_signals_close(sv->sig);
	if (!sv->closing && sv->session) {
		sv->closing = true;
		ptybox_session_close(sv->session);
		sv->session = NULL;
	}
}

static void serve_exec(struct serve *sv, const cJSON *req, const cJSON *id, bool nul)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(req, "timeout");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(req, "stream");
	if (!cJSON_IsString(code))
		return serve_reply(id, "error", "exec needs \"code\": a string");
	if (nul)
		return serve_reply(id, "error",
				   "the request contains a NUL character (\\u0000, or a \\u escape "
				   "without four hex digits)");
	if (timeout && (!cJSON_IsNumber(timeout) || !options_seconds_valid(timeout->valuedouble)))
		return serve_reply(id, "error",
				   "\"timeout\" must be a number of seconds from 0 to 31536000 "
				   "(a year)");
	if (stream && !cJSON_IsBool(stream))
		return serve_reply(id, "error", "\"stream\" must be true or false");
	struct serve_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return serve_reply(id, "error", "out of memory");
	p->seq = ++sv->next_seq;
	p->id = id ? protocol_json_dup_exact(id) : cJSON_CreateNull();
	int rc = ptybox_session_exec(sv->session, p->seq, code->valuestring,
				     strlen(code->valuestring), timeout ? timeout->valuedouble : -1,
				     cJSON_IsTrue(stream));
	if (rc < 0) {
		serve_reply(id, "error",
			    rc == -ENOBUFS ? "too many snippets queued"
					   : "the session is not running");
		cJSON_Delete(p->id);
		free(p);
		return;
	}
	if (sv->pending_tail)
		sv->pending_tail->next = p;
	else
		sv->pending = p;
	sv->pending_tail = p;
}

/* The JSON value that is the whole of text (trailing blanks aside), or NULL. */
static cJSON *serve_parse_line(const char *text, size_t len)
{
	const char *end = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts(text, len, &end, false);
	while (v && end < text + len && (*end == ' ' || *end == '\t' || *end == '\r'))
		end++;
	if (v && end != text + len) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* A line that is not a JSON object. If cJSON refused it for lone surrogates
 * (\ud800, which Python's json.dumps writes for such a str) the request is
 * answered under its id: its client may be waiting for that id. */
static const char serve_nul_id[] =
	"the request's id contains a NUL character (\\u0000): it could not come back whole, "
	"refused";

/* Whether id, as cJSON read it from line (which has a NUL somewhere), lost
 * what follows a NUL: cJSON's strings end there. */
static bool serve_id_cut(const char *line, size_t len, const cJSON *id)
{
	if (!cJSON_IsObject(id) && !cJSON_IsArray(id) && !cJSON_IsString(id))
		return false;
	char *copy = malloc(len);
	if (!copy)
		return true;
	memcpy(copy, line, len);
	protocol_json_mask_nul(copy, len);
	cJSON *whole = serve_parse_line(copy, len);
	bool cut = !cJSON_Compare(id, cJSON_GetObjectItemCaseSensitive(whole, "id"), true);
	cJSON_Delete(whole);
	free(copy);
	return cut;
}

static void serve_refuse(const char *line, size_t len)
{
	static const char malformed[] = "malformed request: expected one JSON object per line";
	char *copy = malloc(len);
	cJSON *req = NULL;
	if (copy) {
		memcpy(copy, line, len);
		if (protocol_json_mask_surrogates(copy, len) > 0)
			req = serve_parse_line(copy, len);
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	if (cJSON_IsObject(req) && protocol_json_has_nul(copy, len) && serve_id_cut(copy, len, id))
		serve_reply(NULL, "error", serve_nul_id);
	else if (cJSON_IsObject(req))
		serve_reply(id, "error",
			    "the request has a lone UTF-16 surrogate escape (\\ud800-\\udfff): "
			    "not a Unicode character, refused");
	else
		serve_reply(NULL, "error", malformed);
	cJSON_Delete(req);
	free(copy);
}

static void serve_on_line(struct stdio_lines *l, const char *line, size_t len, bool too_long)
{
	struct serve *sv = l->data;
	if (too_long) {
		char msg[96];
		snprintf(msg, sizeof(msg), "request line longer than %zu MiB: skipped",
			 SERVE_MAX_LINE >> 20);
		return serve_reply(NULL, "error", msg);
	}
	if (len == 0 || !sv->session)
		return;
	if (!protocol_utf8_valid(line, len))
		return serve_reply(NULL, "error", "malformed request: not valid UTF-8");
	cJSON *req = serve_parse_line(line, len);
	if (!cJSON_IsObject(req)) {
		cJSON_Delete(req);
		return serve_refuse(line, len);
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	bool nul = protocol_json_has_nul(line, len);
	if (nul && serve_id_cut(line, len, id)) {
		cJSON_Delete(req);
		return serve_reply(NULL, "error", serve_nul_id);
	}
	const char *op = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(req, "op"))
				 ? cJSON_GetObjectItemCaseSensitive(req, "op")->valuestring
				 : NULL;
	if (!op)
		serve_reply(id, "error", "request needs \"op\": exec, interrupt, restart or ping");
	else if (strcmp(op, "exec") == 0)
		serve_exec(sv, req, id, nul);
	else if (strcmp(op, "interrupt") == 0)
		ptybox_session_interrupt(sv->session) == 0
			? serve_reply(id, NULL, NULL)
			: serve_reply(id, "error", "nothing is running");
	else if (strcmp(op, "restart") == 0)
		ptybox_session_restart(sv->session) == 0
			? serve_reply(id, NULL, NULL)
			: serve_reply(id, "error", "the session cannot restart now");
	else if (strcmp(op, "ping") == 0)
		serve_reply(id, NULL, NULL);
	else {
		char msg[128];
		snprintf(msg, sizeof(msg),
			 "unknown op \"%.*s\": expected exec, interrupt, restart or ping",
			 (int)protocol_utf8_prefix(op, strlen(op), 64), op);
		serve_reply(id, "error", msg);
	}
	cJSON_Delete(req);
}

static void serve_on_eof(struct stdio_lines *l, int err)
{
	struct serve *sv = l->data;
	if (err < 0)
		cli_error("serve: standard input: %s", uv_strerror(err));
	sv->eof = true;
	serve_maybe_finish(sv);
}

int cli_serve(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"stdio", no_argument, NULL, 's'},
		{"pool", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	bool stdio = false;
	unsigned pool = 0;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': stdio = true; break;
		case 'p':
			if (options_parse_uint(optarg, 0, 64, &pool) < 0) {
				cli_error("serve: --pool %s: expected a number from 0 to 64",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h': printf("%s%s", serve_usage, cli_session_help); return CLI_EXIT_OK;
		case '?':
		case ':': cli_bad_option("serve", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		default:
			if (cli_session_opt(&so, opt, optarg, "serve") != 1)
				return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("serve: unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!stdio) {
		cli_error("serve: only --stdio is available in this version");
		return CLI_EXIT_USAGE;
	}
	if (cli_session_opts_check(&so, "serve") < 0)
		return CLI_EXIT_USAGE;
	cli_warn_unsandboxed(&so.o);
	struct serve sv = {.loop = uv_default_loop()};
	char err[512];
	if (pool) {
		/* Interpreters started ahead: a restart is a swap. */
		int prc = ptybox_pool_new(sv.loop, &so.o, pool, &sv.pool, err, sizeof(err));
		if (prc < 0) {
			cli_error("serve: %s", err);
			return prc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
		}
		so.o.pool = sv.pool;
	}
	int rc = ptybox_session_new(sv.loop, &so.o,
				    &(struct ptybox_callbacks){
					    .on_stream = serve_on_stream,
					    .on_display = serve_on_display,
					    .on_result = serve_on_result,
					    .on_ready = serve_on_ready,
					    .on_fatal = serve_on_fatal,
					    .on_closed = serve_on_closed,
				    },
				    &sv, &sv.session, err, sizeof(err));
	if (rc < 0) {
		cli_error("serve: %s", err);
		if (sv.pool)
			ptybox_pool_close(sv.pool);
		uv_run(sv.loop, UV_RUN_DEFAULT); /* let the pool's interpreters close */
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
	}
	cli_signals_start(sv.loop, sv.sig, serve_signal_cb, &sv);
	stdio_lines_start(&sv.in, sv.loop, 0, SERVE_MAX_LINE, serve_on_line, serve_on_eof, &sv);
	uv_run(sv.loop, UV_RUN_DEFAULT);
	char why[96] = "shutting down";
	if (sv.signum)
		snprintf(why, sizeof(why), "shutting down: stopped by signal %d (%s)", sv.signum,
			 strsignal(sv.signum));
	serve_drop_pending(&sv, why);
	for (size_t i = 0; i < SERVE_HISTORY; i++)
		cJSON_Delete(sv.hist_id[i]);
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
	stdio_lines_free(&sv.in);
	uv_loop_close(sv.loop);
	return sv.exit_code;
}
