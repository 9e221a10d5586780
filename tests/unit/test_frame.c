/*
 * test_frame.c - unit tests for the frame scanner (src/frame.c).
 *
 * Every scenario is fed whole, split in two at every byte boundary, and byte by byte, and must
 * give the same exact event sequence (adjacent noise pieces joined, since how noise is cut is the
 * scanner's business). A second model, ref_scan, is the contract written the slow, obvious way
 * over a whole buffer; long generated streams fed in random chunks must agree with it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"

#define END ":ptybox>>>"
#define BIG ((size_t)1 << 20)

/* The events seen, noise joined; all bytes live in one buffer. */
struct ev {
	enum frame_event ev;
	size_t off, len;
};

struct rec {
	struct ev *v;
	size_t n, cap;
	char *text;
	size_t text_len, text_cap;
	size_t noise_calls, empty_calls, bad_ptr_calls;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	assert_non_null(p);
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

static void rec_cb(void *ctx, enum frame_event ev, const char *data, size_t len)
{
	struct rec *r = ctx;

	if (ev == FRAME_EVENT_NOISE) {
		r->noise_calls++;
		if (len == 0)
			r->empty_calls++;
	}
	if ((ev == FRAME_EVENT_OVERSIZE) != (data == NULL))
		r->bad_ptr_calls++;
	rec_event(r, ev, data, len);
}

static void rec_free(struct rec *r)
{
	free(r->v);
	free(r->text);
	memset(r, 0, sizeof(*r));
}

static void dump_events(const char *who, const struct rec *r)
{
	static const char kind[] = "NPOBZ";
	size_t i, k;
	const char *p;

	print_message("%s (%zu events):\n", who, r->n);
	for (i = 0; i < r->n && i < 40; i++) {
		p = r->text + r->v[i].off;
		print_message("  %c %zu \"", kind[r->v[i].ev], r->v[i].len);
		for (k = 0; r->v[i].ev != FRAME_EVENT_OVERSIZE && k < r->v[i].len && k < 80; k++) {
			if (p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\')
				print_message("%c", p[k]);
			else
				print_message("\\x%02x", (unsigned char)p[k]);
		}
		print_message("\"\n");
	}
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

static void assert_rec_equal(const struct rec *got, const struct rec *want, const char *what)
{
	if (!rec_equal(got, want)) {
		print_message("mismatch: %s\n", what);
		dump_events("got", got);
		dump_events("want", want);
		fail();
	}
}

struct want {
	enum frame_event ev;
	const char *data;
	size_t len;
};

/* clang-format off */
#define N(s) { FRAME_EVENT_NOISE, (s), sizeof(s) - 1 }
#define P(s) { FRAME_EVENT_PAYLOAD, (s), sizeof(s) - 1 }
#define O(n) { FRAME_EVENT_OVERSIZE, NULL, (n) }
/* clang-format on */
#define NWANT(w) (sizeof(w) / sizeof((w)[0]))

static void rec_from_want(struct rec *r, const struct want *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		rec_event(r, w[i].ev, w[i].data, w[i].len);
}

/* Feeds in at the given cut points (ascending), then finishes; checks what every feed must. */
static void scan_cuts(struct rec *r, const char *nonce, size_t cap, const char *in, size_t n,
		      const size_t *cuts, size_t ncuts)
{
	struct frame_scanner s;
	size_t i, at = 0;

	assert_int_equal(frame_scanner_init(&s, nonce, cap), 0);
	for (i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : n;

		frame_scanner_feed(&s, in + at, to - at, rec_cb, r);
		at = to;
	}
	frame_scanner_finish(&s, rec_cb, r);
	frame_scanner_free(&s);
	assert_int_equal(r->empty_calls, 0);
	assert_int_equal(r->bad_ptr_calls, 0);
}

/* Rebuilds the stream from the events: only exact when nothing was oversize. */
static void assert_rebuilds(const struct rec *r, const char *nonce, const char *in, size_t n)
{
	struct rec out = {0};
	size_t i;

	for (i = 0; i < r->n; i++) {
		int framed = r->v[i].ev != FRAME_EVENT_NOISE;
		assert_int_not_equal(r->v[i].ev, FRAME_EVENT_OVERSIZE);
		if (framed) {
			rec_bytes(&out, "<<<ptybox:", 10);
			rec_bytes(&out, nonce, strlen(nonce));
			rec_bytes(&out, ":", 1);
		}
		if (r->v[i].ev == FRAME_EVENT_BINARY || r->v[i].ev == FRAME_EVENT_BINARY_Z) {
			char head[32];
			int hl = snprintf(head, sizeof(head),
					  "#%s%zu:", r->v[i].ev == FRAME_EVENT_BINARY_Z ? "z" : "",
					  r->v[i].len);
			rec_bytes(&out, head, (size_t)hl);
		}
		rec_bytes(&out, r->text + r->v[i].off, r->v[i].len);
		if (framed)
			rec_bytes(&out, END, strlen(END));
	}
	assert_int_equal(out.text_len, n);
	assert_memory_equal(out.text, in, n);
	rec_free(&out);
}

/* The scenario must give exactly `want` fed whole, cut once anywhere, and byte by byte. */
static void check_scan(const char *nonce, size_t cap, const char *in, size_t n,
		       const struct want *w, size_t nw)
{
	struct rec want = {0}, got = {0};
	size_t k, *cuts;
	char what[64];

	rec_from_want(&want, w, nw);

	scan_cuts(&got, nonce, cap, in, n, NULL, 0);
	assert_rec_equal(&got, &want, "whole");
	if (cap >= n) /* no body can have passed the cap */
		assert_rebuilds(&got, nonce, in, n);
	rec_free(&got);

	for (k = 0; k <= n; k++) {
		scan_cuts(&got, nonce, cap, in, n, &k, 1);
		snprintf(what, sizeof(what), "cut at %zu", k);
		assert_rec_equal(&got, &want, what);
		rec_free(&got);
	}

	cuts = calloc(n + 1, sizeof(*cuts));
	assert_non_null(cuts);
	for (k = 0; k < n; k++)
		cuts[k] = k;
	scan_cuts(&got, nonce, cap, in, n, cuts, n);
	assert_rec_equal(&got, &want, "byte by byte");
	rec_free(&got);
	free(cuts);
	rec_free(&want);
}

#define CHECK(nonce, cap, in, ...)                                                                 \
	do {                                                                                       \
		const struct want w_[] = {__VA_ARGS__};                                            \
		check_scan((nonce), (cap), (in), sizeof(in) - 1, w_, NWANT(w_));                   \
	} while (0)

static void test_init_nonce(void **state)
{
	struct frame_scanner s;
	char longest[FRAME_NONCE_MAX + 2];

	(void)state;
	assert_int_equal(frame_scanner_init(&s, NULL, 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "", 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "ab-c", 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "ab:c", 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "a<", 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "a b", 64), -EINVAL);
	assert_int_equal(frame_scanner_init(&s, "\xc3\xa9", 64), -EINVAL);
	frame_scanner_free(&s); /* safe after a failed init */

	memset(longest, 'f', FRAME_NONCE_MAX + 1);
	longest[FRAME_NONCE_MAX + 1] = '\0';
	assert_int_equal(frame_scanner_init(&s, longest, 64), -EINVAL);
	longest[FRAME_NONCE_MAX] = '\0';
	assert_int_equal(frame_scanner_init(&s, longest, 64), 0);
	frame_scanner_free(&s);
	assert_int_equal(frame_scanner_init(&s, "0aZ9", 0), 0);
	frame_scanner_free(&s);
	frame_scanner_free(&s); /* and twice */
}

static void test_single_frame(void **state)
{
	(void)state;
	CHECK("N1", BIG, "hello<<<ptybox:N1:{\"a\":1}:ptybox>>>bye", N("hello"), P("{\"a\":1}"),
	      N("bye"));
	CHECK("N1", BIG, "<<<ptybox:N1:{}:ptybox>>>", P("{}"));
	CHECK("N1", BIG, "<<<ptybox:N1::ptybox>>>", P(""));
}

/* The contract's central case, spelled out: two chunks, cut at every byte boundary. */
static void test_split_every_boundary(void **state)
{
	static const char in[] = "$ x\r\n<<<ptybox:c0ffee:{\"id\":7,\"ok\":true}:ptybox>>>\r\n$ ";
	const size_t n = sizeof(in) - 1;
	struct rec got = {0};
	size_t k;

	(void)state;
	for (k = 0; k <= n; k++) {
		scan_cuts(&got, "c0ffee", BIG, in, n, &k, 1);
		assert_int_equal(got.n, 3);
		assert_int_equal(got.v[0].ev, FRAME_EVENT_NOISE);
		assert_int_equal(got.v[1].ev, FRAME_EVENT_PAYLOAD);
		assert_int_equal(got.v[2].ev, FRAME_EVENT_NOISE);
		assert_int_equal(got.v[1].len, strlen("{\"id\":7,\"ok\":true}"));
		assert_memory_equal(got.text + got.v[1].off, "{\"id\":7,\"ok\":true}",
				    got.v[1].len);
		assert_rebuilds(&got, "c0ffee", in, n);
		rec_free(&got);
	}
}

static void test_byte_by_byte(void **state)
{
	static const char in[] = "ab<<<ptybox:N:1:ptybox>>><<<ptybox:N:2:ptybox>>>cd";
	struct frame_scanner s;
	struct rec got = {0};
	size_t i;

	(void)state;
	assert_int_equal(frame_scanner_init(&s, "N", 64), 0);
	for (i = 0; i < sizeof(in) - 1; i++) {
		frame_scanner_feed(&s, in + i, 1, rec_cb, &got);
		/* Both frames are out as soon as their last '>' is in. */
		if (i == strlen("ab<<<ptybox:N:1:ptybox>>>") - 1)
			assert_int_equal(got.n, 2);
	}
	assert_int_equal(got.n, 4);
	assert_int_equal(got.v[1].ev, FRAME_EVENT_PAYLOAD);
	assert_int_equal(got.v[2].ev, FRAME_EVENT_PAYLOAD);
	frame_scanner_finish(&s, rec_cb, &got);
	assert_int_equal(got.n, 4);
	assert_rebuilds(&got, "N", in, sizeof(in) - 1);
	frame_scanner_free(&s);
	rec_free(&got);
}

static void test_back_to_back(void **state)
{
	struct rec in = {0}, got = {0};
	char frame[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < 1000; i++) {
		n = (size_t)snprintf(frame, sizeof(frame), "<<<ptybox:x:{\"n\":%zu}:ptybox>>>", i);
		rec_bytes(&in, frame, n);
	}
	scan_cuts(&got, "x", BIG, in.text, in.text_len, NULL, 0);
	assert_int_equal(got.n, 1000);
	assert_int_equal(got.noise_calls, 0);
	for (i = 0; i < got.n; i++) {
		n = (size_t)snprintf(frame, sizeof(frame), "{\"n\":%zu}", i);
		assert_int_equal(got.v[i].ev, FRAME_EVENT_PAYLOAD);
		assert_int_equal(got.v[i].len, n);
		assert_memory_equal(got.text + got.v[i].off, frame, n);
	}
	rec_free(&got);
	rec_free(&in);

	CHECK("x", BIG, "<<<ptybox:x:1:ptybox>>><<<ptybox:x:2:ptybox>>><<<ptybox:x:3:ptybox>>>",
	      P("1"), P("2"), P("3"));
}

static void test_noise_between(void **state)
{
	(void)state;
	CHECK("x", BIG, "a<<<ptybox:x:1:ptybox>>>\r\n>>> <<< <<<ptybox:x:2:ptybox>>>\x1b[0m$",
	      N("a"), P("1"), N("\r\n>>> <<< "), P("2"), N("\x1b[0m$"));
	/* Echo of the frame with a ^M in it is not a frame. */
	CHECK("x", BIG, "<<<ptybox:x:1^M:ptybox>>>", P("1^M"));
	CHECK("x", BIG, "<<<ptybox:x:1\r:ptybox>>>", N("<<<ptybox:x:1\r:ptybox>>>"));
}

/* A large noise run must come out in one piece, not byte by byte. */
static void test_noise_not_fragmented(void **state)
{
	struct rec got = {0};
	char *in;
	size_t n = 1 << 16, i;

	(void)state;
	in = malloc(n);
	assert_non_null(in);
	for (i = 0; i < n; i++)
		in[i] = "ab<c\n>"[i % 6];
	scan_cuts(&got, "x", BIG, in, n, NULL, 0);
	assert_int_equal(got.n, 1);
	assert_true(got.noise_calls <= 2);
	assert_rebuilds(&got, "x", in, n);
	rec_free(&got);
	free(in);
}

static void test_wrong_nonce(void **state)
{
	(void)state;
	CHECK("N1", BIG, "<<<ptybox:N2:{}:ptybox>>>", N("<<<ptybox:N2:{}:ptybox>>>"));
	CHECK("N1", BIG, "<<<ptybox:n1:{}:ptybox>>>", N("<<<ptybox:n1:{}:ptybox>>>"));
	CHECK("N1", BIG, "<<<ptybox::{}:ptybox>>>", N("<<<ptybox::{}:ptybox>>>"));
	CHECK("N1", BIG, "<<ptybox:N1:{}:ptybox>>>", N("<<ptybox:N1:{}:ptybox>>>"));
	CHECK("N1", BIG, "<<<Ptybox:N1:{}:ptybox>>>", N("<<<Ptybox:N1:{}:ptybox>>>"));
	/* A fake, then the real one straight after. */
	CHECK("N1", BIG, "<<<ptybox:N2:<<<ptybox:N1:ok:ptybox>>>", N("<<<ptybox:N2:"), P("ok"));
}

static void test_nonce_prefix(void **state)
{
	(void)state;
	/* The scanner's nonce is a prefix of the one in the stream, and the other way round. */
	CHECK("ab", BIG, "<<<ptybox:abc:{}:ptybox>>>", N("<<<ptybox:abc:{}:ptybox>>>"));
	CHECK("abc", BIG, "<<<ptybox:ab:{}:ptybox>>>", N("<<<ptybox:ab:{}:ptybox>>>"));
	CHECK("abc", BIG, "<<<ptybox:ab<<<ptybox:abc:{}:ptybox>>>", N("<<<ptybox:ab"), P("{}"));
	CHECK("a", BIG, "<<<ptybox:aa:1:ptybox>>><<<ptybox:a:2:ptybox>>>",
	      N("<<<ptybox:aa:1:ptybox>>>"), P("2"));
}

static void test_lt_runs(void **state)
{
	(void)state;
	CHECK("N", BIG, "<<<<ptybox:N:x:ptybox>>>", N("<"), P("x"));
	CHECK("N", BIG, "<<<<<<<<ptybox:N:x:ptybox>>>", N("<<<<<"), P("x"));
	CHECK("N", BIG, "<<<<<<", N("<<<<<<"));
	CHECK("N", BIG, "<<<p<<<<pt<<<ptybox:N:x:ptybox>>><<", N("<<<p<<<<pt"), P("x"), N("<<"));
	CHECK("N", BIG, "<<<ptybox:N<<<ptybox:N:x:ptybox>>>", N("<<<ptybox:N"), P("x"));
	CHECK("N", BIG, "<<<ptybox:<<<ptybox:N:x:ptybox>>>", N("<<<ptybox:"), P("x"));
	/* '<' ends a frame and may begin the next. */
	CHECK("N", BIG, "<<<ptybox:N:ab<<<ptybox:N:cd:ptybox>>>", N("<<<ptybox:N:ab"), P("cd"));
	CHECK("N", BIG, "<<<ptybox:N:<<<<ptybox:N:cd:ptybox>>>", N("<<<ptybox:N:<"), P("cd"));
}

/* Held-back bytes stay held until the match fails or the stream ends, and not a byte longer. */
static void test_partial_marker_then_finish(void **state)
{
	struct frame_scanner s;
	struct rec got = {0};

	(void)state;
	assert_int_equal(frame_scanner_init(&s, "N", 64), 0);
	frame_scanner_feed(&s, "abc<<<ptyb", 10, rec_cb, &got);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.v[0].len, 3);
	assert_memory_equal(got.text, "abc", 3);
	frame_scanner_feed(&s, "ox:", 3, rec_cb, &got);
	assert_int_equal(got.text_len, 3);
	/* "<<<ptybox:<" is no marker, but its last '<' may begin one. */
	frame_scanner_feed(&s, "<", 1, rec_cb, &got);
	assert_int_equal(got.text_len, 3 + 10);
	frame_scanner_feed(&s, "x", 1, rec_cb, &got);
	assert_int_equal(got.text_len, 3 + 12);
	frame_scanner_feed(&s, "<<<", 3, rec_cb, &got);
	assert_int_equal(got.text_len, 3 + 12);
	frame_scanner_finish(&s, rec_cb, &got);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.text_len, 3 + 12 + 3);
	assert_memory_equal(got.text, "abc<<<ptybox:<x<<<", 18);

	/* finish reset the scanner: a frame goes through whole. */
	frame_scanner_feed(&s, "<<<ptybox:N:ok:ptybox>>>", 24, rec_cb, &got);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.v[1].ev, FRAME_EVENT_PAYLOAD);

