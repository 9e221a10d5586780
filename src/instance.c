/*
 * instance.c - one interpreter on the far side of a terminal, from fork to
 * the last byte it wrote.
 *
 * It owns the transport, the PTY, the boot (bootstrap prompt, the driver as
 * code precompiled at build time when the interpreter's bytecode magic
 * matches, else as source, nonce handshake), the frame scanner and the
 * terminal's noise, and it knows when the interpreter is gone: its child
 * exited and the terminal was read to EIO (or the drain deadline passed, when
 * something the code started still holds the terminal). It knows nothing of
 * snippets: the session above interprets frames. Kept apart so that instances
 * can be booted ahead of use (pool.c) and swapped in at once.
 */
#define _GNU_SOURCE
#include "instance.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "lang.h"
#include "log.h"
#include "options.h"

extern const unsigned char ptybox_driver_py[];
extern const size_t ptybox_driver_py_len;
/* The driver compiled at build time (cmake/driver_join.py), and the magic of
 * the interpreter that compiled it; "" and 0 when the build had no python3.
 * The _python one has the Python kernel alone: a Python session (most) sends
 * a fifth less at its cold start. */
extern const unsigned char ptybox_driver_code[];
extern const size_t ptybox_driver_code_len;
extern const unsigned char ptybox_driver_code_python[];
extern const size_t ptybox_driver_code_python_len;
extern const char ptybox_driver_magic[];

#define INSTANCE_DRAIN_MS 1000
/* A driver that exits closes its terminal a moment before its exit is reaped. */
#define INSTANCE_ORPHAN_MS 500

static void instance_remember_noise(struct instance *in, const char *buf, size_t len)
{
	if (len >= INSTANCE_NOISE_TAIL) {
		memcpy(in->noise, buf + len - INSTANCE_NOISE_TAIL, INSTANCE_NOISE_TAIL);
		in->noise_len = INSTANCE_NOISE_TAIL;
	} else {
		size_t keep = in->noise_len + len > INSTANCE_NOISE_TAIL ? INSTANCE_NOISE_TAIL - len
									: in->noise_len;
		memmove(in->noise, in->noise + in->noise_len - keep, keep);
		memcpy(in->noise + keep, buf, len);
		in->noise_len = keep + len;
	}
	in->noise[in->noise_len] = '\0';
}

/* The last line the terminal said outside frames, for error messages such as
 * "python3: not found" from a remote shell, not the echo of the boot. */
static void instance_noise_line(const struct instance *in, char *buf, size_t buflen)
{
	size_t end = in->noise_len;
	buf[0] = '\0';
	while (end > 0) {
		while (end > 0 && strchr("\r\n ", in->noise[end - 1]))
			end--;
		size_t start = end;
		while (start > 0 && in->noise[start - 1] != '\n' && in->noise[start - 1] != '\r')
			start--;
		size_t n = end - start;
		/* Echoed boot lines are long runs of base64 (and the bell a full
		 * canonical line rings); a short word is someone's message. */
		bool echo = n >= 16;
		for (size_t i = start; i < end && echo; i++)
			echo = isalnum((unsigned char)in->noise[i]) ||
			       strchr("+/=\a", in->noise[i]);
		/* (and the relay's own handshake lines, "PTYBOX/1 NONCE?": ours) */
		if (n >= 9 && memcmp(in->noise + start, "PTYBOX/1 ", 9) == 0)
			echo = true;
		if (!echo && n > 0) {
			n = n < buflen - 1 ? n : buflen - 1;
			for (size_t i = 0; i < n; i++) {
				unsigned char c = (unsigned char)in->noise[start + i];
				buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
			}
			buf[n] = '\0';
			return;
		}
		end = start;
	}
}

#define INSTANCE_SHUTDOWN_MS 500

static void instance_describe_exit(struct instance *in, char *why, size_t len)
{
	const char *reason = in->transport ? transport_death_reason(in->transport) : NULL;
	int st = in->wstatus;
	if (in->boot_late) /* our deadline, not a signal from nowhere */
		snprintf(why, len, "did not start within %g s (the boot deadline)",
			 (double)in->boot_ms / 1000);
	else if (in->setup_error[0])
		snprintf(why, len, "%s", in->setup_error);
	else if (in->terminal_lost && !reason && in->ready_ns)
		snprintf(why, len,
			 "its terminal closed while it ran (its code closed or replaced "
			 "the driver's terminal fd); killed");
	else if (in->terminal_lost && !reason)
		snprintf(why, len, "its terminal closed before the driver was ready; killed");
	else if (!in->child_exited)
		snprintf(why, len, "killed");
	else if (reason)
		snprintf(why, len, "%s", reason);
	else
		protocol_describe_exit(st, why, len);
}

