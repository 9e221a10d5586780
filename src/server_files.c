/*
 * server_files.c - the server's file ops (put, get, files, remove): a request's members
 * checked, the session's op queued (ptybox_session_put ...), and its on_file answered to whoever
 * asked (ptybox-protocol(7), SERVER PROTOCOL).
 *
 * A put's data and a get's come as base64 in the JSON line. A big put's data is cut out of its
 * line before the rest is parsed (server_client_line) and decoded straight into the terminal's
 * data lines (session_put_base64): the loop reads 8 MiB of it once, not four times over
 * (cJSON's scan and copy, the decode, the escape). A get's reply line is built by hand
 * (base64 straight into the line), not printed by cJSON: a 64 MiB file is an 86 MB
 * line, which cJSON would copy and escape several times over.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "protocol.h"
#include "server_internal.h"
#include "session_files.h"

static const cJSON *srv_file_member(const cJSON *req, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(req, name);
}

/* A member that must be an integer from 0 to max (absent: ok, *v untouched). */
static bool srv_file_uint(const cJSON *req, const char *name, uint64_t max, uint64_t *v)
{
	const cJSON *m = srv_file_member(req, name);
	if (!m)
		return true;
	if (!cJSON_IsNumber(m) || m->valuedouble < 0 || m->valuedouble > (double)max ||
	    m->valuedouble != (double)(uint64_t)m->valuedouble)
		return false;
	*v = (uint64_t)m->valuedouble;
	return true;
}

static bool srv_file_bool(const cJSON *req, const char *name, bool *v)
{
	const cJSON *m = srv_file_member(req, name);
	if (m && !cJSON_IsBool(m))
		return false;
	*v = cJSON_IsTrue(m);
	return true;
}

/* ---- unfinished uploads and their clients ---- */

static void srv_upload_forget(struct srv_session *ss, const char *token)
{
	for (struct srv_upload **p = &ss->uploads, *u; (u = *p); p = &u->next)
		if (strcmp(u->token, token) == 0) {
			*p = u->next;
			free(u);
			return;
		}
}

/* Drops the upload in the kernel (no one waits for the reply). */
static void srv_upload_abort(struct srv_session *ss, const char *token)
{
	if (ss->state != SS_DEAD && ss->state != SS_CLOSING)
		(void)ptybox_session_put_upload(ss->ps, ++ss->next_file, ".", NULL, 0, -1, 0, false,
						token, true);
}

static void srv_upload_note(struct srv_session *ss, struct server_client *c, const char *token)
{
	srv_upload_forget(ss, token);
	struct srv_upload *u = calloc(1, sizeof(*u));
	if (!u) {
		srv_upload_abort(ss, token); /* (it would not be aborted at the client's end) */
		return;
	}
	u->client = c;
	u->used_ms = uv_now(ss->server->loop);
	snprintf(u->token, sizeof(u->token), "%s", token);
	u->next = ss->uploads;
	ss->uploads = u;
}

/* The unfinished uploads of ss, and of c among them: those kept (the ones the
 * kernel let go unused forgotten) and those being started. */
static void srv_uploads_count(struct srv_session *ss, const struct server_client *c, size_t *all,
			      size_t *mine)
{
	uint64_t now = uv_now(ss->server->loop);
	*all = *mine = 0;
	for (struct srv_upload **p = &ss->uploads, *u; (u = *p);) {
		if (now - u->used_ms > SRV_UPLOAD_IDLE_MS) {
			*p = u->next;
			free(u);
			continue;
		}
		++*all;
		*mine += u->client == c;
		p = &u->next;
	}
	for (const struct srv_waiter *w = ss->files; w; w = w->next)
		if (w->upload) {
			++*all;
			*mine += w->client == c;
		}
}

void srv_uploads_client_gone(struct srv_session *ss, struct server_client *c)
{
	for (struct srv_upload **p = &ss->uploads, *u; (u = *p);)
		if (u->client == c) {
			*p = u->next;
			srv_upload_abort(ss, u->token);
			free(u);
		} else {
			p = &u->next;
		}
}

void srv_uploads_free(struct srv_session *ss)
{
	while (ss->uploads) {
		struct srv_upload *u = ss->uploads;
		ss->uploads = u->next;
		free(u);
	}
}

