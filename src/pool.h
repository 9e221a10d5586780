/* pool.h - interpreters booted ahead of use (the public ptybox_pool). */
#ifndef PTYBOX_POOL_H
#define PTYBOX_POOL_H

#include "ptybox.h"

struct instance;

/* An instance, now the caller's (adopt it): a ready one if any (its state
 * says), else the one closest to ready; NULL if the pool is empty. The pool
 * starts another in its place. */
struct instance *pool_take(ptybox_pool *p);

#endif