static void instance_scan_cb(void *ctx, enum frame_event ev, const char *data, size_t len)
{
	struct instance *in = ctx;
	switch (ev) {
	case FRAME_EVENT_NOISE: instance_remember_noise(in, data, len); break;
	case FRAME_EVENT_PAYLOAD:
		if (in->state == I_WAIT_READY) {
			struct protocol_frame f;
			if (protocol_parse_frame(data, len, &f) == 0) {
				bool ready = f.type == FRAME_READY;
				if (ready && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
						     f.root, "guarded")))
					log_to(in->log,
					       "instance %d: the relay could not make itself "
					       "non-dumpable: its kernel may read it",
					       (int)in->pty.pid);
				protocol_frame_free(&f);
				if (ready) {
					admit_release(&in->ticket); /* the next may boot */
					in->state = I_READY;
					in->ready_ns = uv_hrtime();
					uv_timer_stop(&in->timer);
					log_to(in->log, "instance %d: ready in %.1f ms",
					       (int)in->pty.pid,
					       (double)(in->ready_ns - in->started_ns) / 1e6);
					in->cb->on_ready(in);
				}
			}
		} else if (in->state == I_READY || in->state == I_DYING) {
			in->cb->on_frame(in, data, len);
		}
		break;
	case FRAME_EVENT_BINARY:
	case FRAME_EVENT_BINARY_Z:
		if ((in->state == I_READY || in->state == I_DYING) && in->cb->on_binary)
			in->cb->on_binary(in, data, len, ev == FRAME_EVENT_BINARY_Z);
		break;
	case FRAME_EVENT_OVERSIZE:
		log_to(in->log, "instance: dropped an oversize frame of %zu bytes", len);
		if (in->cb->on_oversize)
			in->cb->on_oversize(in, len);
		break;
	}
}

/* Looks for a boot prompt in unframed output; returns how many bytes of buf
 * it consumed. The prompts' first letter occurs once in them, so a mismatch
 * restarts cleanly. */
static size_t instance_match_prompt(struct instance *in, const char *prompt, const char *buf,
				    size_t len, bool *found)
{
	size_t plen = strlen(prompt), i = 0;
	while (i < len && in->prompt_matched < plen) {
		if (buf[i] == prompt[in->prompt_matched])
			in->prompt_matched++;
		else
			in->prompt_matched = buf[i] == prompt[0];
		i++;
	}
	instance_remember_noise(in, buf, i);
	*found = in->prompt_matched == plen;
	if (*found)
		in->prompt_matched = 0;
	return i;
}

/* Keeps the boot prompt's line up to its newline (carriage returns left
 * out); returns how many bytes of buf it consumed. A line longer than any
 * magic is done at once, and kept as empty: the source goes. */
static size_t instance_read_boot_rest(struct instance *in, const char *buf, size_t len, bool *done)
{
	size_t i = 0;
	*done = false;
	while (i < len && !*done) {
		char c = buf[i++];
		if (c == '\n') {
			*done = true;
		} else if (in->boot_rest_len == sizeof(in->boot_rest)) {
			in->boot_rest_len = 0;
			*done = true;
		} else if (c != '\r') {
			in->boot_rest[in->boot_rest_len++] = c;
		}
	}
	instance_remember_noise(in, buf, i);
	return i;
}

/* The driver goes as code compiled at build time when the interpreter runs
 * the same bytecode (its magic is the one the code was compiled under), else
 * as source: a remote host may run any Python. */
