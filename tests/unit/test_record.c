/* Unit tests for record.c: asciicast v2 lines, and a recording's file, cap and errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "protocol.h"
#include "record.h"

static char dir[] = "/tmp/ptybox-test-record-XXXXXX";

/* The event line for data, parsed: [t, type, text]; the text is returned (caller frees). */
static char *event_text(double t, char type, const char *data, size_t len)
{
	char *line;
	size_t n;
	assert_int_equal(record_event_line(t, type, data, len, &line, &n), 0);
	assert_int_equal(strlen(line), n);
	assert_true(n > 0 && line[n - 1] == '\n');
	assert_null(memchr(line, '\n', n - 1)); /* one line */
	assert_true(protocol_utf8_valid(line, n));
	cJSON *a = cJSON_Parse(line);
	assert_non_null(a);
	assert_int_equal(cJSON_GetArraySize(a), 3);
	assert_true(cJSON_IsNumber(cJSON_GetArrayItem(a, 0)));
	assert_true(cJSON_GetArrayItem(a, 0)->valuedouble - t < 1e-6);
	char ty[2] = {type, 0};
	assert_string_equal(cJSON_GetArrayItem(a, 1)->valuestring, ty);
	char *text = strdup(cJSON_GetArrayItem(a, 2)->valuestring);
	cJSON_Delete(a);
	free(line);
	return text;
}

static void test_an_event_is_one_line_of_json(void **state)
{
	char *t = event_text(1.5, 'o', "hi \"there\"\\\r\n\t\x1b[31m", 19);
	assert_string_equal(t, "hi \"there\"\\\r\n\t\x1b[31m");
	free(t);
	t = event_text(0, 'm', "exec 1: print(1)", 16);
	assert_string_equal(t, "exec 1: print(1)");
	free(t);
	char *line;
	size_t n;
	assert_int_equal(record_event_line(2.25, 'o', "x", 1, &line, &n), 0);
	assert_string_equal(line, "[2.250000, \"o\", \"x\"]\n");
	free(line);
}

static void test_invalid_utf8_and_nul_become_replacement_characters(void **state)
{
	/* valid: e-acute, euro, an emoji; invalid: a stray continuation, an overlong '/', a
	 * surrogate, a lead byte cut off at the end; and a NUL */
	static const char in[] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|\xed\xa0\x80|"
				 "\0|\xe2\x82";
	char *t = event_text(0, 'o', in, sizeof(in) - 1);
	assert_string_equal(t, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\xef\xbf\xbd|\xef\xbf\xbd"
			       "\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd|"
			       "\xef\xbf\xbd\xef\xbf\xbd");
	free(t);
	/* random bytes: always a valid line */
	srand(7);
	for (int round = 0; round < 2000; round++) {
		char buf[64];
		size_t n = (size_t)(rand() % (int)sizeof(buf));
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)(rand() & 0xff);
		free(event_text(round, 'o', buf, n));
	}
}

static void test_the_header_says_size_time_title_and_env(void **state)
{
	char *line;
	size_t n;
	assert_int_equal(record_header_line(120, 40, 1700000000, "ptybox run \xff",
					    "xterm-256color", "/bin/bash", &line, &n),
			 0);
	assert_true(n > 0 && line[n - 1] == '\n' && protocol_utf8_valid(line, n));
	cJSON *h = cJSON_Parse(line);
	assert_non_null(h);
	assert_int_equal(cJSON_GetObjectItem(h, "version")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(h, "width")->valueint, 120);
	assert_int_equal(cJSON_GetObjectItem(h, "height")->valueint, 40);
	assert_true(cJSON_GetObjectItem(h, "timestamp")->valuedouble == 1700000000.0);
	assert_string_equal(cJSON_GetObjectItem(h, "title")->valuestring,
			    "ptybox run \xef\xbf\xbd");
	cJSON *env = cJSON_GetObjectItem(h, "env");
	assert_string_equal(cJSON_GetObjectItem(env, "TERM")->valuestring, "xterm-256color");
	assert_string_equal(cJSON_GetObjectItem(env, "SHELL")->valuestring, "/bin/bash");
	cJSON_Delete(h);
	free(line);
}

static int warnings;
static char warning[512];

static void on_warn(void *data, const char *message)
{
	warnings++;
	snprintf(warning, sizeof(warning), "%s", message);
}

/* The file's lines, parsed; n set. */
static cJSON **read_lines(const char *path, size_t *n, size_t *bytes)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	cJSON **out = calloc(4096, sizeof(*out));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	*n = 0;
	*bytes = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		assert_true(*n < 4096);
		assert_true(line[len - 1] == '\n');
		*bytes += (size_t)len;
		out[*n] = cJSON_Parse(line);
		assert_non_null(out[*n]);
		(*n)++;
	}
	free(line);
	fclose(f);
	return out;
}

static void free_lines(cJSON **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(lines[i]);
	free(lines);
}

