/*
 * session_files.h - what the server asks of a session's file ops beyond ptybox.h: a put whose
 * data comes as base64 (the server's JSON line) and goes to the terminal's data lines without
 * being decoded into a buffer of its own first (session_files.c).
 */
#ifndef PTYBOX_SESSION_FILES_H
#define PTYBOX_SESSION_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptybox.h"

/* As ptybox_session_put_upload (no abort), the data as b64len characters of standard base64,
 * which the caller keeps: -EILSEQ when they are not base64. */
int session_put_base64(ptybox_session *s, uint64_t id, const char *path, const char *b64,
		       size_t b64len, int mode, uint64_t offset, bool more, const char *upload);

#endif
