/* linebuf.c - newline-delimited lines out of a byte stream, bounded. */
#include "linebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What a buffer may keep between lines: more goes back once it is unused. */
#define LINEBUF_KEEP ((size_t)256 << 10)

void linebuf_init(struct linebuf *lb, size_t max_line)
{
	memset(lb, 0, sizeof(*lb));
	lb->max_line = max_line;
}

int linebuf_reserve(struct linebuf *lb, size_t want)
{
	if (lb->cap - lb->len >= want + 1) /* (+1: the NUL a last line gets) */
		return 0;
	size_t ncap = lb->cap * 2 > lb->len + want + 1 ? lb->cap * 2 : lb->len + want + 1;
	char *nb = realloc(lb->buf, ncap);
	if (!nb)
		return -ENOMEM;
	lb->buf = nb;
	lb->cap = ncap;
	return 0;
}

static void linebuf_emit(struct linebuf *lb, size_t start, size_t end, linebuf_cb cb, void *data)
{
	size_t n = end - start;
	lb->buf[end] = '\0';
	if (n && lb->buf[start + n - 1] == '\r')
		lb->buf[start + --n] = '\0';
	cb(data, lb->buf + start, n, false);
}

void linebuf_commit(struct linebuf *lb, size_t n, linebuf_cb cb, void *data)
{
	size_t start = 0;
	lb->len += n;
	for (;;) {
		char *nl = memchr(lb->buf + lb->scanned, '\n', lb->len - lb->scanned);
		if (!nl)
			break;
		size_t end = (size_t)(nl - lb->buf);
		if (lb->skipping)
			lb->skipping = false;
		else
			linebuf_emit(lb, start, end, cb, data);
		start = end + 1;
		lb->scanned = start;
	}
	memmove(lb->buf, lb->buf + start, lb->len - start);
	lb->len -= start;
	lb->scanned = lb->len;
	if (lb->len > lb->max_line) {
		/* Drop what we have; the rest of the line goes when its newline comes. */
		if (!lb->skipping)
			cb(data, NULL, 0, true);
		lb->skipping = true;
		lb->len = lb->scanned = 0;
	}
	/* One long line must not leave its buffer behind for good. */
	if (lb->cap > LINEBUF_KEEP && lb->len < lb->cap / 4) {
		size_t ncap = lb->len + 1 > LINEBUF_KEEP ? lb->len + 1 : LINEBUF_KEEP;
		char *nb = realloc(lb->buf, ncap);
		if (nb) {
			lb->buf = nb;
			lb->cap = ncap;
		}
	}
}

int linebuf_feed(struct linebuf *lb, const char *bytes, size_t n, linebuf_cb cb, void *data)
{
	while (n) {
		/* In pieces, so that a skipped line never takes more than the cap. */
		size_t chunk = n < lb->max_line + 1 ? n : lb->max_line + 1;
		if (linebuf_reserve(lb, chunk) < 0)
			return -ENOMEM;
		memcpy(lb->buf + lb->len, bytes, chunk);
		linebuf_commit(lb, chunk, cb, data);
		bytes += chunk;
		n -= chunk;
	}
	return 0;
}

void linebuf_finish(struct linebuf *lb, linebuf_cb cb, void *data)
{
	if (lb->len && !lb->skipping)
		linebuf_emit(lb, 0, lb->len, cb, data);
	lb->len = lb->scanned = 0;
	lb->skipping = false;
}

size_t linebuf_finish_cut(struct linebuf *lb)
{
	size_t n = lb->skipping ? 0 : lb->len;
	lb->len = lb->scanned = 0;
	lb->skipping = false;
	return n;
}

void linebuf_free(struct linebuf *lb)
{
	free(lb->buf);
	lb->buf = NULL;
	lb->len = lb->cap = lb->scanned = 0;
}
