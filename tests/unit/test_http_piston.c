/* Unit tests for http_piston.c: Piston's execute in, the protocol's requests
 * and Piston's reply out. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_piston.h"

static int parse(const char *body, struct http_piston_plan *p, char *err)
{
	return http_piston_plan_parse(body, strlen(body), "3.11.2", p, err, 256);
}

static void test_version_selectors(void **state)
{
	const char *yes[] = {"*", "x", "3", "3.x", "3.11", "3.11.x", "3.11.2", "3.*"};
	const char *no[] = {"2", "3.1", "3.11.3", "3.11.2.1", "", "4.x", "3.", "311"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		assert_true(http_piston_version_matches(yes[i], "3.11.2"));
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		assert_false(http_piston_version_matches(no[i], "3.11.2"));
}

static void test_a_full_request_becomes_a_plan(void **state)
{
	struct http_piston_plan p;
	char err[256];
	assert_int_equal(
		parse("{\"language\":\"py\",\"version\":\"3\",\"files\":[{\"name\":\"m.py\","
		      "\"content\":\"print(1)\"},{\"name\":\"d\",\"content\":\"AAE=\","
		      "\"encoding\":\"base64\"},{\"content\":\"6869\",\"encoding\":\"hex\"}],"
		      "\"stdin\":\"in\",\"args\":[\"a\",2],\"run_timeout\":1500,"
		      "\"run_memory_limit\":67108864,\"compile_timeout\":10000}",
		      &p, err),
		0);
	assert_string_equal(p.code, "print(1)");
	assert_string_equal(p.filename, "m.py");
	assert_int_equal(p.nfiles, 3);
	assert_string_equal(p.files[1].b64, "AAE=");
	assert_string_equal(p.files[2].name, "file2.code");
	assert_string_equal(p.files[2].b64, "aGk="); /* "hi" */
	assert_string_equal(p.stdin_text, "in");
	assert_true(p.timeout_s > 1.49 && p.timeout_s < 1.51);
	assert_int_equal(p.memory, 64 << 20);
	int exec_id = 0;
	cJSON *reqs = http_piston_requests(&p, "http-1", 4, 1, &exec_id);
	assert_non_null(reqs);
	assert_int_equal(cJSON_GetArraySize(reqs), 5); /* new, 3 puts, exec */
	assert_int_equal(exec_id, 5);
	cJSON *nw = cJSON_GetArrayItem(reqs, 0);
	cJSON *opts = cJSON_GetObjectItem(nw, "options");
	/* A memory limit starts cold: no pool of its own per limit. */
	assert_null(cJSON_GetObjectItem(opts, "pool"));
	assert_int_equal(cJSON_GetObjectItem(opts, "memory")->valuedouble, 64 << 20);
	cJSON *ex = cJSON_GetArrayItem(reqs, 4);
	assert_string_equal(cJSON_GetObjectItem(ex, "op")->valuestring, "exec");
	char *argv = cJSON_PrintUnformatted(cJSON_GetObjectItem(ex, "argv"));
	assert_string_equal(argv, "[\"m.py\",\"a\",\"2\"]");
	free(argv);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ex, "stream")));
	assert_string_equal(cJSON_GetObjectItem(ex, "stdin")->valuestring, "in");
	cJSON_Delete(reqs);
	http_piston_plan_free(&p);
}

static void test_default_plan_asks_the_pool(void **state)
{
	struct http_piston_plan p;
	char err[256];
	assert_int_equal(parse("{\"language\":\"python\",\"version\":\"*\",\"files\":[{"
			       "\"content\":\"x\"}],\"run_memory_limit\":-1}",
			       &p, err),
			 0);
	assert_int_equal(p.memory, -1);
	assert_true(p.timeout_s > 2.99 && p.timeout_s < 3.01);
	int exec_id;
	cJSON *reqs = http_piston_requests(&p, "s", 4, 1, &exec_id);
	cJSON *opts = cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "options");
	assert_int_equal(cJSON_GetObjectItem(opts, "pool")->valueint, 4);
	cJSON_Delete(reqs);
	http_piston_plan_free(&p);
}

static void test_bad_requests_say_why(void **state)
{
	struct {
		const char *body, *why;
	} bad[] = {
		{"[1]", "the body is not a JSON object"},
		{"{", "the body is not a JSON object"},
		{"{\"version\":\"*\",\"files\":[]}", "language is required as a string"},
		{"{\"language\":\"python\",\"files\":[]}", "version is required as a string"},
		{"{\"language\":\"html\",\"version\":\"5.0.0\"}", "html-5.0.0 runtime is unknown"},
		{"{\"language\":\"python\",\"version\":\"2\"}", "python-2 runtime is unknown"},
		{"{\"language\":\"python\",\"version\":\"*\"}", "files is required as an array"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[]}",
		 "files must include at least one utf8 encoded file"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{}]}",
		 "files[0].content is required as a string"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\","
		 "\"encoding\":\"rot13\"}]}",
		 "files[0].encoding must be one of utf8, base64, hex"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"zz\","
		 "\"encoding\":\"hex\"}]}",
		 "files[0].content is not valid hex"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\"},{"
		 "\"name\":\"a/b\",\"content\":\"\"}]}",
		 "files[1].name must contain no path"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"AA==\","
		 "\"encoding\":\"base64\"}]}",
		 "files[0] (the one run) holds a NUL"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\"}],"
		 "\"run_timeout\":600000}",
		 "run_timeout cannot exceed the configured limit of 60000"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\"}],"
		 "\"args\":[{}]}",
		 "args must be an array of strings"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\"}],"
		 "\"stdin\":5}",
		 "stdin must be a string"},
		{"{\"language\":\"python\",\"version\":\"*\",\"files\":[{\"content\":\"\"}],"
		 "\"run_memory_limit\":1000}",
		 "run_memory_limit must be at least 33554432 bytes (or -1)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct http_piston_plan p;
		char err[256] = "";
		assert_int_equal(parse(bad[i].body, &p, err), -EINVAL);
		assert_string_equal(err, bad[i].why);
		http_piston_plan_free(&p);
	}
}

