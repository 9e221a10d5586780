/* Unit tests for screen.c: the session's screen behind `ptybox capture` and "render": true. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "screen.h"

static struct screen *new_screen(unsigned rows, unsigned cols, size_t sb)
{
	struct screen *s;
	assert_int_equal(screen_new(&s, rows, cols, sb), 0);
	return s;
}

static void feed(struct screen *s, const char *text)
{
	assert_int_equal(screen_feed(s, text, strlen(text)), 0);
}

/* What is safe on a terminal: valid UTF-8, no control but "\n", and with escapes SGR only. */
static void check_safe(const char *p, size_t n, bool escapes)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		if (c == 0x1b) {
			assert_true(escapes);
			assert_true(i + 1 < n && p[i + 1] == '[');
			for (i += 2; i < n && ((p[i] >= '0' && p[i] <= '9') || p[i] == ';'); i++)
				;
			assert_true(i < n && p[i] == 'm');
			i++;
			continue;
		}
		assert_true(c == '\n' || (c >= 0x20 && c != 0x7f));
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		assert_true(c < 0x80 || (c >= 0xc2 && c <= 0xf4));
		assert_true(i + k <= n);
		for (size_t j = 1; j < k; j++)
			assert_int_equal((unsigned char)p[i + j] & 0xc0, 0x80);
		i += k;
	}
}

/* The capture, checked safe; caller frees. */
static char *capture(struct screen *s, bool escapes, long start)
{
	char *out;
	size_t len;
	assert_int_equal(screen_capture(s, escapes, start, &out, &len), 0);
	assert_int_equal(strlen(out), len);
	check_safe(out, len, escapes);
	return out;
}

static void assert_capture(struct screen *s, bool escapes, long start, const char *want)
{
	char *got = capture(s, escapes, start);
	assert_string_equal(got, want);
	free(got);
}

static void test_new_bounds(void **state)
{
	struct screen *s = (struct screen *)1;
	assert_int_equal(screen_new(&s, 0, 80, 0), -EINVAL);
	assert_null(s);
	assert_int_equal(screen_new(&s, 24, 0, 0), -EINVAL);
	assert_int_equal(screen_new(&s, 24, 1, 0), -EINVAL); /* libvterm crashes on a wide char */
	s = new_screen(1, 2, 0);
	feed(s, "\xe4\xb8\xad\xe4\xb8\xad");
	assert_capture(s, false, 0, "\xe4\xb8\xad\n");
	screen_free(s);
	assert_int_equal(screen_new(&s, SCREEN_ROWS_MAX + 1, 80, 0), -EINVAL);
	assert_int_equal(screen_new(&s, 24, SCREEN_COLS_MAX + 1, 0), -EINVAL);
	assert_int_equal(screen_new(&s, 24, 80, SCREEN_SCROLLBACK_MAX + 1), -EINVAL);
	s = new_screen(SCREEN_ROWS_MAX, SCREEN_COLS_MAX, SCREEN_SCROLLBACK_MAX);
	feed(s, "corner");
	assert_capture(s, false, 0, "corner\n");
	screen_free(s);
	screen_free(NULL);
}

static void test_empty(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	assert_capture(s, false, 0, "");
	assert_capture(s, true, LONG_MIN, "");
	feed(s, "\n\n\n   \n");
	assert_capture(s, false, 0, "");
	screen_free(s);
}

static void test_progress_bar(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	char line[64];
	for (int i = 0; i <= 1000; i++) {
		int n = snprintf(line, sizeof(line), "\r%3d%% [%-20.*s]", i / 10, i / 50,
				 "####################");
		assert_int_equal(screen_feed(s, line, (size_t)n), 0);
	}
	feed(s, "\ndone\n");
	assert_capture(s, false, LONG_MIN, "100% [####################]\ndone\n");
	screen_free(s);
}

/* Output comes from pipes: a bare LF must return to column 0, as onlcr would. */
static void test_lf(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	feed(s, "one\ntwo\r\nthree\n\nfive");
	assert_capture(s, false, 0, "one\ntwo\nthree\n\nfive\n");
	screen_free(s);

	/* A line of exactly the width, then LF: no blank line between (the wrap is pending). */
	s = new_screen(4, 10, 4096);
	feed(s, "0123456789\nx\n");
	assert_capture(s, false, 0, "0123456789\nx\n");
	screen_free(s);
}

