/*
 * reap.h - one reaper of child processes per libuv loop: a single SIGCHLD
 * handler that waitpid()s, by pid, the children it was told of.
 */
#ifndef PTYBOX_REAP_H
#define PTYBOX_REAP_H

#include <sys/types.h>

#include <uv.h>

struct reaper;
struct reap_watch;

typedef void (*reap_cb)(struct reap_watch *w, int wstatus);

/* Embedded in its owner; valid from reap_watch until its callback or reap_unwatch. */
struct reap_watch {
	struct reap_watch *next;
	struct reaper *reaper;
	pid_t pid;
	reap_cb cb;
	void *data;
};

/* Reaps pid (a child of this process) on loop's reaper; cb gets its wait
 * status once, and the watch is over then. A child that has already exited
 * is reaped here, cb called before this returns. 0 or -ENOMEM. */
int reap_watch(uv_loop_t *loop, struct reap_watch *w, pid_t pid, reap_cb cb, void *data);
/* Stops watching (the child is left to whoever waits for it). Fine twice. */
void reap_unwatch(struct reap_watch *w);

#endif
