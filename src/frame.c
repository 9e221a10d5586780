/*
 * frame.c - the streaming scanner for result frames (frame.h).
 *
 * The transport feeds it every chunk read from the PTY master, split wherever the kernel split
 * it, and gets back the driver's payloads and, in stream order, everything else as noise:
 *
 *     stream = *( noise / frame )
 *     frame  = "<<<ptybox:" NONCE ":" ( body / binary ) ":ptybox>>>"
 *     body   = *( %x20-3B / %x3D / %x3F-7E )      ; printable ASCII but '<' and '>'
 *     binary = "#" [ "z" ] LEN ":" LEN*OCTET       ; LEN: decimal, no leading zero
 *
 * Outside a frame it runs KMP over the start marker. The marker begins with "<<<", so a failed
 * match can still end inside a live prefix ("<<<<ptybox:" matches one byte late). What it holds
 * back is always start[0..matched), so held bytes are released from the marker itself, never
 * copied, and the unheld bytes of a chunk go out as one or two noise pieces. As '<' occurs only
 * in the marker's first three bytes, the failure chain is at most three steps: each byte is
 * compared a bounded number of times, and bytes that cannot begin a marker are skipped by
 * memchr; a whole marker at a '<', the usual case, is taken with one memcmp. Inside a frame each
 * byte is checked against the body alphabet and the end marker, whose only ':' is its first byte,
 * so a mismatch falls back in one step.
 *
 * The payload buffer keeps a body's first max_payload bytes and only counts the rest: a frame
 * that closes past the cap is reported as oversize, and one that proves invalid comes back as
 * noise short of its dropped bytes. That is the price of a hard memory bound.
 *
 * A binary frame is known by its first body byte, '#' (a JSON body opens with '{'). Its header is
 * read byte by byte (a byte that cannot continue it breaks the frame there), its data taken in
 * one copy per chunk whatever the bytes, and the end marker must follow at once.
 */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define FRAME_START_PREFIX "<<<ptybox:"
#define FRAME_END	   ":ptybox>>>"
#define FRAME_END_LEN	   (sizeof(FRAME_END) - 1)
/* The end marker's bytes before its first '>': they may still turn out to be body. */
#define FRAME_END_BODY 7
/* The payload buffer's first size: most replies are a short JSON object. */
#define FRAME_PAYLOAD_INIT 512

static int frame_nonce_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int frame_body_byte(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e && c != '<' && c != '>';
}

int frame_scanner_init(struct frame_scanner *s, const char *nonce, size_t max_payload)
{
	size_t n, i, k;

	memset(s, 0, sizeof(*s));
	if (nonce == NULL)
		return -EINVAL;
	n = strnlen(nonce, FRAME_NONCE_MAX + 1);
	if (n == 0 || n > FRAME_NONCE_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!frame_nonce_char(nonce[i]))
			return -EINVAL;

	memcpy(s->start, FRAME_START_PREFIX, sizeof(FRAME_START_PREFIX) - 1);
	memcpy(s->start + sizeof(FRAME_START_PREFIX) - 1, nonce, n);
	s->start_len = sizeof(FRAME_START_PREFIX) - 1 + n;
	s->start[s->start_len++] = ':';

	/* start_fail[i]: the longest proper border of start[0..i]. */
	for (i = 1, k = 0; i < s->start_len; i++) {
		while (k > 0 && s->start[i] != s->start[k])
			k = s->start_fail[k - 1];
		if (s->start[i] == s->start[k])
			k++;
		s->start_fail[i] = (unsigned char)k;
	}

	/* Allocated here so that the common small reply never allocates mid-stream. */
	s->max_payload = max_payload;
	if (max_payload > 0) {
		s->payload_cap =
			max_payload < FRAME_PAYLOAD_INIT ? max_payload : FRAME_PAYLOAD_INIT;
		s->payload = malloc(s->payload_cap);
		if (s->payload == NULL) {
			s->payload_cap = 0;
			return -ENOMEM;
		}
	}
	return 0;
}

static void frame_noise(frame_event_cb cb, void *ctx, const char *p, size_t n)
{
	if (n > 0)
		cb(ctx, FRAME_EVENT_NOISE, p, n);
}

