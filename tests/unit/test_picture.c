/* Unit tests for picture.c: choosing, decoding and naming pictures, the
 * inline escape sequences, and reading the terminal's answer to the probe. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "picture.h"

static const unsigned char png_head[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

static void test_a_bundle_gives_png_then_jpeg_then_svg_never_html(void **state)
{
	const char *data = NULL;
	cJSON *b = cJSON_Parse("{\"text/plain\":\"x\",\"text/html\":\"<b>\"}");
	assert_int_equal(picture_of_bundle(b, &data), PICTURE_NONE);
	cJSON_AddStringToObject(b, "image/svg+xml", "<svg/>");
	assert_int_equal(picture_of_bundle(b, &data), PICTURE_SVG);
	assert_string_equal(data, "<svg/>");
	cJSON_AddStringToObject(b, "image/jpeg", "/9j/");
	assert_int_equal(picture_of_bundle(b, &data), PICTURE_JPEG);
	cJSON_AddNumberToObject(b, "image/png", 5); /* not a string: not a picture */
	assert_int_equal(picture_of_bundle(b, &data), PICTURE_JPEG);
	cJSON_Delete(b);
	assert_int_equal(picture_of_bundle(NULL, &data), PICTURE_NONE);
	assert_string_equal(picture_ext(PICTURE_JPEG), "jpg");
	assert_string_equal(picture_mime(PICTURE_SVG), "image/svg+xml");
	assert_null(picture_ext(PICTURE_NONE));
}

static void test_decode_takes_base64_and_refuses_what_is_not(void **state)
{
	unsigned char *out;
	size_t n;
	assert_int_equal(picture_decode(PICTURE_PNG, "iVBORw0KGgo=", 12, &out, &n), 0);
	assert_int_equal(n, 8);
	assert_true(picture_looks_like(PICTURE_PNG, out, n));
	assert_false(picture_looks_like(PICTURE_JPEG, out, n));
	free(out);
	/* newlines (as base64 tools write it) are skipped */
	assert_int_equal(picture_decode(PICTURE_PNG, "iVBO\nRw0K\r\nGgo=", 15, &out, &n), 0);
	assert_int_equal(n, 8);
	free(out);
	/* cut on the way: the relay's note appended, or a missing tail */
	static const char cut[] = "iVBORw0K...[100 bytes truncated]";
	assert_int_equal(picture_decode(PICTURE_PNG, cut, strlen(cut), &out, &n), -EINVAL);
	assert_null(out);
	assert_int_equal(picture_decode(PICTURE_JPEG, "iVBORw0KGg", 10, &out, &n), -EINVAL);
	assert_int_equal(picture_decode(PICTURE_PNG, "", 0, &out, &n), -EINVAL);
	/* SVG is text: as it is */
	assert_int_equal(picture_decode(PICTURE_SVG, "<svg/>", 6, &out, &n), 0);
	assert_int_equal(n, 6);
	assert_memory_equal(out, "<svg/>", 6);
	free(out);
	assert_int_equal(picture_decode(PICTURE_NONE, "x", 1, &out, &n), -EINVAL);
}

static void test_decode_is_bounded(void **state)
{
	size_t len = PICTURE_MAX_BYTES / 3 * 4 + 8; /* (only its length is looked at) */
	char *big = malloc(len + 1);
	assert_non_null(big);
	memset(big, 'A', len);
	unsigned char *out;
	size_t n;
	assert_int_equal(picture_decode(PICTURE_PNG, big, len, &out, &n), -EFBIG);
	assert_int_equal(picture_decode(PICTURE_SVG, big, PICTURE_MAX_BYTES + 1, &out, &n), -EFBIG);
	free(big);
}

