/*
 * http_sessions.c - the stateful routes of `serve --http`: the server's
 * protocol (ptybox-protocol(7)) over HTTP, one request per HTTP request.
 *
 *   POST   /v1/sessions                    new    (body: new's members; "name" or "session")
 *   GET    /v1/sessions                    ls
 *   DELETE /v1/sessions/NAME               kill
 *   POST   /v1/sessions/NAME/execute       exec   (body: exec's members), NDJSON events
 *   POST   /v1/sessions/NAME/interrupt     interrupt
 *   POST   /v1/sessions/NAME/restart       restart
 *   PUT    /v1/sessions/NAME/files/PATH    put    (body: the bytes)
 *   GET    /v1/sessions/NAME/files/PATH    get    (reply: the bytes)
 *
 * Each is a client of the server of its own (hello, then the one request),
 * so the objects are the socket's; an execute's events (stream, display)
 * are written as they come, one JSON line each, its result last. The HTTP
 * status is that of the first reply (an error code's: no_session 404...),
 * so an execute streams only once it is known to run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "http_piston.h"
#include "protocol.h"
#include "server.h"

/* /v1 requests in flight at once; past it 429. */
#define HTTP_MAX_CALLS 512
/* An execute's events waiting for a client that does not read: past it
 * further events are dropped (the result still comes, and says what was cut). */
#define HTTP_MAX_PENDING ((size_t)16 << 20)

enum call_step { C_SEND, C_WAIT, C_STREAM, C_DONE };

struct http_call {
	struct http_call *next;
	struct http_server *h;
	h2o_req_t *req;		 /* NULL once its client went */
	struct http_call **slot; /* in req's pool */
	struct server_client *client;
	enum call_step step;
	cJSON *request; /* sent at the next tick */
	int created;	/* the status of an ok reply (201 for new) */
	bool stream, get;
	h2o_generator_t gen;
	char *pending; /* lines for h2o, while it sends the last ones */
	size_t pending_len, pending_cap;
	bool sending, final, dropped;
};

static void calls_tick_cb(uv_timer_t *t);

static void calls_tick_start(struct http_server *h)
{
	if (!uv_is_active((uv_handle_t *)&h->calls_tick))
		uv_timer_start(&h->calls_tick, calls_tick_cb, 0, 0);
}

void http_sessions_init(struct http_server *h)
{
	uv_timer_init(h->loop, &h->calls_tick);
	h->calls_tick.data = h;
}

static void call_done(struct http_call *c)
{
	c->step = C_DONE;
	calls_tick_start(c->h);
}

static void call_req_gone(void *p)
{
	struct http_call *c = *(struct http_call **)p;
	if (c)
		c->req = NULL; /* (what it asked runs on, as for a client that went) */
}

/* The HTTP status of an error code of the protocol. */
static int call_status(const char *code, const char *errno_name, const char **reason)
{
	static const struct {
		const char *code;
		int status;
		const char *reason;
	} map[] = {
		{"usage", 400, "Bad Request"},
		{"malformed", 400, "Bad Request"},
		{"invalid_name", 400, "Bad Request"},
		{"protocol", 400, "Bad Request"},
		{"no_session", 404, "Not Found"},
		{"exists", 409, "Conflict"},
		{"busy", 409, "Conflict"},
		{"not_running", 409, "Conflict"},
		{"dead", 409, "Conflict"},
		{"killed", 409, "Conflict"},
		{"limit", 429, "Too Many Requests"},
		{"shutdown", 503, "Service Unavailable"},
	};
	if (code && strcmp(code, "file") == 0) {
		bool missing = errno_name && strcmp(errno_name, "ENOENT") == 0;
		*reason = missing ? "Not Found" : "Bad Request";
		return missing ? 404 : 400;
	}
	for (size_t i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].code, code) == 0) {
			*reason = map[i].reason;
			return map[i].status;
		}
	*reason = "Internal Server Error";
	return 500;
}

static void call_flush(struct http_call *c);

