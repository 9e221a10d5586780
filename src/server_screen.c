/*
 * server_screen.c - a session's screen in the server (capture): a libvterm
 * screen fed with the session's transcript through a bounded tail of its
 * output, given back (its cells) when idle.
 */
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "screen.h"
#include "server_internal.h"

/* Bytes of output the tail keeps; how long a screen stays idle before its
 * cells go (srv_screens_sweep). */
#define SRV_SCREEN_TAIL	   ((size_t)64 << 10)
#define SRV_SCREEN_IDLE_MS 2000

/* Output goes to the screen through a tail of the last SRV_SCREEN_TAIL bytes,
 * fed when someone looks (capture) and by the sweep, once a second: 20 MB of
 * output would cost libvterm seconds of scrolling to show the last 24 lines,
 * which the tail holds (a line cut off at its front starts at its next
 * newline), and a session busy with small snippets pays for its screen once a
 * second, not twice a round trip. The tail is larger than the screen and its
 * scrollback together. What is lost is the effect of sequences in the part
 * dropped (a colour set there and never reset): the screen is a view. */
void srv_screen_out(struct srv_session *ss, const char *text, size_t len)
{
	if (!ss->screen || !len)
		return;
	/* Twice the tail's room, so that the old bytes move once per SRV_SCREEN_TAIL
	 * taken, not on every chunk (a line of print each: 64 KiB moved per line). */
	if (!ss->tail) {
		if (!(ss->tail = malloc(SRV_SCREEN_TAIL)))
			return;
		ss->tail_cap = SRV_SCREEN_TAIL;
	}
	if (ss->tail_len + len > ss->tail_cap && ss->tail_cap < 2 * SRV_SCREEN_TAIL) {
		/* (grown only for output: a round trip's prompt and value stay small) */
		char *more = realloc(ss->tail, 2 * SRV_SCREEN_TAIL);
		if (!more)
			return;
		ss->tail = more;
		ss->tail_cap = 2 * SRV_SCREEN_TAIL;
	}
	if (len >= SRV_SCREEN_TAIL) {
		text += len - SRV_SCREEN_TAIL;
		len = SRV_SCREEN_TAIL;
		ss->tail_len = 0;
		ss->tail_cut = true;
	} else if (ss->tail_len + len > 2 * SRV_SCREEN_TAIL) {
		size_t keep = SRV_SCREEN_TAIL - len;
		memmove(ss->tail, ss->tail + ss->tail_len - keep, keep);
		ss->tail_len = keep;
		ss->tail_cut = true;
	}
	memcpy(ss->tail + ss->tail_len, text, len);
	ss->tail_len += len;
}

void srv_screen_flush(struct srv_session *ss)
{
	if (!ss->screen || !ss->tail)
		return;
	const char *p = ss->tail;
	size_t n = ss->tail_len;
	if (n > SRV_SCREEN_TAIL) { /* (the last SRV_SCREEN_TAIL bytes are the tail) */
		p += n - SRV_SCREEN_TAIL;
		n = SRV_SCREEN_TAIL;
		ss->tail_cut = true;
	}
	if (ss->tail_cut) { /* from the first whole line on */
		const char *nl = memchr(p, '\n', n);
		if (nl) {
			n -= (size_t)(nl + 1 - p);
			p = nl + 1;
		}
	}
	if (n)
		screen_feed(ss->screen, p, n);
	free(ss->tail);
	ss->tail = NULL;
	ss->tail_len = ss->tail_cap = 0;
	ss->tail_cut = false;
	ss->screen_open = true;
	ss->screen_used_ms = uv_now(ss->server->loop);
}

/* A screen idle this long gives its terminal back (screen_shrink keeps the
 * picture): an idle session costs its text, not libvterm's cells. And a
 * recording's events of a long execution reach its file within a second. */
void srv_screens_sweep(struct server *sv)
{
	uint64_t now = uv_now(sv->loop);
	for (struct srv_session *ss = sv->sessions; ss; ss = ss->next) {
		record_flush(ss->rec);
		if (ss->tail && ss->tail_len) /* (its cells, open now: shrunk when idle) */
			srv_screen_flush(ss);
	}
	for (struct srv_session *ss = sv->sessions; ss; ss = ss->next)
		if (ss->screen && ss->screen_open && !ss->live &&
		    now - ss->screen_used_ms >= SRV_SCREEN_IDLE_MS) {
			srv_screen_flush(ss);
			screen_shrink(ss->screen);
			ss->screen_open = false;
		}
}

void srv_session_capture(struct srv_session *ss, struct server_client *c, const cJSON *req,
			 const cJSON *id)
{
	const cJSON *escapes = cJSON_GetObjectItemCaseSensitive(req, "escapes");
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(req, "start");
	if (escapes && !cJSON_IsBool(escapes))
		return srv_reply_error(c, id, "usage", "\"escapes\" must be true or false");
	if (start &&
	    (!cJSON_IsNumber(start) || start->valuedouble != (double)(long)start->valuedouble))
		return srv_reply_error(c, id, "usage",
				       "\"start\" must be a line: 0 the screen's first, -N N lines "
				       "into the scrollback");
	if (!ss->screen)
		return srv_reply_error(c, id, "nomem", "session '%s' has no screen (out of memory)",
				       ss->name);
	srv_screen_flush(ss);
	char *text = NULL;
	size_t n = 0;
	int rc = screen_capture(ss->screen, cJSON_IsTrue(escapes),
				start ? (long)start->valuedouble : 0, &text, &n);
	if (!ss->live)
		screen_shrink(ss->screen);
	if (rc < 0)
		return srv_reply_error(c, id, "nomem", "capture: %s", strerror(-rc));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "text", text);
	free(text);
	srv_reply_ok(c, id, o);
}
