/*
 * cli_render.c - results and output as a terminal user reads them.
 *
 * What the sandbox wrote goes to a terminal through a filter (term_safe.c),
 * one for stdout and one for stderr, each when that one is a terminal: a
 * snippet must not write the user's clipboard or hide lines. A stream's chunk
 * may end inside a sequence, which its filter holds; a whole text (a value, a
 * traceback) lets go of what its stream held before it starts, and of what it
 * held itself once it is written. --raw and pipes get the bytes as they are.
 * A command that sets r->pictures (run, repl) gets pictures saved and maybe
 * shown inline by cli_picture.c, their paths where their text would be.
 */
#define _GNU_SOURCE
#include "cli_render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "protocol.h"

/* Bytes of sandbox text filtered per write to a terminal. */
#define RENDER_SAFE_CHUNK ((size_t)64 << 10)

void cli_render_init(struct cli_render *r, bool json, bool raw, const char *what)
{
	memset(r, 0, sizeof(*r));
	r->json = json;
	r->color = isatty(2) && !getenv("NO_COLOR");
	r->what = what;
	if (raw)
		cli_error_raw = true; /* (its messages too, as they were) */
	/* (with --json, stdout is JSON, escaped its own way; stderr still gets
	 * ptybox's messages, which may quote the sandbox's terminal) */
	for (int fd = 1; fd <= 2; fd++) {
		r->safe[fd] = !raw && isatty(fd) && !(json && fd == 1);
		term_safe_init(&r->safe_state[fd]);
	}
}

void cli_render_pass_cr(struct cli_render *r)
{
	for (int fd = 1; fd <= 2; fd++)
		term_safe_pass_cr(&r->safe_state[fd]);
}

void cli_render_out(int fd, const char *s, size_t len)
{
	int rc = cli_write_all(fd, s, len);
	if (rc < 0) { /* output lost: say so (on stderr, unless that failed) */
		if (rc != -EPIPE && fd != 2)
			cli_error("standard output: %s", strerror(-rc));
		_exit(CLI_EXIT_FAILED);
	}
}

static void render_outs(int fd, const char *s)
{
	cli_render_out(fd, s, strlen(s));
}

void cli_render_text(struct cli_render *r, int fd, const char *s, size_t len)
{
	static char buf[TERM_SAFE_OUT_MAX(RENDER_SAFE_CHUNK)];
	if (!r->safe[fd]) {
		cli_render_out(fd, s, len);
		return;
	}
	while (len) {
		size_t n = len < RENDER_SAFE_CHUNK ? len : RENDER_SAFE_CHUNK;
		cli_render_out(fd, buf, term_safe_feed(&r->safe_state[fd], s, n, buf));
		s += n;
		len -= n;
	}
}

void cli_render_text_end(struct cli_render *r, int fd)
{
	char buf[TERM_SAFE_OUT_MAX(0)];
	size_t n = r->safe[fd] ? term_safe_end(&r->safe_state[fd], buf) : 0;
	if (n)
		cli_render_out(fd, buf, n);
}

/* A whole text, after what its stream left held. */
static void render_whole_text(struct cli_render *r, int fd, const char *s)
{
	cli_render_text_end(r, fd);
	cli_render_text(r, fd, s, strlen(s));
	cli_render_text_end(r, fd);
}

void cli_render_message(struct cli_render *r, const char *prefix, uint64_t id, const char *msg)
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
	cli_render_text_end(r, 2);
	if (prefix)
		cli_error("%s%s", prefix, safe ? safe : msg);
	else
		cli_error("%s %llu: %s", r->what, (unsigned long long)id, safe ? safe : msg);
	free(safe);
}

void cli_render_stream(struct cli_render *r, const char *name, const char *text, size_t len)
{
	if (r->held)
		cli_render_held(r); /* (late output: after what came before it) */
	if (!r->json)
		cli_render_text(r, strcmp(name, "stderr") == 0 ? 2 : 1, text, len);
}

/* A picture for bundle, saved and its path printed: 1 (on_picture told), or 0. */
static int render_picture(struct cli_render *r, const cJSON *bundle)
{
	if (!r->pictures || !cli_pictures_show(r->pictures, bundle))
		return 0;
	if (r->on_picture)
		r->on_picture(r->on_picture_data, r->pictures->last);
	return 1;
}

/* Rich output as a terminal can show it, like Jupyter's console: a picture
 * saved (with r->pictures), else its text/plain form (a figure's repr, say);
 * an image without one is named. */

void cli_render_display_at_end(struct cli_render *r, const cJSON *bundle)
{
	if (r->json || !cJSON_IsObject(bundle))
		return;
	if (!r->held && !(r->held = cJSON_CreateArray()))
		abort(); /* out of memory is fatal (STYLE.md) */
	cJSON *copy = cJSON_Duplicate(bundle, true);
	if (!copy || !cJSON_AddItemToArray(r->held, copy))
		abort();
}

void cli_render_held(struct cli_render *r)
{
	cJSON *held = r->held;
	r->held = NULL;
	const cJSON *d;
	cJSON_ArrayForEach(d, held) cli_render_display(r, d);
	cJSON_Delete(held);
}

