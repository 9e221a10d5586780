/*
 * http_server.c - `ptybox serve --http`: h2o on the server's libuv loop,
 * the routes of Piston's API, and the executes in flight.
 *
 * h2o (Debian's libh2o, built on libuv) parses HTTP/1.1 and keeps its caps:
 * the body (413 past HTTP_MAX_BODY, read into memory only up to it) and the
 * time a request may take to arrive (HTTP_REQ_TIMEOUT_MS: a client sending a
 * byte a second is cut). Before h2o, the gate (http_gate.c) reads each
 * request's head: the token and the room for its body are checked there,
 * before any of the body is held. Connections are counted here: past
 * HTTP_MAX_CONNECTIONS a new one is closed at once, so idle ones cannot take
 * every fd. What a request may ask of a session is the operator's
 * (http_limits.c).
 *
 * An execute is a client of the server like any connection: it speaks the
 * JSON lines of ptybox-protocol(7) (new from the warm pool, put, exec with
 * stream so that the output comes in order, kill), so it never blocks the
 * loop and ends sessions as every other client does. Requests to the server
 * go out from a tick of the loop, never from inside one of its replies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <h2o.h>
#include <sodium.h>

#include "http_piston.h"
#include "http_internal.h"
#include "http_server.h"
#include "server.h"

/* What one execute's output (stdout and stderr in order) keeps; the result
 * carries each stream within --max-output, this is their sum, cut past it. */
#define HTTP_MAX_OUTPUT ((size_t)8 << 20)

enum job_step { J_SEND, J_RUNNING, J_KILL, J_KILLING, J_DONE };

struct http_job {
	struct http_job *next;
	struct http_server *h;
	h2o_req_t *req;		/* NULL once answered or its client went */
	struct http_job **slot; /* in req's pool: cleared when answered */
	struct server_client *client;
	enum job_step step;
	struct http_piston_plan plan;
	int exec_id, kill_id;
	char name[40];
	char *output;
	size_t output_len, output_cap;
};

static void http_tick_cb(uv_timer_t *t);

static void http_tick_start(struct http_server *h)
{
	if (!uv_is_active((uv_handle_t *)&h->tick))
		uv_timer_start(&h->tick, http_tick_cb, 0, 0);
}

void http_send(h2o_req_t *req, int status, const char *reason, char *body, const h2o_token_t *hdr,
	       const char *value)
{
	req->res.status = status;
	req->res.reason = reason;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
		       H2O_STRLIT("application/json"));
	if (hdr)
		h2o_add_header(&req->pool, &req->res.headers, hdr, NULL, value, strlen(value));
	if (!body) {
		static const char oom[] = "{\"message\":\"out of memory\"}";
		h2o_send_inline(req, oom, sizeof(oom) - 1);
		return;
	}
	h2o_send_inline(req, body, strlen(body)); /* (copies it) */
	free(body);
}

void http_error(h2o_req_t *req, int status, const char *reason, const char *msg)
{
	http_send(req, status, reason, http_piston_error(msg), NULL, NULL);
}

/* The job's answer (body taken), with a header or none; its session is
 * killed next. */
static void job_answer_with(struct http_job *j, int status, const char *reason, char *body,
			    const h2o_token_t *hdr, const char *value)
{
	if (j->req) {
		*j->slot = NULL;
		http_send(j->req, status, reason, body, hdr, value);
		j->req = NULL;
	} else {
		free(body);
	}
	if (j->step < J_KILL) {
		j->step = J_KILL;
		j->h->active--;
		http_tick_start(j->h);
	}
}

static void job_answer(struct http_job *j, int status, const char *reason, char *body)
{
	job_answer_with(j, status, reason, body, NULL, NULL);
}

/* The request's pool is going: the client went before its answer. */
static void job_req_gone(void *p)
{
	struct http_job *j = *(struct http_job **)p;
	if (!j)
		return;
	j->req = NULL;
	if (j->step < J_KILL) {
		j->step = J_KILL;
		j->h->active--;
		http_tick_start(j->h);
	}
}

static void job_output(struct http_job *j, const char *text)
{
	size_t n = strlen(text);
	if (n > HTTP_MAX_OUTPUT - j->output_len)
		n = HTTP_MAX_OUTPUT - j->output_len; /* (the rest is cut; the result says) */
	if (n == 0)
		return;
	if (j->output_len + n + 1 > j->output_cap) {
		size_t cap = j->output_cap ? j->output_cap * 2 : 4096;
		while (cap < j->output_len + n + 1)
			cap *= 2;
		char *o = realloc(j->output, cap);
		if (!o)
			return;
		j->output = o;
		j->output_cap = cap;
	}
	memcpy(j->output + j->output_len, text, n);
	j->output_len += n;
	j->output[j->output_len] = '\0';
}

