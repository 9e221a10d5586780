/* Unit tests for options.c: option values as users type them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "options.h"

static void test_sizes(void **state)
{
	uint64_t v;
	assert_int_equal(options_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(options_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(options_parse_size("4k", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(options_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(options_parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2ULL << 20);
	assert_int_equal(options_parse_size("100b", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(options_parse_size("", &v), -EINVAL);
	assert_int_equal(options_parse_size("-1", &v), -EINVAL);
	assert_int_equal(options_parse_size("1X", &v), -EINVAL);
	assert_int_equal(options_parse_size("M", &v), -EINVAL);
	assert_int_equal(options_parse_size("1.5G", &v), -EINVAL);
	assert_int_equal(options_parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(options_parse_size("99999999999T", &v), -ERANGE);
}

static void test_seconds(void **state)
{
	double v;
	assert_int_equal(options_parse_seconds("1.5", &v), 0);
	assert_true(v == 1.5);
	assert_int_equal(options_parse_seconds("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(options_parse_seconds("30", &v), 0);
	assert_int_equal(options_parse_seconds("-1", &v), -EINVAL);
	assert_int_equal(options_parse_seconds("nan", &v), -EINVAL);
	assert_int_equal(options_parse_seconds("inf", &v), -EINVAL);
	assert_int_equal(options_parse_seconds("1s", &v), -EINVAL);
	assert_int_equal(options_parse_seconds("0x10", &v), -EINVAL);
	assert_int_equal(options_parse_seconds(" 1", &v), -EINVAL);
	assert_int_equal(options_parse_seconds("1e300", &v), -ERANGE);
}

static void test_counts(void **state)
{
	unsigned v;
	assert_int_equal(options_parse_uint("256", 0, 1000, &v), 0);
	assert_int_equal(v, 256);
	assert_int_equal(options_parse_uint("1001", 0, 1000, &v), -ERANGE);
	assert_int_equal(options_parse_uint("-3", 0, 1000, &v), -EINVAL);
	assert_int_equal(options_parse_uint("12a", 0, 1000, &v), -EINVAL);
	double c;
	assert_int_equal(options_parse_cpus("0.5", &c), 0);
	assert_true(c == 0.5);
	assert_int_equal(options_parse_cpus("-2", &c), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
