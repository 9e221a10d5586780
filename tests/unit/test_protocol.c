/* Unit tests for protocol.c: the boot, request encoding and frame decoding. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>
#include <zlib.h>

#include "protocol.h"
#include "stream_frame.h"
#include "ptybox.h"

/* Decodes one base64url request line back to its JSON. */
/* The JSON text of a request line, NUL-terminated. Caller frees. */
static char *decode_text(const char *line, size_t len)
{
	char *bin = malloc(len + 1);
	size_t binlen;
	assert_int_equal(sodium_base642bin((unsigned char *)bin, len, line, len - 1, NULL, &binlen,
					   NULL, sodium_base64_VARIANT_URLSAFE),
			 0);
	bin[binlen] = '\0';
	return bin;
}

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

/* The lines joined are exactly the data's standard base64, whatever its length
 * against a line's bytes (384): padding only at the very end. */
static void test_boot_lines_join_to_the_whole_base64(void **state)
{
	(void)state;
	static const size_t sizes[] = {0, 1, 2, 3, 383, 384, 385, 767, 768, 769, 1153, 5000};
	unsigned char src[5000];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		char *out;
		size_t len;
		assert_int_equal(protocol_boot_lines("source", src, n, &out, &len), 0);
		size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
		char *want = malloc(cap), *joined = malloc(len);
		sodium_bin2base64(want, cap, src, n, sodium_base64_VARIANT_ORIGINAL);
		size_t jl = 0;
		char *p = out + strlen("source\n");
		for (; *p != '\n';) {
			char *nl = strchr(p, '\n');
			assert_true(nl - p == PROTOCOL_BOOT_LINE || nl[1] == '\n');
			memcpy(joined + jl, p, (size_t)(nl - p));
			jl += (size_t)(nl - p);
			p = nl + 1;
		}
		assert_true(p == out + len - 1);
		assert_int_equal(jl, strlen(want));
		assert_memory_equal(joined, want, jl);
		free(want);
		free(joined);
		free(out);
	}
}

static void test_boot_lines_are_short_and_end_empty(void **state)
{
	size_t n = 5000;
	unsigned char *src = malloc(n);
	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7);
	char *out;
	size_t len;
	assert_int_equal(protocol_boot_lines("a70d0d0a", src, n, &out, &len), 0);
	assert_true(len >= 2 && out[len - 1] == '\n' && out[len - 2] == '\n');
	assert_int_equal(strlen(out), len);
	/* the form line first */
	assert_memory_equal(out, "a70d0d0a\n", 9);
	/* then every line at most PROTOCOL_BOOT_LINE, and the concatenation decodes back */
	char *joined = malloc(len);
	size_t jl = 0;
	for (char *p = out + 9; *p != '\n';) {
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

static void test_boot_lines_form(void **state)
{
	char *out = NULL;
	size_t len;
	assert_int_equal(protocol_boot_lines(PROTOCOL_BOOT_SOURCE, NULL, 0, &out, &len), 0);
	assert_int_equal(len, strlen(PROTOCOL_BOOT_SOURCE) + 2);
	assert_string_equal(out, PROTOCOL_BOOT_SOURCE "\n\n");
	free(out);
	out = NULL;
	char longer[PROTOCOL_BOOT_REST_MAX + 2];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	const char *bad[] = {"", "a\nb", "a70d0d0a\r", longer};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(
			protocol_boot_lines(bad[i], (const unsigned char *)"x", 1, &out, &len),
			-EINVAL);
	assert_null(out);
}

static bool fits(const char *rest, const char *magic)
{
	return protocol_boot_code_fits(rest, strlen(rest), magic);
}

static void test_boot_code_only_for_the_same_magic(void **state)
{
	assert_true(fits(" a70d0d0a", "a70d0d0a"));
	assert_true(fits(" a70d0d0a\r", "a70d0d0a"));
	/* no magic (an older bootstrap), another Python, anything else: source */
	assert_false(fits("", "a70d0d0a"));
	assert_false(fits("\r", "a70d0d0a"));
	assert_false(fits(" ", "a70d0d0a"));
	assert_false(fits(" cb0d0d0a", "a70d0d0a"));
	assert_false(fits(" A70D0D0A", "a70d0d0a"));
	assert_false(fits(" a70d0d", "a70d0d0a"));
	assert_false(fits(" a70d0d0aff", "a70d0d0a"));
	assert_false(fits("a70d0d0a", "a70d0d0a"));
	assert_false(fits("  a70d0d0a", "a70d0d0a"));
	assert_false(fits(" a70d0d0a x", "a70d0d0a"));
	/* a build without a precompiled driver has no magic */
	assert_false(fits(" ", ""));
	assert_false(fits("", ""));
}

static void test_bootstrap_cannot_echo_as_its_prompt(void **state)
{
	/* a remote terminal's echo of the command line must never match */
	assert_null(strstr(PROTOCOL_BOOTSTRAP, PROTOCOL_BOOT_PROMPT));
	/* transports quote it with single quotes, on one line */
	assert_null(strpbrk(PROTOCOL_BOOTSTRAP, "'\n\r\\$`"));
}

#define TEST_PYTHON "/usr/bin/python3"

/* Runs python3 -I -c arg on pipes, with in as its standard input; returns its
 * standard output (NUL-terminated, the length in *outlen). */
static char *run_python(const char *arg, const char *in, size_t inlen, size_t *outlen)
{
	int to[2], from[2];
	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execl(TEST_PYTHON, TEST_PYTHON, "-I", "-c", arg, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	/* the output is small: it waits in the pipe until the input is written */
	for (size_t o = 0; o < inlen;) {
		ssize_t n = write(to[1], in + o, inlen - o);
		assert_true(n > 0);
		o += (size_t)n;
	}
	close(to[1]);
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	for (ssize_t n; (n = read(from[0], out + len, cap - 1 - len)) > 0;) {
		len += (size_t)n;
		if (len == cap - 1)
			out = realloc(out, cap *= 2);
	}
	close(from[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	out[len] = '\0';
	*outlen = len;
	return out;
}

/* Runs the bootstrap on form and data; returns the rest of its prompt's line
 * (in *magic, the magic alone) and what the driver printed. */
static char *run_bootstrap(const char *form, const void *data, size_t len, char *magic,
			   size_t magiclen)
{
	char *in, *out;
	size_t inlen, outlen;
	assert_int_equal(protocol_boot_lines(form, data, len, &in, &inlen), 0);
	out = run_python(PROTOCOL_BOOTSTRAP, in, inlen, &outlen);
	free(in);
	const char *prompt = PROTOCOL_BOOT_PROMPT;
	assert_memory_equal(out, prompt, strlen(prompt));
	char *rest = out + strlen(prompt), *nl = strchr(rest, '\n');
	assert_non_null(nl);
	assert_true(nl - rest >= 1 && (size_t)(nl - rest) < magiclen);
	memcpy(magic, rest + 1, (size_t)(nl - rest - 1));
	magic[nl - rest - 1] = '\0';
	assert_true(protocol_boot_code_fits(rest, (size_t)(nl - rest), magic));
	char *printed = strdup(nl + 1);
	free(out);
	return printed;
}

static void test_bootstrap_runs_source_and_code(void **state)
{
	if (access(TEST_PYTHON, X_OK) != 0)
		skip();
	char magic[PROTOCOL_BOOT_REST_MAX];
	const char *src = "print('source', 6 * 7)\n";
	char *printed = run_bootstrap(PROTOCOL_BOOT_SOURCE, src, strlen(src), magic, sizeof(magic));
	assert_string_equal(printed, "source 42\n");
	free(printed);
	assert_int_equal(strlen(magic), 8);
	assert_int_equal(strspn(magic, "0123456789abcdef"), 8);

	/* code as cmake/driver_code.py makes it, under the interpreter's magic */
	size_t codelen;
	char *code = run_python("import marshal,sys,zlib;sys.stdout.buffer.write(zlib.compress("
				"marshal.dumps(compile('print(\"code\",6*7)','t','exec'))))",
				"", 0, &codelen);
	char again[PROTOCOL_BOOT_REST_MAX];
	printed = run_bootstrap(magic, code, codelen, again, sizeof(again));
	assert_string_equal(printed, "code 42\n");
	free(printed);
	free(code);

	/* the form line's second word is the language, left in l for the driver */
	const char *lsrc = "print('lang', globals().get('l') or 'python')\n";
	char form[PROTOCOL_BOOT_REST_MAX + 8];
	snprintf(form, sizeof(form), "%s bash", magic);
	printed = run_bootstrap(PROTOCOL_BOOT_SOURCE " bash", lsrc, strlen(lsrc), again,
				sizeof(again));
	assert_string_equal(printed, "lang bash\n");
	free(printed);
	code = run_python("import marshal,sys,zlib;sys.stdout.buffer.write(zlib.compress("
			  "marshal.dumps(compile('print(\"code\",l)','t','exec'))))",
			  "", 0, &codelen);
	printed = run_bootstrap(form, code, codelen, again, sizeof(again));
	assert_string_equal(printed, "code bash\n");
	free(printed);
	free(code);
	printed = run_bootstrap(PROTOCOL_BOOT_SOURCE, lsrc, strlen(lsrc), again, sizeof(again));
	assert_string_equal(printed, "lang python\n"); /* (no second word: l is "") */
	free(printed);

	/* under any other form line, what comes is source */
	printed = run_bootstrap("00000000", src, strlen(src), again, sizeof(again));
	assert_string_equal(printed, "source 42\n");
	free(printed);
}

static void test_exec_file_line_names_the_file_and_its_argv(void **state)
{
	const char *argv[] = {"prog.py", "--flag", "\xe2\x82\xac", NULL};
	char *line;
	size_t len;
	assert_int_equal(protocol_exec_file_line(3, "print(1)", 8, PROTOCOL_DEFAULT_MAX_OUTPUT,
						 PROTOCOL_DEFAULT_BUSY_POLL, "prog.py", argv, &line,
						 &len),
			 0);
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "exec");
	assert_string_equal(protocol_str(o, "code"), "print(1)");
	assert_string_equal(protocol_str(o, "filename"), "prog.py");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "main")));
	cJSON *args = cJSON_GetObjectItem(o, "argv");
	assert_int_equal(cJSON_GetArraySize(args), 3);
	assert_string_equal(cJSON_GetArrayItem(args, 1)->valuestring, "--flag");
	assert_string_equal(cJSON_GetArrayItem(args, 2)->valuestring, "\xe2\x82\xac");
	assert_null(cJSON_GetObjectItem(o, "max_output"));
	cJSON_Delete(o);
	free(line);

	/* no argv: sys.argv is the file alone; a NUL or no name is refused */
	assert_int_equal(protocol_exec_file_line(4, "x", 1, 10, 0, "<stdin>", NULL, &line, &len),
			 0);
	o = decode_line(line, len);
	args = cJSON_GetObjectItem(o, "argv");
	assert_int_equal(cJSON_GetArraySize(args), 1);
	assert_string_equal(cJSON_GetArrayItem(args, 0)->valuestring, "<stdin>");
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble, 10);
	cJSON_Delete(o);
	free(line);
	assert_int_equal(protocol_exec_file_line(4, "a\0b", 3, 10, 0, "f", NULL, &line, &len),
			 -EINVAL);
	assert_int_equal(protocol_exec_file_line(4, "x", 1, 10, 0, NULL, NULL, &line, &len),
			 -EINVAL);
}

