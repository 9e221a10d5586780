/* Unit tests for mount.c: --mount values as users type them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mount.h"

static char err[PATH_MAX + 256];

static int parse(const char *spec, struct mount_spec *m)
{
	err[0] = '\0';
	return mount_parse(spec, m, err, sizeof(err));
}

static void test_splits(void **state)
{
	struct mount_spec m;
	assert_int_equal(parse("/a:/data", &m), 0);
	assert_string_equal(m.host, "/a");
	assert_string_equal(m.inside, "/data");
	assert_false(m.rw);
	assert_int_equal(parse("./out:/tmp/out:rw", &m), 0);
	assert_string_equal(m.host, "./out");
	assert_string_equal(m.inside, "/tmp/out");
	assert_true(m.rw);
	assert_int_equal(parse("/a:/b:ro", &m), 0);
	assert_false(m.rw);
	/* a colon in the host's path; the sandbox's normalised */
	assert_int_equal(parse("/x:y:/srv//data/./in/:rw", &m), 0);
	assert_string_equal(m.host, "/x:y");
	assert_string_equal(m.inside, "/srv/data/in");
	assert_true(m.rw);
}

static void test_refuses(void **state)
{
	struct mount_spec m;
	static const struct {
		const char *spec, *says;
	} bad[] = {
		{"/a", "expected HOST_PATH:SANDBOX_PATH"},
		{":/data", "expected HOST_PATH:SANDBOX_PATH"},
		{"/a:", "expected HOST_PATH:SANDBOX_PATH"},
		{"/a:data", "must be absolute"},
		{"/a:/data:rx", "expected :ro or :rw"},
		{"/a:ro", "expected HOST_PATH:SANDBOX_PATH"},
		{"/a:/x/../y", "'..'"},
		{"/a:/", "/ is the sandbox's own"},
		{"/a://", "/ is the sandbox's own"},
		{"/a:/tmp", "/tmp is the sandbox's own"},
		{"/a:/tmp/", "/tmp is the sandbox's own"},
		{"/a:/usr", "provides /usr"},
		{"/a:/usr/local/lib", "provides /usr"},
		{"/a:/proc", "provides /proc"},
		{"/a:/dev/shm", "provides /dev"},
		{"/a:/etc", "provides /etc"},
		{"/a:/sys/x", "provides /sys"},
		{"/a:/lib64", "provides /lib64"},
		{"/a:/run", "provides /run/ptybox"}, /* above one of them */
		{"/a:/run/ptybox/wheels", "provides /run/ptybox"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].spec, &m), -EINVAL);
		if (!strstr(err, bad[i].says))
			fail_msg("%s: got '%s', wanted '%s'", bad[i].spec, err, bad[i].says);
	}
	/* below /tmp, or at a name that only starts like a system folder */
	assert_int_equal(parse("/a:/tmp/data", &m), 0);
	assert_int_equal(parse("/a:/usrdata", &m), 0);
	assert_int_equal(parse("/a:/run/other", &m), 0);
}

static void test_list(void **state)
{
	char *one[] = {"/a:/data", "/b:/tmp/x:rw", NULL};
	char *twice[] = {"/a:/data", "/b:/data/", NULL};
	char *bad[] = {"/a:/data", "/b:/usr", NULL};
	char *many[MOUNT_MAX + 2];
	static char specs[MOUNT_MAX + 1][32];

	assert_int_equal(mount_check_list(NULL, false, err, sizeof(err)), 0);
	assert_int_equal(mount_check_list(one, true, err, sizeof(err)), 0);
	assert_int_equal(mount_check_list(twice, false, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "/data is mounted twice"));
	assert_int_equal(mount_check_list(bad, false, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--mount /b:/usr:"));
	for (int i = 0; i <= MOUNT_MAX; i++) {
		snprintf(specs[i], sizeof(specs[i]), "/a:/m/%d", i);
		many[i] = specs[i];
	}
	many[MOUNT_MAX] = NULL;
	assert_int_equal(mount_check_list(many, false, err, sizeof(err)), 0);
	many[MOUNT_MAX] = specs[MOUNT_MAX];
	many[MOUNT_MAX + 1] = NULL;
	assert_int_equal(mount_check_list(many, false, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 64"));
}

static void test_paths(void **state)
{
	assert_true(mount_path_ok("/tmp/work"));
	assert_true(mount_path_ok("/"));
	assert_true(mount_path_ok("/a/..b/c.."));
	assert_false(mount_path_ok(""));
	assert_false(mount_path_ok("tmp"));
	assert_false(mount_path_ok("/a/../b"));
	assert_false(mount_path_ok("/a/.."));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splits),
		cmocka_unit_test(test_refuses),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
