/*
 * fuzz_protocol.c - libFuzzer target for the wire protocol's pure code (src/protocol.c).
 *
 * The input is used whole, five ways, each against a property or a second opinion:
 *   - as a frame payload: protocol_parse_frame takes or refuses it, never reads past it, and
 *     what it takes has a known type and an id below 2^53;
 *   - as a snippet: protocol_exec_line refuses it if it has a NUL, else its line decodes (base64,
 *     then cJSON) to a request whose code is the input, byte for byte;
 *   - as UTF-8: protocol_utf8_valid agrees with a decoder written out here, and the prefix that
 *     protocol_utf8_prefix keeps is within bounds and valid when the input is;
 *   - as a JSON request line: protocol_json_mask_surrogates changes only the hex digits of \u
 *     escapes, leaves nothing to mask a second time, and masks nothing in a text cJSON takes
 *     (cJSON refuses lone surrogates);
 *   - protocol_json_has_nul finds a raw NUL whenever there is one, and nothing once
 *     protocol_json_mask_nul has masked what it found, which masks nothing else;
 *   - as a request id: what protocol_json_dup_exact makes of the JSON value prints as JSON that
 *     reads back as the same value, every number the same double (null for infinities).
 *   - as JSON text cJSON takes: printed and escaped by protocol_json_escape_unsafe, it reads
 *     back as the same value, with no C1 or bidi control left raw.
 *   - as a stream frame: what stream_frame_parse takes, cJSON (after the same surrogate masking
 *     as protocol_parse_frame) reads as the same tree; a deflated one inflates within its cap.
 * Any disagreement aborts.
 */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "protocol.h"
#include "stream_frame.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A copy with no byte after it: what the code under test reads must stay inside. */
static char *exact_copy(const uint8_t *data, size_t size)
{
	char *p = calloc(size ? size : 1, 1); /* (gcc -O2 warns of an empty malloc as unset) */
	CHECK(p != NULL);
	if (size)
		memcpy(p, data, size);
	return p;
}

static void check_frame(const uint8_t *data, size_t size)
{
	char *payload = exact_copy(data, size);
	struct protocol_frame f;
	if (protocol_parse_frame(payload, size, &f) == 0) {
		CHECK(f.type >= FRAME_UNKNOWN && f.type <= FRAME_ERROR);
		CHECK(cJSON_IsObject(f.root));
		CHECK(!f.has_id || f.id < ((uint64_t)1 << 53));
		(void)protocol_str(f.root, "type");
		(void)protocol_str(f.root, "text");
		protocol_frame_free(&f);
	}
	free(payload);
}

static void check_stream_fast(const uint8_t *data, size_t size)
{
	char *payload = exact_copy(data, size);
	cJSON *fast = NULL;
	uint64_t id = 0;
	int rc = stream_frame_parse(payload, size, &fast, &id);
	CHECK(rc == 0 || rc == 1 || rc == -EINVAL || rc == -ENOMEM);
	CHECK(rc == 1 || fast == NULL);
	if (rc == 1) {
		cJSON *slow = cJSON_ParseWithLength(payload, size);
		if (!slow && protocol_json_mask_surrogates(payload, size) > 0)
			slow = cJSON_ParseWithLength(payload, size);
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(fast, "text");
		CHECK(cJSON_IsString(text));
		if (cJSON_GetObjectItemCaseSensitive(slow, "z")) /* deflated: bounded, no NUL */
			CHECK(strlen(text->valuestring) <= PROTOCOL_STREAM_Z_MAX);
		else
			CHECK(slow != NULL && cJSON_Compare(fast, slow, true));
		CHECK(id < ((uint64_t)1 << 53));
		cJSON_Delete(slow);
	}
	cJSON_Delete(fast);
	free(payload);
}

static void check_exec_line(const uint8_t *data, size_t size)
{
	char *line = NULL;
	size_t line_len = 0;
	uint64_t id = size * 2654435761u,
		 max_output = size & 1 ? PROTOCOL_DEFAULT_MAX_OUTPUT : size;
	int rc = protocol_exec_line(id, (const char *)data, size, max_output,
				    PROTOCOL_DEFAULT_BUSY_POLL, &line, &line_len);
	if (size && memchr(data, '\0', size)) {
		CHECK(rc < 0);
		return;
	}
	CHECK(rc == 0);
	CHECK(line_len > 0 && line[line_len - 1] == '\n' && strlen(line) == line_len);

	unsigned char *json = malloc(line_len);
	size_t json_len = 0;
	CHECK(json != NULL);
	CHECK(sodium_base642bin(json, line_len, line, line_len - 1, NULL, &json_len, NULL,
				sodium_base64_VARIANT_URLSAFE) == 0);
	cJSON *req = cJSON_ParseWithLength((const char *)json, json_len);
	CHECK(cJSON_IsObject(req));
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(req, "code");
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(req, "id");
	const cJSON *max = cJSON_GetObjectItemCaseSensitive(req, "max_output");
	CHECK(cJSON_IsString(code) && strlen(code->valuestring) == size);
	CHECK(size == 0 || memcmp(code->valuestring, data, size) == 0);
	CHECK(cJSON_IsNumber(rid) && rid->valuedouble == (double)id);
	CHECK(strcmp(protocol_str(req, "op"), "exec") == 0);
	CHECK(max_output == PROTOCOL_DEFAULT_MAX_OUTPUT
		      ? max == NULL
		      : cJSON_IsNumber(max) && max->valuedouble == (double)max_output);
	cJSON_Delete(req);
	free(json);
	free(line);
}