static int instance_send_driver(struct instance *in)
{
	bool code = ptybox_driver_code_len > 0 &&
		    protocol_boot_code_fits(in->boot_rest, in->boot_rest_len, ptybox_driver_magic);
	/* The language rides on the form line: the relay knows it before it
	 * forks its first kernel, at no extra round trip. */
	char form[PROTOCOL_BOOT_REST_MAX + 32];
	int rc = lang_boot_form(in->lang, code ? ptybox_driver_magic : PROTOCOL_BOOT_SOURCE, form,
				sizeof(form));
	if (rc < 0)
		return rc;
	const unsigned char *driver = ptybox_driver_py;
	size_t driver_len = ptybox_driver_py_len;
	if (code && ptybox_driver_code_python_len > 0 &&
	    (!in->lang || strcmp(in->lang, LANG_DEFAULT) == 0)) {
		driver = ptybox_driver_code_python;
		driver_len = ptybox_driver_code_python_len;
	} else if (code) {
		driver = ptybox_driver_code;
		driver_len = ptybox_driver_code_len;
	}
	char *boot;
	size_t boot_len;
	rc = protocol_boot_lines(form, driver, driver_len, &boot, &boot_len);
	if (rc < 0)
		return rc;
	log_to(in->log, "instance %d: %s%.*s: sending the %s driver as %s", (int)in->pty.pid,
	       PROTOCOL_BOOT_PROMPT, (int)in->boot_rest_len, in->boot_rest, in->lang,
	       code ? "compiled code" : "source");
	return pty_write_take(&in->pty, boot, boot_len);
}

static void instance_settle(struct instance *in);
static void instance_setup_cb(uv_poll_t *h, int status, int events);

static void instance_drain_cb(uv_timer_t *t)
{
	struct instance *in = t->data;
	/* Something the code started still holds the terminal; stop waiting. */
	log_to(in->log, "instance %d: no hang-up within %d ms", (int)in->pty.pid,
	       INSTANCE_DRAIN_MS);
	in->hung_up = true;
	instance_settle(in);
}

static void instance_killed(struct instance *in);
static void instance_kill_all(struct instance *in);
static void instance_maybe_free(struct instance *in);

/* In a worker of libuv's pool: what may wait seconds (a sandbox's processes
 * dying, its cgroups going) waits there, not on the loop with every other
 * session on it. Touches only the transport, which the loop leaves alone
 * meanwhile. */
static void instance_work_cb(uv_work_t *w)
{
	struct instance *in = w->data;
	if (in->work_free)
		transport_free(in->transport);
	else
		transport_kill(in->transport, in->pty.pid, true);
}

static void instance_finish(struct instance *in)
{
	frame_scanner_free(&in->scanner);
	log_unref(in->log);
	void (*cb)(void *) = in->closed_cb;
	void *data = in->closed_data;
	free(in);
	if (cb)
		cb(data);
}

static void instance_after_work_cb(uv_work_t *w, int status)
{
	struct instance *in = w->data;
	in->work_busy = false;
	if (in->work_free) {
		in->transport = NULL;
		instance_finish(in);
	} else if (in->kill_again) {
		in->kill_again = false;
		instance_kill_all(in);
	} else {
		instance_killed(in);
	}
}

static void instance_queue_work(struct instance *in, bool free_it)
{
	in->work_busy = true;
	in->work_free = free_it;
	in->work.data = in;
	uv_queue_work(in->loop, &in->work, instance_work_cb, instance_after_work_cb);
}

/* Every process of the transport gone. A remote transport's kill is two
 * signals, done at once; the local sandbox's waits for its namespace to
 * empty, so a worker does it (with the pidfd it holds it never signals a
 * pid that is someone else's by then). */
static void instance_kill_all(struct instance *in)
{
	if (!transport_kill_waits(in->transport)) {
		transport_kill(in->transport, in->pty.pid, in->child_exited);
		instance_killed(in);
	} else if (in->work_busy) {
		in->kill_again = true; /* what forked since the running kill began */
	} else {
		instance_queue_work(in, false);
	}
}

static void instance_killed(struct instance *in)
{
	if (in->state != I_CLOSING || in->shutting_down)
		return;
	in->kill_done = true;
	instance_maybe_free(in);
}

void instance_kill(struct instance *in)
{
	if (in->state >= I_DYING || !in->started)
		return;
	in->state = I_DYING;
	instance_kill_all(in);
	uv_timer_stop(&in->timer);
	uv_timer_start(&in->timer, instance_drain_cb, INSTANCE_DRAIN_MS, 0);
}