void srv_session_file(struct srv_session *ss, struct server_client *c, const cJSON *req,
		      const cJSON *id, const char *op, const struct srv_data *cut)
{
	const cJSON *path = srv_file_member(req, "path");
	bool is_put = strcmp(op, "put") == 0, is_get = strcmp(op, "get") == 0;
	uint64_t mode = UINT64_MAX, offset = 0, length = 0;
	bool more = false, recursive = false;
	if (!path && strcmp(op, "files") == 0)
		path = NULL; /* (".") */
	else if (!cJSON_IsString(path) || !path->valuestring[0] ||
		 strlen(path->valuestring) > PROTOCOL_PATH_MAX)
		return srv_reply_error(c, id, "usage",
				       "%s needs \"path\": a string of 1 to %d bytes", op,
				       PROTOCOL_PATH_MAX);
	const char *p = path ? path->valuestring : ".";
	if ((is_put || is_get) && !srv_file_uint(req, "offset", (uint64_t)1 << 62, &offset))
		return srv_reply_error(c, id, "usage", "\"offset\" must be an integer >= 0");
	if (is_get && !srv_file_uint(req, "length", (uint64_t)1 << 62, &length))
		return srv_reply_error(c, id, "usage", "\"length\" must be an integer >= 0");
	if (is_put &&
	    (!srv_file_uint(req, "mode", 07777, &mode) || !srv_file_bool(req, "more", &more)))
		return srv_reply_error(
			c, id, "usage",
			"\"mode\" must be an integer from 0 to 4095 (07777), \"more\" "
			"true or false");
	const cJSON *upload = is_put ? srv_file_member(req, "upload") : NULL;
	bool abort_it = false;
	if (is_put &&
	    ((upload && (!cJSON_IsString(upload) || !protocol_upload_ok(upload->valuestring))) ||
	     !srv_file_bool(req, "abort", &abort_it) || (abort_it && !upload)))
		return srv_reply_error(c, id, "usage",
				       "\"upload\" must be an upload's token (1 to %d hex digits, "
				       "as a put with \"more\" said), \"abort\" true or false "
				       "(true needs \"upload\")",
				       PROTOCOL_UPLOAD_MAX);
	if (!is_put && !is_get && !srv_file_bool(req, "recursive", &recursive))
		return srv_reply_error(c, id, "usage", "\"recursive\" must be true or false");
	const cJSON *data = srv_file_member(req, "data");
	if (is_put && !abort_it && !cJSON_IsString(data))
		return srv_reply_error(c, id, "usage", "put needs \"data\": a base64 string");
	if (ss->state == SS_DEAD)
		return srv_reply_error(c, id, "dead",
				       "session '%s' is dead (its interpreter cannot start): "
				       "restart or kill it",
				       ss->name);
	/* One more unfinished upload: within this client's share and the kernel's
	 * cap, so that it never pushes out anyone's (the kernel drops the oldest). */
	bool starts = is_put && more && !upload && !abort_it;
	size_t all = 0, mine = 0;
	if (starts)
		srv_uploads_count(ss, c, &all, &mine);
	if (mine >= SRV_CLIENT_UPLOADS)
		return srv_reply_error(
			c, id, "busy",
			"put: this client has %d unfinished uploads in session '%s', "
			"the most (finish or abort one)",
			SRV_CLIENT_UPLOADS, ss->name);
	if (all >= SRV_UPLOADS)
		return srv_reply_error(c, id, "busy",
				       "put: session '%s' has %d unfinished uploads, the most its "
				       "kernel keeps (try again once one ends)",
				       ss->name, SRV_UPLOADS);
	unsigned char *bytes = NULL;
	size_t nbytes = 0;
	if (!is_put || abort_it)
		cut = NULL;
	if (is_put && cJSON_IsString(data) && !cut) {
		size_t n = strlen(data->valuestring);
		if (!(bytes = malloc(n / 4 * 3 + 3)))
			return srv_reply_error(c, id, "nomem", "out of memory");
		if (protocol_base64_decode(bytes, data->valuestring, n, &nbytes) != 0) {
			free(bytes);
			return srv_reply_error(c, id, "usage", "put: \"data\" is not base64");
		}
	}
	struct srv_waiter *w = srv_waiter_new(c, id, false);
	if (!w) {
		free(bytes);
		return srv_reply_error(c, id, "nomem", "out of memory");
	}
	w->query = ++ss->next_file;
	w->upload = starts;
	int rc;
	if (cut)
		rc = session_put_base64(ss->ps, w->query, p, cut->b64, cut->len,
					mode == UINT64_MAX ? -1 : (int)mode, offset, more,
					upload ? upload->valuestring : NULL);
	else if (is_put)
		rc = ptybox_session_put_upload(ss->ps, w->query, p, bytes, abort_it ? 0 : nbytes,
					       mode == UINT64_MAX ? -1 : (int)mode, offset, more,
					       upload ? upload->valuestring : NULL, abort_it);
	else if (is_get)
		rc = ptybox_session_get(ss->ps, w->query, p, offset, length);
	else if (strcmp(op, "files") == 0)
		rc = ptybox_session_files(ss->ps, w->query, p, recursive);
	else
		rc = ptybox_session_remove(ss->ps, w->query, p, recursive);
	free(bytes);
	if (rc == 0 && upload && (abort_it || !more)) /* (its end: nothing to abort later) */
		srv_upload_forget(ss, upload->valuestring);
	if (rc < 0) {
		srv_waiter_free(w);
		if (rc == -EILSEQ && !protocol_utf8_valid(cut->b64, cut->len))
			return srv_reply_error(c, NULL, "malformed",
					       "malformed request: not valid UTF-8");
		if (rc == -EILSEQ)
			return srv_reply_error(c, id, "usage", "put: \"data\" is not base64");
		if (rc == -EINVAL)
			return srv_reply_error(c, id, "usage", "%s: bad path or mode", op);
		return srv_reply_error(c, id, rc == -ENOBUFS ? "busy" : "not_running", "%s: %s", op,
				       rc == -ENOBUFS ? "the session's queue is full (4096 items, "
							"or 256 MiB of put data)"
						      : "the session is not running");
	}
	struct srv_waiter **tail = &ss->files; /* (answered in order) */
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
}

