/*
 * session.c - one interpreter session: the state machine between the user's
 * snippets and the driver on the other side of the terminal.
 *
 *   BOOT ─prompt─> HANDSHAKE ─prompt─> WAIT_READY ─ready─> IDLE <─result─ RUNNING
 *     │                  │                  │  ──exec────────>  │
 *     └───── exit / deadline: FATAL         └── exit, kill ──> DYING ──> (restart) BOOT
 *
 * It owns the PTY, the transport, the frame scanner, the queue of snippets
 * and one timer, which at any moment guards exactly one deadline: the boot,
 * the running snippet, the grace after ^C, or the drain after a death. A
 * snippet ends in exactly one result, whatever happens to the driver. ^C is
 * sent only after the driver said the snippet started, so it can never land
 * in the driver's own loop.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "frame.h"
#include "log.h"
#include "outbuf.h"
#include "protocol.h"
#include "pty.h"
#include "ptybox.h"
#include "transport.h"

extern const unsigned char ptybox_driver_py[];
extern const size_t ptybox_driver_py_len;

#define SESSION_QUEUE_CAP   4096
#define SESSION_DRAIN_MS    1000
#define SESSION_DISPLAY_CAP ((size_t)64 << 20)
#define SESSION_NOISE_TAIL  400

enum session_state {
	S_BOOT,
	S_HANDSHAKE,
	S_WAIT_READY,
	S_IDLE,
	S_RUNNING,
	S_DYING,
	S_FATAL,
	S_CLOSING
};

/* Why the driver is going away (S_DYING). */
enum session_death { DEATH_CRASH, DEATH_TIMEOUT, DEATH_INTERRUPT, DEATH_RESTART };

/* Why ^C was sent to the running snippet. */
enum exec_stop { STOP_NONE, STOP_TIMEOUT, STOP_INTERRUPT };

struct exec {
	struct exec *next;
	uint64_t id;
	char *line; /* the encoded request until it is handed to the PTY */
	size_t line_len;
	double timeout;
	bool stream, started, ctrl_c_sent;
	enum exec_stop stop;
	uint64_t sent_ns;
	cJSON *display;
	size_t display_bytes;
	bool display_dropped;
};

struct ptybox_session {
	uv_loop_t *loop;
	struct ptybox_options opts;
	struct transport_options topts;
	struct ptybox_callbacks cb;
	void *data;

	enum session_state state;
	struct transport *transport;
	struct pty pty;
	bool pty_live;
	bool child_exited, hung_up;
	int wstatus;
	enum session_death death;

	uv_timer_t timer;
	bool timer_closed;

	char nonce[2 * PROTOCOL_NONCE_BYTES + 1];
	size_t prompt_matched;
	struct frame_scanner scanner;
	bool scanner_live;

	struct exec *head, *tail; /* head is the running one in S_RUNNING */
	size_t queued;
	struct outbuf out, err;
	bool frame_dropped;
	bool state_lost_pending;
	char noise[SESSION_NOISE_TAIL + 1];
	size_t noise_len;
};

static void session_start(ptybox_session *s);
static void session_pump(ptybox_session *s);

void ptybox_options_init(struct ptybox_options *o)
{
	*o = (struct ptybox_options){
		.via = "local",
		.timeout = 30,
		.kill_grace = 2,
		.boot_timeout = 20,
		.max_output = 4 << 20,
		.memory = 1ULL << 30,
		.tmp_size = 256ULL << 20,
		.max_file_size = 256ULL << 20,
		.pids = 256,
		.nofile = 1024,
		.cpus = 1,
	};
}

static uint64_t session_ms(double seconds)
{
	return seconds <= 0 ? 0 : (uint64_t)ceil(seconds * 1000.0);
}

static void session_arm(ptybox_session *s, uint64_t ms, uv_timer_cb cb)
{
	uv_timer_stop(&s->timer);
	if (ms)
		uv_timer_start(&s->timer, cb, ms, 0);
}

