/*
 * server_session.c - one named session of the server: its interpreter (a
 * ptybox_session, always streaming), its executions and their kept results,
 * who waits on what, and who watches.
 *
 * An execution's result is made into text once (a JSON object without "id")
 * and joined to each waiter's id when sent, so that a result kept for later
 * costs its text and nothing else. Kept results are bounded per session by
 * count and bytes; the oldest go first.
 *
 * What the session shows (each execution's code after a prompt, its output, its value or
 * traceback) is made once, by its transcript, and goes from there to its screen and its
 * recording (`new --record`), which thus see the same bytes.
 */
#define _GNU_SOURCE
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

/* The screen behind capture: a terminal's size, and this much scrollback. */
#define SRV_SCREEN_ROWS	      24
#define SRV_SCREEN_COLS	      80
#define SRV_SCREEN_SCROLLBACK ((size_t)32 << 10)
#define SRV_SCREEN_CODE_MAX   ((size_t)16 << 10)

static const char *const srv_state_names[] = {
	[SS_STARTING] = "starting",	[SS_IDLE] = "idle", [SS_BUSY] = "busy",
	[SS_RESTARTING] = "restarting", [SS_DEAD] = "dead", [SS_CLOSING] = "closing",
};

const char *srv_state_name(enum srv_state st)
{
	return srv_state_names[st];
}

static void srv_exec_free(struct srv_exec *x)
{
	free(x->code);
	srv_waiters_free(&x->waiters);
	cJSON_Delete(x->origin_id);
	free(x->result);
	free(x);
}

/* The oldest execution not done: the one running, or next to. From first_live
 * on, not through the kept results before it (a hundred, on every event). */
struct srv_exec *srv_exec_current(struct srv_session *ss)
{
	struct srv_exec *x = ss->first_live;
	while (x && x->state == X_DONE)
		x = x->next;
	ss->first_live = x;
	return x;
}

struct srv_exec *srv_exec_find(struct srv_session *ss, uint64_t id)
{
	struct srv_exec *cur = srv_exec_current(ss); /* (what events are about, mostly) */
	if (cur && cur->id == id)
		return cur;
	for (struct srv_exec *x = ss->execs; x; x = x->next)
		if (x->id == id)
			return x;
	return NULL;
}

/* The transcript's bytes: to the screen (through its tail) and the recording. */
static void srv_show_cb(void *data, const char *bytes, size_t len, bool sandbox)
{
	struct srv_session *ss = data;
	srv_screen_out(ss, bytes, len);
	record_output(ss->rec, bytes, len, sandbox);
}

/* The execution that runs now shows as typed at a prompt, and the recording marks it. */
static void srv_show_begin(struct srv_session *ss)
{
	struct srv_exec *x = srv_exec_current(ss);
	if (!x || !x->code)
		return;
	size_t len = strlen(x->code);
	record_exec(ss->rec, x->id, x->code, len);
	transcript_input(&ss->ts, x->code, len);
	free(x->code); /* (only the screen and the recording wanted it) */
	x->code = NULL;
}

/* A session's recording stopped early (its cap, a write error): its log says so. */
static void srv_record_warn(void *data, const char *message)
{
	struct srv_session *ss = data;
	cli_error("session '%s': %s", ss->name, message);
}

static void srv_settle_state(struct srv_session *ss)
{
	if (ss->state == SS_IDLE || ss->state == SS_BUSY)
		ss->state = ss->live ? SS_BUSY : SS_IDLE;
}

/* An event to every watcher: {"id":WATCH_ID,"event":..., "session":...} + o's. */
static void srv_watchers_send(struct srv_session *ss, cJSON *o)
{
	if (!ss->watchers || !o) {
		cJSON_Delete(o);
		return;
	}
	size_t n;
	char *s = srv_print(o, &n); /* once, whoever many watch */
	cJSON_Delete(o);
	if (!s)
		return;
	/* rest: the object without its '{' */
	for (struct srv_waiter *w = ss->watchers; w; w = w->next)
		srv_send_joined(w->client, w->id, s + 1, n - 1);
	cJSON_free(s);
}

static cJSON *srv_event(struct srv_session *ss, const char *event)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", event);
	cJSON_AddStringToObject(o, "session", ss->name);
	return o;
}

