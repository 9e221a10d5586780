/*
 * prompt.c - the prompt of repl and attach (prompt.h).
 *
 * One loop, poll(2) on three fds: the server's replies and events, standard
 * input while the user edits, and a pipe the signal handlers write to. A
 * client has nobody else to serve, so the two questions a prompt asks (is
 * this block complete? what completes this word?) wait for their answer
 * right there, up to PROMPT_ASK_MS: the server answers within 5 s whatever
 * the interpreter does, and never behind a snippet. What else comes
 * meanwhile is queued and shown after.
 *
 *   STARTING ──session up──> EDIT ──block complete──> RUN ──its result──> EDIT
 *                             └──── Ctrl-D, Ctrl-\ ────> LEAVE
 *
 * Editing is libedit's, through its readline callback interface: the handler
 * is installed only while the user edits; while a block runs the terminal is
 * in its own (cooked) mode, so ^C is a SIGINT, which interrupts the block.
 * Everything shown comes from the session's watch events, ours and other
 * clients' executions alike; output that comes while the user edits is
 * printed above the prompt, which is drawn again.
 *
 * A script on standard input (not a terminal) runs block by block as a
 * script would: a new statement starts at each line at column 0 that does
 * not continue the one before (else:, except:, a bracket still open), so a
 * def needs no blank line after it; nothing is prompted.
 */
#define _GNU_SOURCE
#include "prompt.h"
#include "prompt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <editline/readline.h>

#include "cli.h"
#include "cli_render.h"
#include "linebuf.h"
#include "prompt_text.h"
#include "protocol.h"
#include "record.h"
#include "transcript.h"

struct prompt *prompt_current; /* libedit's callbacks take no data */
static int prompt_sig_w = -1;

static void prompt_on_signal(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;
	if (prompt_sig_w >= 0 && write(prompt_sig_w, &b, 1) < 0) {
		/* (full: a signal is pending already) */
	}
	errno = e;
}

static uint64_t prompt_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* What the prompt showed passes here: the seam where a recorder (--record,
 * record.c) is to be fed, with the prompt and code as typed and the output
 * as shown. */
static void prompt_shown(struct prompt *p, const char *kind, const char *text, size_t len)
{
	if (!p->rec)
		return;
	if (strcmp(kind, "stdout") == 0 || strcmp(kind, "stderr") == 0) {
		transcript_output(&p->ts, text, len);
	} else if (strcmp(kind, "screen") == 0) {
		record_output(p->rec, text, len, true);
		record_output(p->rec, "\n", 1, false);
	}
	/* (the code comes with its execution's event: prompt_event) */
}

static void prompt_record_warn(void *data, const char *message)
{
	cli_error("warning: %s", message);
}

/* The most of an execution's code a recording shows after its prompt (a
 * terminal would scroll the rest away), as run and the server's screen do. */
#define PROMPT_RECORD_CODE ((size_t)16 << 10)

void prompt_out(const char *s)
{
	cli_render_out(1, s, strlen(s));
}

/* ---- the server ---- */

static void prompt_queue_line(void *data, const char *line, size_t len, bool too_long)
{
	struct prompt *p = data;
	if (too_long)
		return;
	cJSON *o = cJSON_ParseWithLength(line, len);
	if (!o)
		return;
	if (p->qn == p->qcap) {
		size_t ncap = p->qcap ? p->qcap * 2 : 64;
		cJSON **nq = realloc(p->q, ncap * sizeof(*nq));
		if (!nq)
			abort(); /* out of memory is fatal (STYLE.md) */
		p->q = nq;
		p->qcap = ncap;
	}
	p->q[p->qn++] = o;
}

/* Reads what the server sent (blocking until something came, or its end). */
static void prompt_read(struct prompt *p)
{
	if (p->eof)
		return;
	if (linebuf_reserve(&p->lines, 64 * 1024) < 0) {
		p->eof = true;
		return;
	}
	ssize_t n = read(p->cfg->rfd, p->lines.buf + p->lines.len, 64 * 1024);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		linebuf_finish(&p->lines, prompt_queue_line, p);
		p->eof = true;
		return;
	}
	linebuf_commit(&p->lines, (size_t)n, prompt_queue_line, p);
}