/* RFC 3629, one code point at a time: the second opinion on protocol_utf8_valid. */
static bool ref_utf8_valid(const uint8_t *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint8_t c = s[i];
		size_t n = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		if (n == 0 || len - i < n)
			return false;
		uint32_t cp = n == 1 ? c : c & (0x7f >> n);
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
		if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

static void check_utf8(const uint8_t *data, size_t size)
{
	char *s = exact_copy(data, size);
	bool valid = protocol_utf8_valid(s, size);
	CHECK(valid == ref_utf8_valid(data, size));
	size_t max = size ? data[0] : 0;
	size_t keep = protocol_utf8_prefix(s, size, max);
	CHECK(keep <= size && keep <= max);
	if (valid) {
		CHECK(protocol_utf8_valid(s, keep));
		CHECK(keep + 3 >= (size < max ? size : max)); /* cuts at most one character */
	}
	free(s);
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void check_nul(const uint8_t *data, size_t size)
{
	bool nul = protocol_json_has_nul((const char *)data, size);
	if (size && memchr(data, '\0', size))
		CHECK(nul);
	char *text = exact_copy(data, size);
	size_t masked = protocol_json_mask_nul(text, size);
	CHECK((masked > 0) == nul);
	CHECK(!protocol_json_has_nul(text, size));
	if (!nul)
		CHECK(size == 0 || memcmp(text, data, size) == 0);
	free(text);
}

static void check_surrogates(const uint8_t *data, size_t size)
{
	char *text = exact_copy(data, size);
	size_t masked = protocol_json_mask_surrogates(text, size);
	size_t changed = 0;
	for (size_t i = 0; i < size; i++) {
		if (text[i] == (char)data[i])
			continue;
		/* Only the four hex digits after a "\u". */
		CHECK(is_hex((char)data[i]) && strchr("fd", text[i]) != NULL);
		changed++;
	}
	CHECK(changed <= 4 * masked);
	CHECK(protocol_json_mask_surrogates(text, size) == 0);
	/* Taken whole (cJSON_ParseWithLength alone stops after the first value). */
	const char *end = NULL;
	cJSON *parsed = cJSON_ParseWithLengthOpts((const char *)data, size, &end, false);
	while (parsed && end < (const char *)data + size && strchr(" \t\r\n", *end) && *end)
		end++;
	/* (Nor a bad \u, which cJSON takes as U+0000 and requests are refused for.) */
	if (parsed != NULL && end == (const char *)data + size &&
	    !protocol_json_has_nul((const char *)data, size))
		CHECK(masked == 0);
	cJSON_Delete(parsed);
	free(text);
}

/* a and b are the same JSON value, numbers equal as doubles; b has null for an infinity. */
static bool same_value(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsNumber(a) && (a->valuedouble > 1e308 || a->valuedouble < -1e308))
		return cJSON_IsNull(b);
	if (cJSON_IsNumber(a))
		return cJSON_IsNumber(b) && a->valuedouble == b->valuedouble &&
		       (a->valuedouble != 0 || signbit(a->valuedouble) == signbit(b->valuedouble));
	if ((a->type & 0xFF) != (b->type & 0xFF))
		return false;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	const cJSON *x = a->child, *y = b->child;
	for (; x && y; x = x->next, y = y->next)
		if ((cJSON_IsObject(a) && strcmp(x->string, y->string) != 0) || !same_value(x, y))
			return false;
	return !x && !y;
}

static void check_exact_id(const uint8_t *data, size_t size)
{
	cJSON *id = cJSON_ParseWithLength((const char *)data, size);
	if (!id)
		return;
	cJSON *dup = protocol_json_dup_exact(id);
	CHECK(dup != NULL);
	char *text = cJSON_PrintUnformatted(dup);
	CHECK(text != NULL);
	cJSON *back = cJSON_Parse(text);
	CHECK(back != NULL && same_value(id, back));
	cJSON_Delete(back);
	cJSON_free(text);
	cJSON_Delete(dup);
	cJSON_Delete(id);
}

static void check_escape_unsafe(const uint8_t *data, size_t size)
{
	cJSON *v = cJSON_ParseWithLength((const char *)data, size);
	char *s = v ? cJSON_PrintUnformatted(v) : NULL;
	cJSON_Delete(v);
	if (!s)
		return;
	/* The printed line's value, before and after (cJSON's print rounds some
	 * numbers: the input's value is not the line's). */
	cJSON *before = cJSON_Parse(s);
	size_t len = strlen(s);
	s = protocol_json_escape_unsafe(s, &len);
	CHECK(s != NULL && strlen(s) == len);
	cJSON *after = cJSON_ParseWithLength(s, len);
	CHECK(after != NULL && cJSON_Compare(before, after, 1));
	CHECK(!strstr(s, "\xc2\x85") && !strstr(s, "\xe2\x80\xae"));
	cJSON_Delete(after);
	cJSON_Delete(before);
	cJSON_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_frame(data, size);
	check_stream_fast(data, size);
	check_exec_line(data, size);
	check_utf8(data, size);
	check_surrogates(data, size);
	check_nul(data, size);
	check_exact_id(data, size);
	check_escape_unsafe(data, size);
	return 0;
}
