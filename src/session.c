/*
 * session.c - one interpreter session: the snippets a user queued, and the
 * interpreter instance that runs them.
 *
 *   STARTING ──ready──> IDLE ──exec──> RUNNING ──result──> IDLE
 *       ^                                 │
 *       └──── instance died or killed ────┘  (its snippet ends with state_lost)
 *   A death during start-up is FATAL: the session cannot go on.
 *
 * The result of a snippet whose interpreter died is held until the fresh one
 * is up or has failed, so that its message tells which; after a fatal failure
 * every snippet still queued ends in a result too, not run.
 *
 * It owns the queue, the running snippet's captured output, and one timer,
 * which at any moment guards one deadline: the snippet's timeout, or the
 * grace after ^C. The instance (instance.c) owns everything on the terminal's
 * side; a fresh one comes from the pool (pool.c) when there is one, so a
 * restart is a swap. A snippet ends in exactly one result, whatever happens
 * to the driver. ^C goes with an interrupt request naming its snippet, so the
 * driver knows whom it was for even when it lands between two snippets
 * (ptybox-protocol(7)): no waiting for the snippet to start. Callbacks never run inside
 * the caller's own call into the API, but for the result of a snippet cancelled by
 * ptybox_session_cancel (its caller asked for exactly that).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"
#include "log.h"
#include "options.h"
#include "outbuf.h"
#include "pool.h"
#include "protocol.h"
#include "ptybox.h"
#include "session_internal.h"
#include "transport.h"

/* Sessions of this process with a snippet sent and its result not yet in.
 * Busy polling pays for one (nobody else wants the CPU); with more, their
 * loop would spin for someone at all times, taking a CPU from the very
 * interpreters it waits for. */
static unsigned session_awaiting;

static void session_pump(ptybox_session *s);
static void session_on_ready(struct instance *in);
static void session_send_failed_cb(uv_timer_t *t);

void ptybox_options_init(struct ptybox_options *o)
{
	*o = (struct ptybox_options){
		.via = "local",
		.timeout = 30,
		.kill_grace = 2,
		.boot_timeout = 20,
		.max_output = PROTOCOL_DEFAULT_MAX_OUTPUT,
		.memory = 1ULL << 30,
		.tmp_size = 256ULL << 20,
		.max_file_size = 256ULL << 20,
		.max_get = 64ULL << 20,
		.pids = 256,
		.nofile = 1024,
		.cpus = 1,
		.busy_poll_us = PROTOCOL_DEFAULT_BUSY_POLL,
	};
}

void session_arm(ptybox_session *s, uint64_t ms, uv_timer_cb cb)
{
	uv_timer_stop(&s->timer);
	if (ms)
		uv_timer_start(&s->timer, cb, ms, 0);
}

void session_exec_free(struct exec *e)
{
	if (!e)
		return;
	free(e->code);
	free(e->filename);
	for (size_t i = 0; e->argv && e->argv[i]; i++)
		free(e->argv[i]);
	free(e->argv);
	for (size_t i = 0; e->env && e->env[i]; i++)
		free(e->env[i]);
	free(e->env);
	free(e->cwd);
	free(e->stdin_data);
	display_list_free(&e->display);
	session_file_free(e->file);
	free(e);
}

/* e's request line, asking the relay to busy-poll only when this session alone
 * awaits a result in this process: with several awaiting, a relay spinning for
 * its quick answer takes the CPU the other sessions' interpreters need. */
static int session_exec_line(ptybox_session *s, const struct exec *e, char **line, size_t *len)
{
	unsigned poll = session_awaiting == 0 ? s->opts.busy_poll_us : 0;
	if (e->env || e->cwd || e->has_stdin || e->stdin_stream) {
		struct protocol_exec_input in = {
			.env = (const char *const *)e->env,
			.cwd = e->cwd,
			.stdin_data = e->stdin_data,
			.stdin_len = e->stdin_len,
			.has_stdin = e->has_stdin,
			.stdin_stream = e->stdin_stream,
		};
		return protocol_exec_input_line(e->id, e->code, e->code_len, s->opts.max_output,
						poll, e->filename, (const char *const *)e->argv,
						&in, line, len);
	}
	if (e->filename)
		return protocol_exec_file_line(e->id, e->code, e->code_len, s->opts.max_output,
					       poll, e->filename, (const char *const *)e->argv,
					       line, len);
	return protocol_exec_line(e->id, e->code, e->code_len, s->opts.max_output, poll, line, len);
}

static struct exec *session_pop(ptybox_session *s)
{
	struct exec *e = s->head;
	if (e) {
		s->head = e->next;
		if (!s->head)
			s->tail = NULL;
		s->queued--;
	}
	return e;
}

static void session_await(ptybox_session *s, bool on)
{
	if (s->awaiting != on)
		session_awaiting += on ? 1 : -1;
	s->awaiting = on;
}

