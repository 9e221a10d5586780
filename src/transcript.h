/*
 * transcript.h - what a session shows, as a terminal after a Python prompt would: each
 * execution's code after ">>> " and "... ", then its output, then its value or its traceback.
 * Pure: decoded events in, terminal bytes out to one sink. The server's screen and a recording
 * are both fed from one transcript, so that they see the same bytes.
 */
#ifndef PTYBOX_TRANSCRIPT_H
#define PTYBOX_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The room transcript_input_format needs for len bytes of code: a newline becomes "\n... ",
 * five bytes; the prompt and its ends take at most 16. */
#define TRANSCRIPT_INPUT_MAX(len) (5 * (size_t)(len) + 16)

/* Where the bytes go. sandbox: they are the sandbox's own text (output, a value, a traceback),
 * which a sink that writes to a real terminal must filter; the rest (prompts, the code as
 * echoed, colours) is ptybox's. A sandbox text ends before each of ptybox's chunks. */
typedef void (*transcript_emit_fn)(void *data, const char *bytes, size_t len, bool sandbox);

struct transcript {
	transcript_emit_fn emit;
	void *data;
	bool color;	   /* tracebacks in red, as human `run` shows them */
	bool fresh;	   /* the cursor is at a line's start */
	unsigned char esc; /* 0, or where in an escape sequence the output is */
};

/* What a result shows after the output; any field may be NULL. */
struct transcript_result {
	const char *value, *error_name, *error_value, *traceback;
};

void transcript_init(struct transcript *t, bool color, transcript_emit_fn emit, void *data);
/* Code as the Python REPL echoes it into out (room: TRANSCRIPT_INPUT_MAX(len)): on a line of
 * its own (fresh: the cursor is at a line's start already), ">>> " before the first line and
 * "... " before each next one, then a newline. Control characters show as ^X, as a tty's
 * echoctl shows them, so the code cannot draw on the screen. Returns the bytes written. */
size_t transcript_input_format(const char *code, size_t len, bool fresh, char *out);
/* An execution starts: its code after the prompt. Returns 0 or -ENOMEM. */
int transcript_input(struct transcript *t, const char *code, size_t len);
/* Output of the code (stdout or stderr, late output too), as it came. */
void transcript_output(struct transcript *t, const char *text, size_t len);
/* A rich output's text/plain form, on a line of its own, as a terminal REPL shows it. */
void transcript_display(struct transcript *t, const char *text);
/* An execution ends: its value, then its traceback (or "Name: value"), red when color. */
void transcript_result(struct transcript *t, const struct transcript_result *r);
/* The same from a result object of the protocol (ptybox-protocol(7): "result"'s text/plain,
 * "error"'s name, value and traceback lines), as a client of the server gets it (attach,
 * watch). Returns 0 or -ENOMEM. */
int transcript_result_json(struct transcript *t, const cJSON *result);

#endif