static void frame_reset(struct frame_scanner *s)
{
	s->matched = 0;
	s->in_frame = 0;
	s->binary = 0;
	s->bin_head_len = s->bin_digits = s->bin_len = s->bin_got = 0;
	s->payload_len = 0;
	s->dropped = 0;
	s->end_matched = 0;
}

/* The unemitted bytes are start[0..carry) followed by p[0..n); the last keep of them are still a
 * marker prefix. Emits the others, in order. */
static void frame_release(const struct frame_scanner *s, size_t carry, const char *p, size_t n,
			  size_t keep, frame_event_cb cb, void *ctx)
{
	size_t out = carry + n - keep;
	size_t from_carry = out < carry ? out : carry;

	frame_noise(cb, ctx, s->start, from_carry);
	frame_noise(cb, ctx, p, out - from_carry);
}

/* Outside a frame: matches the start marker over buf[i..len). Returns where the frame's body
 * begins, or len. */
static size_t frame_scan_noise(struct frame_scanner *s, const char *buf, size_t len, size_t i,
			       frame_event_cb cb, void *ctx)
{
	size_t carry = s->matched, m = s->matched, j = i;
	const char *lt;
	char c;

	while (j < len) {
		if (m == 0) {
			lt = memchr(buf + j, '<', len - j);
			if (lt == NULL) {
				j = len;
				break;
			}
			j = (size_t)(lt - buf);
			/* A whole marker here, the usual case, costs one compare. */
			if (len - j >= s->start_len &&
			    memcmp(buf + j, s->start, s->start_len) == 0) {
				j += s->start_len;
				frame_release(s, carry, buf + i, j - i, s->start_len, cb, ctx);
				s->matched = 0;
				s->in_frame = 2;
				return j;
			}
		}
		c = buf[j++];
		while (m > 0 && s->start[m] != c)
			m = s->start_fail[m - 1];
		if (s->start[m] == c)
			m++;
		if (m == s->start_len) {
			frame_release(s, carry, buf + i, j - i, m, cb, ctx);
			s->matched = 0;
			s->in_frame = 2;
			return j;
		}
	}
	frame_release(s, carry, buf + i, j - i, m, cb, ctx);
	s->matched = m;
	return len;
}

/* Only called with n bytes that fit under the cap; geometric growth keeps appends O(1)
 * amortized, and the cap bounds the buffer. */
static void frame_grow(struct frame_scanner *s, size_t need)
{
	size_t cap = s->payload_cap > 0 ? s->payload_cap : FRAME_PAYLOAD_INIT;
	char *p;

	while (cap < need)
		cap = cap > s->max_payload / 2 ? s->max_payload : cap * 2;
	if (cap > s->max_payload)
		cap = s->max_payload;
	p = realloc(s->payload, cap);
	if (p == NULL)
		abort(); /* out of memory is fatal (STYLE.md) */
	s->payload = p;
	s->payload_cap = cap;
}

static void frame_append(struct frame_scanner *s, const char *p, size_t n)
{
	size_t room = s->max_payload - s->payload_len;

	if (n > room) {
		s->dropped += n - room;
		n = room;
	}
	if (n == 0)
		return;
	if (s->payload_len + n > s->payload_cap)
		frame_grow(s, s->payload_len + n);
	memcpy(s->payload + s->payload_len, p, n);
	s->payload_len += n;
}

/* The end marker closed the frame: its ":ptybox" is in the buffer (or counted) and comes off. */
static void frame_deliver(struct frame_scanner *s, frame_event_cb cb, void *ctx)
{
	size_t body = s->payload_len + s->dropped - FRAME_END_BODY;
	const char *data = s->payload != NULL ? s->payload : "";

	frame_reset(s);
	if (body <= s->max_payload)
		cb(ctx, FRAME_EVENT_PAYLOAD, data, body);
	else
		cb(ctx, FRAME_EVENT_OVERSIZE, NULL, body);
}

/* Not a frame after all: what was kept of it is noise. The '>'s of a broken end marker were
 * never stored, as they are not body; they follow everything else. */