static void test_exec_input_line_has_env_cwd_and_stdin(void **state)
{
	const char *env[] = {"A=1", "EMPTY=", "A=2", "B=x=y", NULL};
	struct protocol_exec_input in = {.env = env,
					 .cwd = "sub",
					 .stdin_data = "a\0\xff",
					 .stdin_len = 3,
					 .has_stdin = true};
	char *line;
	size_t len;
	assert_int_equal(protocol_exec_input_line(5, "x", 1, PROTOCOL_DEFAULT_MAX_OUTPUT,
						  PROTOCOL_DEFAULT_BUSY_POLL, NULL, NULL, &in,
						  &line, &len),
			 0);
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "code"), "x");
	assert_null(cJSON_GetObjectItem(o, "filename"));
	cJSON *e = cJSON_GetObjectItem(o, "env");
	assert_int_equal(cJSON_GetArraySize(e), 3); /* (A given twice: the last one) */
	assert_string_equal(protocol_str(e, "A"), "2");
	assert_string_equal(protocol_str(e, "EMPTY"), "");
	assert_string_equal(protocol_str(e, "B"), "x=y");
	assert_string_equal(protocol_str(o, "cwd"), "sub");
	assert_string_equal(protocol_str(o, "stdin_b64"), "YQD/");
	cJSON_Delete(o);
	free(line);

	/* empty stdin is stdin still; a file keeps its members */
	struct protocol_exec_input empty = {.has_stdin = true};
	assert_int_equal(
		protocol_exec_input_line(6, "x", 1, 10, 0, "f.py", NULL, &empty, &line, &len), 0);
	o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "stdin_b64"), "");
	assert_string_equal(protocol_str(o, "filename"), "f.py");
	assert_null(cJSON_GetObjectItem(o, "env"));
	assert_null(cJSON_GetObjectItem(o, "cwd"));
	cJSON_Delete(o);
	free(line);

	/* what the driver would refuse is refused here */
	const char *noeq[] = {"A", NULL}, *nokey[] = {"=1", NULL};
	struct protocol_exec_input bad[] = {
		{.env = noeq},
		{.env = nokey},
		{.cwd = ""},
		{.has_stdin = true, .stdin_len = PROTOCOL_STDIN_MAX + 1, .stdin_data = ""}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(protocol_exec_input_valid(&bad[i]));
		assert_int_equal(protocol_exec_input_line(7, "x", 1, 10, 0, NULL, NULL, &bad[i],
							  &line, &len),
				 -EINVAL);
	}
}

static void test_resize_and_tty_lines(void **state)
{
	char *line;
	size_t len;
	assert_int_equal(protocol_resize_line(132, 50, &line, &len), 0);
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "resize");
	assert_int_equal(cJSON_GetObjectItem(o, "cols")->valueint, 132);
	assert_int_equal(cJSON_GetObjectItem(o, "rows")->valueint, 50);
	cJSON_Delete(o);
	free(line);
	assert_int_equal(protocol_resize_line(0, 50, &line, &len), -EINVAL);
	assert_int_equal(protocol_resize_line(80, 65536, &line, &len), -EINVAL);
	assert_int_equal(protocol_tty_line(&line, &len), 0);
	o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "tty");
	cJSON_Delete(o);
	free(line);
}

