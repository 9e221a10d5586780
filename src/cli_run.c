/*
 * cli_run.c - `ptybox run`: run snippets in one session and exit.
 *
 * Every -c is one snippet and a FILE (or - for stdin) one more after them; all
 * run in order in one session, so state carries from one to the next. Human
 * output mimics the Python REPL: output as it comes, the last expression's
 * value, tracebacks on stderr. --json prints one result object per line.
 *
 * What the sandbox wrote goes to a terminal through a filter (term_safe.c),
 * one for stdout and one for stderr, each when that one is a terminal: a
 * snippet must not write the user's clipboard or hide lines. A stream's chunk
 * may end inside a sequence, which its filter holds; a whole text (a value, a
 * traceback) lets go of what its stream held before it starts, and of what it
 * held itself once it is written. --raw and pipes get the bytes as they are.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "protocol.h"
#include "term_safe.h"

#define RUN_MAX_SNIPPETS 4096
#define RUN_MAX_FILE	 ((size_t)256 << 20)
/* Bytes of sandbox text filtered per write to a terminal. */
#define RUN_SAFE_CHUNK ((size_t)64 << 10)

struct run {
	uv_loop_t *loop;
	ptybox_session *session;
	uv_signal_t sig[CLI_NSIGNALS];
	bool json, color, fatal;
	bool safe[3];			/* [fd]: text to fd goes through safe_state[fd] */
	struct term_safe safe_state[3]; /* [1] stdout, [2] stderr */
	size_t expected, done, failed;
	int exit_code;
	int interrupts;
};

static const char run_usage[] =
	"Usage: ptybox run [OPTIONS] [-c CODE]... [FILE | -]\n"
	"Run Python snippets in one sandboxed session, in order; state carries over.\n"
	"\n"
	"  -c CODE             a snippet (repeatable)\n"
	"  FILE, -             one more snippet from a file, or from standard input\n"
	"  --json              one result object per snippet per line on stdout\n"
	"  --raw               write output to a terminal as it is, escape sequences\n"
	"                      and all (by default only colours pass; see ptybox(1))\n"
	"  -h, --help          this help\n"
	"\n";

static const char run_usage_tail[] =
	"\n"
	"Exit status: 0 all snippets ok, 1 some snippet failed (error, timeout,\n"
	"interrupted, crashed), 2 usage error, 125 the session could not be started,\n"
	"130 stopped by ^C.\n";

static void run_out(int fd, const char *s, size_t len)
{
	int rc = cli_write_all(fd, s, len);
	if (rc < 0) { /* output lost: say so (on stderr, unless that failed) */
		if (rc != -EPIPE && fd != 2)
			cli_error("run: standard output: %s", strerror(-rc));
		_exit(CLI_EXIT_FAILED);
	}
}

static void run_outs(int fd, const char *s)
{
	run_out(fd, s, strlen(s));
}

/* Text the sandbox wrote, to fd: through its filter when fd takes one. */
static void run_text(struct run *r, int fd, const char *s, size_t len)
{
	static char buf[TERM_SAFE_OUT_MAX(RUN_SAFE_CHUNK)];
	if (!r->safe[fd]) {
		run_out(fd, s, len);
		return;
	}
	while (len) {
		size_t n = len < RUN_SAFE_CHUNK ? len : RUN_SAFE_CHUNK;
		run_out(fd, buf, term_safe_feed(&r->safe_state[fd], s, n, buf));
		s += n;
		len -= n;
	}
}

static void run_texts(struct run *r, int fd, const char *s)
{
	run_text(r, fd, s, strlen(s));
}

/* What the filter of fd holds comes out (escaped): the text it began ends. */
static void run_text_end(struct run *r, int fd)
{
	char buf[TERM_SAFE_OUT_MAX(0)];
	size_t n = r->safe[fd] ? term_safe_end(&r->safe_state[fd], buf) : 0;
	if (n)
		run_out(fd, buf, n);
}

/* A whole text, after what its stream left held. */
static void run_whole_text(struct run *r, int fd, const char *s)
{
	run_text_end(r, fd);
	run_texts(r, fd, s);
	run_text_end(r, fd);
}

/* A message of ptybox's that quotes the sandbox (the last line its terminal
 * said, in a crash's reason, say), on stderr: filtered there too. */