static void exec_free(struct exec *e)
{
	if (!e)
		return;
	free(e->line);
	cJSON_Delete(e->display);
	free(e);
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

static void session_remember_noise(ptybox_session *s, const char *buf, size_t len)
{
	if (len >= SESSION_NOISE_TAIL) {
		memcpy(s->noise, buf + len - SESSION_NOISE_TAIL, SESSION_NOISE_TAIL);
		s->noise_len = SESSION_NOISE_TAIL;
	} else {
		size_t keep = s->noise_len + len > SESSION_NOISE_TAIL ? SESSION_NOISE_TAIL - len
								      : s->noise_len;
		memmove(s->noise, s->noise + s->noise_len - keep, keep);
		memcpy(s->noise + keep, buf, len);
		s->noise_len = keep + len;
	}
	s->noise[s->noise_len] = '\0';
}

/* The last line of what the terminal said outside frames, for error messages
 * such as "python3: not found" from a remote shell. */
/* The last line the terminal said outside frames, for error messages such as
 * "python3: not found" from a remote shell. Lines that are only base64 are
 * the echo of the boot, not what anyone said. */
static const char *session_noise_line(ptybox_session *s, char *buf, size_t buflen)
{
	size_t end = s->noise_len;
	buf[0] = '\0';
	while (end > 0) {
		while (end > 0 && strchr("\r\n ", s->noise[end - 1]))
			end--;
		size_t start = end;
		while (start > 0 && s->noise[start - 1] != '\n' && s->noise[start - 1] != '\r')
			start--;
		size_t n = end - start;
		bool echo = true; /* base64, and the bell a full canonical line rings */
		for (size_t i = start; i < end && echo; i++)
			echo = isalnum((unsigned char)s->noise[i]) || strchr("+/=\a", s->noise[i]);
		if (!echo && n > 0) {
			n = n < buflen - 1 ? n : buflen - 1;
			for (size_t i = 0; i < n; i++) {
				unsigned char c = (unsigned char)s->noise[start + i];
				buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
			}
			buf[n] = '\0';
			break;
		}
		end = start;
	}
	return buf;
}

static void session_fatal(ptybox_session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void session_kill(ptybox_session *s, enum session_death why);

/* Delivers the head snippet's result and moves on. */
static void session_finish(ptybox_session *s, enum ptybox_status status, cJSON *bundle,
			   cJSON *error, double duration_ms, bool state_lost, const char *message)
{
	struct exec *e = session_pop(s);
	if (!e)
		return;
	uv_timer_stop(&s->timer);
	size_t olen = 0, elen = 0;
	uint64_t odrop = 0, edrop = 0;
	char *otext = outbuf_take(&s->out, &olen, &odrop);
	char *etext = outbuf_take(&s->err, &elen, &edrop);
	if (duration_ms < 0)
		duration_ms = (double)(uv_hrtime() - e->sent_ns) / 1e6;

	char *traceback = NULL;
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(error, "traceback");
	if (cJSON_IsArray(tb)) {
		size_t n = 0;
		const cJSON *line;
		cJSON_ArrayForEach(line, tb) if (cJSON_IsString(line)) n +=
			strlen(line->valuestring);
		traceback = malloc(n + 1);
		if (traceback) {
			traceback[0] = '\0';
			size_t o = 0;
			cJSON_ArrayForEach(line, tb) if (cJSON_IsString(line))
			{
				size_t l = strlen(line->valuestring);
				memcpy(traceback + o, line->valuestring, l);
				o += l;
			}
			traceback[o] = '\0';
		}
	}
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
		.truncated = odrop || edrop || e->display_dropped || s->frame_dropped,
		.state_lost = state_lost || s->state_lost_pending,
		.message = message,
	};
	s->state_lost_pending = false;
	s->frame_dropped = false;
	char *json = protocol_result_json(&r, bundle, error, e->display);
	r.json = json ? json : "{}";
	if (s->state == S_RUNNING)
		s->state = S_IDLE;
	frame_scanner_shrink(&s->scanner, 1 << 20);
	log_msg("session: result id=%llu status=%s", (unsigned long long)e->id,
		ptybox_status_name(status));
	if (s->cb.on_result)
		s->cb.on_result(s, &r, s->data);
	cJSON_free(json);
	free(traceback);
	free(otext);
	free(etext);
	exec_free(e);
	session_pump(s);
}

static void session_grace_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	if (s->state != S_RUNNING || !s->head)
		return;
	log_msg("session: id=%llu ignored ^C; killing", (unsigned long long)s->head->id);
	session_kill(s, s->head->stop == STOP_TIMEOUT ? DEATH_TIMEOUT : DEATH_INTERRUPT);
}