/* The traceback lines joined into one string; NULL when there are none. */
static char *session_join_traceback(const cJSON *error)
{
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(error, "traceback");
	const cJSON *line;
	size_t n = 0, o = 0;
	if (!cJSON_IsArray(tb))
		return NULL;
	cJSON_ArrayForEach(line, tb)
	{
		if (cJSON_IsString(line))
			n += strlen(line->valuestring);
	}
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	cJSON_ArrayForEach(line, tb)
	{
		if (cJSON_IsString(line)) {
			size_t l = strlen(line->valuestring);
			memcpy(out + o, line->valuestring, l);
			o += l;
		}
	}
	out[o] = '\0';
	return out;
}

/* Ends the file op at the head with reply (owned: cJSON_free), and moves on. */
static void session_file_done(ptybox_session *s, char *reply)
{
	struct exec *e = session_pop(s);
	uv_timer_stop(&s->timer);
	if (e->file->line) /* (never sent) */
		s->put_waiting -= e->file->put_len;
	if (s->state == S_RUNNING)
		s->state = S_IDLE;
	if (s->in)
		frame_scanner_shrink(&s->in->scanner, 1 << 20);
	log_to(s->log, "session: %s id=%llu done", e->file->op, (unsigned long long)e->id);
	/* A file op next goes first, before this one's answer (a get's reply is 8 MiB of base64
	 * made and written on the loop): the driver reads its range meanwhile. Only a file op
	 * that will be sent: its pump calls nothing back (a snippet's might: its result would
	 * come before this answer). */
	struct exec *next = s->head;
	if (next && next->file && next->stop != STOP_INTERRUPT && !next->restart)
		session_pump(s);
	if (s->cb.on_file)
		s->cb.on_file(
			s, e->id,
			reply ? reply
			      : "{\"ok\":false,\"error\":\"out of memory\",\"errno\":\"ENOMEM\"}",
			e->file->len ? e->file->data : NULL, e->file->len, s->data);
	cJSON_free(reply);
	session_exec_free(e);
	session_pump(s);
}

static void session_on_file(ptybox_session *s, struct protocol_frame *f)
{
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e || !e->file || !f->has_id || f->id != e->id)
		return;
	session_file_done(s, session_file_reply(e->file, f->root));
}

static void session_file_timeout_cb(uv_timer_t *t);

static void session_on_binary(struct instance *in, const char *data, size_t len, bool z)
{
	ptybox_session *s = in->data;
	if (s->state != S_RUNNING || !s->head || !s->head->file)
		return;
	session_file_binary(s->head->file, data, len, z);
	/* A get that makes progress is not timed out: each chunk restarts the timer. */
	if (s->head->timeout > 0)
		session_arm(s, options_seconds_ms(s->head->timeout), session_file_timeout_cb);
}

static void session_file_timeout_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e || !e->file)
		return;
	char msg[128];
	snprintf(msg, sizeof(msg), "timed out after %g s; killed", e->timeout);
	session_restart_kernel(s, PTYBOX_TIMEOUT, msg, session_and_restarted);
}

/* Sends the file op at the head (the session is idle). */
static void session_send_file(ptybox_session *s, struct exec *e)
{
	int rc = instance_write(s->in, e->file->line, e->file->line_len);
	e->file->line = NULL; /* (the instance's now, written or not) */
	s->put_waiting -= e->file->put_len;
	e->sent_ns = uv_hrtime();
	s->state = S_RUNNING;
	if (rc < 0) {
		s->send_error = -rc;
		uv_timer_start(&s->timer, session_send_failed_cb, 0, 0);
		return;
	}
	session_arm(s, options_seconds_ms(e->timeout), session_file_timeout_cb);
}