static void run_message(struct run *r, const char *prefix, uint64_t id, const char *msg)
{
	size_t len = strlen(msg);
	char *safe = r->safe[2] ? malloc(TERM_SAFE_OUT_MAX(len) + 1) : NULL;
	if (safe) {
		struct term_safe t;
		term_safe_init(&t);
		size_t n = term_safe_feed(&t, msg, len, safe);
		n += term_safe_end(&t, safe + n);
		safe[n] = '\0';
	}
	run_text_end(r, 2);
	if (prefix)
		cli_error("%s%s", prefix, safe ? safe : msg);
	else
		cli_error("snippet %llu: %s", (unsigned long long)id, safe ? safe : msg);
	free(safe);
}

static void run_close(struct run *r)
{
	if (r->session) {
		ptybox_session_close(r->session);
		r->session = NULL;
	}
	cli_signals_close(r->sig);
}

static void run_on_stream(ptybox_session *s, uint64_t id, const char *name, const char *text,
			  size_t len, bool late, void *data)
{
	struct run *r = data;
	if (r->json)
		return;
	run_text(r, name[3] == 'o' ? 1 : 2, text, len);
}

/* Rich output as a terminal can show it, like Jupyter's console: its
 * text/plain form (a figure's repr, say); an image without one is named. */
static void run_on_display(ptybox_session *s, uint64_t id, const char *bundle, bool late,
			   void *data)
{
	struct run *r = data;
	if (r->json)
		return;
	cJSON *o = cJSON_Parse(bundle);
	const char *text = protocol_str(o, "text/plain"), *png = protocol_str(o, "image/png");
	if (text) {
		run_whole_text(r, 1, text);
		run_outs(1, "\n");
	} else if (png) {
		char note[64];
		snprintf(note, sizeof(note), "[image/png, %zu bytes]\n", strlen(png) / 4 * 3);
		run_outs(1, note);
	}
	cJSON_Delete(o);
}

static void run_on_result(ptybox_session *s, const struct ptybox_result *res, void *data)
{
	struct run *r = data;
	r->done++;
	if (res->status != PTYBOX_OK)
		r->failed++;
	if (r->json) {
		const char *line = ptybox_result_json(res);
		if (line) {
			run_outs(1, line);
			run_outs(1, "\n");
		} else {
			cli_error("snippet %llu: out of memory for its result",
				  (unsigned long long)res->id);
			r->failed++;
		}
	} else if (!r->fatal) {	    /* (after it, what is left did not run: said once) */
		run_text_end(r, 1); /* the snippet's streams end with it */
		run_text_end(r, 2);
		if (res->value_text) {
			run_whole_text(r, 1, res->value_text);
			run_outs(1, "\n");
		}
		if (res->error_name) {
			if (r->color)
				run_outs(2, "\033[31m");
			if (res->traceback && res->traceback[0]) {
				run_whole_text(r, 2, res->traceback);
			} else {
				run_whole_text(r, 2, res->error_name);
				if (res->error_value && res->error_value[0]) {
					run_outs(2, ": ");
					run_whole_text(r, 2, res->error_value);
				}
				run_outs(2, "\n");
			}
			if (r->color)
				run_outs(2, "\033[0m");
		}
		if (res->truncated)
			cli_error("snippet %llu: output truncated, %llu bytes dropped",
				  (unsigned long long)res->id,
				  (unsigned long long)res->dropped_bytes);
		if (res->message)
			run_message(r, NULL, res->id, res->message);
	}
	if (r->done == r->expected || r->interrupts) {
		r->exit_code = r->interrupts ? 130
			       : r->fatal    ? CLI_EXIT_CANNOT_START
			       : r->failed   ? CLI_EXIT_FAILED
					     : CLI_EXIT_OK;
		run_close(r);
	}
}

/* The results of the snippets left, not run, follow: --json prints a line for
 * each, and the last closes. */