uint64_t prompt_send(struct prompt *p, cJSON *o)
{
	uint64_t id = ++p->next_id;
	protocol_json_add_uint(o, "id", id);
	cJSON_AddStringToObject(o, "session", p->cfg->session);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	size_t n = s ? strlen(s) : 0;
	char *line = s ? malloc(n + 1) : NULL;
	int rc = -ENOMEM;
	if (line) {
		memcpy(line, s, n);
		line[n] = '\n';
		rc = cli_write_all(p->cfg->wfd, line, n + 1);
	}
	free(line);
	cJSON_free(s);
	return rc < 0 ? 0 : id;
}

cJSON *prompt_request(const char *op)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	return o;
}

uint64_t prompt_uint(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

/* The reply to request id, waited for up to ms (what else comes stays
 * queued), or NULL. */
cJSON *prompt_wait(struct prompt *p, uint64_t id, int ms)
{
	uint64_t deadline = prompt_now_ms() + (uint64_t)ms;
	for (;;) {
		for (size_t i = 0; i < p->qn; i++) {
			cJSON *o = p->q[i];
			if (prompt_uint(o, "id") == id &&
			    !cJSON_GetObjectItemCaseSensitive(o, "event")) {
				memmove(p->q + i, p->q + i + 1, (p->qn - i - 1) * sizeof(*p->q));
				p->qn--;
				return o;
			}
		}
		uint64_t now = prompt_now_ms();
		/* (past PROMPT_QUEUE_MAX lines of others' output, the answer is
		 * given up on: it would come after them) */
		if (!id || p->eof || now >= deadline || p->qn >= PROMPT_QUEUE_MAX)
			return NULL;
		struct pollfd fd = {.fd = p->cfg->rfd, .events = POLLIN};
		if (poll(&fd, 1, (int)(deadline - now)) > 0)
			prompt_read(p);
	}
}

/* ---- showing ---- */

/* Output that comes while the user edits goes above the prompt: the line is
 * cleared first and drawn again after. */
static void prompt_async_begin(struct prompt *p)
{
	if (p->editing)
		prompt_out("\r\033[K");
}

static void prompt_async_end(struct prompt *p)
{
	if (!p->editing)
		return;
	if (!p->col0)
		prompt_out("\n");
	p->col0 = true;
	rl_forced_update_display();
}

static void prompt_spin_stop(struct prompt *p)
{
	if (p->spinning)
		cli_write_all(2, "\r\033[K", 4);
	p->spinning = false;
}

static void prompt_spin(struct prompt *p)
{
	static const char frames[] = "|/-\\";
	if (!p->spin || p->state != P_STARTING ||
	    prompt_now_ms() - p->start_ms < PROMPT_SPIN_AFTER_MS)
		return;
	char line[96];
	int n = snprintf(line, sizeof(line), "\r%c starting session '%.40s'...",
			 frames[p->spin_frame++ % 4], p->cfg->session);
	cli_write_all(2, line, (size_t)n);
	p->spinning = true;
}

/* A block of code as the prompt shows it: ">>> " and "... " before its lines. */
static void prompt_show_code(struct prompt *p, const char *code, const char *who)
{
	char head[128];
	snprintf(head, sizeof(head), "%s[%s]%s\n", p->color ? "\033[2m" : "", who,
		 p->color ? "\033[0m" : "");
	prompt_out(head);
	const char *s = code;
	for (bool first = true; *s; first = false) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		prompt_out(first ? ">>> " : "... ");
		cli_render_text(&p->r, 1, s, n);
		cli_render_text_end(&p->r, 1);
		prompt_out("\n");
		s += n + (nl ? 1 : 0);
	}
	prompt_shown(p, "input", code, strlen(code));
}

static void prompt_stream(struct prompt *p, const char *name, const char *text)
{
	size_t len = strlen(text);
	if (!len)
		return;
	bool err = strcmp(name, "stderr") == 0;
	if (err && p->color)
		cli_render_out(2, "\033[31m", 5);
	cli_render_stream(&p->r, name, text, len);
	if (err && p->color) {
		cli_render_text_end(&p->r, 2);
		cli_render_out(2, "\033[0m", 4);
	}
	p->col0 = text[len - 1] == '\n';
	prompt_shown(p, name, text, len);
}

/* ---- editing ---- */

static void prompt_on_line(char *line);

