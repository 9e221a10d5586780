/*
 * protocol.c - encoding of requests and decoding of frames, wire protocol v1
 * (man/ptybox-protocol.7). Pure: buffers in, buffers out.
 *
 * Requests are base64url lines so that nothing a snippet contains can look
 * like a control character to the terminal's line discipline. Frames are
 * untrusted: code inside the sandbox can write anything to its terminal, so
 * every field is checked for type before use.
 */
#define _GNU_SOURCE /* memmem */
#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <signal.h>

#include <sodium.h>

#include "ptybox.h"
#include "stream_frame.h"
#include "term_safe.h"

const char *ptybox_status_name(enum ptybox_status st)
{
	switch (st) {
	case PTYBOX_OK: return "ok";
	case PTYBOX_ERROR: return "error";
	case PTYBOX_TIMEOUT: return "timeout";
	case PTYBOX_INTERRUPTED: return "interrupted";
	case PTYBOX_CRASHED: return "crashed";
	case PTYBOX_CANCELLED: return "cancelled";
	}
	return "unknown";
}

int protocol_make_nonce(char *out, size_t outlen)
{
	unsigned char raw[PROTOCOL_NONCE_BYTES];
	if (outlen < 2 * PROTOCOL_NONCE_BYTES + 1)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(out, outlen, raw, sizeof(raw));
	sodium_memzero(raw, sizeof(raw));
	return 0;
}

bool protocol_boot_code_fits(const char *rest, size_t len, const char *magic)
{
	size_t mlen = strlen(magic);
	if (len > 0 && rest[len - 1] == '\r')
		len--;
	return mlen > 0 && len == mlen + 1 && rest[0] == ' ' && memcmp(rest + 1, magic, mlen) == 0;
}

/* The driver is no secret: libsodium's constant-time encoder took 1.6 ms of
 * each cold start for the compiled driver (some 190 KB), the table's 0.2 ms.
 * Each full line is PROTOCOL_BOOT_LINE / 4 * 3 bytes encoded on their own,
 * so only the last one can carry padding: the lines joined are the whole
 * data's base64. */
int protocol_boot_lines(const char *form, const unsigned char *data, size_t len, char **out,
			size_t *outlen)
{
	size_t flen = strlen(form);
	if (flen == 0 || flen > PROTOCOL_BOOT_REST_MAX || strpbrk(form, "\r\n"))
		return -EINVAL;
	_Static_assert(PROTOCOL_BOOT_LINE % 4 == 0, "whole base64 groups a line");
	const size_t piece = PROTOCOL_BOOT_LINE / 4 * 3;
	size_t b64len = (len + 2) / 3 * 4;
	size_t lines = (len + piece - 1) / piece;
	char *buf = malloc(flen + 1 + b64len + lines + 2);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, form, flen);
	size_t o = flen;
	buf[o++] = '\n';
	for (size_t i = 0; i < len; i += piece) {
		o += protocol_base64_encode(buf + o, data + i, len - i < piece ? len - i : piece);
		buf[o++] = '\n';
	}
	buf[o++] = '\n'; /* the empty line ends the boot */
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
}

/* prefix (may be "") goes in front of the encoded line, in the same buffer. */
static int protocol_encode_text(const char *prefix, const char *json, size_t jlen, char **out,
				size_t *outlen)
{
	size_t plen = strlen(prefix);
	size_t cap = sodium_base64_ENCODED_LEN(jlen, sodium_base64_VARIANT_URLSAFE);
	char *line = malloc(plen + cap + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, prefix, plen);
	sodium_bin2base64(line + plen, cap, (const unsigned char *)json, jlen,
			  sodium_base64_VARIANT_URLSAFE);
	size_t n = plen + cap - 1; /* the encoded length is exact; cap counts the NUL */
	line[n++] = '\n';
	line[n] = '\0';
	*out = line;
	*outlen = n;
	return 0;
}

/* v in decimal at out (room for 20 digits); returns the length. Not snprintf:
 * on every request, its locale and stream machinery cost more than the rest
 * of the line when the caches are cold, which they are after each wait. */
