/*
 * record.h - a recording of what a session showed, as an asciicast v2 file
 * (https://docs.asciinema.org/manual/asciicast/v2/) that `asciinema play` and `asciinema cat`
 * take: a header line, then an event a line, [time, "o", text] for what the terminal showed
 * and [time, "m", label] at the start of each execution.
 *
 * How a prompt wires one (run, the server, a repl):
 *   record_open(&rec, &cfg, err, sizeof(err));      at the start (an error is the user's)
 *   transcript_init(&ts, color, record_transcript_emit, rec);
 *   record_exec(rec, id, code, len); transcript_input(&ts, code, len);   an execution starts
 *   transcript_output(&ts, text, len);                                   its output, as it comes
 *   transcript_result(&ts, &res); record_flush(rec);                     it ended
 *     (a client of the server, with the result object: transcript_result_json(&ts, result))
 *   record_resize(rec, cols, rows);                                      the window changed
 *   record_close(rec);                                                   the end
 */
#ifndef PTYBOX_RECORD_H
#define PTYBOX_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The file's cap when none is given, and the range one may be given in. */
#define RECORD_MAX_DEFAULT ((uint64_t)64 << 20)
#define RECORD_MAX_MIN	   ((uint64_t)4 << 10)
#define RECORD_MAX_MAX	   ((uint64_t)1 << 40)
/* Bytes kept before a write: a write(2) to the file at most this often, and at each
 * execution's end (record_flush). */
#define RECORD_BUFFER ((size_t)64 << 10)

struct record;

struct record_config {
	const char *path;
	unsigned width, height; /* the terminal's, for the header */
	const char *title;	/* may be NULL */
	uint64_t max_bytes;	/* the file's cap; 0: RECORD_MAX_DEFAULT */
	/* Said once, when the recording stops early (its cap, a write error); may be NULL. */
	void (*warn)(void *data, const char *message);
	void *data;
};

/* Opens (creating it 0600, or truncating it) the regular file cfg->path and writes the header;
 * the file is locked (flock) until record_close, and one that another recording holds is
 * -EBUSY, left as it is. Returns 0, or a negative errno with err filled ("PATH: reason"). */
int record_open(struct record **out, const struct record_config *cfg, char *err, size_t errlen);
/* Terminal bytes, sandbox text or ptybox's own (see transcript.h): the sandbox's go through the
 * filter human `run` puts before a terminal (term_safe.c), since whoever plays the file later
 * has a real terminal; a newline becomes CR LF, as a tty's onlcr would make it. */
void record_output(struct record *r, const char *bytes, size_t len, bool sandbox);
/* A transcript_emit_fn that writes to the recording data. */
void record_transcript_emit(void *data, const char *bytes, size_t len, bool sandbox);
/* A marker event: label as given (cut to 200 bytes). */
void record_marker(struct record *r, const char *label);
/* The marker of an execution: "exec ID: its first line". */
void record_exec(struct record *r, uint64_t id, const char *code, size_t len);
/* A resize event: the terminal is now cols x rows. */
void record_resize(struct record *r, unsigned cols, unsigned rows);
/* What is buffered goes to the file. */
void record_flush(struct record *r);
/* Flushes, closes and frees (NULL: nothing). */
void record_close(struct record *r);
/* The recording stopped early: its cap, or a write error. */
bool record_stopped(const struct record *r);

/* Pure: the header line (with its newline) into *out, which the caller frees. term and shell
 * may be NULL (then left out). Returns 0 or -ENOMEM. */
int record_header_line(unsigned width, unsigned height, long long timestamp, const char *title,
		       const char *term, const char *shell, char **out, size_t *len);
/* Pure: the event line [t, "type", "data"] (with its newline) into *out, which the caller
 * frees. data need not be valid UTF-8 nor end in a NUL: an invalid byte or a NUL becomes
 * U+FFFD, so the line is valid JSON whatever the session wrote. Returns 0 or -ENOMEM. */
int record_event_line(double t, char type, const char *data, size_t len, char **out, size_t *olen);

#endif
