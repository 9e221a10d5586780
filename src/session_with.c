/*
 * session_with.c - a session in another's embedded sandbox (--with, ptybox.h's
 * with): the sharing, both ways (who shares whose, a list on the one shared),
 * and, at each start, the sandbox to join (sandbox.h's join). session.c owns
 * the start itself.
 */
#include <errno.h>
#include <stdio.h>

#include "options.h"
#include "sandbox.h"
#include "instance.h"
#include "session_internal.h"

int session_with_check(ptybox_session *s, ptybox_session *given, ptybox_session **out, char *err,
		       size_t errlen)
{
	ptybox_session *with = given;
	while (with && with->with) /* a sharer's sandbox is its with's */
		with = with->with;
	*out = with;
	if (!with)
		return 0;
	if (with->topts.kind != TRANSPORT_LOCAL || s->topts.kind != TRANSPORT_LOCAL) {
		snprintf(err, errlen, "--with shares an embedded sandbox (--via local): %s",
			 with->topts.kind != TRANSPORT_LOCAL
				 ? "that session runs elsewhere; start this one with its --via"
				 : "this session's --via would run it elsewhere");
		return -EINVAL;
	}
	if (with->state == S_CLOSING) {
		snprintf(err, errlen, "--with: that session is closing");
		return -ESRCH;
	}
	return 0;
}

void session_with_join(ptybox_session *s, ptybox_session *with)
{
	if (!with)
		return;
	s->opts.with = with;
	s->with = with;
	s->next_sharer = with->sharers;
	with->sharers = s;
}

int session_with_sandbox(ptybox_session *s, char *why, size_t whylen)
{
	ptybox_session *w = s->with;
	const struct sandbox *sb = NULL;
	if (w && (w->state == S_IDLE || w->state == S_RUNNING) && w->in)
		sb = transport_sandbox(w->in->transport);
	if (sb && sandbox_running(sb)) {
		s->topts.sandbox.join = sb;
		s->with_wait_until = 0;
		return 1;
	}
	/* Its own restart under way, or about to be (its sandbox died with ours,
	 * and its session may learn it after ours): ours waits for it, within a
	 * boot's time. */
	uint64_t now = uv_now(s->loop);
	if (w && w->state != S_FATAL && w->state != S_CLOSING) {
		if (!s->with_wait_until)
			s->with_wait_until = now + options_seconds_ms(s->opts.boot_timeout);
		if (now < s->with_wait_until)
			return 0;
	}
	s->with_wait_until = 0; /* (the next start waits afresh) */
	snprintf(why, whylen, "the sandbox of --with is %s",
		 !w			  ? "gone (its session was closed)"
		 : w->state == S_FATAL	  ? "gone (its session is dead)"
		 : w->state == S_STARTING ? "still starting"
					  : "not running");
	return -1;
}

/* Out of --with's lists both ways: a closed session is no one's sandbox (its
 * sharers' next start says so) and shares none. */
void session_unshare(ptybox_session *s)
{
	for (ptybox_session *b = s->sharers, *next; b; b = next) {
		next = b->next_sharer;
		b->with = NULL;
		b->next_sharer = NULL;
	}
	s->sharers = NULL;
	if (s->with) {
		ptybox_session **p = &s->with->sharers;
		while (*p && *p != s)
			p = &(*p)->next_sharer;
		if (*p)
			*p = s->next_sharer;
		s->with = NULL;
	}
}