static void frame_abandon(struct frame_scanner *s, frame_event_cb cb, void *ctx)
{
	size_t kept = s->payload_len;
	size_t gt = s->end_matched > FRAME_END_BODY ? s->end_matched - FRAME_END_BODY : 0;

	frame_reset(s);
	frame_noise(cb, ctx, s->start, s->start_len);
	frame_noise(cb, ctx, s->payload, kept);
	frame_noise(cb, ctx, &FRAME_END[FRAME_END_BODY], gt);
}

/* Skips body bytes that cannot begin or continue the end marker by
 * themselves (printable ASCII but ':', '<' and '>'): the bulk of a payload,
 * passed over in a tight loop instead of the state machine. */
static size_t frame_skip_plain(const char *buf, size_t j, size_t len)
{
	/* Eight bytes at a time while none is a stop byte (a zero byte of w ^ c for
	 * each of ':', '<', '>'; one below 0x20; one from 0x7f), then byte by byte. */
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	while (j + 8 <= len) {
		uint64_t w, c, d, e;
		memcpy(&w, buf + j, 8);
		c = w ^ (ones * ':');
		d = w ^ (ones * '<');
		e = w ^ (ones * '>');
		if (((w | (w + ones)) & highs) || /* from 0x7f: its high bit, or 0x7f + 1's */
		    (((w - ones * 0x20) | (c - ones) | (d - ones) | (e - ones)) & ~w & highs))
			break;
		j += 8;
	}
	for (; j < len; j++) {
		unsigned char c = (unsigned char)buf[j];
		if (c < 0x20 || c > 0x7e || c == ':' || c == '<' || c == '>')
			break;
	}
	return j;
}

/* Inside a frame: stores body bytes in runs until the end marker closes the frame or a byte
 * breaks it. Returns where scanning resumes: after the frame, at the breaking byte (which may
 * begin a real frame), or len. */
static size_t frame_scan_body(struct frame_scanner *s, const char *buf, size_t len, size_t i,
			      frame_event_cb cb, void *ctx)
{
	size_t j, run = i;
	unsigned char c;

	for (j = i; j < len; j++) {
		if (s->end_matched == 0) {
			j = frame_skip_plain(buf, j, len);
			if (j == len)
				break;
		}
		c = (unsigned char)buf[j];
		if (c == '>' && s->end_matched >= FRAME_END_BODY) {
			frame_append(s, buf + run, j - run);
			run = j + 1;
			if (++s->end_matched == FRAME_END_LEN) {
				frame_deliver(s, cb, ctx);
				return j + 1;
			}
		} else if (s->end_matched > FRAME_END_BODY || !frame_body_byte(c)) {
			frame_append(s, buf + run, j - run);
			frame_abandon(s, cb, ctx);
			return j;
		} else if (c == (unsigned char)FRAME_END[s->end_matched]) {
			s->end_matched++;
		} else {
			s->end_matched = c == (unsigned char)FRAME_END[0];
		}
	}
	frame_append(s, buf + run, len - run);
	return len;
}

/* A binary frame's header broke, or its end marker did not follow its data: noise, as a broken
 * text frame is (its data past max_payload lost). */
static void frame_abandon_binary(struct frame_scanner *s, frame_event_cb cb, void *ctx)
{
	size_t kept = s->payload_len, head = s->bin_head_len, end = s->end_matched;
	char h[sizeof(s->bin_head)];

	memcpy(h, s->bin_head, head);
	frame_reset(s);
	frame_noise(cb, ctx, s->start, s->start_len);
	frame_noise(cb, ctx, h, head);
	frame_noise(cb, ctx, s->payload, kept);
	frame_noise(cb, ctx, FRAME_END, end);
}

/* Whether c continues a binary frame's header: "#" is read, then "z"?, then digits. */
static int frame_binary_head_byte(struct frame_scanner *s, unsigned char c)
{
	size_t d;

	if (c == 'z' && s->bin_head_len == 1)
		return 1;
	if (c < '0' || c > '9' || (s->bin_digits == 1 && s->bin_len == 0))
		return 0; /* (not a digit, or one after a leading zero) */
	d = (size_t)(c - '0');
	if (s->bin_len > (FRAME_BINARY_MAX - d) / 10)
		return 0;
	s->bin_len = s->bin_len * 10 + d;
	s->bin_digits++;
	return 1;
}