void prompt_edit(struct prompt *p)
{
	if (!p->tty) {
		p->state = P_EDIT;
		return;
	}
	if (!p->col0)
		prompt_out("\n");
	p->col0 = true;
	p->state = P_EDIT;
	p->editing = true;
	/* (from the run mode straight to libedit's: no moment in between when a
	 * key typed ahead would be echoed, or a ^D taken as the end of a line;
	 * libedit keeps the cooked mode it saw at its start) */
	/* (keys already waiting are a paste, which brings its own indentation:
	 * ours too would put each pasted line deeper than the one before.
	 * Looked at before the prompt shows: a key typed after it, however
	 * soon, is typed, not pasted) */
	struct pollfd ahead = {.fd = 0, .events = POLLIN};
	bool pasted = prompt_keys_waiting(p) || poll(&ahead, 1, 0) != 0;
	rl_callback_handler_install(p->block_len ? "... " : ">>> ", prompt_on_line);
	p->tty_edit_saved = p->tty_saved && tcgetattr(0, &p->tty_edit) == 0;
	if (p->indent[0] && !pasted) {
		rl_insert_text(p->indent);
		prompt_out("\r");
		rl_forced_update_display();
	}
}

void prompt_tty_run(struct prompt *p)
{
	if (p->tty_saved)
		tcsetattr(0, TCSANOW, &p->tty_run);
}

static void prompt_edit_stop(struct prompt *p)
{
	if (p->editing)
		rl_callback_handler_remove();
	p->editing = false;
	prompt_tty_run(p);
}

void prompt_block_clear(struct prompt *p)
{
	p->block_len = 0;
	if (p->block)
		p->block[0] = '\0';
	p->indent[0] = '\0';
}

/* Appends line (and a newline before it, when the block has some). */
int prompt_block_add(struct prompt *p, const char *line, size_t n)
{
	size_t need = p->block_len + n + 2;
	if (need > PROMPT_BLOCK_MAX)
		return -E2BIG;
	if (need > p->block_cap) {
		size_t cap = p->block_cap ? p->block_cap : 256;
		while (cap < need)
			cap *= 2;
		char *b = realloc(p->block, cap);
		if (!b)
			abort();
		p->block = b;
		p->block_cap = cap;
	}
	if (p->block_len)
		p->block[p->block_len++] = '\n';
	memcpy(p->block + p->block_len, line, n);
	p->block_len += n;
	p->block[p->block_len] = '\0';
	return 0;
}

void prompt_submit(struct prompt *p)
{
	while (p->block_len &&
	       (p->block[p->block_len - 1] == '\n' || p->block[p->block_len - 1] == ' ' ||
		p->block[p->block_len - 1] == '\t'))
		p->block[--p->block_len] = '\0'; /* (the blank line that ended it) */
	if (!protocol_utf8_valid(p->block, p->block_len)) {
		cli_error("%s: the input is not valid UTF-8: not run", p->cfg->cmd);
		prompt_block_clear(p);
		prompt_edit(p);
		return;
	}
	cJSON *o = prompt_request("exec");
	cJSON_AddStringToObject(o, "code", p->block);
	cJSON_AddBoolToObject(o, "wait", 0);
	free(p->sent_code);
	p->sent_code = strdup(p->block);
	p->mine = 0;
	p->interrupt_due = false;
	p->exec_req = prompt_send(p, o);
	prompt_shown(p, "input", p->block, p->block_len);
	prompt_block_clear(p);
	p->state = p->exec_req ? P_RUN : P_LEAVE;
	p->col0 = true;
}

/* What the driver says of the block: "complete", "incomplete" (the indent
 * of the next line in indent) or "invalid"; its guess when it cannot say. */
static bool prompt_incomplete(struct prompt *p, const char *code, char *indent, size_t ilen)
{
	cJSON *o = prompt_request("is_complete");
	cJSON_AddStringToObject(o, "code", code);
	cJSON *reply = prompt_wait(p, prompt_send(p, o), PROMPT_ASK_MS);
	const char *status = protocol_str(reply, "status");
	const char *in = protocol_str(reply, "indent");
	bool incomplete;
	if (status && strcmp(status, "unknown") != 0)
		incomplete = strcmp(status, "incomplete") == 0;
	else
		incomplete = prompt_text_guess_incomplete(code, strlen(code));
	if (indent)
		snprintf(indent, ilen, "%s", incomplete && in ? in : "");
	cJSON_Delete(reply);
	return incomplete;
}