/* Delivers the running snippet's result and moves on to the next one. */
void session_finish(ptybox_session *s, enum ptybox_status status, cJSON *bundle, cJSON *error,
		    double duration_ms, bool state_lost, const char *message)
{
	if (s->head && s->head->file) { /* a file op that did not end by itself */
		session_file_done(
			s, session_file_error(s->head->file, message ? message : "it did not run",
					      status == PTYBOX_TIMEOUT ? "ETIMEDOUT" : "EIO"));
		return;
	}
	struct exec *e = session_pop(s);
	if (!e)
		return;
	if (s->awaiting && e->sent_ns) {
		int64_t cap = 2000 * (int64_t)s->opts.busy_poll_us,
			took = (int64_t)(uv_hrtime() - e->sent_ns);
		s->result_ns += ((took < cap ? took : cap) - s->result_ns) / 4;
	}
	session_await(s, false);
	uv_timer_stop(&s->timer);
	size_t olen = 0, elen = 0;
	uint64_t odrop = 0, edrop = 0;
	/* (Most snippets print nothing: no allocation for that.) */
	char *otext = s->out.total ? outbuf_take(&s->out, &olen, &odrop) : NULL;
	char *etext = s->err.total ? outbuf_take(&s->err, &elen, &edrop) : NULL;
	char *traceback = session_join_traceback(error);
	if (duration_ms < 0)
		duration_ms = (double)(uv_hrtime() - e->sent_ns) / 1e6;
	struct ptybox_result r = {
		.id = e->id,
		.status = status,
		.stdout_text = otext ? otext : "",
		.stdout_len = otext ? olen : 0,
		.stderr_text = etext ? etext : "",
		.stderr_len = etext ? elen : 0,
		.value_text = protocol_str(bundle, "text/plain"),
		.error_name = protocol_str(error, "name"),
		.error_value = protocol_str(error, "value"),
		.traceback = traceback,
		.duration_ms = duration_ms,
		.dropped_bytes = odrop + edrop,
		.truncated = odrop || edrop || e->display.dropped || e->cut || s->frame_dropped,
		.state_lost = state_lost || s->state_lost_pending,
		.message = message,
	};
	struct ptybox_result_detail detail = {
		.bundle = bundle, .error = error, .display = e->display.list};
	r.detail = &detail;
	s->state_lost_pending = false;
	s->frame_dropped = false;
	if (s->state == S_RUNNING)
		s->state = S_IDLE;
	if (s->in)
		frame_scanner_shrink(&s->in->scanner, 1 << 20);
	log_to(s->log, "session: result id=%llu status=%s", (unsigned long long)e->id,
	       ptybox_status_name(status));
	if (s->cb.on_result)
		s->cb.on_result(s, &r, s->data);
	cJSON_free(detail.json);
	free(traceback);
	free(otext);
	free(etext);
	session_exec_free(e);
	session_pump(s);
}

static void session_grace_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e)
		return;
	char msg[160];
	log_to(s->log, "session: id=%llu ignored ^C; killing", (unsigned long long)e->id);
	if (e->stop == STOP_TIMEOUT) {
		snprintf(msg, sizeof(msg), "timed out after %g s and did not stop on ^C; killed",
			 e->timeout);
		session_restart_kernel(s, PTYBOX_TIMEOUT, msg, session_and_restarted);
	} else {
		session_restart_kernel(s, PTYBOX_INTERRUPTED, "did not stop on ^C; killed",
				       session_and_restarted);
	}
}

/* ^C over the terminal, once per snippet; if the code does not stop within
 * the grace time, it is killed. */
static void session_ctrl_c(ptybox_session *s, struct exec *e)
{
	if (e->ctrl_c_sent)
		return;
	e->ctrl_c_sent = true;
	int rc = instance_interrupt(s->in, e->id);
	if (rc < 0) /* the grace timer kills it */
		log_to(s->log, "session: id=%llu: could not send ^C: %s", (unsigned long long)e->id,
		       strerror(-rc));
	session_arm(s, options_seconds_ms(s->opts.kill_grace) + 1, session_grace_cb);
}

static void session_timeout_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e)
		return;
	e->stop = STOP_TIMEOUT;
	session_ctrl_c(s, e);
}

static void session_restart_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	if (s->state != S_STARTING || !s->head || !s->head->restart)
		return;
	session_exec_free(session_pop(s));
	log_to(s->log, "session: restart");
	s->state = S_IDLE; /* (so that nothing is held) */
	session_restart_kernel(s, PTYBOX_CRASHED, "", NULL);
}

const char *ptybox_result_json(const struct ptybox_result *r)
{
	if (r->detail && !r->detail->json)
		r->detail->json = protocol_result_json(r);
	return r->detail ? r->detail->json : NULL;
}

static void session_send_failed_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	if (s->state != S_RUNNING || !s->head)
		return;
	char msg[128];
	snprintf(msg, sizeof(msg), "could not send the snippet (%s)", strerror(s->send_error));
	session_replace(s, PTYBOX_CRASHED, msg, session_restarted);
}

/* For busy_poll_us after a snippet is sent the loop polls rather than
 * sleeps (an active idle handle makes uv_run poll with no timeout): a quick
 * result finds this thread awake. A sleeping one costs a wake-up, and in a VM
 * whose idle CPUs halt, an exit to the hypervisor and an interrupt back: tens
 * of microseconds, as long as the whole round trip of a small snippet. Each
 * turn yields the CPU to anything that wants it, the interpreter included. */
static void session_spin_cb(uv_idle_t *h)
{
	ptybox_session *s = h->data;
	if (s->state != S_RUNNING || uv_hrtime() >= s->spin_until || session_awaiting > 1)
		uv_idle_stop(h);
	else
		sched_yield();
}

