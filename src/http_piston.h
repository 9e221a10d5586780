/*
 * http_piston.h - Piston's API (engineer-man/piston, /api/v2) in ptybox's
 * terms: an execute request's JSON becomes a plan (the files to put, the
 * code to run as `python3 FILE ARGS...` runs it, its stdin and limits) and the
 * server protocol's requests for it; an execution's result becomes Piston's
 * reply. Pure: no I/O, unit-tested (tests/unit/test_http_piston.c).
 */
#ifndef PTYBOX_HTTP_PISTON_H
#define PTYBOX_HTTP_PISTON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Piston's own defaults and our caps on them. */
#define HTTP_PISTON_TIMEOUT_MS	   3000
#define HTTP_PISTON_MAX_TIMEOUT_MS 60000
#define HTTP_PISTON_MIN_MEMORY	   ((long long)32 << 20)
/* Files in one request (Piston has no cap; a request is 16 MiB at most anyway). */
#define HTTP_PISTON_MAX_FILES 64
/* Arguments in args. */
#define HTTP_PISTON_MAX_ARGS 256

struct http_piston_file {
	char *name;
	char *b64; /* its bytes as base64, for the protocol's put */
};

struct http_piston_plan {
	char *version;	/* the runtime's (the system's Python) */
	char *code;	/* the first file, which is run */
	char *filename; /* its name: sys.argv[0] */
	struct http_piston_file files[HTTP_PISTON_MAX_FILES]; /* every file, the first too */
	size_t nfiles;
	char *stdin_text; /* NULL: none */
	cJSON *args;	  /* an array of strings, owned */
	double timeout_s;
	long long memory; /* bytes; -1: the server's default */
};

/* body (an execute request) into p, for a runtime of Python pyversion
 * ("3.11.2"). 0, or -EINVAL with err filled as Piston words it (the reply is
 * a 400 with it as message). p is to be freed either way. */
int http_piston_plan_parse(const char *body, size_t len, const char *pyversion,
			   struct http_piston_plan *p, char *err, size_t errlen);
/* The same with run_timeout at most most_ms (HTTP_PISTON_MAX_TIMEOUT_MS for
 * the above): serve --http --timeout's. */
int http_piston_plan_parse_max(const char *body, size_t len, const char *pyversion, double most_ms,
			       struct http_piston_plan *p, char *err, size_t errlen);
void http_piston_plan_free(struct http_piston_plan *p);

/* Whether Piston's version selector sel ("*", "3", "3.x", "3.11.2") picks v. */
bool http_piston_version_matches(const char *sel, const char *v);

/* The protocol requests that run p in a new session of that name, ids from
 * first_id on: a new (with options, pool asked when pool > 0), a put per file,
 * the exec (streamed, so that the output comes in order). An array, owned by
 * the caller; NULL when out of memory. *exec_id: the exec's id. */
cJSON *http_piston_requests(const struct http_piston_plan *p, const char *session, unsigned pool,
			    int first_id, int *exec_id);

/* GET /api/v2/runtimes: a JSON array (malloc'd). */
char *http_piston_runtimes(const char *pyversion);
/* The reply to an execute: result is the protocol's result object, output
 * what stdout and stderr showed, in order. Malloc'd, NULL when out of memory. */
char *http_piston_reply(const struct http_piston_plan *p, const cJSON *result, const char *output,
			size_t output_len);
/* {"message": msg} (malloc'd). */
char *http_piston_error(const char *msg);

#endif