static void prompt_on_line(char *line)
{
	struct prompt *p = prompt_current;
	/* (libedit has given the terminal back before it called us) */
	p->editing = false;
	rl_callback_handler_remove();
	prompt_tty_run(p);
	if (!line) { /* Ctrl-D */
		prompt_out("\n");
		p->state = P_LEAVE;
		return;
	}
	size_t n = strlen(line);
	bool blank = true;
	for (size_t i = 0; i < n; i++)
		if (line[i] != ' ' && line[i] != '\t')
			blank = false;
	if (!blank)
		add_history(line);
	prompt_shown(p, "line", line, n);
	if (blank && !p->block_len) {
		free(line);
		prompt_edit(p);
		return;
	}
	if (blank) { /* a blank line ends a block */
		free(line);
		prompt_submit(p);
		return;
	}
	if (prompt_block_add(p, line, n) < 0) {
		cli_error("%s: the block is over %zu MiB: dropped", p->cfg->cmd,
			  PROMPT_BLOCK_MAX >> 20);
		prompt_block_clear(p);
		free(line);
		prompt_edit(p);
		return;
	}
	free(line);
	if (prompt_incomplete(p, p->block, p->indent, sizeof(p->indent)))
		prompt_edit(p);
	else
		prompt_submit(p);
}

/* ---- a script on standard input ---- */

static char *prompt_script_line(struct prompt *p, size_t *n)
{
	if (p->ahead) {
		char *l = p->ahead;
		p->ahead = NULL;
		*n = strlen(l);
		return l;
	}
	char *l = NULL;
	size_t cap = 0;
	ssize_t got = getline(&l, &cap, stdin);
	if (got < 0) {
		free(l);
		return NULL;
	}
	while (got > 0 && (l[got - 1] == '\n' || l[got - 1] == '\r'))
		l[--got] = '\0';
	*n = (size_t)got;
	return l;
}

/* The next block of the script, sent; or the end of it. */
static void prompt_script_next(struct prompt *p)
{
	if (p->script_stop) {
		p->state = P_LEAVE;
		return;
	}
	for (;;) {
		size_t n;
		char *l = prompt_script_line(p, &n);
		if (!l) {
			if (p->block_len)
				prompt_submit(p);
			else
				p->state = P_LEAVE;
			return;
		}
		if (!p->block_len && prompt_text_blank(l, n)) {
			free(l);
			continue;
		}
		bool starts = p->block_len && n && l[0] != ' ' && l[0] != '\t' &&
			      !prompt_text_blank(l, n) && !prompt_text_continues(l, n);
		if (starts) {
			prompt_block_add(p, "", 0); /* (what a blank line would say) */
			bool more = prompt_incomplete(p, p->block, NULL, 0);
			p->block[--p->block_len] = '\0';
			if (!more) {
				p->ahead = l;
				prompt_submit(p);
				return;
			}
		}
		if (prompt_block_add(p, l, n) < 0) {
			cli_error("%s: a block over %zu MiB: not run", p->cfg->cmd,
				  PROMPT_BLOCK_MAX >> 20);
			free(l);
			p->state = P_LEAVE;
			p->status = CLI_EXIT_FAILED;
			return;
		}
		free(l);
	}
}

/* ---- what the server says ---- */

/* A picture the terminal got as its path: the recording gets the path too. */
static void prompt_on_picture(void *data, const char *path)
{
	struct prompt *p = data;
	if (p->rec)
		transcript_display(&p->ts, path);
}

static void prompt_result(struct prompt *p, cJSON *o)
{
	uint64_t exec = prompt_uint(o, "exec");
	bool ours = exec && exec == p->mine;
	prompt_async_begin(p);
	if (!p->col0)
		prompt_out("\n");
	p->col0 = true;
	int ok = cli_render_result_json(&p->r, o);
	prompt_async_end(p);
	if (p->rec) { /* (after: a value shown as a picture's path is recorded so) */
		cJSON *value = p->r.value_pictured
				       ? cJSON_DetachItemFromObjectCaseSensitive(o, "result")
				       : NULL;
		transcript_result_json(&p->ts, o);
		if (value)
			cJSON_AddItemToObject(o, "result", value);
		record_flush(p->rec);
	}
	if (!ours)
		return;
	if (ok != 1)
		p->failed++;
	p->mine = 0;
	p->exec_req = 0;
	if (p->state == P_RUN)
		prompt_edit(p);
}

