/*
 * session_files.c - a session's file ops (put, get, files, remove): items of
 * its queue like snippets, sent when the session is idle, each ending in one
 * on_file (ptybox.h).
 *
 * An op's request is encoded when it is queued (a put's data escaped into its
 * data lines then, so the copy the caller is owed is that line, some 7% over
 * the data), and handed to the instance when its turn comes. A get's data
 * comes as binary frames before its file frame; it is kept here, within what
 * the request asked (more is the driver's fault: an error), until the file
 * frame ends the op. session.c owns the state machine (the queue, the timeout,
 * what a death does); this file owns the ops' own state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "protocol.h"
#include "session_files.h"
#include "session_internal.h"

void session_file_free(struct file_op *f)
{
	if (!f)
		return;
	free(f->line);
	free(f->data);
	free(f);
}

/* A file op's queue item, its request encoded: NULL with *rc set on failure. */
static struct exec *session_file_new(ptybox_session *s, uint64_t id, const char *op, int *rc)
{
	struct exec *e = NULL;
	*rc = 0;
	if (s->state == S_FATAL || s->state == S_CLOSING)
		*rc = -EPIPE;
	else if (s->queued >= SESSION_QUEUE_CAP)
		*rc = -ENOBUFS;
	else if (!(e = calloc(1, sizeof(*e))) || !(e->file = calloc(1, sizeof(*e->file)))) {
		free(e);
		e = NULL;
		*rc = -ENOMEM;
	}
	if (!e)
		return NULL;
	e->id = id;
	e->timeout = s->opts.timeout;
	e->file->op = op;
	return e;
}

static void session_file_drop(struct exec *e)
{
	session_file_free(e->file);
	free(e);
}

int ptybox_session_put(ptybox_session *s, uint64_t id, const char *path, const void *data,
		       size_t len, int mode, uint64_t offset, bool more)
{
	return ptybox_session_put_upload(s, id, path, data, len, mode, offset, more, NULL, false);
}

/* The put's queue item, its lines already encoded (takes ownership of line). */
static int session_put_item(ptybox_session *s, uint64_t id, size_t len, char *line, size_t line_len)
{
	int rc;
	struct exec *e = session_file_new(s, id, "put", &rc);
	if (!e) {
		free(line);
		return rc;
	}
	e->file->line = line;
	e->file->line_len = line_len;
	e->file->put_len = len;
	/* A transfer must not lose the state for taking long: 1 s more a MiB. */
	if (e->timeout > 0)
		e->timeout += (double)len / (1 << 20);
	s->put_waiting += len;
	session_push(s, e);
	return 0;
}

int ptybox_session_put_upload(ptybox_session *s, uint64_t id, const char *path, const void *data,
			      size_t len, int mode, uint64_t offset, bool more, const char *upload,
			      bool abort)
{
	if (len > SESSION_PUT_CAP - s->put_waiting)
		return -ENOBUFS;
	if (s->state == S_FATAL || s->state == S_CLOSING)
		return -EPIPE;
	char *line;
	size_t line_len;
	int rc = protocol_put_lines(id, path, data, len, mode, offset, more, upload, abort, &line,
				    &line_len);
	if (rc < 0)
		return rc;
	return session_put_item(s, id, len, line, line_len);
}

int session_put_base64(ptybox_session *s, uint64_t id, const char *path, const char *b64,
		       size_t b64len, int mode, uint64_t offset, bool more, const char *upload)
{
	if (protocol_base64_decoded_len(b64, b64len) > SESSION_PUT_CAP - s->put_waiting)
		return -ENOBUFS;
	if (s->state == S_FATAL || s->state == S_CLOSING)
		return -EPIPE;
	char *line;
	size_t line_len, len;
	int rc = protocol_put_lines_base64(id, path, b64, b64len, mode, offset, more, upload, false,
					   &line, &line_len, &len);
	if (rc < 0)
		return rc;
	return session_put_item(s, id, len, line, line_len);
}

