/*
 * outbuf.c - bounded head+tail capture of one output stream.
 *
 * A snippet may print a gigabyte; an LLM reading the result wants the first
 * and the last few KiB. So the first half of the cap is kept as it came, the
 * second half is a ring holding the most recent bytes, and everything in
 * between is only counted. Both halves are allocated lazily and grow with
 * what comes, doubling up to half the cap: most snippets print nothing, and a
 * cap far above the machine's memory (--max-output 64G) costs only what is
 * printed.
 */
#include "outbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void outbuf_init(struct outbuf *ob, size_t cap)
{
	memset(ob, 0, sizeof(*ob));
	ob->half = cap / 2;
}

#define OUTBUF_MIN_ALLOC 4096

/* Makes *buf hold at least need bytes (need <= half), doubling as it grows,
 * never past half; the bytes already in it stay. 0 or -ENOMEM. */
static int outbuf_reserve(struct outbuf *ob, char **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	size_t ncap = *cap ? *cap : OUTBUF_MIN_ALLOC;
	while (ncap < need && ncap < ob->half / 2)
		ncap *= 2;
	if (ncap < need || ncap > ob->half)
		ncap = need > ob->half / 2 ? ob->half : need;
	char *nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static void outbuf_ring_put(struct outbuf *ob, const char *data, size_t len)
{
	/* Only the last `half` bytes of data can survive. */
	if (len >= ob->half) {
		ob->dropped += ob->ring_len + (len - ob->half);
		memcpy(ob->ring, data + (len - ob->half), ob->half);
		ob->ring_start = 0;
		ob->ring_len = ob->half;
		return;
	}
	size_t overflow = ob->ring_len + len > ob->half ? ob->ring_len + len - ob->half : 0;
	ob->dropped += overflow;
	ob->ring_start = (ob->ring_start + overflow) % ob->half;
	ob->ring_len -= overflow;
	size_t end = (ob->ring_start + ob->ring_len) % ob->half;
	size_t first = ob->half - end < len ? ob->half - end : len;
	memcpy(ob->ring + end, data, first);
	memcpy(ob->ring, data + first, len - first);
	ob->ring_len += len;
}

int outbuf_append(struct outbuf *ob, const char *data, size_t len)
{
	ob->total += len;
	if (len == 0)
		return 0;
	if (ob->half == 0) {
		ob->dropped += len;
		return 0;
	}
	if (!ob->head_closed && ob->head_len < ob->half) {
		size_t n = ob->half - ob->head_len < len ? ob->half - ob->head_len : len;
		if (outbuf_reserve(ob, &ob->head, &ob->head_cap, ob->head_len + n) < 0) {
			ob->dropped += len;
			return -ENOMEM;
		}
		memcpy(ob->head + ob->head_len, data, n);
		ob->head_len += n;
		data += n;
		len -= n;
	}
	if (len == 0)
		return 0;
	/* Until it is full, the ring is a plain buffer from 0: it grows like the
	 * head, and is whole before it wraps. */
	size_t need = ob->ring_len + len < ob->half ? ob->ring_len + len : ob->half;
	if (outbuf_reserve(ob, &ob->ring, &ob->ring_cap, need) < 0) {
		ob->dropped += len;
		return -ENOMEM;
	}
	outbuf_ring_put(ob, data, len);
	return 0;
}

void outbuf_note_dropped(struct outbuf *ob, uint64_t n)
{
	/* The ring holds bytes from before the gap; keeping them would put the
	 * gap's marker in the wrong place, so they join the dropped middle. */
	ob->dropped += n + ob->ring_len;
	ob->head_closed = true;
	ob->total += n;
	ob->ring_start = 0;
	ob->ring_len = 0;
}

/* Length of s without a trailing, incomplete UTF-8 sequence. */
static size_t utf8_trim_end(const char *s, size_t len)
{
	size_t i = len, back = 0;
	while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return len;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (lead < 0x80 || need == back + 1)
		return len;
	return i - 1;
}

char *outbuf_take(struct outbuf *ob, size_t *len, uint64_t *dropped_out)
{
	char marker[96] = "";
	size_t head_len = utf8_trim_end(ob->head, ob->head_len);
	size_t skip = 0; /* ring bytes that continue a character cut by the ring */
	char *tail = NULL;

	if (ob->ring_len) {
		tail = malloc(ob->ring_len);
		if (!tail)
			return NULL;
		size_t first = ob->half - ob->ring_start < ob->ring_len ? ob->half - ob->ring_start
									: ob->ring_len;
		memcpy(tail, ob->ring + ob->ring_start, first);
		memcpy(tail + first, ob->ring, ob->ring_len - first);
		/* The ring begins where the head ended, or after a gap: either may have cut
		 * a character, whose continuation bytes are dropped with the rest of it
		 * (hostile-10: a head cut with nothing else dropped left a lone one). */
		if (ob->dropped || head_len < ob->head_len)
			while (skip < ob->ring_len && skip < 3 &&
			       ((unsigned char)tail[skip] & 0xC0) == 0x80)
				skip++;
	}
	uint64_t dropped = ob->dropped + (ob->head_len - head_len) + skip;
	if (dropped)
		snprintf(marker, sizeof(marker), OUTBUF_MARKER, (unsigned long long)dropped);
	size_t mlen = strlen(marker), tlen = ob->ring_len - skip;
	char *out = malloc(head_len + mlen + tlen + 1);
	if (!out) {
		free(tail);
		return NULL;
	}
	if (head_len)
		memcpy(out, ob->head, head_len);
	memcpy(out + head_len, marker, mlen);
	if (tlen)
		memcpy(out + head_len + mlen, tail + skip, tlen);
	out[head_len + mlen + tlen] = '\0';
	*len = head_len + mlen + tlen;
	*dropped_out = dropped;
	free(tail);
	outbuf_reset(ob);
	return out;
}

/* What a reset keeps allocated: a session's buffers shrink back after a
 * snippet that printed a lot, not holding its max_output until it ends. */
#define OUTBUF_KEEP ((size_t)1 << 20)

void outbuf_reset(struct outbuf *ob)
{
	if (ob->head_cap > OUTBUF_KEEP) {
		free(ob->head);
		ob->head = NULL;
		ob->head_cap = 0;
	}
	if (ob->ring_cap > OUTBUF_KEEP) {
		free(ob->ring);
		ob->ring = NULL;
		ob->ring_cap = 0;
	}
	ob->head_len = ob->ring_start = ob->ring_len = 0;
	ob->dropped = ob->total = 0;
	ob->head_closed = false;
}

void outbuf_free(struct outbuf *ob)
{
	free(ob->head);
	free(ob->ring);
	ob->head = ob->ring = NULL;
	ob->head_cap = ob->ring_cap = 0;
	outbuf_reset(ob);
}