static size_t protocol_put_uint(char *out, uint64_t v)
{
	char rev[20];
	size_t n = 0;
	do
		rev[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = rev[n - 1 - i];
	return n;
}

/* An integer member printed exactly (cJSON prints numbers as doubles, through
 * snprintf and sscanf: microseconds on every request). */
bool protocol_json_add_uint(cJSON *o, const char *key, uint64_t v)
{
	char num[24];
	num[protocol_put_uint(num, v)] = '\0';
	return cJSON_AddRawToObject(o, key, num) != NULL;
}

/* Code up to this long is quoted on the stack: a small snippet's line costs two
 * allocations (cJSON's string item and the line itself), not a dozen. */
#define PROTOCOL_SMALL_CODE 512
/* JSON quoting makes at most 6 bytes of one; cJSON wants 5 to spare. */
#define PROTOCOL_SMALL_QUOTED (6 * PROTOCOL_SMALL_CODE + 2 + 5)

int protocol_exec_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
		       unsigned busy_poll_us, char **out, size_t *outlen)
{
	if (memchr(code, '\0', len))
		return -EINVAL;
	char small_code[PROTOCOL_SMALL_CODE + 1], small_quoted[PROTOCOL_SMALL_QUOTED];
	char small_json[PROTOCOL_SMALL_QUOTED + 128];
	bool small = len <= PROTOCOL_SMALL_CODE;
	char *copy = small ? small_code : malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, code, len);
	copy[len] = '\0';
	/* cJSON quotes the code; the rest of the object is printed around it. */
	cJSON *str = cJSON_CreateStringReference(copy);
	char *printed = NULL; /* cJSON's own buffer, for code too long for the stack */
	const char *quoted = NULL;
	if (str && small && cJSON_PrintPreallocated(str, small_quoted, sizeof(small_quoted), 0))
		quoted = small_quoted;
	else if (str)
		quoted = printed = cJSON_PrintUnformatted(str);
	cJSON_Delete(str);
	int rc = -ENOMEM;
	if (quoted) {
		static const char id_key[] = "{\"id\":", op_code[] = ",\"op\":\"exec\",\"code\":",
				  max_key[] = ",\"max_output\":", poll_key[] = ",\"busy_poll\":";
		char head[80], tail[80];
		size_t hn = sizeof(id_key) - 1, tn = sizeof(max_key) - 1;
		memcpy(head, id_key, hn);
		hn += protocol_put_uint(head + hn, id);
		memcpy(head + hn, op_code, sizeof(op_code) - 1);
		hn += sizeof(op_code) - 1;
		if (max_output != PROTOCOL_DEFAULT_MAX_OUTPUT) {
			memcpy(tail, max_key, tn);
			tn += protocol_put_uint(tail + tn, max_output);
		} else {
			tn = 0;
		}
		if (busy_poll_us != PROTOCOL_DEFAULT_BUSY_POLL) {
			memcpy(tail + tn, poll_key, sizeof(poll_key) - 1);
			tn += sizeof(poll_key) - 1;
			tn += protocol_put_uint(tail + tn, busy_poll_us);
		}
		tail[tn++] = '}';
		size_t qn = strlen(quoted), jn = hn + qn + tn;
		char *json = jn < sizeof(small_json) ? small_json : malloc(jn + 1);
		if (json) {
			memcpy(json, head, hn);
			memcpy(json + hn, quoted, qn);
			memcpy(json + hn + qn, tail, tn);
			rc = protocol_encode_text("", json, jn, out, outlen);
			if (json != small_json)
				free(json);
		}
	}
	cJSON_free(printed);
	if (copy != small_code)
		free(copy);
	return rc;
}

int protocol_interrupt_line(uint64_t id, char **out, size_t *outlen)
{
	/* The id printed as in the exec request, so the relay sees them equal. */
	cJSON *req = cJSON_CreateObject();
	char *json = NULL;
	if (req && protocol_json_add_uint(req, "id", id) &&
	    cJSON_AddStringToObject(req, "op", "interrupt"))
		json = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!json)
		return -ENOMEM;
	int rc = protocol_encode_text("", json, strlen(json), out, outlen);
	cJSON_free(json);
	return rc;
}

int protocol_query_line(uint64_t id, const char *op, const char *code, size_t len, long cursor,
			char **out, size_t *outlen)
{
	if (memchr(code, '\0', len))
		return -EINVAL;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, code, len);
	copy[len] = '\0';
	cJSON *req = cJSON_CreateObject();
	char *json = NULL;
	if (req && protocol_json_add_uint(req, "id", id) &&
	    cJSON_AddStringToObject(req, "op", op) && cJSON_AddStringToObject(req, "code", copy) &&
	    (cursor < 0 || cJSON_AddNumberToObject(req, "cursor", (double)cursor)))
		json = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	free(copy);
	if (!json)
		return -ENOMEM;
	int rc = protocol_encode_text("", json, strlen(json), out, outlen);
	cJSON_free(json);
	return rc;
}

