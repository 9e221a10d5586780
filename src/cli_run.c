/*
 * cli_run.c - `ptybox run`: run snippets in one session and exit.
 *
 * Every -c is one snippet and a FILE (or - for stdin) one more after them; all
 * run in order in one session, so state carries from one to the next. Human
 * output mimics the Python REPL: output as it comes, the last expression's
 * value, tracebacks on stderr. --json prints one result object per line.
 * How they look is cli_render.c's, shared with exec and result. --record
 * writes what a terminal would show (transcript.c) to an asciicast file
 * (record.c), whether the output goes to a terminal, a pipe or --json;
 * pictures are saved to files and maybe shown inline (cli_picture.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "protocol.h"
#include "cli_render.h"
#include "cli_run_files.h"
#include "record.h"
#include "transcript.h"

#define RUN_MAX_SNIPPETS 4096
#define RUN_MAX_FILE	 ((size_t)256 << 20)
/* The most of a snippet's code a recording shows after its prompt. */
#define RUN_SHOW_CODE_MAX ((size_t)16 << 10)
/* Bytes of one line of late output kept until its newline (--json): a longer
 * one is said in pieces of this size. Under cli_error's line length. */
#define RUN_LATE_LINE 768

/* Bytes of our stdin read and sent at a time (the stream's chunks). */
#define RUN_STDIN_CHUNK ((size_t)256 << 10)

/* Our standard input, streamed to the code as it reads it (run_stdin_*). */
struct run_stdin {
	enum { RUN_IN_NONE, RUN_IN_PIPE, RUN_IN_FILE } kind;
	uv_pipe_t pipe; /* RUN_IN_PIPE: a pipe or socket, read as it comes */
	bool reading;	/* ... uv_read_start()ed */
	bool open;	/* ... the handle is open (closed in run_close) */
	bool ended;	/* the end was sent (or ours is closed) */
	char *buf;	/* RUN_STDIN_CHUNK bytes */
};

/* --json: late output of one stream, told on stderr line by line. */
struct run_late {
	uint64_t id;
	size_t len;
	char buf[RUN_LATE_LINE + 1];
};

struct run {
	uv_loop_t *loop;
	ptybox_session *session;
	uv_signal_t sig[CLI_NSIGNALS];
	bool json, fatal;
	struct cli_render out;
	struct cli_pictures pictures;
	size_t expected, done, failed;
	int exit_code;
	int interrupts;
	uint64_t file_id;	 /* the FILE's snippet (0: none), run as python3 FILE runs it */
	int file_exit;		 /* its sys.exit(N), -1: none */
	struct run_late late[2]; /* [0] stdout, [1] stderr */
	/* --record: the snippets, for their prompts */
	struct record *rec;
	struct transcript ts;
	const char *const *codes;
	const size_t *lens;
	/* what is queued once the puts are in */
	size_t ncodes;
	const char *file;
	const char *const *args;
	bool has_in; /* our standard input is the snippets' stream */
	/* --put, --get */
	struct run_files *files;
	struct run_stdin in;
};

static const char run_usage[] =
	"Usage: ptybox run [OPTIONS] [-c CODE]... [FILE | - [ARGS...]]\n"
	"Run Python snippets in one sandboxed session, in order; state carries over.\n"
	"\n"
	"  -c CODE             a snippet (repeatable)\n"
	"  FILE, -             one more snippet from a file, or from standard input,\n"
	"                      run as python3 FILE ARGS runs it: sys.argv is [FILE,\n"
	"                      ARGS...], __file__ is set, non-daemon threads are\n"
	"                      waited for, sys.exit(N) is the exit status (options go\n"
	"                      before FILE; -- before an ARG that is one of ours)\n"
	"  -j, --json          one result object per snippet per line on stdout (late\n"
	"                      output of threads: on stderr, one line each)\n"
	"  --raw               write output to a terminal as it is, escape sequences\n"
	"                      and all (by default only colours pass; see ptybox(1))\n"
	"  --tty               the code's stdout and stderr are a terminal (isatty), so\n"
	"                      libraries keep their colours (not with --json)\n"
	"  --put FILE[:PATH]   copy FILE into the sandbox before the first snippet, to\n"
	"                      PATH (default: FILE's name, in the working folder)\n"
	"  --get PATH          after the last snippet (ok or not), copy PATH out of the\n"
	"                      sandbox into --output-dir (made if missing; default: the\n"
	"                      current folder) under its own name\n"
	"%s"
	"  -h, --help          this help\n"
	"\n"
	"Standard input, if it is a pipe, a socket or a file (and no - takes the code\n"
	"from it), is the snippets' stdin, one stream for all in order, read as the code\n"
	"reads it (a snippet that does not read it is not held up); else end of file.\n";