	/* An unterminated frame, cut inside the end marker, is noise at finish. */
	frame_scanner_feed(&s, "<<<ptybox:N:{\"a\":1}:ptybox>>", 28, rec_cb, &got);
	assert_int_equal(got.n, 2);
	frame_scanner_finish(&s, rec_cb, &got);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.v[2].len, 28);
	assert_memory_equal(got.text + got.v[2].off, "<<<ptybox:N:{\"a\":1}:ptybox>>", 28);
	frame_scanner_finish(&s, rec_cb, &got);
	assert_int_equal(got.n, 3);
	frame_scanner_free(&s);
	rec_free(&got);

	CHECK("N", BIG, "abc<<<ptyb", N("abc<<<ptyb"));
	CHECK("N", BIG, "<<<ptybox:N:", N("<<<ptybox:N:"));
	CHECK("N", BIG, "<<<ptybox:N:{}", N("<<<ptybox:N:{}"));
	CHECK("N", BIG, "<<<ptybox:N:{}:ptybox>", N("<<<ptybox:N:{}:ptybox>"));
}

static void test_end_fragments(void **state)
{
	(void)state;
	CHECK("N", BIG, "<<<ptybox:N::ptybox:ptybox>>>", P(":ptybox"));
	CHECK("N", BIG, "<<<ptybox:N:a:ptyboxx:ptybo::ptybox>>>", P("a:ptyboxx:ptybo:"));
	CHECK("N", BIG, "<<<ptybox:N:ptybox:ptybox>>>", P("ptybox"));
	CHECK("N", BIG, "<<<ptybox:N:::ptybox>>>", P(":"));
	/* The start marker's ':' is not the end marker's. */
	CHECK("N", BIG, "<<<ptybox:N:ptybox>>>", N("<<<ptybox:N:ptybox>>>"));
	/* '>' that does not finish the end marker breaks the frame. */
	CHECK("N", BIG, "<<<ptybox:N:a:ptybox>>x", N("<<<ptybox:N:a:ptybox>>x"));
	CHECK("N", BIG, "<<<ptybox:N:a:ptybox>:ptybox>>>", N("<<<ptybox:N:a:ptybox>:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:a:ptybo>>>", N("<<<ptybox:N:a:ptybo>>>"));
	CHECK("N", BIG, "<<<ptybox:N:a>b:ptybox>>>", N("<<<ptybox:N:a>b:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:ptybox>><<<ptybox:N:1:ptybox>>>", N("<<<ptybox:N:ptybox>>"),
	      P("1"));
	CHECK("N", BIG, "<<<ptybox:N:a:ptybox>><<<ptybox:N:1:ptybox>>>",
	      N("<<<ptybox:N:a:ptybox>>"), P("1"));
	/* One '>' too many is noise after the frame. */
	CHECK("N", BIG, "<<<ptybox:N:a:ptybox>>>>", P("a"), N(">"));
}

static void test_invalid_byte(void **state)
{
	(void)state;
	CHECK("N", BIG, "<<<ptybox:N:ab\ncd:ptybox>>>", N("<<<ptybox:N:ab\ncd:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:ab\x7f:ptybox>>>", N("<<<ptybox:N:ab\x7f:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:ab\x80:ptybox>>>", N("<<<ptybox:N:ab\x80:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:ab\0:ptybox>>>", N("<<<ptybox:N:ab\0:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:\t<<<ptybox:N:ok:ptybox>>>", N("<<<ptybox:N:\t"), P("ok"));
	/* Breaking inside the end marker, then a real frame. */
	CHECK("N", BIG, "<<<ptybox:N:ab:pty\x1b<<<ptybox:N:ok:ptybox>>>",
	      N("<<<ptybox:N:ab:pty\x1b"), P("ok"));
	CHECK("N", BIG, "<<<ptybox:N:ab:ptybox>\r\n<<<ptybox:N:ok:ptybox>>>",
	      N("<<<ptybox:N:ab:ptybox>\r\n"), P("ok"));
}

static void test_oversize(void **state)
{
	(void)state;
	CHECK("N", 8, "<<<ptybox:N:12345678:ptybox>>>", P("12345678"));
	CHECK("N", 8, "<<<ptybox:N:123456789:ptybox>>>", O(9));
	CHECK("N", 8, "<<<ptybox:N:12345678901234567890:ptybox>>><<<ptybox:N:{}:ptybox>>>", O(20),
	      P("{}"));
	CHECK("N", 8, "a<<<ptybox:N:123456789:ptybox>>>b<<<ptybox:N:{}:ptybox>>>c", N("a"), O(9),
	      N("b"), P("{}"), N("c"));
	/* The end marker's ":ptybox" goes through the buffer, not against the cap. */
	CHECK("N", 2, "<<<ptybox:N:ab:ptybox>>>", P("ab"));
	CHECK("N", 2, "<<<ptybox:N:ab:ptybo:ptybox>>>", O(8));
	CHECK("N", 0, "<<<ptybox:N::ptybox>>><<<ptybox:N:a:ptybox>>>", P(""), O(1));
	/* Oversize and then broken: the bytes past the cap are gone (frame.h says so). */
	CHECK("N", 4, "<<<ptybox:N:abcdefgh\nz", N("<<<ptybox:N:abcd\nz"));
	CHECK("N", 4, "<<<ptybox:N:abcdefgh:ptybox>>x", N("<<<ptybox:N:abcd>>x"));
	CHECK("N", 4, "<<<ptybox:N:abcdefgh", N("<<<ptybox:N:abcd"));
}

/* White box: the buffer never grows past the cap, and shrink gives it back. */
/* clang-format off */
#define B(s) { FRAME_EVENT_BINARY, (s), sizeof(s) - 1 }
#define BZ(s) { FRAME_EVENT_BINARY_Z, (s), sizeof(s) - 1 }
/* clang-format on */

static void test_binary_frames(void **state)
{
	(void)state;
	/* Any bytes inside, the end marker and a start marker included. */
	CHECK("N", BIG, "<<<ptybox:N:#5:\0\n<>\xff:ptybox>>>", B("\0\n<>\xff"));
	CHECK("N", BIG, "a<<<ptybox:N:#10::ptybox>>>:ptybox>>>b", N("a"), B(":ptybox>>>"), N("b"));
	CHECK("N", BIG, "<<<ptybox:N:#13:<<<ptybox:N:x:ptybox>>>", B("<<<ptybox:N:x"));
	CHECK("N", BIG, "<<<ptybox:N:#z3:x\x9c\x01:ptybox>>>", BZ("x\x9c\x01"));
	CHECK("N", BIG, "<<<ptybox:N:#0::ptybox>>>", B(""));
	/* Text and binary frames side by side. */
	CHECK("N", BIG, "<<<ptybox:N:{}:ptybox>>><<<ptybox:N:#1:#:ptybox>>>", P("{}"), B("#"));
}

static void test_broken_binary_frames(void **state)
{
	(void)state;
	/* A header that is not one: noise up to the byte that broke it, scanning resumes there. */
	CHECK("N", BIG, "<<<ptybox:N:#x:ab:ptybox>>>", N("<<<ptybox:N:#x:ab:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:#:ptybox>>>", N("<<<ptybox:N:#:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:#01:a:ptybox>>>", N("<<<ptybox:N:#01:a:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:#zz1:a:ptybox>>>", N("<<<ptybox:N:#zz1:a:ptybox>>>"));
	CHECK("N", BIG, "<<<ptybox:N:#9999999:", N("<<<ptybox:N:#9999999:"));
	CHECK("N", BIG, "<<<ptybox:N:#1<<<ptybox:N:{}:ptybox>>>", N("<<<ptybox:N:#1"), P("{}"));
	/* Past FRAME_BINARY_MAX: the header breaks at the digit that passes it. */
	CHECK("N", BIG, "<<<ptybox:N:#99999999:", N("<<<ptybox:N:#99999999:"));
	/* A missing end marker: noise, and a frame right after is found. */
	CHECK("N", BIG, "<<<ptybox:N:#2:ab:ptybo<<<ptybox:N:{}:ptybox>>>",
	      N("<<<ptybox:N:#2:ab:ptybo"), P("{}"));
	CHECK("N", BIG, "<<<ptybox:N:#2:abc:ptybox>>>", N("<<<ptybox:N:#2:abc:ptybox>>>"));
	/* Cut short by the stream's end. */
	CHECK("N", BIG, "<<<ptybox:N:#4:ab", N("<<<ptybox:N:#4:ab"));
	CHECK("N", BIG, "<<<ptybox:N:#z", N("<<<ptybox:N:#z"));
}

static void test_binary_frames_past_the_cap(void **state)
{
	(void)state;
	CHECK("N", 3, "<<<ptybox:N:#5:abcde:ptybox>>>x", O(5), N("x"));
	CHECK("N", 3, "<<<ptybox:N:#2:ab:ptybox>>>", B("ab"));
	/* Broken past the cap: its data past the cap is lost, as a text frame's. */
	CHECK("N", 3, "<<<ptybox:N:#5:abcde:ptyboy", N("<<<ptybox:N:#5:abc:ptybo"), N("y"));
}

static void test_memory_bound_and_shrink(void **state)
{
	struct frame_scanner s;
	struct rec got = {0};
	char *in;
	size_t n = 100000, i;

	(void)state;
	in = malloc(n);
	assert_non_null(in);
	memcpy(in, "<<<ptybox:N:", 12);
	for (i = 12; i < n - 10; i++)
		in[i] = 'a' + i % 26;
	memcpy(in + n - 10, END, 10);

	assert_int_equal(frame_scanner_init(&s, "N", 3000), 0);
	assert_true(s.payload_cap <= 3000);
	for (i = 0; i < n; i += 7) {
		frame_scanner_feed(&s, in + i, n - i < 7 ? n - i : 7, rec_cb, &got);
		assert_true(s.payload_cap <= 3000);
	}
	assert_int_equal(got.n, 1);
	assert_int_equal(got.v[0].ev, FRAME_EVENT_OVERSIZE);
	assert_int_equal(got.v[0].len, n - 22);
	assert_int_equal(s.payload_cap, 3000);

	frame_scanner_shrink(&s, 4096);
	assert_int_equal(s.payload_cap, 3000);
	frame_scanner_shrink(&s, 100);
	assert_int_equal(s.payload_cap, 100);
	frame_scanner_feed(&s, "<<<ptybox:N:{}:ptybox>>>", 24, rec_cb, &got);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.v[1].ev, FRAME_EVENT_PAYLOAD);

	/* Mid-frame, shrink keeps the bytes already held. */
	frame_scanner_feed(&s, in, 2012, rec_cb, &got);
	frame_scanner_shrink(&s, 0);
	assert_int_equal(s.payload_cap, 2000);
	frame_scanner_feed(&s, END, 10, rec_cb, &got);
	assert_int_equal(got.n, 3);
	assert_int_equal(got.v[2].ev, FRAME_EVENT_PAYLOAD);
	assert_int_equal(got.v[2].len, 2000);
	assert_memory_equal(got.text + got.v[2].off, in + 12, 2000);

	frame_scanner_shrink(&s, 0);
	assert_null(s.payload);
	assert_int_equal(s.payload_cap, 0);
	frame_scanner_feed(&s, "<<<ptybox:N:again:ptybox>>>", 27, rec_cb, &got);
	assert_int_equal(got.n, 4);
	assert_int_equal(got.v[3].len, 5);
	assert_memory_equal(got.text + got.v[3].off, "again", 5);

	frame_scanner_free(&s);
	rec_free(&got);
	free(in);
}

static void test_empty_feeds(void **state)
{
	struct frame_scanner s;
	struct rec got = {0};

	(void)state;
	assert_int_equal(frame_scanner_init(&s, "N", 64), 0);
	frame_scanner_feed(&s, NULL, 0, rec_cb, &got);
	frame_scanner_feed(&s, "<<<", 3, rec_cb, &got);
	frame_scanner_feed(&s, "", 0, rec_cb, &got);
	frame_scanner_finish(&s, rec_cb, &got);
	frame_scanner_finish(&s, rec_cb, &got);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.text_len, 3);
	assert_int_equal(got.empty_calls, 0);
	frame_scanner_free(&s);
	rec_free(&got);
}

#include "../frame_ref_binary.h"

/* The contract the slow, obvious way: at each position, either a whole frame starts here and is
 * read to its end or its first bad byte, or this one byte is noise. */
static void ref_scan(struct rec *r, const char *nonce, size_t cap, const char *in, size_t n)
{
	char start[FRAME_NONCE_MAX + 16];
	size_t sl, i = 0, p, j;

	sl = (size_t)snprintf(start, sizeof(start), "<<<ptybox:%s:", nonce);
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
		while (j < n && !(n - j >= 10 && memcmp(in + j, END, 10) == 0) &&
		       (unsigned char)in[j] >= 0x20 && (unsigned char)in[j] <= 0x7e &&
		       in[j] != '<' && in[j] != '>')
			j++;
		if (n - j >= 10 && memcmp(in + j, END, 10) == 0) {
			if (j - p <= cap)
				rec_event(r, FRAME_EVENT_PAYLOAD, in + p, j - p);
			else
				rec_event(r, FRAME_EVENT_OVERSIZE, NULL, j - p);
			i = j + 10;
		} else {
			rec_event(r, FRAME_EVENT_NOISE, in + i, sl + (j - p < cap ? j - p : cap));
			i = j;
		}
	}
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A stream dense in near misses: real frames, fake and partial markers, '<' runs, broken ends. */
static void gen_stream(struct rec *out, uint64_t *rng, size_t want)
{
	static const char *const tok[] = {
		"<",
		"<<",
		"<<<",
		"<<<<",
		"<<<p",
		"<<<ptybox",
		"<<<ptybox:",
		"<<<ptybox:ab",
		"<<<ptybox:ab1",
		"<<<ptybox:ab12",
		"<<<ptybox:ab12:",
		"<<<ptybox:ab12:",
		"<<<ptybox:ab123:",
		"<<<ptybox:ab1:",
		"<<<ptybox:AB12:",
		":",
		":ptybox",
		":ptybox>",
		":ptybox>>",
		":ptybox>>>",
		">",
		">>>",
		"{\"a\":1}",
		"x",
		" ",
		"\n",
		"\r\n",
		"\x1b[0m",
		"\x7f",
		"\x80",
		"\t",
		"ptybox",
		"ab12",
	};
	char c;
	size_t k, len;

	while (out->text_len < want) {
		switch (rng_next(rng) % 5) {
		case 4: /* a binary frame of any bytes, now and then broken */
			len = rng_next(rng) % 40;
			{
				char head[32];
				int hl = snprintf(head, sizeof(head), "<<<ptybox:ab12:#%s%zu:",
						  rng_next(rng) % 3 ? "" : "z", len);
				rec_bytes(out, head, (size_t)hl);
			}
			for (k = 0; k < len; k++) {
				c = rng_next(rng) % 3 ? (char)rng_next(rng) : ':';
				rec_bytes(out, &c, 1);
			}
			k = rng_next(rng) % 8;
			rec_bytes(out, END, k == 0 ? 4 : 10);
			break;
		case 0: /* a well-formed frame */
			rec_bytes(out, "<<<ptybox:ab12:", 15);
			len = rng_next(rng) % 24;
			for (k = 0; k < len; k++) {
				do
					c = (char)(0x20 + rng_next(rng) % 95);
				while (c == '<' || c == '>');
				rec_bytes(out, &c, 1);
			}
			if (rng_next(rng) % 4 == 0)
				rec_bytes(out, ":ptybo", 6);
			rec_bytes(out, END, 10);
			break;
		case 1: /* one random byte */
			c = (char)rng_next(rng);
			rec_bytes(out, &c, 1);
			break;
		default:
			k = rng_next(rng) % (sizeof(tok) / sizeof(tok[0]));
			rec_bytes(out, tok[k], strlen(tok[k]));
			break;
		}
	}
}

static void test_random_chunks_vs_reference(void **state)
{
	static const size_t caps[] = {BIG, 5, 16};
	static const size_t max_chunk[] = {1, 3, 17, 300, 70000};
	struct rec in = {0}, want = {0}, got = {0};
	uint64_t rng = 0x9e3779b97f4a7c15u;
	size_t ci, mi, at, ncuts, *cuts, maxcuts, payloads, oversizes, k;
	char what[64];

	(void)state;
	gen_stream(&in, &rng, 1 << 16);
	maxcuts = 3 * in.text_len + 16;
	cuts = malloc(maxcuts * sizeof(*cuts));
	assert_non_null(cuts);
	for (ci = 0; ci < NWANT(caps); ci++) {
		ref_scan(&want, "ab12", caps[ci], in.text, in.text_len);
		payloads = oversizes = 0;
		for (k = 0; k < want.n; k++) {
			payloads += want.v[k].ev == FRAME_EVENT_PAYLOAD ||
				    want.v[k].ev == FRAME_EVENT_BINARY ||
				    want.v[k].ev == FRAME_EVENT_BINARY_Z;
			oversizes += want.v[k].ev == FRAME_EVENT_OVERSIZE;
		}
		/* The stream must exercise what it is here for. */
		assert_true(payloads + oversizes > 1000);
		if (caps[ci] == BIG)
			assert_rebuilds(&want, "ab12", in.text, in.text_len);
		else
			assert_true(oversizes > 100);

		for (mi = 0; mi < NWANT(max_chunk); mi++) {
			/* Chunks of 0..max bytes: empty feeds are legal and must change nothing.
			 * The last feed takes whatever the cuts left. */
			for (at = 0, ncuts = 0; at < in.text_len && ncuts < maxcuts; ncuts++) {
				at += rng_next(&rng) % (max_chunk[mi] + 1);
				cuts[ncuts] = at < in.text_len ? at : in.text_len;
			}
			scan_cuts(&got, "ab12", caps[ci], in.text, in.text_len, cuts, ncuts);
			snprintf(what, sizeof(what), "cap %zu, chunks up to %zu", caps[ci],
				 max_chunk[mi]);
			assert_rec_equal(&got, &want, what);
			if (caps[ci] == BIG)
				assert_rebuilds(&got, "ab12", in.text, in.text_len);
			rec_free(&got);
		}
		rec_free(&want);
	}
	free(cuts);
	rec_free(&in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_nonce),
		cmocka_unit_test(test_single_frame),
		cmocka_unit_test(test_split_every_boundary),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_noise_between),
		cmocka_unit_test(test_noise_not_fragmented),
		cmocka_unit_test(test_wrong_nonce),
		cmocka_unit_test(test_nonce_prefix),
		cmocka_unit_test(test_lt_runs),
		cmocka_unit_test(test_partial_marker_then_finish),
		cmocka_unit_test(test_end_fragments),
		cmocka_unit_test(test_invalid_byte),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_memory_bound_and_shrink),
		cmocka_unit_test(test_empty_feeds),
		cmocka_unit_test(test_binary_frames),
		cmocka_unit_test(test_broken_binary_frames),
		cmocka_unit_test(test_binary_frames_past_the_cap),
		cmocka_unit_test(test_random_chunks_vs_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