int cli_render_display(struct cli_render *r, const cJSON *bundle)
{
	if (r->json)
		return 0;
	if (r->held)
		cli_render_held(r); /* (in the order they came) */
	const char *text = protocol_str(bundle, "text/plain");
	const char *png = protocol_str(bundle, "image/png");
	cli_render_text_end(r, 1); /* (the picture comes after the text before it) */
	if (render_picture(r, bundle))
		return 1;
	if (text) {
		render_whole_text(r, 1, text);
		render_outs(1, "\n");
	} else if (png) {
		char note[64];
		snprintf(note, sizeof(note), "[image/png, %zu bytes]\n", strlen(png) / 4 * 3);
		render_outs(1, note);
	}
	return 0;
}

void cli_render_result(struct cli_render *r, const struct cli_render_result *res)
{
	cli_render_text_end(r, 1); /* the snippet's streams end with it */
	cli_render_text_end(r, 2);
	cJSON *held = r->held; /* (after the value) */
	r->held = NULL;
	r->value_pictured = false;
	if (res->bundle && render_picture(r, res->bundle)) {
		/* the value is a picture: its path stands for its repr */
		r->value_pictured = true;
	} else if (res->value) {
		render_whole_text(r, 1, res->value);
		render_outs(1, "\n");
	}
	r->held = held;
	cli_render_held(r);
	if (res->error_name) {
		if (r->color)
			render_outs(2, "\033[31m");
		if (res->traceback && res->traceback[0]) {
			render_whole_text(r, 2, res->traceback);
		} else {
			render_whole_text(r, 2, res->error_name);
			if (res->error_value && res->error_value[0]) {
				render_outs(2, ": ");
				render_whole_text(r, 2, res->error_value);
			}
			render_outs(2, "\n");
		}
		if (r->color)
			render_outs(2, "\033[0m");
	}
	if (res->truncated)
		cli_error("%s %llu: output truncated, %llu bytes dropped", r->what,
			  (unsigned long long)res->id, (unsigned long long)res->dropped_bytes);
	if (res->message)
		cli_render_message(r, NULL, res->id, res->message);
	else if (res->state_lost) /* (a restart asked for says nothing else) */
		cli_error("%s %llu: ran on a fresh interpreter: the state before it is lost",
			  r->what, (unsigned long long)res->id);
}

void cli_render_session_result(struct cli_render *r, const struct ptybox_result *res)
{
	cli_render_result(r, &(struct cli_render_result){
				     .id = res->id,
				     .value = res->value_text,
				     .error_name = res->error_name,
				     .error_value = res->error_value,
				     .traceback = res->traceback,
				     .message = res->message,
				     .truncated = res->truncated,
				     .state_lost = res->state_lost,
				     .dropped_bytes = res->dropped_bytes,
				     .bundle = res->detail ? res->detail->bundle : NULL,
			     });
}

void cli_render_json_line(const cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	size_t n = s ? strlen(s) : 0;
	if (s)
		s = protocol_json_escape_unsafe(s, &n);
	if (s) {
		s[n] = '\n'; /* (over the NUL) */
		cli_render_out(1, s, n + 1);
		cJSON_free(s);
	}
}

static uint64_t render_uint(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

int cli_render_result_json(struct cli_render *r, cJSON *result)
{
	const char *status = protocol_str(result, "status");
	if (!status)
		return -1;
	int ok = strcmp(status, "ok") == 0; /* (with --json, result is taken apart) */
	uint64_t id = render_uint(result, "exec");
	if (r->json) {
		/* as run prints it: the execution's id first */
		cJSON *line = cJSON_CreateObject();
		cJSON *exec = cJSON_GetObjectItemCaseSensitive(result, "exec");
		cJSON_AddItemToObject(line, "id",
				      exec ? cJSON_Duplicate(exec, 1) : cJSON_CreateNull());
		cJSON_DeleteItemFromObjectCaseSensitive(result, "id");
		while (line && result->child) {
			cJSON *m = cJSON_DetachItemViaPointer(result, result->child);
			cJSON_AddItemToObject(line, m->string, m);
		}
		cli_render_json_line(line);
		cJSON_Delete(line);
		return ok;
	}
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(result, "error");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(error, "traceback");
	char *traceback = NULL;
	if (cJSON_IsArray(tb)) {
		size_t n = 0, o = 0;
		const cJSON *line;
		cJSON_ArrayForEach(line, tb) n +=
			cJSON_IsString(line) ? strlen(line->valuestring) : 0;
		traceback = malloc(n + 1);
		cJSON_ArrayForEach(line, tb)
		{
			if (traceback && cJSON_IsString(line)) {
				size_t l = strlen(line->valuestring);
				memcpy(traceback + o, line->valuestring, l);
				o += l;
			}
		}
		if (traceback)
			traceback[o] = '\0';
	}
	const cJSON *truncated = cJSON_GetObjectItemCaseSensitive(result, "truncated");
	struct cli_render_result res = {
		.id = id,
		.value = protocol_str(cJSON_GetObjectItemCaseSensitive(result, "result"),
				      "text/plain"),
		.error_name = protocol_str(error, "name"),
		.error_value = protocol_str(error, "value"),
		.traceback = traceback,
		.message = protocol_str(result, "message"),
		.truncated = cJSON_IsTrue(truncated),
		.state_lost = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "state_lost")),
		.dropped_bytes = render_uint(result, "dropped_bytes"),
		.bundle = cJSON_GetObjectItemCaseSensitive(result, "result"),
	};
	cli_render_result(r, &res);
	free(traceback);
	return ok;
}
