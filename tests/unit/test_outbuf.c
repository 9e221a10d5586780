/* Unit tests for outbuf.c: the bounded head+tail capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "outbuf.h"

static char *take(struct outbuf *ob, size_t *len, uint64_t *dropped)
{
	char *s = outbuf_take(ob, len, dropped);
	assert_non_null(s);
	assert_int_equal(strlen(s), *len);
	return s;
}

static void test_small_output_is_kept_whole(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, 64);
	outbuf_append(&ob, "hello ", 6);
	outbuf_append(&ob, "world\n", 6);
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_string_equal(s, "hello world\n");
	assert_int_equal(dropped, 0);
	free(s);
	/* take() resets: the next snippet starts empty */
	s = take(&ob, &len, &dropped);
	assert_string_equal(s, "");
	free(s);
	outbuf_free(&ob);
}

static void test_flood_keeps_head_and_tail(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, 20); /* 10 head, 10 tail */
	char line[8];
	for (int i = 0; i < 1000; i++) {
		snprintf(line, sizeof(line), "%03d\n", i % 1000);
		outbuf_append(&ob, line, 4);
	}
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_int_equal(dropped, 4000 - 20);
	assert_memory_equal(s, "000\n001\n00", 10);
	assert_non_null(strstr(s, "[ptybox: 3980 bytes of output dropped]"));
	assert_string_equal(s + len - 10, "7\n998\n999\n");
	free(s);
	outbuf_free(&ob);
}

static void test_memory_is_bounded_for_any_chunking(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, 1024);
	char *chunk = malloc(100000);
	memset(chunk, 'x', 100000);
	for (int i = 0; i < 100; i++)
		outbuf_append(&ob, chunk, (size_t)(i * 997) % 100000);
	assert_true(ob.head_len <= 512);
	assert_true(ob.ring_len <= 512);
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_true(len < 1024 + 64);
	free(s);
	free(chunk);
	outbuf_free(&ob);
}

static void test_upstream_drop_marker_between_head_and_tail(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, 100);
	outbuf_append(&ob, "HEAD", 4);
	outbuf_note_dropped(&ob, 12345);
	outbuf_append(&ob, "TAIL", 4);
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_int_equal(dropped, 12345);
	assert_string_equal(s, "HEAD\n[ptybox: 12345 bytes of output dropped]\nTAIL");
	free(s);
	outbuf_free(&ob);
}

static void test_cut_characters_are_not_split(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, 10); /* head 5 */
	/* "ab" + U+20AC (3 bytes) + "é" (2 bytes): the head cut lands inside é */
	const char *s1 = "ab\xe2\x82\xac\xc3\xa9";
	outbuf_append(&ob, s1, strlen(s1));
	for (int i = 0; i < 10; i++)
		outbuf_append(&ob, "\xe2\x82\xac", 3); /* the ring starts mid-character */
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_memory_equal(s, "ab\xe2\x82\xac\n[ptybox:", 14);
	/* the tail is whole euro signs only */
	const char *tail = strstr(s, "dropped]\n") + 9;
	assert_int_equal(strlen(tail) % 3, 0);
	for (const char *p = tail; *p; p += 3)
		assert_memory_equal(p, "\xe2\x82\xac", 3);
	free(s);
	outbuf_free(&ob);
}

static void test_a_head_cut_with_nothing_dropped_leaves_no_lone_byte(void **state)
{
	/* (hostile-10) The ring holds all the rest (nothing of it dropped), but the head's end
	 * cut a character: its continuation bytes begin the ring and must go with it. */
	struct outbuf ob;
	outbuf_init(&ob, 12);				 /* head 6 */
	const char *s1 = "abcd\xe4\xb8\x80\xe4\xb8\x80"; /* the head ends after "\xe4\xb8" */
	outbuf_append(&ob, s1, strlen(s1));
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_int_equal(dropped, 3);
	assert_string_equal(s, "abcd\n[ptybox: 3 bytes of output dropped]\n\xe4\xb8\x80");
	free(s);
	outbuf_free(&ob);
}

static void test_a_cap_beyond_memory_costs_only_what_is_printed(void **state)
{
	/* --max-output 64G: nothing may be allocated up front for it. */
	struct outbuf ob;
	outbuf_init(&ob, (size_t)64 << 30);
	assert_int_equal(outbuf_append(&ob, "hello\n", 6), 0);
	assert_true(ob.head_cap < 1 << 20);
	char *chunk = malloc(1 << 20);
	memset(chunk, 'y', 1 << 20);
	for (int i = 0; i < 3; i++) /* grows, keeping what it has */
		assert_int_equal(outbuf_append(&ob, chunk, 1 << 20), 0);
	assert_true(ob.head_cap >= ob.head_len && ob.head_cap < (size_t)16 << 20);
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_int_equal(dropped, 0);
	assert_int_equal(len, 6 + 3 * (1 << 20));
	assert_memory_equal(s, "hello\nyyy", 9);
	assert_int_equal(s[len - 1], 'y');
	free(s);
	/* The next snippet starts small again: the session does not hold the
	 * big one's buffers till it ends. */
	outbuf_reset(&ob);
	assert_int_equal(ob.head_cap, 0);
	assert_int_equal(outbuf_append(&ob, "again\n", 6), 0);
	assert_true(ob.head_cap < 1 << 20);
	s = take(&ob, &len, &dropped);
	assert_int_equal(len, 6);
	assert_memory_equal(s, "again\n", 6);
	free(s);
	free(chunk);
	outbuf_free(&ob);
}

static void test_the_ring_grows_before_it_wraps(void **state)
{
	struct outbuf ob;
	outbuf_init(&ob, (size_t)1 << 20); /* 512 KiB each half */
	char *chunk = malloc(1 << 19);
	memset(chunk, 'h', 1 << 19);
	outbuf_append(&ob, chunk, 1 << 19); /* the head is full */
	outbuf_append(&ob, "t1", 2);
	assert_true(ob.ring_cap < 1 << 19);
	memset(chunk, 'r', 1 << 19);
	for (int i = 0; i < 3; i++) /* and now it wraps */
		outbuf_append(&ob, chunk, 300000);
	outbuf_append(&ob, "END", 3);
	size_t len;
	uint64_t dropped;
	char *s = take(&ob, &len, &dropped);
	assert_int_equal(dropped, 2 + 3 * 300000 + 3 - (1 << 19));
	assert_string_equal(s + len - 4, "rEND");
	free(s);
	free(chunk);
	outbuf_free(&ob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_output_is_kept_whole),
		cmocka_unit_test(test_flood_keeps_head_and_tail),
		cmocka_unit_test(test_memory_is_bounded_for_any_chunking),
		cmocka_unit_test(test_upstream_drop_marker_between_head_and_tail),
		cmocka_unit_test(test_cut_characters_are_not_split),
		cmocka_unit_test(test_a_head_cut_with_nothing_dropped_leaves_no_lone_byte),
		cmocka_unit_test(test_a_cap_beyond_memory_costs_only_what_is_printed),
		cmocka_unit_test(test_the_ring_grows_before_it_wraps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