bool protocol_exec_input_valid(const struct protocol_exec_input *in)
{
	size_t n = 0;
	for (; in->env && in->env[n]; n++) {
		const char *eq = strchr(in->env[n], '=');
		if (!eq || eq == in->env[n] || n >= PROTOCOL_ENV_MAX)
			return false;
	}
	return (!in->cwd || in->cwd[0]) && (!in->has_stdin || in->stdin_len <= PROTOCOL_STDIN_MAX);
}

/* env, cwd and stdin_b64 into req: false when out of memory. */
static bool protocol_add_input(cJSON *req, const struct protocol_exec_input *in)
{
	if (in->env) {
		cJSON *env = cJSON_AddObjectToObject(req, "env");
		if (!env)
			return false;
		for (size_t i = 0; in->env[i]; i++) {
			const char *kv = in->env[i], *eq = strchr(kv, '=');
			char *key = strndup(kv, (size_t)(eq - kv));
			cJSON *v = cJSON_CreateString(eq + 1);
			/* (a name given twice: the last is the one, as in a shell) */
			if (key)
				cJSON_DeleteItemFromObjectCaseSensitive(env, key);
			bool ok = key && v && cJSON_AddItemToObject(env, key, v);
			free(key);
			if (!ok) {
				cJSON_Delete(v);
				return false;
			}
		}
	}
	if (in->cwd && !cJSON_AddStringToObject(req, "cwd", in->cwd))
		return false;
	if (in->stdin_stream && !in->has_stdin && !cJSON_AddTrueToObject(req, "stdin_stream"))
		return false;
	if (in->has_stdin) {
		size_t cap =
			sodium_base64_ENCODED_LEN(in->stdin_len, sodium_base64_VARIANT_ORIGINAL);
		char *b64 = malloc(cap);
		if (!b64)
			return false;
		sodium_bin2base64(b64, cap, in->stdin_data, in->stdin_len,
				  sodium_base64_VARIANT_ORIGINAL);
		cJSON *item = cJSON_CreateString(b64);
		free(b64);
		if (!item || !cJSON_AddItemToObject(req, "stdin_b64", item)) {
			cJSON_Delete(item);
			return false;
		}
	}
	return true;
}

int protocol_exec_input_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
			     unsigned busy_poll_us, const char *filename, const char *const *argv,
			     const struct protocol_exec_input *in, char **out, size_t *outlen)
{
	if (memchr(code, '\0', len) || (in && !protocol_exec_input_valid(in)))
		return -EINVAL;
	char *copy = malloc(len + 1);
	cJSON *req = cJSON_CreateObject(), *args = NULL;
	char *json = NULL;
	int rc = -ENOMEM;
	if (!copy || !req)
		goto fail;
	memcpy(copy, code, len);
	copy[len] = '\0';
	if (!protocol_json_add_uint(req, "id", id) || !cJSON_AddStringToObject(req, "op", "exec") ||
	    !cJSON_AddStringToObject(req, "code", copy) ||
	    (max_output != PROTOCOL_DEFAULT_MAX_OUTPUT &&
	     !protocol_json_add_uint(req, "max_output", max_output)) ||
	    (busy_poll_us != PROTOCOL_DEFAULT_BUSY_POLL &&
	     !protocol_json_add_uint(req, "busy_poll", busy_poll_us)))
		goto fail;
	if (filename) {
		if (!cJSON_AddStringToObject(req, "filename", filename) ||
		    !cJSON_AddTrueToObject(req, "main") ||
		    !(args = cJSON_AddArrayToObject(req, "argv")))
			goto fail;
		if (!argv && !cJSON_AddItemToArray(args, cJSON_CreateString(filename)))
			goto fail;
		for (size_t i = 0; argv && argv[i]; i++)
			if (!cJSON_AddItemToArray(args, cJSON_CreateString(argv[i])))
				goto fail;
	}
	if (in && !protocol_add_input(req, in))
		goto fail;
	json = cJSON_PrintUnformatted(req);
	if (json)
		rc = protocol_encode_text("", json, strlen(json), out, outlen);
fail:
	cJSON_free(json);
	cJSON_Delete(req);
	free(copy);
	return rc;
}