static void test_prompt(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	const char *code = "for i in range(2):\n    print(i)\n";
	assert_int_equal(screen_feed_input(s, code, strlen(code)), 0);
	feed(s, "0\n1\n");
	assert_int_equal(screen_feed_input(s, "x", 1), 0);
	feed(s, "no newline");
	assert_int_equal(screen_feed_input(s, "", 0), 0);
	assert_capture(s, false, 0,
		       ">>> for i in range(2):\n...     print(i)\n0\n1\n>>> x\nno newline\n>>>\n");
	screen_free(s);

	/* Code cannot draw on the screen: its controls show as ^X, and a colour it leaves set
	 * in output does not colour the next prompt. */
	s = new_screen(24, 80, 4096);
	feed(s, "\x1b[31mred");
	const char *evil = "a\x1b[2J\rb\x07\tc";
	assert_int_equal(screen_feed_input(s, evil, strlen(evil)), 0);
	assert_capture(s, false, 0, "red\n>>> a^[[2J^Mb^G c\n"); /* a tab is spaces, as in tmux */
	char *got = capture(s, true, 0);
	assert_non_null(strstr(got, "\n>>> a^[[2J"));
	free(got);
	screen_free(s);
}

static void test_scrollback(void **state)
{
	struct screen *s = new_screen(5, 20, 1 << 20);
	char line[32], want[1024];
	size_t n = 0;

	for (int i = 0; i < 100; i++) {
		snprintf(line, sizeof(line), "line %d\n", i);
		feed(s, line);
	}
	/* 100 lines and the cursor's empty row: 96 in the scrollback, 4 shown. */
	assert_capture(s, false, 0, "line 96\nline 97\nline 98\nline 99\n");
	assert_capture(s, false, 2, "line 98\nline 99\n");
	assert_capture(s, false, 100, "");
	assert_capture(s, false, -2, "line 94\nline 95\nline 96\nline 97\nline 98\nline 99\n");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(want + n, sizeof(want) - n, "line %d\n", i);
	assert_capture(s, false, LONG_MIN, want);
	assert_capture(s, false, -1000, want);
	screen_free(s);

	/* A small scrollback keeps the newest lines, in whole lines, within its bytes. */
	s = new_screen(5, 20, 100);
	for (int i = 0; i < 1000; i++) {
		snprintf(line, sizeof(line), "line %d\n", i);
		feed(s, line);
	}
	char *got = capture(s, false, LONG_MIN);
	assert_true(strlen(got) <= 100 + 4 * 9);
	assert_memory_equal(got, "line ", 5);
	assert_non_null(
		strstr(got, "line 994\nline 995\nline 996\nline 997\nline 998\nline 999\n"));
	free(got);
	assert_int_equal(screen_shrink(s), 0);
	assert_true(screen_memory(s) < 1024);
	screen_free(s);

	/* Without scrollback, what scrolls off is gone. */
	s = new_screen(2, 20, 0);
	feed(s, "a\nb\nc\nd");
	assert_capture(s, false, LONG_MIN, "c\nd\n");
	screen_free(s);
}

static void test_trim(void **state)
{
	struct screen *s = new_screen(10, 40, 4096);
	/* Trailing spaces go; inner ones and leading ones stay; blank lines inside stay. */
	feed(s, "  a  b   \n\n\t\n c \x1b[K\n\n\n");
	assert_capture(s, false, 0, "  a  b\n\n\n c\n");
	screen_free(s);

	/* A coloured background shows: kept with escapes, trimmed as spaces without. */
	s = new_screen(10, 40, 4096);
	feed(s, "x\x1b[41m  \x1b[0m  \n");
	assert_capture(s, false, 0, "x\n");
	assert_capture(s, true, 0, "x\x1b[0;41m  \x1b[0m\n");
	screen_free(s);
}

