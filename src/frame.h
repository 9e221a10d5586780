/*
 * frame.h - the streaming scanner for sentinel-delimited result frames.
 *
 * The driver's replies arrive inside the merged, echoing terminal stream as
 *     <<<ptybox:NONCE:{json}:ptybox>>>
 * where NONCE is the session's random hex nonce and the JSON payload is pure
 * printable ASCII with '<' and '>' escaped, so a payload never contains either.
 * Everything outside frames is noise (echo, prompts, stray output).
 *
 * A binary frame carries raw bytes (a file's): its body is "#" LEN ":" or
 * "#z" LEN ":" (LEN decimal, no leading zero, at most FRAME_BINARY_MAX), then
 * exactly LEN bytes of any value, then the end marker. Only the driver knows
 * the nonce, so the bytes inside cannot forge a frame; a malformed header or a
 * missing end marker makes the would-be frame noise, as for any broken frame.
 *
 * The scanner is pure: bytes in, events out, no I/O and no allocation after
 * init beyond the payload buffer, which is capped. It is O(new bytes): every
 * byte is looked at a bounded number of times, whatever the chunking.
 *
 * Noise is every byte outside a frame, delivered once and in order, so the
 * noise with the frames re-wrapped around their payloads gives back the stream.
 * One exception keeps memory bounded: a would-be frame whose body passed
 * max_payload and then proved invalid (a stray byte, or the stream ended)
 * comes back as noise without the body bytes past max_payload.
 */
#ifndef PTYBOX_FRAME_H
#define PTYBOX_FRAME_H

#include <stddef.h>

#define FRAME_NONCE_MAX 64
/* The longest binary frame's data: 1 MiB and a little (a relay's chunk). */
#define FRAME_BINARY_MAX ((size_t)(1 << 20) + 4096)

enum frame_event {
	/* Bytes outside any frame, in stream order. May come in many pieces. */
	FRAME_EVENT_NOISE,
	/* One complete payload (the JSON between the markers), not NUL-terminated
	 * in the callback's view; len bytes at data. */
	FRAME_EVENT_PAYLOAD,
	/* A frame whose payload grew past max_payload: its bytes were dropped.
	 * data is NULL, len is the number of payload bytes seen. */
	FRAME_EVENT_OVERSIZE,
	/* One complete binary frame's data, len bytes at data (any byte values). A
	 * binary frame past max_payload is FRAME_EVENT_OVERSIZE, as a text one. */
	FRAME_EVENT_BINARY,
	/* The same for a "#z" frame: data is a zlib stream (inflating it is the caller's). */
	FRAME_EVENT_BINARY_Z,
};

typedef void (*frame_event_cb)(void *ctx, enum frame_event ev, const char *data, size_t len);

/* Private: the fields are here so that a scanner can be embedded in its owner. */
struct frame_scanner {
	char start[FRAME_NONCE_MAX + 16];		/* "<<<ptybox:" NONCE ":" */
	unsigned char start_fail[FRAME_NONCE_MAX + 16]; /* KMP failure table for start */
	size_t start_len;
	/* Bytes of start matched so far: held back from the noise until the match fails. */
	size_t matched;
	int in_frame; /* 2: just after the start marker (is it a binary frame?) */
	/* A binary frame: 1 reading its header, 2 its data, 3 its end marker; 0 none. */
	int binary;
	char bin_head[16]; /* "#", "z"?, digits, ":" as read */
	size_t bin_head_len, bin_digits, bin_len, bin_got;
	/* The frame body's first max_payload bytes; the rest are only counted in dropped. */
	char *payload;
	size_t payload_len, payload_cap, max_payload;
	size_t dropped;
	size_t end_matched; /* bytes of ":ptybox>>>" matched */
};

/* nonce: 1..FRAME_NONCE_MAX characters of [0-9a-zA-Z]. max_payload may be 0 (then only empty
 * payloads come through). Returns 0, -EINVAL for a bad nonce, or -ENOMEM if the first payload
 * buffer cannot be had. The scanner is zeroed first, so frame_scanner_free is always safe. */
int frame_scanner_init(struct frame_scanner *s, const char *nonce, size_t max_payload);
/* Feeds len bytes; calls cb for every event they complete, in stream order. data is valid only
 * during the call, and cb must not call back into this scanner. Running out of memory while
 * growing the payload buffer aborts. */
void frame_scanner_feed(struct frame_scanner *s, const char *buf, size_t len, frame_event_cb cb,
			void *ctx);
/* Ends the stream: bytes held back as a possible marker prefix, or an
 * unterminated frame, come out as noise. The scanner is then reset. */
void frame_scanner_finish(struct frame_scanner *s, frame_event_cb cb, void *ctx);
/* Gives the payload buffer back to the allocator if it grew past keep bytes,
 * so one huge frame does not pin memory for the session's life. */
void frame_scanner_shrink(struct frame_scanner *s, size_t keep);
void frame_scanner_free(struct frame_scanner *s);

#endif