static const char run_usage_tail[] =
	"\n"
	"Exit status: 0 all snippets ok, 1 some snippet failed (error, timeout,\n"
	"interrupted, crashed), 2 usage error, 125 the session could not be started,\n"
	"130 stopped by ^C; N: FILE called sys.exit(N).\n";

static void run_stdin_close_cb(uv_handle_t *h)
{
	(void)h;
}

static void run_stdin_stop(struct run *r)
{
	struct run_stdin *in = &r->in;
	if (in->open) {
		in->open = in->reading = false;
		uv_close((uv_handle_t *)&in->pipe, run_stdin_close_cb);
	}
	in->ended = true;
}

static void run_close(struct run *r)
{
	run_stdin_stop(r);
	if (r->session) {
		ptybox_session_close(r->session);
		r->session = NULL;
	}
	cli_signals_close(r->sig);
}

/* One line (or piece) of late output, on stderr, filtered as ptybox's messages are. */
static void run_late_say(struct run *r, int which)
{
	struct run_late *l = &r->late[which];
	char prefix[96];
	snprintf(prefix, sizeof(prefix),
		 "late output of snippet %llu (%s): ", (unsigned long long)l->id,
		 which ? "stderr" : "stdout");
	l->buf[l->len] = '\0';
	cli_render_message(&r->out, prefix, 0, l->buf);
	l->len = 0;
}

static void run_late_flush(struct run *r)
{
	for (int i = 0; i < 2; i++)
		if (r->late[i].len)
			run_late_say(r, i);
}

/* --json: stdout is for results alone, so what a thread printed after its
 * snippet ended goes to stderr, a line at a time, saying whose it is. */
static void run_late_text(struct run *r, uint64_t id, const char *name, const char *text,
			  size_t len)
{
	int which = strcmp(name, "stderr") == 0;
	struct run_late *l = &r->late[which];
	if (l->len && l->id != id)
		run_late_say(r, which);
	l->id = id;
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		size_t room = RUN_LATE_LINE - l->len;
		if (n > room) /* (a piece ends on a character's end) */
			n = protocol_utf8_prefix(text, n, room);
		memcpy(l->buf + l->len, text, n);
		l->len += n;
		text += n;
		len -= n;
		if (len && *text == '\n') {
			text++;
			len--;
			run_late_say(r, which);
		} else if (l->len == RUN_LATE_LINE || (len && n == 0)) {
			run_late_say(r, which);
		}
	}
}

/* Snippet i (from 1) starts, as far as the recording goes: its marker, its prompt. */
static void run_show_begin(struct run *r, size_t i)
{
	if (!r->rec || i > r->expected || r->fatal)
		return;
	/* (the start of a long one, as the server's screen shows it: a terminal would
	 * scroll the rest away) */
	size_t len = protocol_utf8_prefix(r->codes[i - 1], r->lens[i - 1], RUN_SHOW_CODE_MAX);
	record_exec(r->rec, i, r->codes[i - 1], len);
	transcript_input(&r->ts, r->codes[i - 1], len);
}

static void run_record_warn(void *data, const char *message)
{
	cli_error("warning: %s", message);
}

static void run_on_stream(ptybox_session *s, uint64_t id, const char *name, const char *text,
			  size_t len, bool late, void *data)
{
	struct run *r = data;
	if (r->rec)
		transcript_output(&r->ts, text, len);
	if (r->json && late)
		run_late_text(r, id, name, text, len);
	else
		cli_render_stream(&r->out, name, text, len);
}

