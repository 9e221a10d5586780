/* Unit tests for term_safe.c: what of the sandbox's text reaches a terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "term_safe.h"

/* in (len bytes) through a fresh filter in two writes, cut at split, then
 * its end; each write into a buffer of exactly the room promised, so that
 * ASan sees a write past it. NUL-terminated; caller frees. */
static char *filter_split(const char *in, size_t len, size_t split, size_t *outlen)
{
	struct term_safe t;
	term_safe_init(&t);
	char *a = malloc(TERM_SAFE_OUT_MAX(split)), *b = malloc(TERM_SAFE_OUT_MAX(len - split));
	char *c = malloc(TERM_SAFE_OUT_MAX(0));
	size_t na = term_safe_feed(&t, in, split, a);
	size_t nb = term_safe_feed(&t, in + split, len - split, b);
	size_t nc = term_safe_end(&t, c);
	assert_int_equal(t.nheld, 0);
	char *out = malloc(na + nb + nc + 1);
	memcpy(out, a, na);
	memcpy(out + na, b, nb);
	memcpy(out + na + nb, c, nc);
	out[na + nb + nc] = '\0';
	free(a);
	free(b);
	free(c);
	*outlen = na + nb + nc;
	return out;
}

/* in through the filter in one write, and cut at every point into two, and
 * one byte at a time: each gives want. */
static void check_len(const char *in, size_t len, const char *want)
{
	for (size_t split = 0; split <= len; split++) {
		size_t n;
		char *got = filter_split(in, len, split, &n);
		if (strlen(want) != n || memcmp(got, want, n) != 0)
			fail_msg("split at %zu: got \"%s\", want \"%s\"", split, got, want);
		free(got);
	}
	struct term_safe t;
	term_safe_init(&t);
	char *got = malloc(len * TERM_SAFE_OUT_MAX(1) + TERM_SAFE_OUT_MAX(0) + 1);
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += term_safe_feed(&t, in + i, 1, got + n);
	n += term_safe_end(&t, got + n);
	got[n] = '\0';
	if (strlen(want) != n || memcmp(got, want, n) != 0)
		fail_msg("byte by byte: got \"%s\", want \"%s\"", got, want);
	free(got);
}

static void check(const char *in, const char *want)
{
	check_len(in, strlen(in), want);
}

static void test_text_newlines_tabs_and_utf8_pass(void **state)
{
	check("", "");
	check("hello, world\n\tindented\r\nwindows line\n",
	      "hello, world\n\tindented\r\nwindows line\n");
	check("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xe2\x80\xaf",
	      "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xe2\x80\xaf");
	check("back\\slash \\x1b stays", "back\\slash \\x1b stays");
}

static void test_colours_pass_and_other_sequences_show(void **state)
{
	/* The example: clipboard write, window title, cursor up. */
	check("\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2Aok\x1b[31mred\x1b[0m",
	      "\\x1b]52;c;SGVsbG8=\\x07\\x1b]0;pwned\\x07\\x1b[2Aok\x1b[31mred\x1b[0m");
	check("\x1b[m\x1b[1;38;5;208mx\x1b[38;2;255;255;255;48;2;255;255;255m",
	      "\x1b[m\x1b[1;38;5;208mx\x1b[38;2;255;255;255;48;2;255;255;255m");
	check("\x1b[?25l\x1b[2J\x1b[H\x1b"
	      "c\x1bP+q\x1b\\",
	      "\\x1b[?25l\\x1b[2J\\x1b[H\\x1b"
	      "c\\x1bP+q\\x1b\\");
	check("\x1b", "\\x1b");
	check("\x1b[", "\\x1b[");
	check("\x1b[31", "\\x1b[31");
	check("\x1b\x1b[1m", "\\x1b\x1b[1m");
	check("\x1b[1\x1b[2m", "\\x1b[1\x1b[2m");
	/* The longest SGR passes; one byte longer shows escaped. */
	char sgr[TERM_SAFE_HOLD_MAX + 2], want[TERM_SAFE_HOLD_MAX + 8];
	for (size_t extra = 0; extra < 2; extra++) {
		size_t n = TERM_SAFE_HOLD_MAX + extra;
		sgr[0] = '\x1b';
		sgr[1] = '[';
		memset(sgr + 2, '1', n - 3);
		sgr[n - 1] = 'm';
		sgr[n] = '\0';
		if (extra) {
			memcpy(want, "\\x1b", 4);
			memcpy(want + 4, sgr + 1, n);
		} else {
			memcpy(want, sgr, n + 1);
		}
		check(sgr, want);
	}
}