int protocol_exec_file_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
			    unsigned busy_poll_us, const char *filename, const char *const *argv,
			    char **out, size_t *outlen)
{
	if (!filename)
		return -EINVAL;
	return protocol_exec_input_line(id, code, len, max_output, busy_poll_us, filename, argv,
					NULL, out, outlen);
}

int protocol_stdin_line(uint64_t id, const void *data, size_t len, bool eof, char **out,
			size_t *outlen)
{
	if (len > PROTOCOL_STDIN_CHUNK)
		return -E2BIG;
	size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	size_t jcap = cap + 96;
	char *json = malloc(jcap);
	if (!json)
		return -ENOMEM;
	/* (printed by hand: base64 needs no escaping, and cJSON would copy it twice) */
	int n = snprintf(json, jcap, "{\"id\":%llu,\"op\":\"stdin\",\"eof\":%s,\"data\":\"",
			 (unsigned long long)id, eof ? "true" : "false");
	sodium_bin2base64(json + n, cap, data, len, sodium_base64_VARIANT_ORIGINAL);
	size_t m = (size_t)n + cap - 1;
	json[m++] = '"';
	json[m++] = '}';
	int rc = protocol_encode_text("", json, m, out, outlen);
	free(json);
	return rc;
}

int protocol_resize_line(unsigned cols, unsigned rows, char **out, size_t *outlen)
{
	if (cols == 0 || rows == 0 || cols > 65535 || rows > 65535)
		return -EINVAL;
	char json[64];
	int n = snprintf(json, sizeof(json), "{\"op\":\"resize\",\"cols\":%u,\"rows\":%u}", cols,
			 rows);
	return protocol_encode_text("", json, (size_t)n, out, outlen);
}

int protocol_tty_line(char **out, size_t *outlen)
{
	static const char json[] = "{\"op\":\"tty\"}";
	return protocol_encode_text("", json, sizeof(json) - 1, out, outlen);
}

int protocol_restart_line(uint64_t id, char **out, size_t *outlen)
{
	char json[64];
	int n = snprintf(json, sizeof(json), "{\"id\":%llu,\"op\":\"restart\"}",
			 (unsigned long long)id);
	return protocol_encode_text("", json, (size_t)n, out, outlen);
}

void protocol_describe_exit(int wstatus, char *why, size_t len)
{
	int st = wstatus;
	if (WIFSIGNALED(st))
		snprintf(why, len, "killed by signal %d, %s", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + NSIG)
		snprintf(why, len, "killed by signal %d, %s", WEXITSTATUS(st) - 128,
			 strsignal(WEXITSTATUS(st) - 128));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == PROTOCOL_EXIT_NO_RESULT)
		snprintf(why, len,
			 "its kernel could not make or send the snippet's result, the code "
			 "having broken what that takes (exit status %d)",
			 PROTOCOL_EXIT_NO_RESULT);
	else if (WIFEXITED(st) && WEXITSTATUS(st) == PROTOCOL_EXIT_NO_FDS)
		snprintf(why, len,
			 "its kernel could not open the file descriptors it needs, the code "
			 "having lowered RLIMIT_NOFILE (exit status %d)",
			 PROTOCOL_EXIT_NO_FDS);
	else if (WIFEXITED(st) && WEXITSTATUS(st) == PROTOCOL_EXIT_NO_TERMINAL)
		snprintf(why, len,
			 "its kernel lost its pipes to the relay, the code having closed or "
			 "replaced them (exit status %d)",
			 PROTOCOL_EXIT_NO_TERMINAL);
	else if (WIFEXITED(st) && WEXITSTATUS(st) == PROTOCOL_EXIT_NO_KERNEL)
		snprintf(why, len,
			 "its relay could not start a kernel, or lost the one it had "
			 "(exit status %d)",
			 PROTOCOL_EXIT_NO_KERNEL);
	else
		snprintf(why, len, "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static const struct {
	const char *name;
	enum protocol_frame_type type;
} protocol_frame_types[] = {
	{"ready", FRAME_READY},	  {"stream", FRAME_STREAM}, {"display", FRAME_DISPLAY},
	{"result", FRAME_RESULT}, {"pong", FRAME_PONG},	    {"error", FRAME_ERROR},
	{"died", FRAME_DIED},	  {"reply", FRAME_REPLY},   {"file", FRAME_FILE},
	{"stdin", FRAME_STDIN},
};