int ptybox_session_get(ptybox_session *s, uint64_t id, const char *path, uint64_t offset,
		       uint64_t length)
{
	int rc;
	struct exec *e = session_file_new(s, id, "get", &rc);
	if (!e)
		return rc;
	uint64_t max = s->opts.max_get;
	rc = protocol_get_line(id, path, offset, length, max, &e->file->line, &e->file->line_len);
	if (rc < 0) {
		session_file_drop(e);
		return rc;
	}
	e->file->want = length ? length : max ? max : UINT64_MAX;
	session_push(s, e);
	return 0;
}

static int session_file_simple(ptybox_session *s, uint64_t id, const char *op, const char *path,
			       bool recursive)
{
	int rc;
	struct exec *e = session_file_new(s, id, op, &rc);
	if (!e)
		return rc;
	rc = protocol_file_line(id, op, path, recursive, &e->file->line, &e->file->line_len);
	if (rc < 0) {
		session_file_drop(e);
		return rc;
	}
	session_push(s, e);
	return 0;
}

int ptybox_session_files(ptybox_session *s, uint64_t id, const char *path, bool recursive)
{
	return session_file_simple(s, id, "files", path, recursive);
}

int ptybox_session_remove(ptybox_session *s, uint64_t id, const char *path, bool recursive)
{
	return session_file_simple(s, id, "remove", path, recursive);
}

/* Room for n more bytes of a get's data (out of memory is fatal, as elsewhere). */
static unsigned char *session_file_room(struct file_op *f, size_t n)
{
	if (f->cap - f->len < n) {
		size_t cap = f->cap ? f->cap : (size_t)1 << 20;
		while (cap - f->len < n)
			cap *= 2;
		unsigned char *p = realloc(f->data, cap);
		if (!p)
			abort();
		f->data = p;
		f->cap = cap;
	}
	return f->data + f->len;
}

void session_file_binary(struct file_op *f, const char *data, size_t len, bool z)
{
	if (f->bad || strcmp(f->op, "get") != 0)
		return;
	if (!z) {
		if (len > f->want - f->len) {
			f->bad = true;
			return;
		}
		memcpy(session_file_room(f, len), data, len);
		f->len += len;
		return;
	}
	uLongf n = PROTOCOL_BINARY_Z_MAX;
	if (n > f->want - f->len)
		n = (uLongf)(f->want - f->len);
	unsigned char *to = session_file_room(f, n);
	if (uncompress(to, &n, (const Bytef *)data, (uLong)len) != Z_OK) {
		f->bad = true;
		return;
	}
	f->len += n;
}

char *session_file_error(const struct file_op *f, const char *message, const char *code)
{
	static const char died[] = "the interpreter died";
	char error[1024];
	/* "the interpreter died during put (...); restarted ..." */
	if (strncmp(message, died, sizeof(died) - 1) == 0)
		snprintf(error, sizeof(error), "%s during %s%s", died, f->op,
			 message + sizeof(died) - 1);
	else
		snprintf(error, sizeof(error), "%s: %s", f->op, message);
	cJSON *o = cJSON_CreateObject();
	char *json = NULL;
	if (o && cJSON_AddFalseToObject(o, "ok") && cJSON_AddStringToObject(o, "error", error) &&
	    cJSON_AddStringToObject(o, "errno", code))
		json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return json;
}

char *session_file_reply(struct file_op *f, cJSON *root)
{
	cJSON_DeleteItemFromObjectCaseSensitive(root, "type");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "id");
	/* The path's own type is "kind" on the terminal, where "type" is the frame's. */
	cJSON *kind = cJSON_DetachItemFromObjectCaseSensitive(root, "kind");
	if (kind)
		cJSON_AddItemToObject(root, "type", kind);
	bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "ok"));
	if (ok && f->bad)
		return session_file_error(f,
					  "the driver sent more data than asked, or data that "
					  "did not inflate",
					  "EIO");
	if (ok && strcmp(f->op, "get") == 0) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "length");
		if (!cJSON_IsNumber(n) || n->valuedouble != (double)f->len)
			return session_file_error(f, "the driver's length is not the data's",
						  "EIO");
	}
	return cJSON_PrintUnformatted(root);
}
