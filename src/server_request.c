/*
 * server_request.c - a request line as a JSON object, and a request's session
 * options.
 *
 * A malformed line is answered with an error and changes nothing. cJSON ends
 * its strings at a NUL, so a request with \u0000 in its id is refused whole
 * (the id could not come back as sent), and lone surrogates (\ud800, which
 * Python's json.dumps writes for such a str) are answered under the id.
 *
 * Options come as an object whose keys are the long options of `ptybox run`
 * ({"memory": "512M", "net": true, "env": ["K=V"], "mount": ["/a:/data"]}) and
 * go through the very parser of the command line, so both say the same about
 * a bad value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "server_internal.h"

/* The JSON value that is the whole of text (trailing blanks aside), or NULL. */
static cJSON *srv_parse_whole(const char *text, size_t len)
{
	const char *end = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts(text, len, &end, false);
	while (v && end < text + len && (*end == ' ' || *end == '\t' || *end == '\r'))
		end++;
	if (v && end != text + len) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

static const char srv_nul_id[] =
	"the request's id contains a NUL character (\\u0000): it could not come back whole, "
	"refused";

/* Whether member name (id, op), as cJSON read it from line (which has a NUL
 * somewhere), lost what follows a NUL. */
static bool srv_member_cut(const char *line, size_t len, const cJSON *id, const char *name)
{
	if (!cJSON_IsObject(id) && !cJSON_IsArray(id) && !cJSON_IsString(id))
		return false;
	char *copy = malloc(len);
	if (!copy)
		return true;
	memcpy(copy, line, len);
	protocol_json_mask_nul(copy, len);
	cJSON *whole = srv_parse_whole(copy, len);
	bool cut = !cJSON_Compare(id, cJSON_GetObjectItemCaseSensitive(whole, name), true);
	cJSON_Delete(whole);
	free(copy);
	return cut;
}

static void srv_refuse(struct server_client *c, const char *line, size_t len)
{
	char *copy = malloc(len);
	cJSON *req = NULL;
	if (copy) {
		memcpy(copy, line, len);
		if (protocol_json_mask_surrogates(copy, len) > 0)
			req = srv_parse_whole(copy, len);
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	if (cJSON_IsObject(req) && protocol_json_has_nul(copy, len) &&
	    srv_member_cut(copy, len, id, "id"))
		srv_reply_error(c, NULL, "malformed", "%s", srv_nul_id);
	else if (cJSON_IsObject(req))
		srv_reply_error(c, id, "malformed",
				"the request has a lone UTF-16 surrogate escape (\\ud800-\\udfff): "
				"not a Unicode character, refused");
	else
		srv_reply_error(c, NULL, "malformed",
				"malformed request: expected one JSON object per line");
	cJSON_Delete(req);
	free(copy);
}

/* About the bytes v takes as JSON, counted up to past max only (a big one is
 * never walked whole; cJSON bounds the nesting). */
static size_t srv_json_size(const cJSON *v, size_t max)
{
	if (cJSON_IsString(v))
		return strlen(v->valuestring) + 2;
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return 24; /* (a number, true, false, null) */
	size_t n = 2;
	for (const cJSON *e = v->child; e && n <= max; e = e->next)
		n += (e->string ? strlen(e->string) + 3 : 0) + 1 + srv_json_size(e, max - n);
	return n;
}

cJSON *srv_request_parse(struct server_client *c, const char *line, size_t len, bool *nul)
{
	if (!protocol_utf8_valid(line, len)) {
		srv_reply_error(c, NULL, "malformed", "malformed request: not valid UTF-8");
		return NULL;
	}
	cJSON *req = srv_parse_whole(line, len);
	if (!cJSON_IsObject(req)) {
		cJSON_Delete(req);
		srv_refuse(c, line, len);
		return NULL;
	}
	*nul = protocol_json_has_nul(line, len);
	if (*nul && srv_member_cut(line, len, cJSON_GetObjectItemCaseSensitive(req, "id"), "id")) {
		cJSON_Delete(req);
		srv_reply_error(c, NULL, "malformed", "%s", srv_nul_id);
		return NULL;
	}
	if (*nul && srv_member_cut(line, len, cJSON_GetObjectItemCaseSensitive(req, "op"), "op")) {
		/* ("ping\u0000x" was taken for ping) */
		srv_reply_error(c, cJSON_GetObjectItemCaseSensitive(req, "id"), "usage",
				"the request's op contains a NUL character (\\u0000): refused");
		cJSON_Delete(req);
		return NULL;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	if (id && srv_json_size(id, SERVER_MAX_ID) > SERVER_MAX_ID) {
		cJSON_Delete(req);
		srv_reply_error(c, NULL, "malformed",
				"the request's id is longer than %d bytes of JSON: refused",
				SERVER_MAX_ID);
		return NULL;
	}
	const char *dup = protocol_json_duplicate(req);
	if (dup) { /* (one reader takes the first, another the last: review2-1..3) */
		srv_reply_error(c, strcmp(dup, "id") ? id : NULL, "malformed",
				"malformed request: the member \"%.64s\" is there twice", dup);
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* A string the options keep, in the session's storage. */
static const char *srv_keep(char **keep, size_t *nkeep, size_t cap, const char *s)
{
	if (*nkeep == cap)
		return NULL;
	char *d = strdup(s);
	if (d)
		keep[(*nkeep)++] = d;
	return d;
}

int srv_options_parse(const cJSON *options, bool remote, bool allow_remote,
		      struct cli_session_opts *so, char **keep, size_t *nkeep, size_t keep_cap,
		      char *err, size_t errlen)
{
	static const struct option longopts[] = {CLI_SESSION_LONGOPTS, {NULL, 0, NULL, 0}};
	if (options && !cJSON_IsObject(options)) {
		snprintf(err, errlen, "\"options\" must be an object of run's long options");
		return -EINVAL;
	}
	const cJSON *item;
	cJSON_ArrayForEach(item, options)
	{
		if (strcmp(item->string, "pool") == 0 || strcmp(item->string, "with") == 0)
			continue; /* (the server's, not the session's: server_session.c) */
		const struct option *lo = longopts;
		while (lo->name && strcmp(lo->name, item->string) != 0)
			lo++;
		if (!lo->name) {
			snprintf(err, errlen, "unknown option \"%.*s\"",
				 (int)protocol_utf8_prefix(item->string, strlen(item->string), 64),
				 item->string);
			return -EINVAL;
		}
		if (strcmp(lo->name, "log") == 0) {
			snprintf(err, errlen, "\"log\" is the server's: see its log in its folder");
			return -EINVAL;
		}
		if (remote && !allow_remote &&
		    (strcmp(lo->name, "python") == 0 ||
		     (strcmp(lo->name, "via") == 0 && cJSON_IsString(item) &&
		      (strncmp(item->valuestring, "ssh:", 4) == 0 ||
		       strncmp(item->valuestring, "exec:", 5) == 0 ||
		       /* (no sandbox: the far client's code on this machine, as us) */
		       strcmp(item->valuestring, "none") == 0)))) {
			snprintf(err, errlen,
				 "--%s %s is refused through dial-stdio and HTTP (start the server "
				 "with --allow-remote-transports to allow it)",
				 lo->name, cJSON_IsString(item) ? item->valuestring : "");
			return -EINVAL;
		}
		/* Host files in the sandbox, as "record" writes one: not for a
		 * dial-stdio client, unless the server allows remote transports. */
		if (remote && !allow_remote &&
		    (strcmp(lo->name, "mount") == 0 || strcmp(lo->name, "wheels") == 0)) {
			snprintf(err, errlen,
				 "\"%s\" (files of the server's machine) is refused through "
				 "dial-stdio and HTTP (start the server with "
				 "--allow-remote-transports to allow it)",
				 lo->name);
			return -EINVAL;
		}
		/* Each value as the command line would give it. */
		const cJSON *values = item;
		bool list = cJSON_IsArray(item) &&
			    (strcmp(lo->name, "env") == 0 || strcmp(lo->name, "mount") == 0);
		const cJSON *v = list ? item->child : item;
		for (; v; v = list ? v->next : NULL) {
			char num[64];
			const char *arg = NULL;
			if (lo->has_arg == no_argument) {
				if (!cJSON_IsBool(v)) {
					snprintf(err, errlen, "\"%s\" must be true or false",
						 lo->name);
					return -EINVAL;
				}
				if (!cJSON_IsTrue(v))
					break;
			} else if (cJSON_IsString(v)) {
				arg = srv_keep(keep, nkeep, keep_cap, v->valuestring);
			} else if (cJSON_IsNumber(v)) {
				snprintf(num, sizeof(num), "%.17g", v->valuedouble);
				arg = num; /* (parsed into numbers: nothing keeps it) */
			} else {
				snprintf(err, errlen, "\"%s\" must be a %s", lo->name,
					 !list ? "string or a number"
					 : strcmp(lo->name, "env") == 0
						 ? "list of NAME=VALUE strings"
						 : "list of strings");
				return -EINVAL;
			}
			if (lo->has_arg != no_argument && !arg) {
				snprintf(err, errlen, "\"%s\": out of memory or too many values",
					 lo->name);
				return -EINVAL;
			}
			cli_error_quiet = true;
			int rc = cli_session_opt(so, lo->val, arg, "new");
			cli_error_quiet = false;
			if (rc != 1) {
				const char *msg = cli_last_error();
				if (strncmp(msg, "new: ", 5) == 0)
					msg += 5;
				snprintf(err, errlen, "%s", msg);
				return -EINVAL;
			}
		}
		(void)values;
	}
	/* The host's paths, here where the sandbox will be. */
	cli_error_quiet = true;
	int rc = cli_session_paths_check(so, "new", true);
	cli_error_quiet = false;
	if (rc < 0) {
		const char *msg = cli_last_error();
		snprintf(err, errlen, "%s", strncmp(msg, "new: ", 5) == 0 ? msg + 5 : msg);
		return -EINVAL;
	}
	return 0;
}
