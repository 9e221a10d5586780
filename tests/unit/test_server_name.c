/* Unit tests for server_name.c: what may name a session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server.h"

static const char *why(const char *name)
{
	return server_name_invalid(name, strlen(name));
}

static void test_ordinary_names_are_taken(void **state)
{
	const char *ok[] = {"a", "work", "my session", "déjà-vu", "日本", "a.b", "x_1", "...x"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_null(why(ok[i]));
	char max[65];
	memset(max, 'n', 64);
	max[64] = '\0';
	assert_null(why(max));
}

static void test_what_could_harm_is_refused(void **state)
{
	const char *bad[] = {
		"",
		"a/b",
		"/",
		"..",
		".",
		"-x",
		"a\x01"
		"b",
		"a\x7f",
		"a\tb",
		"a\nb",
		"\xc2\x85", /* NEL, C1 */
		"a\xe2\x80\xae"
		"b", /* RLO */
		"a\xe2\x81\xa6"
		"b", /* LRI */
		"\xff",
		"\xc3",
		"\xed\xa0\x80", /* not UTF-8, a cut one, a surrogate */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_non_null(why(bad[i]));
	char long_name[66];
	memset(long_name, 'n', 65);
	long_name[65] = '\0';
	assert_string_equal(why(long_name), "longer than 64 bytes");
	assert_string_equal(why("a/b"), "it holds a '/'");
	/* a NUL inside is refused, whatever follows it */
	assert_non_null(server_name_invalid("a\0b", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordinary_names_are_taken),
		cmocka_unit_test(test_what_could_harm_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
