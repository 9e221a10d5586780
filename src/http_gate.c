/*
 * http_gate.c - a connection's request head, read here before h2o sees it.
 *
 * h2o 2.2 reads a request's whole body into memory before any handler runs,
 * so a check made in the handler comes after the bytes: 60 unauthenticated
 * POSTs of 16 MiB held ~1 GB (hostile-3). The gate reads the request line
 * and headers itself (bounded by HTTP_MAX_HEAD), then:
 *   - without the token (when there is one): 401 at once, connection closed;
 *   - when the body it announces (Content-Length, or HTTP_MAX_BODY for a
 *     chunked one) would take the bodies buffered across connections past
 *     HTTP_MAX_BODIES: 503 with Retry-After, connection closed;
 *   - else the bytes read so far go to h2o's input and h2o takes the
 *     connection from there (h2o_http1_accept parses what is already in).
 * Every connection carries one request (http_on_req answers with
 * Connection: close), so every request passes the gate. A connection's
 * reservation is given back when it closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <h2o.h>
#include <sodium.h>

#include "http_internal.h"
#include "http_server.h"

/* picohttpparser, inside libh2o (its header is not installed). */
struct phr_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
		      const char **path, size_t *path_len, int *minor_version,
		      struct phr_header *headers, size_t *num_headers, size_t last_len);

#define GATE_HEADERS   100 /* (h2o's H2O_MAX_HEADERS) */
#define GATE_LINGER_MS 2000

struct http_gate_write {
	uv_write_t w;
	struct http_conn *c;
	char text[512];
};

static void gate_timer_closed_cb(uv_handle_t *t)
{
	free(t);
}

static void gate_timer_stop(struct http_conn *c)
{
	if (c->timer) {
		uv_close((uv_handle_t *)c->timer, gate_timer_closed_cb);
		c->timer = NULL;
	}
}

static void gate_buf_free(struct http_conn *c)
{
	c->h->buffered -= c->head_cap;
	free(c->head);
	c->head = NULL;
	c->head_len = c->head_cap = 0;
}

/* The connection's end, the gate's or h2o's: its reservation is given back. */
static void gate_closed_cb(uv_handle_t *handle)
{
	struct http_conn *c = (struct http_conn *)handle;
	c->h->buffered -= c->reserved;
	c->h->nconns--;
	free(c);
}

static void gate_close(struct http_conn *c)
{
	gate_timer_stop(c);
	gate_buf_free(c);
	if (!uv_is_closing((uv_handle_t *)&c->tcp))
		uv_close((uv_handle_t *)&c->tcp, gate_closed_cb);
}

static void gate_timeout_cb(uv_timer_t *t)
{
	gate_close(t->data);
}

/* After an answer: what the client still sends is read and dropped (so that
 * its close is not a reset that loses the answer), for a moment at most. */
static char gate_sink[16384];

static void gate_sink_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
	(void)handle;
	(void)hint;
	*buf = uv_buf_init(gate_sink, sizeof(gate_sink));
}

static void gate_sink_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void)buf;
	if (n < 0)
		gate_close((struct http_conn *)s);
}

static void gate_shutdown_cb(uv_shutdown_t *sh, int status)
{
	(void)status;
	free(sh);
}

static void gate_written_cb(uv_write_t *w, int status)
{
	struct http_gate_write *gw = (struct http_gate_write *)w;
	struct http_conn *c = gw->c;
	free(gw);
	if (status < 0 || uv_is_closing((uv_handle_t *)&c->tcp)) {
		gate_close(c);
		return;
	}
	uv_shutdown_t *sh = malloc(sizeof(*sh));
	if (!sh || uv_shutdown(sh, (uv_stream_t *)&c->tcp, gate_shutdown_cb) < 0) {
		free(sh);
		gate_close(c);
	}
}

/* Answers status with {"message": msg} (and a header line or none), closes. */
static void gate_answer(struct http_conn *c, const char *status, const char *header,
			const char *msg)
{
	uv_read_stop((uv_stream_t *)&c->tcp);
	gate_buf_free(c);
	struct http_gate_write *gw = malloc(sizeof(*gw));
	if (!gw) {
		gate_close(c);
		return;
	}
	gw->c = c;
	char body[256];
	int bn = snprintf(body, sizeof(body), "{\"message\":\"%s\"}", msg);
	int n = snprintf(gw->text, sizeof(gw->text),
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\n%s%sContent-Length: "
			 "%d\r\nConnection: close\r\n\r\n%s",
			 status, header ? header : "", header ? "\r\n" : "", bn, body);
	uv_buf_t b = uv_buf_init(gw->text, (unsigned)n);
	if (uv_write(&gw->w, (uv_stream_t *)&c->tcp, &b, 1, gate_written_cb) < 0) {
		free(gw);
		gate_close(c);
		return;
	}
	uv_read_start((uv_stream_t *)&c->tcp, gate_sink_alloc_cb, gate_sink_read_cb);
	uv_timer_start(c->timer, gate_timeout_cb, GATE_LINGER_MS, 0);
}

static bool gate_header_is(const struct phr_header *hd, const char *name)
{
	return hd->name_len == strlen(name) && strncasecmp(hd->name, name, hd->name_len) == 0;
}

