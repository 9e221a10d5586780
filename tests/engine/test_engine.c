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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	char restart_why[256];
	char events[MAX_EVENTS]; /* R(eady), S (restarting), r(esult), F(atal) */
	size_t nevents;
	struct result results[MAX_EVENTS];
	size_t nresults;
};

static uv_loop_t loop;
static bool timed_out;

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
	uv_run(&loop, UV_RUN_DEFAULT);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_name),
		cmocka_unit_test_setup_teardown(test_cancel, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_cancel_while_starting, loop_setup,
						loop_teardown),
		cmocka_unit_test_setup_teardown(test_restarting, loop_setup, loop_teardown),
		cmocka_unit_test_setup_teardown(test_memory, loop_setup, loop_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
