/*
 * http_server.h - `ptybox serve --http`: Piston's API over HTTP on the
 * server's loop, through h2o (libh2o, built on libuv). Each execute is a
 * client of the server (server.h) that makes a session from its warm pool,
 * puts the files, runs the first, answers and kills the session.
 */
#ifndef PTYBOX_HTTP_SERVER_H
#define PTYBOX_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

struct server;
struct http_server;
struct http_limits;

/* The caps (ptybox(1) HTTP says them). */
#define HTTP_MAX_BODY	     ((size_t)16 << 20)
#define HTTP_REQ_TIMEOUT_MS  10000
#define HTTP_MAX_CONNECTIONS 8192
/* A request line and headers (the gate's, http_gate.c); and what the heads
 * being read and the bodies announced may hold across connections: past it
 * a request is answered 503 with Retry-After. */
#define HTTP_MAX_HEAD	((size_t)64 << 10)
#define HTTP_MAX_BODIES ((size_t)64 << 20)
/* Executes at once (each a session) by default, and the most --max-executes
 * takes; past it 429 with Retry-After. */
#define HTTP_DEFAULT_ACTIVE 64
#define HTTP_MAX_ACTIVE	    1024
/* Beyond those, sessions answered and still being killed. */
#define HTTP_MAX_DYING	  256
#define HTTP_DEFAULT_ADDR "127.0.0.1:2000"

struct http_config {
	const char *addr;      /* HOST:PORT, [V6]:PORT; NULL: HTTP_DEFAULT_ADDR */
	const char *token;     /* NULL: none (loopback only) */
	const char *pyversion; /* the runtime's version */
	unsigned pool;	       /* interpreters started ahead for executes */
	unsigned max_active;   /* executes at once; 0: HTTP_DEFAULT_ACTIVE */
	/* The operator's limits on what a request asks (copied); NULL: the
	 * defaults, and no "net". */
	const struct http_limits *limits;
};

/* Whether addr parses, into *sa; *loopback says if it is. Pure. 0 or -EINVAL. */
int http_addr_parse(const char *addr, struct sockaddr_storage *sa, bool *loopback);

/* Listens; 0, or -errno with err filled ("listen 127.0.0.1:2000: address in use"). */
int http_server_start(uv_loop_t *loop, struct server *sv, const struct http_config *cfg,
		      struct http_server **out, char *err, size_t errlen);
/* Stops listening and answering; what runs ends with the server. */
void http_server_stop(struct http_server *h);

#endif