static void prompt_event(struct prompt *p, cJSON *o, const char *event)
{
	uint64_t exec = prompt_uint(o, "exec");
	if (strcmp(event, "exec") == 0) {
		p->unended++;
		const char *code = protocol_str(o, "code");
		if (code && p->rec && p->state != P_STARTING) {
			size_t len = protocol_utf8_prefix(code, strlen(code), PROMPT_RECORD_CODE);
			record_exec(p->rec, exec, code, len);
			transcript_input(&p->ts, code, len);
		}
		if (p->exec_req && !p->mine && code && p->sent_code &&
		    strcmp(code, p->sent_code) == 0) {
			p->mine = exec; /* ours: shown as typed */
			return;
		}
		if (code && p->state != P_STARTING) {
			char who[64];
			snprintf(who, sizeof(who), "execution %llu, from another client",
				 (unsigned long long)exec);
			prompt_async_begin(p);
			prompt_show_code(p, code, who);
			p->col0 = true;
			prompt_async_end(p);
		}
	} else if (strcmp(event, "stream") == 0) {
		const char *name = protocol_str(o, "name"), *text = protocol_str(o, "text");
		if (name && text) {
			prompt_async_begin(p);
			prompt_stream(p, name, text);
			prompt_async_end(p);
		}
	} else if (strcmp(event, "display") == 0) {
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "at_end"))) {
			cli_render_display_at_end(&p->r, data); /* (after the value) */
			return;
		}
		prompt_async_begin(p);
		int pictured = cli_render_display(&p->r, data);
		p->col0 = true;
		prompt_async_end(p);
		if (p->rec && pictured != 1) /* (a picture: recorded as its path) */
			transcript_display(&p->ts, protocol_str(data, "text/plain"));
	} else if (strcmp(event, "result") == 0) {
		if (p->unended)
			p->unended--;
		prompt_result(p, o);
	} else if (strcmp(event, "started") == 0 || strcmp(event, "restarted") == 0) {
		if (p->state == P_STARTING) {
			prompt_spin_stop(p);
			prompt_edit(p);
		}
	} else if (strcmp(event, "died") == 0) {
		const char *why = protocol_str(o, "why");
		if (!p->unended) { /* (else the result of what ran says it) */
			prompt_async_begin(p);
			cli_render_message(&p->r, "", 0, why ? why : "the interpreter died");
			prompt_async_end(p);
		}
	} else if (strcmp(event, "killed") == 0 || strcmp(event, "dead") == 0) {
		const char *why = protocol_str(o, "why");
		prompt_spin_stop(p);
		prompt_async_begin(p);
		if (strcmp(event, "killed") == 0)
			cli_error("%s: session '%s' was killed", p->cfg->cmd, p->cfg->session);
		else
			cli_error("%s: session '%s' cannot start: %s", p->cfg->cmd, p->cfg->session,
				  why ? why : "its interpreter is dead");
		prompt_edit_stop(p);
		p->state = P_LEAVE;
		p->status = strcmp(event, "dead") == 0 ? CLI_EXIT_CANNOT_START : CLI_EXIT_FAILED;
	}
	(void)exec;
}

static void prompt_reply(struct prompt *p, cJSON *o)
{
	uint64_t id = prompt_uint(o, "id");
	const char *error = protocol_str(o, "error");
	const char *code = protocol_str(o, "code");
	if (id && id == p->capture_id) {
		const char *text = protocol_str(o, "text");
		if (text && !error) {
			size_t n = strlen(text);
			while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
				n--; /* (the screen's empty rows) */
			if (n) {
				cli_render_text(&p->r, 1, text, n);
				cli_render_text_end(&p->r, 1);
				prompt_out("\n");
				prompt_shown(p, "screen", text, n);
			}
		}
		return;
	}
	if (id && id == p->watch_id) {
		if (error) {
			prompt_spin_stop(p);
			cli_error("%s: %s", p->cfg->cmd, error);
			p->state = P_LEAVE;
			p->status = code && strcmp(code, "dead") == 0 ? CLI_EXIT_CANNOT_START
								      : CLI_EXIT_FAILED;
			return;
		}
		const char *st = protocol_str(o, "state");
		if (st && strcmp(st, "dead") == 0) {
			cli_error("%s: session '%s' is dead (its interpreter cannot start): "
				  "restart or kill it",
				  p->cfg->cmd, p->cfg->session);
			p->state = P_LEAVE;
			p->status = CLI_EXIT_CANNOT_START;
		} else if (!st || (strcmp(st, "starting") != 0 && strcmp(st, "restarting") != 0)) {
			prompt_edit(p);
		}
		return;
	}
	if (id && id == p->exec_req) {
		if (error) {
			prompt_async_begin(p);
			cli_error("%s: %s", p->cfg->cmd, error);
			p->exec_req = 0;
			p->failed++;
			if (p->state == P_RUN)
				prompt_edit(p);
		} else if (!p->mine) {
			p->mine = prompt_uint(o, "exec");
		}
		if (p->mine && p->interrupt_due) {
			p->interrupt_due = false;
			cJSON *i = prompt_request("interrupt");
			protocol_json_add_uint(i, "exec", p->mine);
			prompt_send(p, i);
		}
		return;
	}
	if (error && !id) { /* a notice of the server's */
		prompt_spin_stop(p);
		prompt_async_begin(p);
		cli_error("%s: %s", p->cfg->cmd, error);
		prompt_async_end(p);
		if (code && strcmp(code, "cannot_start") == 0) { /* (serve's own session) */
			prompt_edit_stop(p);
			p->state = P_LEAVE;
			p->status = CLI_EXIT_CANNOT_START;
		}
	}
}