static char *reply(const char *result, const char *output)
{
	struct http_piston_plan p = {.version = "3.11.2"};
	cJSON *r = cJSON_Parse(result);
	char *s = http_piston_reply(&p, r, output, strlen(output));
	cJSON_Delete(r);
	return s;
}

static void test_results_become_pistons_run(void **state)
{
	char *s = reply("{\"status\":\"ok\",\"stdout\":\"a\\n\",\"stderr\":\"b\\n\","
			"\"duration_ms\":12.7,\"truncated\":false}",
			"b\na\n");
	assert_string_equal(s, "{\"language\":\"python\",\"version\":\"3.11.2\",\"run\":{"
			       "\"stdout\":\"a\\n\",\"stderr\":\"b\\n\",\"output\":\"b\\na\\n\","
			       "\"code\":0,\"signal\":null,\"message\":null,\"status\":null,"
			       "\"wall_time\":12,\"cpu_time\":null,\"memory\":null}}");
	free(s);
	/* An exception: code 1, its traceback on stderr and last in output. */
	s = reply("{\"status\":\"error\",\"stdout\":\"\",\"stderr\":\"\",\"error\":{\"name\":"
		  "\"ValueError\",\"value\":\"v\",\"traceback\":[\"Traceback\\n\",\"ValueError: "
		  "v\\n\"]}}",
		  "");
	assert_non_null(strstr(s, "\"stderr\":\"Traceback\\nValueError: v\\n\""));
	assert_non_null(strstr(s, "\"output\":\"Traceback\\nValueError: v\\n\""));
	assert_non_null(strstr(s, "\"code\":1,\"signal\":null,\"message\":null,\"status\":\"RE\""));
	free(s);
	/* sys.exit(4): no traceback; sys.exit("why"): the why alone. */
	s = reply("{\"status\":\"error\",\"error\":{\"name\":\"SystemExit\",\"value\":\"4\","
		  "\"traceback\":[\"T\\n\"],\"exit\":4}}",
		  "");
	assert_non_null(strstr(s, "\"stderr\":\"\""));
	assert_non_null(strstr(s, "\"code\":4"));
	free(s);
	s = reply("{\"status\":\"error\",\"error\":{\"name\":\"SystemExit\",\"value\":\"why\","
		  "\"traceback\":[\"T\\n\"],\"exit\":1}}",
		  "");
	assert_non_null(strstr(s, "\"stderr\":\"why\\n\""));
	free(s);
	s = reply("{\"status\":\"error\",\"error\":{\"name\":\"SystemExit\",\"value\":\"0\","
		  "\"exit\":0}}",
		  "");
	assert_non_null(strstr(s, "\"code\":0,\"signal\":null,\"message\":null,\"status\":null"));
	free(s);
	s = reply("{\"status\":\"timeout\",\"message\":\"timed out after 3 s\"}", "");
	assert_non_null(strstr(s, "\"code\":null,\"signal\":\"SIGKILL\",\"message\":\"Time limit "
				  "exceeded\",\"status\":\"TO\""));
	free(s);
	s = reply("{\"status\":\"crashed\",\"message\":\"the interpreter died (killed by signal "
		  "11, Segmentation fault)\"}",
		  "");
	assert_non_null(strstr(s, "\"signal\":\"SIGSEGV\""));
	assert_non_null(strstr(s, "\"status\":\"SG\""));
	free(s);
	s = reply("{\"status\":\"ok\",\"truncated\":true}", "");
	assert_non_null(strstr(s, "\"status\":\"OL\""));
	free(s);
}

static void test_runtimes_and_errors(void **state)
{
	char *s = http_piston_runtimes("3.11.2");
	assert_string_equal(s, "[{\"language\":\"python\",\"version\":\"3.11.2\",\"aliases\":["
			       "\"py\",\"python3\"]}]");
	free(s);
	s = http_piston_error("a \"b\"");
	assert_string_equal(s, "{\"message\":\"a \\\"b\\\"\"}");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_selectors),
		cmocka_unit_test(test_a_full_request_becomes_a_plan),
		cmocka_unit_test(test_default_plan_asks_the_pool),
		cmocka_unit_test(test_bad_requests_say_why),
		cmocka_unit_test(test_results_become_pistons_run),
		cmocka_unit_test(test_runtimes_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
