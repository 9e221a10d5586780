/*
 * server_session_ops.c - what a client asks of a session that exists, beside
 * running code (server_session.c): a result again, ^C, cancel, restart,
 * resize, kill, watch, completion and is_complete, its description, and what
 * happens to its waiters when a client goes.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lang.h"
#include "options.h"
#include "protocol.h"
#include "record.h"
#include "screen.h"
#include "server_internal.h"

/* "exec": N, or the last one when absent. NULL with the reply sent. */
static struct srv_exec *srv_exec_named(struct srv_session *ss, struct server_client *c,
				       const cJSON *req, const cJSON *id, uint64_t *n)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(req, "exec");
	if (e && (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 9007199254740992.0 ||
		  e->valuedouble != (double)(uint64_t)e->valuedouble)) {
		srv_reply_error(c, id, "usage", "\"exec\" must be an execution's id: 1, 2, ...");
		return NULL;
	}
	*n = e ? (uint64_t)e->valuedouble : ss->next_exec;
	struct srv_exec *x = e ? srv_exec_find(ss, *n) : ss->execs_tail;
	if (!x && !e)
		srv_reply_error(c, id, "not_found", "session '%s' has no executions yet", ss->name);
	else if (!x && *n > ss->next_exec)
		srv_reply_error(c, id, "not_found", "session '%s' has no execution %llu", ss->name,
				(unsigned long long)*n);
	else if (!x)
		srv_reply_error(c, id, "not_found",
				"execution %llu of session '%s' is no longer kept (the last %d "
				"results, at most %zu MiB, are)",
				(unsigned long long)*n, ss->name, SERVER_HISTORY_COUNT,
				SERVER_HISTORY_BYTES >> 20);
	return x;
}

void srv_session_result(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id)
{
	uint64_t n;
	struct srv_exec *x = srv_exec_named(ss, c, req, id, &n);
	if (!x)
		return;
	if (x->state == X_DONE) {
		static const char oom[] = "{\"status\":\"error\",\"message\":\"out of memory for "
					  "the result\"}";
		return x->result ? srv_send_joined(c, id, x->result + 1, x->result_len - 1)
				 : srv_send_joined(c, id, oom + 1, sizeof(oom) - 2);
	}
	const cJSON *wait = cJSON_GetObjectItemCaseSensitive(req, "wait");
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(req, "stream");
	if (wait && cJSON_IsFalse(wait)) {
		cJSON *o = cJSON_CreateObject();
		protocol_json_add_uint(o, "exec", x->id);
		cJSON_AddStringToObject(o, "state",
					x == srv_exec_current(ss) ? "running" : "queued");
		return srv_reply_ok(c, id, o);
	}
	size_t n_waiters = 0, mine = 0;
	for (struct srv_waiter *v = x->waiters; v; v = v->next) {
		n_waiters++;
		mine += v->client == c;
	}
	if (mine >= SRV_CLIENT_WAITERS)
		return srv_reply_error(c, id, "limit",
				       "this client waits for execution %llu %d times already",
				       (unsigned long long)x->id, SRV_CLIENT_WAITERS);
	if (n_waiters >= SRV_MAX_WAITERS)
		return srv_reply_error(c, id, "limit",
				       "%d requests wait for execution %llu already",
				       SRV_MAX_WAITERS, (unsigned long long)x->id);
	struct srv_waiter *w = srv_waiter_new(c, id, cJSON_IsTrue(stream));
	if (!w)
		return srv_reply_error(c, id, "nomem", "out of memory");
	w->next = x->waiters;
	x->waiters = w;
}

void srv_session_interrupt(struct srv_session *ss, struct server_client *c, const cJSON *req,
			   const cJSON *id)
{
	uint64_t n = 0;
	if (cJSON_GetObjectItemCaseSensitive(req, "exec")) {
		struct srv_exec *x = srv_exec_named(ss, c, req, id, &n);
		if (!x)
			return;
		if (x != srv_exec_current(ss)) { /* ended, or not started: nothing to do */
			cJSON *o = cJSON_CreateObject();
			cJSON_AddBoolToObject(o, "interrupted", 0);
			cJSON_AddStringToObject(o, "state", x->state == X_DONE ? "done" : "queued");
			return srv_reply_ok(c, id, o);
		}
	}
	if (ptybox_session_interrupt(ss->ps) < 0)
		return srv_reply_error(c, id, "not_running", "nothing is running");
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "interrupted", 1);
	srv_reply_ok(c, id, o);
}

