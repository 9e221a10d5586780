/*
 * embed.c - the demo of examples/demo.sh, through libptybox's public API only.
 *
 * One session on a libuv loop of our own; the demo's snippets are queued at
 * once and run in order, so state carries from one to the next; each result
 * is shown the way `ptybox run` shows it: output on stdout, the value of the
 * last expression (when there is one), the traceback of a failure on stderr.
 * The last snippet fails on purpose. Exit status as `ptybox run`: 0 when
 * every snippet was ok, 1 when one was not, 125 when the session could not
 * start.
 *
 * Build against an installed libptybox:
 *   cc embed.c $(pkg-config --cflags --libs libptybox) -o embed
 * Run: ./embed [VIA]   (VIA as ptybox's --via: local, the default, or none)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ptybox.h>

static const char *const demo[] = {
	"print('hello, world!')",
	"x = 10",
	"y = 5",
	"result = x + y",
	"print(f'The result is: {result}')",
	"1 / 0",
};
#define DEMO_SNIPPETS (sizeof(demo) / sizeof(demo[0]))

struct embed {
	size_t results; /* results seen so far */
	int status;	/* the exit status so far */
	bool closing;	/* ptybox_session_close() called */
	bool closed;	/* on_closed came */
};

static void embed_close(ptybox_session *s, struct embed *e)
{
	if (!e->closing) {
		e->closing = true;
		ptybox_session_close(s);
	}
}

static void embed_result_cb(ptybox_session *s, const struct ptybox_result *r, void *data)
{
	struct embed *e = data;

	fwrite(r->stdout_text, 1, r->stdout_len, stdout);
	if (r->value_text)
		printf("%s\n", r->value_text);
	fflush(stdout);
	fwrite(r->stderr_text, 1, r->stderr_len, stderr);
	if (r->traceback)
		fputs(r->traceback, stderr);
	if (r->message)
		fprintf(stderr, "embed: snippet %llu: %s\n", (unsigned long long)r->id, r->message);
	if (r->status != PTYBOX_OK && e->status == 0)
		e->status = 1;
	if (++e->results == DEMO_SNIPPETS)
		embed_close(s, e);
}

static void embed_fatal_cb(ptybox_session *s, const char *message, void *data)
{
	struct embed *e = data;

	fprintf(stderr, "embed: cannot start the session: %s\n", message);
	e->status = 125;
	embed_close(s, e);
}

static void embed_closed_cb(ptybox_session *s, void *data)
{
	struct embed *e = data;

	(void)s;
	e->closed = true;
}

int main(int argc, char **argv)
{
	struct embed e = {0};
	struct ptybox_callbacks cb = {
		.on_result = embed_result_cb,
		.on_fatal = embed_fatal_cb,
		.on_closed = embed_closed_cb,
	};
	struct ptybox_options o;
	ptybox_session *s;
	uv_loop_t loop;
	char err[512];
	int rc;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [VIA]\n", argv[0]);
		return 2;
	}
	rc = uv_loop_init(&loop);
	if (rc < 0) {
		fprintf(stderr, "embed: uv_loop_init: %s\n", uv_strerror(rc));
		return 1;
	}
	ptybox_options_init(&o);
	if (argc == 2)
		o.via = argv[1];
	rc = ptybox_session_new(&loop, &o, &cb, &e, &s, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "embed: %s\n", err);
		uv_loop_close(&loop);
		return 125;
	}
	for (size_t i = 0; i < DEMO_SNIPPETS; i++) {
		/* -1: the session's timeout; false: the whole result at the end. */
		rc = ptybox_session_exec(s, i + 1, demo[i], strlen(demo[i]), -1, false);
		if (rc < 0) {
			fprintf(stderr, "embed: exec: %s\n", strerror(-rc));
			e.status = 1;
			embed_close(s, &e);
			break;
		}
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	/* Every handle of the session closed: the loop closes cleanly. */
	rc = uv_loop_close(&loop);
	if (rc < 0 || !e.closed) {
		fprintf(stderr, "embed: the loop did not close cleanly: %s\n",
			rc < 0 ? uv_strerror(rc) : "no on_closed");
		return 1;
	}
	return e.status;
}