/* A line from the server for this job (taken). */
static int job_on_line(void *conn, char *line, size_t len)
{
	struct http_job *j = conn;
	cJSON *o = cJSON_ParseWithLength(line, len);
	free(line);
	if (!o)
		return 0;
	const cJSON *idj = cJSON_GetObjectItemCaseSensitive(o, "id");
	int id = cJSON_IsNumber(idj) ? idj->valueint : -1;
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "event");
	if (id == j->kill_id && j->step == J_KILLING) {
		j->step = J_DONE; /* (every earlier reply came before this one) */
		http_tick_start(j->h);
	} else if (j->step >= J_KILL || id <= 0) {
		/* (after the answer: what the kill cut short) */
	} else if (cJSON_IsString(err)) {
		/* The session could not start (the server's limit: 429), or a
		 * file could not be put. */
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
		bool start = id == 1;
		if (start && cJSON_IsString(code) && strcmp(code->valuestring, "limit") == 0) {
			job_answer_with(j, 429, "Too Many Requests",
					http_piston_error(err->valuestring), H2O_TOKEN_RETRY_AFTER,
					"1");
		} else {
			job_answer(j, start ? 500 : 400,
				   start ? "Internal Server Error" : "Bad Request",
				   http_piston_error(err->valuestring));
		}
	} else if (id == j->exec_id && cJSON_IsString(ev)) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text");
		if (strcmp(ev->valuestring, "stream") == 0 && cJSON_IsString(text))
			job_output(j, text->valuestring);
	} else if (id == j->exec_id && cJSON_GetObjectItemCaseSensitive(o, "status")) {
		job_answer(
			j, 200, "OK",
			http_piston_reply(&j->plan, o, j->output ? j->output : "", j->output_len));
	}
	cJSON_Delete(o);
	return 0;
}

static void job_line(struct http_job *j, cJSON *r)
{
	char *s = cJSON_PrintUnformatted(r);
	if (s) {
		server_client_line(j->client, s, strlen(s));
		cJSON_free(s);
	}
}