/* A request refused here as the server would: the protocol's usage error. */
static void call_usage(h2o_req_t *req, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;
	if (o && cJSON_AddStringToObject(o, "error", msg) &&
	    cJSON_AddStringToObject(o, "code", "usage"))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *body = s ? strdup(s) : NULL; /* (http_send frees with free) */
	cJSON_free(s);
	http_send(req, 400, "Bad Request", body, NULL, NULL);
}

static void call_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct http_call *c = (struct http_call *)((char *)g - offsetof(struct http_call, gen));
	c->sending = false;
	call_flush(c);
}

static void call_stop(h2o_generator_t *g, h2o_req_t *req)
{
	struct http_call *c = (struct http_call *)((char *)g - offsetof(struct http_call, gen));
	c->req = NULL;
	if (c->slot)
		*c->slot = NULL;
}

/* What waits goes to h2o, one send at a time (h2o asks for the next with
 * proceed); its bytes are copied into the request's pool, freed with it. */
static void call_flush(struct http_call *c)
{
	if (!c->req || c->sending || (!c->pending_len && !c->final))
		return;
	h2o_iovec_t buf = {.base = NULL, .len = c->pending_len};
	if (c->pending_len) {
		buf.base = h2o_mem_alloc_pool(&c->req->pool, c->pending_len);
		memcpy(buf.base, c->pending, c->pending_len);
	}
	c->pending_len = 0;
	bool final = c->final;
	c->sending = !final;
	h2o_send(c->req, &buf, buf.len ? 1 : 0,
		 final ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
	if (final) {
		*c->slot = NULL;
		c->req = NULL;
	}
}

static void call_queue(struct http_call *c, const char *s, size_t n)
{
	if (c->pending_len + n + 1 > HTTP_MAX_PENDING) {
		c->dropped = true;
		return;
	}
	if (c->pending_len + n + 1 > c->pending_cap) {
		size_t cap = c->pending_cap ? c->pending_cap : 4096;
		while (cap < c->pending_len + n + 1)
			cap *= 2;
		char *p = realloc(c->pending, cap);
		if (!p) {
			c->dropped = true;
			return;
		}
		c->pending = p;
		c->pending_cap = cap;
	}
	memcpy(c->pending + c->pending_len, s, n);
	c->pending[c->pending_len + n] = '\n';
	c->pending_len += n + 1;
}

/* The reply o (its id taken out) as the whole HTTP response. */
static void call_answer(struct http_call *c, cJSON *o)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
	int status = c->created;
	const char *reason = status == 201 ? "Created" : "OK";
	if (cJSON_IsString(err)) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
		const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "errno");
		status = call_status(cJSON_IsString(code) ? code->valuestring : NULL,
				     cJSON_IsString(en) ? en->valuestring : NULL, &reason);
	} else if (c->get) {
		/* The file's bytes themselves. */
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
		size_t n = cJSON_IsString(data) ? strlen(data->valuestring) : 0, len = 0;
		char *b = h2o_mem_alloc_pool(&c->req->pool, n + 1);
		if (n && sodium_base642bin((unsigned char *)b, n + 1, data->valuestring, n, NULL,
					   &len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
			http_error(c->req, 500, "Internal Server Error", "the file came garbled");
		} else {
			c->req->res.status = 200;
			c->req->res.reason = "OK";
			h2o_add_header(&c->req->pool, &c->req->res.headers, H2O_TOKEN_CONTENT_TYPE,
				       NULL, H2O_STRLIT("application/octet-stream"));
			h2o_send_inline(c->req, b, len);
		}
		*c->slot = NULL;
		c->req = NULL;
		return;
	}
	char *s = cJSON_PrintUnformatted(o);
	http_send(c->req, status, reason, s ? strdup(s) : NULL, NULL, NULL);
	cJSON_free(s);
	*c->slot = NULL;
	c->req = NULL;
}

