/*
 * http_piston.c - Piston's execute and runtimes in the server protocol's
 * terms (see http_piston.h). The request is checked here as Piston checks
 * it, with its words in the 400s ("html-5.0.0 runtime is unknown"), so that
 * its clients see what they know. Files are decoded here (utf8, base64,
 * hex): a bad encoding is the client's 400, never the session's error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "http_piston.h"
#include "protocol.h"

static int piston_fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

static bool piston_is_alias(const char *lang)
{
	return strcmp(lang, "python") == 0 || strcmp(lang, "py") == 0 ||
	       strcmp(lang, "python3") == 0;
}

bool http_piston_version_matches(const char *sel, const char *v)
{
	/* Component by component: "x" or "*" takes the rest, and a shorter
	 * selector takes every version it starts ("3" picks 3.11.2, as semver). */
	for (;;) {
		size_t sn = strcspn(sel, "."), vn = strcspn(v, ".");
		if (sn == 1 && (*sel == 'x' || *sel == 'X' || *sel == '*'))
			return true;
		if (sn == 0 || sn != vn || memcmp(sel, v, sn) != 0)
			return false;
		sel += sn;
		v += vn;
		if (!*sel)
			return true;
		if (!*v)
			return false;
		sel++;
		v++;
	}
}

/* content decoded by encoding into *out (malloc'd), as base64 for the put. */
static int piston_decode(const char *content, const char *encoding, unsigned char **out,
			 size_t *outlen)
{
	size_t n = strlen(content);
	unsigned char *b = malloc(n + 1);
	if (!b)
		return -ENOMEM;
	size_t len = 0;
	int rc = 0;
	if (strcmp(encoding, "utf8") == 0) {
		memcpy(b, content, n);
		len = n;
	} else if (strcmp(encoding, "base64") == 0) {
		rc = sodium_base642bin(b, n + 1, content, n, " \t\r\n", &len, NULL,
				       sodium_base64_VARIANT_ORIGINAL);
	} else if (strcmp(encoding, "hex") == 0) {
		const char *end = NULL;
		rc = sodium_hex2bin(b, n + 1, content, n, NULL, &len, &end);
		if (rc == 0 && end != content + n)
			rc = -1;
	} else {
		rc = -1;
	}
	if (rc != 0) {
		free(b);
		return -EINVAL;
	}
	b[len] = '\0';
	*out = b;
	*outlen = len;
	return 0;
}

static char *piston_b64(const unsigned char *b, size_t n)
{
	size_t cap = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(cap);
	if (s)
		sodium_bin2base64(s, cap, b, n, sodium_base64_VARIANT_ORIGINAL);
	return s;
}

/* A file's name as Piston takes it: no path. */
static bool piston_name_ok(const char *name)
{
	return *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	       strlen(name) <= 255;
}