/* Inside a binary frame: its header, then its data, then its end marker. Returns where
 * scanning resumes, as frame_scan_body does. */
static size_t frame_scan_binary(struct frame_scanner *s, const char *buf, size_t len, size_t i,
				frame_event_cb cb, void *ctx)
{
	size_t j = i, n;
	unsigned char c;

	while (j < len) {
		c = (unsigned char)buf[j];
		if (s->binary == 1) {
			if (c == ':' && s->bin_digits > 0) {
				s->bin_head[s->bin_head_len++] = ':';
				s->binary = s->bin_len ? 2 : 3;
				n = s->bin_len < s->max_payload ? s->bin_len : s->max_payload;
				if (n > s->payload_cap)
					frame_grow(s, n);
			} else if (!frame_binary_head_byte(s, c)) {
				frame_abandon_binary(s, cb, ctx);
				return j;
			} else {
				s->bin_head[s->bin_head_len++] = (char)c;
			}
			j++;
		} else if (s->binary == 2) {
			n = s->bin_len - s->bin_got;
			if (n > len - j)
				n = len - j;
			frame_append(s, buf + j, n);
			s->bin_got += n;
			j += n;
			if (s->bin_got == s->bin_len)
				s->binary = 3;
		} else if (c == (unsigned char)FRAME_END[s->end_matched]) {
			j++;
			if (++s->end_matched == FRAME_END_LEN) {
				size_t n_len = s->bin_len;
				enum frame_event ev = s->bin_head[1] == 'z' ? FRAME_EVENT_BINARY_Z
									    : FRAME_EVENT_BINARY;
				const char *data = s->payload != NULL ? s->payload : "";
				frame_reset(s);
				if (n_len <= s->max_payload)
					cb(ctx, ev, data, n_len);
				else
					cb(ctx, FRAME_EVENT_OVERSIZE, NULL, n_len);
				return j;
			}
		} else {
			frame_abandon_binary(s, cb, ctx);
			return j;
		}
	}
	return len;
}

void frame_scanner_feed(struct frame_scanner *s, const char *buf, size_t len, frame_event_cb cb,
			void *ctx)
{
	size_t i = 0;

	/* Each pass advances: a body scan that stops at once hands that byte to the noise scan,
	 * which consumes at least it. */
	while (i < len) {
		if (s->in_frame == 2) { /* the body's first byte: '#' opens a binary frame */
			s->in_frame = 1;
			if (buf[i] == '#') {
				s->binary = 1;
				s->bin_head[s->bin_head_len++] = '#';
				i++;
				continue;
			}
		}
		if (s->binary)
			i = frame_scan_binary(s, buf, len, i, cb, ctx);
		else if (s->in_frame)
			i = frame_scan_body(s, buf, len, i, cb, ctx);
		else
			i = frame_scan_noise(s, buf, len, i, cb, ctx);
	}
}

void frame_scanner_finish(struct frame_scanner *s, frame_event_cb cb, void *ctx)
{
	size_t held = s->matched;

	if (s->binary) {
		frame_abandon_binary(s, cb, ctx);
		return;
	}
	if (s->in_frame) {
		frame_abandon(s, cb, ctx);
		return;
	}
	frame_reset(s);
	frame_noise(cb, ctx, s->start, held);
}

void frame_scanner_shrink(struct frame_scanner *s, size_t keep)
{
	char *p;

	/* A frame in progress keeps its bytes. */
	if (keep < s->payload_len)
		keep = s->payload_len;
	if (s->payload_cap <= keep)
		return;
	if (keep == 0) {
		free(s->payload);
		s->payload = NULL;
		s->payload_cap = 0;
		return;
	}
	p = realloc(s->payload, keep);
	if (p == NULL)
		return; /* the old block is still good, merely larger */
	s->payload = p;
	s->payload_cap = keep;
}

void frame_scanner_free(struct frame_scanner *s)
{
	free(s->payload);
	memset(s, 0, sizeof(*s));
}
