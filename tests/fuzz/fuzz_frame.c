/*
 * fuzz_frame.c - libFuzzer target for the frame scanner (src/frame.c).
 *
 * Input: a 4-byte header, then the stream. Header byte 0 picks the nonce (they are prefixes of
 * one another on purpose), byte 1 a small payload cap, bytes 2-3 seed the chunking, so the
 * fuzzer steers where the stream is split as well as what it holds. Two scanners read it:
 * one whose cap no payload can reach, which must give back the stream exactly (noise plus
 * re-wrapped frames), and one with the small cap. Both must agree with ref_scan, the contract
 * written as a slow whole-buffer loop. Any disagreement aborts.
 *
 * Without libFuzzer it is linked with replay_main.c, so that ctest replays the corpus without
 * clang.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz_check.h"

#define END	":ptybox>>>"
#define END_LEN 10

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Events with adjacent noise joined, all bytes in one buffer. */
struct ev {
	enum frame_event ev;
	size_t off, len;
};

struct rec {
	struct ev *v;
	size_t n, cap;
	char *text;
	size_t text_len, text_cap;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	CHECK(p != NULL);
	return p;
}

/* text is allocated by the first event, even an empty one, so that text + off is defined. */
static void rec_bytes(struct rec *r, const char *p, size_t n)
{
	if (r->text == NULL || r->text_len + n > r->text_cap) {
		r->text_cap = (r->text_len + n) * 2 + 64;
		r->text = xrealloc(r->text, r->text_cap);
	}
	if (n > 0)
		memcpy(r->text + r->text_len, p, n);
	r->text_len += n;
}

static void rec_event(struct rec *r, enum frame_event ev, const char *data, size_t len)
{
	if (ev == FRAME_EVENT_NOISE && r->n > 0 && r->v[r->n - 1].ev == FRAME_EVENT_NOISE) {
		rec_bytes(r, data, len);
		r->v[r->n - 1].len += len;
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap * 2 + 16;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n].ev = ev;
	r->v[r->n].off = r->text_len;
	r->v[r->n].len = len;
	r->n++;
	rec_bytes(r, data, ev == FRAME_EVENT_OVERSIZE ? 0 : len);
}

/* What every callback must look like, whatever the input. */
static void rec_cb(void *ctx, enum frame_event ev, const char *data, size_t len)
{
	CHECK(ev == FRAME_EVENT_NOISE || ev == FRAME_EVENT_PAYLOAD || ev == FRAME_EVENT_OVERSIZE ||
	      ev == FRAME_EVENT_BINARY || ev == FRAME_EVENT_BINARY_Z);
	CHECK((ev == FRAME_EVENT_OVERSIZE) == (data == NULL));
	CHECK(ev != FRAME_EVENT_NOISE || len > 0);
	rec_event(ctx, ev, data, len);
}

static void rec_free(struct rec *r)
{
	free(r->v);
	free(r->text);
}

static int rec_equal(const struct rec *a, const struct rec *b)
{
	size_t i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		if (a->v[i].ev != b->v[i].ev || a->v[i].len != b->v[i].len)
			return 0;
		if (a->v[i].ev != FRAME_EVENT_OVERSIZE && a->v[i].len > 0 &&
		    memcmp(a->text + a->v[i].off, b->text + b->v[i].off, a->v[i].len) != 0)
			return 0;
	}
	return 1;
}

#include "../frame_ref_binary.h"

/* The contract the slow, obvious way: at each position, either a whole frame starts here and is
 * read to its end or its first bad byte, or this one byte is noise. A broken frame's body past
 * the cap is lost (frame.h). */
