/*
 * pool.c - a warm pool: interpreters started ahead, so that a session (or a
 * restart) gets one that is already past its boot.
 *
 * Starting an interpreter costs a fork, a sandbox and a Python start-up; a
 * pool pays that while nobody waits. Each slot holds one instance, booting
 * or ready. One that dies while it waits is replaced, unless it died during
 * start-up: then the slot stays empty until the next take, so a broken
 * set-up cannot turn into a loop of forks.
 */
#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"
#include "log.h"
#include "transport.h"

#define POOL_MAX 64
/* How long after a take the pool starts the interpreter that replaces it. */
#define POOL_REFILL_MS 1

struct ptybox_pool {
	uv_loop_t *loop;
	struct transport_options topts;
	size_t max_payload;
	double boot_timeout;
	unsigned size;
	bool closing;
	/* A take refills a moment later: the fork of the next sandbox must not
	 * stand between the session taken for and its ready. */
	uv_timer_t refill;
	struct instance *slot[POOL_MAX];
};

static void pool_fill(ptybox_pool *p);

static int pool_slot_of(ptybox_pool *p, struct instance *in)
{
	for (unsigned i = 0; i < p->size; i++)
		if (p->slot[i] == in)
			return (int)i;
	return -1;
}

static void pool_on_ready(struct instance *in)
{
}

static void pool_on_frame(struct instance *in, const char *payload, size_t len)
{
}

static void pool_on_dead(struct instance *in, const char *why, bool during_boot)
{
	ptybox_pool *p = in->data;
	int i = pool_slot_of(p, in);
	log_msg("pool: an interpreter died while waiting (%s)", why);
	instance_close(in);
	if (i >= 0)
		p->slot[i] = NULL;
	if (!during_boot)
		pool_fill(p);
}

static const struct instance_callbacks pool_instance_callbacks = {
	.on_ready = pool_on_ready,
	.on_frame = pool_on_frame,
	.on_dead = pool_on_dead,
};

static void pool_fill(ptybox_pool *p)
{
	for (unsigned i = 0; i < p->size && !p->closing; i++) {
		if (p->slot[i])
			continue;
		char err[512];
		if (instance_start(p->loop, &p->topts, p->max_payload, p->boot_timeout,
				   &pool_instance_callbacks, p, NULL, &p->slot[i], err,
				   sizeof(err)) < 0) {
			log_msg("pool: %s", err);
			return;
		}
	}
}

int ptybox_pool_new(uv_loop_t *loop, const struct ptybox_options *o, unsigned size,
		    ptybox_pool **out, char *err, size_t errlen)
{
	if (size == 0 || size > POOL_MAX) {
		snprintf(err, errlen, "pool size %u: expected 1 to %d", size, POOL_MAX);
		return -EINVAL;
	}
	ptybox_pool *p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = transport_options_from(o, &p->topts, err, errlen);
	if (rc < 0) {
		free(p);
		return rc;
	}
	p->loop = loop;
	p->size = size;
	p->max_payload = PROTOCOL_MAX_PAYLOAD(o->max_output);
	p->boot_timeout = o->boot_timeout;
	/* The first one fails here, with its reason, if nothing can start. */
	rc = instance_start(loop, &p->topts, p->max_payload, p->boot_timeout,
			    &pool_instance_callbacks, p, NULL, &p->slot[0], err, errlen);
	if (rc < 0) {
		free(p);
		return rc;
	}
	uv_timer_init(p->loop, &p->refill);
	p->refill.data = p;
	uv_unref((uv_handle_t *)&p->refill);
	pool_fill(p);
	*out = p;
	return 0;
}

static void pool_refill_cb(uv_timer_t *t)
{
	pool_fill(t->data);
}

struct instance *pool_take(ptybox_pool *p, const struct transport_options *topts,
			   size_t max_payload)
{
	int best = -1;
	/* Another session's sandbox (say, a bigger memory limit or --net) would
	 * be a quiet escalation: such a session starts its own. */
	if (max_payload != p->max_payload || !transport_options_equal(topts, &p->topts))
		return NULL;
	for (unsigned i = 0; i < p->size; i++) {
		struct instance *in = p->slot[i];
		if (!in || in->state > I_READY)
			continue;
		/* A ready one, else the one that has booted the longest. */
		if (best < 0 || (in->state == I_READY && p->slot[best]->state != I_READY) ||
		    (in->state != I_READY && p->slot[best]->state != I_READY &&
		     in->started_ns < p->slot[best]->started_ns))
			best = (int)i;
	}
	struct instance *in = best >= 0 ? p->slot[best] : NULL;
	if (best >= 0)
		p->slot[best] = NULL;
	uv_timer_start(&p->refill, pool_refill_cb, POOL_REFILL_MS, 0);
	return in;
}

unsigned ptybox_pool_ready(const ptybox_pool *p)
{
	unsigned n = 0;
	for (unsigned i = 0; i < p->size; i++)
		n += p->slot[i] && p->slot[i]->state == I_READY;
	return n;
}

static void pool_closed_cb(uv_handle_t *h)
{
	free(h->data);
}

void ptybox_pool_close(ptybox_pool *p)
{
	p->closing = true;
	for (unsigned i = 0; i < p->size; i++)
		if (p->slot[i])
			instance_close(p->slot[i]);
	/* Instances free themselves once their handles closed; the pool goes
	 * once its timer has. */
	uv_close((uv_handle_t *)&p->refill, pool_closed_cb);
}