static int piston_files(const cJSON *files, struct http_piston_plan *p, char *err, size_t errlen)
{
	if (!cJSON_IsArray(files))
		return piston_fail(err, errlen, "files is required as an array");
	size_t n = (size_t)cJSON_GetArraySize(files);
	if (n == 0) /* (Piston's words for it) */
		return piston_fail(err, errlen,
				   "files must include at least one utf8 encoded file");
	if (n > HTTP_PISTON_MAX_FILES)
		return piston_fail(err, errlen, "files: at most 64 files");
	const cJSON *f;
	size_t i = 0;
	cJSON_ArrayForEach(f, files)
	{
		if (!cJSON_IsObject(f))
			return piston_fail(err, errlen, "files[] must be objects");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(f, "content");
		const cJSON *enc = cJSON_GetObjectItemCaseSensitive(f, "encoding");
		if (!cJSON_IsString(content)) {
			snprintf(err, errlen, "files[%zu].content is required as a string", i);
			return -EINVAL;
		}
		if (name && !cJSON_IsNull(name) && !cJSON_IsString(name)) {
			snprintf(err, errlen, "files[%zu].name must be a string", i);
			return -EINVAL;
		}
		if (enc && !cJSON_IsString(enc)) {
			snprintf(err, errlen, "files[%zu].encoding must be a string", i);
			return -EINVAL;
		}
		char dflt[32];
		snprintf(dflt, sizeof(dflt), "file%zu.code", i);
		const char *nm = cJSON_IsString(name) ? name->valuestring : dflt;
		if (!piston_name_ok(nm)) {
			snprintf(err, errlen, "files[%zu].name must contain no path", i);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->files[j].name, nm) == 0) {
				snprintf(err, errlen, "files[%zu].name: %s is given twice", i, nm);
				return -EINVAL;
			}
		const char *encoding = cJSON_IsString(enc) ? enc->valuestring : "utf8";
		unsigned char *bytes;
		size_t len;
		int rc = piston_decode(content->valuestring, encoding, &bytes, &len);
		if (rc == -ENOMEM)
			return rc;
		if (rc < 0) {
			if (strcmp(encoding, "utf8") && strcmp(encoding, "base64") &&
			    strcmp(encoding, "hex"))
				snprintf(err, errlen,
					 "files[%zu].encoding must be one of utf8, base64, hex", i);
			else
				snprintf(err, errlen, "files[%zu].content is not valid %s", i,
					 encoding);
			return -EINVAL;
		}
		p->files[i].name = strdup(nm);
		p->files[i].b64 = piston_b64(bytes, len);
		p->nfiles = i + 1;
		if (i == 0) {
			/* The first is run: its code must be text. */
			if (memchr(bytes, '\0', len)) {
				free(bytes);
				return piston_fail(err, errlen,
						   "files[0] (the one run) holds a NUL");
			}
			p->code = (char *)bytes;
			bytes = NULL;
		}
		free(bytes);
		if (!p->files[i].name || !p->files[i].b64)
			return -ENOMEM;
		i++;
	}
	p->filename = strdup(p->files[0].name);
	return p->filename ? 0 : -ENOMEM;
}

int http_piston_plan_parse(const char *body, size_t len, const char *pyversion,
			   struct http_piston_plan *p, char *err, size_t errlen)
{
	return http_piston_plan_parse_max(body, len, pyversion, HTTP_PISTON_MAX_TIMEOUT_MS, p, err,
					  errlen);
}

int http_piston_plan_parse_max(const char *body, size_t len, const char *pyversion, double most_ms,
			       struct http_piston_plan *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->memory = -1;
	p->timeout_s =
		(most_ms < HTTP_PISTON_TIMEOUT_MS ? most_ms : HTTP_PISTON_TIMEOUT_MS) / 1000.0;
	cJSON *req = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(req)) {
		cJSON_Delete(req);
		return piston_fail(err, errlen, "the body is not a JSON object");
	}
	const char *dup = protocol_json_duplicate(req);
	if (dup) { /* (one reader takes the first, another the last: review2-1) */
		char msg[160];
		snprintf(msg, sizeof(msg), "the body has the member \"%.64s\" twice", dup);
		cJSON_Delete(req);
		return piston_fail(err, errlen, msg);
	}
	int rc = -EINVAL;
	const cJSON *lang = cJSON_GetObjectItemCaseSensitive(req, "language");
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(req, "version");
	if (!cJSON_IsString(lang)) {
		piston_fail(err, errlen, "language is required as a string");
		goto out;
	}
	if (!cJSON_IsString(ver)) {
		piston_fail(err, errlen, "version is required as a string");
		goto out;
	}
	if (!piston_is_alias(lang->valuestring) ||
	    !http_piston_version_matches(ver->valuestring, pyversion)) {
		snprintf(err, errlen, "%.100s-%.100s runtime is unknown", lang->valuestring,
			 ver->valuestring);
		goto out;
	}
	if ((rc = piston_files(cJSON_GetObjectItemCaseSensitive(req, "files"), p, err, errlen)) < 0)
		goto out;
	rc = -EINVAL;
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "stdin");
	if (in && !cJSON_IsNull(in)) {
		if (!cJSON_IsString(in)) {
			piston_fail(err, errlen, "stdin must be a string");
			goto out;
		}
		if (!(p->stdin_text = strdup(in->valuestring))) {
			rc = -ENOMEM;
			goto out;
		}
	}
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(req, "args");
	if (!(p->args = cJSON_CreateArray())) {
		rc = -ENOMEM;
		goto out;
	}
	if (args && !cJSON_IsNull(args)) {
		if (!cJSON_IsArray(args)) {
			piston_fail(err, errlen, "args must be an array");
			goto out;
		}
		if (cJSON_GetArraySize(args) > HTTP_PISTON_MAX_ARGS) {
			piston_fail(err, errlen, "args: at most 256 arguments");
			goto out;
		}
		const cJSON *a;
		cJSON_ArrayForEach(a, args)
		{
			char num[64];
			const char *s = NULL;
			if (cJSON_IsString(a)) {
				s = a->valuestring;
			} else if (cJSON_IsNumber(a)) { /* (as JavaScript's String(n)) */
				snprintf(num, sizeof(num), "%.17g", a->valuedouble);
				s = num;
			} else {
				piston_fail(err, errlen, "args must be an array of strings");
				goto out;
			}
			if (!cJSON_AddItemToArray(p->args, cJSON_CreateString(s))) {
				rc = -ENOMEM;
				goto out;
			}
		}
	}
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(req, "run_timeout");
	if (to && !cJSON_IsNull(to)) {
		if (!cJSON_IsNumber(to) || to->valuedouble <= 0) {
			piston_fail(err, errlen, "run_timeout must be a positive number");
			goto out;
		}
		if (to->valuedouble > most_ms) {
			snprintf(err, errlen,
				 "run_timeout cannot exceed the configured limit of %.0f", most_ms);
			goto out;
		}
		p->timeout_s = to->valuedouble / 1000.0;
	}
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(req, "run_memory_limit");
	if (mem && !cJSON_IsNull(mem)) {
		if (!cJSON_IsNumber(mem) || (mem->valuedouble != -1 && mem->valuedouble < 0)) {
			piston_fail(err, errlen, "run_memory_limit must be a number");
			goto out;
		}
		if (mem->valuedouble != -1) {
			if (mem->valuedouble < (double)HTTP_PISTON_MIN_MEMORY) {
				snprintf(err, errlen,
					 "run_memory_limit must be at least %lld bytes (or -1)",
					 HTTP_PISTON_MIN_MEMORY);
				goto out;
			}
			if (mem->valuedouble > 1e15) {
				piston_fail(err, errlen, "run_memory_limit is too large");
				goto out;
			}
			p->memory = (long long)mem->valuedouble;
		}
	}
	if (!(p->version = strdup(pyversion))) {
		rc = -ENOMEM;
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(req);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

void http_piston_plan_free(struct http_piston_plan *p)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files[i].name);
		free(p->files[i].b64);
	}
	free(p->version);
	free(p->code);
	free(p->filename);
	free(p->stdin_text);
	cJSON_Delete(p->args);
	memset(p, 0, sizeof(*p));
}

