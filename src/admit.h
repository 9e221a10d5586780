/*
 * admit.h - boot admission: how many interpreters of one loop start at once.
 */
#ifndef PTYBOX_ADMIT_H
#define PTYBOX_ADMIT_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#define ADMIT_QUEUE_CAP 4096 /* boots waiting, past which a start is refused */

struct admit_gate;
struct admit_ticket;

/* Embedded in the instance that boots; cb says it may go on now. */
struct admit_ticket {
	struct admit_ticket *next;
	struct admit_gate *gate;
	void (*cb)(struct admit_ticket *t);
	bool queued, admitted;
};

/* 0: admitted now; 1: queued, cb follows from the loop once a boot ends;
 * -EAGAIN: ADMIT_QUEUE_CAP boots wait already; -ENOMEM. */
int admit_request(uv_loop_t *loop, struct admit_ticket *t, void (*cb)(struct admit_ticket *t));
/* The boot is over (ready, dead or closed), or the queued one leaves. Fine twice. */
void admit_release(struct admit_ticket *t);
/* Boots under way and waiting on loop (tests, and a server's ls). */
void admit_counts(uv_loop_t *loop, unsigned *booting, size_t *queued);
/* How many boots run at once: twice the CPUs, at least 4. */
unsigned admit_limit(void);

#endif
