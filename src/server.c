/*
 * server.c - the multiplexer's clients and their requests: who is connected,
 * which op goes where, and every reply's shape. The sessions themselves are
 * server_session.c's.
 *
 * Replies are lines of JSON, each escaped by protocol_json_escape_unsafe and
 * handed to the client's connection, which queues them (bounded) and never
 * blocks: a client that does not read is dropped there, not here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "protocol.h"
#include "record.h"
#include "server_internal.h"

static const char srv_nul_msg[] =
	"the request contains a NUL character (\\u0000, or a \\u escape without four hex digits)";

static const char srv_ops[] =
	"hello, new, exec, result, ls, interrupt, cancel, restart, kill, watch, capture, "
	"complete, is_complete, resize, put, get, files, remove, kill-server or ping";

static void srv_send_line(struct server_client *c, char *s, size_t n)
{
	if (c->dead) {
		cJSON_free(s);
		return;
	}
	/* (the buffer ends in the NUL that becomes the newline) */
	s[n] = '\n';
	if (c->send(c->conn, s, n + 1) < 0)
		c->dead = true;
}

char *srv_print(const cJSON *o, size_t *n)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	*n = s ? strlen(s) : 0;
	return s ? protocol_json_escape_unsafe(s, n) : NULL;
}

void srv_send(struct server_client *c, cJSON *o)
{
	size_t n;
	char *s = c->dead ? NULL : srv_print(o, &n);
	if (s)
		srv_send_line(c, s, n);
	cJSON_Delete(o);
}

/* A reply begins with the request's id, when it had one. */
static cJSON *srv_with_id(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();
	if (o && id)
		cJSON_AddItemToObject(o, "id", protocol_json_dup_exact(id));
	return o;
}

void srv_reply_ok(struct server_client *c, const cJSON *id, cJSON *more)
{
	cJSON *o = srv_with_id(id);
	if (o)
		cJSON_AddBoolToObject(o, "ok", 1);
	while (o && more && more->child) {
		cJSON *m = cJSON_DetachItemViaPointer(more, more->child);
		cJSON_AddItemToObject(o, m->string, m); /* (the key is copied again) */
	}
	cJSON_Delete(more);
	srv_send(c, o);
}

void srv_reply_error(struct server_client *c, const cJSON *id, const char *code, const char *fmt,
		     ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *o = srv_with_id(id);
	if (o) {
		cJSON_AddStringToObject(o, "error", msg);
		cJSON_AddStringToObject(o, "code", code);
	}
	srv_send(c, o);
}

void srv_send_joined(struct server_client *c, const cJSON *id, const char *rest, size_t len)
{
	if (c->dead)
		return;
	size_t idn = 0;
	char *ids = id ? srv_print(id, &idn) : NULL; /* (rest is escaped already) */
	size_t head = ids ? 6 + idn + 1 : 1;	     /* {"id":ID, or { */
	size_t n = head + len;
	char *s = malloc(n + 1); /* (+1: the newline) */
	if (s) {
		memcpy(s, "{\"id\":", ids ? 6 : 1);
		if (ids) {
			memcpy(s + 6, ids, idn);
			s[6 + idn] = ',';
		}
		memcpy(s + head, rest, len);
		srv_send_line(c, s, n);
	}
	cJSON_free(ids);
}
struct srv_waiter *srv_waiter_new(struct server_client *c, const cJSON *id, bool stream)
{
	struct srv_waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->client = c;
	if (c)
		c->owed++;
	w->id = id ? protocol_json_dup_exact(id) : cJSON_CreateNull();
	w->stream = stream;
	return w;
}

/* A client whose input ended is let go once nothing is owed to it. */
void srv_waiter_free(struct srv_waiter *w)
{
	struct server_client *c = w->client;
	cJSON_Delete(w->id);
	free(w);
	if (c && c->owed && --c->owed == 0 && c->eof && !c->gone && c->drained)
		c->drained(c->conn);
}

void srv_waiters_free(struct srv_waiter **list)
{
	while (*list) {
		struct srv_waiter *w = *list;
		*list = w->next;
		srv_waiter_free(w);
	}
}

void srv_waiters_drop_client(struct srv_waiter **list, struct server_client *c)
{
	while (*list) {
		struct srv_waiter *w = *list;
		if (w->client != c) {
			list = &w->next;
			continue;
		}
		*list = w->next;
		srv_waiter_free(w);
	}
}