static void test_a_recording_is_filtered_and_in_order(void **state)
{
	char path[128], err[256];
	snprintf(path, sizeof(path), "%s/a.cast", dir);
	struct record *r;
	warnings = 0;
	struct record_config cfg = {
		.path = path, .width = 100, .height = 30, .title = "t", .warn = on_warn};
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), 0);
	record_exec(r, 3, "\n\nx = 1\ny = 2", 12);
	record_output(r, "\x1b[0m>>> x\n", 10, false);
	/* the sandbox's: a clipboard write cut in two, a split UTF-8 character, CR LF kept */
	record_output(r, "a\nb\x1b]52;c;", 10, true);
	record_output(r, "eA==\x07 \xe2\x82", 8, true);
	record_output(r, "\xac\r\n", 3, true);
	record_resize(r, 90, 20);
	record_close(r);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	size_t n, bytes;
	cJSON **l = read_lines(path, &n, &bytes);
	assert_int_equal(cJSON_GetObjectItem(l[0], "width")->valueint, 100);
	assert_string_equal(cJSON_GetObjectItem(l[0], "title")->valuestring, "t");
	assert_string_equal(cJSON_GetArrayItem(l[1], 1)->valuestring, "m");
	assert_string_equal(cJSON_GetArrayItem(l[1], 2)->valuestring, "exec 3: x = 1");
	char all[512] = "";
	double last = 0;
	for (size_t i = 1; i < n; i++) {
		double t = cJSON_GetArrayItem(l[i], 0)->valuedouble;
		assert_true(t >= last);
		last = t;
		if (strcmp(cJSON_GetArrayItem(l[i], 1)->valuestring, "o") == 0)
			strcat(all, cJSON_GetArrayItem(l[i], 2)->valuestring);
	}
	assert_string_equal(all, "\x1b[0m>>> x\r\na\r\nb\\x1b]52;c;eA==\\x07 \xe2\x82\xac\r\n");
	assert_string_equal(cJSON_GetArrayItem(l[n - 1], 1)->valuestring, "r");
	assert_string_equal(cJSON_GetArrayItem(l[n - 1], 2)->valuestring, "90x20");
	assert_int_equal(warnings, 0);
	free_lines(l, n);
}

static void test_the_cap_ends_with_a_note_and_one_warning(void **state)
{
	char path[128], err[256], chunk[100];
	snprintf(path, sizeof(path), "%s/cap.cast", dir);
	memset(chunk, 'x', sizeof(chunk));
	struct record *r;
	warnings = 0;
	struct record_config cfg = {.path = path, .max_bytes = RECORD_MAX_MIN, .warn = on_warn};
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), 0);
	for (int i = 0; i < 200; i++) {
		record_output(r, chunk, sizeof(chunk), true);
		if (i % 10 == 0)
			record_flush(r);
	}
	assert_true(record_stopped(r));
	record_marker(r, "after the cap");
	record_close(r);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(warning, "stopped at its size cap (4096 bytes)"));
	size_t n, bytes;
	cJSON **l = read_lines(path, &n, &bytes);
	assert_true(bytes <= RECORD_MAX_MIN);
	assert_true(bytes > RECORD_MAX_MIN - 400); /* (it did not stop long before) */
	assert_non_null(
		strstr(cJSON_GetArrayItem(l[n - 1], 2)->valuestring, "the recording stops here"));
	free_lines(l, n);
}

static void test_what_cannot_be_opened_is_an_error(void **state)
{
	char path[128], err[256];
	struct record *r = NULL;
	struct record_config cfg = {.path = dir};
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "Is a directory"));
	snprintf(path, sizeof(path), "%s/no/such.cast", dir);
	cfg.path = path;
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), -ENOENT);
	/* a FIFO would block the loop: refused at once, reader or none */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_true(record_open(&r, &cfg, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "not a regular file"));
	cfg.path = "/dev/null";
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), -EINVAL);
	assert_null(r);
	/* a cap too small for anything but the header */
	snprintf(path, sizeof(path), "%s/small.cast", dir);
	cfg.path = path;
	cfg.max_bytes = 100;
	assert_int_equal(record_open(&r, &cfg, err, sizeof(err)), -EINVAL);
}

/* (newuser-12) A file another recording writes is refused, untouched: it was truncated, and the
 * two wrote one corrupt file. Once that one ends, it may be taken again. */
static void test_a_file_being_recorded_is_refused_untouched(void **state)
{
	char path[128], link[128], err[256];
	snprintf(path, sizeof(path), "%s/live.cast", dir);
	snprintf(link, sizeof(link), "%s/link.cast", dir);
	struct record *a, *b = NULL;
	struct record_config cfg = {.path = path};
	assert_int_equal(record_open(&a, &cfg, err, sizeof(err)), 0);
	record_marker(a, "first");
	record_flush(a);
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(record_open(&b, &cfg, err, sizeof(err)), -EBUSY);
	assert_null(b);
	assert_non_null(strstr(err, "another recording writes it"));
	assert_int_equal(symlink(path, link), 0); /* (another name of it) */
	cfg.path = link;
	assert_int_equal(record_open(&b, &cfg, err, sizeof(err)), -EBUSY);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	record_marker(a, "second");
	record_close(a);
	size_t n, bytes;
	cJSON **l = read_lines(path, &n, &bytes);
	assert_int_equal(n, 3);
	assert_string_equal(cJSON_GetArrayItem(l[2], 2)->valuestring, "second");
	free_lines(l, n);
	cfg.path = path;
	assert_int_equal(record_open(&b, &cfg, err, sizeof(err)), 0);
	record_close(b);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_event_is_one_line_of_json),
		cmocka_unit_test(test_invalid_utf8_and_nul_become_replacement_characters),
		cmocka_unit_test(test_the_header_says_size_time_title_and_env),
		cmocka_unit_test(test_a_recording_is_filtered_and_in_order),
		cmocka_unit_test(test_the_cap_ends_with_a_note_and_one_warning),
		cmocka_unit_test(test_what_cannot_be_opened_is_an_error),
		cmocka_unit_test(test_a_file_being_recorded_is_refused_untouched),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
