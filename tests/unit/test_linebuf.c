/* Unit tests for linebuf.c: lines out of a byte stream, bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "linebuf.h"

struct got {
	char lines[16][64];
	size_t n, too_long;
};

static void on_line(void *data, const char *line, size_t len, bool too_long)
{
	struct got *g = data;
	if (too_long) {
		g->too_long++;
		return;
	}
	assert_int_equal(strlen(line), len);
	assert_true(g->n < 16);
	snprintf(g->lines[g->n++], 64, "%s", line);
}

static void test_lines_come_whole_whatever_the_pieces(void **state)
{
	static const char in[] = "one\ntwo\r\n\nthree";
	for (size_t piece = 1; piece <= sizeof(in); piece++) {
		struct linebuf lb;
		struct got g = {0};
		linebuf_init(&lb, 100);
		for (size_t i = 0; i < sizeof(in) - 1; i += piece) {
			size_t n = sizeof(in) - 1 - i < piece ? sizeof(in) - 1 - i : piece;
			assert_int_equal(linebuf_feed(&lb, in + i, n, on_line, &g), 0);
		}
		assert_int_equal(g.n, 3);
		linebuf_finish(&lb, on_line, &g); /* the last line has no newline */
		assert_int_equal(g.n, 4);
		assert_string_equal(g.lines[0], "one");
		assert_string_equal(g.lines[1], "two"); /* (its \r goes) */
		assert_string_equal(g.lines[2], "");
		assert_string_equal(g.lines[3], "three");
		linebuf_free(&lb);
	}
}

static void test_a_line_past_the_cap_is_skipped_once_and_never_held(void **state)
{
	struct linebuf lb;
	struct got g = {0};
	linebuf_init(&lb, 8);
	char big[1000];
	memset(big, 'x', sizeof(big));
	assert_int_equal(linebuf_feed(&lb, "ok\n", 3, on_line, &g), 0);
	for (int i = 0; i < 100; i++) /* 100 KB of one line, never buffered whole */
		assert_int_equal(linebuf_feed(&lb, big, sizeof(big), on_line, &g), 0);
	assert_true(lb.cap < 4096);
	assert_int_equal(g.too_long, 1);
	assert_int_equal(linebuf_feed(&lb, "tail\nnext\n", 10, on_line, &g), 0);
	assert_int_equal(g.n, 2); /* "tail" ended the long line; "next" is whole */
	assert_string_equal(g.lines[0], "ok");
	assert_string_equal(g.lines[1], "next");
	linebuf_finish(&lb, on_line, &g);
	assert_int_equal(g.n, 2);
	linebuf_free(&lb);
}

static void test_a_cut_last_line_is_dropped_unread(void **state)
{
	struct linebuf lb;
	struct got g = {0};
	linebuf_init(&lb, 8);
	assert_int_equal(linebuf_feed(&lb, "ok\nhalf", 7, on_line, &g), 0);
	assert_int_equal(linebuf_finish_cut(&lb), 4);
	assert_int_equal(g.n, 1);
	assert_int_equal(linebuf_feed(&lb, "0123456789", 10, on_line, &g), 0);
	assert_int_equal(linebuf_finish_cut(&lb), 0); /* (skipped already, told once) */
	assert_int_equal(g.too_long, 1);
	assert_int_equal(linebuf_finish_cut(&lb), 0);
	assert_int_equal(g.n, 1);
	linebuf_free(&lb);
}

static void count_line(void *data, const char *line, size_t len, bool too_long)
{
	size_t *n = data;
	assert_false(too_long);
	*n += len;
}

static void test_a_long_line_gives_its_memory_back(void **state)
{
	struct linebuf lb;
	linebuf_init(&lb, (size_t)8 << 20);
	size_t n = (size_t)4 << 20, got = 0;
	assert_int_equal(linebuf_reserve(&lb, n), 0);
	memset(lb.buf, 'z', n - 1);
	lb.buf[n - 1] = '\n';
	linebuf_commit(&lb, n, count_line, &got);
	assert_int_equal(got, n - 1);
	assert_true(lb.cap <= ((size_t)256 << 10)); /* what stays between lines is small */
	linebuf_free(&lb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_come_whole_whatever_the_pieces),
		cmocka_unit_test(test_a_line_past_the_cap_is_skipped_once_and_never_held),
		cmocka_unit_test(test_a_cut_last_line_is_dropped_unread),
		cmocka_unit_test(test_a_long_line_gives_its_memory_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