static void test_exec_line_round_trips_any_code(void **state)
{
	const char *code = "print('<<<ptybox:x:>>>\\n')\n# \xe2\x82\xac \x01\x03 \"q\"";
	char *line;
	size_t len;
	assert_int_equal(protocol_exec_line(7, code, strlen(code), 4096, PROTOCOL_DEFAULT_BUSY_POLL,
					    &line, &len),
			 0);
	/* nothing the terminal could take as a control character */
	assert_null(memchr(line, '\x03', len));
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "exec");
	assert_string_equal(protocol_str(o, "code"), code);
	assert_int_equal(cJSON_GetObjectItem(o, "id")->valuedouble, 7);
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble, 4096);
	cJSON_Delete(o);
	free(line);

	/* the driver's default goes without saying; any other value is sent */
	assert_int_equal(protocol_exec_line(9, "x", 1, PROTOCOL_DEFAULT_MAX_OUTPUT,
					    PROTOCOL_DEFAULT_BUSY_POLL, &line, &len),
			 0);
	o = decode_line(line, len);
	assert_null(cJSON_GetObjectItem(o, "max_output"));
	assert_null(cJSON_GetObjectItem(o, "busy_poll"));
	assert_string_equal(protocol_str(o, "code"), "x");
	cJSON_Delete(o);
	free(line);
	assert_int_equal(protocol_exec_line(9, "x", 1, 1000, 0, &line, &len), 0);
	o = decode_line(line, len);
	assert_int_equal(cJSON_GetObjectItem(o, "busy_poll")->valuedouble, 0);
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble, 1000);
	cJSON_Delete(o);
	free(line);
	assert_int_equal(protocol_exec_line(9, "x", 1, PROTOCOL_DEFAULT_MAX_OUTPUT - 1,
					    PROTOCOL_DEFAULT_BUSY_POLL, &line, &len),
			 0);
	o = decode_line(line, len);
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble,
			 PROTOCOL_DEFAULT_MAX_OUTPUT - 1);
	cJSON_Delete(o);
	free(line);
	assert_int_equal(protocol_exec_line(9, "x", 1, 0, PROTOCOL_DEFAULT_BUSY_POLL, &line, &len),
			 0);
	o = decode_line(line, len);
	assert_int_equal(cJSON_GetObjectItem(o, "max_output")->valuedouble, 0);
	cJSON_Delete(o);
	free(line);

	/* long code (quoted off the stack), every byte needing an escape */
	size_t n = 5000;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(1 + i % 31);
	big[n] = '\0';
	assert_int_equal(protocol_exec_line(8, big, n, 1, PROTOCOL_DEFAULT_BUSY_POLL, &line, &len),
			 0);
	o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "code"), big);
	assert_int_equal(cJSON_GetObjectItem(o, "id")->valuedouble, 8);
	cJSON_Delete(o);
	free(line);
	free(big);
}

static void test_interrupt_line_is_the_request_alone(void **state)
{
	/* The relay reads it and signals its kernel: no ^C byte on the wire. */
	char *line;
	size_t len;
	assert_int_equal(protocol_interrupt_line(12345678901234ULL, &line, &len), 0);
	assert_null(memchr(line, '\x03', len));
	assert_int_equal(strlen(line), len);
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "interrupt");
	assert_true(cJSON_GetObjectItem(o, "id")->valuedouble == 12345678901234.0);
	cJSON_Delete(o);
	free(line);
}

static void test_restart_line_and_exit_words(void **state)
{
	char *line, why[256];
	size_t len;
	assert_int_equal(protocol_restart_line(7, &line, &len), 0);
	cJSON *o = decode_line(line, len);
	assert_string_equal(protocol_str(o, "op"), "restart");
	assert_true(cJSON_GetObjectItem(o, "id")->valuedouble == 7.0);
	cJSON_Delete(o);
	free(line);
	protocol_describe_exit(9, why, sizeof(why)); /* WTERMSIG 9 */
	assert_non_null(strstr(why, "killed by signal 9"));
	protocol_describe_exit(PROTOCOL_EXIT_NO_KERNEL << 8, why, sizeof(why));
	assert_non_null(strstr(why, "could not start a kernel"));
	protocol_describe_exit(3 << 8, why, sizeof(why));
	assert_string_equal(why, "exit status 3");
}

static void test_ids_are_exact_and_the_same_in_both_lines(void **state)
{
	/* The relay matches an interrupt to its snippet by id: any uint64 must
	 * print as the same exact digits in both requests. */
	char *exec, *intr;
	size_t elen, ilen;
	assert_int_equal(
		protocol_exec_line(UINT64_MAX, "x = 1", 5, UINT64_MAX, UINT_MAX, &exec, &elen), 0);
	assert_int_equal(protocol_interrupt_line(UINT64_MAX, &intr, &ilen), 0);
	char *e = decode_text(exec, elen), *i = decode_text(intr, ilen);
	assert_non_null(strstr(e, "\"id\":18446744073709551615,"));
	assert_non_null(strstr(e, "\"max_output\":18446744073709551615,"));
	assert_non_null(strstr(e, "\"busy_poll\":4294967295}"));
	assert_non_null(strstr(i, "\"id\":18446744073709551615,"));
	free(e);
	free(i);
	free(exec);
	free(intr);
}

static void test_exec_line_rejects_nul(void **state)
{
	char *line = NULL;
	size_t len;
	assert_int_equal(
		protocol_exec_line(1, "a\0b", 3, 10, PROTOCOL_DEFAULT_BUSY_POLL, &line, &len),
		-EINVAL);
	assert_null(line);
}

/* What cJSON would cut a string at, and only that: an escaped backslash
 * before "u0000" is a backslash, and the text after the NUL is checked too. */