static void ref_scan(struct rec *r, const char *start, size_t sl, size_t cap, const char *in,
		     size_t n)
{
	size_t i = 0, p, j;

	while (i < n) {
		if (n - i < sl || memcmp(in + i, start, sl) != 0) {
			rec_event(r, FRAME_EVENT_NOISE, in + i, 1);
			i++;
			continue;
		}
		p = j = i + sl;
		if (p < n && in[p] == '#') {
			i = ref_binary(r, i, sl, cap, in, n);
			continue;
		}
		while (j < n && !(n - j >= END_LEN && memcmp(in + j, END, END_LEN) == 0) &&
		       (unsigned char)in[j] >= 0x20 && (unsigned char)in[j] <= 0x7e &&
		       in[j] != '<' && in[j] != '>')
			j++;
		if (n - j >= END_LEN && memcmp(in + j, END, END_LEN) == 0) {
			if (j - p <= cap)
				rec_event(r, FRAME_EVENT_PAYLOAD, in + p, j - p);
			else
				rec_event(r, FRAME_EVENT_OVERSIZE, NULL, j - p);
			i = j + END_LEN;
		} else {
			rec_event(r, FRAME_EVENT_NOISE, in + i, sl + (j - p < cap ? j - p : cap));
			i = j;
		}
	}
}

/* Feeds in chunks of 0..max_chunk bytes drawn from seed; empty feeds are legal. */
static void scan(struct rec *r, const char *nonce, size_t cap, const char *in, size_t n,
		 uint32_t seed, uint32_t max_chunk)
{
	struct frame_scanner s;
	size_t at = 0, k;

	CHECK(frame_scanner_init(&s, nonce, cap) == 0);
	seed |= 1;
	while (at < n) {
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		k = seed % (max_chunk + 1);
		if (k > n - at)
			k = n - at;
		frame_scanner_feed(&s, in + at, k, rec_cb, r);
		at += k;
		if (seed % 64 == 0) /* between frames or not, shrinking must lose nothing */
			frame_scanner_shrink(&s, seed % 4 == 0 ? 0 : 16);
	}
	frame_scanner_finish(&s, rec_cb, r);
	CHECK(s.payload_cap <= cap);
	frame_scanner_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const nonces[] = {"N", "N1", "N12", "b"};
	struct rec full = {0}, small = {0}, ref = {0}, out = {0};
	const char *nonce, *in;
	char start[FRAME_NONCE_MAX + 16];
	size_t n, sl, cap, i;
	uint32_t seed;

	if (size < 4)
		return 0;
	nonce = nonces[data[0] % 4];
	cap = data[1] % 32;
	seed = (uint32_t)data[2] << 8 | data[3];
	in = (const char *)data + 4;
	n = size - 4;
	sl = (size_t)snprintf(start, sizeof(start), "<<<ptybox:%s:", nonce);

	/* With a cap of n no payload is oversize, so the stream must come back whole. */
	scan(&full, nonce, n, in, n, seed, 1u << (data[0] >> 4));
	for (i = 0; i < full.n; i++) {
		CHECK(full.v[i].ev != FRAME_EVENT_OVERSIZE);
		int framed = full.v[i].ev != FRAME_EVENT_NOISE;
		if (framed)
			rec_bytes(&out, start, sl);
		if (full.v[i].ev == FRAME_EVENT_BINARY || full.v[i].ev == FRAME_EVENT_BINARY_Z) {
			char head[32];
			int hl =
				snprintf(head, sizeof(head),
					 "#%s%zu:", full.v[i].ev == FRAME_EVENT_BINARY_Z ? "z" : "",
					 full.v[i].len);
			rec_bytes(&out, head, (size_t)hl);
		}
		rec_bytes(&out, full.text + full.v[i].off, full.v[i].len);
		if (framed)
			rec_bytes(&out, END, END_LEN);
	}
	CHECK(out.text_len == n);
	CHECK(n == 0 || memcmp(out.text, in, n) == 0);
	ref_scan(&ref, start, sl, n, in, n);
	CHECK(rec_equal(&full, &ref));
	rec_free(&ref);
	memset(&ref, 0, sizeof(ref));

	/* The small cap, split differently. */
	scan(&small, nonce, cap, in, n, seed * 2654435761u, data[1] >> 5 == 0 ? 1 : 7u * data[1]);
	ref_scan(&ref, start, sl, cap, in, n);
	CHECK(rec_equal(&small, &ref));

	rec_free(&full);
	rec_free(&small);
	rec_free(&ref);
	rec_free(&out);
	return 0;
}
