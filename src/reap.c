/*
 * reap.c - the reaper: one SIGCHLD handler per loop for every child ptybox
 * starts on it, however many sessions the loop holds.
 *
 * A uv_signal_t per child would make every SIGCHLD wake every session's
 * handler; one handler per loop walks the list of children it knows and
 * calls waitpid() for each by pid, never waitpid(-1), which would steal the
 * children of whoever else shares the process (libuv's uv_spawn, a host
 * program). The handler exists while it has children to watch: an idle loop
 * holds no handle of ours, and can close.
 *
 * Reapers live in a list shared by every loop of the process, under a mutex
 * (loops may run on threads of their own); a reaper's children are touched
 * only on its loop's thread.
 */
#define _GNU_SOURCE
#include "reap.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>

struct reaper {
	struct reaper *next;
	uv_loop_t *loop;
	uv_signal_t sigchld;
	struct reap_watch *head;
	size_t watched;
};

static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reaper *reapers;

static void reap_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

/* Whether w's child has exited; reaps it if so. */
static bool reap_try(struct reap_watch *w, int *wstatus)
{
	pid_t r;
	do
		r = waitpid(w->pid, wstatus, WNOHANG);
	while (r < 0 && errno == EINTR);
	/* ECHILD: someone else reaped it; tell its owner rather than wait for good. */
	if (r < 0 && errno == ECHILD)
		*wstatus = 0;
	return r == w->pid || (r < 0 && errno == ECHILD);
}

static void reap_unlink(struct reap_watch *w)
{
	struct reaper *r = w->reaper;
	if (!r)
		return;
	for (struct reap_watch **l = &r->head; *l; l = &(*l)->next) {
		if (*l == w) {
			*l = w->next;
			break;
		}
	}
	w->reaper = NULL;
	if (--r->watched > 0)
		return;
	/* The last child: the handler goes, and the loop may end. */
	pthread_mutex_lock(&reap_lock);
	for (struct reaper **l = &reapers; *l; l = &(*l)->next) {
		if (*l == r) {
			*l = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&reap_lock);
	uv_close((uv_handle_t *)&r->sigchld, reap_closed_cb);
}

static void reap_sigchld_cb(uv_signal_t *h, int signum)
{
	struct reaper *r = h->data;
	int wstatus;
	/* A callback may unwatch or add children (or end the reaper, whose memory
	 * stays until its close callback): walk again after each. */
	for (struct reap_watch *w = r->head; w;) {
		if (!reap_try(w, &wstatus)) {
			w = w->next;
			continue;
		}
		reap_unlink(w);
		w->cb(w, wstatus);
		w = r->watched ? r->head : NULL;
	}
}

int reap_watch(uv_loop_t *loop, struct reap_watch *w, pid_t pid, reap_cb cb, void *data)
{
	struct reaper *r;
	*w = (struct reap_watch){.pid = pid, .cb = cb, .data = data};
	pthread_mutex_lock(&reap_lock);
	for (r = reapers; r && r->loop != loop; r = r->next)
		;
	if (!r && (r = calloc(1, sizeof(*r)))) {
		r->loop = loop;
		uv_signal_init(loop, &r->sigchld);
		r->sigchld.data = r;
		uv_signal_start(&r->sigchld, reap_sigchld_cb, SIGCHLD);
		r->next = reapers;
		reapers = r;
	}
	pthread_mutex_unlock(&reap_lock);
	if (!r)
		return -ENOMEM;
	w->reaper = r;
	w->next = r->head;
	r->head = w;
	r->watched++;
	/* A SIGCHLD that came before the watch is not lost: look now. */
	int wstatus;
	if (reap_try(w, &wstatus)) {
		reap_unlink(w);
		cb(w, wstatus);
	}
	return 0;
}

void reap_unwatch(struct reap_watch *w)
{
	reap_unlink(w);
}
