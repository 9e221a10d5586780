/* Unit tests for transcript.c: what a session shows after a prompt, byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transcript.h"

/* What the sink got: the bytes, and the sandbox's bytes marked with '|' around each of its
 * chunks, to see which are whose. */
struct sink {
	char out[4096], marked[4096];
	size_t n, m;
};

static void sink_emit(void *data, const char *bytes, size_t len, bool sandbox)
{
	struct sink *s = data;
	assert_true(s->n + len < sizeof(s->out) && s->m + len + 2 < sizeof(s->marked));
	memcpy(s->out + s->n, bytes, len);
	s->n += len;
	s->out[s->n] = '\0';
	if (sandbox)
		s->marked[s->m++] = '|';
	memcpy(s->marked + s->m, bytes, len);
	s->m += len;
	if (sandbox)
		s->marked[s->m++] = '|';
	s->marked[s->m] = '\0';
}

static void test_input_is_echoed_after_prompts(void **state)
{
	char out[TRANSCRIPT_INPUT_MAX(64)];
	const char *code = "def f():\n\treturn 1\x1b[2J\x7f\n";
	size_t n = transcript_input_format(code, strlen(code), true, out);
	out[n] = '\0';
	assert_string_equal(out, "\x1b[0m>>> def f():\n... \treturn 1^[[2J^?\n");
	n = transcript_input_format("x", 1, false, out);
	out[n] = '\0';
	assert_string_equal(out, "\x1b[0m\n>>> x\n");
	n = transcript_input_format("", 0, true, out);
	out[n] = '\0';
	assert_string_equal(out, "\x1b[0m>>> \n");
	/* the room promised holds the worst case: every byte a newline */
	char nl[64], worst[TRANSCRIPT_INPUT_MAX(64)];
	memset(nl, '\n', sizeof(nl));
	assert_true(transcript_input_format(nl, sizeof(nl), false, worst) <= sizeof(worst));
}

static void test_a_prompt_goes_on_a_line_of_its_own(void **state)
{
	struct sink s = {0};
	struct transcript t;
	transcript_init(&t, false, sink_emit, &s);
	assert_int_equal(transcript_input(&t, "print(1, end='')", 16), 0);
	transcript_output(&t, "1\x1b[0m", 5); /* (a colour reset moves no cursor) */
	transcript_result(&t, &(struct transcript_result){0});
	assert_int_equal(transcript_input(&t, "2", 1), 0);
	transcript_output(&t, "50%\r", 4); /* (a bar's CR: back at column 0) */
	assert_int_equal(transcript_input(&t, "3", 1), 0);
	transcript_output(&t, "\x1b]0;t\x07ok\n", 9); /* (a title set: not text) */
	assert_int_equal(transcript_input(&t, "4", 1), 0);
	assert_string_equal(s.out, "\x1b[0m>>> print(1, end='')\n1\x1b[0m"
				   "\x1b[0m\n>>> 2\n50%\r"
				   "\x1b[0m>>> 3\n\x1b]0;t\x07ok\n"
				   "\x1b[0m>>> 4\n");
}

static void test_results_show_value_and_traceback(void **state)
{
	struct sink s = {0};
	struct transcript t;
	transcript_init(&t, true, sink_emit, &s);
	transcript_result(&t, &(struct transcript_result){.value = "42"});
	transcript_result(
		&t, &(struct transcript_result){
			    .error_name = "ZeroDivisionError",
			    .error_value = "division by zero",
			    .traceback = "Traceback (most recent call last):\nZeroDivisionError\n",
		    });
	transcript_result(&t, &(struct transcript_result){.error_name = "KeyboardInterrupt"});
	transcript_display(&t, "<Figure size 640x480 with 1 Axes>");
	transcript_display(&t, NULL);
	assert_string_equal(s.marked, "|42|\n"
				      "\x1b[31m|Traceback (most recent call last):\n"
				      "ZeroDivisionError\n|\x1b[0m"
				      "\x1b[31m|KeyboardInterrupt|\n\x1b[0m"
				      "|<Figure size 640x480 with 1 Axes>|\n");
	/* without colour, no escape at all; the error's value after its name */
	struct sink p = {0};
	transcript_init(&t, false, sink_emit, &p);
	transcript_result(&t, &(struct transcript_result){.error_name = "E", .error_value = "v"});
	assert_string_equal(p.marked, "|E|: |v|\n");
}

static void test_a_result_object_shows_the_same(void **state)
{
	struct sink a = {0}, b = {0};
	struct transcript t;
	transcript_init(&t, true, sink_emit, &a);
	transcript_result(
		&t, &(struct transcript_result){
			    .error_name = "KeyError",
			    .error_value = "'k'",
			    .traceback = "Traceback (most recent call last):\nKeyError: 'k'\n",
		    });
	transcript_result(&t, &(struct transcript_result){.value = "'v'"});
	transcript_init(&t, true, sink_emit, &b);
	cJSON *r = cJSON_Parse("{\"status\":\"error\",\"error\":{\"name\":\"KeyError\","
			       "\"value\":\"'k'\",\"traceback\":[\"Traceback (most recent call "
			       "last):\\n\",\"KeyError: 'k'\\n\"]}}");
	assert_int_equal(transcript_result_json(&t, r), 0);
	cJSON_Delete(r);
	r = cJSON_Parse("{\"status\":\"ok\",\"result\":{\"text/plain\":\"'v'\"}}");
	assert_int_equal(transcript_result_json(&t, r), 0);
	cJSON_Delete(r);
	assert_string_equal(a.marked, b.marked);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_input_is_echoed_after_prompts),
		cmocka_unit_test(test_a_prompt_goes_on_a_line_of_its_own),
		cmocka_unit_test(test_results_show_value_and_traceback),
		cmocka_unit_test(test_a_result_object_shows_the_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