/* A picture's path printed for a rich output or a value: the recording shows it, as the
 * terminal did, in place of its text. */
static void run_on_picture(void *data, const char *path)
{
	struct run *r = data;
	if (r->rec)
		transcript_display(&r->ts, path);
}

static void run_on_display(ptybox_session *s, uint64_t id, const char *bundle, bool late,
			   const char *display_id, bool update, bool at_end, void *data)
{
	struct run *r = data;
	(void)display_id;
	(void)update;
	if (r->rec && r->json) { /* (human: recorded as shown, below) */
		cJSON *o = cJSON_Parse(bundle);
		transcript_display(&r->ts, protocol_str(o, "text/plain"));
		cJSON_Delete(o);
	}
	if (r->json && !late)
		return; /* (it is in the result) */
	if (r->json) {	/* a thread's, after its snippet: in no result, so said */
		cJSON *o = cJSON_Parse(bundle);
		const char *text = protocol_str(o, "text/plain");
		char prefix[64];
		snprintf(prefix, sizeof(prefix),
			 "late display of snippet %llu: ", (unsigned long long)id);
		run_late_flush(r);
		cli_render_message(&r->out, prefix, 0,
				   text ? text
				   : o	? "(no text/plain form)"
					: "(out of memory)");
		cJSON_Delete(o);
		return;
	}
	cJSON *o = cJSON_Parse(bundle);
	if (at_end) /* (a figure open as it ended: after its value) */
		cli_render_display_at_end(&r->out, o);
	else if (!cli_render_display(&r->out, o) && r->rec)
		transcript_display(&r->ts, protocol_str(o, "text/plain"));
	cJSON_Delete(o);
}

