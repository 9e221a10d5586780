/*
 * outbuf.h - a bounded capture of one output stream: the head and the tail
 * are kept, the middle is counted and dropped. Memory never exceeds the cap,
 * whatever is appended.
 */
#ifndef PTYBOX_OUTBUF_H
#define PTYBOX_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct outbuf {
	char *head; /* first cap/2 bytes */
	size_t head_len, head_cap;
	char *ring;			       /* last cap/2 bytes once the head is full */
	size_t ring_start, ring_len, ring_cap; /* ring_cap < cap/2: not wrapped yet */
	size_t half;			       /* cap / 2 */
	bool head_closed;		       /* after a gap, bytes belong to the tail */
	uint64_t dropped;
	uint64_t total; /* bytes appended, dropped ones included */
};

void outbuf_init(struct outbuf *ob, size_t cap);
/* Returns 0 or -ENOMEM (the bytes are then counted as dropped). */
int outbuf_append(struct outbuf *ob, const char *data, size_t len);
/* Someone upstream dropped n bytes at this point of the stream. */
void outbuf_note_dropped(struct outbuf *ob, uint64_t n);
/* What stands between head and tail for n bytes dropped (printf, unsigned long long). */
#define OUTBUF_MARKER "\n[ptybox: %llu bytes of output dropped]\n"
/* Head, a one-line marker if anything was dropped, tail: NUL-terminated,
 * valid UTF-8 at the seams (cut characters are dropped). Caller frees.
 * *dropped gets the bytes left out. Resets the buffer. NULL only when out of
 * memory. */
char *outbuf_take(struct outbuf *ob, size_t *len, uint64_t *dropped);
void outbuf_reset(struct outbuf *ob);
void outbuf_free(struct outbuf *ob);

#endif