static void test_json_nul_escape_is_found(void **state)
{
	static const struct {
		const char *json;
		bool nul;
	} cases[] = {
		{"{\"code\":\"a\\u0000b\"}", true},
		{"{\"code\":\"\\u0000\"}", true},
		{"{\"code\":\"x\\\\\\u0000\"}", true}, /* \\ then \u0000 */
		{"{\"code\":\"x\\\\u0000\"}", false},  /* \\ then u0000 */
		{"{\"code\":\"\\u00000\"}", true},
		{"{\"code\":\"\\u0001\\u1000\"}", false},
		{"{\"code\":\"\\\"u0000\"}", false}, /* \" then u0000 */
		{"{\"code\":\"a\\uZZZZb\"}", true},  /* cJSON reads bad hex as \u0000 */
		{"{\"code\":\"a\\u12\\u0041\"}", true},
		{"{\"code\":\"a\\u\\ude00\"}", true},
		{"{\"code\":\"\\\\uZZZZ\"}", false}, /* \\ then uZZZZ */
		{"{\"code\":\"\\uFFFF\\uabcd\"}", false},
		{"\\u000", false},
		{"\\", false},
		{"", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(protocol_json_has_nul(cases[i].json, strlen(cases[i].json)) ==
			    cases[i].nul);
		/* masked, a line has no NUL left, and only those escapes changed */
		char masked[64];
		size_t n = strlen(cases[i].json);
		memcpy(masked, cases[i].json, n);
		assert_true((protocol_json_mask_nul(masked, n) > 0) == cases[i].nul);
		assert_false(protocol_json_has_nul(masked, n));
		if (!cases[i].nul)
			assert_memory_equal(masked, cases[i].json, n);
	}
	char raw[] = "{\"id\":\"a\0b\"}";
	assert_true(protocol_json_has_nul(raw, 12)); /* raw */
	assert_int_equal(protocol_json_mask_nul(raw, 12), 1);
	assert_string_equal(raw, "{\"id\":\"a b\"}");
	char escaped_raw[] = "{\"id\":\"a\\\0\"}"; /* a backslash, then a raw NUL */
	assert_int_equal(protocol_json_mask_nul(escaped_raw, 11), 1);
	assert_false(protocol_json_has_nul(escaped_raw, 11));
	assert_true(protocol_json_has_nul("{\"code\":\"a\0b\"}", 14)); /* raw */
	/* A NUL escape cut off by the length is not there. */
	assert_false(protocol_json_has_nul("\\u0000", 5));
	assert_true(protocol_json_has_nul("\\u0000", 6));
}

static void test_lone_surrogate_escapes_are_masked(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
		size_t masked;
	} cases[] = {
		{"{\"c\":\"\\ud800\"}", "{\"c\":\"\\ufffd\"}", 1},
		{"\\uDFFF", "\\ufffd", 1},			       /* a lone low one */
		{"\\ud83d\\ude00", "\\ud83d\\ude00", 0},	       /* a pair: U+1F600 */
		{"\\ud83d\\ud83d\\ude00", "\\ufffd\\ud83d\\ude00", 1}, /* high, then a pair */
		{"\\ude00\\ud83d", "\\ufffd\\ufffd", 2},	       /* low then high: no pair */
		{"\\ud800\\n", "\\ufffd\\n", 1},
		{"\\\\ud800", "\\\\ud800", 0},			       /* an escaped backslash */
		{"\\u00e9\\ud7ff\\ue000", "\\u00e9\\ud7ff\\ue000", 0}, /* around the range */
		{"\\ud8", "\\ud8", 0},				       /* cut off */
		{"\\udx00", "\\udx00", 0},			       /* not hex */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];
		size_t len = strlen(cases[i].in);
		memcpy(buf, cases[i].in, len + 1);
		assert_int_equal(protocol_json_mask_surrogates(buf, len), cases[i].masked);
		assert_string_equal(buf, cases[i].out);
	}
	/* A pair cut by the length is a lone high one; nothing past len is touched. */
	char buf[] = "\\ud83d\\ude00";
	assert_int_equal(protocol_json_mask_surrogates(buf, 11), 1);
	assert_string_equal(buf, "\\ufffd\\ude00");
}

