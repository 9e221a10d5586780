/*
 * transcript.c - the bytes a terminal after a Python prompt shows for a session's executions.
 *
 * One transcript per session feeds every view of it (the server's screen, a recording), so
 * that they cannot disagree. It knows where the cursor is only as far as it matters for a
 * prompt: at a line's start or not, following the output byte by byte with escape sequences
 * skipped (a colour reset after the last newline leaves the cursor where it was), so that a
 * prompt after output without a final newline goes on a line of its own, as in the REPL.
 */
#include "transcript.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { T_TEXT, T_ESC, T_CSI, T_OSC, T_OSC_ESC };

void transcript_init(struct transcript *t, bool color, transcript_emit_fn emit, void *data)
{
	memset(t, 0, sizeof(*t));
	t->emit = emit;
	t->data = data;
	t->color = color;
	t->fresh = true;
}

/* Where the cursor is after bytes, as far as a line's start goes. */
static void transcript_track(struct transcript *t, const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)bytes[i];
		switch (t->esc) {
		case T_ESC: t->esc = c == '[' ? T_CSI : c == ']' ? T_OSC : T_TEXT; continue;
		case T_CSI:
			if (c >= 0x40 && c <= 0x7e)
				t->esc = T_TEXT;
			continue;
		case T_OSC: t->esc = c == 0x07 ? T_TEXT : c == 0x1b ? T_OSC_ESC : T_OSC; continue;
		case T_OSC_ESC: t->esc = c == '\\' ? T_TEXT : T_OSC; continue;
		default: break;
		}
		if (c == 0x1b)
			t->esc = T_ESC;
		else if (c == '\n' || c == '\r')
			t->fresh = true;
		else if ((c >= 0x20 && c != 0x7f) || c == '\t')
			t->fresh = false;
	}
}

static void transcript_emit(struct transcript *t, const char *bytes, size_t len, bool sandbox)
{
	transcript_track(t, bytes, len);
	t->emit(t->data, bytes, len, sandbox);
}

size_t transcript_input_format(const char *code, size_t len, bool fresh, char *out)
{
	size_t o = 0;
	/* A prompt starts on a line of its own, in the default look. */
	memcpy(out, "\x1b[0m", 4);
	o = 4;
	if (!fresh)
		out[o++] = '\n';
	memcpy(out + o, ">>> ", 4);
	o += 4;
	if (len > 0 && code[len - 1] == '\n')
		len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)code[i];
		if (c == '\n') {
			memcpy(out + o, "\n... ", 5);
			o += 5;
		} else if ((c < 0x20 && c != '\t') || c == 0x7f) {
			out[o++] = '^';
			out[o++] = (char)(c ^ 0x40);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = '\n';
	return o;
}

int transcript_input(struct transcript *t, const char *code, size_t len)
{
	char *buf = malloc(TRANSCRIPT_INPUT_MAX(len));
	if (!buf)
		return -ENOMEM;
	/* (an escape sequence the output left open ends here, as the prompt's reset ends it) */
	t->esc = T_TEXT;
	size_t n = transcript_input_format(code, len, t->fresh, buf);
	transcript_emit(t, buf, n, false);
	free(buf);
	return 0;
}

void transcript_output(struct transcript *t, const char *text, size_t len)
{
	if (len)
		transcript_emit(t, text, len, true);
}

void transcript_display(struct transcript *t, const char *text)
{
	if (!text)
		return;
	transcript_emit(t, text, strlen(text), true);
	transcript_emit(t, "\n", 1, false);
}

void transcript_result(struct transcript *t, const struct transcript_result *r)
{
	if (r->value) {
		transcript_emit(t, r->value, strlen(r->value), true);
		transcript_emit(t, "\n", 1, false);
	}
	bool tb = r->traceback && r->traceback[0];
	if (!tb && !r->error_name) {
		transcript_emit(t, "", 0, false); /* (the output's text ends) */
		return;
	}
	if (t->color)
		transcript_emit(t, "\x1b[31m", 5, false);
	if (tb) {
		transcript_emit(t, r->traceback, strlen(r->traceback), true);
	} else {
		transcript_emit(t, r->error_name, strlen(r->error_name), true);
		if (r->error_value && r->error_value[0]) {
			transcript_emit(t, ": ", 2, false);
			transcript_emit(t, r->error_value, strlen(r->error_value), true);
		}
		transcript_emit(t, "\n", 1, false);
	}
	transcript_emit(t, t->color ? "\x1b[0m" : "", t->color ? 4 : 0, false);
}

static const char *transcript_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int transcript_result_json(struct transcript *t, const cJSON *result)
{
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(result, "error");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(error, "traceback"), *line;
	char *traceback = NULL;
	size_t n = 0, o = 0;
	cJSON_ArrayForEach(line, tb) n += cJSON_IsString(line) ? strlen(line->valuestring) : 0;
	if (n && !(traceback = malloc(n + 1)))
		return -ENOMEM;
	cJSON_ArrayForEach(line, tb)
	{
		if (cJSON_IsString(line)) {
			memcpy(traceback + o, line->valuestring, strlen(line->valuestring));
			o += strlen(line->valuestring);
		}
	}
	if (traceback)
		traceback[o] = '\0';
	transcript_result(t, &(struct transcript_result){
				     .value = transcript_str(
					     cJSON_GetObjectItemCaseSensitive(result, "result"),
					     "text/plain"),
				     .error_name = transcript_str(error, "name"),
				     .error_value = transcript_str(error, "value"),
				     .traceback = traceback,
			     });
	free(traceback);
	return 0;
}
