/* Unit tests for prompt_text.c: the prompt's fallbacks, prefixes, characters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prompt_text.h"

#define S(x) x, strlen(x)

static void test_continuation_keywords(void **state)
{
	assert_true(prompt_text_continues(S("else:")));
	assert_true(prompt_text_continues(S("elif x:")));
	assert_true(prompt_text_continues(S("except ValueError:")));
	assert_true(prompt_text_continues(S("finally:")));
	assert_false(prompt_text_continues(S("elsewhere = 1")));
	assert_false(prompt_text_continues(S("print(1)")));
	assert_false(prompt_text_continues(S("")));
}

static void test_blank_lines(void **state)
{
	assert_true(prompt_text_blank(S("")));
	assert_true(prompt_text_blank(S("   \t")));
	assert_true(prompt_text_blank(S("  # a comment")));
	assert_false(prompt_text_blank(S("x = 1  # set")));
}

static void test_guess(void **state)
{
	assert_true(prompt_text_guess_incomplete(S("def f():")));
	assert_true(prompt_text_guess_incomplete(S("x = (1,")));
	assert_true(prompt_text_guess_incomplete(S("x = 1 + \\")));
	assert_true(prompt_text_guess_incomplete(S("s = '''abc")));
	assert_true(prompt_text_guess_incomplete(S("if x:  # why")));
	assert_false(prompt_text_guess_incomplete(S("x = 1")));
	assert_false(prompt_text_guess_incomplete(S("x = '('")));
	assert_false(prompt_text_guess_incomplete(S("d = {'a': 1}")));
	assert_false(prompt_text_guess_incomplete(S("x = 1  # (")));
	assert_false(prompt_text_guess_incomplete(S("print(\"a:\")")));
}

static void test_characters_and_bytes(void **state)
{
	const char *s = "h\xc3\xa9llo"; /* héllo */
	assert_int_equal(prompt_text_chars(s, strlen(s)), 5);
	assert_int_equal(prompt_text_chars(s, 3), 2);
	assert_int_equal(prompt_text_bytes(s, strlen(s), 2), 3);
	assert_int_equal(prompt_text_bytes(s, strlen(s), 99), strlen(s));
	assert_int_equal(prompt_text_bytes(s, strlen(s), 0), 0);
}

static void test_common_prefix(void **state)
{
	const char *a[] = {"alpha_beta", "alpha_gamma", "alphabet"};
	assert_int_equal(prompt_text_common(a, 3), 5);
	const char *b[] = {"only"};
	assert_int_equal(prompt_text_common(b, 1), 4);
	const char *c[] = {"x\xc3\xa9", "x\xc3\xa8"}; /* xé, xè: one byte shared of é */
	assert_int_equal(prompt_text_common(c, 2), 1);
	assert_int_equal(prompt_text_common(NULL, 0), 0);
}

static void test_paste(void **state)
{
	(void)state;
	char s[] = "    z = 2\r    if z:\r\n\t\x1b[1mprint(z)\x7f\x00\r";
	size_t n = prompt_text_paste(s, sizeof(s) - 1);
	assert_int_equal(n, strlen("    z = 2\n    if z:\n\t[1mprint(z)\n"));
	assert_memory_equal(s, "    z = 2\n    if z:\n\t[1mprint(z)\n", n);
	assert_int_equal(prompt_text_utf8_len('a'), 1);
	assert_int_equal(prompt_text_utf8_len(0xc3), 2);
	assert_int_equal(prompt_text_utf8_len(0xe2), 3);
	assert_int_equal(prompt_text_utf8_len(0xf0), 4);
	assert_int_equal(prompt_text_utf8_len(0x80), 0);
	assert_int_equal(prompt_text_utf8_len(0xff), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_continuation_keywords),
		cmocka_unit_test(test_blank_lines),
		cmocka_unit_test(test_guess),
		cmocka_unit_test(test_characters_and_bytes),
		cmocka_unit_test(test_common_prefix),
		cmocka_unit_test(test_paste),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