void srv_session_cancel(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id)
{
	uint64_t n;
	if (!cJSON_GetObjectItemCaseSensitive(req, "exec"))
		return srv_reply_error(c, id, "usage", "cancel needs \"exec\": the id to cancel");
	struct srv_exec *x = srv_exec_named(ss, c, req, id, &n);
	if (!x)
		return;
	int rc = x->state == X_DONE ? -ENOENT : ptybox_session_cancel(ss->ps, x->id);
	if (rc == -EBUSY)
		return srv_reply_error(c, id, "busy",
				       "execution %llu is running: interrupt it instead",
				       (unsigned long long)n);
	if (rc < 0)
		return srv_reply_error(c, id, "not_found", "execution %llu has ended",
				       (unsigned long long)n);
	srv_reply_ok(c, id, NULL);
}

void srv_session_restart(struct srv_session *ss, struct server_client *c, const cJSON *id)
{
	if (ptybox_session_restart(ss->ps) < 0)
		return srv_reply_error(c, id, "busy", "the session cannot restart now");
	if (ss->state == SS_DEAD)
		ss->state = SS_STARTING;
	srv_reply_ok(c, id, NULL);
}

void srv_session_resize(struct srv_session *ss, struct server_client *c, const cJSON *req,
			const cJSON *id)
{
	const cJSON *cols = cJSON_GetObjectItemCaseSensitive(req, "cols");
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(req, "rows");
	/* (whole numbers only: 80.5 columns is no size) */
	if (!cJSON_IsNumber(cols) || !cJSON_IsNumber(rows) || cols->valuedouble < 1 ||
	    cols->valuedouble > 65535 || rows->valuedouble < 1 || rows->valuedouble > 65535 ||
	    cols->valuedouble != (double)cols->valueint ||
	    rows->valuedouble != (double)rows->valueint)
		return srv_reply_error(c, id, "usage",
				       "resize needs \"cols\" and \"rows\": whole numbers from 1 "
				       "to 65535");
	int rc = ptybox_session_resize(ss->ps, (unsigned)cols->valueint, (unsigned)rows->valueint);
	if (rc < 0)
		return srv_reply_error(c, id, "failed", "resize: %s", strerror(-rc));
	/* (the code now writes for that size: a player that knows "r" follows) */
	record_resize(ss->rec, (unsigned)cols->valueint, (unsigned)rows->valueint);
	srv_reply_ok(c, id, NULL);
}

void srv_session_kill(struct srv_session *ss, struct server_client *c, const cJSON *id)
{
	struct server *sv = ss->server;
	if (c) {
		struct srv_waiter *w = srv_waiter_new(c, id, false);
		if (w) {
			w->next = ss->kill_waiters;
			ss->kill_waiters = w;
		}
	}
	if (ss->state == SS_CLOSING)
		return;
	for (struct srv_session *b = sv->sessions, *next; b; b = next) {
		next = b->next; /* (b leaves the list: a sharer has no sharers of its own) */
		if (b->with == ss)
			srv_session_kill(b, NULL, NULL);
	}
	char why[160];
	if (sv->shutting_down)
		snprintf(why, sizeof(why), "%s", sv->shutdown_why);
	else
		snprintf(why, sizeof(why), "session '%s' was killed", ss->name);
	srv_answer_live(ss, "killed", why);
	for (struct srv_waiter *w = ss->queries; w; w = w->next)
		srv_reply_error(w->client, w->id, "killed", "%s", why);
	srv_waiters_free(&ss->queries);
	for (struct srv_waiter *w = ss->files; w; w = w->next)
		srv_reply_error(w->client, w->id, "killed", "%s", why);
	srv_waiters_free(&ss->files);
	for (struct srv_waiter *w = ss->new_waiters; w; w = w->next)
		srv_reply_error(w->client, w->id, "killed", "%s", why);
	srv_waiters_free(&ss->new_waiters);
	ss->state = SS_CLOSING;
	srv_watchers_state(ss, "killed", NULL);
	srv_waiters_free(&ss->watchers);
	ss->live = 0;
	srv_session_unlink(sv, ss);
	ss->next = sv->closing;
	sv->closing = ss;
	ptybox_session_close(ss->ps);
}

void srv_session_watch(struct srv_session *ss, struct server_client *c, const cJSON *id)
{
	size_t mine = 0;
	for (const struct srv_waiter *v = ss->watchers; v; v = v->next)
		mine += v->client == c;
	if (mine >= SRV_CLIENT_WATCHERS)
		return srv_reply_error(c, id, "limit",
				       "this client watches session '%s' %d times already",
				       ss->name, SRV_CLIENT_WATCHERS);
	if (ss->nwatchers >= SRV_MAX_WATCHERS)
		return srv_reply_error(c, id, "limit", "session '%s' has %d watchers already",
				       ss->name, SRV_MAX_WATCHERS);
	struct srv_waiter *w = srv_waiter_new(c, id, true);
	if (!w)
		return srv_reply_error(c, id, "nomem", "out of memory");
	w->next = ss->watchers;
	ss->watchers = w;
	ss->nwatchers++;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "session", ss->name);
	cJSON_AddStringToObject(o, "state", srv_state_name(ss->state));
	srv_reply_ok(c, id, o);
}