/* ^C over the terminal, once per snippet; if the code does not stop within
 * the grace time, it is killed. */
static void session_ctrl_c(ptybox_session *s, struct exec *e)
{
	if (e->ctrl_c_sent)
		return;
	e->ctrl_c_sent = true;
	pty_write(&s->pty, "\x03", 1);
	session_arm(s, session_ms(s->opts.kill_grace) + 1, session_grace_cb);
}

static void session_timeout_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e)
		return;
	e->stop = STOP_TIMEOUT;
	if (!e->started) {
		/* Still reading its request: a ^C now would hit the driver's loop. */
		session_kill(s, DEATH_TIMEOUT);
		return;
	}
	session_ctrl_c(s, e);
}

static void session_pump(ptybox_session *s)
{
	if (s->state != S_IDLE || !s->head)
		return;
	struct exec *e = s->head;
	int rc = pty_write_take(&s->pty, e->line, e->line_len);
	e->line = NULL;
	e->sent_ns = uv_hrtime();
	s->state = S_RUNNING;
	outbuf_reset(&s->out);
	outbuf_reset(&s->err);
	if (rc < 0) {
		log_msg("session: write request: %s", strerror(-rc));
		session_kill(s, DEATH_CRASH);
		return;
	}
	session_arm(s, session_ms(e->timeout), session_timeout_cb);
}

static void session_on_display(ptybox_session *s, struct exec *e, cJSON *root)
{
	cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
	if (!cJSON_IsObject(data))
		return;
	size_t bytes = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, data) if (cJSON_IsString(v)) bytes += strlen(v->valuestring);
	if (e->display_bytes + bytes > SESSION_DISPLAY_CAP) {
		e->display_dropped = true;
		return;
	}
	if (!e->display && !(e->display = cJSON_CreateArray()))
		return;
	cJSON_DetachItemViaPointer(root, data);
	cJSON_AddItemToArray(e->display, data);
	e->display_bytes += bytes;
}

static void session_on_stream(ptybox_session *s, struct protocol_frame *f)
{
	const char *name = protocol_str(f->root, "name");
	const char *text = protocol_str(f->root, "text");
	if (!name || !text || (strcmp(name, "stdout") != 0 && strcmp(name, "stderr") != 0))
		return;
	bool late = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f->root, "late"));
	struct exec *e = s->state == S_RUNNING || s->state == S_DYING ? s->head : NULL;
	size_t len = strlen(text);
	if (e && f->has_id && f->id == e->id && e->sent_ns && !late) {
		struct outbuf *ob = name[3] == 'o' ? &s->out : &s->err;
		const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(f->root, "dropped");
		if (cJSON_IsNumber(dropped) && dropped->valuedouble > 0)
			outbuf_note_dropped(ob, (uint64_t)dropped->valuedouble);
		outbuf_append(ob, text, len);
		if (e->stream && s->cb.on_stream)
			s->cb.on_stream(s, e->id, name, text, len, false, s->data);
		return;
	}
	if (s->cb.on_stream && f->has_id)
		s->cb.on_stream(s, f->id, name, text, len, true, s->data);
}

static void session_on_result(ptybox_session *s, struct protocol_frame *f)
{
	struct exec *e = s->head;
	if (!e || !e->sent_ns || !f->has_id || f->id != e->id ||
	    (s->state != S_RUNNING && s->state != S_DYING))
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
	char message[128] = "";
	if (status == PTYBOX_TIMEOUT)
		snprintf(message, sizeof(message), "timed out after %g s; interrupted, state kept",
			 e->timeout);
	session_finish(s, status, cJSON_IsObject(bundle) ? bundle : NULL,
		       cJSON_IsObject(error) ? error : NULL,
		       cJSON_IsNumber(dur) && dur->valuedouble >= 0 ? dur->valuedouble : -1, false,
		       message[0] ? message : NULL);
}

