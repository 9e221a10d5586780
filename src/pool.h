/* pool.h - interpreters booted ahead of use (the public ptybox_pool). */
#ifndef PTYBOX_POOL_H
#define PTYBOX_POOL_H

#include "ptybox.h"

struct instance;

struct transport_options;

/* An instance, now the caller's (adopt it): a ready one if any (its state
 * says), else the one closest to ready; NULL if the pool is empty, or if its
 * interpreters were not started with the options the caller's would be (the
 * transport's, and the frame size that max_payload says). The pool starts
 * another in its place. */
struct instance *pool_take(ptybox_pool *p, const struct transport_options *topts,
			   size_t max_payload);

#endif