static void test_utf8_validity(void **state)
{
	static const struct {
		const char *s;
		bool valid;
	} cases[] = {
		{"", true},
		{"ascii {\"id\":1}", true},
		{"caf\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80", true}, /* é, 漢, 😀 */
		{"\xef\xbf\xbf\xf4\x8f\xbf\xbf", true},		     /* U+FFFF, U+10FFFF */
		{"\xff", false},
		{"\xfe\xff", false},
		{"\xc3", false},	     /* cut */
		{"\xe6\xbc", false},	     /* cut */
		{"\xc3(", false},	     /* not a continuation */
		{"\xc0\xaf", false},	     /* overlong '/' */
		{"\xe0\x80\xaf", false},     /* overlong */
		{"\xf0\x80\x80\xaf", false}, /* overlong */
		{"\xed\xa0\x80", false},     /* U+D800, a surrogate */
		{"\xf4\x90\x80\x80", false}, /* past U+10FFFF */
		{"\xf5\x80\x80\x80", false},
		{"\x80", false}, /* a lone continuation */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_true(protocol_utf8_valid(cases[i].s, strlen(cases[i].s)) == cases[i].valid);
	const char *e = "a\xc3\xa9\xe6\xbc\xa2"; /* a é 漢: 1 + 2 + 3 bytes */
	assert_int_equal(protocol_utf8_prefix(e, 6, 10), 6);
	assert_int_equal(protocol_utf8_prefix(e, 6, 6), 6);
	assert_int_equal(protocol_utf8_prefix(e, 6, 5), 3);
	assert_int_equal(protocol_utf8_prefix(e, 6, 4), 3);
	assert_int_equal(protocol_utf8_prefix(e, 6, 2), 1);
	assert_int_equal(protocol_utf8_prefix(e, 6, 0), 0);
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

	/* A lone surrogate, which cJSON refuses, reads as U+FFFD; a pair is left alone. */
	p = "{\"type\":\"result\",\"id\":4,\"error\":{\"value\":\"a\\ud800b\\ud83d\\ude00\"}}";
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_int_equal(f.type, FRAME_RESULT);
	assert_string_equal(protocol_str(cJSON_GetObjectItem(f.root, "error"), "value"),
			    "a\xef\xbf\xbd"
			    "b\xf0\x9f\x98\x80");
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

/* "[0,0,...]" of k zeros: k + 1 values (the list and its items). */
static char *zeros(size_t k, size_t *len)
{
	char *p = malloc(2 * k + 2);
	size_t n = 0;
	p[n++] = '[';
	for (size_t i = 0; i < k; i++) {
		if (i)
			p[n++] = ',';
		p[n++] = '0';
	}
	p[n++] = ']';
	p[n] = '\0';
	*len = n;
	return p;
}

static void test_json_values_are_counted_outside_strings(void **state)
{
	static const struct {
		const char *json;
		size_t values;
	} cases[] = {
		{"0", 1},
		{"{}", 2}, /* an upper bound: an empty container counts one more */
		{"[1,2,3]", 4},
		{"{\"a\":1,\"b\":[true,null]}", 5},
		{"\"a,b,[c]{d}\"", 1},
		{"[\"a\\\",b\",1]", 3},	  /* an escaped quote does not end the string */
		{"[\"a\\\\\",\"b\"]", 3}, /* an escaped backslash before the quote does */
		{"[\"\\\\\\\\\\\"\",\"x,y\"]", 3},
		{"\"never, ended", 1},
		{"", 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *j = cases[i].json;
		assert_int_equal(protocol_json_values(j, strlen(j), 100), cases[i].values);
	}
	/* The count stops once past max. */
	assert_int_equal(protocol_json_values("[1,2,3,4,5]", 11, 2), 3);
	/* A length, not a NUL, ends the text. */
	assert_int_equal(protocol_json_values("[1,2]\0,,,", 9, 100), 6);
}

/* Exactly PROTOCOL_MAX_VALUES values parse; one more is refused unparsed. */
static void test_frames_over_the_value_cap_are_refused(void **state)
{
	struct protocol_frame f;
	size_t len;
	static const char head[] = "{\"type\":\"display\",\"id\":1,\"data\":{\"x\":";
	/* with its head, the frame counts 5 more than the list's zeros */
	for (size_t extra = 0; extra < 2; extra++) {
		char *list = zeros(PROTOCOL_MAX_VALUES - 5 + extra, &len);
		char *p = malloc(sizeof(head) + len + 3);
		memcpy(p, head, sizeof(head) - 1);
		memcpy(p + sizeof(head) - 1, list, len);
		memcpy(p + sizeof(head) - 1 + len, "}}", 3);
		size_t plen = strlen(p);
		assert_int_equal(protocol_json_values(p, plen, SIZE_MAX),
				 PROTOCOL_MAX_VALUES + extra);
		int rc = protocol_parse_frame(p, plen, &f);
		if (extra) {
			assert_int_equal(rc, -E2BIG);
			assert_null(f.root);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(f.type, FRAME_DISPLAY);
			protocol_frame_free(&f);
		}
		free(p);
		free(list);
	}
	/* Commas and brackets inside strings cost nothing: one big string passes. */
	size_t n = 4 * PROTOCOL_MAX_VALUES;
	char *p = malloc(n + 64);
	int o = sprintf(p, "{\"type\":\"stream\",\"id\":2,\"name\":\"stdout\",\"text\":\"");
	for (size_t i = 0; i < n; i++)
		p[o++] = ",[{"[i % 3];
	memcpy(p + o, "\"}", 3);
	assert_int_equal(protocol_parse_frame(p, strlen(p), &f), 0);
	assert_int_equal(f.type, FRAME_STREAM);
	assert_int_equal(strlen(protocol_str(f.root, "text")), n);
	protocol_frame_free(&f);
	free(p);
}

/* A result whose traceback has 20000 entries, longer than real ones get. */
static void test_a_long_traceback_passes_the_cap(void **state)
{
	size_t lines = 20000, cap = lines * 64 + 256;
	char *p = malloc(cap);
	size_t o = (size_t)sprintf(
		p, "{\"type\":\"result\",\"id\":5,\"status\":\"error\",\"error\":"
		   "{\"name\":\"RecursionError\",\"value\":\"deep\",\"traceback\":[");
	for (size_t i = 0; i < lines; i++)
		o += (size_t)sprintf(p + o, "%s\"  File \\\"<cell 1>\\\", line %zu, in f\\n\"",
				     i ? "," : "", i);
	o += (size_t)sprintf(p + o, "]}}");
	struct protocol_frame f;
	assert_int_equal(protocol_parse_frame(p, o, &f), 0);
	const cJSON *tb = cJSON_GetObjectItem(cJSON_GetObjectItem(f.root, "error"), "traceback");
	assert_int_equal(cJSON_GetArraySize(tb), lines);
	protocol_frame_free(&f);
	free(p);
}

static void test_json_cost_counts_items_keys_and_strings(void **state)
{
	assert_int_equal(protocol_json_cost(NULL), 0);
	cJSON *v = cJSON_Parse("{\"text/plain\":\"abc\",\"x\":[0,0,0]}");
	assert_non_null(v);
	/* the object, 2 members, 3 numbers; keys "text/plain" and "x", string "abc" */
	assert_int_equal(protocol_json_cost(v), 6 * sizeof(cJSON) + 11 + 2 + 4);
	/* A member's cost is its own, not its siblings'. */
	assert_int_equal(protocol_json_cost(cJSON_GetObjectItem(v, "text/plain")),
			 sizeof(cJSON) + 11 + 4);
	cJSON_Delete(v);
	/* Numbers cost as much heap as their text is short: the cap's reason. */
	size_t len;
	char *list = zeros(1000, &len);
	v = cJSON_Parse(list);
	assert_true(protocol_json_cost(v) > 16 * len);
	cJSON_Delete(v);
	free(list);
}

/* A display frame of a 30 MB list of zeros, as code that found the nonce
 * could write: refused before cJSON builds it (15 million values, about
 * 1.2 GB of heap), fast and without growing the process. Run in a child, so
 * that its peak RSS is its own. */
static void test_forged_frame_of_many_values_is_refused_cheaply(void **state)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const char head[] = "{\"type\":\"display\",\"id\":1,\"data\":{\"x\":[0",
				  tail[] = "]}}";
		size_t len = (size_t)30 << 20;
		char *p = malloc(len);
		if (!p)
			_exit(10);
		memcpy(p, head, sizeof(head) - 1);
		for (size_t i = sizeof(head) - 1; i < len - (sizeof(tail) - 1); i += 2)
			memcpy(p + i, ",0", 2);
		memcpy(p + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
		struct rusage before, after;
		struct timespec t0, t1;
		getrusage(RUSAGE_SELF, &before);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		struct protocol_frame f;
		int rc = protocol_parse_frame(p, len, &f);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		getrusage(RUSAGE_SELF, &after);
		double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		long grew_kib = after.ru_maxrss - before.ru_maxrss;
		print_message("forged frame of %zu bytes: rc %d in %.1f ms, peak RSS +%ld KiB\n",
			      len, rc, ms, grew_kib);
		if (rc == 0)
			protocol_frame_free(&f);
		free(p);
		_exit(rc != -E2BIG ? 11 : ms > 1000 ? 12 : grew_kib > (16 << 10) ? 13 : 0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
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
	char *s = protocol_result_json(&r);
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

/* protocol_json_escape_unsafe on a copy of text from cJSON's allocator. */
static char *escape(const char *text, size_t *len)
{
	*len = strlen(text);
	char *copy = cJSON_malloc(*len + 1);
	memcpy(copy, text, *len + 1);
	return protocol_json_escape_unsafe(copy, len);
}

static void test_json_escapes_c1_and_bidi_controls(void **state)
{
	/* Every character named, in a string; then its neighbours, left alone. */
	static const char *const hidden[] = {
		"\xc2\x80",	"\xc2\x85",	"\xc2\x9b",	"\xc2\x9f",
		"\xd8\x9c",	"\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
		"\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa9",
	};
	static const char *const escaped[] = {
		"\\u0080", "\\u0085", "\\u009b", "\\u009f", "\\u061c", "\\u200e",
		"\\u200f", "\\u202a", "\\u202e", "\\u2066", "\\u2069",
	};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
		char in[64], want[64];
		snprintf(in, sizeof(in), "{\"k\":\"a%sb\"}", hidden[i]);
		snprintf(want, sizeof(want), "{\"k\":\"a%sb\"}", escaped[i]);
		size_t len;
		char *out = escape(in, &len);
		assert_string_equal(out, want);
		assert_int_equal(len, strlen(want));
		cJSON *before = cJSON_Parse(in), *after = cJSON_Parse(out);
		assert_non_null(after);
		assert_true(cJSON_Compare(before, after, 1));
		cJSON_Delete(before);
		cJSON_Delete(after);
		cJSON_free(out);
	}
	static const char *const kept[] = {
		"[\"\xc2\xa0 \xe2\x80\x8d \xe2\x80\xaf \xe2\x81\xa5 \xe2\x81\xaa \xd8\x9b "
		"caf\xc3\xa9 "
		"\xf0\x9f\x98\x80\"]",
		"[\"\\u0085 is already escaped\"]",
		"[\"\xc2\"]", /* a lead byte cut off, left as it is */
		"[\"\xe2\x80\"]",
		"",
	};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		size_t len;
		char *out = escape(kept[i], &len);
		assert_string_equal(out, kept[i]);
		assert_int_equal(len, strlen(kept[i]));
		cJSON_free(out);
	}
}

/* The result line of `print("a\u202eb\x85c")`: escaped, and the same value. */
static void test_result_json_escapes_what_cjson_prints_raw(void **state)
{
	struct ptybox_result r = {
		.id = 1,
		.stdout_text = "a\xe2\x80\xae"
			       "b\xc2\x85"
			       "c\n",
		.stderr_text = "\xe2\x81\xa6",
	};
	char *s = protocol_result_json(&r);
	assert_non_null(strstr(s, "\"stdout\":\"a\\u202eb\\u0085c\\n\""));
	assert_non_null(strstr(s, "\"stderr\":\"\\u2066\""));
	assert_null(strstr(s, "\xe2\x80\xae"));
	cJSON *o = cJSON_Parse(s);
	assert_string_equal(protocol_str(o, "stdout"), r.stdout_text);
	assert_string_equal(protocol_str(o, "stderr"), r.stderr_text);
	cJSON_Delete(o);
	cJSON_free(s);
}

/* serve echoes ids: a number must come back as the double it parsed to. */
static void test_ids_are_echoed_exactly(void **state)
{
	cJSON *v = cJSON_Parse("[9007199254740991, 5000000000000001, 5000000000000000, "
			       "0.30000000000000004, 1.0000000000000002, 0.1, -0, 1e300, 12, "
			       "-7.5, 1e400, {\"a\": [4503599627370497]}, \"s\", true, null]");
	assert_non_null(v);
	cJSON *d = protocol_json_dup_exact(v);
	assert_non_null(d);
	char *s = cJSON_PrintUnformatted(d);
	assert_string_equal(s, "[9007199254740991,5000000000000001,5000000000000000,"
			       "0.30000000000000004,1.0000000000000002,0.1,-0,1e+300,12,-7.5,null,"
			       "{\"a\":[4503599627370497]},\"s\",true,null]");
	cJSON_free(s);
	/* and stays exact through the copies serve makes of it */
	cJSON *copy = cJSON_Duplicate(d, 1);
	s = cJSON_PrintUnformatted(copy);
	assert_non_null(strstr(s, "[9007199254740991,5000000000000001,"));
	cJSON_free(s);
	cJSON_Delete(copy);
	cJSON_Delete(d);
	cJSON_Delete(v);
}

/* The relay's stream frames read by stream_frame_parse as cJSON reads them; any other
 * shape is left to cJSON. */
static void test_stream_frames_fast_as_cjson(void **state)
{
	(void)state;
	static const char *const taken[] = {
		"{\"type\":\"stream\",\"id\":7,\"name\":\"stdout\",\"text\":\"hi\\n\"}",
		"{\"type\":\"stream\",\"id\":0,\"name\":\"stderr\",\"text\":\"\"}",
		"{\"type\":\"stream\",\"id\":12,\"name\":\"stdout\",\"text\":\"a\\\"b\\\\c\\t\\r\\/"
		"\\u003c\\u003e\\u007f\\u00e9\\u20ac\\ud83d\\ude00\"}",
		"{\"type\":\"stream\",\"id\":9007199254740991,\"name\":\"stdout\",\"text\":\"x\","
		"\"late\":true}",
		/* a lone surrogate: U+FFFD, as protocol_parse_frame masks it */
		"{\"type\":\"stream\",\"id\":3,\"name\":\"stdout\",\"text\":\"\\ud800z\"}",
	};
	static const char *const left[] = {
		"{\"type\":\"stream\",\"id\":7,\"name\":\"stdout\",\"text\":\"a\",\"dropped\":5}",
		"{\"type\":\"stream\",\"id\":\"s\",\"name\":\"stdout\",\"text\":\"a\"}",
		"{\"type\":\"stream\",\"id\":null,\"name\":\"stdout\",\"text\":\"a\"}",
		"{\"type\":\"stream\",\"id\":07,\"name\":\"stdout\",\"text\":\"a\"}",
		"{\"type\":\"stream\",\"id\":9007199254740992,\"name\":\"stdout\",\"text\":\"a\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdin\",\"text\":\"a\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"\\u0000\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"\xc3\xa9\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"a\nb\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"a\\x\"}",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"a\"} ",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"a",
		"{\"type\":\"stream\",\"id\":1,\"name\":\"stdout\",\"text\":\"a\\u12\"}",
		"{\"type\":\"result\",\"id\":1,\"status\":\"ok\"}",
	};
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		size_t len = strlen(taken[i]);
		char *copy = malloc(len);
		memcpy(copy, taken[i], len); /* (no NUL after it: nothing past it is read) */
		cJSON *fast;
		uint64_t id;
		assert_int_equal(stream_frame_parse(copy, len, &fast, &id), 1);
		cJSON *slow = cJSON_ParseWithLength(copy, len);
		if (!slow && protocol_json_mask_surrogates(copy, len) > 0)
			slow = cJSON_ParseWithLength(copy, len);
		assert_non_null(slow);
		assert_true(cJSON_Compare(fast, slow, true));
		assert_true(id == (uint64_t)cJSON_GetObjectItem(slow, "id")->valuedouble);
		/* and through protocol_parse_frame, the same frame */
		struct protocol_frame f;
		memcpy(copy, taken[i], len);
		assert_int_equal(protocol_parse_frame(copy, len, &f), 0);
		assert_int_equal(f.type, FRAME_STREAM);
		assert_true(f.has_id && f.id == id);
		assert_true(cJSON_Compare(f.root, slow, true));
		protocol_frame_free(&f);
		cJSON_Delete(fast);
		cJSON_Delete(slow);
		free(copy);
	}
	cJSON *fast;
	uint64_t id;
	const char *surr =
		"{\"type\":\"stream\",\"id\":3,\"name\":\"stdout\",\"text\":\"\\ud800z\"}";
	assert_int_equal(stream_frame_parse(surr, strlen(surr), &fast, &id), 1);
	assert_string_equal(cJSON_GetObjectItem(fast, "text")->valuestring, "\xef\xbf\xbdz");
	cJSON_Delete(fast);
	for (size_t i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
		fast = (cJSON *)1;
		assert_int_equal(stream_frame_parse(left[i], strlen(left[i]), &fast, &id), 0);
		assert_null(fast);
	}
}

/* A long output is quoted by ptybox itself (protocol_text_item), byte for byte as cJSON
 * quotes it: every byte value, runs of plain text between them. */
static void test_long_output_quoted_as_cjson(void **state)
{
	(void)state;
	size_t n = 20000;
	char *text = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		text[i] = i % 97 == 0 ? (char)(1 + (i / 97) % 255) : (char)('a' + i % 26);
	text[n] = '\0';
	struct ptybox_result r = {.id = 1,
				  .status = PTYBOX_OK,
				  .stdout_text = text,
				  .stdout_len = n,
				  .stderr_text = "short \"\n",
				  .stderr_len = 8};
	char *json = protocol_result_json(&r);
	assert_non_null(json);
	cJSON *back = cJSON_Parse(json);
	assert_non_null(back);
	assert_string_equal(cJSON_GetObjectItem(back, "stdout")->valuestring, text);
	assert_string_equal(cJSON_GetObjectItem(back, "stderr")->valuestring, "short \"\n");
	cJSON *str = cJSON_CreateStringReference(text);
	char *want = cJSON_PrintUnformatted(str);
	size_t wn = strlen(want);
	want = protocol_json_escape_unsafe(want, &wn); /* (as the result's whole line is) */
	assert_non_null(strstr(json, want));
	cJSON_free(want);
	cJSON_Delete(str);
	cJSON_Delete(back);
	free(json);
	free(text);
}

/* A deflated stream frame of text (base64 of zlib) and what is made of it. */
static char *z_frame_cut(const char *text, size_t len, const char *tail, long adjust)
{
	uLongf zn = compressBound(len);
	unsigned char *z = calloc(zn + 8, 1);
	assert_int_equal(compress2(z, &zn, (const unsigned char *)text, len, 1), Z_OK);
	zn = (uLongf)((long)zn + adjust); /* (a cut stream, or zero bytes after its end) */
	size_t bn = sodium_base64_ENCODED_LEN(zn, sodium_base64_VARIANT_ORIGINAL);
	char *frame = malloc(bn + 128);
	int o = sprintf(frame, "{\"type\":\"stream\",\"id\":5,\"name\":\"stderr\",\"z\":\"");
	sodium_bin2base64(frame + o, bn, z, zn, sodium_base64_VARIANT_ORIGINAL);
	strcat(frame, tail);
	free(z);
	return frame;
}

static char *z_frame(const char *text, size_t len, const char *tail)
{
	return z_frame_cut(text, len, tail, 0);
}

static int z_parse(const char *frame, cJSON **root)
{
	uint64_t id = 0;
	int rc = stream_frame_parse(frame, strlen(frame), root, &id);
	if (rc == 1)
		assert_true(id == 5);
	return rc;
}

static void test_stream_frames_deflated(void **state)
{
	(void)state;
	size_t n = 300000;
	char *text = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		text[i] = i % 50 == 49 ? '\n' : (char)('a' + i % 7);
	text[n] = '\0';
	cJSON *root;
	char *f = z_frame(text, n, "\",\"late\":true}");
	assert_int_equal(z_parse(f, &root), 1);
	assert_string_equal(cJSON_GetObjectItem(root, "text")->valuestring, text);
	assert_string_equal(cJSON_GetObjectItem(root, "name")->valuestring, "stderr");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(root, "late")));
	assert_null(cJSON_GetObjectItem(root, "z"));
	cJSON_Delete(root);
	free(f);
	/* through protocol_parse_frame: a plain stream frame */
	f = z_frame("caf\xc3\xa9\n", 6, "\"}");
	struct protocol_frame pf;
	assert_int_equal(protocol_parse_frame(f, strlen(f), &pf), 0);
	assert_int_equal(pf.type, FRAME_STREAM);
	assert_true(pf.has_id && pf.id == 5);
	assert_string_equal(protocol_str(pf.root, "text"), "caf\xc3\xa9\n");
	protocol_frame_free(&pf);
	free(f);
	/* refused: past the cap, a NUL, not UTF-8, not base64, junk after it, a bad end */
	char *big = calloc(PROTOCOL_STREAM_Z_MAX + 2, 1);
	memset(big, 'x', PROTOCOL_STREAM_Z_MAX + 1);
	const struct {
		const char *text;
		size_t len;
		const char *tail;
	} bad[] = {
		{big, PROTOCOL_STREAM_Z_MAX + 1, "\"}"},
		{"a\0b", 3, "\"}"},
		{"\xff\xfe", 2, "\"}"},
		{"ok", 2, "\",\"dropped\":3}"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = z_frame(bad[i].text, bad[i].len, bad[i].tail);
		root = (cJSON *)1;
		assert_int_equal(z_parse(f, &root), -EINVAL);
		assert_null(root);
		free(f);
	}
	f = z_frame(big, PROTOCOL_STREAM_Z_MAX, "\"}"); /* (at the cap: taken) */
	assert_int_equal(z_parse(f, &root), 1);
	assert_int_equal(strlen(cJSON_GetObjectItem(root, "text")->valuestring),
			 PROTOCOL_STREAM_Z_MAX);
	cJSON_Delete(root);
	free(f);
	free(big);
	assert_int_equal(
		z_parse("{\"type\":\"stream\",\"id\":5,\"name\":\"stdout\",\"z\":\"!!!\"}", &root),
		-EINVAL);
	for (long adjust = -3; adjust <= 4; adjust += 7) {
		f = z_frame_cut("ok ok ok", 8, "\"}", adjust);
		assert_int_equal(z_parse(f, &root), -EINVAL);
		free(f);
	}
	free(text);
}

/* "=XX" back to bytes, as the relay's binascii.a2b_qp does for our lines. */
static size_t unescape(unsigned char *out, const char *in, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (in[i] == '=' && i + 2 < n) {
			unsigned v;
			assert_true(sscanf(in + i + 1, "%2X", &v) == 1);
			out[o++] = (unsigned char)v;
			i += 2;
		} else {
			out[o++] = (unsigned char)in[i];
		}
	}
	return o;
}

