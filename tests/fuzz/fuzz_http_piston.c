/*
 * fuzz_http_piston.c - libFuzzer target for http_piston.c: what a client
 * sends as an execute, and what the server's result could hold.
 *
 * Input: byte 0 picks the part. Plan: the rest as an execute body; it is
 * taken (then its requests must build, the exec last, its code the first
 * file's) or refused with a message, never both. Reply: the rest as a result
 * object; the reply must be JSON with a run.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "http_piston.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_plan(const char *s, size_t n)
{
	struct http_piston_plan p;
	char err[256] = "";
	int rc = http_piston_plan_parse(s, n, "3.11.2", &p, err, sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc == 0) {
		CHECK(p.nfiles >= 1 && p.code && p.filename);
		int exec_id = 0;
		cJSON *reqs = http_piston_requests(&p, "http-1", 4, 1, &exec_id);
		CHECK(reqs && cJSON_GetArraySize(reqs) == (int)p.nfiles + 2);
		cJSON *ex = cJSON_GetArrayItem(reqs, (int)p.nfiles + 1);
		CHECK(cJSON_GetObjectItem(ex, "id")->valueint == exec_id);
		CHECK(strcmp(cJSON_GetObjectItem(ex, "code")->valuestring, p.code) == 0);
		cJSON_Delete(reqs);
	} else {
		CHECK(err[0]);
	}
	http_piston_plan_free(&p);
}

static void fuzz_reply(const char *s, size_t n)
{
	cJSON *r = cJSON_ParseWithLength(s, n);
	struct http_piston_plan p = {.version = "3.11.2"};
	char *out = http_piston_reply(&p, r, s, n);
	if (out) {
		cJSON *o = cJSON_Parse(out);
		CHECK(o && cJSON_IsObject(cJSON_GetObjectItem(o, "run")));
		cJSON_Delete(o);
		free(out);
	}
	cJSON_Delete(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* (a NUL-terminated copy: the reply's output is taken as text) */
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (data[0] & 1)
		fuzz_reply(s, strlen(s));
	else
		fuzz_plan(s, size - 1);
	free(s);
	return 0;
}