cJSON *server_hello_request(void)
{
	cJSON *hello = cJSON_CreateObject();
	if (!hello || !cJSON_AddNumberToObject(hello, "id", 0) ||
	    !cJSON_AddStringToObject(hello, "op", "hello") ||
	    !cJSON_AddNumberToObject(hello, "protocol", SERVER_PROTOCOL))
		abort(); /* out of memory is fatal (STYLE.md) */
	return hello;
}

struct srv_session *srv_session_find(struct server *sv, const char *name)
{
	for (struct srv_session *ss = sv->sessions; ss; ss = ss->next)
		if (strcmp(ss->name, name) == 0)
			return ss;
	return NULL;
}

void srv_session_unlink(struct server *sv, struct srv_session *ss)
{
	for (struct srv_session **p = &sv->sessions; *p; p = &(*p)->next)
		if (*p == ss) {
			*p = ss->next;
			sv->nsessions--;
			break;
		}
}

/* What is owed a reply that will come by itself (each within its op's own
 * deadline): executions, starts, queries, and kills whose sessions still
 * close. A watch is not: it lasts as long as its session. */
size_t server_pending(const struct server *sv)
{
	size_t n = 0;
	for (const struct srv_session *ss = sv->sessions; ss; ss = ss->next)
		n += ss->live + (ss->new_waiters ? 1 : 0) + (ss->queries ? 1 : 0);
	for (const struct srv_session *ss = sv->closing; ss; ss = ss->next)
		n += ss->kill_waiters ? 1 : 0;
	return n;
}

void srv_maybe_idle(struct server *sv)
{
	if (sv->cfg.on_idle && !sv->shutting_down && server_pending(sv) == 0)
		sv->cfg.on_idle(sv, sv->cfg.data);
}

static void srv_sweep_cb(uv_timer_t *t)
{
	srv_screens_sweep(t->data);
}

static void srv_sweep_closed_cb(uv_handle_t *h)
{
}

int server_new(uv_loop_t *loop, const struct server_config *cfg, struct server **out)
{
	struct server *sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	sv->loop = loop;
	sv->cfg = *cfg;
	sv->started_ms = uv_now(loop);
	uv_timer_init(loop, &sv->sweep);
	sv->sweep.data = sv;
	uv_timer_start(&sv->sweep, srv_sweep_cb, 1000, 1000);
	uv_unref((uv_handle_t *)&sv->sweep); /* (it never keeps the loop alive) */
	*out = sv;
	return 0;
}

int server_add_default(struct server *sv, const struct ptybox_options *o,
		       void (*fatal)(struct server *sv, const char *why, void *data), char *err,
		       size_t errlen)
{
	struct srv_session *ss;
	const char *code;
	int rc = srv_session_start(sv, "default", NULL, false, o, NULL, &ss, err, errlen, &code);
	if (rc == 0)
		ss->fatal = fatal;
	return rc;
}

struct server_client *server_client_new(struct server *sv, unsigned flags, server_send_fn send,
					void *conn)
{
	struct server_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->server = sv;
	c->flags = flags;
	c->remote = (flags & SERVER_CLIENT_REMOTE) != 0;
	c->send = send;
	c->conn = conn;
	c->next = sv->clients;
	sv->clients = c;
	return c;
}

/* Its watches end with its input: one who can send nothing more is no one
 * attached (ls counts them; attach's ^D is such an end), and nothing else
 * would end them before the session. Before eof is set, so that letting
 * them go does not close the connection under the caller. */
bool server_client_eof(struct server_client *c)
{
	for (struct srv_session *ss = c->server->sessions; ss; ss = ss->next)
		srv_session_unwatch(ss, c);
	c->eof = true;
	return c->owed == 0;
}

void server_client_set_drained(struct server_client *c, void (*drained)(void *conn))
{
	c->drained = drained;
}