static void test_escape_data_every_byte(void **state)
{
	(void)state;
	unsigned char all[256 * 2], back[sizeof(all)];
	char enc[3 * sizeof(all)];
	for (size_t i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i < 256 ? i : 511 - i);
	size_t n = protocol_escape_data(enc, all, sizeof(all));
	/* Nine byte values are escaped, twice each: 2 * 9 * 2 more bytes. */
	assert_int_equal(n, sizeof(all) + 2 * 9 * 2);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)enc[i];
		assert_true(c != 0 && c != 3 && c != '\n' && c != '\r' && c != 0x10 && c != 0x11 &&
			    c != 0x13 && c != '~');
	}
	assert_memory_equal(enc + 0, "=00", 3);
	assert_int_equal(unescape(back, enc, n), sizeof(all));
	assert_memory_equal(back, all, sizeof(all));
	/* Trailing spaces and tabs go as they are (a2b_qp keeps them: test_driver.py). */
	assert_int_equal(protocol_escape_data(enc, (const unsigned char *)"a \t", 3), 3);
	assert_memory_equal(enc, "a \t", 3);
}

static void test_put_lines(void **state)
{
	(void)state;
	char *out;
	size_t n;
	size_t len = PROTOCOL_DATA_LINE + 5;
	unsigned char *data = calloc(1, len);
	assert_non_null(data);
	assert_int_equal(
		protocol_put_lines(7, "a/b", data, len, 0644, 3, true, NULL, false, &out, &n), 0);
	char *nl = memchr(out, '\n', n);
	assert_non_null(nl);
	/* The request, then two data lines: 1 MiB of NULs (each "=00"), then 5. */
	unsigned char json[256];
	size_t jn;
	assert_int_equal(sodium_base642bin(json, sizeof(json), out, (size_t)(nl - out), NULL, &jn,
					   NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING),
			 0);
	assert_int_equal(jn, strlen("{\"id\":7,\"op\":\"put\",\"path\":\"a/b\",\"size\":1048581,"
				    "\"mode\":420,\"offset\":3,\"more\":true}"));
	assert_memory_equal(json, "{\"id\":7,\"op\":\"put\",\"path\":\"a/b\",\"size\":1048581", 46);
	assert_int_equal(n,
			 (size_t)(nl - out) + 1 + (1 + 3 * PROTOCOL_DATA_LINE + 1) + (1 + 15 + 1));
	assert_int_equal(nl[1], '!');
	assert_int_equal(out[n - 1], '\n');
	free(out);
	assert_int_equal(protocol_put_lines(1, "", data, 1, -1, 0, false, NULL, false, &out, &n),
			 -EINVAL);
	assert_int_equal(
		protocol_put_lines(1, "x", data, 1, 010000, 0, false, NULL, false, &out, &n),
		-EINVAL);
	assert_int_equal(protocol_put_lines(1, "x", data, 0, -1, 0, false, NULL, false, &out, &n),
			 0);
	assert_int_equal(memchr(out, '!', n), NULL); /* no data: no data line */
	free(out);
	free(data);
}