static void instance_pty_data(struct pty *p, const char *buf, size_t len)
{
	struct instance *in = p->data;
	bool found;
	size_t used;
	if (in->state == I_BOOT) {
		used = instance_match_prompt(in, PROTOCOL_BOOT_PROMPT, buf, len, &found);
		buf += used;
		len -= used;
		if (!found)
			return;
		in->state = I_BOOT_MAGIC;
		in->boot_rest_len = 0;
	}
	if (in->state == I_BOOT_MAGIC) {
		used = instance_read_boot_rest(in, buf, len, &found);
		buf += used;
		len -= used;
		if (!found)
			return;
		int rc = instance_send_driver(in);
		if (rc < 0) {
			log_to(in->log, "instance: send the driver: %s", strerror(-rc));
			instance_kill(in);
			return;
		}
		in->state = I_HANDSHAKE;
	}
	if (in->state == I_HANDSHAKE) {
		used = instance_match_prompt(in, PROTOCOL_NONCE_PROMPT, buf, len, &found);
		buf += used;
		len -= used;
		if (!found)
			return;
		char line[sizeof(in->nonce) + 1];
		snprintf(line, sizeof(line), "%s\n", in->nonce);
		pty_write(&in->pty, line, strlen(line));
		in->state = I_WAIT_READY;
	}
	if (in->state != I_CLOSING)
		frame_scanner_feed(&in->scanner, buf, len, instance_scan_cb, in);
}

/* Both the child's exit and the terminal's hang-up are in: the death is settled. */
static void instance_settle(struct instance *in)
{
	if (in->state != I_DYING || !in->child_exited || !in->hung_up)
		return;
	uv_timer_stop(&in->timer);
	frame_scanner_finish(&in->scanner, instance_scan_cb, in);
	/* The child is gone, so its set-up verdict is complete: take it now. */
	if (!uv_is_closing((uv_handle_t *)&in->setup))
		instance_setup_cb(&in->setup, 0, UV_READABLE);
	bool during_boot = in->ready_ns == 0;
	char why[512], line[256] = "";
	instance_describe_exit(in, why, sizeof(why));
	if (during_boot && !in->setup_error[0])
		instance_noise_line(in, line, sizeof(line));
	if (line[0]) {
		size_t n = strlen(why);
		snprintf(why + n, sizeof(why) - n, ": %s", line);
	}
	in->state = I_DEAD;
	admit_release(&in->ticket);
	log_to(in->log, "instance %d: dead (%s)", (int)in->pty.pid, why);
	in->cb->on_dead(in, why, during_boot);
}

static void instance_orphan_cb(uv_timer_t *t)
{
	struct instance *in = t->data;
	/* Hung up, yet alive: nothing can reach it any more, and it may never notice. */
	log_to(in->log, "instance %d: terminal hung up %d ms ago, still running", (int)in->pty.pid,
	       INSTANCE_ORPHAN_MS);
	in->terminal_lost = true;
	instance_kill(in);
}

static void instance_pty_hangup(struct pty *p)
{
	struct instance *in = p->data;
	in->hung_up = true;
	if (in->state < I_DYING && !in->child_exited) {
		uv_timer_stop(&in->timer);
		uv_timer_start(&in->timer, instance_orphan_cb, INSTANCE_ORPHAN_MS, 0);
		return;
	}
	instance_settle(in);
}

static void instance_exited(struct instance *in)
{
	if (in->state == I_CLOSING)
		return;
	if (in->state < I_DYING) {
		pty_drain(&in->pty); /* the tail it wrote before it went */
		instance_kill(in);   /* and whatever it left behind */
	}
	instance_settle(in);
}

static void instance_exited_cb(uv_timer_t *t)
{
	instance_exited(t->data);
}

static void instance_close_kill(struct instance *in);

static void instance_pty_exit(struct pty *p, int wstatus)
{
	struct instance *in = p->data;
	in->child_exited = true;
	in->wstatus = wstatus;
	log_to(in->log, "instance %d: exited, status 0x%x", (int)p->pid, wstatus);
	if (in->state == I_CLOSING) {
		if (in->shutting_down) /* the relay ended when asked: on to the kill */
			instance_close_kill(in);
		return;
	}
	/* An exit seen by pty_spawn itself (a transport that fails at once) is
	 * handled once instance_start has set everything up, on the next loop
	 * turn: its timer did not exist yet, nor did its caller have it. */
	if (in->started)
		instance_exited(in);
}

/* The last step, once every process is gone, the child reaped and every
 * handle closed: the transport goes (off the loop when it removes cgroups),
 * then the memory, then the owner's callback. */
static void instance_maybe_free(struct instance *in)
{
	if (!in->kill_done || in->open_handles > 0 || in->work_busy)
		return;
	in->kill_done = false; /* (once) */
	if (in->transport && transport_kill_waits(in->transport)) {
		instance_queue_work(in, true);
		return;
	}
	transport_free(in->transport);
	in->transport = NULL;
	instance_finish(in);
}

static void instance_handle_closed(struct instance *in)
{
	--in->open_handles;
	instance_maybe_free(in);
}

static void instance_pty_closed(struct pty *p)
{
	instance_handle_closed(p->data);
}