static void prompt_handle(struct prompt *p, cJSON *o)
{
	const char *event = protocol_str(o, "event");
	if (event && prompt_uint(o, "id") == p->watch_id)
		prompt_event(p, o, event);
	else if (!event)
		prompt_reply(p, o);
}

/* ---- signals ---- */

/* The sandbox's terminal takes the size of ours (COLUMNS, LINES): at the
 * start and whenever the window changes. With several clients attached, the
 * last to change wins. */
static void prompt_resize(struct prompt *p)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row)
		return;
	cJSON *o = prompt_request("resize");
	cJSON_AddNumberToObject(o, "cols", ws.ws_col);
	cJSON_AddNumberToObject(o, "rows", ws.ws_row);
	prompt_send(p, o); /* (its reply is dropped: a size refused changes nothing) */
	if (p->rec && p->state != P_STARTING)
		record_resize(p->rec, ws.ws_col, ws.ws_row);
}

/* Continued (after ^Z or any SIGSTOP): the shell had the terminal in its
 * own mode meanwhile; ours again, and the line being edited drawn again. */
static void prompt_continue(struct prompt *p)
{
	prompt_bracketed(p, true);
	if (p->editing && p->tty_edit_saved)
		tcsetattr(0, TCSANOW, &p->tty_edit);
	else if (!p->editing)
		prompt_tty_run(p);
	if (p->editing) {
		prompt_out("\r\033[K");
		rl_forced_update_display();
	}
}

/* ^Z: the terminal as we found it while we are stopped (the shell's, for
 * the shell), then the stop itself, as SIGTSTP's default would. */
static void prompt_suspend(struct prompt *p)
{
	prompt_spin_stop(p);
	if (p->editing)
		prompt_out("\n"); /* (the line stays; the shell says "Stopped" below) */
	prompt_bracketed(p, false);
	if (p->tty_saved)
		tcsetattr(0, TCSANOW, &p->tty_orig);
	struct sigaction dfl = {.sa_handler = SIG_DFL}, ours;
	sigaction(SIGTSTP, &dfl, &ours);
	raise(SIGTSTP); /* (returns once continued: fg, bg, SIGCONT) */
	sigaction(SIGTSTP, &ours, NULL);
	prompt_continue(p); /* (a stop the kernel discarded sends no SIGCONT) */
}

static void prompt_signal(struct prompt *p, int sig)
{
	if (sig == SIGINT && p->state == P_RUN) {
		if (!p->tty)
			p->script_stop = true;
		if (p->mine) {
			cJSON *o = prompt_request("interrupt");
			protocol_json_add_uint(o, "exec", p->mine);
			prompt_send(p, o);
		} else {
			p->interrupt_due = true;
		}
	} else if (sig == SIGINT && p->state == P_EDIT && p->tty) {
		/* ^C at the prompt: the line and the block go */
		prompt_edit_stop(p);
		prompt_out("\n");
		prompt_block_clear(p);
		prompt_edit(p);
	} else if (sig == SIGINT && p->state == P_STARTING) {
		/* (a start that takes too long: ^C leaves, as Ctrl-D would) */
		prompt_spin_stop(p);
		p->state = P_LEAVE;
		p->status = 130;
	} else if (sig == SIGINT && !p->tty) {
		p->script_stop = true;
		p->state = P_LEAVE;
	} else if (sig == SIGTSTP) {
		prompt_suspend(p);
	} else if (sig == SIGCONT) {
		prompt_continue(p);
	} else if (sig == SIGWINCH) {
		prompt_resize(p);
		if (p->editing)
			rl_resize_terminal();
	} else if (sig == SIGQUIT || sig == SIGTERM || sig == SIGHUP) {
		/* Ctrl-\ detaches (attach) or leaves (repl), at the prompt and
		 * while code runs alike. */
		prompt_spin_stop(p);
		if (p->editing || p->state == P_RUN)
			prompt_out("\n");
		prompt_edit_stop(p);
		p->state = P_LEAVE;
		if (sig != SIGQUIT)
			p->status = 128 + sig;
	}
}