static void test_paths(void **state)
{
	char buf[64];
	assert_int_equal(picture_path(buf, sizeof(buf), NULL, 1, PICTURE_PNG), 0);
	assert_string_equal(buf, "ptybox-1.png");
	assert_int_equal(picture_path(buf, sizeof(buf), ".", 2, PICTURE_SVG), 0);
	assert_string_equal(buf, "ptybox-2.svg");
	assert_int_equal(picture_path(buf, sizeof(buf), "out", 10, PICTURE_JPEG), 0);
	assert_string_equal(buf, "out/ptybox-10.jpg");
	assert_int_equal(picture_path(buf, sizeof(buf), "/tmp/x/", 3, PICTURE_PNG), 0);
	assert_string_equal(buf, "/tmp/x/ptybox-3.png");
	assert_int_equal(picture_path(buf, 12, NULL, 1, PICTURE_PNG), -ENAMETOOLONG);
	assert_int_equal(picture_path(buf, sizeof(buf), NULL, 1, PICTURE_NONE), -EINVAL);
}

/* Takes the kitty commands apart: each ESC _ G keys ; data ESC \, the data
 * at most 4096 bytes, the first saying a=T,f=100, m=1 on all but the last. */
static void check_kitty(size_t len)
{
	unsigned char *png = malloc(len);
	assert_non_null(png);
	for (size_t i = 0; i < len; i++)
		png[i] = (unsigned char)(i * 7 + 3);
	memcpy(png, png_head, len < 16 ? len : 16);
	size_t n;
	char *seq = picture_kitty(png, len, &n);
	assert_non_null(seq);
	assert_int_equal(strlen(seq), n);
	char *b64 = malloc(n + 1);
	size_t blen = 0, cmds = 0;
	const char *p = seq, *end = seq + n;
	bool last = false;
	while (p < end) {
		assert_false(last);
		assert_memory_equal(p, "\033_G", 3);
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *st = strstr(p, "\033\\");
		assert_non_null(semi);
		assert_non_null(st);
		char keys[64];
		snprintf(keys, sizeof(keys), "%.*s", (int)(semi - p - 3), p + 3);
		if (cmds == 0)
			assert_non_null(strstr(keys, "a=T,f=100,q=2"));
		else
			assert_null(strstr(keys, "a=T"));
		last = strstr(keys, "m=0") != NULL;
		assert_true(last || strstr(keys, "m=1"));
		size_t dl = (size_t)(st - semi - 1);
		assert_true(dl <= PICTURE_KITTY_CHUNK);
		assert_int_equal(dl % 4, 0);
		memcpy(b64 + blen, semi + 1, dl);
		blen += dl;
		cmds++;
		p = st + 2;
	}
	assert_true(last);
	assert_int_equal(cmds, (blen + PICTURE_KITTY_CHUNK - 1) / PICTURE_KITTY_CHUNK);
	unsigned char *back = malloc(len + 3);
	size_t bn = 0;
	assert_int_equal(sodium_base642bin(back, len + 3, b64, blen, NULL, &bn, NULL,
					   sodium_base64_VARIANT_ORIGINAL),
			 0);
	assert_int_equal(bn, len);
	assert_memory_equal(back, png, len);
	free(back);
	free(b64);
	free(seq);
	free(png);
}

static void test_kitty_sends_png_in_chunks_of_4096(void **state)
{
	check_kitty(16);   /* one command */
	check_kitty(3072); /* exactly 4096 base64 bytes: still one */
	check_kitty(3073);
	check_kitty(100000);
}

static void test_iterm_inline_file(void **state)
{
	size_t n;
	char *seq = picture_iterm(png_head, 16, &n);
	assert_non_null(seq);
	char want[128];
	snprintf(want, sizeof(want), "\033]1337;File=inline=1;size=16;preserveAspectRatio=1:");
	assert_memory_equal(seq, want, strlen(want));
	assert_int_equal(seq[n - 1], '\a');
	size_t bn;
	unsigned char back[16];
	assert_int_equal(sodium_base642bin(back, sizeof(back), seq + strlen(want),
					   n - 1 - strlen(want), NULL, &bn, NULL,
					   sodium_base64_VARIANT_ORIGINAL),
			 0);
	assert_int_equal(bn, 16);
	assert_memory_equal(back, png_head, 16);
	free(seq);
}

