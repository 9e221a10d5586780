/* Unit tests for protocol.c: request encoding and frame decoding. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "protocol.h"
#include "ptybox.h"

/* Decodes one base64url request line back to its JSON. */
static cJSON *decode_line(const char *line, size_t len)
{
	assert_true(len > 0 && line[len - 1] == '\n');
	for (size_t i = 0; i + 1 < len; i++)
		assert_non_null(
			strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=",
			       line[i]));
	unsigned char *bin = malloc(len);
	size_t binlen;
	assert_int_equal(sodium_base642bin(bin, len, line, len - 1, NULL, &binlen, NULL,
					   sodium_base64_VARIANT_URLSAFE),
			 0);
	cJSON *o = cJSON_ParseWithLength((const char *)bin, binlen);
	free(bin);
	assert_non_null(o);
	return o;
}

static void test_nonce_is_random_hex(void **state)
{
	char a[33], b[33];
	assert_int_equal(protocol_make_nonce(a, sizeof(a)), 0);
	assert_int_equal(protocol_make_nonce(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(strspn(a, "0123456789abcdef"), 32);
	assert_string_not_equal(a, b);
	assert_int_equal(protocol_make_nonce(a, 10), -EINVAL);
}

static void test_boot_lines_are_short_and_end_empty(void **state)
{
	size_t n = 5000;
	unsigned char *src = malloc(n);
	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7);
	char *out;
	size_t len;
	assert_int_equal(protocol_boot_lines(src, n, &out, &len), 0);
	assert_true(len >= 2 && out[len - 1] == '\n' && out[len - 2] == '\n');
	/* every line at most PROTOCOL_BOOT_LINE, and the concatenation decodes back */
	char *joined = malloc(len);
	size_t jl = 0;
	for (char *p = out; *p != '\n';) {
		char *nl = strchr(p, '\n');
		assert_true((size_t)(nl - p) <= PROTOCOL_BOOT_LINE);
		memcpy(joined + jl, p, (size_t)(nl - p));
		jl += (size_t)(nl - p);
		p = nl + 1;
	}
	unsigned char *back = malloc(n);
	size_t backlen;
	assert_int_equal(sodium_base642bin(back, n, joined, jl, NULL, &backlen, NULL,
					   sodium_base64_VARIANT_ORIGINAL),
			 0);
	assert_int_equal(backlen, n);
	assert_memory_equal(back, src, n);
	free(back);
	free(joined);
	free(out);
	free(src);
}

static void test_exec_line_round_trips_any_code(void **state)
{
	const char *code = "print('<<<ptybox:x:>>>\\n')\n# \xe2\x82\xac \x01\x03 \"q\"";
	char *line;
	size_t len;
	assert_int_equal(protocol_exec_line(7, code, strlen(code), 4096, &line, &len), 0);
	/* nothing the terminal could take as a control character */
	assert_null(memchr(line, '\x03', len));
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "exec");
	assert_string_equal(protocol_str(o, "code"), code);
	assert_int_equal(cJSON_GetObjectItem(o, "id")->valuedouble, 7);
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble, 4096);
	cJSON_Delete(o);
	free(line);
}

static void test_exec_line_rejects_nul(void **state)
{
	char *line = NULL;
	size_t len;
	assert_int_equal(protocol_exec_line(1, "a\0b", 3, 10, &line, &len), -EINVAL);
	assert_null(line);
}

static void test_parse_frames(void **state)
{
	struct protocol_frame f;
	const char *p = "{\"type\":\"result\",\"id\":3,\"status\":\"ok\"}";
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_int_equal(f.type, FRAME_RESULT);
	assert_true(f.has_id);
	assert_int_equal(f.id, 3);
	protocol_frame_free(&f);

	p = "{\"type\":\"stream\",\"id\":-1,\"name\":\"stdout\",\"text\":\"x\"}";
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_int_equal(f.type, FRAME_STREAM);
	assert_false(f.has_id); /* negative ids are not ids */
	protocol_frame_free(&f);

	p = "{\"type\":\"start\",\"id\":1.5}";
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_false(f.has_id);
	protocol_frame_free(&f);

	p = "{\"type\":\"nonsense\",\"id\":\"7\"}";
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_int_equal(f.type, FRAME_UNKNOWN);
	assert_false(f.has_id);
	protocol_frame_free(&f);

	const char *bad[] = {"", "[1,2]", "\"ready\"", "{\"type\":", "null", "{} trailing"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = protocol_parse_frame(bad[i], strlen(bad[i]), &f);
		if (rc == 0)
			protocol_frame_free(&f);
		if (i < 5)
			assert_int_equal(rc, -EINVAL);
	}
}

static void test_result_json_has_every_field(void **state)
{
	struct ptybox_result r = {
		.id = 9,
		.status = PTYBOX_TIMEOUT,
		.stdout_text = "out",
		.stderr_text = "err",
		.duration_ms = 1.23456,
		.truncated = true,
		.dropped_bytes = 5,
		.state_lost = true,
		.message = "timed out",
	};
	char *s = protocol_result_json(&r, NULL, NULL, NULL);
	cJSON *o = cJSON_Parse(s);
	assert_non_null(o);
	assert_string_equal(protocol_str(o, "status"), "timeout");
	assert_string_equal(protocol_str(o, "stdout"), "out");
	assert_string_equal(protocol_str(o, "stderr"), "err");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "result")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "error")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "truncated")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "state_lost")));
	assert_true(cJSON_GetObjectItem(o, "duration_ms")->valuedouble == 1.235);
	assert_string_equal(protocol_str(o, "message"), "timed out");
	cJSON_Delete(o);
	cJSON_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nonce_is_random_hex),
		cmocka_unit_test(test_boot_lines_are_short_and_end_empty),
		cmocka_unit_test(test_exec_line_round_trips_any_code),
		cmocka_unit_test(test_exec_line_rejects_nul),
		cmocka_unit_test(test_parse_frames),
		cmocka_unit_test(test_result_json_has_every_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
