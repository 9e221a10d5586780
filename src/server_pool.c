/*
 * server_pool.c - the server's warm pools: interpreters started ahead for
 * the sessions of one option set (new's "pool": N), made on first use and
 * kept until the server ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "server_internal.h"

/* The most warm interpreters one option set keeps, and the most option sets. */
#define SRV_POOL_MAX  64
#define SRV_POOLS_MAX 16

/* The pool for these options ("pool": N asked), made on first use. NULL
 * with err filled on a bad N or a failure. */
ptybox_pool *srv_pool_for(struct server *sv, const cJSON *options, bool remote, char *err,
			  size_t errlen)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(options, "pool");
	unsigned size = 0;
	if (cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= SRV_POOL_MAX &&
	    n->valuedouble == (double)(int)n->valuedouble)
		size = (unsigned)n->valuedouble;
	else if (cJSON_IsString(n))
		options_parse_uint(n->valuestring, 1, SRV_POOL_MAX, &size);
	if (!size) {
		snprintf(err, errlen, "--pool: expected a number from 0 to %d", SRV_POOL_MAX);
		return NULL;
	}
	cJSON *rest = cJSON_Duplicate(options, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(rest, "pool");
	char *key = rest ? cJSON_PrintUnformatted(rest) : NULL;
	for (struct srv_pool *p = sv->pools; key && p; p = p->next)
		if (strcmp(p->key, key) == 0) {
			cJSON_free(key);
			cJSON_Delete(rest);
			return p->pool;
		}
	struct srv_pool *p = key && sv->npools < SRV_POOLS_MAX ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		snprintf(err, errlen, key ? "the server keeps %d pools, its most" : "out of memory",
			 SRV_POOLS_MAX);
		cJSON_free(key);
		cJSON_Delete(rest);
		return NULL;
	}
	p->key = key;
	cli_session_opts_init(&p->so);
	int rc = srv_options_parse(rest, remote, sv->cfg.allow_remote_transports, &p->so,
				   p->strings, &p->nstrings,
				   sizeof(p->strings) / sizeof(p->strings[0]), err, errlen);
	cJSON_Delete(rest);
	if (rc == 0)
		rc = ptybox_pool_new(sv->loop, &p->so.o, size, &p->pool, err, errlen);
	if (rc < 0) {
		for (size_t i = 0; i < p->nstrings; i++)
			free(p->strings[i]);
		cJSON_free(p->key);
		free(p);
		return NULL;
	}
	p->next = sv->pools;
	sv->pools = p;
	sv->npools++;
	return p->pool;
}

/* Their interpreters go; the records (whose strings the closing ones may
 * still read) stay until srv_pools_free, once the loop is done. */
void srv_pools_close(struct server *sv)
{
	for (struct srv_pool *p = sv->pools; p; p = p->next)
		if (p->pool)
			ptybox_pool_close(p->pool);
	for (struct srv_pool *p = sv->pools; p; p = p->next)
		p->pool = NULL;
}

void srv_pools_free(struct server *sv)
{
	while (sv->pools) {
		struct srv_pool *p = sv->pools;
		sv->pools = p->next;
		for (size_t i = 0; i < p->nstrings; i++)
			free(p->strings[i]);
		cJSON_free(p->key);
		free(p);
	}
	sv->npools = 0;
}
