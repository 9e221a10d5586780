/*
 * mcp_id.h - a JSON-RPC id as the client wrote it. cJSON keeps a number as a
 * double, so 12345678901234567890 or 1e400 would be answered as another id
 * that no client matches; the id's text from the line is echoed instead.
 */
#ifndef PTYBOX_MCP_ID_H
#define PTYBOX_MCP_ID_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Where the value of the top-level member key of the JSON object json (len
 * bytes, valid JSON: cJSON parsed it) is: *at and *n. The first member
 * spelled key without escapes, as cJSON takes the first of duplicates.
 * -ENOENT when there is none. */
int mcp_json_member_text(const char *json, size_t len, const char *key, size_t *at, size_t *n);
/* Whether the ids a and b are one: an id as sent is a raw item (its text),
 * and a number (a requestId, parsed) names it when it reads as its value. */
bool mcp_id_same(const cJSON *a, const cJSON *b);

#endif