/* Whether s is a whole number, as sys.exit(N)'s value is said ("-1", "300"). */
static bool run_is_integer(const char *s)
{
	s += *s == '-';
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* The FILE's sys.exit(N) with N other than 0: the status python3 FILE exits
 * with, from the error's "exit" (-1 when it is no such end). */
static int run_file_exit(const struct run *r, const struct ptybox_result *res)
{
	if (res->id != r->file_id || res->status != PTYBOX_ERROR || !res->error_name ||
	    (strcmp(res->error_name, "SystemExit") != 0 &&
	     strcmp(res->error_name, "ExitStatus") != 0) || /* (bash's: kernel_bash.py) */
	    !res->detail ||
	    !res->detail->error)
		return -1;
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(res->detail->error, "exit");
	return cJSON_IsNumber(st) && st->valueint >= 0 && st->valueint <= 255 ? st->valueint : -1;
}

static void run_after_snippets(struct run *r);

static void run_on_result(ptybox_session *s, const struct ptybox_result *res, void *data)
{
	struct run *r = data;
	r->done++;
	int file_exit = run_file_exit(r, res);
	if (file_exit >= 0)
		r->file_exit = file_exit; /* (a failure of its own kind) */
	else if (res->status != PTYBOX_OK)
		r->failed++;
	/* sys.exit(N) in FILE: no traceback, as python3 shows none; a
	 * message (sys.exit("why")) alone on stderr. */
	bool message = file_exit >= 0 && res->error_value && !run_is_integer(res->error_value);
	const char *error_name = file_exit < 0 ? res->error_name
				 : message     ? res->error_value
					       : NULL;
	if (r->json) {
		const char *line = ptybox_result_json(res);
		if (line) {
			cli_render_out(1, line, strlen(line));
			cli_render_out(1, "\n", 1);
		} else {
			cli_error("snippet %llu: out of memory for its result",
				  (unsigned long long)res->id);
			r->failed++;
		}
	}
	r->out.value_pictured = false;
	if (!r->json && !r->fatal) { /* (after it, what is left did not run: said once) */
		cli_render_result(&r->out,
				  &(struct cli_render_result){
					  .id = res->id,
					  /* (python3 FILE shows no value) */
					  .value = res->id == r->file_id ? NULL : res->value_text,
					  .error_name = error_name,
					  .error_value = file_exit < 0 ? res->error_value : NULL,
					  .traceback = file_exit < 0 ? res->traceback : NULL,
					  .message = res->message,
					  .truncated = res->truncated,
					  .state_lost = res->state_lost,
					  .dropped_bytes = res->dropped_bytes,
					  .bundle = res->detail && res->id != r->file_id
							    ? res->detail->bundle
							    : NULL,
				  });
	}
	if (r->rec && res->status != PTYBOX_CANCELLED && !r->fatal) {
		transcript_result(&r->ts,
				  &(struct transcript_result){
					  .value = r->out.value_pictured || res->id == r->file_id
							   ? NULL
							   : res->value_text,
					  .error_name = error_name,
					  .error_value = file_exit < 0 ? res->error_value : NULL,
					  .traceback = file_exit < 0 ? res->traceback : NULL,
				  });
		record_flush(r->rec);
	}
	if (r->done == r->expected || r->interrupts) {
		r->exit_code = r->interrupts	   ? 130
			       : r->fatal	   ? CLI_EXIT_CANNOT_START
			       : r->failed	   ? CLI_EXIT_FAILED
			       : r->file_exit >= 0 ? r->file_exit
						   : CLI_EXIT_OK;
		run_after_snippets(r);
		return;
	}
	run_show_begin(r, r->done + 1);
}

/* --get, once every --get is done: a failed one fails a run that was ok. */
static void run_gets_done(struct run *r)
{
	if (r->files->failed && r->exit_code == CLI_EXIT_OK)
		r->exit_code = CLI_EXIT_FAILED;
	run_close(r);
}

/* The last snippet has ended (whatever its status: a chart written before an error is
 * still wanted): the gets, unless the run was stopped or the session could not start. */
static void run_after_snippets(struct run *r)
{
	if (!r->files->nget || r->interrupts || r->fatal || !r->session) {
		run_close(r);
		return;
	}
	if (run_files_start_gets(r->files, r->session) == RUN_FILES_GETS_DONE)
		run_gets_done(r);
}

/* The snippets, once the puts are in. */
static void run_queue_snippets(struct run *r)
{
	for (size_t i = 0; i < r->expected && r->session; i++) {
		/* (a recording shows the output as it comes, --json or not) */
		struct ptybox_exec x = {.code = r->codes[i],
					.len = r->lens[i],
					.timeout = -1,
					.stream = !r->json || r->rec,
					.stdin_stream = r->has_in};
		if (i == r->ncodes) {
			r->file_id = i + 1;
			x.filename = strcmp(r->file, "-") == 0 ? "<stdin>" : r->file;
			x.argv = r->args;
		}
		int rc = ptybox_session_exec_with(r->session, i + 1, &x);
		if (rc < 0) {
			cli_error("run: snippet %zu: %s", i + 1,
				  rc == -EINVAL ? "the source contains a NUL byte" : strerror(-rc));
			r->exit_code = CLI_EXIT_USAGE;
			run_close(r);
			break;
		}
	}
}

static void run_on_file(ptybox_session *s, uint64_t id, const char *reply, const void *data,
			size_t len, void *data_)
{
	struct run *r = data_;
	switch (run_files_on_file(r->files, id, reply, data, len, r->fatal)) {
	case RUN_FILES_BUSY: break;
	case RUN_FILES_PUTS_DONE: run_queue_snippets(r); break;
	case RUN_FILES_GETS_DONE: run_gets_done(r); break;
	case RUN_FILES_FAILED: /* (a put: nothing runs) */
		if (!r->fatal)
			r->exit_code = CLI_EXIT_FAILED;
		run_close(r);
		break;
	}
}

/* The results of the snippets left, not run, follow: --json prints a line for
 * each, and the last closes. */
static void run_on_fatal(ptybox_session *s, const char *message, void *data)
{
	struct run *r = data;
	cli_render_message(&r->out, "cannot start the session: ", 0, message);
	r->fatal = true;
	r->exit_code = CLI_EXIT_CANNOT_START;
	if (r->done == r->expected)
		run_close(r);
}

/* ^C: interrupt the running snippet and stop; a second ^C stops at once.
 * SIGTERM and SIGHUP stop at once: closing the session kills the interpreter. */
static void run_signal_cb(uv_signal_t *h, int signum)
{
	struct run *r = h->data;
	if (signum == SIGINT && ++r->interrupts == 1 && r->session &&
	    ptybox_session_interrupt(r->session) == 0)
		return;
	r->exit_code = 128 + signum;
	run_close(r);
}

/* Gives the session a chunk: 0, or -1 when the stream is over for us. */
static int run_stdin_give(struct run *r, const char *data, size_t len, bool eof)
{
	int rc = ptybox_session_stdin(r->session, data, len, eof);
	if (rc < 0 && rc != -EPIPE)
		cli_error("run: standard input: %s", strerror(-rc));
	if (rc < 0 || eof)
		run_stdin_stop(r);
	return rc < 0 || eof ? -1 : 0;
}

static void run_stdin_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct run *r = h->data;
	(void)hint;
	*buf = uv_buf_init(r->in.buf, RUN_STDIN_CHUNK);
}