static void test_sixel_output_is_checked_before_it_goes_out(void **state)
{
	static const char *const good[] = {"\033Pq#0;2;0;0;0~-\033\\",
					   "\033P0;1;0q\"1;1;5;4#0!5~\n\033\\"};
	static const char *const bad[] = {
		"",
		"\033Pq",
		"q~\033\\",
		"\033P\033\\",
		"\033P1;2x~\033\\",
		"\033Pq~\033]52;c;aGk=\a\033\\", /* another sequence inside */
		"\033Pq~\033\\\033[2J\033Pq\033\\",
		"\033Pq\x9b"
		"2J\033\\"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(picture_sixel_valid(good[i], strlen(good[i])));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(picture_sixel_valid(bad[i], strlen(bad[i])));
}

/* The answer fed whole and byte by byte gives the same. */
static void test_sizes_are_read_and_bombs_are_not_decoded(void **state)
{
	(void)state;
	unsigned w = 0, h = 0;
	unsigned char png[33] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01\x02\0\0\0\x03";
	assert_int_equal(picture_size(PICTURE_PNG, png, sizeof(png), &w, &h), 0);
	assert_int_equal(w, 258);
	assert_int_equal(h, 3);
	assert_true(picture_sixel_fits(PICTURE_PNG, png, sizeof(png)));
	assert_int_equal(picture_size(PICTURE_PNG, png, 20, &w, &h), -EINVAL);
	/* a few hundred KiB that say 30000 x 30000 */
	memcpy(png + 16, "\0\0\x75\x30\0\0\x75\x30", 8);
	assert_false(picture_sixel_fits(PICTURE_PNG, png, sizeof(png)));
	memcpy(png + 16, "\0\0\x10\0\0\0\x10\x01", 8); /* 4096 x 4097 */
	assert_false(picture_sixel_fits(PICTURE_PNG, png, sizeof(png)));
	memcpy(png + 16, "\0\0\0\0\0\0\0\x01", 8); /* no width */
	assert_false(picture_sixel_fits(PICTURE_PNG, png, sizeof(png)));
	/* JPEG: SOI, APP0 (skipped), fill, SOF2 with height 480 and width 640 */
	static const unsigned char jpg[] = "\xff\xd8\xff\xe0\0\x04"
					   "ab\xff\xff\xc2\0\x11\x08"
					   "\x01\xe0\x02\x80\x03";
	assert_int_equal(picture_size(PICTURE_JPEG, jpg, sizeof(jpg) - 1, &w, &h), 0);
	assert_int_equal(w, 640);
	assert_int_equal(h, 480);
	assert_true(picture_sixel_fits(PICTURE_JPEG, jpg, sizeof(jpg) - 1));
	/* DHT is no frame; the scan before any frame, or the data's end: no size */
	static const unsigned char nosize[] = "\xff\xd8\xff\xc4\0\x02\xff\xda\0\x02";
	assert_int_equal(picture_size(PICTURE_JPEG, nosize, sizeof(nosize) - 1, &w, &h), -EINVAL);
	assert_int_equal(picture_size(PICTURE_JPEG, jpg, 12, &w, &h), -EINVAL);
	assert_int_equal(picture_size(PICTURE_JPEG, jpg, 16, &w, &h), -EINVAL);
	assert_false(picture_sixel_fits(PICTURE_SVG, jpg, sizeof(jpg) - 1));
}

static enum picture_inline probe(const char *answer, bool sixel_ok, bool *done)
{
	struct picture_probe whole, bytes;
	picture_probe_init(&whole);
	picture_probe_init(&bytes);
	bool d1 = picture_probe_feed(&whole, answer, strlen(answer)), d2 = false;
	for (size_t i = 0; answer[i]; i++)
		d2 = picture_probe_feed(&bytes, answer + i, 1) || d2;
	assert_int_equal(d1, d2);
	assert_int_equal(picture_probe_result(&whole, sixel_ok),
			 picture_probe_result(&bytes, sixel_ok));
	*done = d1;
	return picture_probe_result(&whole, sixel_ok);
}

static void test_probe_reads_kitty_then_da1(void **state)
{
	bool done;
	assert_non_null(strstr(picture_probe_query, "\033_Gi=31,"));
	assert_non_null(strstr(picture_probe_query, "a=q"));
	assert_string_equal(picture_probe_query + strlen(picture_probe_query) - 3, "\033[c");
	assert_int_equal(probe("\033_Gi=31;OK\033\\\033[?62;22c", false, &done),
			 PICTURE_INLINE_KITTY);
	assert_true(done);
	/* DA1 only: no inline images */
	assert_int_equal(probe("\033[?62;22c", true, &done), PICTURE_INLINE_NONE);
	assert_true(done);
	/* an error answer, or one for another id, is no kitty */
	assert_int_equal(probe("\033_Gi=31;EINVAL:bad\033\\\033[?62c", false, &done),
			 PICTURE_INLINE_NONE);
	assert_int_equal(probe("\033_Gi=3;OK\033\\\033[?62c", false, &done), PICTURE_INLINE_NONE);
	assert_int_equal(probe("\033_Gi=310;OK\033\\\033[?62c", false, &done), PICTURE_INLINE_NONE);
	/* no DA1 yet: not done (the caller's deadline ends it) */
	assert_int_equal(probe("\033_Gi=31;OK\033\\", false, &done), PICTURE_INLINE_KITTY);
	assert_false(done);
}

static void test_probe_reads_sixel_from_da1(void **state)
{
	bool done;
	assert_int_equal(probe("\033[?62;4;22c", true, &done), PICTURE_INLINE_SIXEL);
	assert_true(done);
	assert_int_equal(probe("\033[?62;4;22c", false, &done), PICTURE_INLINE_NONE);
	/* 4 as the level (first) or inside a number is no sixel */
	assert_int_equal(probe("\033[?4;6c", true, &done), PICTURE_INLINE_NONE);
	assert_int_equal(probe("\033[?64;14;42c", true, &done), PICTURE_INLINE_NONE);
	assert_int_equal(probe("\033[?64;1;2;4c", true, &done), PICTURE_INLINE_SIXEL);
	/* kitty wins over sixel */
	assert_int_equal(probe("\033_Gi=31;OK\033\\\033[?62;4c", true, &done),
			 PICTURE_INLINE_KITTY);
}

static void test_probe_skips_noise(void **state)
{
	bool done;
	/* keys typed, another CSI (a cursor report), an ESC that starts nothing */
	assert_int_equal(probe("ab\033[12;3R\033x\033\033_Gi=31;OK\033\\q\033[?62;4c", true, &done),
			 PICTURE_INLINE_KITTY);
	assert_true(done);
	/* a CSI with ? that is not DA1 (DECRPM) does not end it */
	assert_int_equal(probe("\033[?1;2$y", true, &done), PICTURE_INLINE_NONE);
	assert_false(done);
	/* an APC longer than kept, and huge numbers, are harmless */
	char big[512] = "\033_G";
	memset(big + 3, 'x', 400);
	strcpy(big + 403, "\033\\\033[?99999999999;4c");
	assert_int_equal(probe(big, true, &done), PICTURE_INLINE_SIXEL);
	assert_true(done);
	/* bytes after the reply are left alone */
	struct picture_probe p;
	picture_probe_init(&p);
	static const char after[] = "\033[?62c\033_Gi=31;OK\033\\";
	assert_true(picture_probe_feed(&p, after, strlen(after)));
	assert_false(p.kitty);
}

static void test_iterm_is_known_by_its_environment(void **state)
{
	assert_true(picture_env_iterm("iTerm.app", NULL));
	assert_true(picture_env_iterm("WezTerm", NULL));
	assert_true(picture_env_iterm(NULL, "iTerm2"));
	assert_false(picture_env_iterm("Apple_Terminal", NULL));
	assert_false(picture_env_iterm(NULL, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_bundle_gives_png_then_jpeg_then_svg_never_html),
		cmocka_unit_test(test_decode_takes_base64_and_refuses_what_is_not),
		cmocka_unit_test(test_decode_is_bounded),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_kitty_sends_png_in_chunks_of_4096),
		cmocka_unit_test(test_iterm_inline_file),
		cmocka_unit_test(test_sixel_output_is_checked_before_it_goes_out),
		cmocka_unit_test(test_sizes_are_read_and_bombs_are_not_decoded),
		cmocka_unit_test(test_probe_reads_kitty_then_da1),
		cmocka_unit_test(test_probe_reads_sixel_from_da1),
		cmocka_unit_test(test_probe_skips_noise),
		cmocka_unit_test(test_iterm_is_known_by_its_environment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
