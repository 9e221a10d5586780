/* pool.h - interpreters booted ahead of use (the public ptybox_pool). */
#ifndef PTYBOX_POOL_H
#define PTYBOX_POOL_H

#include "ptybox.h"

struct instance;

/* A ready instance, now the caller's (adopt it), or NULL if none is ready.
 * The pool starts another in its place. */
struct instance *pool_take(ptybox_pool *p);

#endif