static void session_pump(ptybox_session *s)
{
	if (s->state != S_IDLE || !s->head)
		return;
	struct exec *e = s->head;
	if (e->stop == STOP_INTERRUPT) { /* interrupted while it waited */
		s->state = S_RUNNING;
		session_finish(s, PTYBOX_INTERRUPTED, NULL, NULL, 0, false,
			       "interrupted before it started");
		return;
	}
	if (e->restart) {
		/* Nothing more goes to this instance; the swap runs on the next
		 * loop turn, outside the caller's call. */
		s->state = S_STARTING;
		uv_timer_start(&s->timer, session_restart_cb, 0, 0);
		return;
	}
	if (s->in && s->in->state == I_DYING)
		return; /* its death is told soon (on_dead): the snippet runs on the fresh one */
	if (e->file) {
		session_send_file(s, e);
		return;
	}
	char *line;
	size_t line_len;
	int rc = session_exec_line(s, e, &line, &line_len);
	if (rc == 0)
		rc = instance_write(s->in, line, line_len);
	free(e->code);
	e->code = NULL;
	e->sent_ns = uv_hrtime();
	s->state = S_RUNNING;
	outbuf_reset(&s->out);
	outbuf_reset(&s->err);
	if (rc < 0) {
		/* Told on the next loop turn: the pump runs inside ptybox_session_exec(),
		 * whose caller must not see the result before the call returns. */
		s->send_error = -rc;
		uv_timer_start(&s->timer, session_send_failed_cb, 0, 0);
		return;
	}
	session_arm(s, options_seconds_ms(e->timeout), session_timeout_cb);
	session_await(s, true);
	if (s->opts.busy_poll_us && session_awaiting == 1 &&
	    s->result_ns < 1000 * (int64_t)s->opts.busy_poll_us) {
		s->spin_until = e->sent_ns + (uint64_t)s->opts.busy_poll_us * 1000;
		uv_idle_start(&s->spin, session_spin_cb);
	}
}

/* A display kept for the result: an update replaces its display's entry
 * (display_list.c); a list we cannot grow (no memory) only loses that one. */
static void session_on_display(struct exec *e, cJSON *root)
{
	cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
	if (!cJSON_IsObject(data))
		return;
	bool update = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "update"));
	cJSON_DetachItemViaPointer(root, data);
	if (display_list_add(&e->display, data, protocol_str(root, "display_id"), update) < 0)
		e->display.dropped = true;
}

static void session_on_display_frame(ptybox_session *s, struct protocol_frame *f)
{
	struct exec *e = s->state == S_RUNNING ? s->head : NULL;
	bool late = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "late"));
	bool own = e && f->has_id && f->id == e->id && !late;
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(f->root, "data");
	bool told = s->cb.on_display || s->cb.on_display_id;
	if (told && f->has_id && cJSON_IsObject(data) && (!own || e->stream)) {
		char *bundle = cJSON_PrintUnformatted(data);
		if (bundle && s->cb.on_display_id)
			s->cb.on_display_id(
				s, f->id, bundle, !own, protocol_str(f->root, "display_id"),
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "update")),
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "at_end")),
				s->data);
		else if (bundle)
			s->cb.on_display(s, f->id, bundle, !own, s->data);
		cJSON_free(bundle);
	}
	if (own)
		session_on_display(e, f->root);
}

static void session_on_stream(ptybox_session *s, struct protocol_frame *f)
{
	const char *name = protocol_str(f->root, "name");
	const char *text = protocol_str(f->root, "text");
	if (!name || !text || (strcmp(name, "stdout") != 0 && strcmp(name, "stderr") != 0))
		return;
	bool late = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "late"));
	struct exec *e = s->state == S_RUNNING ? s->head : NULL;
	size_t len = strlen(text);
	if (e && f->has_id && f->id == e->id && !late) {
		struct outbuf *ob = name[3] == 'o' ? &s->out : &s->err;
		const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(f->root, "dropped");
		if (cJSON_IsNumber(dropped) && dropped->valuedouble > 0) {
			uint64_t n = dropped->valuedouble < 18446744073709551616.0
					     ? (uint64_t)dropped->valuedouble
					     : UINT64_MAX;
			outbuf_note_dropped(ob, n);
			if (e->stream && s->cb.on_stream) { /* the same seam as the result's */
				char marker[80];
				int mlen = snprintf(marker, sizeof(marker), OUTBUF_MARKER,
						    (unsigned long long)n);
				s->cb.on_stream(s, e->id, name, marker, (size_t)mlen, false,
						s->data);
			}
		}
		outbuf_append(ob, text, len);
		if (e->stream && s->cb.on_stream)
			s->cb.on_stream(s, e->id, name, text, len, false, s->data);
		return;
	}
	if (s->cb.on_stream && f->has_id && len)
		s->cb.on_stream(s, f->id, name, text, len, true, s->data);
}

