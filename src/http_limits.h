/*
 * http_limits.h - the operator's limits on what an HTTP client asks
 * (http_limits.c): the most and the default of each of run's limits, and
 * whether "net" may be asked.
 */
#ifndef PTYBOX_HTTP_LIMITS_H
#define PTYBOX_HTTP_LIMITS_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "ptybox.h"

/* timeout, max-output, memory, pids, cpus, tmp-size, nofile, max-file-size,
 * max-get, kill-grace */
#define HTTP_LIMITS_N 10

struct http_limits {
	struct ptybox_options max;     /* each limit's most: the operator's, else the default */
	char given[HTTP_LIMITS_N][64]; /* the operator's words for it ("" : not given) */
	bool allow_net;
};

void http_limits_init(struct http_limits *l);
/* Whether a getopt value of CLI_SESSION_LONGOPTS is one of the limits. */
bool http_limits_is_limit(int opt);
/* The operator's --NAME arg (checked by cli_session_opt, which says why
 * not): 0 or -EINVAL. */
int http_limits_set(struct http_limits *l, int opt, const char *arg);
/* A new request's "options" from HTTP: "net" refused without allow_net, a
 * limit past its most refused, a limit not asked set to the operator's.
 * 0, -EINVAL with err (a usage error), -ENOMEM. */
int http_limits_options(const struct http_limits *l, cJSON *req, char *err, size_t errlen);
/* An exec request's "timeout": at most the operator's. 0 or -EINVAL. */
int http_limits_exec(const struct http_limits *l, const cJSON *req, char *err, size_t errlen);

#endif