static void session_on_frame(ptybox_session *s, const char *payload, size_t len)
{
	struct protocol_frame f;
	if (protocol_parse_frame(payload, len, &f) < 0) {
		log_msg("session: unparsable frame of %zu bytes", len);
		return;
	}
	struct exec *e = s->head;
	switch (f.type) {
	case FRAME_READY:
		if (s->state == S_WAIT_READY) {
			s->state = S_IDLE;
			uv_timer_stop(&s->timer);
			log_msg("session: ready");
			if (s->cb.on_ready)
				s->cb.on_ready(s, s->data);
			session_pump(s);
		}
		break;
	case FRAME_START:
		if (s->state == S_RUNNING && e && f.has_id && f.id == e->id && !e->started) {
			e->started = true;
			if (e->stop == STOP_INTERRUPT)
				session_ctrl_c(s, e);
		}
		break;
	case FRAME_STREAM: session_on_stream(s, &f); break;
	case FRAME_DISPLAY:
		if (s->state == S_RUNNING && e && f.has_id && f.id == e->id)
			session_on_display(s, e, f.root);
		break;
	case FRAME_RESULT: session_on_result(s, &f); break;
	case FRAME_ERROR: {
		const char *msg = protocol_str(f.root, "message");
		log_msg("session: driver error: %s", msg ? msg : "?");
		/* A request the driver could not read: its snippet never starts. */
		if (s->state == S_RUNNING && e && !e->started && (!f.has_id || f.id == e->id)) {
			cJSON *err = cJSON_CreateObject();
			cJSON_AddStringToObject(err, "name", "ProtocolError");
			cJSON_AddStringToObject(err, "value",
						msg ? msg : "the driver rejected the request");
			cJSON_AddItemToObject(err, "traceback", cJSON_CreateArray());
			session_finish(s, PTYBOX_ERROR, NULL, err, -1, false, NULL);
			cJSON_Delete(err);
		}
		break;
	}
	default: break;
	}
	protocol_frame_free(&f);
}

static void session_scan_cb(void *ctx, enum frame_event ev, const char *data, size_t len)
{
	ptybox_session *s = ctx;
	switch (ev) {
	case FRAME_EVENT_NOISE: session_remember_noise(s, data, len); break;
	case FRAME_EVENT_PAYLOAD: session_on_frame(s, data, len); break;
	case FRAME_EVENT_OVERSIZE:
		log_msg("session: dropped an oversize frame of %zu bytes", len);
		s->frame_dropped = true;
		break;
	}
}

/* Looks for a boot prompt in unframed output; returns how many bytes of buf
 * it consumed, or len when the prompt is not complete yet. The prompts'
 * first letter occurs once in them, so a mismatch restarts cleanly. */
static size_t session_match_prompt(ptybox_session *s, const char *prompt, const char *buf,
				   size_t len, bool *found)
{
	size_t plen = strlen(prompt), i = 0;
	while (i < len && s->prompt_matched < plen) {
		if (buf[i] == prompt[s->prompt_matched])
			s->prompt_matched++;
		else
			s->prompt_matched = buf[i] == prompt[0];
		i++;
	}
	session_remember_noise(s, buf, i);
	*found = s->prompt_matched == plen;
	if (*found)
		s->prompt_matched = 0;
	return i;
}

