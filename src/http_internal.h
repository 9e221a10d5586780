/* http_internal.h - what http_server.c and http_sessions.c share. */
#ifndef PTYBOX_HTTP_INTERNAL_H
#define PTYBOX_HTTP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <h2o.h>
#include <sodium.h>

#include "http_limits.h"

struct http_job;
struct http_call;

struct http_handler {
	h2o_handler_t super;
	struct http_server *h;
};

struct http_conn {
	uv_tcp_t tcp; /* h2o's once past the gate (its data is h2o's socket) */
	struct http_server *h;
	/* http_gate.c: the head read so far (counted in h->buffered), its
	 * deadline, and what the connection holds of h->buffered once passed */
	uv_timer_t *timer;
	char *head;
	size_t head_len, head_cap;
	size_t reserved;
};

struct http_server {
	uv_loop_t *loop;
	struct server *server;
	h2o_globalconf_t config;
	h2o_context_t ctx;
	h2o_accept_ctx_t accept_ctx;
	uv_tcp_t listener;
	uv_timer_t tick; /* requests to the server, and jobs freed, outside its calls */
	bool listening, stopped;
	size_t nconns, max_active;
	size_t buffered; /* request bytes held: heads read, bodies announced */
	size_t active;	 /* executes not yet answered */
	size_t njobs;	 /* those and the ones whose session is still being killed */
	unsigned pool;
	uint64_t next_job;
	char *token;
	unsigned char token_hash[crypto_generichash_BYTES];
	char pyversion[64];
	struct http_limits limits;
	struct http_job *jobs;
	/* http_sessions.c: the /v1 requests in flight, and their own tick */
	struct http_call *calls;
	size_t ncalls;
	uv_timer_t calls_tick;
};

/* http_gate.c: reads c's request head, then answers (401, 503, 400) and
 * closes, or hands c to h2o. */
void http_gate_start(struct http_conn *c);

/* A reply with a JSON body (taken: freed here) and a header or none. */
void http_send(h2o_req_t *req, int status, const char *reason, char *body, const h2o_token_t *hdr,
	       const char *value);
/* {"message": msg} with status. */
void http_error(h2o_req_t *req, int status, const char *reason, const char *msg);

/* http_sessions.c: the stateful routes, /v1/sessions...; true if req's path
 * is one of them (answered, now or later). */
bool http_sessions_route(struct http_server *h, h2o_req_t *req);
void http_sessions_init(struct http_server *h);

#endif
