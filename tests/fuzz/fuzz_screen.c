/*
 * fuzz_screen.c - libFuzzer target for the session screen (src/screen.c).
 *
 * Input: a 3-byte header (rows, cols, scrollback size, all small so that wrapping, scrolling
 * and dropping happen often), then operations: an opcode byte, a length byte, that many bytes.
 * The opcodes feed output, feed code as input, shrink the screen, capture it, or render the
 * bytes one-shot. Whatever comes, every capture must be safe on a terminal (valid UTF-8, no
 * control but "\n", no escape but SGR, and none without escapes), and shrinking must not change
 * what a capture shows, neither at once nor once the terminal is rebuilt. The rebuilt picture
 * is compared only when it is ASCII: libvterm 0.1.4 keeps a wide character whose right half was
 * written over as a wide glyph in a one-column cell, which no redraw reproduces.
 *
 * Without libFuzzer it is linked with replay_main.c, so that ctest replays the corpus.
 */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "screen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_safe(const char *p, size_t n, bool escapes)
{
	CHECK(p[n] == '\0');
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		if (c == 0x1b) {
			CHECK(escapes && i + 1 < n && p[i + 1] == '[');
			for (i += 2; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == ';'); i++)
				;
			CHECK(i < n && p[i] == 'm');
			i++;
			continue;
		}
		CHECK(c == '\n' || (c >= 0x20 && c != 0x7f));
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		CHECK(c < 0x80 || (c >= 0xc2 && c <= 0xf4));
		CHECK(i + k <= n);
		for (size_t j = 1; j < k; j++)
			CHECK(((unsigned char)p[i + j] & 0xc0) == 0x80);
		i += k;
	}
}

static char *capture(struct screen *s, bool escapes, long start, size_t *len)
{
	char *out;
	CHECK(screen_capture(s, escapes, start, &out, len) == 0);
	check_safe(out, *len, escapes);
	return out;
}

/* Shrinking keeps the picture: the capture is the same shrunk, and rebuilt (an empty feed). */
static void check_shrink(struct screen *s)
{
	size_t n0, n1, n2;
	char *before = capture(s, true, LONG_MIN, &n0), *shrunk, *rebuilt;

	CHECK(screen_shrink(s) == 0);
	CHECK(screen_memory(s) <= (SCREEN_SCROLLBACK_MAX + 1) + (64u << 10));
	shrunk = capture(s, true, LONG_MIN, &n1);
	CHECK(screen_feed(s, "", 0) == 0);
	rebuilt = capture(s, true, LONG_MIN, &n2);
	CHECK(n0 == n1 && memcmp(before, shrunk, n0) == 0);
	bool ascii = true;
	for (size_t i = 0; i < n0; i++)
		ascii = ascii && (unsigned char)before[i] < 0x80;
	CHECK(!ascii || (n0 == n2 && memcmp(before, rebuilt, n0) == 0));
	free(before);
	free(shrunk);
	free(rebuilt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct screen *s;
	size_t i = 3, n, len;
	char *out;

	if (size < 3)
		return 0;
	CHECK(screen_new(&s, 1u + data[0] % 12, 2u + data[1] % 40, (size_t)data[2] * 8) == 0);
	while (i + 2 <= size) {
		uint8_t op = data[i];
		n = data[i + 1];
		i += 2;
		if (n > size - i)
			n = size - i;
		const char *p = (const char *)data + i;
		i += n;
		switch (op % 8) {
		case 4: CHECK(screen_feed_input(s, p, n) == 0); break;
		case 5: check_shrink(s); break;
		case 6:
			out = capture(s, op & 0x10, n % 2 ? -(long)n : (long)n % 16, &len);
			free(out);
			break;
		case 7:
			CHECK(screen_render(p, n, 2u + op % 50, op & 0x10, &out, &len) == 0);
			check_safe(out, len, op & 0x10);
			free(out);
			/* (it reads only its bytes, and stops past its max) */
			CHECK(screen_render_rows(p, n, 2u + op % 50, op % 7) <=
			      (size_t)op % 7 + 51);
			break;
		default: CHECK(screen_feed(s, p, n) == 0); break;
		}
	}
	out = capture(s, false, LONG_MIN, &len);
	free(out);
	check_shrink(s);
	screen_free(s);
	return 0;
}