static void test_controls_and_a_lone_cr_show(void **state)
{
	check("50%\r60%\r", "50%\\x0d60%\\x0d");
	check("a\r\r\nb", "a\\x0d\r\nb");
	check("\r", "\\x0d");
	check("bell\x07 back\x08 ff\x0c vt\x0b del\x7f nul", "bell\\x07 back\\x08 ff\\x0c vt\\x0b "
							     "del\\x7f nul");
	check_len("a\0b", 3, "a\\x00b");
}

static void test_a_lone_cr_passes_when_asked(void **state)
{
	(void)state;
	static const char in[] = "\r0%\r50%\r\x1b]0;title\x07\r\n";
	struct term_safe t;
	term_safe_init(&t);
	term_safe_pass_cr(&t);
	char out[TERM_SAFE_OUT_MAX(sizeof(in))];
	size_t n = 0;
	for (size_t i = 0; i + 1 < sizeof(in); i++) /* (byte by byte) */
		n += term_safe_feed(&t, in + i, 1, out + n);
	n += term_safe_end(&t, out + n);
	out[n] = '\0';
	assert_string_equal(out, "\r0%\r50%\r\\x1b]0;title\\x07\r\n");
	term_safe_init(&t); /* (and fresh again: escaped) */
	n = term_safe_feed(&t, "\r", 1, out);
	n += term_safe_end(&t, out + n);
	out[n] = '\0';
	assert_string_equal(out, "\\x0d");
}

static void test_invalid_utf8_shows_as_bytes(void **state)
{
	check("\xff\xfe", "\\xff\\xfe");
	check("\x9b"
	      "31m",
	      "\\x9b31m"); /* a raw C1 CSI: not UTF-8 */
	check("\xc3(", "\\xc3(");
	check("\xc0\xaf", "\\xc0\\xaf");		   /* overlong '/' */
	check("\xe0\x80\xaf", "\\xe0\\x80\\xaf");	   /* overlong */
	check("\xed\xa0\x80", "\\xed\\xa0\\x80");	   /* a surrogate */
	check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	check("\xe2\x82", "\\xe2\\x82");		   /* cut at the end */
	check("\xe2\x82\xe2\x82\xac", "\\xe2\\x82\xe2\x82\xac");
	check("\xf0\x9f\x98\x1b[1m", "\\xf0\\x9f\\x98\x1b[1m");
}

static void test_c1_and_bidi_controls_show_as_code_points(void **state)
{
	check("\xc2\x85\xc2\x9b"
	      "31m",
	      "\\u0085\\u009b31m");
	check("\xc2\x80\xc2\x9f\xc2\xa0", "\\u0080\\u009f\xc2\xa0");
	check("a\xe2\x80\xae"
	      "b\xe2\x80\xac",
	      "a\\u202eb\\u202c");
	check("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xad", "\\u202a\\u202b\\u202d");
	check("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9\xe2\x81\xa5",
	      "\\u2066\\u2067\\u2068\\u2069\xe2\x81\xa5");
	check("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c\xe2\x80\x8d", "\\u200e\\u200f\\u061c\xe2\x80\x8d");
	assert_true(term_safe_hidden(0x85));
	assert_false(term_safe_hidden(0x7f)); /* a byte, shown as \x7f: not a character */
	assert_false(term_safe_hidden(0xa0));
	assert_false(term_safe_hidden(0x2029));
	assert_false(term_safe_hidden(0x206a));
}

/* Whatever comes in, what comes out is within the room promised, and is
 * itself safe: through the filter again, it is unchanged. */
static void test_random_bytes_stay_in_bounds_and_come_out_safe(void **state)
{
	unsigned seed = 12345;
	static const char alphabet[] = "\x1b\x1b[[[;;0123m\r\n\t\x07\xc2\x85\xe2\x80\xae\x81\xa6"
				       "\xf0\x9f\x98\x80\xed\xa0\xff aZ";
	for (int round = 0; round < 2000; round++) {
		char in[64];
		size_t len = (size_t)(round % 64);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245 + 12345;
			in[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		size_t n, n2;
		char *once = filter_split(in, len, len / 2, &n);
		assert_true(n <= TERM_SAFE_OUT_MAX(len));
		char *twice = filter_split(once, n, n / 3, &n2);
		assert_int_equal(n2, n);
		assert_memory_equal(once, twice, n);
		free(twice);
		free(once);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_newlines_tabs_and_utf8_pass),
		cmocka_unit_test(test_colours_pass_and_other_sequences_show),
		cmocka_unit_test(test_controls_and_a_lone_cr_show),
		cmocka_unit_test(test_a_lone_cr_passes_when_asked),
		cmocka_unit_test(test_invalid_utf8_shows_as_bytes),
		cmocka_unit_test(test_c1_and_bidi_controls_show_as_code_points),
		cmocka_unit_test(test_random_bytes_stay_in_bounds_and_come_out_safe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