static void instance_timer_closed_cb(uv_handle_t *h)
{
	instance_handle_closed(h->data);
}

static void instance_setup_closed_cb(uv_handle_t *h)
{
	struct instance *in = h->data;
	close(in->setup_fd);
	in->setup_fd = -1;
	instance_handle_closed(in);
}

/* The set-up pipe: EOF when the child exec'd, else one line saying why it
 * could not (it then exits 125, and its death carries the line). */
static void instance_setup_cb(uv_poll_t *h, int status, int events)
{
	struct instance *in = h->data;
	size_t have = strlen(in->setup_error);
	ssize_t n = read(in->setup_fd, in->setup_error + have, sizeof(in->setup_error) - 1 - have);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		in->setup_error[have + (size_t)n] = '\0';
		in->setup_error[strcspn(in->setup_error, "\n")] = '\0';
		if (have + (size_t)n < sizeof(in->setup_error) - 1)
			return;
	}
	if (in->setup_error[0])
		log_to(in->log, "instance %d: set-up failed: %s", (int)in->pty.pid,
		       in->setup_error);
	uv_poll_stop(h);
	uv_close((uv_handle_t *)h, instance_setup_closed_cb);
}

static const struct pty_callbacks instance_pty_callbacks = {
	.on_data = instance_pty_data,
	.on_hangup = instance_pty_hangup,
	.on_exit = instance_pty_exit,
	.on_closed = instance_pty_closed,
};

static void instance_boot_timeout_cb(uv_timer_t *t)
{
	struct instance *in = t->data;
	log_to(in->log, "instance %d: no ready within %llu ms", (int)in->pty.pid,
	       (unsigned long long)in->boot_ms);
	/* Kill it; its death says what the terminal last said. */
	in->boot_late = true;
	instance_kill(in);
}

/* Forks the transport's child on a PTY and arms the boot deadline: the
 * start proper, once admitted. */
static int instance_spawn(struct instance *in, char *err, size_t errlen)
{
	int rc = pty_spawn(&in->pty, in->loop, in->transport, 120, 40, &instance_pty_callbacks, in,
			   &in->setup_fd, err, errlen);
	if (rc < 0)
		return rc;
	in->pty.log = in->log;
	in->state = I_BOOT;
	in->started_ns = uv_hrtime();
	uv_timer_init(in->loop, &in->timer);
	in->timer.data = in;
	uv_poll_init(in->loop, &in->setup, in->setup_fd);
	in->setup.data = in;
	uv_poll_start(&in->setup, UV_READABLE, instance_setup_cb);
	in->open_handles = 3; /* the PTY (its poll and its child), the timer, the set-up pipe */
	in->started = true;
	if (in->child_exited)
		uv_timer_start(&in->timer, instance_exited_cb, 0, 0);
	else if (in->boot_ms)
		uv_timer_start(&in->timer, instance_boot_timeout_cb, in->boot_ms, 0);
	return 0;
}

/* Its turn came (from the gate's timer): a spawn that fails now is told as
 * a death during boot. */
static void instance_admitted_cb(struct admit_ticket *t)
{
	struct instance *in = (struct instance *)((char *)t - offsetof(struct instance, ticket));
	char err[sizeof(in->setup_error)];
	if (instance_spawn(in, err, sizeof(err)) == 0)
		return;
	admit_release(t);
	snprintf(in->setup_error, sizeof(in->setup_error), "%s", err);
	in->state = I_DEAD;
	in->cb->on_dead(in, err, true);
}

int instance_start(uv_loop_t *loop, const struct transport_options *topts, size_t max_payload,
		   double boot_timeout, const struct instance_callbacks *cb, void *data,
		   struct log *log, struct instance **out, char *err, size_t errlen)
{
	struct instance *in = calloc(1, sizeof(*in));
	if (!in) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	in->loop = loop;
	in->cb = cb;
	in->data = data;
	in->log = log_ref(log);
	in->started_ns = uv_hrtime();
	in->boot_ms = options_seconds_ms(boot_timeout);
	in->lang = topts->lang ? topts->lang : LANG_DEFAULT;
	int rc = protocol_make_nonce(in->nonce, sizeof(in->nonce));
	if (rc == 0)
		rc = frame_scanner_init(&in->scanner, in->nonce, max_payload);
	if (rc < 0) {
		snprintf(err, errlen, "session set-up: %s", strerror(-rc));
		goto fail;
	}
	rc = transport_new(topts, &in->transport, err, errlen);
	if (rc < 0)
		goto fail;
	in->state = I_QUEUED;
	rc = admit_request(loop, &in->ticket, instance_admitted_cb);
	if (rc == -EAGAIN)
		snprintf(err, errlen,
			 "%d interpreters wait to start already (the boot queue's limit); "
			 "try again later",
			 ADMIT_QUEUE_CAP);
	else if (rc < 0)
		snprintf(err, errlen, "out of memory");
	else if (rc == 0 && (rc = instance_spawn(in, err, errlen)) < 0)
		admit_release(&in->ticket);
	if (rc < 0)
		goto fail;
	*out = in;
	return 0;
fail:
	transport_free(in->transport);
	frame_scanner_free(&in->scanner);
	log_unref(in->log);
	free(in);
	return rc;
}