static void session_pty_data(struct pty *p, const char *buf, size_t len)
{
	ptybox_session *s = p->data;
	bool found;
	size_t used;
	if (s->state == S_BOOT) {
		used = session_match_prompt(s, PROTOCOL_BOOT_PROMPT, buf, len, &found);
		buf += used;
		len -= used;
		if (!found)
			return;
		char *boot;
		size_t boot_len;
		int rc = protocol_boot_lines(ptybox_driver_py, ptybox_driver_py_len, &boot,
					     &boot_len);
		if (rc == 0)
			rc = pty_write_take(&s->pty, boot, boot_len);
		if (rc < 0) {
			session_fatal(s, "send the driver: %s", strerror(-rc));
			return;
		}
		s->state = S_HANDSHAKE;
	}
	if (s->state == S_HANDSHAKE) {
		/* Before the handshake nothing is framed. */
		used = session_match_prompt(s, PROTOCOL_NONCE_PROMPT, buf, len, &found);
		buf += used;
		len -= used;
		if (!found)
			return;
		char line[sizeof(s->nonce) + 1];
		snprintf(line, sizeof(line), "%s\n", s->nonce);
		pty_write(&s->pty, line, strlen(line));
		s->state = S_WAIT_READY;
	}
	if (s->scanner_live)
		frame_scanner_feed(&s->scanner, buf, len, session_scan_cb, s);
}