void srv_watchers_state(struct srv_session *ss, const char *event, const char *why)
{
	if (!ss->watchers)
		return;
	cJSON *o = srv_event(ss, event);
	cJSON_AddStringToObject(o, "state", srv_state_name(ss->state));
	if (why)
		cJSON_AddStringToObject(o, "why", why);
	srv_watchers_send(ss, o);
}

/* Kept results past the bounds go, oldest first; the newest always stays (one
 * bigger than the bound would otherwise go before anyone could ask for it). */
static void srv_history_trim(struct srv_session *ss)
{
	struct srv_exec **p = &ss->execs, *prev = NULL;
	while (*p && ss->done > 1 &&
	       (ss->done > SERVER_HISTORY_COUNT || ss->done_bytes > SERVER_HISTORY_BYTES)) {
		struct srv_exec *x = *p;
		if (x->state != X_DONE) {
			prev = x;
			p = &x->next;
			continue;
		}
		*p = x->next;
		if (ss->execs_tail == x)
			ss->execs_tail = prev;
		if (ss->first_live == x)
			ss->first_live = x->next;
		ss->done--;
		ss->done_bytes -= x->result_len;
		srv_exec_free(x);
	}
}

static void srv_on_ready(ptybox_session *ps, void *data)
{
	struct srv_session *ss = data;
	bool first = !ss->ready_once;
	ss->ready_once = true;
	if (ss->state == SS_CLOSING)
		return;
	ss->state = SS_IDLE;
	srv_settle_state(ss);
	while (ss->new_waiters) {
		struct srv_waiter *w = ss->new_waiters;
		ss->new_waiters = w->next;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "session", ss->name);
		srv_reply_ok(w->client, w->id, o);
		srv_waiter_free(w);
	}
	srv_watchers_state(ss, first ? "started" : "restarted", NULL);
	srv_maybe_idle(ss->server);
}

static void srv_on_restarting(ptybox_session *ps, const char *why, void *data)
{
	struct srv_session *ss = data;
	if (ss->state == SS_CLOSING)
		return;
	ss->state = SS_RESTARTING;
	srv_uploads_free(ss); /* (they died with the kernel) */
	srv_watchers_state(ss, "died", why);
}

/* Whether one of x's waiters asked for its stream. */
static bool srv_streamed(const struct srv_exec *x)
{
	for (const struct srv_waiter *w = x ? x->waiters : NULL; w; w = w->next)
		if (w->stream)
			return true;
	return false;
}

/* An execution's event o (taken) to whom it concerns: its waiters that asked
 * for its stream while it runs, who started it once it is late, watchers. */
static void srv_forward(struct srv_session *ss, struct srv_exec *x, cJSON *o, bool late)
{
	if (late)
		cJSON_AddBoolToObject(o, "late", 1);
	size_t n = 0;
	char *s = x && (late ? x->origin != NULL : srv_streamed(x)) ? srv_print(o, &n) : NULL;
	if (s && !late)
		for (struct srv_waiter *w = x->waiters; w; w = w->next)
			if (w->stream)
				srv_send_joined(w->client, w->id, s + 1, n - 1);
	if (s && late)
		srv_send_joined(x->origin, x->origin_id, s + 1, n - 1);
	cJSON_free(s);
	if (ss->watchers) {
		cJSON_AddStringToObject(o, "session", ss->name);
		srv_watchers_send(ss, o);
	} else {
		cJSON_Delete(o);
	}
}

static void srv_on_stream(ptybox_session *ps, uint64_t id, const char *name, const char *text,
			  size_t len, bool late, void *data)
{
	struct srv_session *ss = data;
	struct srv_exec *x = srv_exec_find(ss, id);
	/* (an event for no one would cost the text's copy and its JSON: 20 MB of print) */
	bool to_waiters = x && !late && srv_streamed(x);
	bool to_origin = x && late && x->origin;
	transcript_output(&ss->ts, text, len);
	if (!to_waiters && !to_origin && !ss->watchers)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", "stream");
	protocol_json_add_uint(o, "exec", id);
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "text", text);
	srv_forward(ss, x, o, late);
}