/* ---- the loop ---- */

/* One key to libedit, and a paste of lines it brought run. */
static void prompt_key(struct prompt *p)
{
	rl_callback_read_char();
	if (p->paste && p->editing && p->state == P_EDIT)
		prompt_on_paste(p);
	free(p->paste);
	p->paste = NULL;
}

int prompt_run(const struct prompt_config *cfg)
{
	struct prompt p = {.cfg = cfg, .col0 = true};
	p.tty = isatty(0) == 1;
	p.bracketed = p.tty && isatty(1) == 1;
	p.spin = isatty(2) == 1;
	p.color = isatty(1) == 1 && isatty(2) == 1 && !getenv("NO_COLOR");
	cli_render_init(&p.r, false, false, "execution");
	p.r.color = p.color;
	/* (before the terminal is ours: the probe for inline images reads its
	 * answer from it) */
	cli_pictures_init(&p.pictures, cfg->output_dir, !cfg->no_inline_images);
	p.r.pictures = &p.pictures;
	p.r.on_picture = prompt_on_picture;
	p.r.on_picture_data = &p;
	linebuf_init(&p.lines, PROMPT_MAX_LINE);
	if (cfg->record) {
		struct winsize ws = {0};
		char title[128], err[512];
		if (ioctl(1, TIOCGWINSZ, &ws) < 0 || !ws.ws_col || !ws.ws_row)
			ws = (struct winsize){.ws_col = 80, .ws_row = 24};
		snprintf(title, sizeof(title), "ptybox %s%s%.64s", cfg->cmd, cfg->attach ? " " : "",
			 cfg->attach ? cfg->session : "");
		struct record_config rc = {
			.path = cfg->record,
			.width = ws.ws_col,
			.height = ws.ws_row,
			.title = title,
			.max_bytes = cfg->record_max,
			.warn = prompt_record_warn,
		};
		if (record_open(&p.rec, &rc, err, sizeof(err)) < 0) {
			cli_error("%s: --record %s", cfg->cmd, err);
			linebuf_free(&p.lines);
			return CLI_EXIT_USAGE;
		}
		transcript_init(&p.ts, !getenv("NO_COLOR"), record_transcript_emit, p.rec);
	}
	prompt_current = &p;
	int sp[2];
	if (pipe2(sp, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_error("%s: %s", cfg->cmd, strerror(errno));
		return CLI_EXIT_FAILED;
	}
	prompt_sig_w = sp[1];
	static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT};
	enum { NSIGS = sizeof(sigs) / sizeof(sigs[0]) };
	struct sigaction sa = {.sa_handler = prompt_on_signal}, old[NSIGS];
	for (int i = 0; i < NSIGS; i++) {
		sigaction(sigs[i], &sa, &old[i]);
		if (sigs[i] == SIGTSTP && old[i].sa_handler == SIG_IGN)
			sigaction(SIGTSTP, &old[i], NULL); /* (no job control here) */
	}
	if (p.tty && tcgetattr(0, &p.tty_orig) == 0) {
		p.tty_saved = true;
		p.tty_run = p.tty_orig;
		p.tty_run.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		p.tty_run.c_lflag |= ISIG;
		p.tty_run.c_cc[VMIN] = 1;
		p.tty_run.c_cc[VTIME] = 0;
	}
	if (p.tty) {
		/* libedit reads multibyte keys only in a UTF-8 LC_CTYPE: without
		 * one, "é" typed was dropped. Everything past the prompt is UTF-8
		 * (JSON), so a C or unset locale is taken as C.UTF-8, as Python
		 * coerces it. */
		setlocale(LC_CTYPE, "");
		if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
			setlocale(LC_CTYPE, "C.UTF-8");
		rl_catch_signals = 0; /* (ours: the pipe above) */
		rl_catch_sigwinch = 0;
		rl_readline_name = "ptybox";
		rl_getc_function = prompt_getc; /* (before rl_initialize, which reads it) */
		rl_initialize();
		rl_add_defun("ptybox-complete", prompt_tab, '\t');
		/* (libedit calls a defun by the last key of its sequence) */
		rl_add_defun("ptybox-paste", prompt_paste, '~');
		rl_parse_and_bind("bind '\\e[200~' ptybox-paste");
		rl_add_defun("ptybox-eof", prompt_eof, 4);
		rl_add_defun("ptybox-leave", prompt_eof, 0x1c);
		using_history();
		if (cfg->history)
			prompt_history_load(cfg->history);
		prompt_tty_run(&p);
		prompt_bracketed(&p, true);
	}
	p.start_ms = prompt_now_ms();
	if (cfg->attach)
		p.capture_id = prompt_send(&p, prompt_request("capture"));
	p.watch_id = prompt_send(&p, prompt_request("watch"));
	prompt_resize(&p);
	if (!p.watch_id) {
		cli_error("%s: %s: the server closed the connection", cfg->cmd, cfg->where);
		p.state = P_LEAVE;
		p.status = CLI_EXIT_FAILED;
	}
	while (p.state != P_LEAVE) {
		while (p.qn && p.state != P_LEAVE) {
			cJSON *o = p.q[0];
			memmove(p.q, p.q + 1, --p.qn * sizeof(*p.q));
			prompt_handle(&p, o);
			cJSON_Delete(o);
		}
		if (p.state == P_LEAVE)
			break;
		if (p.eof) {
			prompt_spin_stop(&p);
			bool edited = p.editing; /* (the cursor after the prompt) */
			prompt_edit_stop(&p);
			if (!p.col0 || edited)
				prompt_out("\n");
			cli_error("%s: %s: the server closed the connection", cfg->cmd, cfg->where);
			p.status = p.state == P_STARTING ? CLI_EXIT_CANNOT_START : CLI_EXIT_FAILED;
			break;
		}
		if (p.state == P_EDIT && !p.tty) {
			prompt_script_next(&p);
			continue;
		}
		if (p.editing && p.state == P_EDIT && prompt_keys_waiting(&p)) {
			prompt_key(&p); /* (keys read with a paste's end, at most a buffer) */
			continue;
		}
		struct pollfd fds[3] = {
			{.fd = cfg->rfd, .events = POLLIN},
			{.fd = sp[0], .events = POLLIN},
			{.fd = p.editing ? 0 : -1, .events = POLLIN},
		};
		int timeout = p.state == P_STARTING && p.spin ? PROMPT_SPIN_MS : -1;
		int n = poll(fds, 3, timeout);
		if (n < 0 && errno != EINTR)
			break;
		prompt_spin(&p);
		if (n <= 0)
			continue;
		/* Read whatever poll said: a signal that came with the keys after it
		 * (^C, then "1 + 1" in one write) is delivered as poll returns, after
		 * its revents were taken, and must still go before those keys. */
		unsigned char b[16];
		ssize_t k = read(sp[0], b, sizeof(b));
		for (ssize_t i = 0; i < k; i++)
			prompt_signal(&p, b[i]);
		if (fds[0].revents)
			prompt_read(&p);
		if (fds[2].revents && p.editing && p.state == P_EDIT)
			prompt_key(&p);
	}
	prompt_spin_stop(&p);
	prompt_edit_stop(&p);
	prompt_bracketed(&p, false);
	if (p.tty_saved)
		tcsetattr(0, TCSANOW, &p.tty_orig);
	if (p.tty && cfg->history)
		prompt_history_save(cfg->history);
	cli_render_text_end(&p.r, 1);
	cli_render_text_end(&p.r, 2);
	for (int i = 0; i < NSIGS; i++)
		sigaction(sigs[i], &old[i], NULL);
	prompt_sig_w = -1;
	close(sp[0]);
	close(sp[1]);
	for (size_t i = 0; i < p.qn; i++)
		cJSON_Delete(p.q[i]);
	free(p.q);
	linebuf_free(&p.lines);
	free(p.block);
	free(p.sent_code);
	free(p.ahead);
	free(p.paste);
	record_close(p.rec);
	prompt_current = NULL;
	if (p.status)
		return p.status;
	if (!p.tty && p.script_stop)
		return 130;
	return !p.tty && p.failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}
