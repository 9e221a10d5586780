/*
 * session_stdin.c - a session's stdin stream: the bytes its owner gives with
 * ptybox_session_stdin(), on their way to the kernel's stdin pipe, which the
 * snippets run with stdin_stream read as fd 0 and sys.stdin.
 *
 * One chunk at a time, the next only once the relay acked the last (it is all
 * in the pipe): the owner reads its own input only as fast as the code takes
 * it, and memory stays bounded on every side (a chunk here, one in the relay,
 * a pipe's worth in the kernel). A chunk waits here while no instance is
 * ready; one sent to an instance that died is lost (as a dead process's unread
 * stdin is), and a fresh instance is told the end again.
 */
#include <errno.h>
#include <stdlib.h>

#include "instance.h"
#include "log.h"
#include "protocol.h"
#include "session_internal.h"

/* Ids of stdin requests: apart from snippets' and queries', so that an error
 * frame naming one is never taken for a snippet's. */
#define SESSION_STDIN_WIRE ((uint64_t)3 << 51)

/* The waiting request to the instance, if it is ready for it. */
static void session_stdin_send(ptybox_session *s)
{
	if (!s->in_stream.line || !s->in || s->told != s->in || s->in->state != I_READY)
		return;
	char *line = s->in_stream.line;
	s->in_stream.line = NULL;
	s->in_stream.to = s->in;
	if (instance_write(s->in, line, s->in_stream.line_len) < 0)
		log_to(s->log, "session: a stdin request could not be sent");
}

int ptybox_session_stdin(ptybox_session *s, const void *data, size_t len, bool eof)
{
	if (s->state == S_CLOSING || s->in_stream.eof)
		return -EPIPE;
	if (s->in_stream.inflight)
		return -EBUSY;
	if (len > PTYBOX_STDIN_CHUNK)
		return -E2BIG;
	char *line;
	size_t n;
	int rc = protocol_stdin_line(SESSION_STDIN_WIRE + ++s->in_stream.seq, data, len, eof, &line,
				     &n);
	if (rc < 0)
		return rc;
	s->in_stream.line = line;
	s->in_stream.line_len = n;
	s->in_stream.inflight = true;
	s->in_stream.eof = eof;
	session_stdin_send(s);
	return 0;
}

bool ptybox_session_stdin_ready(const ptybox_session *s)
{
	return s->state != S_CLOSING && !s->in_stream.eof && !s->in_stream.inflight;
}

static void session_stdin_done(ptybox_session *s)
{
	s->in_stream.inflight = false;
	if (s->cb.on_stdin_ready && !s->in_stream.eof)
		s->cb.on_stdin_ready(s, s->data);
}

void session_stdin_ack(ptybox_session *s, const struct protocol_frame *f)
{
	if (s->in_stream.inflight && !s->in_stream.line && f->has_id &&
	    f->id == SESSION_STDIN_WIRE + s->in_stream.seq)
		session_stdin_done(s);
}

void session_stdin_ready(ptybox_session *s)
{
	if (s->in_stream.to == s->in || (!s->in_stream.to && !s->in_stream.line))
		return session_stdin_send(s); /* (the same instance: its acks come) */
	bool lost = s->in_stream.inflight && !s->in_stream.line;
	if (lost || (s->in_stream.eof && !s->in_stream.line)) {
		/* What went to the interpreter before this one is gone with it; the
		 * end, if it was given, is told to this one. */
		free(s->in_stream.line);
		s->in_stream.line = NULL;
		if (s->in_stream.eof &&
		    protocol_stdin_line(SESSION_STDIN_WIRE + ++s->in_stream.seq, "", 0, true,
					&s->in_stream.line, &s->in_stream.line_len) < 0)
			s->in_stream.line = NULL;
		if (s->in_stream.line)
			s->in_stream.inflight = true; /* (acked as any other) */
		else
			s->in_stream.inflight = false;
	}
	session_stdin_send(s);
	if (lost && !s->in_stream.eof)
		session_stdin_done(s);
}

void session_stdin_free(ptybox_session *s)
{
	free(s->in_stream.line);
	s->in_stream.line = NULL;
}