void server_client_gone(struct server_client *c)
{
	struct server *sv = c->server;
	c->gone = true;
	for (struct srv_session *ss = sv->sessions; ss; ss = ss->next)
		srv_session_client_gone(ss, c);
	for (struct srv_session *ss = sv->closing; ss; ss = ss->next)
		srv_session_client_gone(ss, c);
	for (struct server_client **p = &sv->clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	free(c);
}

void server_client_too_long(struct server_client *c)
{
	srv_reply_error(c, NULL, "malformed", "request line longer than %zu MiB: skipped",
			SERVER_MAX_LINE >> 20);
}

static void srv_hello(struct server_client *c, const cJSON *req, const cJSON *id)
{
	const cJSON *proto = cJSON_GetObjectItemCaseSensitive(req, "protocol");
	if (!cJSON_IsNumber(proto))
		return srv_reply_error(c, id, "protocol",
				       "hello needs \"protocol\": this server speaks %d",
				       SERVER_PROTOCOL);
	if (proto->valuedouble != SERVER_PROTOCOL)
		return srv_reply_error(c, id, "protocol",
				       "the client speaks protocol %g, this server (ptybox %s) "
				       "speaks %d",
				       proto->valuedouble, ptybox_version(), SERVER_PROTOCOL);
	const char *via = protocol_str(req, "via");
	c->remote = c->remote || (via && strcmp(via, "dial-stdio") == 0);
	c->hello = true;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "protocol", SERVER_PROTOCOL);
	cJSON_AddStringToObject(o, "server", ptybox_version());
	srv_reply_ok(c, id, o);
}

/* new's "record" (an absolute path) and "record_max" (bytes, a number or a size such as
 * "64M") into rec (rec->path NULL: none). A dial-stdio client may not write files on this
 * machine (an ssh key limited to dial-stdio must stay so) unless the server allows remote
 * transports. -EINVAL with the reply sent. */
static int srv_record_parse(struct server_client *c, const cJSON *req, const cJSON *id,
			    struct record_config *rec)
{
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(req, "record");
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(req, "record_max");
	memset(rec, 0, sizeof(*rec));
	if (!path && !max)
		return 0;
	if (!cJSON_IsString(path) || path->valuestring[0] != '/') {
		srv_reply_error(c, id, "usage", "\"record\" must be a file's absolute path");
		return -EINVAL;
	}
	if (strlen(path->valuestring) >= PATH_MAX) {
		srv_reply_error(c, id, "usage", "\"record\": the path is too long");
		return -EINVAL;
	}
	if (c->remote && !c->server->cfg.allow_remote_transports) {
		srv_reply_error(c, id, "usage",
				"\"record\" (a file written on the server's machine) is refused "
				"through dial-stdio and HTTP (start the server with "
				"--allow-remote-transports to allow it)");
		return -EINVAL;
	}
	uint64_t bytes = RECORD_MAX_DEFAULT;
	bool ok = !max;
	if (cJSON_IsNumber(max))
		ok = max->valuedouble >= (double)RECORD_MAX_MIN &&
		     max->valuedouble <= (double)RECORD_MAX_MAX &&
		     (bytes = (uint64_t)max->valuedouble) == max->valuedouble;
	else if (cJSON_IsString(max))
		ok = options_parse_size(max->valuestring, &bytes) == 0 && bytes >= RECORD_MAX_MIN &&
		     bytes <= RECORD_MAX_MAX;
	if (!ok) {
		srv_reply_error(c, id, "usage",
				"\"record_max\" must be a size from 4K to 1T, e.g. \"64M\"");
		return -EINVAL;
	}
	rec->path = path->valuestring;
	rec->max_bytes = bytes;
	return 0;
}

static void srv_new(struct server_client *c, const cJSON *req, const cJSON *id, const char *name)
{
	struct server *sv = c->server;
	const char *why = server_name_invalid(name, strlen(name));
	if (why)
		return srv_reply_error(c, id, "invalid_name", "invalid session name: %s", why);
	if (srv_session_find(sv, name))
		return srv_reply_error(c, id, "exists", "session '%s' exists", name);
	if (sv->nsessions >= SERVER_MAX_SESSIONS)
		return srv_reply_error(c, id, "limit", "the server holds %d sessions, its most",
				       SERVER_MAX_SESSIONS);
	struct record_config rec;
	if (srv_record_parse(c, req, id, &rec) < 0)
		return;
	struct srv_session *ss;
	char err[512];
	const char *code = "cannot_start";
	int rc = srv_session_start(sv, name, cJSON_GetObjectItemCaseSensitive(req, "options"),
				   c->remote, NULL, rec.path ? &rec : NULL, &ss, err, sizeof(err),
				   &code);
	if (rc < 0)
		return srv_reply_error(c, id, code, "%s", err);
	struct srv_waiter *w = srv_waiter_new(c, id, false);
	if (!w) /* (the session starts; the client hears of it through ls) */
		return srv_reply_error(c, id, "nomem", "out of memory");
	w->next = ss->new_waiters;
	ss->new_waiters = w;
}