static void run_on_fatal(ptybox_session *s, const char *message, void *data)
{
	struct run *r = data;
	run_message(r, "cannot start the session: ", 0, message);
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

static char *run_read_fd(int fd, const char *name, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			if (cap >= RUN_MAX_FILE) {
				cli_error("run: %s: larger than %zu MiB", name, RUN_MAX_FILE >> 20);
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
			cli_error("run: %s: %s", name, strerror(errno));
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
	cli_error("run: %s: out of memory", name);
	return NULL;
}

int cli_run(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"raw", no_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *codes[RUN_MAX_SNIPPETS];
	size_t ncodes = 0;
	bool json = false, raw = false;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:c:hj", longopts, NULL)) != -1) {
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
		case 'h':
			printf("%s%s%s", run_usage, cli_session_help, run_usage_tail);
			return CLI_EXIT_OK;
		case '?':
		case ':': cli_bad_option("run", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		default:
			if (cli_session_opt(&so, opt, optarg, "run") != 1)
				return CLI_EXIT_USAGE;
		}
	}
	if (cli_session_opts_check(&so, "run") < 0)
		return CLI_EXIT_USAGE;
	if (argc - optind > 1) {
		cli_error("run: one FILE at most (got '%s' and '%s')", argv[optind],
			  argv[optind + 1]);
		return CLI_EXIT_USAGE;
	}
	char *file_code = NULL;
	size_t file_len = 0;
	if (optind < argc) {
		const char *path = argv[optind];
		int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cli_error("run: %s: %s", path, strerror(errno));
			return CLI_EXIT_USAGE;
		}
		file_code = run_read_fd(fd, strcmp(path, "-") == 0 ? "standard input" : path,
					&file_len);
		if (fd > 0)
			close(fd);
		if (!file_code)
			return CLI_EXIT_USAGE;
		if (file_len >= 3 && memcmp(file_code, "\xef\xbb\xbf", 3) == 0) {
			file_len -= 3; /* a UTF-8 BOM, which python3 FILE skips too */
			memmove(file_code, file_code + 3, file_len);
		}
		if (memchr(file_code, '\0', file_len)) {
			cli_error("run: %s: the source contains a NUL byte",
				  strcmp(path, "-") == 0 ? "standard input" : path);
			free(file_code);
			return CLI_EXIT_USAGE;
		}
		if (!protocol_utf8_valid(file_code, file_len)) {
			cli_error("run: %s: not valid UTF-8 (snippets are UTF-8 text, whatever "
				  "coding line they have)",
				  strcmp(path, "-") == 0 ? "standard input" : path);
			free(file_code);
			return CLI_EXIT_USAGE;
		}
	}
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

	cli_warn_unsandboxed(&so.o);
	struct run r = {.json = json, .color = isatty(2) && !getenv("NO_COLOR")};
	/* (with --json, stdout is JSON, escaped its own way; stderr still gets
	 * ptybox's messages, which may quote the sandbox's terminal) */
	for (int fd = 1; fd <= 2; fd++) {
		r.safe[fd] = !raw && isatty(fd) && !(json && fd == 1);
		term_safe_init(&r.safe_state[fd]);
	}
	r.loop = uv_default_loop();
	r.expected = ncodes + (file_code ? 1 : 0);
	char err[512] = "";
	int rc = ptybox_session_new(r.loop, &so.o,
				    &(struct ptybox_callbacks){
					    .on_stream = run_on_stream,
					    .on_display = run_on_display,
					    .on_result = run_on_result,
					    .on_fatal = run_on_fatal,
				    },
				    &r, &r.session, err, sizeof(err));
	if (rc < 0) {
		cli_error("run: %s", err[0] ? err : strerror(-rc));
		free(file_code);
		return rc == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CANNOT_START;
	}
	cli_signals_start(r.loop, r.sig, run_signal_cb, &r);
	for (size_t i = 0; i <= ncodes && r.session; i++) {
		const char *code = i < ncodes ? codes[i] : file_code;
		size_t len = i < ncodes ? strlen(codes[i]) : file_len;
		if (!code)
			break;
		rc = ptybox_session_exec(r.session, i + 1, code, len, -1, !json);
		if (rc < 0) {
			cli_error("run: snippet %zu: %s", i + 1,
				  rc == -EINVAL ? "the source contains a NUL byte" : strerror(-rc));
			r.exit_code = CLI_EXIT_USAGE;
			run_close(&r);
			break;
		}
	}
	uv_run(r.loop, UV_RUN_DEFAULT);
	run_text_end(&r, 1); /* late output may have ended inside a sequence */
	run_text_end(&r, 2);
	free(file_code);
	if (uv_loop_close(r.loop) != 0)
		cli_error("run: internal error: handles left open");
	return r.exit_code;
}
