/*
 * session_query.c - questions a prompt asks between snippets (complete,
 * is_complete): never queued behind a snippet (a busy session answers at once
 * that it is busy), answered in the order asked, each within SESSION_QUERY_MS
 * or with a fallback that says why (timeout, busy).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "protocol.h"
#include "instance.h"
#include "session_internal.h"

static void session_query_timer_cb(uv_timer_t *t);

/* The answer given when the interpreter cannot: busy (a snippet runs or
 * waits), or gone, or too slow. */
static char *session_query_fallback(const struct query *q, const char *why)
{
	cJSON *o = cJSON_CreateObject();
	if (q->is_complete) {
		cJSON_AddStringToObject(o, "status", "unknown");
		cJSON_AddStringToObject(o, "indent", "");
	} else {
		long c = q->cursor < 0 ? 0 : q->cursor;
		cJSON_AddItemToObject(o, "matches", cJSON_CreateArray());
		cJSON_AddNumberToObject(o, "cursor_start", (double)c);
		cJSON_AddNumberToObject(o, "cursor_end", (double)c);
	}
	cJSON_AddBoolToObject(o, why, 1);
	char *json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json;
}

static void session_query_arm(ptybox_session *s)
{
	uint64_t now = uv_now(s->loop), due = UINT64_MAX;
	for (struct query *q = s->queries; q; q = q->next) {
		uint64_t at = q->reply ? now : q->deadline_ms;
		if (at < due)
			due = at;
	}
	if (due == UINT64_MAX)
		uv_timer_stop(&s->query_timer);
	else
		uv_timer_start(&s->query_timer, session_query_timer_cb, due > now ? due - now : 0,
			       0);
}

/* Tells (and frees) every query that has its answer or is past its time. */
static void session_query_timer_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	uint64_t now = uv_now(s->loop);
	struct query **link = &s->queries;
	while (*link && s->state != S_CLOSING) {
		struct query *q = *link;
		if (!q->reply && q->deadline_ms > now) {
			link = &q->next;
			continue;
		}
		*link = q->next;
		s->nqueries--;
		char *reply = q->reply ? q->reply : session_query_fallback(q, "timeout");
		if (s->cb.on_reply && reply)
			s->cb.on_reply(s, q->id, reply, s->data);
		cJSON_free(reply);
		free(q);
		link = &s->queries; /* (the callback may have added or told some) */
	}
	if (s->state != S_CLOSING)
		session_query_arm(s);
}

/* The interpreter went: what it was asked is answered without it. */
void session_queries_fail(ptybox_session *s)
{
	for (struct query *q = s->queries; q; q = q->next)
		if (!q->reply)
			q->reply = session_query_fallback(q, "busy");
	if (s->queries)
		session_query_arm(s);
}

void session_on_reply(ptybox_session *s, struct protocol_frame *f)
{
	struct query **link = &s->queries, *q;
	while ((q = *link) && !(f->has_id && q->wire == f->id && !q->reply))
		link = &q->next;
	if (!q)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(f->root, "type");
	cJSON_DeleteItemFromObjectCaseSensitive(f->root, "id");
	q->reply = cJSON_PrintUnformatted(f->root);
	if (!q->reply)
		q->reply = session_query_fallback(q, "busy");
	session_query_arm(s);
}

static int session_query(ptybox_session *s, uint64_t id, bool is_complete, const char *code,
			 size_t len, long cursor)
{
	if (s->state == S_FATAL || s->state == S_CLOSING)
		return -EPIPE;
	if (s->nqueries >= SESSION_QUERY_CAP)
		return -ENOBUFS;
	struct query *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->id = id;
	q->wire = SESSION_QUERY_WIRE + ++s->next_query;
	q->is_complete = is_complete;
	q->cursor = cursor;
	q->deadline_ms = uv_now(s->loop) + SESSION_QUERY_MS;
	/* Never behind a snippet: a prompt that asks must not wait for one. */
	bool busy = s->state != S_IDLE || s->head || !s->in || s->in->state == I_DYING;
	if (busy) {
		q->reply = session_query_fallback(q, "busy");
	} else {
		char *line = NULL;
		size_t n = 0;
		int rc = protocol_query_line(q->wire, is_complete ? "is_complete" : "complete",
					     code, len, cursor, &line, &n);
		if (rc == 0)
			rc = instance_write(s->in, line, n);
		if (rc < 0) {
			free(q);
			return rc;
		}
	}
	struct query **tail = &s->queries; /* (in order: answered as asked) */
	while (*tail)
		tail = &(*tail)->next;
	*tail = q;
	s->nqueries++;
	session_query_arm(s);
	return 0;
}

int ptybox_session_is_complete(ptybox_session *s, uint64_t id, const char *code, size_t len)
{
	return session_query(s, id, true, code, len, -1);
}

int ptybox_session_complete(ptybox_session *s, uint64_t id, const char *code, size_t len,
			    size_t cursor)
{
	return session_query(s, id, false, code, len, cursor > LONG_MAX ? LONG_MAX : (long)cursor);
}