static void session_on_result(ptybox_session *s, struct protocol_frame *f)
{
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e || !f->has_id || f->id != e->id)
		return;
	const char *st = protocol_str(f->root, "status");
	enum ptybox_status status = PTYBOX_ERROR;
	if (st && strcmp(st, "ok") == 0)
		status = PTYBOX_OK;
	else if (st && strcmp(st, "interrupted") == 0)
		status = e->stop == STOP_TIMEOUT ? PTYBOX_TIMEOUT : PTYBOX_INTERRUPTED;
	cJSON *bundle = cJSON_GetObjectItemCaseSensitive(f->root, "result");
	cJSON *error = cJSON_GetObjectItemCaseSensitive(f->root, "error");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(f->root, "duration_ms");
	e->cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "truncated"));
	/* The code caught our ^C and went on: it still stopped for it. */
	bool caught = e->stop != STOP_NONE &&
		      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "sigint"));
	char message[160] = "";
	if (status == PTYBOX_TIMEOUT)
		snprintf(message, sizeof(message), "timed out after %g s; interrupted, state kept",
			 e->timeout);
	else if (caught && e->stop == STOP_TIMEOUT)
		snprintf(message, sizeof(message),
			 "timed out after %g s; the code caught the ^C and went on, state kept",
			 e->timeout);
	else if (caught)
		snprintf(message, sizeof(message),
			 "interrupted; the code caught the ^C and went on, state kept");
	if (caught && status == PTYBOX_OK)
		status = e->stop == STOP_TIMEOUT ? PTYBOX_TIMEOUT : PTYBOX_INTERRUPTED;
	session_finish(s, status, cJSON_IsObject(bundle) ? bundle : NULL,
		       cJSON_IsObject(error) ? error : NULL,
		       cJSON_IsNumber(dur) && dur->valuedouble >= 0 ? dur->valuedouble : -1, false,
		       message[0] ? message : NULL);
}

/* A request the driver could not read: its snippet never starts. "broken":
 * we never send such a line, so the terminal damaged it (a mode that user code
 * set) or user code damaged the driver: a fresh interpreter takes over, or
 * every later request could fail the same way. */
static void session_on_driver_error(ptybox_session *s, struct protocol_frame *f)
{
	struct exec *e = s->head;
	const char *msg = protocol_str(f->root, "message");
	bool broken = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "broken"));
	log_to(s->log, "session: driver error%s: %s", broken ? " (broken)" : "", msg ? msg : "?");
	bool ours = s->state == S_RUNNING && e && (!f->has_id || f->id == e->id);
	if (!ours && !broken)
		return;
	cJSON *err = NULL;
	if (ours) {
		err = cJSON_CreateObject();
		cJSON_AddStringToObject(err, "name", "ProtocolError");
		cJSON_AddStringToObject(err, "value",
					msg ? msg : "the driver rejected the request");
		cJSON_AddItemToObject(err, "traceback", cJSON_CreateArray());
	}
	if (broken)
		session_replace_with(s, PTYBOX_ERROR, err,
				     "the interpreter could not read the request (its terminal "
				     "or its driver was damaged)",
				     session_restarted);
	else
		session_finish(s, PTYBOX_ERROR, NULL, err, -1, false, NULL);
	cJSON_Delete(err);
}

/* Whether a ready frame is that of the kernel our restart request id asked for. */
static bool session_ready_answers(const struct protocol_frame *f, uint64_t id)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(f->root, "restart");
	return cJSON_IsNumber(r) && r->valuedouble == (double)id;
}

static void session_on_frame(struct instance *in, const char *payload, size_t len)
{
	ptybox_session *s = in->data;
	struct protocol_frame f;
	int rc = protocol_parse_frame(payload, len, &f);
	if (rc < 0) {
		log_to(s->log, "session: unparsable frame of %zu bytes", len);
		if (rc == -E2BIG) /* too many values to parse: dropped, as an oversize one */
			s->frame_dropped = true;
		return;
	}
	switch (f.type) {
	case FRAME_STREAM: session_on_stream(s, &f); break;
	case FRAME_DISPLAY: session_on_display_frame(s, &f); break;
	case FRAME_RESULT: session_on_result(s, &f); break;
	case FRAME_ERROR: session_on_driver_error(s, &f); break;
	case FRAME_DIED:
		session_queries_fail(s);
		session_on_died(s, &f);
		break;
	case FRAME_REPLY: session_on_reply(s, &f); break;
	case FRAME_FILE: session_on_file(s, &f); break;
	case FRAME_STDIN: session_stdin_ack(s, &f); break;
	case FRAME_READY:
		if (s->state == S_STARTING && s->kernel_restarting &&
		    (!s->restart_awaited || session_ready_answers(&f, s->restart_awaited))) {
			s->kernel_restarting = false;
			log_to(s->log, "session: the relay's fresh kernel is up");
			session_on_ready(in);
		}
		break;
	default: break;
	}
	protocol_frame_free(&f);
}

static void session_on_oversize(struct instance *in, size_t len)
{
	ptybox_session *s = in->data;
	s->frame_dropped = true;
}

/* A fresh instance (the first, or one that replaced a dead one) learns the
 * user's terminal before any snippet: the relay takes requests in order. */
static void session_tell_terminal(ptybox_session *s)
{
	char *line;
	size_t len;
	s->told = s->in;
	if (s->opts.tty && protocol_tty_line(&line, &len) == 0 &&
	    instance_write(s->in, line, len) < 0)
		log_to(s->log, "session: the tty request could not be sent");
	if (!s->opts.cols || !s->opts.rows)
		return;
	pty_resize(&s->in->pty, s->opts.cols, s->opts.rows);
	if (protocol_resize_line(s->opts.cols, s->opts.rows, &line, &len) == 0 &&
	    instance_write(s->in, line, len) < 0)
		log_to(s->log, "session: the resize request could not be sent");
}

