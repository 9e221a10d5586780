/* Unit tests for cp_path.c: cp's sides, destination names, the names a session may hand
 * us, its errors in words, and the progress bar's text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cp_path.h"

static void test_sides(void **state)
{
	struct cp_side s;
	char err[256];
	assert_int_equal(cp_parse_side("work:/tmp/x", &s, err, sizeof(err)), 0);
	assert_int_equal(s.kind, CP_SESSION);
	assert_string_equal(s.name, "work");
	assert_string_equal(s.path, "/tmp/x");
	assert_int_equal(cp_parse_side("my session:a b", &s, err, sizeof(err)), 0);
	assert_int_equal(s.kind, CP_SESSION);
	assert_string_equal(s.name, "my session");
	assert_string_equal(s.path, "a b");
	assert_int_equal(cp_parse_side("s:", &s, err, sizeof(err)), 0);
	assert_string_equal(s.path, ".");
	/* the first ':' splits: the rest is the session's path */
	assert_int_equal(cp_parse_side("s:a:b", &s, err, sizeof(err)), 0);
	assert_string_equal(s.name, "s");
	assert_string_equal(s.path, "a:b");
	/* host paths: no ':', a '/' before it, or nothing before it */
	const char *host[] = {"file.txt", "./a:b", "/tmp/a:b", "dir/x:y", ":x", "."};
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) {
		assert_int_equal(cp_parse_side(host[i], &s, err, sizeof(err)), 0);
		assert_int_equal(s.kind, CP_HOST);
		assert_string_equal(s.path, host[i]);
	}
	assert_int_equal(cp_parse_side("-", &s, err, sizeof(err)), 0);
	assert_int_equal(s.kind, CP_STDIO);
	assert_int_equal(cp_parse_side("", &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(cp_parse_side("-x:y", &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "./-x:y"));
	assert_int_equal(cp_parse_side("a\tb:y", &s, err, sizeof(err)), -EINVAL);
}

static void test_basename(void **state)
{
	size_t n;
	const char *b = cp_basename("/tmp/x.csv", &n);
	assert_int_equal(n, 5);
	assert_memory_equal(b, "x.csv", 5);
	b = cp_basename("dir/sub//", &n);
	assert_int_equal(n, 3);
	assert_memory_equal(b, "sub", 3);
	cp_basename("/", &n);
	assert_int_equal(n, 0);
	b = cp_basename("x", &n);
	assert_int_equal(n, 1);
	assert_true(cp_basename_is_contents("."));
	assert_true(cp_basename_is_contents("a/.."));
	assert_true(cp_basename_is_contents("/"));
	assert_true(cp_basename_is_contents("a/./"));
	assert_false(cp_basename_is_contents("a/.x"));
	assert_true(cp_ends_slash("a/"));
	assert_false(cp_ends_slash("a"));
	assert_false(cp_ends_slash(""));
}

static void test_dest_path(void **state)
{
	char out[64];
	assert_int_equal(cp_dest_path("out", true, "/tmp/data.csv", out, sizeof(out)), 0);
	assert_string_equal(out, "out/data.csv");
	assert_int_equal(cp_dest_path("out/", true, "tree/", out, sizeof(out)), 0);
	assert_string_equal(out, "out/tree");
	assert_int_equal(cp_dest_path("/", true, "x", out, sizeof(out)), 0);
	assert_string_equal(out, "/x");
	assert_int_equal(cp_dest_path("new.csv", false, "/tmp/data.csv", out, sizeof(out)), 0);
	assert_string_equal(out, "new.csv");
	/* "." into a folder: what is in it goes there */
	assert_int_equal(cp_dest_path("out", true, ".", out, sizeof(out)), 0);
	assert_string_equal(out, "out");
	assert_int_equal(cp_dest_path("out", true, "a name with spaces", out, sizeof(out)), 0);
	assert_string_equal(out, "out/a name with spaces");
	char longer[100];
	memset(longer, 'x', 99);
	longer[99] = '\0';
	assert_int_equal(cp_dest_path("out", true, longer, out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(cp_dest_path(longer, false, "x", out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(cp_join("", "x", 1, out, sizeof(out)), 0);
	assert_string_equal(out, "x");
	assert_int_equal(cp_join("a//", "x", 1, out, sizeof(out)), 0);
	assert_string_equal(out, "a/x");
}

static void test_unsafe_names(void **state)
{
	const char *ok[] = {"a",   "a/b.txt", "sub/dir/file", ".hidden", "a..b",
			    "..x", "a\nb",    "x/...",	      "a b/c d"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_null(cp_unsafe_name(ok[i], strlen(ok[i])));
	const char *bad[] = {"",     "/etc/passwd", "..",  "../x",  "a/../../x", "a/..",
			     "a//b", "a/",	    "./a", "a/./b", "/"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_non_null(cp_unsafe_name(bad[i], strlen(bad[i])));
	assert_non_null(cp_unsafe_name("a\0/../x", 7));
	char huge[4098];
	memset(huge, 'a', sizeof(huge));
	assert_non_null(cp_unsafe_name(huge, sizeof(huge)));
	assert_null(cp_unsafe_name(huge, 4096));
}

static void test_reason(void **state)
{
	char buf[128];
	assert_string_equal(cp_reason("ENOENT", "get: /tmp/x: No such file or directory", "get",
				      buf, sizeof(buf)),
			    strerror(ENOENT));
	assert_string_equal(cp_reason("EFBIG", "get: /tmp/x is 9 bytes, past --max-get 1", "get",
				      buf, sizeof(buf)),
			    "/tmp/x is 9 bytes, past --max-get 1");
	assert_string_equal(
		cp_reason("EINVAL", "not a regular file (a fifo)", "get", buf, sizeof(buf)),
		"not a regular file (a fifo)");
	assert_string_equal(cp_reason(NULL, NULL, "get", buf, sizeof(buf)), "failed");
	assert_int_equal(cp_errno_by_name("ENOSPC"), ENOSPC);
	assert_int_equal(cp_errno_by_name("EWHAT"), 0);
	assert_int_equal(cp_errno_by_name(NULL), 0);
}

static void test_progress(void **state)
{
	char buf[96];
	cp_progress_text(buf, sizeof(buf), 12600000, 20000000, 2.0);
	assert_string_equal(buf, "12.6 MB / 20.0 MB   63%  6.3 MB/s");
	cp_progress_text(buf, sizeof(buf), 5000000, 0, 1.0);
	assert_string_equal(buf, "5.0 MB  5.0 MB/s");
	cp_progress_text(buf, sizeof(buf), 0, 10, 0);
	assert_string_equal(buf, "0.0 MB / 0.0 MB    0%  - MB/s");
	cp_progress_text(buf, sizeof(buf), 30, 10, 1);
	assert_non_null(strstr(buf, "100%"));
	char tiny[8];
	assert_int_equal(cp_progress_text(tiny, sizeof(tiny), 1, 2, 1), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sides),	  cmocka_unit_test(test_basename),
		cmocka_unit_test(test_dest_path), cmocka_unit_test(test_unsafe_names),
		cmocka_unit_test(test_reason),	  cmocka_unit_test(test_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
