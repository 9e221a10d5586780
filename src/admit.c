/*
 * admit.c - boot admission: a burst of session starts on one loop boots a
 * bounded number of interpreters at a time, and the rest wait their turn.
 *
 * A thousand sandboxes forked at once share the CPUs a thousand ways: each
 * takes a thousand times longer to boot, and all of them miss their boot
 * deadline together. Booting twice as many as there are CPUs keeps them busy
 * (a boot waits on I/O too), and a boot's deadline counts from its
 * admission. Past ADMIT_QUEUE_CAP waiting, a start is refused with a reason
 * rather than queued for minutes. One gate per loop, in a list shared by the
 * process's loops (under a mutex), like the reaper; it holds a handle only
 * while boots run or wait, so an idle loop can close.
 */
#define _GNU_SOURCE
#include "admit.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct admit_gate {
	struct admit_gate *next;
	uv_loop_t *loop;
	uv_timer_t kick; /* admits the waiting from the loop, never inside a caller's call */
	unsigned booting;
	struct admit_ticket *head, *tail;
	size_t queued;
	bool closing;
};

static pthread_mutex_t admit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct admit_gate *gates;

unsigned admit_limit(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 2 ? (unsigned)(2 * cpus) : 4;
}

static struct admit_gate *admit_find(uv_loop_t *loop)
{
	struct admit_gate *g;
	for (g = gates; g && g->loop != loop; g = g->next)
		;
	return g;
}

static void admit_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

/* An idle gate goes, and with it its handle. */
static void admit_maybe_end(struct admit_gate *g)
{
	if (g->booting || g->queued || g->closing)
		return;
	g->closing = true;
	pthread_mutex_lock(&admit_lock);
	for (struct admit_gate **l = &gates; *l; l = &(*l)->next) {
		if (*l == g) {
			*l = g->next;
			break;
		}
	}
	pthread_mutex_unlock(&admit_lock);
	uv_close((uv_handle_t *)&g->kick, admit_closed_cb);
}

static void admit_kick_cb(uv_timer_t *h)
{
	struct admit_gate *g = h->data;
	while (g->head && g->booting < admit_limit()) {
		struct admit_ticket *t = g->head;
		g->head = t->next;
		if (!g->head)
			g->tail = NULL;
		g->queued--;
		t->queued = false;
		t->admitted = true;
		g->booting++;
		t->cb(t); /* (may release it again at once: a spawn that failed) */
	}
	admit_maybe_end(g);
}

int admit_request(uv_loop_t *loop, struct admit_ticket *t, void (*cb)(struct admit_ticket *t))
{
	*t = (struct admit_ticket){.cb = cb};
	pthread_mutex_lock(&admit_lock);
	struct admit_gate *g = admit_find(loop);
	if (!g && (g = calloc(1, sizeof(*g)))) {
		g->loop = loop;
		uv_timer_init(loop, &g->kick);
		g->kick.data = g;
		g->next = gates;
		gates = g;
	}
	pthread_mutex_unlock(&admit_lock);
	if (!g)
		return -ENOMEM;
	t->gate = g;
	if (g->booting < admit_limit() && !g->head) {
		g->booting++;
		t->admitted = true;
		return 0;
	}
	if (g->queued >= ADMIT_QUEUE_CAP) {
		t->gate = NULL;
		admit_maybe_end(g);
		return -EAGAIN;
	}
	t->queued = true;
	if (g->tail)
		g->tail->next = t;
	else
		g->head = t;
	g->tail = t;
	g->queued++;
	return 1;
}

void admit_release(struct admit_ticket *t)
{
	struct admit_gate *g = t->gate;
	if (!g)
		return;
	t->gate = NULL;
	if (t->queued) {
		struct admit_ticket *prev = NULL;
		for (struct admit_ticket **l = &g->head; *l; prev = *l, l = &(*l)->next) {
			if (*l == t) {
				*l = t->next;
				if (g->tail == t)
					g->tail = prev;
				break;
			}
		}
		g->queued--;
		t->queued = false;
	} else if (t->admitted) {
		t->admitted = false;
		g->booting--;
		if (g->head) {
			uv_timer_start(&g->kick, admit_kick_cb, 0, 0);
			return;
		}
	}
	admit_maybe_end(g);
}

void admit_counts(uv_loop_t *loop, unsigned *booting, size_t *queued)
{
	pthread_mutex_lock(&admit_lock);
	struct admit_gate *g = admit_find(loop);
	*booting = g ? g->booting : 0;
	*queued = g ? g->queued : 0;
	pthread_mutex_unlock(&admit_lock);
}