size_t protocol_json_values(const char *json, size_t len, size_t max)
{
	const char *p = json, *end = json + len;
	size_t n = 1;
	while (p < end) {
		char c = *p++;
		if (c == ',' || c == '[' || c == '{') {
			if (++n > max)
				return n;
		} else if (c == '"') {
			/* to the closing quote: the first after an even run of backslashes */
			for (;;) {
				const char *q = memchr(p, '"', (size_t)(end - p));
				if (!q)
					return n; /* unterminated: cJSON refuses it */
				const char *b = q;
				while (b > p && b[-1] == '\\')
					b--;
				p = q + 1;
				if ((q - b) % 2 == 0)
					break;
			}
		}
	}
	return n;
}

/* (Recursion as deep as the tree: cJSON parses no deeper than
 * CJSON_NESTING_LIMIT.) */
size_t protocol_json_cost(const cJSON *v)
{
	if (!v)
		return 0;
	size_t cost = sizeof(*v);
	if (v->string)
		cost += strlen(v->string) + 1;
	if (v->valuestring)
		cost += strlen(v->valuestring) + 1;
	for (const cJSON *c = v->child; c; c = c->next)
		cost += protocol_json_cost(c);
	return cost;
}

int protocol_parse_frame(const char *payload, size_t len, struct protocol_frame *f)
{
	memset(f, 0, sizeof(*f));
	int fast = stream_frame_parse(payload, len, &f->root, &f->id);
	if (fast != 0) { /* (bulk output: its own parser, a tree of five items) */
		f->type = FRAME_STREAM;
		f->has_id = fast > 0;
		return fast < 0 ? fast : 0;
	}
	/* Counted before cJSON builds anything: its items, not the text, are
	 * what a hostile frame would make the host pay for. */
	/* (a file frame, its type first as the relay writes it, may list many entries) */
	static const char file_frame[] = "{\"type\":\"file\"";
	size_t max_values = len >= sizeof(file_frame) - 1 &&
					    memcmp(payload, file_frame, sizeof(file_frame) - 1) == 0
				    ? PROTOCOL_MAX_FILE_VALUES
				    : PROTOCOL_MAX_VALUES;
	if (protocol_json_values(payload, len, max_values) > max_values)
		return -E2BIG;
	cJSON *root = cJSON_ParseWithLength(payload, len);
	if (!root && memmem(payload, len, "\\ud", 3)) {
		/* A lone surrogate (Python's json writes one for a str that holds it: a
		 * repr, an exception's text), which cJSON refuses: shown as U+FFFD. */
		char *copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, payload, len);
		if (protocol_json_mask_surrogates(copy, len) > 0)
			root = cJSON_ParseWithLength(copy, len);
		free(copy);
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	const char *type = protocol_str(root, "type");
	for (size_t i = 0;
	     type && i < sizeof(protocol_frame_types) / sizeof(protocol_frame_types[0]); i++)
		if (strcmp(type, protocol_frame_types[i].name) == 0)
			f->type = protocol_frame_types[i].type;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 9007199254740992.0 &&
	    floor(id->valuedouble) == id->valuedouble) {
		f->has_id = true;
		f->id = (uint64_t)id->valuedouble;
	}
	f->root = root;
	return 0;
}

void protocol_frame_free(struct protocol_frame *f)
{
	cJSON_Delete(f->root);
	f->root = NULL;
}

const char *protocol_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* v as JSON text that reads back as v exactly: a whole number in digits,
 * else the shortest of 15 to 17 significant digits that does; null for what
 * JSON cannot hold. (cJSON prints 15 digits when they read back within an
 * epsilon: 9007199254740991 came back as 9.00719925474099e+15.) */
