/*
 * session_restart.c - a session's interpreter replaced: its death told (a
 * crash, a kill after an ignored ^C, a timeout), the result it cut short held
 * until the fresh one is up or cannot be, the kernel replaced under the same
 * relay where it can be, the whole instance where it cannot, and the fatal
 * end when nothing can start.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"
#include "log.h"
#include "options.h"
#include "protocol.h"
#include "session_internal.h"

const char session_restarted[] = "; restarted with fresh state";
const char session_and_restarted[] = " and restarted with fresh state";

/* The held result, now that its restart is settled: fatal is NULL when the
 * fresh interpreter is up, else why there is none. */
void session_finish_held(ptybox_session *s, const char *fatal)
{
	char msg[sizeof(s->held.what) + 700];
	snprintf(msg, sizeof(msg), "%s%s%s", s->held.what, fatal ? "; " : s->held.done,
		 fatal ? fatal : "");
	cJSON *error = s->held.error;
	s->held.on = false;
	s->held.error = NULL;
	session_finish(s, s->held.status, NULL, error, s->held.duration_ms, true, msg);
	cJSON_Delete(error);
}

/* Restarts still queued: moot once nothing can start. */
void session_drop_restarts(ptybox_session *s)
{
	struct exec **link = &s->head;
	s->tail = NULL;
	while (*link) {
		struct exec *e = *link;
		if (e->restart) {
			*link = e->next;
			s->queued--;
			session_exec_free(e);
		} else {
			s->tail = e;
			link = &e->next;
		}
	}
}

/* Ends the session's life as a working session: no restart. The held result
 * goes first, then on_fatal, then a result for each snippet left, not run. */
void session_fatal(ptybox_session *s, const char *fmt, ...)
{
	char msg[640], not_run[sizeof(msg) + 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_to(s->log, "session: fatal: %s", msg);
	uv_timer_stop(&s->timer);
	if (s->in)
		instance_close(s->in);
	s->in = NULL;
	s->told = NULL;
	s->state = S_FATAL;
	session_drop_restarts(s);
	if (s->held.on)
		session_finish_held(s, msg);
	if (s->state != S_FATAL) /* closed by the callback */
		return;
	if (s->cb.on_fatal)
		s->cb.on_fatal(s, msg, s->data);
	snprintf(not_run, sizeof(not_run), "not run: %s", msg);
	while (s->state == S_FATAL && s->head)
		session_finish(s, PTYBOX_CRASHED, NULL, NULL, 0, s->started_once, not_run);
}

/* The instance is gone (or must go): a fresh one takes over, and the running
 * snippet ends with status and state_lost once it is up, its message saying
 * what happened, then done (or why no fresh one came). */
void session_replace(ptybox_session *s, enum ptybox_status status, const char *what,
		     const char *done)
{
	session_replace_with(s, status, NULL, what, done);
}

/* The running snippet's result is held, and the session waits for a fresh
 * interpreter. */
static void session_hold(ptybox_session *s, enum ptybox_status status, const cJSON *error,
			 const char *what, const char *done)
{
	s->state_lost_pending = true;
	if (s->state != S_RUNNING)
		return;
	uv_timer_stop(&s->timer);
	s->held.on = true;
	s->held.status = status;
	s->held.error = error ? cJSON_Duplicate(error, 1) : NULL;
	s->held.duration_ms = (double)(uv_hrtime() - s->head->sent_ns) / 1e6;
	snprintf(s->held.what, sizeof(s->held.what), "%s", what);
	s->held.done = done;
	s->state = S_STARTING;
}

/* on_restarting, once per restart (a relay's late kernel turning into a
 * whole new interpreter is still the same one). */
static void session_tell_restarting(ptybox_session *s, const char *why)
{
	if (s->restarting_told || !s->cb.on_restarting)
		return;
	s->restarting_told = true;
	s->cb.on_restarting(s, why && *why ? why : "restart asked", s->data);
}

void session_replace_with(ptybox_session *s, enum ptybox_status status, cJSON *error,
			  const char *what, const char *done)
{
	if (s->in)
		instance_close(s->in);
	s->in = NULL;
	s->told = NULL;
	s->kernel_restarting = false;
	session_hold(s, status, error, what, done);
	if (s->state != S_CLOSING && s->state != S_FATAL)
		session_tell_restarting(s, what);
	if (s->state != S_CLOSING && s->state != S_FATAL) /* (the callback may close it) */
		session_start(s);
}

/* The relay's fresh kernel did not come up in time (or the relay does not
 * answer: stopped, say): the whole interpreter is replaced. */
static void session_kernel_late_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	if (s->state != S_STARTING || !s->kernel_restarting)
		return;
	log_to(s->log,
	       "session: no fresh kernel from the relay in time; replacing the interpreter");
	session_replace(s, PTYBOX_CRASHED, "", NULL);
}

/* The kernel is gone or must go, under a relay that stays: the running
 * snippet's result is held until the relay says (ready) that a fresh
 * kernel is up, or, if it does not within wait_ms, the whole interpreter is
 * replaced. */
