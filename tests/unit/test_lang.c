/* lang.c: the languages --lang takes, and the boot's form line for each. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lang.h"

static void test_find_gives_the_table_entry(void **state)
{
	(void)state;
	assert_string_equal(lang_find(NULL), "python");
	assert_string_equal(lang_find(""), "python");
	assert_ptr_equal(lang_find("bash"), lang_find("bash"));
	assert_string_equal(lang_find("bash"), "bash");
	assert_null(lang_find("Bash"));
	assert_null(lang_find("node js"));
	assert_null(lang_find("cobol"));
}

static void test_list_names_each(void **state)
{
	(void)state;
	char list[128];
	lang_list(list, sizeof(list));
	assert_non_null(strstr(list, "python"));
	assert_non_null(strstr(list, "bash"));
	char tiny[4];
	lang_list(tiny, sizeof(tiny)); /* (cut, not overrun) */
	assert_int_equal(strlen(tiny), 3);
}

static void test_boot_form_is_python_s_as_it_was(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(lang_boot_form(lang_find("python"), "a70d0d0a", out, sizeof(out)), 0);
	assert_string_equal(out, "a70d0d0a");
	assert_int_equal(lang_boot_form(NULL, "source", out, sizeof(out)), 0);
	assert_string_equal(out, "source");
	assert_int_equal(lang_boot_form(lang_find("bash"), "a70d0d0a", out, sizeof(out)), 0);
	assert_string_equal(out, "a70d0d0a bash");
	assert_int_equal(lang_boot_form(lang_find("bash"), "a70d0d0a", out, 10), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_gives_the_table_entry),
		cmocka_unit_test(test_list_names_each),
		cmocka_unit_test(test_boot_form_is_python_s_as_it_was),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