static void protocol_print_double(double v, char *buf, size_t len)
{
	if (!isfinite(v)) {
		snprintf(buf, len, "null");
		return;
	}
	if (v == floor(v) && fabs(v) < 1e17) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, len, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

cJSON *protocol_json_dup_exact(const cJSON *v)
{
	if (cJSON_IsNumber(v)) {
		char num[40];
		protocol_print_double(v->valuedouble, num, sizeof(num));
		return cJSON_CreateRaw(num);
	}
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return cJSON_Duplicate(v, 0);
	cJSON *out = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
	const cJSON *c;
	cJSON_ArrayForEach(c, v)
	{
		cJSON *d = out ? protocol_json_dup_exact(c) : NULL;
		if (!d) {
			cJSON_Delete(out);
			return NULL;
		}
		if (cJSON_IsArray(v))
			cJSON_AddItemToArray(out, d);
		else
			cJSON_AddItemToObject(out, c->string, d);
	}
	return out;
}

static int protocol_key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *protocol_json_duplicate(const cJSON *v)
{
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return NULL;
	const cJSON *c;
	size_t n = 0;
	cJSON_ArrayForEach(c, v)
	{
		const char *inner = protocol_json_duplicate(c);
		if (inner)
			return inner;
		n++;
	}
	if (!cJSON_IsObject(v) || n < 2)
		return NULL;
	/* (sorted, not compared pair by pair: an env of 4096 names is 4096
	 * log 4096 compares, not 16 million) */
	const char **keys = malloc(n * sizeof(*keys));
	if (!keys)
		return "(out of memory)";
	size_t i = 0;
	cJSON_ArrayForEach(c, v) keys[i++] = c->string ? c->string : "";
	qsort(keys, n, sizeof(*keys), protocol_key_cmp);
	const char *dup = NULL;
	for (i = 1; i < n && !dup; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0)
			dup = keys[i];
	free(keys);
	return dup;
}

/* The value of four hex digits, or -1. */
static long protocol_hex4(const char *p)
{
	long v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

bool protocol_json_has_nul(const char *json, size_t len)
{
	if (memchr(json, '\0', len)) /* raw: cJSON takes it inside a string */
		return true;
	for (size_t i = 0; i + 1 < len; i++) {
		/* (memchr to the next backslash: a put's line is megabytes of base64) */
		const char *b = memchr(json + i, '\\', len - 1 - i);
		if (!b)
			break;
		i = (size_t)(b - json);
		/* \u0000, or a \u without four hex digits, which cJSON reads as U+0000 */
		if (json[i + 1] == 'u' && len - i >= 6 && protocol_hex4(json + i + 2) <= 0)
			return true;
		i++; /* the escaped character, a backslash among them */
	}
	return false;
}

size_t protocol_json_mask_surrogates(char *json, size_t len)
{
	size_t masked = 0;
	for (size_t i = 0; i + 1 < len; i++) {
		/* (memchr to the next backslash: a put's line is megabytes of base64) */
		const char *b = memchr(json + i, '\\', len - 1 - i);
		if (!b)
			break;
		i = (size_t)(b - json);
		long u = json[i + 1] == 'u' && len - i >= 6 ? protocol_hex4(json + i + 2) : -1;
		if (u < 0xd800 || u > 0xdfff) {
			i++; /* the escaped character, a backslash among them */
			continue;
		}
		if (u <= 0xdbff && len - i >= 12 && json[i + 6] == '\\' && json[i + 7] == 'u') {
			long lo = protocol_hex4(json + i + 8);
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				i += 11; /* a pair */
				continue;
			}
		}
		memcpy(json + i + 2, "fffd", 4);
		masked++;
		i += 5;
	}
	return masked;
}

size_t protocol_json_mask_nul(char *json, size_t len)
{
	size_t masked = 0;
	for (char *p = json; (p = memchr(p, '\0', len - (size_t)(p - json))) != NULL; p++) {
		*p = ' '; /* (first: a raw NUL may follow a backslash) */
		masked++;
	}
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '\\' && i + 1 < len) {
			if (json[i + 1] == 'u' && len - i >= 6 &&
			    protocol_hex4(json + i + 2) <= 0) {
				memcpy(json + i + 2, "2400", 4);
				masked++;
				i += 5;
			} else {
				i++; /* the escaped character, a backslash among them */
			}
		}
	}
	return masked;
}

bool protocol_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	while (p < end) {
		unsigned char c = *p;
		size_t n;
		unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
		if (c < 0x80) {
			uint64_t w; /* (ASCII eight bytes at a time) */
			p++;
			while (end - p >= 8 && (memcpy(&w, p, 8), (w & 0x8080808080808080ULL) == 0))
				p += 8;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 2;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 3;
			if (c == 0xe0)
				lo = 0xa0; /* overlong */
			else if (c == 0xed)
				hi = 0x9f; /* surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 4;
			if (c == 0xf0)
				lo = 0x90; /* overlong */
			else if (c == 0xf4)
				hi = 0x8f; /* past U+10FFFF */
		} else {
			return false;
		}
		if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
			return false;
		for (size_t i = 2; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n;
	}
	return true;
}