static void srv_on_display(ptybox_session *ps, uint64_t id, const char *bundle, bool late,
			   const char *display_id, bool update, bool at_end, void *data)
{
	struct srv_session *ss = data;
	struct srv_exec *x = srv_exec_find(ss, id);
	bool to_waiters = x && !late && srv_streamed(x);
	bool to_origin = x && late && x->origin;
	bool shown = ss->screen || ss->rec;
	if (!to_waiters && !to_origin && !ss->watchers && !shown)
		return;
	cJSON *parsed = cJSON_Parse(bundle);
	if (shown) /* (as a terminal REPL shows it: its text form) */
		transcript_display(&ss->ts, protocol_str(parsed, "text/plain"));
	if (!to_waiters && !to_origin && !ss->watchers) {
		cJSON_Delete(parsed);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", "display");
	protocol_json_add_uint(o, "exec", id);
	cJSON_AddItemToObject(o, "data", parsed);
	if (display_id) /* (of display(obj, display_id=...): a later update replaces it) */
		cJSON_AddStringToObject(o, "display_id", display_id);
	if (display_id && update)
		cJSON_AddTrueToObject(o, "update");
	if (at_end) /* (a figure open as its snippet ended: shown after the value) */
		cJSON_AddTrueToObject(o, "at_end");
	srv_forward(ss, x, o, late);
}

/* What "render" takes of a stream, at most: it runs on the loop, and a
 * terminal scrolling costs per row (500,000 newlines blocked every client for
 * 2.7 s; 200,000 "scroll up 50" sequences in 1 MB, 1.4 s): 5,000 rows scrolled
 * or moved (a newline, 80 columns of a line, an escape sequence that scrolls:
 * screen_render_rows) and 1 MiB. Past either, the bytes stay as they came
 * ("rendered": false). */
#define SRV_RENDER_MAX_BYTES ((size_t)1 << 20)
#define SRV_RENDER_MAX_ROWS  5000

static bool srv_render_small(const char *text, size_t len)
{
	return len <= SRV_RENDER_MAX_BYTES &&
	       screen_render_rows(text, len, SRV_SCREEN_COLS, SRV_RENDER_MAX_ROWS) <=
		       SRV_RENDER_MAX_ROWS;
}

/* "render": the output as a terminal shows it (a bar redrawn with \r, once
 * in its last state), in place of the bytes. */
static void srv_render_output(cJSON *o, const struct ptybox_result *r)
{
	const char *key[2] = {"stdout", "stderr"};
	const char *text[2] = {r->stdout_text, r->stderr_text};
	size_t len[2] = {r->stdout_len, r->stderr_len};
	if ((len[0] && !srv_render_small(text[0], len[0])) ||
	    (len[1] && !srv_render_small(text[1], len[1]))) {
		cJSON_AddBoolToObject(o, "rendered", 0);
		return;
	}
	for (int i = 0; i < 2; i++) {
		char *out = NULL;
		size_t n = 0;
		if (!len[i] || screen_render(text[i], len[i], SRV_SCREEN_COLS, false, &out, &n) < 0)
			continue;
		cJSON *v = cJSON_CreateString(out);
		free(out);
		if (v)
			cJSON_ReplaceItemInObjectCaseSensitive(o, key[i], v);
	}
	cJSON_AddBoolToObject(o, "rendered", 1);
}

/* The executions queued behind x go, unrun (stop_on_error). */
static void srv_cancel_behind(struct srv_session *ss, struct srv_exec *x)
{
	uint64_t ids[SERVER_MAX_QUEUE];
	size_t n = 0;
	for (struct srv_exec *y = x->next; y && n < SERVER_MAX_QUEUE; y = y->next)
		if (y->state == X_QUEUED)
			ids[n++] = y->id;
	for (size_t i = 0; i < n; i++)
		ptybox_session_cancel(ss->ps, ids[i]);
}

static void srv_on_result(ptybox_session *ps, const struct ptybox_result *r, void *data)
{
	struct srv_session *ss = data;
	struct srv_exec *x = srv_exec_find(ss, r->id);
	if (!x || x->state == X_DONE)
		return;
	cJSON *o = protocol_result_object(r);
	if (o) {
		cJSON_DeleteItemFromObjectCaseSensitive(o, "id");
		protocol_json_add_uint(o, "exec", x->id);
		cJSON_AddStringToObject(o, "session", ss->name);
		if (x->render)
			srv_render_output(o, r);
	}
	size_t n = 0;
	char *s = srv_print(o, &n); /* (made once, kept, joined to each id) */
	cJSON_Delete(o);
	x->state = X_DONE;
	ss->queued_bytes -= x->code_len;
	x->status = r->status;
	x->result = s;
	x->result_len = n;
	ss->live--;
	ss->done++;
	ss->done_bytes += n;
	ss->executions++;
	ss->last_status = r->status;
	ss->has_last = true;
	srv_settle_state(ss);
	static const char oom[] = "{\"status\":\"error\",\"message\":\"out of memory for the "
				  "result\"}";
	const char *rest = s ? s + 1 : oom + 1;
	size_t rlen = s ? n - 1 : sizeof(oom) - 2;
	for (struct srv_waiter *w = x->waiters; w; w = w->next)
		srv_send_joined(w->client, w->id, rest, rlen);
	srv_waiters_free(&x->waiters);
	if (ss->watchers) {
		/* {"id":W,"event":"result",<the result's members>} */
		size_t m = 17 + rlen;
		char *e = malloc(m + 1);
		if (e) {
			memcpy(e, "\"event\":\"result\",", 17);
			memcpy(e + 17, rest, rlen);
			e[m] = '\0';
			for (struct srv_waiter *w = ss->watchers; w; w = w->next)
				srv_send_joined(w->client, w->id, e, m);
			free(e);
		}
	}
	/* What the REPL shows after the output (the value, the traceback), once the
	 * result is on its way: the screen's work is off the round trip. Whoever asks
	 * for the screen next is answered after this (one loop, one thread). */
	if (r->status != PTYBOX_CANCELLED) {
		transcript_result(&ss->ts, &(struct transcript_result){
						   .value = r->value_text,
						   .error_name = r->error_name,
						   .error_value = r->error_value,
						   .traceback = r->traceback,
					   });
		record_flush(ss->rec); /* (an abrupt end loses little) */
	}
	if (x->stop_on_error && r->status != PTYBOX_OK && r->status != PTYBOX_CANCELLED)
		srv_cancel_behind(ss, x);
	srv_show_begin(ss);
	srv_history_trim(ss);
	srv_maybe_idle(ss->server);
}

/* Every execution still queued or running ends for its waiters with why. */
void srv_answer_live(struct srv_session *ss, const char *code, const char *why)
{
	for (struct srv_exec *x = ss->execs; x; x = x->next) {
		if (x->state == X_DONE)
			continue;
		for (struct srv_waiter *w = x->waiters; w; w = w->next)
			srv_reply_error(w->client, w->id, code, "%s", why);
		srv_waiters_free(&x->waiters);
	}
}

static void srv_on_fatal(ptybox_session *ps, const char *message, void *data)
{
	struct srv_session *ss = data;
	struct server *sv = ss->server;
	if (ss->state == SS_CLOSING)
		return;
	ss->state = SS_DEAD;
	if (ss->fatal) { /* serve's default: its queue ends in results, then serve ends */
		ss->fatal(sv, message, sv->cfg.data);
		return;
	}
	if (ss->new_waiters) {
		/* `new` said nothing yet: it fails, and the name is free again */
		for (struct srv_waiter *w = ss->new_waiters; w; w = w->next)
			srv_reply_error(w->client, w->id, "cannot_start",
					"session '%s' could not be started: %s", ss->name, message);
		srv_waiters_free(&ss->new_waiters);
		srv_session_kill(ss, NULL, NULL);
		return;
	}
	srv_watchers_state(ss, "dead", message);
}

static void srv_session_free(struct srv_session *ss)
{
	ss->first_live = NULL;
	while (ss->execs) {
		struct srv_exec *x = ss->execs;
		ss->execs = x->next;
		srv_exec_free(x);
	}
	srv_waiters_free(&ss->new_waiters);
	srv_waiters_free(&ss->kill_waiters);
	srv_waiters_free(&ss->watchers);
	srv_waiters_free(&ss->queries);
	srv_waiters_free(&ss->files);
	srv_uploads_free(ss);
	for (size_t i = 0; i < ss->nstrings; i++)
		free(ss->strings[i]);
	if (ss->screen)
		screen_free(ss->screen);
	free(ss->tail);
	record_close(ss->rec);
	free(ss);
}

static void srv_on_closed(ptybox_session *ps, void *data)
{
	struct srv_session *ss = data;
	struct server *sv = ss->server;
	/* (all in the file before kill answers: its client may read it at once) */
	record_close(ss->rec);
	ss->rec = NULL;
	for (struct srv_waiter *w = ss->kill_waiters; w; w = w->next)
		srv_reply_ok(w->client, w->id, NULL);
	for (struct srv_session **p = &sv->closing; *p; p = &(*p)->next)
		if (*p == ss) {
			*p = ss->next;
			break;
		}
	srv_session_free(ss);
	if (sv->shutting_down && !sv->closing && !sv->sessions)
		srv_stopped(sv);
	else
		srv_maybe_idle(sv);
}

/* The server's log (its standard error) says it, with whose it is. */
static void srv_on_warning(ptybox_session *ps, const char *message, void *data)
{
	struct srv_session *ss = data;
	if (ss->fatal) /* serve's own session: its words as run has them */
		cli_error("%s", message);
	else
		cli_error("session '%s': %s", ss->name, message);
}

static void srv_on_reply(ptybox_session *ps, uint64_t qid, const char *reply, void *data)
{
	struct srv_session *ss = data;
	struct srv_waiter **link = &ss->queries, *w;
	while ((w = *link) && w->query != qid)
		link = &w->next;
	if (!w)
		return;
	*link = w->next;
	cJSON *o = cJSON_Parse(reply);
	if (cJSON_IsObject(o)) {
		srv_reply_ok(w->client, w->id, o); /* (takes o: o is freed by now) */
	} else {
		srv_reply_error(w->client, w->id, "nomem", "out of memory");
		cJSON_Delete(o);
	}
	srv_waiter_free(w);
	srv_maybe_idle(ss->server);
}

static const struct ptybox_callbacks srv_callbacks = {
	.on_reply = srv_on_reply,
	.on_file = srv_on_file,
	.on_warning = srv_on_warning,
	.on_ready = srv_on_ready,
	.on_stream = srv_on_stream,
	.on_display_id = srv_on_display,
	.on_result = srv_on_result,
	.on_fatal = srv_on_fatal,
	.on_closed = srv_on_closed,
	.on_restarting = srv_on_restarting,
};

/* new's "with": the session whose sandbox this one shares (a sharer's own
 * with, if it names a sharer). 0, or -EINVAL with the reason in err. */
static int srv_session_with(struct srv_session *ss, const cJSON *options, char *err, size_t errlen)
{
	const cJSON *with = cJSON_GetObjectItemCaseSensitive(options, "with");
	if (!with)
		return 0;
	if (!cJSON_IsString(with)) {
		snprintf(err, errlen, "\"with\" must be the name of a session");
		return -EINVAL;
	}
	const char *bad = server_name_invalid(with->valuestring, strlen(with->valuestring));
	if (bad) {
		snprintf(err, errlen, "--with: %s", bad);
		return -EINVAL;
	}
	struct srv_session *w = srv_session_find(ss->server, with->valuestring);
	if (!w) {
		snprintf(err, errlen, "--with %.*s: no such session", SERVER_NAME_MAX,
			 with->valuestring);
		return -EINVAL;
	}
	if (w->state == SS_DEAD || !w->ps) {
		snprintf(err, errlen, "--with %s: that session is dead", w->name);
		return -EINVAL;
	}
	if (w->with)
		w = w->with;
	/* What shapes a sandbox is the shared one's: asked for here, it would be
	 * dropped without a word. (env, workdir and the rlimits are this one's.) */
	static const char *const shaping[] = {"pool", "mount", "wheels", "net", "tmp-size", "cpus"};
	for (size_t i = 0; i < sizeof(shaping) / sizeof(shaping[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(options, shaping[i]);
		if (!v || cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0) ||
		    (cJSON_IsString(v) && strcmp(v->valuestring, "0") == 0 &&
		     strcmp(shaping[i], "pool") == 0))
			continue;
		snprintf(err, errlen,
			 "--with %s: runs in its sandbox: --%s does not apply (that sandbox's is "
			 "%s's)",
			 w->name, shaping[i], w->name);
		return -EINVAL;
	}
	if (w->so.o.via && strcmp(w->so.o.via, "local") != 0) {
		snprintf(err, errlen,
			 "--with %s: that session runs --via %s: it has no embedded sandbox to "
			 "share (--with needs a --via local one)",
			 w->name, w->so.o.via);
		return -EINVAL;
	}
	if (ss->so.o.via && strcmp(ss->so.o.via, "local") != 0) {
		snprintf(err, errlen, "--with %s: runs in its sandbox: --via does not apply",
			 w->name);
		return -EINVAL;
	}
	ss->with = w;
	ss->so.o.with = w->ps;
	return 0;
}

int srv_session_start(struct server *sv, const char *name, const cJSON *options, bool remote,
		      const struct ptybox_options *given, const struct record_config *rec,
		      struct srv_session **out, char *err, size_t errlen, const char **code)
{
	struct srv_session *ss = calloc(1, sizeof(*ss));
	if (!ss) {
		snprintf(err, errlen, "out of memory");
		*code = "nomem";
		return -ENOMEM;
	}
	ss->server = sv;
	snprintf(ss->name, sizeof(ss->name), "%s", name);
	cli_session_opts_init(&ss->so);
	if (given) {
		ss->so.o = *given;
	} else if (srv_options_parse(options, remote, sv->cfg.allow_remote_transports, &ss->so,
				     ss->strings, &ss->nstrings,
				     sizeof(ss->strings) / sizeof(ss->strings[0]), err,
				     errlen) < 0) {
		*code = "usage";
		srv_session_free(ss);
		return -EINVAL;
	}
	if (srv_session_with(ss, options, err, errlen) < 0) {
		*code = "usage";
		srv_session_free(ss);
		return -EINVAL;
	}
	const cJSON *pool = cJSON_GetObjectItemCaseSensitive(options, "pool");
	bool no_pool = !pool || (cJSON_IsNumber(pool) && pool->valuedouble == 0) ||
		       (cJSON_IsString(pool) && strcmp(pool->valuestring, "0") == 0);
	if (!given && !no_pool &&
	    !(ss->so.o.pool = srv_pool_for(sv, options, remote, err, errlen))) {
		*code = "usage";
		srv_session_free(ss);
		return -EINVAL;
	}
	transcript_init(&ss->ts, !getenv("NO_COLOR"), srv_show_cb, ss);
	if (rec) { /* (before the session: a path it cannot open is new's error) */
		char title[SERVER_NAME_MAX + 32], why[PATH_MAX + 128];
		struct record_config cfg = *rec;
		snprintf(title, sizeof(title), "ptybox session %s", name);
		cfg.width = SRV_SCREEN_COLS;
		cfg.height = SRV_SCREEN_ROWS;
		cfg.title = title;
		cfg.warn = srv_record_warn;
		cfg.data = ss;
		int rc = record_open(&ss->rec, &cfg, why, sizeof(why));
		if (rc < 0) {
			snprintf(err, errlen, "--record %s", why);
			*code = "usage";
			srv_session_free(ss);
			return rc;
		}
	}
	ss->state = SS_STARTING;
	ss->created_ms = uv_now(sv->loop);
	/* (without one, capture says so; the session itself goes on) */
	if (screen_new(&ss->screen, SRV_SCREEN_ROWS, SRV_SCREEN_COLS, SRV_SCREEN_SCROLLBACK) < 0)
		ss->screen = NULL;
	snprintf(err, errlen, "out of memory");
	int rc = ptybox_session_new(sv->loop, &ss->so.o, &srv_callbacks, ss, &ss->ps, err, errlen);
	if (rc < 0) {
		*code = rc == -EINVAL ? "usage" : "cannot_start";
		srv_session_free(ss);
		return rc;
	}
	ss->next = sv->sessions;
	sv->sessions = ss;
	sv->nsessions++;
	*out = ss;
	return 0;
}

/* The most strings an exec request's "argv" holds (the driver's own cap). */
#define SRV_EXEC_ARGV_MAX 4096

void srv_session_exec(struct srv_session *ss, struct server_client *c, const cJSON *req,
		      const cJSON *id, bool nul)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(req, "timeout");
	const cJSON *flags[5] = {
		cJSON_GetObjectItemCaseSensitive(req, "stream"),
		cJSON_GetObjectItemCaseSensitive(req, "wait"),
		cJSON_GetObjectItemCaseSensitive(req, "stop_on_error"),
		cJSON_GetObjectItemCaseSensitive(req, "render"),
		cJSON_GetObjectItemCaseSensitive(req, "ack"),
	};
	static const char *const flag_names[5] = {"stream", "wait", "stop_on_error", "render",
						  "ack"};
	if (!cJSON_IsString(code))
		return srv_reply_error(c, id, "usage", "exec needs \"code\": a string");
	if (nul)
		return srv_reply_error(c, id, "usage",
				       "the request contains a NUL character (\\u0000, or a \\u "
				       "escape without four hex digits)");
	if (timeout && (!cJSON_IsNumber(timeout) || !options_seconds_valid(timeout->valuedouble)))
		return srv_reply_error(c, id, "usage",
				       "\"timeout\" must be a number of seconds from 0 to 31536000 "
				       "(a year)");
	for (int i = 0; i < 5; i++)
		if (flags[i] && !cJSON_IsBool(flags[i]))
			return srv_reply_error(c, id, "usage", "\"%s\" must be true or false",
					       flag_names[i]);
	if (ss->state == SS_DEAD)
		return srv_reply_error(c, id, "dead",
				       "session '%s' is dead (its interpreter cannot start): "
				       "restart or kill it",
				       ss->name);
	/* A file run as python3 FILE ARGS runs it (ptybox exec NAME FILE ARGS): the driver's own
	 * members, checked there; here only their types. */
	const cJSON *filename = cJSON_GetObjectItemCaseSensitive(req, "filename");
	const cJSON *fargv = cJSON_GetObjectItemCaseSensitive(req, "argv"), *fa;
	size_t nfargv = 0;
	if (filename && (!cJSON_IsString(filename) || !filename->valuestring[0]))
		return srv_reply_error(c, id, "usage", "\"filename\" must be a non-empty string");
	cJSON_ArrayForEach(fa, fargv)
	{
		if (!cJSON_IsString(fa) || ++nfargv > SRV_EXEC_ARGV_MAX)
			break;
	}
	if (fargv && (!filename || !cJSON_IsArray(fargv) || fa))
		return srv_reply_error(c, id, "usage",
				       "\"argv\" must be a list of at most %d strings, with "
				       "\"filename\"",
				       SRV_EXEC_ARGV_MAX);
	const char *bad = NULL;
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(req, "env");
	const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(req, "cwd");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "stdin"), *ev;
	size_t nenv = 0;
	if (env && !cJSON_IsObject(env))
		bad = "\"env\" must be an object of strings";
	const cJSON *envo = cJSON_IsObject(env) ? env : NULL; /* (an array's items have no names) */
	cJSON_ArrayForEach(ev, envo)
	{
		if (!cJSON_IsString(ev) || ++nenv > PROTOCOL_ENV_MAX)
			bad = "\"env\" must be an object of at most 4096 strings";
		else if (!ev->string[0] || strchr(ev->string, '='))
			bad = "\"env\": a variable's name must be non-empty and without '='";
		if (bad)
			break;
	}
	if (!bad && cwd && (!cJSON_IsString(cwd) || !cwd->valuestring[0]))
		bad = "\"cwd\" must be a non-empty string";
	size_t inlen = cJSON_IsString(in) ? strlen(in->valuestring) : 0;
	if (!bad && in && !cJSON_IsString(in))
		bad = "\"stdin\" must be a string";
	if (!bad && inlen > PROTOCOL_STDIN_MAX)
		bad = "\"stdin\" is longer than 16 MiB";
	if (bad)
		return srv_reply_error(c, id, "usage", "%s", bad);
	size_t codelen = strlen(code->valuestring);
	if (ss->live >= SERVER_MAX_QUEUE)
		return srv_reply_error(c, id, "busy",
				       "too many snippets queued in session '%s' (%d, the most)",
				       ss->name, SERVER_MAX_QUEUE);
	/* Bytes queued: everything the request keeps until it runs, its code, stdin,
	 * environment ("NAME=value" and a NUL each), cwd, filename and argv. */
	size_t clen = codelen + inlen;
	cJSON_ArrayForEach(ev, envo) clen += strlen(ev->string) + strlen(ev->valuestring) + 2;
	cJSON_ArrayForEach(fa, fargv) clen += strlen(fa->valuestring) + 1;
	if (cwd)
		clen += strlen(cwd->valuestring);
	if (filename)
		clen += strlen(filename->valuestring);
	if (ss->queued_bytes + clen > SERVER_MAX_QUEUE_BYTES)
		return srv_reply_error(c, id, "busy",
				       "too much code queued in session '%s' (more than %zu MiB)",
				       ss->name, SERVER_MAX_QUEUE_BYTES >> 20);
	bool wait = !flags[1] || cJSON_IsTrue(flags[1]);
	struct srv_exec *x = calloc(1, sizeof(*x));
	struct srv_waiter *w = wait ? srv_waiter_new(c, id, cJSON_IsTrue(flags[0])) : NULL;
	if (!x || (wait && !w)) {
		free(x);
		srv_waiters_free(&w);
		return srv_reply_error(c, id, "nomem", "out of memory");
	}
	x->id = ++ss->next_exec;
	x->stop_on_error = cJSON_IsTrue(flags[2]);
	x->render = cJSON_IsTrue(flags[3]);
	x->waiters = w;
	x->origin = c;
	x->origin_id = id ? protocol_json_dup_exact(id) : cJSON_CreateNull();
	/* (the screen shows the start of a long snippet: a terminal would
	 * scroll the rest away) */
	x->code = ss->screen || ss->rec ? strndup(code->valuestring, SRV_SCREEN_CODE_MAX) : NULL;
	x->code_len = clen;
	const char **args = fargv ? calloc(nfargv + 1, sizeof(*args)) : NULL;
	if (fargv && !args)
		abort(); /* out of memory is fatal (STYLE.md) */
	size_t na = 0;
	cJSON_ArrayForEach(fa, fargv) args[na++] = fa->valuestring;
	char **envv = env ? calloc(nenv + 1, sizeof(*envv)) : NULL;
	if (env && !envv)
		abort();
	size_t ne = 0;
	cJSON_ArrayForEach(ev, env)
	{
		if (asprintf(&envv[ne++], "%s=%s", ev->string, ev->valuestring) < 0)
			abort();
	}
	struct ptybox_exec px = {
		.code = code->valuestring,
		.len = codelen,
		.timeout = timeout ? timeout->valuedouble : -1,
		.stream = true,
		.filename = filename ? filename->valuestring : NULL,
		.argv = args,
		.env = (const char *const *)envv,
		.cwd = cwd ? cwd->valuestring : NULL,
		.stdin_data = in ? in->valuestring : NULL,
		.stdin_len = inlen,
		.has_stdin = in != NULL,
	};
	int rc = ptybox_session_exec_with(ss->ps, x->id, &px);
	for (size_t i = 0; i < ne; i++)
		free(envv[i]);
	free(envv);
	free(args);
	if (rc < 0) {
		ss->next_exec--;
		srv_exec_free(x);
		return srv_reply_error(c, id, rc == -ENOBUFS ? "busy" : "not_running",
				       rc == -ENOBUFS ? "too many snippets queued"
						      : "the session is not running");
	}
	if (ss->execs_tail)
		ss->execs_tail->next = x;
	else
		ss->execs = x;
	ss->execs_tail = x;
	if (!ss->first_live)
		ss->first_live = x;
	ss->live++;
	ss->queued_bytes += clen;
	srv_settle_state(ss);
	srv_show_begin(ss);
	if (ss->watchers) {
		cJSON *o = srv_event(ss, "exec");
		protocol_json_add_uint(o, "exec", x->id);
		cJSON_AddStringToObject(o, "code", code->valuestring);
		srv_watchers_send(ss, o);
	}
	if (!wait) {
		cJSON *o = cJSON_CreateObject();
		protocol_json_add_uint(o, "exec", x->id);
		cJSON_AddStringToObject(o, "session", ss->name);
		srv_reply_ok(c, id, o);
	} else if (cJSON_IsTrue(flags[4])) { /* its id now, the result later */
		char rest[96];
		int n = snprintf(rest, sizeof(rest), "\"event\":\"accepted\",\"exec\":%llu}",
				 (unsigned long long)x->id);
		srv_send_joined(c, id, rest, (size_t)n);
	}
}
