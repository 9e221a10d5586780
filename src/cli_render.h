/*
 * cli_render.h - a result and its output as `ptybox run` shows them, for
 * every command that shows one (run, exec, result, watch): output as it
 * comes, the last expression's value, tracebacks on stderr; --json prints one
 * result object per line.
 */
#ifndef PTYBOX_CLI_RENDER_H
#define PTYBOX_CLI_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cli_picture.h"
#include "ptybox.h"
#include "term_safe.h"

struct cli_render {
	bool json, color;
	bool safe[3];			/* [fd]: text to fd goes through safe_state[fd] */
	struct term_safe safe_state[3]; /* [1] stdout, [2] stderr */
	const char *what;		/* "snippet" or "execution", in messages */
	struct cli_pictures *pictures;	/* NULL: pictures shown as their text */
	/* When set, told each picture's path once it is printed in place of a rich
	 * output or a value: what a recording's transcript must show there (the
	 * text/plain it would have had stood for nothing on the terminal). */
	void (*on_picture)(void *data, const char *path);
	void *on_picture_data;
	/* Figures shown as their snippet ended, held to come after its value
	 * (cli_render_display_at_end); at most what one result holds. */
	cJSON *held;
	bool value_pictured; /* the last result's value was shown as a picture */
};

/* What a result shows in human form. */
struct cli_render_result {
	uint64_t id;
	const char *value, *error_name, *error_value, *traceback, *message;
	bool truncated, state_lost;
	uint64_t dropped_bytes;
	const cJSON *bundle; /* the value's MIME bundle (a picture?), or NULL */
};

void cli_render_init(struct cli_render *r, bool json, bool raw, const char *what);
/* The code's output may redraw its line with a CR (--tty: progress bars). */
void cli_render_pass_cr(struct cli_render *r);
/* Writes all of s to fd; if that fails the output is lost: says so and exits 1. */
void cli_render_out(int fd, const char *s, size_t len);
/* Text the sandbox wrote, to fd: through its filter when fd takes one. */
void cli_render_text(struct cli_render *r, int fd, const char *s, size_t len);
/* What the filter of fd holds comes out (escaped): the text it began ends. */
void cli_render_text_end(struct cli_render *r, int fd);
/* A stream's chunk ("stdout" or "stderr"); nothing with --json. */
void cli_render_stream(struct cli_render *r, const char *name, const char *text, size_t len);
/* A rich output: with r->pictures, its picture saved (cli_pictures_show);
 * else its text/plain form, or its image named; nothing with --json. 1 when
 * a picture's path stands for it (on_picture was told), else 0. */
int cli_render_display(struct cli_render *r, const cJSON *bundle);
/* The same for a display the code showed as it ended (a pyplot figure still
 * open: "at_end"): held, and shown after the value, as Jupyter shows a
 * cell's figures below its Out (by cli_render_result, or any output). */
void cli_render_display_at_end(struct cli_render *r, const cJSON *bundle);
/* What is held comes out now; the held list is freed. */
void cli_render_held(struct cli_render *r);
/* The end of a snippet in human form. */
void cli_render_result(struct cli_render *r, const struct cli_render_result *res);
/* The same for a result of the C API (run's, repl's): its value's bundle
 * included, so that a value that is a picture is saved. */
void cli_render_session_result(struct cli_render *r, const struct ptybox_result *res);
/* A message of ptybox's that may quote the sandbox, on stderr, filtered:
 * prefix + msg, or "WHAT ID: msg" without prefix. */
void cli_render_message(struct cli_render *r, const char *prefix, uint64_t id, const char *msg);
/* o as one line of JSON on stdout, C1 controls and bidi overrides escaped. */
void cli_render_json_line(const cJSON *o);
/* A result object of the protocol, in human form (or as a line with --json,
 * its "id" the execution's, which takes result apart). 1 when its status is
 * ok, 0 when not, -1 when it is not a result. */
int cli_render_result_json(struct cli_render *r, cJSON *result);

#endif