static void job_free(struct http_job *j)
{
	struct http_server *h = j->h;
	for (struct http_job **pp = &h->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	if (j->client)
		server_client_gone(j->client);
	h->njobs--;
	http_piston_plan_free(&j->plan);
	free(j->output);
	free(j);
}

/* Sends what jobs have to send, frees those done. */
static void http_tick_cb(uv_timer_t *t)
{
	struct http_server *h = t->data;
	struct http_job *j = h->jobs;
	while (j) {
		struct http_job *next = j->next;
		if (j->step == J_SEND) {
			j->step = J_RUNNING;
			cJSON *hello = server_hello_request();
			job_line(j, hello);
			cJSON_Delete(hello);
			cJSON *reqs =
				http_piston_requests(&j->plan, j->name, h->pool, 1, &j->exec_id);
			if (!reqs) {
				job_answer(j, 500, "Internal Server Error",
					   http_piston_error("out of memory"));
			} else {
				j->kill_id = j->exec_id + 1;
				/* the new: the operator's limits where it asks none */
				char err[256] = "out of memory";
				if (http_limits_options(&h->limits, cJSON_GetArrayItem(reqs, 0),
							err, sizeof(err)) < 0)
					job_answer(j, 400, "Bad Request", http_piston_error(err));
				cJSON *r;
				cJSON_ArrayForEach(r, reqs)
				{
					if (j->step != J_RUNNING)
						break;
					job_line(j, r);
				}
				cJSON_Delete(reqs);
			}
		}
		if (j->step == J_KILL) {
			j->step = J_KILLING;
			cJSON *k = cJSON_CreateObject();
			cJSON_AddNumberToObject(k, "id", j->kill_id);
			cJSON_AddStringToObject(k, "op", "kill");
			cJSON_AddStringToObject(k, "session", j->name);
			job_line(j, k);
			cJSON_Delete(k);
		}
		next = j->next; /* (the server's replies may not free; we do, here) */
		if (j->step == J_DONE)
			job_free(j);
		j = next;
	}
}

static void job_start(struct http_server *h, h2o_req_t *req)
{
	char err[256];
	struct http_job *j = calloc(1, sizeof(*j));
	if (!j) {
		http_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	/* run_timeout: at most serve's --timeout when it gave one (0: none) */
	const struct http_limits *l = &h->limits;
	double most_ms = HTTP_PISTON_MAX_TIMEOUT_MS;
	if (l->given[0][0])
		most_ms = l->max.timeout > 0 ? l->max.timeout * 1000 : 1e12;
	int rc = http_piston_plan_parse_max(req->entity.base ? req->entity.base : "",
					    req->entity.base ? req->entity.len : 0, h->pyversion,
					    most_ms, &j->plan, err, sizeof(err));
	if (rc == 0 && j->plan.memory >= 0 && l->max.memory > 0 &&
	    (uint64_t)j->plan.memory > l->max.memory) {
		snprintf(err, sizeof(err),
			 "run_memory_limit cannot exceed the configured limit of %llu",
			 (unsigned long long)l->max.memory);
		rc = -EINVAL;
	}
	if (rc < 0) {
		http_piston_plan_free(&j->plan);
		free(j);
		http_error(req, rc == -ENOMEM ? 500 : 400,
			   rc == -ENOMEM ? "Internal Server Error" : "Bad Request", err);
		return;
	}
	j->h = h;
	j->req = req;
	snprintf(j->name, sizeof(j->name), "http-%llu", (unsigned long long)++h->next_job);
	j->client = server_client_new(h->server, SERVER_CLIENT_REMOTE, job_on_line, j);
	j->slot = h2o_mem_alloc_shared(&req->pool, sizeof(*j->slot), job_req_gone);
	if (!j->client) {
		http_piston_plan_free(&j->plan);
		free(j);
		http_send(req, 429, "Too Many Requests",
			  http_piston_error("the server has as many clients as it takes"),
			  H2O_TOKEN_RETRY_AFTER, "1");
		return;
	}
	*j->slot = j;
	j->next = h->jobs;
	h->jobs = j;
	h->active++;
	h->njobs++;
	j->step = J_SEND;
	http_tick_start(h);
}

static bool http_path_is(const h2o_req_t *req, const char *path)
{
	size_t n = strlen(path);
	const h2o_iovec_t *p = &req->path_normalized;
	return (p->len == n || (p->len == n + 1 && p->base[n] == '/')) &&
	       memcmp(p->base, path, n) == 0;
}

static bool http_method_is(const h2o_req_t *req, const char *m)
{
	return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

/* Authorization: Bearer TOKEN, compared in constant time (as hashes, so
 * that the length says nothing either). */
static bool http_authorized(struct http_server *h, h2o_req_t *req)
{
	if (!h->token)
		return true;
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
	if (i < 0)
		return false;
	const h2o_iovec_t *v = &req->headers.entries[i].value;
	if (v->len < 7 || strncasecmp(v->base, "Bearer ", 7) != 0)
		return false;
	unsigned char got[crypto_generichash_BYTES];
	crypto_generichash(got, sizeof(got), (const unsigned char *)v->base + 7, v->len - 7, NULL,
			   0);
	return sodium_memcmp(got, h->token_hash, sizeof(got)) == 0;
}

static int http_on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct http_server *h = ((struct http_handler *)self)->h;
	/* One request a connection: each passes the gate (http_gate.c). */
	req->http1_is_persistent = 0;
	if (h->stopped) {
		http_error(req, 503, "Service Unavailable", "the server is shutting down");
		return 0;
	}
	if (!http_authorized(h, req)) {
		http_send(req, 401, "Unauthorized",
			  http_piston_error("missing or wrong Authorization: Bearer token"),
			  H2O_TOKEN_WWW_AUTHENTICATE, "Bearer");
		return 0;
	}
	if (http_sessions_route(h, req))
		return 0;
	if (http_path_is(req, "/api/v2/runtimes")) {
		if (!http_method_is(req, "GET") && !http_method_is(req, "HEAD")) {
			http_send(req, 405, "Method Not Allowed",
				  http_piston_error("method not allowed: GET /api/v2/runtimes"),
				  H2O_TOKEN_ALLOW, "GET");
			return 0;
		}
		http_send(req, 200, "OK", http_piston_runtimes(h->pyversion), NULL, NULL);
		return 0;
	}
	if (http_path_is(req, "/api/v2/execute")) {
		if (!http_method_is(req, "POST")) {
			http_send(req, 405, "Method Not Allowed",
				  http_piston_error("method not allowed: POST /api/v2/execute"),
				  H2O_TOKEN_ALLOW, "POST");
			return 0;
		}
		if (h->active >= h->max_active || h->njobs >= h->max_active + HTTP_MAX_DYING) {
			/* (each is a sandbox: the queue is the pool's, bounded here;
			 * and sessions still being killed hold theirs a moment longer) */
			http_send(req, 429, "Too Many Requests",
				  http_piston_error("too many executions at once; retry"),
				  H2O_TOKEN_RETRY_AFTER, "1");
			return 0;
		}
		job_start(h, req);
		return 0;
	}
	http_error(req, 404, "Not Found", "not found");
	return 0;
}

static void http_refused_cb(uv_handle_t *handle)
{
	free(handle);
}

static void http_on_connection(uv_stream_t *listener, int status)
{
	struct http_server *h = listener->data;
	if (status < 0)
		return;
	struct http_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return; /* (it waits in the backlog) */
	c->h = h;
	uv_tcp_init(h->loop, &c->tcp);
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0) {
		uv_close((uv_handle_t *)&c->tcp, http_refused_cb);
		return;
	}
	if (h->nconns >= HTTP_MAX_CONNECTIONS || h->stopped) {
		/* At the cap: closed at once, so the fds stay ours. */
		uv_close((uv_handle_t *)&c->tcp, http_refused_cb);
		return;
	}
	h->nconns++;
	http_gate_start(c);
}

int http_addr_parse(const char *addr, struct sockaddr_storage *sa, bool *loopback)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr || !colon[1] ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	size_t hn = (size_t)(colon - addr);
	if (hn >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hn);
	host[hn] = '\0';
	long port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535 || strlen(colon + 1) > 5)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	if (host[0] == '[') {
		if (hn < 3 || host[hn - 1] != ']')
			return -EINVAL;
		host[hn - 1] = '\0';
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
		if (uv_ip6_addr(host + 1, (int)port, s6) != 0)
			return -EINVAL;
		*loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	return 0;
}

