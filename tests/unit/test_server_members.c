/* Unit tests for server_members.c: the members each request takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server.h"

static const char *unknown(const char *json, const char **takes)
{
	static char name[64];
	cJSON *req = cJSON_Parse(json);
	assert_non_null(req);
	const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "op"));
	const char *m = server_request_unknown_member(req, op ? op : "", takes);
	if (m)
		snprintf(name, sizeof(name), "%s", m);
	cJSON_Delete(req);
	return m ? name : NULL;
}

static void test_what_each_op_takes_passes(void **state)
{
	const char *ok[] = {
		"{\"id\":1,\"op\":\"hello\",\"protocol\":1,\"via\":\"dial-stdio\"}",
		"{\"id\":1,\"op\":\"ping\"}",
		"{\"op\":\"ls\"}",
		"{\"op\":\"kill-server\"}",
		"{\"op\":\"new\",\"session\":\"s\",\"options\":{\"via\":\"none\"},\"record\":\"/"
		"r\","
		"\"record_max\":\"64M\"}",
		"{\"id\":1,\"op\":\"exec\",\"session\":\"s\",\"code\":\"1\",\"timeout\":0.5,"
		"\"stream\":true,\"wait\":true,\"stop_on_error\":true,\"render\":true,\"ack\":"
		"true}",
		"{\"op\":\"result\",\"session\":\"s\",\"exec\":1,\"wait\":false,\"stream\":true}",
		"{\"op\":\"interrupt\",\"session\":\"s\",\"exec\":1}",
		"{\"op\":\"cancel\",\"session\":\"s\",\"exec\":1}",
		"{\"op\":\"restart\",\"session\":\"s\"}",
		"{\"op\":\"kill\",\"session\":\"s\"}",
		"{\"op\":\"watch\",\"session\":\"s\"}",
		"{\"op\":\"capture\",\"session\":\"s\",\"escapes\":true,\"start\":-10}",
		"{\"op\":\"complete\",\"session\":\"s\",\"code\":\"pri\",\"cursor\":3}",
		"{\"op\":\"is_complete\",\"session\":\"s\",\"code\":\"def f():\"}",
		"{\"op\":\"resize\",\"session\":\"s\",\"cols\":80,\"rows\":24}",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_null(unknown(ok[i], NULL));
}

static void test_a_member_the_op_does_not_take_is_named(void **state)
{
	assert_string_equal(unknown("{\"op\":\"exec\",\"code\":\"1\",\"timout\":0.5}", NULL),
			    "timout");
	assert_string_equal(unknown("{\"op\":\"exec\",\"code\":\"1\",\"streem\":true}", NULL),
			    "streem");
	assert_string_equal(unknown("{\"op\":\"new\",\"session\":\"s\",\"via\":\"none\"}", NULL),
			    "via");
	assert_string_equal(unknown("{\"op\":\"is_complete\",\"code\":\"x\",\"cursor\":1}", NULL),
			    "cursor");
	assert_string_equal(unknown("{\"op\":\"ls\",\"session\":\"s\"}", NULL), "session");
	assert_string_equal(unknown("{\"op\":\"ping\",\"Id\":1}", NULL), "Id"); /* (case counts) */
	/* a prefix or an extension of a member is not it */
	assert_string_equal(unknown("{\"op\":\"exec\",\"cod\":\"1\"}", NULL), "cod");
	assert_string_equal(unknown("{\"op\":\"exec\",\"codes\":\"1\"}", NULL), "codes");
	assert_string_equal(unknown("{\"op\":\"resize\",\"cols\":1,\"rows\":1,\"\":1}", NULL), "");
}

static void test_takes_says_what_the_op_takes_and_an_unknown_op_is_not_judged(void **state)
{
	const char *takes = NULL;
	assert_non_null(unknown("{\"op\":\"capture\",\"x\":1}", &takes));
	assert_string_equal(takes, "session, escapes, start, ");
	assert_non_null(unknown("{\"op\":\"ping\",\"x\":1}", &takes));
	assert_string_equal(takes, "");
	assert_null(unknown("{\"op\":\"fly\",\"x\":1}", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_what_each_op_takes_passes),
		cmocka_unit_test(test_a_member_the_op_does_not_take_is_named),
		cmocka_unit_test(test_takes_says_what_the_op_takes_and_an_unknown_op_is_not_judged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
