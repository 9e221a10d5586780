/*
 * http_limits.c - what an HTTP client may ask of a session: the operator's.
 *
 * An HTTP client counts as another machine. `serve --http` takes the limits
 * of `run` (--timeout, --memory, --cpus, --pids, ...) as the most and the
 * default of what its sessions and executes get; a limit not given is the
 * session's default, and is the most as well. A request may lower a limit,
 * never raise it nor lift it (0, none, is a raise), and "net" (the host's
 * network: its loopback services, this server among them) is refused unless
 * serve was started with --allow-net. The values are read by the command
 * line's own parser (cli_session_opt), so "512M" and 536870912 compare alike;
 * a value it refuses is left for the server to refuse in its words.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "http_limits.h"

struct limit_def {
	const char *name;
	int opt;
	bool zero_is_none; /* 0 is no limit at all */
};

static const struct limit_def limit_defs[] = {
	{"timeout", 0x101, true},     {"max-output", 0x102, false},   {"memory", 0x103, true},
	{"pids", 0x104, true},	      {"cpus", 0x105, true},	      {"tmp-size", 0x106, true},
	{"nofile", 0x107, false},     {"max-file-size", 0x108, true}, {"max-get", 0x118, true},
	{"kill-grace", 0x10d, false},
};
#define NLIMITS (sizeof(limit_defs) / sizeof(limit_defs[0]))

static double limit_value(const struct ptybox_options *o, int opt)
{
	switch (opt) {
	case 0x101: return o->timeout;
	case 0x102: return (double)o->max_output;
	case 0x103: return (double)o->memory;
	case 0x104: return o->pids;
	case 0x105: return o->cpus;
	case 0x106: return (double)o->tmp_size;
	case 0x107: return o->nofile;
	case 0x108: return (double)o->max_file_size;
	case 0x118: return (double)o->max_get;
	case 0x10d: return o->kill_grace;
	default: return 0;
	}
}

static const struct limit_def *limit_find_opt(int opt)
{
	for (size_t i = 0; i < NLIMITS; i++)
		if (limit_defs[i].opt == opt)
			return &limit_defs[i];
	return NULL;
}

static double limit_norm(const struct limit_def *d, double v)
{
	return d->zero_is_none && v == 0 ? INFINITY : v;
}

void http_limits_init(struct http_limits *l)
{
	memset(l, 0, sizeof(*l));
	ptybox_options_init(&l->max);
}

bool http_limits_is_limit(int opt)
{
	return limit_find_opt(opt) != NULL;
}

int http_limits_set(struct http_limits *l, int opt, const char *arg)
{
	const struct limit_def *d = limit_find_opt(opt);
	if (!d)
		return -EINVAL;
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	so.o = l->max;
	if (cli_session_opt(&so, opt, arg, "serve") != 1)
		return -EINVAL;
	l->max = so.o;
	size_t i = (size_t)(d - limit_defs);
	snprintf(l->given[i], sizeof(l->given[i]), "%s", arg);
	return 0;
}

/* v as the command line would have it ("512M", 536870912 as "536870912"). */
static const char *limit_arg(const cJSON *v, char *num, size_t cap)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v)) {
		snprintf(num, cap, "%.17g", v->valuedouble);
		return num;
	}
	return NULL;
}

/* A limit's text for a message: the operator's words, else the default. */
static void limit_say(const struct http_limits *l, size_t i, char *out, size_t cap)
{
	if (l->given[i][0]) {
		snprintf(out, cap, "--%s %s", limit_defs[i].name, l->given[i]);
		return;
	}
	double v = limit_value(&l->max, limit_defs[i].opt);
	snprintf(out, cap, "%.17g, the default; serve --http --%s allows more", v,
		 limit_defs[i].name);
}

int http_limits_options(const struct http_limits *l, cJSON *req, char *err, size_t errlen)
{
	cJSON *opts = cJSON_GetObjectItemCaseSensitive(req, "options");
	if (opts && !cJSON_IsObject(opts))
		return 0; /* (the server says what is wrong with it) */
	const cJSON *net = cJSON_GetObjectItemCaseSensitive(opts, "net");
	if (cJSON_IsTrue(net) && !l->allow_net) {
		snprintf(err, errlen,
			 "\"net\" (the host's network) is refused through HTTP (start serve "
			 "--http with --allow-net to allow it)");
		return -EINVAL;
	}
	for (size_t i = 0; i < NLIMITS; i++) {
		const struct limit_def *d = &limit_defs[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, d->name);
		if (!v) {
			if (!l->given[i][0])
				continue; /* (the session's default, which is the most) */
			if (!opts && !(opts = cJSON_AddObjectToObject(req, "options")))
				return -ENOMEM;
			if (!cJSON_AddStringToObject(opts, d->name, l->given[i]))
				return -ENOMEM;
			continue;
		}
		char num[64];
		const char *arg = limit_arg(v, num, sizeof(num));
		if (!arg)
			continue;
		struct cli_session_opts so;
		cli_session_opts_init(&so);
		cli_error_quiet = true;
		int rc = cli_session_opt(&so, d->opt, arg, "new");
		cli_error_quiet = false;
		if (rc != 1)
			continue; /* (the server refuses it, in its words) */
		double want = limit_norm(d, limit_value(&so.o, d->opt));
		double most = limit_norm(d, limit_value(&l->max, d->opt));
		if (want > most) {
			char say[128];
			limit_say(l, i, say, sizeof(say));
			snprintf(err, errlen,
				 "\"%s\": %s is more than serve --http allows (%s): a request may "
				 "only lower a limit",
				 d->name, want == INFINITY ? "0 (none)" : arg, say);
			return -EINVAL;
		}
	}
	return 0;
}

int http_limits_exec(const struct http_limits *l, const cJSON *req, char *err, size_t errlen)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "timeout");
	if (!cJSON_IsNumber(t))
		return 0; /* (none: the session's, which is bounded; else the server's error) */
	double most = limit_norm(&limit_defs[0], l->max.timeout);
	double want = limit_norm(&limit_defs[0], t->valuedouble);
	if (want > most) {
		char say[128], num[64];
		limit_say(l, 0, say, sizeof(say));
		snprintf(num, sizeof(num), "%g", t->valuedouble);
		snprintf(err, errlen,
			 "\"timeout\": %s is more than serve --http allows (%s): a request may "
			 "only lower it",
			 want == INFINITY ? "0 (none)" : num, say);
		return -EINVAL;
	}
	return 0;
}