static cJSON *piston_req(cJSON *all, int id, const char *op, const char *session)
{
	cJSON *r = cJSON_CreateObject();
	if (!r || !cJSON_AddItemToArray(all, r)) {
		cJSON_Delete(r);
		return NULL;
	}
	if (!cJSON_AddNumberToObject(r, "id", id) || !cJSON_AddStringToObject(r, "op", op) ||
	    !cJSON_AddStringToObject(r, "session", session))
		return NULL;
	return r;
}

cJSON *http_piston_requests(const struct http_piston_plan *p, const char *session, unsigned pool,
			    int first_id, int *exec_id)
{
	cJSON *all = cJSON_CreateArray();
	if (!all)
		return NULL;
	int id = first_id;
	cJSON *r = piston_req(all, id++, "new", session);
	cJSON *o = r ? cJSON_AddObjectToObject(r, "options") : NULL;
	if (!o)
		goto fail;
	/* A memory limit is its own option set, so its own pool: such a
	 * request starts cold rather than fill the server with pools. */
	if (p->memory >= 0) {
		if (!cJSON_AddNumberToObject(o, "memory", (double)p->memory))
			goto fail;
	} else if (pool > 0 && !cJSON_AddNumberToObject(o, "pool", pool)) {
		goto fail;
	}
	for (size_t i = 0; i < p->nfiles; i++) {
		r = piston_req(all, id++, "put", session);
		if (!r || !cJSON_AddStringToObject(r, "path", p->files[i].name) ||
		    !cJSON_AddStringToObject(r, "data", p->files[i].b64))
			goto fail;
	}
	*exec_id = id;
	r = piston_req(all, id++, "exec", session);
	/* (argv is all of sys.argv: the file's name first, as python3 FILE says it) */
	cJSON *args = r ? cJSON_Duplicate(p->args, true) : NULL;
	cJSON *argv0 = args ? cJSON_CreateString(p->filename) : NULL;
	if (argv0 && !cJSON_InsertItemInArray(args, 0, argv0)) {
		cJSON_Delete(argv0);
		argv0 = NULL;
	}
	if (!argv0 || !cJSON_AddItemToObject(r, "argv", args)) {
		cJSON_Delete(args);
		goto fail;
	}
	if (!cJSON_AddStringToObject(r, "code", p->code) ||
	    !cJSON_AddStringToObject(r, "filename", p->filename) ||
	    !cJSON_AddNumberToObject(r, "timeout", p->timeout_s) ||
	    !cJSON_AddTrueToObject(r, "stream") ||
	    (p->stdin_text && !cJSON_AddStringToObject(r, "stdin", p->stdin_text)))
		goto fail;
	return all;
fail:
	cJSON_Delete(all);
	return NULL;
}