static void test_escapes(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	feed(s, "\x1b[31mred\x1b[0m plain \x1b[1;4;48;5;200mbold\x1b[22;24m\x1b[38;2;1;2;3mrgb"
		"\x1b[0m \x1b[92mbright\x1b[0m\n");
	/* Title, clipboard, hyperlink, DCS: none of it reaches the text. */
	feed(s, "\x1b]0;title\x07\x1b]52;c;aGVsbG8=\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"
		"\x1bP1$r0m\x1b\\\x1b[?1049h\x1b[?25l\x1b(0q\x1b(B\x9b"
		"2J\n");
	/* Cursor movement draws where it says, and is itself never in the text. */
	feed(s, "abcdef\x1b[3D\x1b[1AX\x1b[2BY\x1b[1;75HZ\n");
	char want[256];
	/* DEC line drawing shows, a lone C1 byte is not UTF-8 and shows as U+FFFD. */
	snprintf(want, sizeof(want),
		 "%-74sZ\nlinX\xe2\x94\x80\xef\xbf\xbd"
		 "2J\nabcdef\n    Y\n",
		 "red plain boldrgb bright");
	assert_capture(s, false, 0, want);
	char *got = capture(s, true, 0);
	assert_non_null(strstr(got, "\x1b[0;31mred\x1b[0m plain "));
	assert_non_null(strstr(got, "\x1b[0;1;4;48;5;200mbold\x1b[0;38;2;1;2;3;48;5;200mrgb\x1b[0m "
				    "\x1b[0;92mbright\x1b[0m    "));
	assert_null(strstr(got, "title"));
	assert_null(strstr(got, "aGVsbG8"));
	assert_null(strstr(got, "http"));
	free(got);
	screen_free(s);
}

/* Queries get no reply: libvterm answers into a callback that drops it, and nothing of the
 * answer shows anywhere. */
static void test_no_reply(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	feed(s, "\x1b[6n\x1b[c\x1b[>c\x1b[5n\x1b[?6n\x1b]10;?\x07\x1b[18t");
	assert_true(screen_replies_dropped(s) > 0); /* libvterm did try to answer */
	assert_capture(s, true, LONG_MIN, "");
	screen_free(s);
}

/* libvterm 0.1.4 loops forever on REP after nothing, after a zero-width or a C1 glyph: REP
 * is dropped, in one write or cut anywhere. */
static void test_rep_hang(void **state)
{
	const char *in = "\x1b[b|\xe2\x80\x8b\x1b[5b|a\xc2\x80\x1b[3b|x\x1b[2b\x1b[1;2;3b\n";
	for (size_t cut = 0; cut <= strlen(in); cut++) {
		struct screen *s = new_screen(4, 20, 256);
		assert_int_equal(screen_feed(s, in, cut), 0);
		assert_int_equal(screen_feed(s, in + cut, strlen(in) - cut), 0);
		char *got = capture(s, false, 0);
		assert_string_equal(got,
				    "|\xe2\x80\x8b||x\n"); /* libvterm eats the a before U+0080 */
		free(got);
		/* Shrunk in the middle of a sequence, the rest is text, and still no hang. */
		assert_int_equal(screen_feed(s, in, cut), 0);
		assert_int_equal(screen_shrink(s), 0);
		assert_int_equal(screen_feed(s, in + cut, strlen(in) - cut), 0);
		free(capture(s, true, LONG_MIN));
		screen_free(s);
	}
}

/* libvterm 0.1.4 crashes on a CSI of more than 16 arguments: such a CSI is cut off. */
#define ADD(lit) (memcpy(in + n, lit, sizeof(lit) - 1), n += sizeof(lit) - 1)
static void test_csi_args(void **state)
{
	char in[1024];
	size_t n = 0;

	ADD("\x1b[31;");
	for (int i = 0; i < 50; i++)
		ADD("2;1:");
	ADD("mA\x1b[?1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1\n");
	/* Controls and DEL inside ESC [ are carried out and leave the sequence going. */
	ADD("\x1b\x7f\x00[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m");
	ADD("\x1b\x00\x7f\x00[\x00"
	    "b\x1b[1\x00;\x7f"
	    "1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m");
	ADD("\x1b![::::::::::::::::::::\t\x1b ([1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m");
	ADD("\x1b\xff[::::::::::::::::::::\t\x1b\xc3\xa9[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m");
	ADD("\x1b[1mB\n");
	for (size_t cut = 0; cut <= n; cut++) {
		struct screen *s = new_screen(4, 40, 256);
		assert_int_equal(screen_feed(s, in, cut), 0);
		assert_int_equal(screen_feed(s, in + cut, n - cut), 0);
		assert_capture(s, true, 0, "A\n\x1b[0;1mB\x1b[0m\n");
		screen_free(s);
	}
}