int http_server_start(uv_loop_t *loop, struct server *sv, const struct http_config *cfg,
		      struct http_server **out, char *err, size_t errlen)
{
	const char *addr = cfg->addr ? cfg->addr : HTTP_DEFAULT_ADDR;
	struct sockaddr_storage sa;
	bool loopback;
	if (http_addr_parse(addr, &sa, &loopback) < 0) {
		snprintf(err, errlen, "--http %s: expected HOST:PORT (127.0.0.1:2000, [::1]:2000)",
			 addr);
		return -EINVAL;
	}
	if (!loopback && !cfg->token) {
		snprintf(err, errlen,
			 "--http %s: an address other than loopback needs --token-file", addr);
		return -EINVAL;
	}
	struct http_server *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->loop = loop;
	h->server = sv;
	h->pool = cfg->pool;
	h->max_active = cfg->max_active ? cfg->max_active : HTTP_DEFAULT_ACTIVE;
	if (cfg->limits)
		h->limits = *cfg->limits;
	else
		http_limits_init(&h->limits);
	snprintf(h->pyversion, sizeof(h->pyversion), "%s", cfg->pyversion);
	if (cfg->token) {
		h->token = strdup(cfg->token);
		crypto_generichash(h->token_hash, sizeof(h->token_hash),
				   (const unsigned char *)cfg->token, strlen(cfg->token), NULL, 0);
	}
	h2o_config_init(&h->config);
	h->config.max_request_entity_size = HTTP_MAX_BODY;
	h->config.http1.req_timeout = HTTP_REQ_TIMEOUT_MS;
	h->config.http1.upgrade_to_http2 = 0;
	h->config.http2.idle_timeout = HTTP_REQ_TIMEOUT_MS;
	h2o_hostconf_t *host =
		h2o_config_register_host(&h->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	h2o_pathconf_t *pc = h2o_config_register_path(host, "/", 0);
	struct http_handler *hd = (struct http_handler *)h2o_create_handler(pc, sizeof(*hd));
	hd->super.on_req = http_on_req;
	hd->h = h;
	h2o_context_init(&h->ctx, loop, &h->config);
	h->accept_ctx.ctx = &h->ctx;
	h->accept_ctx.hosts = h->config.hosts;
	uv_timer_init(loop, &h->tick);
	h->tick.data = h;
	http_sessions_init(h);
	uv_tcp_init(loop, &h->listener);
	h->listener.data = h;
	int rc = uv_tcp_bind(&h->listener, (const struct sockaddr *)&sa, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&h->listener, 1024, http_on_connection);
	if (rc < 0) {
		snprintf(err, errlen, "listen %s: %s", addr, uv_strerror(rc));
		/* (the process ends with this: its handles go with it) */
		return rc;
	}
	h->listening = true;
	*out = h;
	return 0;
}

void http_server_stop(struct http_server *h)
{
	if (h->stopped)
		return;
	h->stopped = true;
	if (h->listening)
		uv_close((uv_handle_t *)&h->listener, NULL);
	h->listening = false;
}