static void run_stdin_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct run *r = st->data;
	if (n == 0 || !r->session)
		return;
	if (n < 0) {
		if (n != UV_EOF)
			cli_error("run: standard input: %s", uv_strerror((int)n));
		run_stdin_give(r, "", 0, true);
		return;
	}
	/* (one chunk in flight: reading goes on once the session took it) */
	uv_read_stop(st);
	r->in.reading = false;
	run_stdin_give(r, buf->base, (size_t)n, false);
}

/* More of our stdin while the session wants it: a pipe is read as it comes,
 * a file a chunk at a time (a read of it never blocks). */
static void run_stdin_pump(struct run *r)
{
	struct run_stdin *in = &r->in;
	if (in->kind == RUN_IN_NONE || in->ended || !r->session ||
	    !ptybox_session_stdin_ready(r->session))
		return;
	if (in->kind == RUN_IN_PIPE) {
		if (!in->reading && uv_read_start((uv_stream_t *)&in->pipe, run_stdin_alloc_cb,
						  run_stdin_read_cb) == 0)
			in->reading = true;
		return;
	}
	ssize_t n;
	do
		n = read(0, in->buf, RUN_STDIN_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		cli_error("run: standard input: %s", strerror(errno));
	run_stdin_give(r, in->buf, n > 0 ? (size_t)n : 0, n <= 0);
}

static void run_on_stdin_ready(ptybox_session *s, void *data)
{
	run_stdin_pump(data);
}

/* Our stdin as the snippets' stream, if it is a pipe, a socket or a file (a
 * terminal is the user's, a device such as /dev/null no input meant for the
 * code). 0, or -1 with the message printed. */
static int run_stdin_open(struct run *r)
{
	struct stat st;
	struct run_stdin *in = &r->in;
	if (isatty(0) || fstat(0, &st) < 0 ||
	    !(S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 0;
	if (!(in->buf = malloc(RUN_STDIN_CHUNK))) {
		cli_error("run: standard input: out of memory");
		return -1;
	}
	in->kind = S_ISREG(st.st_mode) ? RUN_IN_FILE : RUN_IN_PIPE;
	if (in->kind == RUN_IN_PIPE) {
		int rc = uv_pipe_init(r->loop, &in->pipe, 0);
		if (rc == 0) {
			in->open = true;
			in->pipe.data = r;
			rc = uv_pipe_open(&in->pipe, 0);
		}
		if (rc < 0) {
			cli_error("run: standard input: %s", uv_strerror(rc));
			run_stdin_stop(r);
			return -1;
		}
	}
	return 0;
}

static char *run_read_fd(const char *cmd, int fd, const char *name, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			if (cap >= RUN_MAX_FILE) {
				cli_error("%s: %s: larger than %zu MiB", cmd, name,
					  RUN_MAX_FILE >> 20);
				free(buf);
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			cli_error("%s: %s: %s", cmd, name, strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0) {
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	free(buf);
	cli_error("%s: %s: out of memory", cmd, name);
	return NULL;
}

char *cli_read_code(const char *cmd, const char *path, size_t *len)
{
	bool in = strcmp(path, "-") == 0;
	const char *name = in ? "standard input" : path;
	int fd = in ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error("%s: %s: %s", cmd, path, strerror(errno));
		return NULL;
	}
	char *code = run_read_fd(cmd, fd, name, len);
	if (fd > 0)
		close(fd);
	if (!code)
		return NULL;
	if (*len >= 3 && memcmp(code, "\xef\xbb\xbf", 3) == 0) {
		*len -= 3; /* a UTF-8 BOM, which python3 FILE skips too */
		memmove(code, code + 3, *len);
	}
	if (memchr(code, '\0', *len)) {
		cli_error("%s: %s: the source contains a NUL byte", cmd, name);
		free(code);
		return NULL;
	}
	if (!protocol_utf8_valid(code, *len)) {
		cli_error("%s: %s: not valid UTF-8 (snippets are UTF-8 text, whatever "
			  "coding line they have)",
			  cmd, name);
		free(code);
		return NULL;
	}
	code[*len] = '\0';
	return code;
}

int cli_read_stdin(const char *cmd, void **data, size_t *len)
{
	struct stat st;
	*data = NULL;
	*len = 0;
	/* Only a pipe or a file: a terminal is the user's, and a device
	 * (/dev/null, say) or a socket is no input meant for the code. */
	if (isatty(0) || fstat(0, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)))
		return 0;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			if (cap > PROTOCOL_STDIN_MAX) {
				cli_error("%s: standard input: larger than %zu MiB (the cap of a "
					  "snippet's stdin)",
					  cmd, PROTOCOL_STDIN_MAX >> 20);
				free(buf);
				return -1;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			cli_error("%s: standard input: %s", cmd, strerror(errno));
			free(buf);
			return -1;
		}
		if (r == 0) {
			if (n > PROTOCOL_STDIN_MAX) {
				cli_error("%s: standard input: larger than %zu MiB (the cap of a "
					  "snippet's stdin)",
					  cmd, PROTOCOL_STDIN_MAX >> 20);
				free(buf);
				return -1;
			}
			*data = buf;
			*len = n;
			return 1;
		}
		n += (size_t)r;
	}
	cli_error("%s: standard input: out of memory", cmd);
	return -1;
}

/* The user's window, when stdout or stderr is a terminal: the sandbox's
 * terminal and the code's COLUMNS and LINES take its size. */
static void run_terminal_size(struct ptybox_options *o)
{
	struct winsize ws;
	for (int fd = 1; fd <= 2; fd++) {
		if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
			o->cols = ws.ws_col;
			o->rows = ws.ws_row;
			return;
		}
	}
}

/* --record: the file opened before the session starts, so that a path that cannot be
 * written is a usage error and nothing runs; the size is the sandbox terminal's. -1 with the
 * message printed. */
static int run_record_open(struct run *r, const struct cli_record_opts *rec,
			   const struct ptybox_options *o, const char *file)
{
	char title[256], err[512];
	struct record_config cfg = {
		.path = rec->path,
		.max_bytes = rec->max,
		.title = title,
		.width = o->cols ? o->cols : 80,
		.height = o->rows ? o->rows : 24,
		.warn = run_record_warn,
		.data = r,
	};
	snprintf(title, sizeof(title), "ptybox run%s%.200s", file ? " " : "", file ? file : "");
	if (record_open(&r->rec, &cfg, err, sizeof(err)) < 0) {
		cli_error("run: --record %s", err);
		return -1;
	}
	transcript_init(&r->ts, !getenv("NO_COLOR"), record_transcript_emit, r->rec);
	return 0;
}

int cli_run(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"raw", no_argument, NULL, 'r'},
		{"tty", no_argument, NULL, 't'},
		{"put", required_argument, NULL, 0x1a0},
		{"get", required_argument, NULL, 0x1a1},
		{"help", no_argument, NULL, 'h'},
		CLI_RECORD_LONGOPTS,
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *codes[RUN_MAX_SNIPPETS + 1];
	size_t ncodes = 0;
	bool json = false, raw = false, tty = false;
	struct cli_record_opts rec = {0};
	static struct run_files files; /* (big: off the stack) */
	run_files_init(&files);
	int opt, li = -1, ro;
	optind = 1;
	opterr = 0;
	while ((li = -1, opt = getopt_long(argc, argv, "+:c:hj", longopts, &li)) != -1) {
		if (opt != 'c' && optarg && cli_value_missing("run", longopts, li, opt, optarg))
			return CLI_EXIT_USAGE;
		switch (opt) {
		case 'c':
			if (ncodes == RUN_MAX_SNIPPETS) {
				cli_error("run: more than %d snippets", RUN_MAX_SNIPPETS);
				return CLI_EXIT_USAGE;
			}
			codes[ncodes++] = optarg;
			break;
		case 'j': json = true; break;
		case 'r': raw = true; break;
		case 't': tty = true; break;
		case 'h':
			printf(run_usage, cli_record_help);
			printf("%s%s%s", cli_session_help, cli_picture_help, run_usage_tail);
			return CLI_EXIT_OK;
		case '?':
		case ':': cli_bad_option("run", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		case 0x1a0:
		case 0x1a1:
			ro = opt == 0x1a0 ? run_files_put_opt(&files, optarg)
					  : run_files_get_opt(&files, optarg);
			if (ro < 0)
				return CLI_EXIT_USAGE;
			break;
		default:
			ro = cli_record_opt(&rec, opt, optarg, "run");
			if (ro == 0)
				ro = cli_session_opt(&so, opt, optarg, "run");
			if (ro != 1)
				return CLI_EXIT_USAGE;
		}
	}
	files.output_dir = so.output_dir;
	files.max_get = so.o.max_get;
	/* (before the options' check: --output-dir is made for --get) */
	if (run_files_check(&files) < 0 || cli_session_opts_check(&so, "run") < 0) {
		run_files_free(&files);
		return CLI_EXIT_USAGE;
	}
	if (tty && json) {
		cli_error("run: --tty is for human output: with --json the code's output is "
			  "in the results");
		fprintf(stderr, "Try 'ptybox run --help'.\n");
		return CLI_EXIT_USAGE;
	}
	so.o.tty = tty;
	/* FILE's ARGS, as python3 FILE ARGS takes them; but one of our own
	 * options there was meant for us: it goes before FILE (or after --). */
	const char *args[argc + 1]; /* sys.argv: FILE, then its ARGS */
	size_t nargs = 0;
	if (optind < argc)
		args[nargs++] = argv[optind];
	bool dashes = false;
	for (int i = optind + 1; i < argc; i++) {
		if (!dashes && strcmp(argv[i], "--") == 0) {
			dashes = true;
			continue;
		}
		if (!dashes && cli_is_option(longopts, "chj", argv[i])) {
			cli_error("run: options go before FILE (got '%s' after '%s'; -- before it "
				  "passes it to FILE)",
				  argv[i], argv[optind]);
			fprintf(stderr, "Try 'ptybox run --help'.\n");
			return CLI_EXIT_USAGE;
		}
		if (!protocol_utf8_valid(argv[i], strlen(argv[i]))) {
			cli_error("run: argument %d: not valid UTF-8", i - optind);
			return CLI_EXIT_USAGE;
		}
		args[nargs++] = argv[i];
	}
	args[nargs] = NULL;
	const char *file = optind < argc ? argv[optind] : NULL;
	if (file && !protocol_utf8_valid(file, strlen(file))) {
		cli_error("run: %s: the file name is not valid UTF-8", file);
		return CLI_EXIT_USAGE;
	}
	run_terminal_size(&so.o);
	char *file_code = NULL;
	size_t file_len = 0;
	if (optind < argc && !(file_code = cli_read_code("run", argv[optind], &file_len)))
		return CLI_EXIT_USAGE;
	for (size_t i = 0; i < ncodes; i++) {
		if (!protocol_utf8_valid(codes[i], strlen(codes[i]))) {
			cli_error("run: -c #%zu: not valid UTF-8", i + 1);
			free(file_code);
			return CLI_EXIT_USAGE;
		}
	}
	if (ncodes == 0 && !file_code) {
		cli_error("run: nothing to run: give -c CODE or a FILE (- for standard input)");
		fprintf(stderr, "Try 'ptybox run --help'.\n");
		return CLI_EXIT_USAGE;
	}
	struct run r = {.json = json, .file_exit = -1};
	r.loop = uv_default_loop();
	/* Our standard input is the snippets' stream, unless the code came from it. */
	if (!(file && strcmp(file, "-") == 0) && run_stdin_open(&r) < 0) {
		free(file_code);
		uv_run(r.loop, UV_RUN_DEFAULT);
		return CLI_EXIT_USAGE;
	}
	r.files = &files;
	r.has_in = r.in.kind != RUN_IN_NONE;
	r.expected = ncodes + (file_code ? 1 : 0);
	size_t lens[RUN_MAX_SNIPPETS + 1];
	for (size_t i = 0; i < ncodes; i++)
		lens[i] = strlen(codes[i]);
	codes[ncodes] = file_code; /* (room: codes has RUN_MAX_SNIPPETS + 1) */
	lens[ncodes] = file_len;
	r.codes = codes;
	r.lens = lens;
	r.ncodes = ncodes;
	r.file = file;
	r.args = args;
	if (rec.path && run_record_open(&r, &rec, &so.o, file) < 0) {
		free(file_code);
		run_stdin_stop(&r);
		uv_run(r.loop, UV_RUN_DEFAULT);
		free(r.in.buf);
		return CLI_EXIT_USAGE;
	}
	cli_warn_unsandboxed(&so.o);
	cli_warn_unenforced(&so);
	cli_render_init(&r.out, json, raw, "snippet");
	if (tty)
		cli_render_pass_cr(&r.out);
	char err[512] = "";
	int rc = ptybox_session_new(r.loop, &so.o,
				    &(struct ptybox_callbacks){
					    .on_stream = run_on_stream,
					    .on_display_id = run_on_display,
					    .on_result = run_on_result,
					    .on_fatal = run_on_fatal,
					    .on_file = run_on_file,
					    .on_stdin_ready = run_on_stdin_ready,
				    },
				    &r, &r.session, err, sizeof(err));
	if (rc < 0) {
		cli_error("run: %s", err[0] ? err : strerror(-rc));
		record_close(r.rec);
		free(file_code);
		run_stdin_stop(&r);
		uv_run(r.loop, UV_RUN_DEFAULT);
		free(r.in.buf);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
	}
	cli_signals_start(r.loop, r.sig, run_signal_cb, &r);
	run_stdin_pump(&r); /* (the first chunk waits in the session for its start) */
	run_show_begin(&r, 1);
	if (!json) { /* (the terminal is asked while the session starts) */
		cli_pictures_init(&r.pictures, so.output_dir, !so.no_inline_images);
		r.out.pictures = &r.pictures;
		r.out.on_picture = run_on_picture;
		r.out.on_picture_data = &r;
	}
	switch (run_files_start_puts(r.files, r.session)) {
	case RUN_FILES_PUTS_DONE: run_queue_snippets(&r); break; /* (no --put) */
	case RUN_FILES_FAILED:
		r.exit_code = CLI_EXIT_FAILED;
		run_close(&r);
		break;
	default: break;
	}
	uv_run(r.loop, UV_RUN_DEFAULT);
	run_files_free(r.files);
	run_late_flush(&r);
	cli_render_text_end(&r.out, 1); /* late output may have ended inside a sequence */
	cli_render_text_end(&r.out, 2);
	record_close(r.rec);
	free(file_code);
	free(r.in.buf);
	if (uv_loop_close(r.loop) != 0)
		cli_error("run: internal error: handles left open");
	return r.exit_code;
}