static void test_wide_and_combining(void **state)
{
	struct screen *s = new_screen(24, 20, 4096);
	const char *text =
		"\xe4\xb8\xad\xe6\x96\x87|\xf0\x9f\x98\x80|e\xcc\x81|a\xcc\x81\xcc\xa7\n";
	feed(s, text);
	/* A wide character that does not fit the last column wraps to the next row. */
	feed(s, "1234567890123456789\xe4\xb8\xad\n");
	/* Bidi controls and C1 never reach the text, whether alone or combined (libvterm 0.1.4
	 * takes U+009B as a glyph, after eating the character before it). */
	feed(s, "\xe2\x80\xae"
		"ab\xe2\x80\xae"
		"c\xc2\x9b"
		"d\n");
	char *got = capture(s, false, 0);
	assert_memory_equal(got, text, strlen(text));
	assert_memory_equal(got + strlen(text), "1234567890123456789\n\xe4\xb8\xad\nab", 26);
	assert_null(strstr(got, "\xe2\x80\xae"));
	assert_null(strstr(got, "\xc2\x9b"));
	free(got);
	screen_free(s);
}

static void test_invalid_utf8(void **state)
{
	struct screen *s = new_screen(24, 80, 4096);
	const char bad[] = "a\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80z\xe4\xb8\xad!\xe4\xb8";
	for (size_t i = 0; i < sizeof(bad) - 1; i++)
		assert_int_equal(screen_feed(s, bad + i, 1), 0);
	feed(s, "\xad\n");
	char *got = capture(s, false, 0);
	assert_memory_equal(got, "a", 1);
	assert_non_null(strstr(got, "z\xe4\xb8\xad!\xe4\xb8\xad\n"));
	free(got);
	screen_free(s);
}

/* A character cut between two feeds, or by the 4 KiB writes to libvterm, arrives whole
 * (libvterm 0.1.4 alone loses it when text comes before it in the same write). */
static void test_utf8_cut(void **state)
{
	const char *in = "|\xe4\xb8\xad|\xf0\x9f\x98\x80|\xe2\x80\x8b|x\n";
	for (size_t cut = 0; cut <= strlen(in); cut++) {
		struct screen *s = new_screen(4, 20, 256);
		assert_int_equal(screen_feed(s, in, cut), 0);
		assert_int_equal(screen_feed(s, "", 0), 0);
		assert_int_equal(screen_feed(s, in + cut, strlen(in) - cut), 0);
		assert_capture(s, false, 0, in);
		screen_free(s);
	}
	struct screen *s = new_screen(4, 80, 1 << 16);
	char *big = malloc(8192 + 16);
	for (size_t at = 4090; at < 4100; at++) {
		memset(big, 'a', at);
		strcpy(big + at, "\xf0\x9f\x98\x80\n");
		assert_int_equal(screen_feed(s, big, strlen(big)), 0);
		char *got = capture(s, false, -1);
		assert_non_null(strstr(got, "a\xf0\x9f\x98\x80\n"));
		free(got);
	}
	free(big);
	screen_free(s);
}

/* Lots of input leaves memory where it was: the cells and the scrollback's bytes. */
static void test_huge_input(void **state)
{
	struct screen *s = new_screen(24, 80, 64 << 10);
	size_t n = 2 << 20;
	char *buf = malloc(n);
	uint32_t x = 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (char)(x >> 24);
	}
	assert_int_equal(screen_feed(s, buf, n), 0);
	size_t garbage = screen_memory(s);
	assert_true(garbage < 96 * 1024 + (64 << 10) + 2 * 1024);

	/* Combining marks on one cell without end: libvterm would keep them all. */
	memcpy(buf, "\x1b[0ma", 5);
	for (size_t i = 5; i + 2 <= n; i += 2)
		memcpy(buf + i, "\xcc\x81", 2);
	assert_int_equal(screen_feed(s, buf, n & ~(size_t)1), 0);
	assert_true(screen_memory(s) < 96 * 1024 + (64 << 10) + 2 * 1024 + (64 << 10));
	free(buf);
	screen_free(s);
}