void srv_session_query(struct srv_session *ss, struct server_client *c, const cJSON *req,
		       const cJSON *id, bool is_complete)
{
	const char *op = is_complete ? "is_complete" : "complete";
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(req, "cursor");
	if (!cJSON_IsString(code))
		return srv_reply_error(c, id, "usage", "%s needs \"code\": a string", op);
	size_t len = strlen(code->valuestring);
	/* (is_complete's "cursor" is an unknown member: server.c) */
	if (cursor && (!cJSON_IsNumber(cursor) || cursor->valuedouble < 0 ||
		       cursor->valuedouble > (double)len ||
		       cursor->valuedouble != (double)(size_t)cursor->valuedouble))
		return srv_reply_error(c, id, "usage",
				       "\"cursor\" must be a position in \"code\", in characters: "
				       "0 to its length");
	if (ss->state == SS_DEAD)
		return srv_reply_error(c, id, "dead",
				       "session '%s' is dead (its interpreter cannot start): "
				       "restart or kill it",
				       ss->name);
	struct srv_waiter *w = srv_waiter_new(c, id, false);
	if (!w)
		return srv_reply_error(c, id, "nomem", "out of memory");
	w->query = ++ss->next_query;
	size_t at = cursor ? (size_t)cursor->valuedouble : len;
	int rc = is_complete
			 ? ptybox_session_is_complete(ss->ps, w->query, code->valuestring, len)
			 : ptybox_session_complete(ss->ps, w->query, code->valuestring, len, at);
	if (rc < 0) {
		srv_waiter_free(w);
		return srv_reply_error(c, id, rc == -ENOBUFS ? "busy" : "not_running",
				       rc == -ENOBUFS ? "too many queries in flight"
						      : "the session is not running");
	}
	w->next = ss->queries;
	ss->queries = w;
}

cJSON *srv_session_describe(const struct srv_session *ss)
{
	cJSON *o = cJSON_CreateObject();
	const struct server *sv = ss->server;
	cJSON_AddStringToObject(o, "name", ss->name);
	cJSON_AddStringToObject(o, "state", srv_state_name(ss->state));
	cJSON_AddStringToObject(o, "via", ss->so.o.via ? ss->so.o.via : "local");
	cJSON_AddStringToObject(o, "lang", lang_find(ss->so.o.lang));
	if (ss->with)
		cJSON_AddStringToObject(o, "with", ss->with->name);
	else
		cJSON_AddNullToObject(o, "with");
	cJSON_AddNumberToObject(o, "uptime_s", (double)(uv_now(sv->loop) - ss->created_ms) / 1e3);
	protocol_json_add_uint(o, "executions", ss->executions);
	protocol_json_add_uint(o, "queued", ss->live);
	if (ss->has_last)
		cJSON_AddStringToObject(o, "last_status", ptybox_status_name(ss->last_status));
	else
		cJSON_AddNullToObject(o, "last_status");
	long long mem = ptybox_session_memory(ss->ps);
	if (mem >= 0)
		cJSON_AddNumberToObject(o, "memory", (double)mem);
	else
		cJSON_AddNullToObject(o, "memory");
	protocol_json_add_uint(o, "clients", ss->nwatchers);
	return o;
}

void srv_session_client_gone(struct srv_session *ss, struct server_client *c)
{
	for (struct srv_exec *x = ss->execs; x; x = x->next) {
		srv_waiters_drop_client(&x->waiters, c);
		if (x->origin == c) {
			x->origin = NULL;
			cJSON_Delete(x->origin_id);
			x->origin_id = NULL;
		}
	}
	srv_waiters_drop_client(&ss->new_waiters, c);
	srv_waiters_drop_client(&ss->kill_waiters, c);
	srv_waiters_drop_client(&ss->queries, c);
	srv_waiters_drop_client(&ss->files, c);
	srv_uploads_client_gone(ss, c);
	srv_session_unwatch(ss, c);
}

void srv_session_unwatch(struct srv_session *ss, struct server_client *c)
{
	size_t before = 0, after = 0;
	for (struct srv_waiter *w = ss->watchers; w; w = w->next)
		before++;
	srv_waiters_drop_client(&ss->watchers, c);
	for (struct srv_waiter *w = ss->watchers; w; w = w->next)
		after++;
	ss->nwatchers -= before - after;
}