size_t protocol_utf8_prefix(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/* The code point of the well-formed 2- or 3-byte UTF-8 sequence at p (n bytes
 * left), with its length in *seq; -1 for anything else (every character that
 * term_safe_hidden names is below U+10000). */
static long protocol_utf8_char(const unsigned char *p, size_t n, size_t *seq)
{
	if (p[0] >= 0xc2 && p[0] <= 0xdf && n >= 2 && (p[1] & 0xc0) == 0x80) {
		*seq = 2;
		return (long)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	}
	if (p[0] >= 0xe0 && p[0] <= 0xef && n >= 3 && (p[1] & 0xc0) == 0x80 &&
	    (p[2] & 0xc0) == 0x80) {
		long cp = (long)(p[0] & 0x0f) << 12 | (long)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		*seq = 3;
		return cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff) ? cp : -1;
	}
	return -1;
}

char *protocol_json_escape_unsafe(char *json, size_t *len)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t n = *len, grow = 0, seq;
	/* Such characters are rare: the first pass only looks; most lines are
	 * handed back untouched. */
	for (size_t i = 0; i < n; i++) {
		/* ASCII eight bytes at a time: a 20 MB result is read once, quickly */
		uint64_t w;
		while (i + 8 <= n && (memcpy(&w, p + i, 8), (w & 0x8080808080808080ULL) == 0))
			i += 8;
		if (i >= n)
			break;
		if (p[i] < 0xc2)
			continue;
		long cp = protocol_utf8_char(p + i, n - i, &seq);
		if (cp >= 0 && term_safe_hidden((uint32_t)cp)) {
			grow += 6 - seq;
			i += seq - 1;
		}
	}
	if (grow == 0)
		return json;
	char *out = cJSON_malloc(n + grow + 1);
	if (!out) {
		cJSON_free(json);
		return NULL;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		long cp = p[i] < 0xc2 ? -1 : protocol_utf8_char(p + i, n - i, &seq);
		if (cp >= 0 && term_safe_hidden((uint32_t)cp)) {
			out[o++] = '\\';
			out[o++] = 'u';
			for (int k = 12; k >= 0; k -= 4)
				out[o++] = "0123456789abcdef"[(cp >> k) & 15];
			i += seq - 1;
		} else {
			out[o++] = json[i];
		}
	}
	out[o] = '\0';
	cJSON_free(json);
	*len = o;
	return out;
}

/* Milliseconds to the microsecond, printed directly, like the integers. */
static bool protocol_add_ms(cJSON *o, const char *key, double ms)
{
	/* Whole microseconds in digits, not snprintf's "%.3f": its floating-point
	 * machinery cost more than the rest of a small result's object. */
	char num[48];
	uint64_t us = isfinite(ms) && ms > 0 && ms < 1e15 ? (uint64_t)(ms * 1000.0 + 0.5) : 0;
	size_t n = protocol_put_uint(num, us / 1000);
	num[n++] = '.';
	num[n++] = (char)('0' + us / 100 % 10);
	num[n++] = (char)('0' + us / 10 % 10);
	num[n++] = (char)('0' + us % 10);
	num[n] = '\0';
	return cJSON_AddRawToObject(o, key, num) != NULL;
}

/* Members that refer to the result's strings and trees, not copies of them:
 * deleting the object leaves those alone. */
static cJSON *protocol_ref(const cJSON *item, cJSON *fallback)
{
	if (!item)
		return fallback;
	cJSON_Delete(fallback);
	return cJSON_IsArray(item) ? cJSON_CreateArrayReference(item->child)
				   : cJSON_CreateObjectReference(item->child);
}

#define PROTOCOL_ONES  0x0101010101010101ULL
#define PROTOCOL_HIGHS 0x8080808080808080ULL

/* Whether one of the 8 bytes of w needs quoting in a JSON string: below 0x20,
 * a quote or a backslash (bytes from 0x80 are taken as they are, as cJSON does). */