static bool gate_authorized(const struct http_server *h, const struct phr_header *hd, size_t n)
{
	if (!h->token)
		return true;
	for (size_t i = 0; i < n; i++) {
		if (!gate_header_is(&hd[i], "authorization"))
			continue;
		const char *v = hd[i].value;
		size_t len = hd[i].value_len;
		if (len < 7 || strncasecmp(v, "Bearer ", 7) != 0)
			return false;
		unsigned char got[crypto_generichash_BYTES];
		crypto_generichash(got, sizeof(got), (const unsigned char *)v + 7, len - 7, NULL,
				   0);
		return sodium_memcmp(got, h->token_hash, sizeof(got)) == 0;
	}
	return false;
}

/* What the body the head announces may hold in memory: h2o answers a bad or
 * too large Content-Length (400, 413) before reading any of it. */
static size_t gate_body_size(const struct phr_header *hd, size_t n)
{
	size_t size = 0;
	for (size_t i = 0; i < n; i++) {
		if (gate_header_is(&hd[i], "transfer-encoding"))
			return HTTP_MAX_BODY;
		if (gate_header_is(&hd[i], "content-length") && size == 0) {
			size_t v = 0;
			size_t j = 0;
			for (;
			     j < hd[i].value_len && hd[i].value[j] >= '0' && hd[i].value[j] <= '9';
			     j++) {
				v = v * 10 + (size_t)(hd[i].value[j] - '0');
				if (v > HTTP_MAX_BODY)
					break;
			}
			size = v > HTTP_MAX_BODY ? 0 : v;
		}
	}
	return size;
}

/* The head is complete in c->head: answered here, or h2o's from now on. */
static void gate_pass(struct http_conn *c, const struct phr_header *hd, size_t n)
{
	struct http_server *h = c->h;
	if (!h->stopped && !gate_authorized(h, hd, n)) {
		gate_answer(c, "401 Unauthorized", "WWW-Authenticate: Bearer",
			    "missing or wrong Authorization: Bearer token");
		return;
	}
	size_t need = gate_body_size(hd, n) + c->head_len;
	/* (the head's buffer is given back below: it is counted as need now) */
	if (h->buffered - c->head_cap + need > HTTP_MAX_BODIES) {
		gate_answer(c, "503 Service Unavailable", "Retry-After: 1",
			    "the server holds as many request bodies as it takes; retry");
		return;
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	gate_timer_stop(c);
	h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, gate_closed_cb);
	if (!sock) {
		gate_close(c);
		return;
	}
	h2o_iovec_t room = h2o_buffer_reserve(&sock->input, c->head_len);
	if (!room.base) {
		/* (h2o's close frees it and calls gate_closed_cb) */
		gate_buf_free(c);
		h2o_socket_close(sock);
		return;
	}
	memcpy(room.base, c->head, c->head_len);
	sock->input->size += c->head_len;
	gate_buf_free(c);
	c->reserved = need;
	h->buffered += need;
	h2o_accept(&h->accept_ctx, sock);
}

static void gate_alloc_cb(uv_handle_t *handle, size_t hint, uv_buf_t *buf)
{
	(void)hint;
	struct http_conn *c = (struct http_conn *)handle;
	if (c->head_len == c->head_cap && c->head_cap < HTTP_MAX_HEAD) {
		size_t cap = c->head_cap ? c->head_cap * 2 : 4096;
		if (cap > HTTP_MAX_HEAD)
			cap = HTTP_MAX_HEAD;
		char *p = c->h->buffered + cap - c->head_cap > HTTP_MAX_BODIES
				  ? NULL
				  : realloc(c->head, cap);
		if (p) {
			c->h->buffered += cap - c->head_cap;
			c->head = p;
			c->head_cap = cap;
		}
	}
	if (!c->head)
		*buf = uv_buf_init(NULL, 0); /* (ENOBUFS: refused) */
	else
		*buf = uv_buf_init(c->head + c->head_len, (unsigned)(c->head_cap - c->head_len));
}

static void gate_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void)buf;
	struct http_conn *c = (struct http_conn *)s;
	if (n == UV_ENOBUFS) {
		if (c->head_cap >= HTTP_MAX_HEAD)
			gate_answer(c, "400 Bad Request", NULL,
				    "the request line and headers are too long");
		else
			gate_answer(c, "503 Service Unavailable", "Retry-After: 1",
				    "the server holds as many requests as it takes; retry");
		return;
	}
	if (n < 0) {
		gate_close(c);
		return;
	}
	if (n == 0)
		return;
	size_t last = c->head_len;
	c->head_len += (size_t)n;
	const char *method, *path;
	size_t mlen, plen, nh = GATE_HEADERS;
	int minor;
	struct phr_header hd[GATE_HEADERS];
	int rc = phr_parse_request(c->head, c->head_len, &method, &mlen, &path, &plen, &minor, hd,
				   &nh, last);
	if (rc > 0) {
		gate_pass(c, hd, nh);
	} else if (rc == -1) {
		gate_answer(c, "400 Bad Request", NULL, "not an HTTP/1 request");
	} else if (c->head_len == c->head_cap && c->head_cap >= HTTP_MAX_HEAD) {
		gate_answer(c, "400 Bad Request", NULL,
			    "the request line and headers are too long");
	}
}

void http_gate_start(struct http_conn *c)
{
	struct http_server *h = c->h;
	c->timer = malloc(sizeof(*c->timer));
	if (!c->timer) {
		gate_close(c);
		return;
	}
	uv_timer_init(h->loop, c->timer);
	c->timer->data = c;
	uv_timer_start(c->timer, gate_timeout_cb, HTTP_REQ_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, gate_alloc_cb, gate_read_cb) < 0)
		gate_close(c);
}