static void session_kernel_gone(ptybox_session *s, enum ptybox_status status, const char *what,
				const char *done, uint64_t wait_ms)
{
	session_hold(s, status, NULL, what, done);
	s->state = S_STARTING;
	s->kernel_restarting = true;
	s->restart_awaited = 0;
	session_arm(s, wait_ms, session_kernel_late_cb);
	session_tell_restarting(s, what);
}

/* Asks the relay for a fresh kernel (a restart, or the kill of a snippet that
 * ignored ^C): no new transport, no new sandbox. */
void session_restart_kernel(ptybox_session *s, enum ptybox_status status, const char *what,
			    const char *done)
{
	char *line;
	size_t len;
	uint64_t id = ++s->restart_seq;
	int rc = s->in && s->in->state == I_READY ? protocol_restart_line(id, &line, &len) : -EPIPE;
	if (rc == 0)
		rc = instance_write(s->in, line, len);
	if (rc < 0) {
		session_replace(s, status, what, done);
		return;
	}
	session_kernel_gone(s, status, what, done,
			    options_seconds_ms(s->opts.kill_grace) + SESSION_RELAY_GRACE_MS);
	s->restart_awaited = id;
}

/* A died frame: the kernel died under its relay, which starts a fresh one. */
void session_on_died(ptybox_session *s, struct protocol_frame *f)
{
	if (s->state == S_STARTING)
		return; /* one we asked for, or the restart is under way */
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(f->root, "status");
	char why[256], msg[640];
	if (cJSON_IsNumber(st) && st->valuedouble >= 0 && st->valuedouble < 65536)
		protocol_describe_exit((int)st->valuedouble, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "how, its relay did not say");
	/* The sandbox's own account first: the memory cgroup's OOM killer, say. */
	bool killed = cJSON_IsNumber(st) && ((int)st->valuedouble & 0x7f) == SIGKILL;
	const char *reason = killed && s->in ? transport_death_reason(s->in->transport) : NULL;
	snprintf(msg, sizeof(msg), "the interpreter died (%s)", reason ? reason : why);
	log_to(s->log, "session: %s%s", msg, s->state == S_RUNNING ? "" : " while idle");
	session_kernel_gone(s, PTYBOX_CRASHED, msg, session_restarted,
			    options_seconds_ms(s->opts.boot_timeout));
}

/* An interpreter that dies during its start under limits below the defaults
 * says little of why (a MemoryError, a segfault of the allocator, a fork that
 * failed, its relay's exit 116): name the limits, which the user set. */
static void session_limits_hint(const ptybox_session *s, char *hint, size_t len)
{
	struct ptybox_options def;
	ptybox_options_init(&def);
	char mem[64] = "", pids[64] = "";
	hint[0] = '\0';
	if (s->topts.kind != TRANSPORT_LOCAL)
		return; /* (the limits are the embedded sandbox's) */
	if (s->opts.memory && s->opts.memory < def.memory && s->opts.memory % (1 << 20) == 0)
		snprintf(mem, sizeof(mem), " --memory %" PRIu64 "M", s->opts.memory >> 20);
	else if (s->opts.memory && s->opts.memory < def.memory) /* (as typed: 1500K) */
		snprintf(mem, sizeof(mem), " --memory %" PRIu64 "K", s->opts.memory >> 10);
	if (s->opts.pids && s->opts.pids < def.pids)
		snprintf(pids, sizeof(pids), " --pids %u", s->opts.pids);
	if (mem[0] || pids[0])
		snprintf(hint, len, "; the session's limits may be too small for it to start:%s%s",
			 mem, pids);
}

void session_on_dead(struct instance *in, const char *why, bool during_boot)
{
	ptybox_session *s = in->data;
	session_queries_fail(s);
	if (during_boot && in->boot_late) { /* a deadline of ours says so */
		session_fatal(s, "the interpreter %s", why);
		return;
	}
	if (during_boot && s->with && s->with_boot_fails < SESSION_WITH_BOOTS) {
		s->with_boot_fails++;
		log_to(s->log, "session: the start in --with's sandbox failed (%s): again", why);
		instance_close(s->in);
		s->in = NULL;
		s->told = NULL;
		uv_timer_start(&s->timer, session_first_start_cb, SESSION_WITH_RETRY_MS, 0);
		return;
	}
	if (during_boot) {
		char hint[160];
		session_limits_hint(s, hint, sizeof(hint));
		session_fatal(s, "the interpreter %s (%s)%s",
			      s->started_once ? "could not be restarted" : "exited during start-up",
			      why, hint);
		return;
	}
	char msg[640];
	snprintf(msg, sizeof(msg), "the interpreter died (%s)", why);
	if (s->state != S_RUNNING)
		log_to(s->log, "session: %s while idle", msg);
	session_replace(s, PTYBOX_CRASHED, msg, session_restarted);
}