/* The budget: see SCREEN_IDLE_BUDGET. Figures are printed for the report. */
static void test_memory(void **state)
{
	struct screen *s = new_screen(24, 80, 32 << 10);
	char line[128];

	assert_true(screen_memory(s) < 512);
	print_message("screen 80x24: new %zu bytes\n", screen_memory(s));
	assert_int_equal(screen_feed_input(s, "print(1)", 8), 0);
	print_message("screen 80x24: live terminal %zu bytes\n", screen_memory(s));
	assert_true(screen_memory(s) < 96 * 1024);
	/* A full screen of text, idle. */
	for (int i = 0; i < 24; i++) {
		int n = snprintf(line, sizeof(line), "%.79s\n",
				 "the quick brown fox jumps over the lazy dog, the quick brown fox "
				 "jumps over the lazy dog");
		assert_int_equal(screen_feed(s, line, (size_t)n), 0);
	}
	assert_int_equal(screen_shrink(s), 0);
	print_message("screen 80x24: idle, full screen, empty scrollback %zu bytes\n",
		      screen_memory(s));
	assert_true(screen_memory(s) <= SCREEN_IDLE_BUDGET);
	assert_int_equal(screen_shrink(s), 0); /* twice is fine */
	for (int i = 0; i < 5000; i++)
		assert_int_equal(screen_feed(s, line, strlen(line)), 0);
	assert_int_equal(screen_shrink(s), 0);
	print_message("screen 80x24: idle, 32 KiB scrollback full %zu bytes\n", screen_memory(s));
	assert_true(screen_memory(s) <= SCREEN_IDLE_BUDGET + (32 << 10) + 1);
	screen_free(s);
}

/* A shrunk screen comes back as it was: text, colours, the cursor and the pen. */
static void test_shrink_restore(void **state)
{
	struct screen *s = new_screen(6, 20, 4096);
	feed(s, "\x1b[1;32mgreen\x1b[0m \xe4\xb8\xad\xe6\x96\x87 e\xcc\x81\nsecond\n\x1b[41m  "
		"\x1b[0m\n"
		"half\x1b[34m");
	char *before = capture(s, true, 0);
	assert_int_equal(screen_shrink(s), 0);
	assert_capture(s, true, 0, before);
	feed(s, "\x07");
	assert_capture(s, true, 0, before);
	feed(s, "blue\x1b[0m\n");
	char *got = capture(s, true, 0);
	assert_non_null(strstr(got, "half\x1b[0;34mblue\x1b[0m\n"));
	assert_memory_equal(got, before, strlen(before) - strlen("half\n"));
	free(got);
	free(before);
	screen_free(s);
}