static int call_on_line(void *conn, char *line, size_t len)
{
	struct http_call *c = conn;
	cJSON *o = cJSON_ParseWithLength(line, len);
	free(line);
	const cJSON *id = o ? cJSON_GetObjectItemCaseSensitive(o, "id") : NULL;
	if (!cJSON_IsNumber(id) || id->valueint != 1 || c->step == C_DONE) {
		cJSON_Delete(o); /* (hello's reply) */
		return 0;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
	bool event = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "event"));
	bool last = !event;
	/* (a result's "error" is null: an error reply's is a string) */
	if (!c->stream ||
	    (c->step == C_WAIT && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "error")))) {
		if (c->req)
			call_answer(c, o);
		call_done(c);
		cJSON_Delete(o);
		return 0;
	}
	if (c->step == C_WAIT && c->req) {
		/* Known to run: the stream starts. */
		c->req->res.status = 200;
		c->req->res.reason = "OK";
		h2o_add_header(&c->req->pool, &c->req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
			       H2O_STRLIT("application/x-ndjson"));
		c->gen.proceed = call_proceed;
		c->gen.stop = call_stop;
		h2o_start_response(c->req, &c->gen);
	}
	c->step = C_STREAM;
	if (last && c->dropped)
		cJSON_AddTrueToObject(o, "events_dropped");
	char *s = cJSON_PrintUnformatted(o);
	if (s) {
		if (last && c->pending_len + strlen(s) + 1 > HTTP_MAX_PENDING)
			c->pending_len = 0; /* (the events give way to the result) */
		call_queue(c, s, strlen(s));
		cJSON_free(s);
	}
	cJSON_Delete(o);
	if (last) {
		c->final = true;
		call_done(c);
	}
	call_flush(c);
	return 0;
}

static void call_free(struct http_call *c)
{
	struct http_server *h = c->h;
	for (struct http_call **pp = &h->calls; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	h->ncalls--;
	if (c->client)
		server_client_gone(c->client);
	cJSON_Delete(c->request);
	free(c->pending);
	free(c);
}

static void call_line(struct http_call *c, const cJSON *r)
{
	char *s = cJSON_PrintUnformatted(r);
	if (s) {
		server_client_line(c->client, s, strlen(s));
		cJSON_free(s);
	}
}

static void calls_tick_cb(uv_timer_t *t)
{
	struct http_server *h = t->data;
	for (struct http_call *c = h->calls, *next; c; c = next) {
		next = c->next;
		if (c->step == C_SEND) {
			c->step = C_WAIT;
			cJSON *hello = server_hello_request();
			call_line(c, hello);
			cJSON_Delete(hello);
			call_line(c, c->request);
		}
		next = c->next;
		/* (a stream still being written keeps its call until h2o has it all) */
		if (c->step == C_DONE && !(c->req && (c->sending || c->pending_len)))
			call_free(c);
	}
}

/* A %XX-decoded copy of a path segment (s, n) into out; -EINVAL if bad. */
static int call_unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '%') {
			unsigned v;
			char hex[3] = {0};
			if (i + 2 >= n)
				return -EINVAL;
			memcpy(hex, s + i + 1, 2);
			if (strspn(hex, "0123456789abcdefABCDEF") != 2 ||
			    sscanf(hex, "%2x", &v) != 1 || v == 0)
				return -EINVAL;
			ch = (char)v;
			i += 2;
		}
		if (w + 1 >= cap)
			return -EINVAL;
		out[w++] = ch;
	}
	out[w] = '\0';
	return 0;
}

static bool call_method(const h2o_req_t *req, const char *m)
{
	return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

static void call_405(h2o_req_t *req, const char *allow)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "method not allowed here: %s", allow);
	http_send(req, 405, "Method Not Allowed", http_piston_error(msg), H2O_TOKEN_ALLOW, allow);
}