/* A put from base64 is the put from the bytes, line for line; bad base64 is -EILSEQ. */
static void test_put_lines_base64(void **state)
{
	(void)state;
	size_t sizes[] = {0,
			  1,
			  2,
			  3,
			  47,
			  49151,
			  49152,
			  49153,
			  PROTOCOL_DATA_LINE + 7,
			  3 * PROTOCOL_DATA_LINE};
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		size_t len = sizes[t];
		unsigned char *data = malloc(len + 1);
		char *b64 = malloc((len + 2) / 3 * 4 + 1);
		assert_non_null(data);
		assert_non_null(b64);
		for (size_t i = 0; i < len; i++)
			data[i] = (unsigned char)(i * 131 + (i >> 8));
		size_t bn = protocol_base64_encode(b64, data, len);
		char *a, *b;
		size_t an, bnl, dl = 99;
		assert_int_equal(
			protocol_put_lines(3, "f", data, len, 0600, 5, true, "ab", false, &a, &an),
			0);
		assert_int_equal(protocol_put_lines_base64(3, "f", b64, bn, 0600, 5, true, "ab",
							   false, &b, &bnl, &dl),
				 0);
		assert_int_equal(dl, len);
		assert_int_equal(an, bnl);
		assert_memory_equal(a, b, an);
		free(b);
		/* Unpadded, as some encoders write it. */
		while (bn && b64[bn - 1] == '=')
			bn--;
		assert_int_equal(protocol_put_lines_base64(3, "f", b64, bn, 0600, 5, true, "ab",
							   false, &b, &bnl, &dl),
				 0);
		assert_int_equal(an, bnl);
		assert_memory_equal(a, b, an);
		free(b);
		free(a);
		free(b64);
		free(data);
	}
	char *out;
	size_t n, dl;
	const char *bad[] = {"Q", "QQQQQ", "QQ==QUJD", "QU$D", "QUJD\n", "QUJD===", "QQ==="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(protocol_put_lines_base64(1, "f", bad[i], strlen(bad[i]), -1, 0,
							   false, NULL, false, &out, &n, &dl),
				 -EILSEQ);
	/* Padding inside, at a piece's end: not base64 either. */
	size_t big = 2 * (48 << 10);
	char *b64 = malloc(big);
	assert_non_null(b64);
	memset(b64, 'A', big);
	b64[(48 << 10) - 1] = '=';
	assert_int_equal(protocol_put_lines_base64(1, "f", b64, big, -1, 0, false, NULL, false,
						   &out, &n, &dl),
			 -EILSEQ);
	free(b64);
	assert_int_equal(protocol_put_lines_base64(1, "", "QQ==", 4, -1, 0, false, NULL, false,
						   &out, &n, &dl),
			 -EINVAL);
}