static void session_ready_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	if (s->state != S_STARTING)
		return;
	log_to(s->log, "session: ready");
	s->state = S_IDLE;
	s->started_once = true;
	s->restarting_told = false;
	if (s->in && s->told != s->in)
		session_tell_terminal(s);
	session_stdin_ready(s);
	if (s->cb.on_ready)
		s->cb.on_ready(s, s->data);
	if (s->held.on && s->state == S_IDLE)
		session_finish_held(s, NULL); /* (and on to the next) */
	else
		session_pump(s);
}

static void session_on_ready(struct instance *in)
{
	((ptybox_session *)in->data)->with_boot_fails = 0;
	/* Through the timer: a pooled instance is ready at once, inside the
	 * caller's call, where callbacks must not run. */
	ptybox_session *s = in->data;
	uv_timer_start(&s->timer, session_ready_cb, 0, 0);
}

static const struct instance_callbacks session_instance_callbacks = {
	.on_ready = session_on_ready,
	.on_frame = session_on_frame,
	.on_oversize = session_on_oversize,
	.on_binary = session_on_binary,
	.on_dead = session_on_dead,
};

void session_first_start_cb(uv_timer_t *t);

void session_start(ptybox_session *s)
{
	char err[512] = "";
	s->state = S_STARTING;
	if (s->with || s->opts.with) {
		int ready = session_with_sandbox(s, err, sizeof(err));
		if (ready == 0)
			uv_timer_start(&s->timer, session_first_start_cb, SESSION_WITH_RETRY_MS, 0);
		if (ready < 0)
			session_fatal(s, "%s%s",
				      s->started_once ? "the interpreter could not be restarted: "
						      : "",
				      err);
		if (ready <= 0)
			return;
	}
	size_t max_payload = PROTOCOL_MAX_PAYLOAD(s->opts.max_output);
	s->in = s->opts.pool && !s->opts.with ? pool_take(s->opts.pool, &s->topts, max_payload)
					      : NULL;
	if (s->in) {
		instance_adopt(s->in, &session_instance_callbacks, s, s->log);
		if (s->in->state == I_READY)
			session_on_ready(s->in);
		return;
	}
	int rc = instance_start(s->loop, &s->topts, max_payload, s->opts.boot_timeout,
				&session_instance_callbacks, s, s->log, &s->in, err, sizeof(err));
	s->topts.sandbox.join = NULL; /* (read by instance_start only) */
	if (rc < 0)
		session_fatal(s, "%s%s",
			      s->started_once ? "the interpreter could not be restarted: " : "",
			      err);
}

/* The sandbox's warnings, told to this session's owner, each once. */
static void session_warn_cb(void *ctx, const char *msg)
{
	ptybox_session *s = ctx;
	log_to(s->log, "session: warning: %s", msg);
	if (strcmp(s->warned, msg) == 0)
		return;
	snprintf(s->warned, sizeof(s->warned), "%s", msg);
	s->cb.on_warning(s, msg, s->data);
}

void session_first_start_cb(uv_timer_t *t)
{
	session_start(t->data);
}

int ptybox_session_new(uv_loop_t *loop, const struct ptybox_options *o,
		       const struct ptybox_callbacks *cb, void *data, ptybox_session **out,
		       char *err, size_t errlen)
{
	struct ptybox_options defaults;
	if (!o) {
		ptybox_options_init(&defaults);
		o = &defaults;
	}
	if (o->max_output > PROTOCOL_MAX_OUTPUT) {
		snprintf(err, errlen, "max_output %llu is over the limit of 1 TiB",
			 (unsigned long long)o->max_output);
		return -EINVAL;
	}
	ptybox_session *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = transport_options_from(o, &s->topts, err, errlen);
	if (rc < 0) {
		free(s);
		return rc;
	}
	ptybox_session *with = NULL;
	if ((rc = session_with_check(s, o->with, &with, err, errlen)) < 0) {
		free(s);
		return rc;
	}
	s->loop = loop;
	s->opts = *o;
	s->opts.via = NULL; /* the caller's string; only the parsed form is kept */
	s->cb = *cb;
	s->data = data;
	if (cb->on_warning) {
		s->topts.sandbox.warn = session_warn_cb;
		s->topts.sandbox.warn_ctx = s;
	}
	if (o->log_path && (rc = log_new(o->log_path, &s->log)) < 0) {
		snprintf(err, errlen, "--log %s: %s", o->log_path, strerror(-rc));
		free(s);
		return rc;
	}
	outbuf_init(&s->out, o->max_output);
	outbuf_init(&s->err, o->max_output);
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	uv_idle_init(loop, &s->spin);
	s->spin.data = s;
	uv_timer_init(loop, &s->query_timer);
	s->query_timer.data = s;
	session_with_join(s, with); /* (last: nothing fails after it) */
	/* Start on the next loop turn: callbacks never run inside the caller's call. */
	s->state = S_STARTING;
	uv_timer_start(&s->timer, session_first_start_cb, 0, 0);
	*out = s;
	return 0;
}

