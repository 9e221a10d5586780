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
	assert_int_equal(options_parse_seconds("31536000", &v), 0);
	assert_int_equal(options_parse_seconds("31536000.5", &v), -ERANGE);
}

/* A JSON request's number is checked and turned into a timer the same way:
 * nothing past a year, and no float-to-integer overflow whatever comes. */
static void test_seconds_as_milliseconds(void **state)
{
	assert_true(options_seconds_valid(0));
	assert_true(options_seconds_valid(OPTIONS_MAX_SECONDS));
	assert_false(options_seconds_valid(-0.5));
	assert_false(options_seconds_valid(1e300));
	assert_false(options_seconds_valid(0.0 / 0.0));
	assert_int_equal(options_seconds_ms(1.5), 1500);
	assert_int_equal(options_seconds_ms(0.0001), 1);
	assert_int_equal(options_seconds_ms(0), 0);
	assert_int_equal(options_seconds_ms(-3), 0);
	assert_int_equal(options_seconds_ms(0.0 / 0.0), 0);
	assert_int_equal(options_seconds_ms(1e300), 31536000000ULL);
	assert_int_equal(options_seconds_ms(1.0 / 0.0), 31536000000ULL);
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
		cmocka_unit_test(test_seconds_as_milliseconds),
		cmocka_unit_test(test_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