void instance_adopt(struct instance *in, const struct instance_callbacks *cb, void *data,
		    struct log *log)
{
	in->cb = cb;
	in->data = data;
	log_ref(log);
	log_unref(in->log);
	in->log = in->pty.log = log;
}

int instance_write(struct instance *in, char *buf, size_t len)
{
	if (in->state != I_READY) {
		free(buf);
		return -EPIPE;
	}
	return pty_write_take(&in->pty, buf, len);
}

int instance_interrupt(struct instance *in, uint64_t id)
{
	if (in->state != I_READY)
		return -EPIPE;
	char *line;
	size_t len;
	int rc = protocol_interrupt_line(id, &line, &len);
	return rc < 0 ? rc : pty_write_take(&in->pty, line, len);
}

/* A ready relay is asked to end first: it kills its kernel and waits for it,
 * so that no kernel outlives ptybox (the kernel is in a session of its own,
 * out of reach of the transport's kill). 0 when the request went out whole
 * (straight to the master, ahead of nothing: the queue is dropped). */
static int instance_send_shutdown(struct instance *in)
{
	static const char json[] = "{\"op\":\"shutdown\"}";
	char line[64];
	size_t n = sodium_base64_ENCODED_LEN(sizeof(json) - 1, sodium_base64_VARIANT_URLSAFE);
	sodium_bin2base64(line, sizeof(line), (const unsigned char *)json, sizeof(json) - 1,
			  sodium_base64_VARIANT_URLSAFE);
	line[n - 1] = '\n';
	return write(in->pty.master, line, n) == (ssize_t)n ? 0 : -EIO;
}

/* Bounded: a relay that does not end within INSTANCE_SHUTDOWN_MS is killed. */
static void instance_shutdown_late_cb(uv_timer_t *t)
{
	struct instance *in = t->data;
	log_to(in->log, "instance %d: no exit within %d ms of shutdown; killing", (int)in->pty.pid,
	       INSTANCE_SHUTDOWN_MS);
	instance_close_kill(in);
}

/* Closing, second step: no more I/O; kill (unless a remote transport's
 * child already ended: its group is gone with it); the rest follows from the
 * kill's end, the reap and the handles' close callbacks. */
static void instance_close_kill(struct instance *in)
{
	in->shutting_down = false;
	uv_timer_stop(&in->timer);
	pty_close(&in->pty);
	uv_close((uv_handle_t *)&in->timer, instance_timer_closed_cb);
	if (!uv_is_closing((uv_handle_t *)&in->setup))
		uv_close((uv_handle_t *)&in->setup, instance_setup_closed_cb);
	if (in->child_exited && !transport_kill_waits(in->transport) && !in->work_busy)
		instance_killed(in);
	else
		instance_kill_all(in);
}

void instance_close(struct instance *in)
{
	if (in->state == I_CLOSING)
		return;
	admit_release(&in->ticket);
	if (!in->started) { /* never forked: nothing to kill, no handle */
		in->state = I_CLOSING;
		transport_free(in->transport);
		in->transport = NULL;
		instance_finish(in);
		return;
	}
	bool polite = in->state == I_READY && !in->child_exited && in->pty.master >= 0;
	in->state = I_CLOSING;
	uv_timer_stop(&in->timer);
	if (polite && instance_send_shutdown(in) == 0) {
		in->shutting_down = true;
		uv_timer_start(&in->timer, instance_shutdown_late_cb, INSTANCE_SHUTDOWN_MS, 0);
		return;
	}
	instance_close_kill(in);
}

void instance_close_notify(struct instance *in, void (*cb)(void *data), void *data)
{
	in->closed_cb = cb;
	in->closed_data = data;
	instance_close(in);
}