static void srv_ls(struct server_client *c, const cJSON *id)
{
	cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "sessions");
	for (struct srv_session *ss = c->server->sessions; ss; ss = ss->next)
		cJSON_AddItemToArray(list, srv_session_describe(ss));
	srv_reply_ok(c, id, o);
}

static void srv_kill_server(struct server_client *c, const cJSON *id)
{
	struct server *sv = c->server;
	srv_reply_ok(c, id, NULL);
	if (sv->cfg.on_kill_server)
		sv->cfg.on_kill_server(sv, sv->cfg.data);
}

static void srv_client_line(struct server_client *c, const char *line, size_t len,
			    const struct srv_data *cut);

static bool srv_op_known(const char *op)
{
	static const char *const ops[] = {
		"hello",   "new",  "exec",  "result",  "ls",	      "interrupt",   "cancel",
		"restart", "kill", "watch", "capture", "complete",    "is_complete", "resize",
		"put",	   "get",  "files", "remove",  "kill-server", "ping"};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(op, ops[i]) == 0)
			return true;
	return false;
}

void server_client_line(struct server_client *c, const char *line, size_t len)
{
	struct server *sv = c->server;
	if (len == 0 || c->dead || sv->shutting_down)
		return;
	/* A big put is its data, base64: cJSON would copy it twice and the put decode it into a
	 * buffer of its own, all on the loop; cut out, the rest is parsed alone and the data
	 * decoded straight into the terminal's lines (srv_session_file). */
	size_t start, stop;
	char *rest;
	if (len < SRV_DATA_CUT || !protocol_json_data_span(line, len, "data", &start, &stop) ||
	    !(rest = malloc(len - (stop - start) + 1)))
		return srv_client_line(c, line, len, NULL);
	memcpy(rest, line, start);
	memcpy(rest + start, line + stop, len - stop);
	rest[len - (stop - start)] = '\0';
	struct srv_data cut = {line + start, stop - start, line, len};
	srv_client_line(c, rest, len - (stop - start), &cut);
	free(rest);
}