/* The reply line for a file op: its reply's members, with a get's data as base64. */
static void srv_file_answer(struct server_client *c, const cJSON *id, cJSON *reply,
			    const void *bytes, size_t len)
{
	bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
	if (!ok) {
		cJSON *error = cJSON_DetachItemFromObjectCaseSensitive(reply, "error");
		cJSON *code = cJSON_DetachItemFromObjectCaseSensitive(reply, "errno");
		cJSON_Delete(reply);
		reply = cJSON_CreateObject();
		if (reply && error)
			cJSON_AddItemToObject(reply, "error", error);
		else
			cJSON_Delete(error);
		if (reply)
			cJSON_AddStringToObject(reply, "code", "file");
		if (reply && code)
			cJSON_AddItemToObject(reply, "errno", code);
		else
			cJSON_Delete(code);
	} else {
		cJSON_DeleteItemFromObjectCaseSensitive(reply, "ok");
	}
	size_t rn = 0;
	char *rest = srv_print(reply, &rn); /* "{...}" */
	/* (a get's reply has "eof": its data, "" for none) */
	bool get = ok && cJSON_GetObjectItemCaseSensitive(reply, "eof");
	cJSON_Delete(reply);
	size_t b64 = get ? sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL) : 0;
	char *line = rest ? malloc(32 + b64 + rn) : NULL;
	if (!line) {
		cJSON_free(rest);
		return srv_reply_error(c, id, "nomem", "out of memory");
	}
	size_t n = 0;
	if (ok) {
		memcpy(line, "\"ok\":true,", 10);
		n = 10;
	}
	if (b64) {
		memcpy(line + n, "\"data\":\"", 8);
		n += 8;
		n += protocol_base64_encode(line + n, bytes, len);
		memcpy(line + n, "\",", 2);
		n += 2;
	}
	if (rn > 2) {
		memcpy(line + n, rest + 1, rn - 1); /* (its members and '}') */
		n += rn - 1;
	} else if (n) {
		line[n - 1] = '}'; /* (no members: the last comma closes it) */
	} else {
		line[n++] = '}';
	}
	cJSON_free(rest);
	srv_send_joined(c, id, line, n);
	free(line);
}

void srv_on_file(ptybox_session *ps, uint64_t fid, const char *reply, const void *bytes, size_t len,
		 void *data)
{
	(void)ps;
	struct srv_session *ss = data;
	struct srv_waiter **link = &ss->files, *w;
	while ((w = *link) && w->query != fid)
		link = &w->next;
	cJSON *o = cJSON_Parse(reply);
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(o, "upload");
	bool unfinished = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "more")) &&
			  cJSON_IsString(token) && protocol_upload_ok(token->valuestring);
	if (!w) { /* (its client is gone: so is its upload) */
		if (unfinished)
			srv_upload_abort(ss, token->valuestring);
		cJSON_Delete(o);
		return;
	}
	*link = w->next;
	if (unfinished)
		srv_upload_note(ss, w->client, token->valuestring);
	if (cJSON_IsObject(o))
		srv_file_answer(w->client, w->id, o, bytes, len);
	else {
		cJSON_Delete(o);
		srv_reply_error(w->client, w->id, "nomem", "out of memory");
	}
	srv_waiter_free(w);
	srv_maybe_idle(ss->server);
}