/* Queues e behind everything queued, and starts it if nothing runs. */
void session_push(ptybox_session *s, struct exec *e)
{
	if (s->tail)
		s->tail->next = e;
	else
		s->head = e;
	s->tail = e;
	s->queued++;
	session_pump(s);
}

/* A new execution of code (copied), not yet queued. */
static int session_exec_new(ptybox_session *s, uint64_t id, const char *code, size_t len,
			    double timeout, bool stream, struct exec **out)
{
	if (s->state == S_FATAL || s->state == S_CLOSING)
		return -EPIPE;
	if (s->queued >= SESSION_QUEUE_CAP)
		return -ENOBUFS;
	if (memchr(code, '\0', len))
		return -EINVAL; /* (as the encoder would say, but now rather than at send time) */
	struct exec *e = calloc(1, sizeof(*e));
	if (!e || !(e->code = malloc(len + 1))) {
		free(e);
		return -ENOMEM;
	}
	display_list_init(&e->display, DISPLAY_LIST_BYTES, DISPLAY_LIST_ENTRIES);
	memcpy(e->code, code, len);
	e->code[len] = '\0';
	e->code_len = len;
	e->id = id;
	e->timeout = timeout < 0 ? s->opts.timeout : timeout;
	e->stream = stream;
	*out = e;
	return 0;
}

/* A NULL-terminated copy of v (NULL: NULL); false when out of memory. */
static bool session_strv_dup(const char *const *v, char ***out)
{
	*out = NULL;
	if (!v)
		return true;
	size_t n = 0;
	while (v[n])
		n++;
	char **c = calloc(n + 1, sizeof(char *));
	if (!c)
		return false;
	*out = c;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i])))
			return false;
	return true;
}

int ptybox_session_exec_with(ptybox_session *s, uint64_t id, const struct ptybox_exec *x)
{
	struct protocol_exec_input in = {
		.env = x->env,
		.cwd = x->cwd,
		.stdin_data = x->stdin_data,
		.stdin_len = x->stdin_len,
		.has_stdin = x->has_stdin,
	};
	if (!protocol_exec_input_valid(&in))
		return -EINVAL;
	struct exec *e;
	int rc = session_exec_new(s, id, x->code, x->len, x->timeout, x->stream, &e);
	if (rc < 0)
		return rc;
	if ((x->filename && !(e->filename = strdup(x->filename))) ||
	    !session_strv_dup(x->filename ? x->argv : NULL, &e->argv) ||
	    !session_strv_dup(x->env, &e->env) || (x->cwd && !(e->cwd = strdup(x->cwd))))
		goto nomem;
	if (x->has_stdin) {
		e->has_stdin = true;
		e->stdin_len = x->stdin_len;
		if (!(e->stdin_data = malloc(x->stdin_len ? x->stdin_len : 1)))
			goto nomem;
		if (x->stdin_len)
			memcpy(e->stdin_data, x->stdin_data, x->stdin_len);
	}
	e->stdin_stream = x->stdin_stream && !x->has_stdin;
	session_push(s, e);
	return 0;
nomem:
	session_exec_free(e);
	return -ENOMEM;
}

int ptybox_session_exec(ptybox_session *s, uint64_t id, const char *code, size_t len,
			double timeout, bool stream)
{
	struct ptybox_exec x = {.code = code, .len = len, .timeout = timeout, .stream = stream};
	return ptybox_session_exec_with(s, id, &x);
}

int ptybox_session_exec_file(ptybox_session *s, uint64_t id, const char *code, size_t len,
			     double timeout, bool stream, const char *filename,
			     const char *const *argv)
{
	if (!filename)
		return -EINVAL;
	struct ptybox_exec x = {.code = code,
				.len = len,
				.timeout = timeout,
				.stream = stream,
				.filename = filename,
				.argv = argv};
	return ptybox_session_exec_with(s, id, &x);
}

int ptybox_session_resize(ptybox_session *s, unsigned cols, unsigned rows)
{
	char *line;
	size_t len;
	int rc = protocol_resize_line(cols, rows, &line, &len);
	if (rc < 0)
		return rc;
	s->opts.cols = (unsigned short)cols;
	s->opts.rows = (unsigned short)rows;
	/* Once told, the instance hears of the change now; else at its ready. */
	if (!s->in || s->told != s->in || s->in->state != I_READY) {
		free(line);
		return 0;
	}
	pty_resize(&s->in->pty, (unsigned short)cols, (unsigned short)rows);
	return instance_write(s->in, line, len);
}