char *http_piston_runtimes(const char *pyversion)
{
	cJSON *all = cJSON_CreateArray(), *rt = cJSON_CreateObject();
	cJSON *aliases = cJSON_CreateStringArray((const char *[]){"py", "python3"}, 2);
	char *s = NULL;
	if (all && rt && aliases && cJSON_AddStringToObject(rt, "language", "python") &&
	    cJSON_AddStringToObject(rt, "version", pyversion) &&
	    cJSON_AddItemToObject(rt, "aliases", aliases)) {
		aliases = NULL;
		cJSON_AddItemToArray(all, rt);
		rt = NULL;
		s = cJSON_PrintUnformatted(all);
	}
	cJSON_Delete(aliases);
	cJSON_Delete(rt);
	cJSON_Delete(all);
	return s;
}

char *http_piston_error(const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL;
	if (o && cJSON_AddStringToObject(o, "message", msg))
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* "killed by signal 9" in a crashed result's message: 9, else -1. */
static int piston_signal(const char *message)
{
	const char *s = message ? strstr(message, "signal ") : NULL;
	if (!s)
		return -1;
	long n = strtol(s + 7, NULL, 10);
	return n > 0 && n < 65 ? (int)n : -1;
}

static const char *piston_signame(int sig)
{
	static const char *names[] = {
		[1] = "SIGHUP",	  [2] = "SIGINT",   [3] = "SIGQUIT",  [4] = "SIGILL",
		[5] = "SIGTRAP",  [6] = "SIGABRT",  [7] = "SIGBUS",   [8] = "SIGFPE",
		[9] = "SIGKILL",  [10] = "SIGUSR1", [11] = "SIGSEGV", [12] = "SIGUSR2",
		[13] = "SIGPIPE", [14] = "SIGALRM", [15] = "SIGTERM", [24] = "SIGXCPU",
		[25] = "SIGXFSZ",
	};
	return sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig] ? names[sig]
										      : NULL;
}

/* The traceback python3 FILE would print on stderr: its lines joined. */
static char *piston_traceback(const cJSON *error, bool message_only)
{
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(error, "traceback");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(error, "value");
	if (message_only) { /* sys.exit("why"): the why alone */
		if (!cJSON_IsString(value) || !*value->valuestring)
			return NULL;
		size_t n = strlen(value->valuestring);
		char *s = malloc(n + 2);
		if (s)
			snprintf(s, n + 2, "%s\n", value->valuestring);
		return s;
	}
	size_t n = 0;
	const cJSON *l;
	cJSON_ArrayForEach(l, tb) if (cJSON_IsString(l)) n += strlen(l->valuestring);
	if (n == 0)
		return NULL;
	char *s = malloc(n + 1), *w = s;
	if (!s)
		return NULL;
	cJSON_ArrayForEach(l, tb) if (cJSON_IsString(l))
	{
		size_t k = strlen(l->valuestring);
		memcpy(w, l->valuestring, k);
		w += k;
	}
	*w = '\0';
	return s;
}

static char *piston_join(const char *a, size_t an, const char *b)
{
	size_t bn = b ? strlen(b) : 0;
	char *s = malloc(an + bn + 1);
	if (!s)
		return NULL;
	memcpy(s, a, an);
	if (bn)
		memcpy(s + an, b, bn);
	s[an + bn] = '\0';
	return s;
}

static bool piston_is_integer(const char *s)
{
	s += *s == '-';
	return *s && strspn(s, "0123456789") == strlen(s);
}