static void srv_client_line(struct server_client *c, const char *line, size_t len,
			    const struct srv_data *cut)
{
	struct server *sv = c->server;
	bool nul = false;
	cJSON *req = srv_request_parse(c, line, len, &nul);
	if (!req)
		return;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	const char *op = protocol_str(req, "op");
	if (cut && (!op || strcmp(op, "put") != 0)) { /* (not a put: the line as it came) */
		cJSON_Delete(req);
		return srv_client_line(c, cut->line, cut->line_len, NULL);
	}
	const cJSON *sname = cJSON_GetObjectItemCaseSensitive(req, "session");
	const char *name = cJSON_IsString(sname) ? sname->valuestring : NULL;
	if (!name && !sname && (c->flags & SERVER_CLIENT_STDIO))
		name = "default";
	struct srv_session *ss = name ? srv_session_find(sv, name) : NULL;
	const char *takes = "";
	const char *extra = op ? server_request_unknown_member(req, op, &takes) : NULL;
	if (!op)
		srv_reply_error(c, id, "usage", "request needs \"op\": %s", srv_ops);
	else if (!srv_op_known(op)) /* (before "session": "bogus needs a session" misleads) */
		srv_reply_error(c, id, "usage", "unknown op \"%.*s\": expected %s",
				(int)protocol_utf8_prefix(op, strlen(op), 64), op, srv_ops);
	else if (extra) /* (a typo must not pass in silence: "timout" would run 30 s) */
		srv_reply_error(c, id, "usage", "%s: unknown member '%.*s' (%s takes %s%.*s)", op,
				(int)protocol_utf8_prefix(extra, strlen(extra), 64), extra, op,
				*takes ? "id, op, " : "only id and op",
				*takes ? (int)strlen(takes) - 2 : 0, takes);
	else if (strcmp(op, "hello") == 0)
		srv_hello(c, req, id);
	else if (strcmp(op, "ping") == 0)
		srv_reply_ok(c, id, NULL);
	else if (!c->hello && !(c->flags & SERVER_CLIENT_STDIO))
		srv_reply_error(c, id, "protocol",
				"say hello first: {\"op\":\"hello\",\"protocol\":%d}",
				SERVER_PROTOCOL);
	else if (strcmp(op, "ls") == 0)
		srv_ls(c, id);
	else if (strcmp(op, "kill-server") == 0)
		srv_kill_server(c, id);
	else if (sname && !name)
		srv_reply_error(c, id, "usage", "\"session\" must be a string");
	else if (!name)
		srv_reply_error(c, id, "usage", "%s needs \"session\": a session's name", op);
	else if (nul && strcmp(op, "exec") != 0) /* (cJSON would cut "a\u0000b" to "a") */
		srv_reply_error(c, id, "usage", "%s", srv_nul_msg);
	else if (strcmp(op, "new") == 0)
		srv_new(c, req, id, name);
	else if (!ss &&
		 (strcmp(op, "exec") == 0 || strcmp(op, "result") == 0 ||
		  strcmp(op, "interrupt") == 0 || strcmp(op, "cancel") == 0 ||
		  strcmp(op, "restart") == 0 || strcmp(op, "kill") == 0 ||
		  strcmp(op, "watch") == 0 || strcmp(op, "capture") == 0 ||
		  strcmp(op, "complete") == 0 || strcmp(op, "is_complete") == 0 ||
		  strcmp(op, "resize") == 0 || strcmp(op, "put") == 0 || strcmp(op, "get") == 0 ||
		  strcmp(op, "files") == 0 || strcmp(op, "remove") == 0))
		srv_reply_error(c, id, "no_session", "no session '%.*s'",
				(int)protocol_utf8_prefix(name, strlen(name), 64), name);
	else if (strcmp(op, "exec") == 0)
		srv_session_exec(ss, c, req, id, nul);
	else if (strcmp(op, "result") == 0)
		srv_session_result(ss, c, req, id);
	else if (strcmp(op, "interrupt") == 0)
		srv_session_interrupt(ss, c, req, id);
	else if (strcmp(op, "cancel") == 0)
		srv_session_cancel(ss, c, req, id);
	else if (strcmp(op, "restart") == 0)
		srv_session_restart(ss, c, id);
	else if (strcmp(op, "kill") == 0)
		srv_session_kill(ss, c, id);
	else if (strcmp(op, "watch") == 0)
		srv_session_watch(ss, c, id);
	else if (strcmp(op, "capture") == 0)
		srv_session_capture(ss, c, req, id);
	else if (strcmp(op, "complete") == 0 || strcmp(op, "is_complete") == 0)
		srv_session_query(ss, c, req, id, op[0] == 'i');
	else if (strcmp(op, "resize") == 0)
		srv_session_resize(ss, c, req, id);
	else if (strcmp(op, "put") == 0 || strcmp(op, "get") == 0 || strcmp(op, "files") == 0 ||
		 strcmp(op, "remove") == 0)
		srv_session_file(ss, c, req, id, op, cut);
	else
		srv_reply_error(c, id, "usage", "unknown op \"%.*s\": expected %s",
				(int)protocol_utf8_prefix(op, strlen(op), 64), op, srv_ops);
	cJSON_Delete(req);
}

void server_shutdown(struct server *sv, const char *why)
{
	if (sv->shutting_down)
		return;
	sv->shutting_down = true;
	snprintf(sv->shutdown_why, sizeof(sv->shutdown_why), "%s", why);
	while (sv->sessions)
		srv_session_kill(sv->sessions, NULL, NULL);
	for (struct server_client *c = sv->clients; c; c = c->next)
		c->dead = true; /* (their connections are the caller's to close) */
	if (!sv->closing)
		srv_stopped(sv);
}

void srv_stopped(struct server *sv)
{
	if (!uv_is_closing((uv_handle_t *)&sv->sweep))
		uv_close((uv_handle_t *)&sv->sweep, srv_sweep_closed_cb);
	srv_pools_close(sv);
	if (sv->cfg.on_stopped)
		sv->cfg.on_stopped(sv, sv->cfg.data);
}

void server_free(struct server *sv)
{
	while (sv->clients)
		server_client_gone(sv->clients);
	srv_pools_free(sv);
	free(sv);
}

void server_client_notice(struct server_client *c, const char *code, const char *msg)
{
	srv_reply_error(c, NULL, code, "%s", msg);
}

char *server_error_line(const char *code, const char *msg, size_t *len)
{
	cJSON *o = srv_with_id(NULL);
	if (o) {
		cJSON_AddStringToObject(o, "error", msg);
		cJSON_AddStringToObject(o, "code", code);
	}
	size_t n;
	char *s = srv_print(o, &n);
	cJSON_Delete(o);
	if (!s)
		return NULL;
	s[n] = '\n'; /* (over its NUL: the line is not a string) */
	*len = n + 1;
	return s;
}

bool server_client_said_hello(const struct server_client *c)
{
	return c->hello;
}