int ptybox_session_interrupt(ptybox_session *s)
{
	struct exec *e = s->head;
	if (s->state == S_STARTING) {
		/* The next snippet waits for the interpreter (behind a restart, it
		 * may be): it ends as soon as that is up, without running. A held
		 * one has run already. */
		if (e && s->held.on)
			e = e->next;
		while (e && (e->restart || e->file))
			e = e->next;
		if (!e)
			return -ENOENT;
		e->stop = STOP_INTERRUPT;
		return 0;
	}
	if (s->state != S_RUNNING || !e || e->file) /* (a file op is never interrupted) */
		return -ENOENT;
	if (e->stop == STOP_NONE)
		e->stop = STOP_INTERRUPT;
	session_ctrl_c(s, e);
	return 0;
}

int ptybox_session_restart(ptybox_session *s)
{
	switch (s->state) {
	case S_CLOSING: return -EPIPE;
	case S_FATAL:
		/* A new try: start-up may have failed for a passing reason. */
		s->started_once = false;
		s->state = S_STARTING;
		uv_timer_start(&s->timer, session_first_start_cb, 0, 0);
		return 0;
	default: {
		if (s->queued >= SESSION_QUEUE_CAP)
			return -ENOBUFS;
		struct exec *e = calloc(1, sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->restart = true;
		session_push(s, e);
		return 0;
	}
	}
}

/* A result for a snippet that never ran, e.g. one cancelled; e is off the queue. */
static void session_finish_unrun(ptybox_session *s, struct exec *e, enum ptybox_status status,
				 const char *message)
{
	struct ptybox_result r = {.id = e->id,
				  .status = status,
				  .stdout_text = "",
				  .stderr_text = "",
				  .message = message};
	struct ptybox_result_detail detail = {0};
	r.detail = &detail;
	log_to(s->log, "session: result id=%llu status=%s", (unsigned long long)e->id,
	       ptybox_status_name(status));
	if (s->cb.on_result)
		s->cb.on_result(s, &r, s->data);
	cJSON_free(detail.json);
	session_exec_free(e);
}

int ptybox_session_cancel(ptybox_session *s, uint64_t id)
{
	if (s->state == S_CLOSING)
		return -ENOENT;
	/* The head has been sent when running, and has run when its result is held. */
	bool head_started = s->state == S_RUNNING || s->held.on;
	struct exec **link = &s->head, *prev = NULL;
	for (; *link; prev = *link, link = &(*link)->next) {
		struct exec *e = *link;
		if (e->restart || e->file || e->id != id)
			continue;
		if (e == s->head && head_started)
			return -EBUSY;
		*link = e->next;
		if (s->tail == e)
			s->tail = prev;
		s->queued--;
		session_finish_unrun(s, e, PTYBOX_CANCELLED, "cancelled before it started");
		return 0;
	}
	return -ENOENT;
}

size_t ptybox_session_pending(const ptybox_session *s)
{
	return s->queued;
}

bool ptybox_session_running(const ptybox_session *s, uint64_t *id)
{
	bool running = s->state == S_RUNNING && s->head && !s->head->restart && !s->head->file;
	if (running && id)
		*id = s->head->id;
	return running;
}

long long ptybox_session_memory(const ptybox_session *s)
{
	if (s->topts.kind != TRANSPORT_LOCAL)
		return -ENOTSUP;
	if (!s->in || !s->in->transport || s->state == S_CLOSING)
		return -ESRCH;
	return transport_memory(s->in->transport);
}

/* The last of the timer, the spin and the instance to close frees the session. */
static void session_closed_one(ptybox_session *s)
{
	if (--s->closing_parts > 0)
		return;
	if (s->cb.on_closed)
		s->cb.on_closed(s, s->data);
	log_unref(s->log);
	outbuf_free(&s->out);
	outbuf_free(&s->err);
	free(s);
}

static void session_handle_closed_cb(uv_handle_t *h)
{
	session_closed_one(h->data);
}

static void session_instance_closed(void *data)
{
	session_closed_one(data);
}

void ptybox_session_close(ptybox_session *s)
{
	if (s->state == S_CLOSING)
		return;
	s->state = S_CLOSING;
	session_unshare(s);
	session_await(s, false);
	while (s->head)
		session_exec_free(session_pop(s));
	cJSON_Delete(s->held.error);
	s->held.error = NULL;
	s->held.on = false;
	session_stdin_free(s);
	while (s->queries) { /* (dropped untold, as the snippets are) */
		struct query *q = s->queries;
		s->queries = q->next;
		cJSON_free(q->reply);
		free(q);
	}
	s->nqueries = 0;
	s->closing_parts = 3;
	if (s->in) {
		s->closing_parts++;
		instance_close_notify(s->in, session_instance_closed, s);
	}
	s->in = NULL;
	s->told = NULL;
	uv_close((uv_handle_t *)&s->timer, session_handle_closed_cb);
	uv_close((uv_handle_t *)&s->spin, session_handle_closed_cb);
	uv_close((uv_handle_t *)&s->query_timer, session_handle_closed_cb);
}

const char *ptybox_version(void)
{
#ifdef PTYBOX_VERSION
	return PTYBOX_VERSION;
#else
	return "0.1.0";
#endif
}
