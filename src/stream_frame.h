#ifndef PTYBOX_STREAM_FRAME_H
#define PTYBOX_STREAM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* A stream frame's payload in the relay's own shape (stream_frame.c), read
 * without cJSON's parser: 1 and *root (the caller's) and *id when it is one;
 * 0 when it is not that shape (parse it as any frame); -ENOMEM. */
int stream_frame_parse(const char *payload, size_t len, cJSON **root, uint64_t *id);

#endif