/* The body as a JSON object (an empty body: {}), or NULL with the 400 sent. */
static cJSON *call_body(h2o_req_t *req)
{
	if (!req->entity.base || req->entity.len == 0)
		return cJSON_CreateObject();
	cJSON *o = cJSON_ParseWithLength(req->entity.base, req->entity.len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		http_error(req, 400, "Bad Request", "the body is not a JSON object");
		return NULL;
	}
	const char *dup = protocol_json_duplicate(o);
	if (dup) { /* (the limits read the first, the session the last: review2-1) */
		char msg[160];
		snprintf(msg, sizeof(msg), "the body has the member \"%.64s\" twice", dup);
		cJSON_Delete(o);
		http_error(req, 400, "Bad Request", msg);
		return NULL;
	}
	return o;
}

/* Sends r (taken) for req as op on session (may be NULL). */
static void call_start(struct http_server *h, h2o_req_t *req, cJSON *r, const char *op,
		       const char *session, int created, bool stream, bool get)
{
	if (h->ncalls >= HTTP_MAX_CALLS) {
		cJSON_Delete(r);
		http_send(req, 429, "Too Many Requests",
			  http_piston_error("too many requests at once; retry"),
			  H2O_TOKEN_RETRY_AFTER, "1");
		return;
	}
	const cJSON *given = cJSON_GetObjectItemCaseSensitive(r, "session");
	if (session && given && (!cJSON_IsString(given) || strcmp(given->valuestring, session))) {
		cJSON_Delete(r);
		http_error(req, 400, "Bad Request", "\"session\" in the body is not the path's");
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(r, "id");
	cJSON_DeleteItemFromObjectCaseSensitive(r, "op");
	cJSON_DeleteItemFromObjectCaseSensitive(r, "session");
	struct http_call *c = calloc(1, sizeof(*c));
	if (!c || !cJSON_AddNumberToObject(r, "id", 1) || !cJSON_AddStringToObject(r, "op", op) ||
	    (session && !cJSON_AddStringToObject(r, "session", session))) {
		free(c);
		cJSON_Delete(r);
		http_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	c->client = server_client_new(h->server, SERVER_CLIENT_REMOTE, call_on_line, c);
	if (!c->client) {
		free(c);
		cJSON_Delete(r);
		http_send(req, 429, "Too Many Requests",
			  http_piston_error("the server has as many clients as it takes"),
			  H2O_TOKEN_RETRY_AFTER, "1");
		return;
	}
	c->h = h;
	c->req = req;
	c->request = r;
	c->created = created;
	c->stream = stream;
	c->get = get;
	c->slot = h2o_mem_alloc_shared(&req->pool, sizeof(*c->slot), call_req_gone);
	*c->slot = c;
	c->next = h->calls;
	h->calls = c;
	h->ncalls++;
	calls_tick_start(h);
}

bool http_sessions_route(struct http_server *h, h2o_req_t *req)
{
	static const char root[] = "/v1/sessions";
	const char *p = req->path_normalized.base;
	size_t n = req->path_normalized.len;
	if (n < sizeof(root) - 1 || memcmp(p, root, sizeof(root) - 1) != 0 ||
	    (n > sizeof(root) - 1 && p[sizeof(root) - 1] != '/'))
		return false;
	p += sizeof(root) - 1;
	n -= sizeof(root) - 1;
	if (n <= 1) { /* /v1/sessions */
		if (call_method(req, "GET")) {
			call_start(h, req, cJSON_CreateObject(), "ls", NULL, 200, false, false);
		} else if (call_method(req, "POST")) {
			cJSON *b = call_body(req);
			if (!b)
				return true;
			/* ("name", as REST has it, or the protocol's "session") */
			cJSON *name = cJSON_DetachItemFromObjectCaseSensitive(b, "name");
			if (name && !cJSON_GetObjectItemCaseSensitive(b, "session"))
				cJSON_AddItemToObject(b, "session", name);
			else
				cJSON_Delete(name);
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(b, "session");
			if (!cJSON_IsString(s)) {
				cJSON_Delete(b);
				http_error(req, 400, "Bad Request",
					   "a session needs a \"name\" (a string)");
				return true;
			}
			char session[SERVER_NAME_MAX * 4 + 1];
			snprintf(session, sizeof(session), "%s", s->valuestring);
			char err[512] = "out of memory";
			if (http_limits_options(&h->limits, b, err, sizeof(err)) < 0) {
				cJSON_Delete(b);
				call_usage(req, err);
				return true;
			}
			call_start(h, req, b, "new", session, 201, false, false);
		} else {
			call_405(req, "GET, POST");
		}
		return true;
	}
	/* /NAME[/VERB[/PATH]] */
	p++;
	n--;
	size_t seg = 0;
	while (seg < n && p[seg] != '/')
		seg++;
	char name[SERVER_NAME_MAX * 3 + 1];
	if (seg == 0 || call_unescape(p, seg, name, sizeof(name)) < 0) {
		http_error(req, 400, "Bad Request", "a session's name in the path is not valid");
		return true;
	}
	p += seg;
	n -= seg;
	if (n > 0) {
		p++;
		n--;
	}
	size_t vn = 0;
	while (vn < n && p[vn] != '/')
		vn++;
	const char *verb = p;
	if (vn == 0) {
		if (call_method(req, "DELETE"))
			call_start(h, req, cJSON_CreateObject(), "kill", name, 200, false, false);
		else
			call_405(req, "DELETE");
		return true;
	}
	bool is_files = vn == 5 && memcmp(verb, "files", 5) == 0;
	if (!is_files && vn != n) {
		http_error(req, 404, "Not Found", "not found");
		return true;
	}
	static const char *const posts[] = {"execute", "interrupt", "restart"};
	static const char *const ops[] = {"exec", "interrupt", "restart"};
	for (size_t i = 0; i < 3; i++) {
		if (vn != strlen(posts[i]) || memcmp(verb, posts[i], vn) != 0)
			continue;
		if (!call_method(req, "POST")) {
			call_405(req, "POST");
			return true;
		}
		cJSON *b = call_body(req);
		/* (an execute streams its events unless asked not to) */
		if (b && i == 0 && !cJSON_GetObjectItemCaseSensitive(b, "stream"))
			cJSON_AddTrueToObject(b, "stream");
		/* ("stream": false: the result alone, as one JSON reply) */
		bool stream =
			b && i == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "stream"));
		char err[512];
		if (b && i == 0 && http_limits_exec(&h->limits, b, err, sizeof(err)) < 0) {
			cJSON_Delete(b);
			call_usage(req, err);
			return true;
		}
		if (b)
			call_start(h, req, b, ops[i], name, 200, stream, false);
		return true;
	}
	if (!is_files) {
		http_error(req, 404, "Not Found", "not found");
		return true;
	}
	/* files/PATH: relative to the session's folder, or absolute after "//" */
	const char *fp = verb + vn + 1;
	size_t fn = vn < n ? n - vn - 1 : 0;
	char path[4097];
	if (fn == 0 || call_unescape(fp, fn, path, sizeof(path)) < 0) {
		http_error(req, 400, "Bad Request", "files/PATH: no path, or not a valid one");
		return true;
	}
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "path", path);
	if (call_method(req, "GET")) {
		call_start(h, req, r, "get", name, 200, false, true);
	} else if (call_method(req, "PUT")) {
		size_t len = req->entity.base ? req->entity.len : 0;
		size_t cap = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
		char *b64 = malloc(cap);
		if (!b64) {
			cJSON_Delete(r);
			http_error(req, 500, "Internal Server Error", "out of memory");
			return true;
		}
		sodium_bin2base64(b64, cap, (const unsigned char *)(len ? req->entity.base : ""),
				  len, sodium_base64_VARIANT_ORIGINAL);
		cJSON_AddStringToObject(r, "data", b64);
		free(b64);
		call_start(h, req, r, "put", name, 200, false, false);
	} else {
		cJSON_Delete(r);
		call_405(req, "GET, PUT");
	}
	return true;
}
