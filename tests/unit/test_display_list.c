/* Unit tests for display_list.c: updates replace in place, caps bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "display_list.h"
#include "protocol.h"

static cJSON *bundle(const char *text)
{
	cJSON *b = cJSON_CreateObject();
	assert_non_null(cJSON_AddStringToObject(b, "text/plain", text));
	return b;
}

static const char *text_at(const struct display_list *l, int i)
{
	return protocol_str(cJSON_GetArrayItem(l->list, i), "text/plain");
}

static void test_updates_replace_their_display_where_it_was(void **state)
{
	(void)state;
	struct display_list l;
	display_list_init(&l, 1 << 20, 10);
	assert_int_equal(display_list_add(&l, bundle("start"), "k", false), 0);
	assert_int_equal(display_list_add(&l, bundle("other"), NULL, false), 0);
	for (int i = 0; i < 100000; i++) {
		char t[16];
		snprintf(t, sizeof(t), "v%d", i);
		assert_int_equal(display_list_add(&l, bundle(t), "k", true), 0);
	}
	assert_int_equal(cJSON_GetArraySize(l.list), 2);
	assert_string_equal(text_at(&l, 0), "v99999");
	assert_string_equal(protocol_str(cJSON_GetArrayItem(l.list, 0), "display_id"), "k");
	/* In the list's own display's place, it is no longer an update. */
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(l.list, 0), "update"));
	assert_string_equal(text_at(&l, 1), "other");
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(l.list, 1), "display_id"));
	assert_false(l.dropped);
	display_list_free(&l);
}

static void test_an_update_of_an_earlier_display_is_added_once_and_says_so(void **state)
{
	(void)state;
	struct display_list l;
	display_list_init(&l, 1 << 20, 10);
	assert_int_equal(display_list_add(&l, bundle("a2"), "a", true), 0);
	assert_int_equal(display_list_add(&l, bundle("a3"), "a", true), 0);
	assert_int_equal(cJSON_GetArraySize(l.list), 1);
	assert_string_equal(text_at(&l, 0), "a3");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(l.list, 0), "update")));
	display_list_free(&l);
}

static void test_the_caps_drop_new_displays_not_updates(void **state)
{
	(void)state;
	struct display_list l;
	display_list_init(&l, 1 << 20, 3);
	for (int i = 0; i < 5; i++)
		assert_int_equal(display_list_add(&l, bundle("x"), NULL, false), 0);
	assert_int_equal(cJSON_GetArraySize(l.list), 3);
	assert_true(l.dropped);
	display_list_free(&l);

	display_list_init(&l, 1 << 20, 1);
	assert_int_equal(display_list_add(&l, bundle("p0"), "p", false), 0);
	assert_int_equal(display_list_add(&l, bundle("p1"), "p", true), 0);
	assert_false(l.dropped);
	assert_string_equal(text_at(&l, 0), "p1");
	display_list_free(&l);

	/* Bytes: a replaced rendering gives its bytes back. */
	display_list_init(&l, 1000, 10);
	char big[401];
	memset(big, 'b', 400);
	big[400] = '\0';
	for (int i = 0; i < 50; i++)
		assert_int_equal(display_list_add(&l, bundle(big), "q", i > 0), 0);
	assert_false(l.dropped);
	assert_int_equal(display_list_add(&l, bundle(big), NULL, false), 0);
	assert_true(l.dropped);
	assert_int_equal(cJSON_GetArraySize(l.list), 1);
	display_list_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_updates_replace_their_display_where_it_was),
		cmocka_unit_test(test_an_update_of_an_earlier_display_is_added_once_and_says_so),
		cmocka_unit_test(test_the_caps_drop_new_displays_not_updates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