static void test_json_data_span(void **state)
{
	(void)state;
	size_t a, b;
	const char *l = "{\"id\":1,\"op\":\"put\",\"x\":{\"data\":\"no\",\"y\":[1,\"]\"]},\"data\":"
			"\"QUJD\","
			"\"more\":true}";
	assert_true(protocol_json_data_span(l, strlen(l), "data", &a, &b));
	assert_int_equal(b - a, 4);
	assert_memory_equal(l + a, "QUJD", 4);
	l = " { \"data\" : \"\" } ";
	assert_true(protocol_json_data_span(l, strlen(l), "data", &a, &b));
	assert_int_equal(a, b);
	/* Not found, or not to be cut: the parser reads the whole line. */
	const char *no[] = {
		"{\"id\":1}",
		"{\"data\":1}",
		"{\"data\":\"a\\/b\"}",			    /* an escape in it */
		"{\"d\\u0061ta\":\"x\",\"data\":\"QUJD\"}", /* an escaped key first */
		"{\"s\":\"\\\"data\\\":\\\"x\",\"t\":1}",   /* "data" inside a string */
		"[\"data\",\"QUJD\"]",
		"{\"data\":\"QUJD",
		"{\"a\" \"data\":\"QUJD\"}",
		"",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(protocol_json_data_span(no[i], strlen(no[i]), "data", &a, &b));
}

static void test_base64_decode(void **state)
{
	(void)state;
	unsigned char in[300], out[400];
	char enc[500];
	size_t n;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 3);
	for (size_t len = 0; len < 8; len++) {
		size_t k = len == 7 ? sizeof(in) : len;
		sodium_bin2base64(enc, sizeof(enc), in, k, sodium_base64_VARIANT_ORIGINAL);
		assert_int_equal(protocol_base64_decode(out, enc, strlen(enc), &n), 0);
		assert_int_equal(n, k);
		assert_memory_equal(out, in, k);
	}
	assert_int_equal(protocol_base64_decode(out, "ab-_", 4, &n), -EINVAL);
	assert_int_equal(protocol_base64_decode(out, "abcde", 5, &n), -EINVAL);
	assert_int_equal(protocol_base64_decode(out, "ab\ncd", 5, &n), -EINVAL);
	assert_int_equal(protocol_base64_decode(out, "YQ", 2, &n), 0); /* (no padding) */
	assert_int_equal(n, 1);
	/* Two = at most: a third is a bad character. */
	assert_int_equal(protocol_base64_decode(out, "QUJD====", 8, &n), -EINVAL);
}

/* Every length up to 300 and every byte value: what libsodium's encoder says. */
static void test_base64_encode(void **state)
{
	(void)state;
	unsigned char in[300];
	char want[500], got[500];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 131 + 7);
	for (size_t len = 0; len <= sizeof(in); len++) {
		sodium_bin2base64(want, sizeof(want), in, len, sodium_base64_VARIANT_ORIGINAL);
		size_t n = protocol_base64_encode(got, in, len);
		assert_int_equal(n, strlen(want));
		assert_memory_equal(got, want, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nonce_is_random_hex),
		cmocka_unit_test(test_boot_lines_are_short_and_end_empty),
		cmocka_unit_test(test_boot_lines_join_to_the_whole_base64),
		cmocka_unit_test(test_boot_lines_form),
		cmocka_unit_test(test_boot_code_only_for_the_same_magic),
		cmocka_unit_test(test_bootstrap_cannot_echo_as_its_prompt),
		cmocka_unit_test(test_bootstrap_runs_source_and_code),
		cmocka_unit_test(test_exec_line_round_trips_any_code),
		cmocka_unit_test(test_exec_file_line_names_the_file_and_its_argv),
		cmocka_unit_test(test_exec_input_line_has_env_cwd_and_stdin),
		cmocka_unit_test(test_resize_and_tty_lines),
		cmocka_unit_test(test_interrupt_line_is_the_request_alone),
		cmocka_unit_test(test_restart_line_and_exit_words),
		cmocka_unit_test(test_ids_are_exact_and_the_same_in_both_lines),
		cmocka_unit_test(test_exec_line_rejects_nul),
		cmocka_unit_test(test_json_nul_escape_is_found),
		cmocka_unit_test(test_lone_surrogate_escapes_are_masked),
		cmocka_unit_test(test_utf8_validity),
		cmocka_unit_test(test_parse_frames),
		cmocka_unit_test(test_json_values_are_counted_outside_strings),
		cmocka_unit_test(test_frames_over_the_value_cap_are_refused),
		cmocka_unit_test(test_a_long_traceback_passes_the_cap),
		cmocka_unit_test(test_forged_frame_of_many_values_is_refused_cheaply),
		cmocka_unit_test(test_json_cost_counts_items_keys_and_strings),
		cmocka_unit_test(test_result_json_has_every_field),
		cmocka_unit_test(test_ids_are_echoed_exactly),
		cmocka_unit_test(test_json_escapes_c1_and_bidi_controls),
		cmocka_unit_test(test_result_json_escapes_what_cjson_prints_raw),
		cmocka_unit_test(test_stream_frames_fast_as_cjson),
		cmocka_unit_test(test_long_output_quoted_as_cjson),
		cmocka_unit_test(test_stream_frames_deflated),
		cmocka_unit_test(test_escape_data_every_byte),
		cmocka_unit_test(test_put_lines),
		cmocka_unit_test(test_put_lines_base64),
		cmocka_unit_test(test_json_data_span),
		cmocka_unit_test(test_base64_decode),
		cmocka_unit_test(test_base64_encode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