static bool protocol_word_needs_escape(uint64_t w)
{
	uint64_t q = w ^ (PROTOCOL_ONES * '"'), b = w ^ (PROTOCOL_ONES * '\\');
	return (((w - PROTOCOL_ONES * 0x20) & ~w) | ((q - PROTOCOL_ONES) & ~q) |
		((b - PROTOCOL_ONES) & ~b)) &
	       PROTOCOL_HIGHS;
}

/* A long text as a JSON string, quoted as cJSON quotes it, made into a raw
 * item: cJSON's printer quotes one byte at a time in two passes, which for
 * 20 MB of output cost more than all the rest of the result. */
#define PROTOCOL_RAW_TEXT ((size_t)4096)
static cJSON *protocol_text_item(const char *text)
{
	size_t len = strlen(text);
	if (len < PROTOCOL_RAW_TEXT)
		return cJSON_CreateStringReference(text);
	size_t extra = 0;
	for (size_t i = 0; i < len; i++) {
		uint64_t w;
		while (i + 8 <= len && (memcpy(&w, text + i, 8), !protocol_word_needs_escape(w)))
			i += 8;
		if (i >= len)
			break;
		unsigned char c = (unsigned char)text[i];
		if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' ||
		    c == '\t')
			extra += 1;
		else if (c < 0x20)
			extra += 5;
	}
	char *out = malloc(len + extra + 3);
	if (!out)
		return NULL;
	size_t o = 0;
	out[o++] = '"';
	for (size_t i = 0; i < len;) {
		size_t start = i;
		uint64_t w;
		while (i + 8 <= len && (memcpy(&w, text + i, 8), !protocol_word_needs_escape(w)))
			i += 8;
		while (i < len && (unsigned char)text[i] >= 0x20 && text[i] != '"' &&
		       text[i] != '\\')
			i++;
		memcpy(out + o, text + start, i - start);
		o += i - start;
		if (i >= len)
			break;
		unsigned char c = (unsigned char)text[i++];
		const char *short_esc = c == '"'    ? "\\\""
					: c == '\\' ? "\\\\"
					: c == '\b' ? "\\b"
					: c == '\f' ? "\\f"
					: c == '\n' ? "\\n"
					: c == '\r' ? "\\r"
					: c == '\t' ? "\\t"
						    : NULL;
		if (short_esc) {
			out[o++] = short_esc[0];
			out[o++] = short_esc[1];
		} else {
			static const char hex[] = "0123456789abcdef";
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[c >> 4];
			out[o + 5] = hex[c & 15];
			o += 6;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	cJSON *item = cJSON_CreateRaw("");
	if (!item) {
		free(out);
		return NULL;
	}
	cJSON_free(item->valuestring); /* (the quoted text in place of cJSON's copy) */
	item->valuestring = out;
	return item;
}

cJSON *protocol_result_object(const struct ptybox_result *r)
{
	const struct ptybox_result_detail *d = r->detail;
	cJSON *o = cJSON_CreateObject();
	bool ok = o && protocol_json_add_uint(o, "id", r->id) &&
		  cJSON_AddStringToObject(o, "status", ptybox_status_name(r->status)) &&
		  cJSON_AddItemToObject(o, "stdout",
					protocol_text_item(r->stdout_text ? r->stdout_text : "")) &&
		  cJSON_AddItemToObject(o, "stderr",
					protocol_text_item(r->stderr_text ? r->stderr_text : "")) &&
		  cJSON_AddItemToObject(o, "result",
					protocol_ref(d ? d->bundle : NULL, cJSON_CreateNull())) &&
		  cJSON_AddItemToObject(o, "display",
					protocol_ref(d ? d->display : NULL, cJSON_CreateArray())) &&
		  cJSON_AddItemToObject(o, "error",
					protocol_ref(d ? d->error : NULL, cJSON_CreateNull())) &&
		  protocol_add_ms(o, "duration_ms", r->duration_ms) &&
		  cJSON_AddBoolToObject(o, "truncated", r->truncated) &&
		  protocol_json_add_uint(o, "dropped_bytes", r->dropped_bytes) &&
		  cJSON_AddBoolToObject(o, "state_lost", r->state_lost) &&
		  (r->message ? cJSON_AddStringToObject(o, "message", r->message) != NULL
			      : cJSON_AddNullToObject(o, "message") != NULL);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *protocol_result_json(const struct ptybox_result *r)
{
	cJSON *o = protocol_result_object(r);
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	size_t len = s ? strlen(s) : 0;
	return s ? protocol_json_escape_unsafe(s, &len) : NULL;
}