static void test_render(void **state)
{
	size_t n = 0, cap = 1 << 20, len;
	char *in = malloc(cap), *out;

	for (int i = 0; i <= 5000; i++)
		n += (size_t)snprintf(in + n, cap - n, "\rstep %d/5000", i);
	n += (size_t)snprintf(in + n, cap - n, "\n");
	for (int i = 0; i < 300; i++) /* more lines than any screen */
		n += (size_t)snprintf(in + n, cap - n, "row %d\n", i);
	assert_int_equal(screen_render(in, n, 80, false, &out, &len), 0);
	check_safe(out, len, false);
	assert_memory_equal(out, "step 5000/5000\nrow 0\nrow 1\n", 27);
	assert_non_null(strstr(out, "\nrow 298\nrow 299\n"));
	assert_int_equal(strlen(out), len);
	free(out);

	assert_int_equal(screen_render("a\x1b[31mb", 7, 80, true, &out, &len), 0);
	assert_string_equal(out, "a\x1b[0;31mb\x1b[0m\n");
	free(out);
	assert_int_equal(screen_render("", 0, 80, false, &out, &len), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(screen_render(in, (size_t)SCREEN_RENDER_IN_MAX + 1, 80, false, &out, &len),
			 -E2BIG);
	assert_int_equal(screen_render(in, n, 0, false, &out, &len), -EINVAL);

	/* Past SCREEN_RENDER_OUT_MAX the oldest lines go, and a first line says so. */
	size_t big = 2 * SCREEN_RENDER_OUT_MAX;
	char *huge = malloc(big);
	memset(huge, 'x', big);
	for (size_t i = 79; i < big; i += 80)
		huge[i] = '\n';
	assert_int_equal(screen_render(huge, big, 80, false, &out, &len), 0);
	assert_true(len <= SCREEN_RENDER_OUT_MAX + 100 * 80);
	assert_memory_equal(out, "[ptybox: ", 9);
	free(out);
	free(huge);
	free(in);
}

/* (hostile-9) What rendering costs, counted before it is done: rows scrolled or moved. */
static void test_render_rows(void **state)
{
	char line[200];
	const char *scrolls = "\x1b[S\x1b[7T\x1b[999L\x1b[0M";
	const char *colours = "\x1b[31mred\x1b[0m\x1b[5A\x1b[?25l";
	assert_int_equal(screen_render_rows("", 0, 80, 10), 0);
	assert_int_equal(screen_render_rows("a\nb\n\n", 5, 80, 10), 3);
	assert_int_equal(screen_render_rows("a\rb\rc", 5, 80, 10), 0); /* (a bar in place) */
	memset(line, 'x', sizeof(line));
	assert_int_equal(screen_render_rows(line, 160, 80, 10), 2); /* (it wraps) */
	assert_int_equal(screen_render_rows("\x1b"
					    "D\x1b"
					    "E\x1bM",
					    6, 80, 10),
			 3);
	assert_int_equal(screen_render_rows(scrolls, strlen(scrolls), 80, 100), 1 + 7 + 50 + 1);
	/* colours, cursor moves, the cursor hidden: no row */
	assert_int_equal(screen_render_rows(colours, strlen(colours), 80, 10), 0);
	/* erasing: the display (and DECALN, the alternate screen) a screen, a line's part a row */
	assert_int_equal(screen_render_rows("\x1b[2J", 4, 80, 100), 50);
	assert_int_equal(screen_render_rows("\x1b[H\x1b[J", 6, 80, 100), 50);
	assert_int_equal(screen_render_rows("\x1b#8", 3, 80, 100), 50);
	assert_int_equal(screen_render_rows("\x1b[?1049h", 8, 80, 100), 50);
	assert_int_equal(screen_render_rows("\x1b[K\x1b[3@\x1b[P\x1b[X", 13, 80, 100), 4);
	/* (a wide character may take two columns: 40 of them fill a row) */
	char wide[3 * 41];
	for (int i = 0; i < 41; i++)
		memcpy(wide + 3 * i, "\xe4\xb8\x80", 3);
	assert_int_equal(screen_render_rows(wide, sizeof(wide), 80, 10), 1);
	/* counted up to past max only */
	assert_int_equal(screen_render_rows("\n\n\n\n\n", 5, 80, 2), 3);
	/* a sequence cut at the end, a NUL after ESC */
	assert_int_equal(screen_render_rows("\x1b[12", 4, 80, 10), 0);
	assert_int_equal(screen_render_rows("\x1b\0D", 3, 80, 10), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_bounds),     cmocka_unit_test(test_empty),
		cmocka_unit_test(test_progress_bar),   cmocka_unit_test(test_lf),
		cmocka_unit_test(test_prompt),	       cmocka_unit_test(test_scrollback),
		cmocka_unit_test(test_trim),	       cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_no_reply),       cmocka_unit_test(test_rep_hang),
		cmocka_unit_test(test_csi_args),       cmocka_unit_test(test_wide_and_combining),
		cmocka_unit_test(test_invalid_utf8),   cmocka_unit_test(test_utf8_cut),
		cmocka_unit_test(test_huge_input),     cmocka_unit_test(test_memory),
		cmocka_unit_test(test_shrink_restore), cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
