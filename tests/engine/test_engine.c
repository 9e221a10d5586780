/*
 * test_engine.c - the engine through its public API, several sessions on one
 * libuv loop as a server holds them: cancel, the running snippet, restarts,
 * the sandbox's memory. Every wait is for an event, bounded by a watchdog
 * timer; every test ends by checking that the loop closes cleanly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h" /* (the engine's own: how many boot, how many wait) */
#include "ptybox.h"

#define WAIT_MS	   30000
#define MAX_EVENTS 64

struct result {
	uint64_t id;
	enum ptybox_status status;
	char message[256];
	char value[64];
	bool state_lost;
	uint64_t at_ns;
};

struct sess {
	ptybox_session *s;
	int ready, restarting, fatal, closed;
	char restart_why[256], fatal_msg[512];
	char events[MAX_EVENTS]; /* R(eady), S (restarting), r(esult), F(atal) */
	size_t nevents;
	struct result results[MAX_EVENTS];
	size_t nresults;
};

static uv_loop_t loop;
static bool timed_out;

/* The engine's malloc and calloc (linked with --wrap): the fail_at-th call
 * from now fails, once; 0: none. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
static int fail_at;

static bool alloc_fails(void)
{
	return fail_at > 0 && --fail_at == 0;
}

void *__wrap_malloc(size_t n)
{
	return alloc_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return alloc_fails() ? NULL : __real_calloc(k, n);
}

static void note(struct sess *t, char ev)
{
	if (t->nevents < MAX_EVENTS - 1)
		t->events[t->nevents++] = ev;
}

static void on_ready(ptybox_session *s, void *data)
{
	struct sess *t = data;
	t->ready++;
	note(t, 'R');
}

static void on_restarting(ptybox_session *s, const char *why, void *data)
{
	struct sess *t = data;
	t->restarting++;
	snprintf(t->restart_why, sizeof(t->restart_why), "%s", why);
	note(t, 'S');
}

static void on_result(ptybox_session *s, const struct ptybox_result *r, void *data)
{
	struct sess *t = data;
	note(t, 'r');
	if (t->nresults == MAX_EVENTS)
		return;
	struct result *o = &t->results[t->nresults++];
	o->id = r->id;
	o->status = r->status;
	o->state_lost = r->state_lost;
	o->at_ns = uv_hrtime();
	snprintf(o->message, sizeof(o->message), "%s", r->message ? r->message : "");
	snprintf(o->value, sizeof(o->value), "%s", r->value_text ? r->value_text : "");
}

static void on_fatal(ptybox_session *s, const char *message, void *data)
{
	struct sess *t = data;
	t->fatal++;
	note(t, 'F');
	snprintf(t->fatal_msg, sizeof(t->fatal_msg), "%s", message);
	print_message("fatal: %s\n", message);
}

static void on_closed(ptybox_session *s, void *data)
{
	struct sess *t = data;
	t->closed++;
}

static const struct ptybox_callbacks callbacks = {
	.on_ready = on_ready,
	.on_result = on_result,
	.on_fatal = on_fatal,
	.on_closed = on_closed,
	.on_restarting = on_restarting,
};

static void watchdog_cb(uv_timer_t *h)
{
	timed_out = true;
}

/* Runs the loop until *counter reaches n (or the watchdog fires). */
static void wait_for(int *counter, int n)
{
	uv_timer_t dog;
	uv_timer_init(&loop, &dog);
	uv_timer_start(&dog, watchdog_cb, WAIT_MS, 0);
	timed_out = false;
	while (*counter < n && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&dog, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_false(timed_out);
}

static void wait_results(struct sess *t, size_t n)
{
	int have = (int)t->nresults;
	uv_timer_t dog;
	uv_timer_init(&loop, &dog);
	uv_timer_start(&dog, watchdog_cb, WAIT_MS, 0);
	timed_out = false;
	while (t->nresults < n && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&dog, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	(void)have;
	assert_false(timed_out);
}

static void start(struct sess *t, const char *via)
{
	struct ptybox_options o;
	char err[512] = "";
	ptybox_options_init(&o);
	o.via = via;
	o.busy_poll_us = 0;
	memset(t, 0, sizeof(*t));
	int rc = ptybox_session_new(&loop, &o, &callbacks, t, &t->s, err, sizeof(err));
	if (rc < 0)
		fail_msg("ptybox_session_new: %s", err);
}

static void exec(struct sess *t, uint64_t id, const char *code)
{
	assert_int_equal(ptybox_session_exec(t->s, id, code, strlen(code), -1, false), 0);
}

static void finish(struct sess *t)
{
	ptybox_session_close(t->s);
	wait_for(&t->closed, 1);
}

static int loop_setup(void **state)
{
	return uv_loop_init(&loop);
}

static int loop_teardown(void **state)
{
	/* Bounded: a failed test leaves sessions behind. */
	uv_timer_t dog;
	uv_timer_init(&loop, &dog);
	uv_timer_start(&dog, watchdog_cb, WAIT_MS, 0);
	uv_unref((uv_handle_t *)&dog);
	timed_out = false;
	while (uv_loop_alive(&loop) && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&dog, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	int rc = uv_loop_close(&loop);
	if (rc != 0)
		print_error("the loop has handles left open\n");
	return rc;
}

static void test_status_name(void **state)
{
	assert_string_equal(ptybox_status_name(PTYBOX_CANCELLED), "cancelled");
}

/* A queued snippet is removed before the call returns; the running one is not. */
static void test_cancel(void **state)
{
	struct sess t;
	uint64_t id = 0;
	start(&t, "none");
	wait_for(&t.ready, 1);
	assert_false(ptybox_session_running(t.s, &id));
	exec(&t, 1, "import time\ntime.sleep(60)");
	exec(&t, 2, "2");
	exec(&t, 3, "3");
	assert_true(ptybox_session_running(t.s, &id));
	assert_int_equal(id, 1);
	assert_int_equal(ptybox_session_cancel(t.s, 1), -EBUSY);
	assert_int_equal(ptybox_session_cancel(t.s, 2), 0);
	assert_int_equal(t.nresults, 1); /* told inside the call */
	assert_int_equal(t.results[0].id, 2);
	assert_int_equal(t.results[0].status, PTYBOX_CANCELLED);
	assert_string_equal(t.results[0].message, "cancelled before it started");
	assert_int_equal(ptybox_session_cancel(t.s, 2), -ENOENT);
	assert_int_equal(ptybox_session_cancel(t.s, 99), -ENOENT);
	assert_int_equal(ptybox_session_pending(t.s), 2);
	assert_int_equal(ptybox_session_interrupt(t.s), 0);
	wait_results(&t, 3);
	assert_int_equal(t.results[1].id, 1);
	assert_int_equal(t.results[1].status, PTYBOX_INTERRUPTED);
	assert_int_equal(t.results[2].id, 3);
	assert_int_equal(t.results[2].status, PTYBOX_OK);
	assert_string_equal(t.results[2].value, "3");
	assert_false(ptybox_session_running(t.s, NULL));
	assert_int_equal(ptybox_session_cancel(t.s, 3), -ENOENT);
	finish(&t);
}

/* A file run as python3 runs it: its argv and name, its threads awaited (an
 * executor left open too: shut down, as at exit, but a new one works),
 * sys.exit(0) ok; and the terminal's size, before the first snippet and
 * after a resize. */
static void test_exec_file_and_resize(void **state)
{
	struct sess t;
	start(&t, "none");
	assert_int_equal(ptybox_session_resize(t.s, 0, 5), -EINVAL);
	assert_int_equal(ptybox_session_resize(t.s, 90, 30), 0); /* (before it is up) */
	const char *argv[] = {"prog.py", "x", NULL};
	const char *code =
		"import sys, threading, time\n"
		"from concurrent.futures import ThreadPoolExecutor\n"
		"ex = ThreadPoolExecutor(1)\n"
		"f = ex.submit(time.sleep, 0.1)\n"
		"done = []\n"
		"threading.Thread(target=lambda: (time.sleep(0.2), done.append(1))).start()\n"
		"sys.exit(0)\n";
	assert_int_equal(
		ptybox_session_exec_file(t.s, 1, code, strlen(code), -1, false, "prog.py", argv),
		0);
	exec(&t, 2,
	     "(sys.argv, __file__, done, f.done(), "
	     "ThreadPoolExecutor(1).submit(lambda: 7).result(timeout=5))");
	exec(&t, 3, "import os; os.environ['COLUMNS'], os.environ['LINES']");
	wait_results(&t, 3);
	assert_int_equal(t.results[0].status, PTYBOX_OK);
	assert_string_equal(t.results[1].value, "(['prog.py', 'x'], 'prog.py', [1], True, 7)");
	assert_string_equal(t.results[2].value, "('90', '30')");
	assert_int_equal(ptybox_session_resize(t.s, 132, 50), 0);
	exec(&t, 4, "os.environ['COLUMNS'], os.environ['LINES']");
	wait_results(&t, 4);
	assert_string_equal(t.results[3].value, "('132', '50')");
	finish(&t);
}

/* A snippet queued while the interpreter starts has not started: it can go. */
static void test_cancel_while_starting(void **state)
{
	struct sess t;
	start(&t, "none");
	exec(&t, 1, "1");
	exec(&t, 2, "2");
	assert_int_equal(ptybox_session_cancel(t.s, 1), 0);
	assert_int_equal(t.nresults, 1);
	assert_int_equal(t.results[0].status, PTYBOX_CANCELLED);
	wait_results(&t, 2);
	assert_int_equal(t.results[1].id, 2);
	assert_int_equal(t.results[1].status, PTYBOX_OK);
	finish(&t);
}

/* A crash tells on_restarting, then on_ready for the fresh interpreter. */
static void test_restarting(void **state)
{
	struct sess t;
	start(&t, "none");
	wait_for(&t.ready, 1);
	exec(&t, 1, "import os\nos._exit(3)");
	wait_results(&t, 1);
	assert_int_equal(t.results[0].status, PTYBOX_CRASHED);
	assert_true(t.results[0].state_lost);
	assert_int_equal(t.restarting, 1);
	assert_non_null(strstr(t.restart_why, "died"));
	assert_int_equal(t.ready, 2);
	assert_non_null(strstr(t.events, "RSR"));
	/* a restart asked for says so too */
	assert_int_equal(ptybox_session_restart(t.s), 0);
	exec(&t, 2, "2");
	wait_results(&t, 2);
	assert_int_equal(t.restarting, 2);
	assert_string_equal(t.restart_why, "restart asked");
	assert_int_equal(t.ready, 3);
	finish(&t);
}

static void test_memory(void **state)
{
	struct sess none, local;
	start(&none, "none");
	start(&local, "local");
	assert_int_equal(ptybox_session_memory(none.s), -ENOTSUP);
	wait_for(&none.ready, 1);
	wait_for(&local.ready, 1);
	assert_int_equal(ptybox_session_memory(none.s), -ENOTSUP);
	long long m = ptybox_session_memory(local.s);
	if (geteuid() == 0) {
		print_message("memory: %lld bytes\n", m);
		assert_true(m > 1 << 20);
	} else {
		assert_int_equal(m, -ENOTSUP);
	}
	finish(&none);
	finish(&local);
}

/* Whatever allocation fails, a constructor that fails says why in err. */
static void test_err_always_filled(void **state)
{
	struct ptybox_options o;
	struct sess t = {0};
	ptybox_options_init(&o);
	o.via = "none";
	for (int at = 1; at <= 4; at++) {
		char err[256];
		memset(err, 0x55, sizeof(err)); /* as an uninitialised buffer */
		err[sizeof(err) - 1] = '\0';
		fail_at = at;
		int rc = ptybox_session_new(&loop, &o, &callbacks, &t, &t.s, err, sizeof(err));
		fail_at = 0;
		if (rc == 0) {
			finish(&t);
			memset(&t, 0, sizeof(t));
			continue;
		}
		assert_int_equal(rc, -ENOMEM);
		assert_string_equal(err, "out of memory");
	}
	for (int at = 1; at <= 12; at++) {
		char err[256];
		ptybox_pool *p;
		memset(err, 0x55, sizeof(err));
		err[sizeof(err) - 1] = '\0';
		fail_at = at;
		int rc = ptybox_pool_new(&loop, &o, 1, &p, err, sizeof(err));
		fail_at = 0;
		if (rc == 0) {
			ptybox_pool_close(p);
			continue;
		}
		print_message("pool, allocation %d failing: %s\n", at, err);
		assert_true(strlen(err) < sizeof(err) - 1 && err[0] != 0x55);
	}
}

/* Runs the loop until fn(arg) is true: each turn is some event of the loop's. */
static void wait_until(bool (*fn)(void *), void *arg)
{
	uv_timer_t dog;
	uv_timer_init(&loop, &dog);
	uv_timer_start(&dog, watchdog_cb, WAIT_MS, 0);
	timed_out = false;
	while (!fn(arg) && !timed_out)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&dog, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_false(timed_out);
}

static bool pool_is_ready(void *p)
{
	return ptybox_pool_ready(p) == 1;
}

/* A pooled interpreter goes only to a session with the options it was
 * started with: one with another memory limit (or environment) starts its own. */
static void test_pool_takes_only_alike_sessions(void **state)
{
	struct ptybox_options po, o;
	char err[256];
	ptybox_pool *pool;
	struct sess other, env, alike;
	char *const env_list[] = {"A=1", NULL};
	ptybox_options_init(&po);
	po.via = "none";
	po.memory = 512 << 20;
	assert_int_equal(ptybox_pool_new(&loop, &po, 1, &pool, err, sizeof(err)), 0);
	wait_until(pool_is_ready, pool);

	ptybox_options_init(&o);
	o.via = "none";
	o.pool = pool; /* memory: 1G */
	memset(&other, 0, sizeof(other));
	assert_int_equal(
		ptybox_session_new(&loop, &o, &callbacks, &other, &other.s, err, sizeof(err)), 0);
	wait_for(&other.ready, 1);
	assert_int_equal(ptybox_pool_ready(pool), 1); /* not taken */

	o.memory = po.memory;
	o.env = env_list;
	memset(&env, 0, sizeof(env));
	assert_int_equal(ptybox_session_new(&loop, &o, &callbacks, &env, &env.s, err, sizeof(err)),
			 0);
	wait_for(&env.ready, 1);
	assert_int_equal(ptybox_pool_ready(pool), 1);

	o.env = NULL;
	memset(&alike, 0, sizeof(alike));
	assert_int_equal(
		ptybox_session_new(&loop, &o, &callbacks, &alike, &alike.s, err, sizeof(err)), 0);
	wait_for(&alike.ready, 1);
	assert_int_equal(ptybox_pool_ready(pool), 0); /* taken; the next one boots */
	exec(&alike, 1, "6 * 7");
	wait_results(&alike, 1);
	assert_string_equal(alike.results[0].value, "42");
	finish(&other);
	finish(&env);
	finish(&alike);
	ptybox_pool_close(pool);
}

/* --with: a session that fails to be made (here its --log) is in no one's
 * sharers: the session it named closes cleanly (ASan: no use after free), and
 * one made after it shares the sandbox. */
static void test_with_a_failed_new_leaves_no_trace(void **state)
{
	struct sess a, b;
	struct ptybox_options o;
	char err[512] = "";
	ptybox_session *failed = NULL;
	start(&a, "local");
	wait_for(&a.ready, 1);
	ptybox_options_init(&o);
	o.with = a.s;
	o.log_path = "/nonexistent/folder/b.log";
	assert_int_not_equal(
		ptybox_session_new(&loop, &o, &callbacks, &b, &failed, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "--log /nonexistent/folder/b.log"));
	o.log_path = NULL;
	o.busy_poll_us = 0;
	memset(&b, 0, sizeof(b));
	assert_int_equal(ptybox_session_new(&loop, &o, &callbacks, &b, &b.s, err, sizeof(err)), 0);
	wait_for(&b.ready, 1);
	exec(&a, 1, "open('/tmp/from-a', 'w').write('a') and 'written'");
	wait_results(&a, 1);
	exec(&b, 1, "open('/tmp/from-a').read()");
	wait_results(&b, 1);
	assert_string_equal(b.results[0].value, "'a'");
	finish(&a);
	finish(&b);
}

static int all_ready;
static void on_ready_count(ptybox_session *s, void *data)
{
	all_ready++;
}

static void on_fatal_count(ptybox_session *s, const char *message, void *data)
{
	struct sess *t = data;
	t->fatal++;
	snprintf(t->fatal_msg, sizeof(t->fatal_msg), "%s", message);
}

static int all_closed;
static void on_closed_count(ptybox_session *s, void *data)
{
	all_closed++;
}

/* A burst of starts boots admit_limit() at a time; the rest wait (no
 * deadline runs for them), and past the queue's cap a start is refused
 * with the reason. */
static void test_boot_admission(void **state)
{
	enum { CAP = 40 + ADMIT_QUEUE_CAP + 256 };
	static struct sess t[CAP];
	const struct ptybox_callbacks cb = {.on_ready = on_ready_count,
					    .on_fatal = on_fatal_count,
					    .on_closed = on_closed_count};
	struct ptybox_options o;
	char err[256];
	unsigned limit = admit_limit(), booting;
	size_t queued, burst = 40, N = burst + limit + ADMIT_QUEUE_CAP + 16;
	assert_true(N <= CAP);
	ptybox_options_init(&o);
	o.via = "none";
	all_ready = all_closed = 0;
	for (size_t i = 0; i < burst; i++)
		assert_int_equal(
			ptybox_session_new(&loop, &o, &cb, &t[i], &t[i].s, err, sizeof(err)), 0);
	uv_run(&loop, UV_RUN_NOWAIT); /* (sessions start on the next turn) */
	admit_counts(&loop, &booting, &queued);
	assert_int_equal(booting, limit);
	assert_int_equal(queued, burst - limit);
	wait_for(&all_ready, (int)burst);
	for (size_t i = 0; i < burst; i++)
		assert_int_equal(t[i].fatal, 0);

	/* Past the queue's cap: limit boot, ADMIT_QUEUE_CAP wait, 16 are refused. */
	for (size_t i = burst; i < N; i++)
		assert_int_equal(
			ptybox_session_new(&loop, &o, &cb, &t[i], &t[i].s, err, sizeof(err)), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	admit_counts(&loop, &booting, &queued);
	assert_int_equal(queued, ADMIT_QUEUE_CAP);
	size_t refused = 0;
	for (size_t i = burst; i < N; i++)
		if (t[i].fatal) {
			refused++;
			assert_non_null(strstr(t[i].fatal_msg, "(the boot queue's limit)"));
		}
	assert_int_equal(refused, N - burst - limit - ADMIT_QUEUE_CAP);
	for (size_t i = 0; i < N; i++)
		ptybox_session_close(t[i].s);
	wait_for(&all_closed, N);
	admit_counts(&loop, &booting, &queued);
	assert_int_equal(booting + queued, 0);
}

/* A deadline ptybox enforces says so, not "killed by signal 9". */
static void test_boot_deadline_names_itself(void **state)
{
	struct ptybox_options o;
	struct sess t = {0};
	char err[256];
	ptybox_options_init(&o);
	o.via = "exec:sleep 100;";
	o.boot_timeout = 0.3;
	assert_int_equal(ptybox_session_new(&loop, &o, &callbacks, &t, &t.s, err, sizeof(err)), 0);
	wait_for(&t.fatal, 1);
	print_message("fatal: %s\n", t.fatal_msg);
	assert_non_null(strstr(t.fatal_msg, "did not start within 0.3 s (the boot deadline)"));
	assert_null(strstr(t.fatal_msg, "signal"));
	finish(&t);
}

static bool file_has(const char *path, const char *what)
{
	char buf[65536];
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

/* Each session's debug log is its own: two sessions, two files, each with
 * its own lines only (not one file for the process, the first path winning). */
static void test_log_per_session(void **state)
{
	char dir[] = "/tmp/ptybox-test-log-XXXXXX", a_log[64], b_log[64], err[256];
	struct sess a = {0}, b = {0};
	struct ptybox_options o;
	assert_non_null(mkdtemp(dir));
	snprintf(a_log, sizeof(a_log), "%s/a.log", dir);
	snprintf(b_log, sizeof(b_log), "%s/b.log", dir);
	ptybox_options_init(&o);
	o.via = "none";
	o.log_path = a_log;
	assert_int_equal(ptybox_session_new(&loop, &o, &callbacks, &a, &a.s, err, sizeof(err)), 0);
	o.log_path = b_log;
	assert_int_equal(ptybox_session_new(&loop, &o, &callbacks, &b, &b.s, err, sizeof(err)), 0);
	exec(&a, 111, "1");
	exec(&b, 222, "2");
	wait_results(&a, 1);
	wait_results(&b, 1);
	finish(&a);
	finish(&b);
	assert_true(file_has(a_log, "session: result id=111"));
	assert_false(file_has(a_log, "id=222"));
	assert_true(file_has(b_log, "session: result id=222"));
	assert_false(file_has(b_log, "id=111"));
	assert_true(file_has(b_log, "instance ")); /* the instance's lines go along */
	unlink(a_log);
	unlink(b_log);
	rmdir(dir);
}

static void count_signal_cb(uv_handle_t *h, void *arg)
{
	if (h->type == UV_SIGNAL && !uv_is_closing(h))
		++*(int *)arg;
}

/* Reads "Key:\t..." of /proc/PID/status into buf; false if there is none. */
static bool proc_status(long pid, const char *key, char *buf, size_t len)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	FILE *f = fopen(path, "re");
	bool found = false;
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t k = strlen(key);
		if (strncmp(line, key, k) == 0 && line[k] == ':') {
			snprintf(buf, len, "%s", line + k + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool descends_from(long pid, long ancestor)
{
	char buf[64];
	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		if (!proc_status(pid, "PPid", buf, sizeof(buf)))
			return false;
		pid = strtol(buf, NULL, 10);
		if (pid == ancestor)
			return true;
	}
	return false;
}

/* The host pid of our descendant that is nspid in a pid namespace of its own. */
static long host_pid_of(long nspid)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	long found = -1;
	while (d && found < 0 && (de = readdir(d))) {
		char buf[128], *last;
		long pid = strtol(de->d_name, NULL, 10);
		if (pid <= 0 || !proc_status(pid, "NSpid", buf, sizeof(buf)))
			continue;
		last = strrchr(buf, '\t');
		if (last && last != strchr(buf, '\t') && strtol(last, NULL, 10) == nspid &&
		    descends_from(pid, getpid()))
			found = pid;
	}
	if (d)
		closedir(d);
	return found;
}

/* Closing a session whose relay does not answer, whose code ignores SIGTERM
 * and keeps children, leaves the loop free: another session answers while
 * it goes, and the close itself returns at once. One SIGCHLD handler serves
 * both sessions, and reaps none of our own children. */
static void test_close_does_not_block_the_loop(void **state)
{
	struct sess a, b;
	if (geteuid() != 0)
		skip(); /* (finding the relay by its namespace pid wants every /proc) */
	start(&a, "local");
	start(&b, "none");
	wait_for(&a.ready, 1);
	wait_for(&b.ready, 1);
	int signals = 0;
	uv_walk(&loop, count_signal_cb, &signals);
	assert_int_equal(signals, 1);
	exec(&a, 1,
	     "import os, signal, subprocess\n"
	     "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
	     "kids = [subprocess.Popen(['sh', '-c', 'trap \"\" TERM; sleep 1000'],\n"
	     "        start_new_session=True) for i in range(5)]\n"
	     "stat = open('/proc/%d/stat' % os.getppid()).read()\n"
	     "int(stat.rsplit(')', 1)[1].split()[1])  # the template's parent: the relay");
	wait_results(&a, 1);
	assert_int_equal(a.results[0].status, PTYBOX_OK);
	long relay = host_pid_of(strtol(a.results[0].value, NULL, 10));
	assert_true(relay > 0);
	assert_int_equal(kill((pid_t)relay, SIGSTOP), 0); /* the shutdown goes unanswered */

	pid_t mine = fork(); /* a child of the host program's, not ptybox's */
	if (mine == 0)
		_exit(7);
	uint64_t t0 = uv_hrtime();
	ptybox_session_close(a.s);
	uint64_t close_ms = (uv_hrtime() - t0) / 1000000;
	print_message("close returned in %llu ms\n", (unsigned long long)close_ms);
	assert_true(close_ms < 100);
	exec(&b, 1, "1 + 1");
	wait_results(&b, 1);
	uint64_t answer_ms = (b.results[0].at_ns - t0) / 1000000;
	print_message("the other session answered %llu ms after the close\n",
		      (unsigned long long)answer_ms);
	assert_int_equal(a.closed, 0); /* still being torn down */
	assert_string_equal(b.results[0].value, "2");
	assert_true(answer_ms < 400);
	wait_for(&a.closed, 1);
	print_message("closed %llu ms after the close\n",
		      (unsigned long long)((uv_hrtime() - t0) / 1000000));
	int wstatus = 0;
	assert_int_equal(waitpid(mine, &wstatus, 0), mine); /* not stolen by the reaper */
	assert_true(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 7);
	assert_int_equal(kill((pid_t)relay, 0), -1); /* every process of it gone */
	finish(&b);
	signals = 0;
	uv_walk(&loop, count_signal_cb, &signals);
	assert_int_equal(signals, 0); /* no child left: no handler either */
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_name),
		cmocka_unit_test_setup_teardown(test_cancel, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_exec_file_and_resize, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_while_starting, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_restarting, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_memory, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_close_does_not_block_the_loop, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_err_always_filled, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_pool_takes_only_alike_sessions, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_boot_admission, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_with_a_failed_new_leaves_no_trace, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_log_per_session, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_boot_deadline_names_itself, loop_setup,
						loop_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
