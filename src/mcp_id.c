/*
 * mcp_id.c - a top-level member's text in a JSON line (mcp_id.h). A scanner
 * of valid JSON only: strings skipped by their escapes, brackets counted.
 */
#include "mcp_id.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t mcp_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/* The index after the string that starts at s[i] ('"'). */
static size_t mcp_string_end(const char *s, size_t len, size_t i)
{
	for (i++; i < len && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i < len ? i + 1 : len;
}

/* The index after the value that starts at s[i]. */
static size_t mcp_value_end(const char *s, size_t len, size_t i)
{
	if (s[i] == '"')
		return mcp_string_end(s, len, i);
	if (s[i] == '{' || s[i] == '[') {
		size_t depth = 0;
		while (i < len) {
			if (s[i] == '"') {
				i = mcp_string_end(s, len, i);
				continue;
			}
			if (s[i] == '{' || s[i] == '[')
				depth++;
			else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
				return i + 1;
			i++;
		}
		return len;
	}
	while (i < len && !strchr(",}] \t\r\n", s[i]))
		i++; /* a number or a literal */
	return i;
}

int mcp_json_member_text(const char *json, size_t len, const char *key, size_t *at, size_t *n)
{
	size_t klen = strlen(key), i = mcp_ws(json, len, 0);
	if (i >= len || json[i] != '{')
		return -ENOENT;
	for (i = mcp_ws(json, len, i + 1); i < len && json[i] == '"';) {
		size_t k = i, kend = mcp_string_end(json, len, i);
		i = mcp_ws(json, len, kend);
		if (i >= len || json[i] != ':')
			return -ENOENT;
		size_t v = mcp_ws(json, len, i + 1);
		if (v >= len)
			return -ENOENT;
		size_t vend = mcp_value_end(json, len, v);
		if (kend - k == klen + 2 && memcmp(json + k + 1, key, klen) == 0) {
			*at = v;
			*n = vend - v;
			return 0;
		}
		i = mcp_ws(json, len, vend);
		if (i >= len || json[i] != ',')
			return -ENOENT;
		i = mcp_ws(json, len, i + 1);
	}
	return -ENOENT;
}

/* Whether the ids a and b (as sent, or a number that names one) are one. */
bool mcp_id_same(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsRaw(a) && cJSON_IsRaw(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsRaw(b))
		return mcp_id_same(b, a);
	if (cJSON_IsRaw(a))
		return cJSON_IsNumber(b) && strtod(a->valuestring, NULL) == b->valuedouble;
	return cJSON_Compare(a, b, 1);
}