static void session_describe_exit(ptybox_session *s, int st, char *why, size_t len)
{
	const char *reason = s->transport ? transport_death_reason(s->transport) : NULL;
	if (reason)
		snprintf(why, len, "%s", reason);
	else if (WIFSIGNALED(st))
		snprintf(why, len, "killed by signal %d, %s", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + NSIG)
		snprintf(why, len, "killed by signal %d, %s", WEXITSTATUS(st) - 128,
			 strsignal(WEXITSTATUS(st) - 128));
	else
		snprintf(why, len, "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Both the child's exit and the terminal's hang-up are in: the death is settled. */
static void session_settle(ptybox_session *s)
{
	if (s->state != S_DYING || !s->child_exited || !s->hung_up)
		return;
	uv_timer_stop(&s->timer);
	char why[200];
	session_describe_exit(s, s->wstatus, why, sizeof(why));

	if (s->scanner_live)
		frame_scanner_finish(&s->scanner, session_scan_cb, s);
	s->state_lost_pending = true;
	pty_close(&s->pty);

	struct exec *e = s->head;
	if (e && e->sent_ns) {
		char msg[320];
		enum ptybox_status status = PTYBOX_CRASHED;
		switch (s->death) {
		case DEATH_CRASH:
			snprintf(msg, sizeof(msg),
				 "the interpreter died (%s); restarted with fresh state", why);
			break;
		case DEATH_TIMEOUT:
			status = PTYBOX_TIMEOUT;
			snprintf(msg, sizeof(msg),
				 "timed out after %g s and did not stop on ^C; killed and "
				 "restarted with "
				 "fresh state",
				 e->timeout);
			break;
		case DEATH_INTERRUPT:
			status = PTYBOX_INTERRUPTED;
			snprintf(msg, sizeof(msg),
				 "did not stop on ^C; killed and restarted with fresh state");
			break;
		case DEATH_RESTART:
			status = PTYBOX_INTERRUPTED;
			snprintf(msg, sizeof(msg), "the session was restarted; state is fresh");
			break;
		}
		session_finish(s, status, NULL, NULL, -1, true, msg);
	} else {
		log_msg("session: driver gone while idle (%s)", why);
	}
}

static void session_drain_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	/* Something the code started still holds the terminal; stop waiting. */
	log_msg("session: no hang-up within %d ms", SESSION_DRAIN_MS);
	s->hung_up = true;
	session_settle(s);
}

static void session_kill(ptybox_session *s, enum session_death why)
{
	if (s->state == S_DYING || s->state == S_CLOSING || s->state == S_FATAL)
		return;
	log_msg("session: killing the driver (%d)", why);
	s->state = S_DYING;
	s->death = why;
	transport_kill(s->transport, s->pty.pid);
	session_arm(s, SESSION_DRAIN_MS, session_drain_cb);
}

static void session_pty_hangup(struct pty *p)
{
	ptybox_session *s = p->data;
	s->hung_up = true;
	session_settle(s);
}

static void session_pty_exit(struct pty *p, int wstatus)
{
	ptybox_session *s = p->data;
	s->child_exited = true;
	s->wstatus = wstatus;
	log_msg("session: child %d exited, status 0x%x", (int)p->pid, wstatus);
	if (s->state == S_BOOT || s->state == S_HANDSHAKE || s->state == S_WAIT_READY) {
		pty_drain(p);
		char line[256], why[200];
		session_noise_line(s, line, sizeof(line));
		session_describe_exit(s, wstatus, why, sizeof(why));
		session_fatal(s, "the interpreter exited during start-up (%s)%s%s", why,
			      line[0] ? ": " : "", line);
		return;
	}
	if (s->state == S_CLOSING || s->state == S_FATAL)
		return;
	if (s->state != S_DYING) {
		pty_drain(p); /* the tail the driver wrote before it went */
		s->state = S_DYING;
		s->death = DEATH_CRASH;
		transport_kill(s->transport, p->pid); /* whatever it left behind */
		session_arm(s, SESSION_DRAIN_MS, session_drain_cb);
	}
	session_settle(s);
}

static void session_pty_closed(struct pty *p)
{
	ptybox_session *s = p->data;
	s->pty_live = false;
	transport_free(s->transport);
	s->transport = NULL;
	if (s->scanner_live)
		frame_scanner_free(&s->scanner);
	s->scanner_live = false;
	if (s->state == S_DYING) {
		session_start(s);
		return;
	}
	if (s->state == S_CLOSING && s->timer_closed) {
		if (s->cb.on_closed)
			s->cb.on_closed(s, s->data);
		outbuf_free(&s->out);
		outbuf_free(&s->err);
		free(s);
	}
}

static const struct pty_callbacks session_pty_callbacks = {
	.on_data = session_pty_data,
	.on_hangup = session_pty_hangup,
	.on_exit = session_pty_exit,
	.on_closed = session_pty_closed,
};

static void session_boot_timeout_cb(uv_timer_t *t)
{
	ptybox_session *s = t->data;
	char line[256];
	session_noise_line(s, line, sizeof(line));
	session_fatal(s, "the interpreter did not start within %g s%s%s", s->opts.boot_timeout,
		      line[0] ? ": " : "", line);
}

/* Ends the session's life as a working session: no restart, snippets dropped. */
static void session_fatal(ptybox_session *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_msg("session: fatal: %s", msg);
	uv_timer_stop(&s->timer);
	if (s->pty_live) {
		transport_kill(s->transport, s->pty.pid);
		if (!s->child_exited)
			while (waitpid(s->pty.pid, NULL, 0) < 0 && errno == EINTR)
				;
		s->child_exited = true;
		pty_close(&s->pty);
	}
	s->state = S_FATAL;
	while (s->head)
		exec_free(session_pop(s));
	if (s->cb.on_fatal)
		s->cb.on_fatal(s, msg, s->data);
}

static void session_start(ptybox_session *s)
{
	char err[512] = "";
	s->state = S_BOOT;
	s->child_exited = s->hung_up = false;
	s->prompt_matched = 0;
	s->noise_len = 0;
	/* A snippet sent to the dead driver goes again to the new one only if it
	 * never started; one that ran has its result already. */
	int rc = protocol_make_nonce(s->nonce, sizeof(s->nonce));
	size_t max_payload = s->opts.max_output * 4 + (16 << 20);
	if (rc == 0)
		rc = frame_scanner_init(&s->scanner, s->nonce, max_payload);
	if (rc < 0) {
		session_fatal(s, "session set-up: %s", strerror(-rc));
		return;
	}
	s->scanner_live = true;
	rc = transport_new(&s->topts, &s->transport, err, sizeof(err));
	if (rc == 0) {
		rc = pty_spawn(&s->pty, s->loop, s->transport, 120, 40, &session_pty_callbacks, s,
			       err, sizeof(err));
		if (rc < 0) {
			transport_free(s->transport);
			s->transport = NULL;
		}
	}
	if (rc < 0) {
		frame_scanner_free(&s->scanner);
		s->scanner_live = false;
		session_fatal(s, "%s", err);
		return;
	}
	s->pty_live = true;
	session_arm(s, session_ms(s->opts.boot_timeout), session_boot_timeout_cb);
}

static void session_first_start_cb(uv_timer_t *t)
{
	session_start(t->data);
}

static char *session_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
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
	ptybox_session *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->opts = *o;
	s->cb = *cb;
	s->data = data;
	int rc = transport_parse_via(o->via, &s->topts, err, errlen);
	if (rc < 0) {
		free(s);
		return rc;
	}
	s->opts.via = NULL; /* strings are the caller's; only the parsed form is kept */
	s->topts.python = o->python;
	s->topts.env_extra = o->env;
	s->topts.sandbox = (struct sandbox_options){
		.net = o->net,
		.memory = o->memory,
		.tmp_size = o->tmp_size,
		.max_file_size = o->max_file_size,
		.pids = o->pids,
		.nofile = o->nofile,
		.cpus = o->cpus,
	};
	/* tmpfs pages count against the memory limit: /tmp stays below it. */
	struct sandbox_options *so = &s->topts.sandbox;
	if (so->memory && (so->tmp_size == 0 || so->tmp_size > so->memory / 2))
		so->tmp_size = so->memory / 2;
	(void)session_strdup;
	if (o->log_path)
		log_open(o->log_path);
	outbuf_init(&s->out, o->max_output);
	outbuf_init(&s->err, o->max_output);
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	/* Start on the next loop turn: callbacks never run inside the caller's call. */
	s->state = S_BOOT;
	uv_timer_start(&s->timer, session_first_start_cb, 0, 0);
	*out = s;
	return 0;
}