char *http_piston_reply(const struct http_piston_plan *p, const cJSON *result, const char *output,
			size_t output_len)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(result, "status");
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(result, "stdout");
	const cJSON *se = cJSON_GetObjectItemCaseSensitive(result, "stderr");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(result, "error");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(result, "message");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(result, "duration_ms");
	const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(result, "truncated");
	const char *status = cJSON_IsString(st) ? st->valuestring : "";
	const char *message = cJSON_IsString(msg) ? msg->valuestring : NULL;
	/* An execute's session is killed after it: what the message says of a
	 * restart ("...; restarted with fresh state") does not happen here. */
	char *plain = message ? strdup(message) : NULL;
	if (plain) {
		static const char *const restarted[] = {"; restarted with fresh state",
							" and restarted with fresh state"};
		for (size_t i = 0; i < 2; i++) {
			char *at = strstr(plain, restarted[i]);
			if (at && !at[strlen(restarted[i])])
				*at = '\0';
		}
		message = plain;
	}
	int code = 0, sig = -1;
	const char *pstatus = NULL, *pmessage = NULL;
	char *tail = NULL; /* what python3 prints on stderr at its end */
	if (strcmp(status, "ok") == 0) {
		code = 0;
	} else if (strcmp(status, "error") == 0) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(error, "name");
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(error, "value");
		const cJSON *ex = cJSON_GetObjectItemCaseSensitive(error, "exit");
		bool sysexit = cJSON_IsString(name) && strcmp(name->valuestring, "SystemExit") == 0;
		if (sysexit) {
			code = cJSON_IsNumber(ex) ? ex->valueint : 1;
			tail = piston_traceback(error, true);
			if (cJSON_IsString(value) && piston_is_integer(value->valuestring)) {
				free(tail);
				tail = NULL;
			}
		} else {
			code = 1;
			tail = piston_traceback(error, false);
		}
		if (code != 0) {
			pstatus = "RE";
		}
	} else if (strcmp(status, "timeout") == 0) {
		code = -1;
		sig = 9;
		pstatus = "TO";
		pmessage = "Time limit exceeded";
	} else if (strcmp(status, "crashed") == 0) {
		code = -1;
		sig = piston_signal(message);
		pstatus = sig > 0 ? "SG" : "XX";
		pmessage = message;
	} else {
		code = -1;
		pstatus = "XX";
		pmessage = message ? message : status;
	}
	if (!pstatus && cJSON_IsTrue(trunc)) {
		pstatus = "OL";
		pmessage = "output length exceeded";
	}
	const char *out = cJSON_IsString(so) ? so->valuestring : "";
	const char *err = cJSON_IsString(se) ? se->valuestring : "";
	char *stderr_all = piston_join(err, strlen(err), tail);
	char *output_all = piston_join(output ? output : "", output ? output_len : 0, tail);
	free(tail);
	cJSON *o = cJSON_CreateObject(), *run = cJSON_CreateObject();
	char *s = NULL;
	if (!o || !run || !stderr_all || !output_all)
		goto out;
	cJSON_AddStringToObject(o, "language", "python");
	cJSON_AddStringToObject(o, "version", p->version ? p->version : "");
	cJSON_AddItemToObject(o, "run", run);
	cJSON *r = run;
	run = NULL;
	cJSON_AddStringToObject(r, "stdout", out);
	cJSON_AddStringToObject(r, "stderr", stderr_all);
	cJSON_AddStringToObject(r, "output", output_all);
	if (code >= 0)
		cJSON_AddNumberToObject(r, "code", code);
	else
		cJSON_AddNullToObject(r, "code");
	if (piston_signame(sig))
		cJSON_AddStringToObject(r, "signal", piston_signame(sig));
	else
		cJSON_AddNullToObject(r, "signal");
	if (pmessage)
		cJSON_AddStringToObject(r, "message", pmessage);
	else
		cJSON_AddNullToObject(r, "message");
	if (pstatus)
		cJSON_AddStringToObject(r, "status", pstatus);
	else
		cJSON_AddNullToObject(r, "status");
	cJSON_AddNumberToObject(r, "wall_time",
				cJSON_IsNumber(dur) ? (double)(long long)dur->valuedouble : 0);
	/* (no measure of these yet: null, as a stage that did not say) */
	cJSON_AddNullToObject(r, "cpu_time");
	cJSON_AddNullToObject(r, "memory");
	s = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(run);
	cJSON_Delete(o);
	free(stderr_all);
	free(output_all);
	free(plain);
	return s;
}