int ptybox_session_exec(ptybox_session *s, uint64_t id, const char *code, size_t len,
			double timeout, bool stream)
{
	if (s->state == S_FATAL || s->state == S_CLOSING)
		return -EPIPE;
	if (s->queued >= SESSION_QUEUE_CAP)
		return -ENOBUFS;
	struct exec *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	int rc = protocol_exec_line(id, code, len, s->opts.max_output, &e->line, &e->line_len);
	if (rc < 0) {
		free(e);
		return rc;
	}
	e->id = id;
	e->timeout = timeout < 0 ? s->opts.timeout : timeout;
	e->stream = stream;
	if (s->tail)
		s->tail->next = e;
	else
		s->head = e;
	s->tail = e;
	s->queued++;
	session_pump(s);
	return 0;
}

int ptybox_session_interrupt(ptybox_session *s)
{
	struct exec *e = s->head;
	if (s->state != S_RUNNING || !e)
		return -ENOENT;
	if (e->stop == STOP_NONE)
		e->stop = STOP_INTERRUPT;
	if (e->started)
		session_ctrl_c(s, e);
	return 0;
}

int ptybox_session_restart(ptybox_session *s)
{
	switch (s->state) {
	case S_CLOSING: return -EPIPE;
	case S_DYING: return 0;
	case S_FATAL:
		if (s->pty_live)
			return -EAGAIN; /* still closing; the restart follows nothing */
		session_start(s);
		return 0;
	default: session_kill(s, DEATH_RESTART); return 0;
	}
}

size_t ptybox_session_pending(const ptybox_session *s)
{
	return s->queued;
}

static void session_timer_closed_cb(uv_handle_t *h)
{
	ptybox_session *s = h->data;
	s->timer_closed = true;
	if (!s->pty_live) {
		if (s->cb.on_closed)
			s->cb.on_closed(s, s->data);
		outbuf_free(&s->out);
		outbuf_free(&s->err);
		free(s);
	}
}

void ptybox_session_close(ptybox_session *s)
{
	if (s->state == S_CLOSING)
		return;
	bool had_pty = s->pty_live && !s->pty.closing;
	s->state = S_CLOSING;
	while (s->head)
		exec_free(session_pop(s));
	if (had_pty) {
		transport_kill(s->transport, s->pty.pid);
		if (!s->child_exited)
			while (waitpid(s->pty.pid, NULL, 0) < 0 && errno == EINTR)
				;
		pty_close(&s->pty);
	}
	uv_close((uv_handle_t *)&s->timer, session_timer_closed_cb);
}

const char *ptybox_version(void)
{
#ifdef PTYBOX_VERSION
	return PTYBOX_VERSION;
#else
	return "0.1.0";
#endif
}
