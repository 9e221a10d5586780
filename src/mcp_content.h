/*
 * mcp_content.h - what a tool's result shows the model: a run's result (its
 * text capped for an agent's context, one item per display, pictures checked)
 * and a file's bytes. Pure: cJSON in, cJSON out.
 */
#ifndef PTYBOX_MCP_CONTENT_H
#define PTYBOX_MCP_CONTENT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The most of one text item, by default: an agent's context takes tens of KB
 * of a tool's result, not the server's 4 MiB per stream. A longer text keeps
 * its head and its tail with a note of the bytes cut between. */
#define MCP_MAX_TEXT (64u << 10)
/* The least a cap may be: room for a head, a tail and the note. */
#define MCP_MIN_TEXT 256u

/* A result object: {"content":[], "isError"} with *content its array. */
cJSON *mcp_tool_result(cJSON **content, bool is_error);
void mcp_add_text(cJSON *content, const char *text);
/* The picture type that bytes b start with (PNG, JPEG, GIF), or NULL. */
const char *mcp_image_mime(const unsigned char *b, size_t n);
/* text (len bytes, UTF-8) in at most max bytes plus the note: head, "[... N
 * bytes cut ...]", tail, each cut at a character. malloc'd, NUL-ended. */
char *mcp_text_cap(const char *text, size_t len, size_t max);
/* A run's result (the server's exec reply) as a tool's result; restart_told:
 * the restart tool's reply said the state went, so state_lost says nothing. */
cJSON *mcp_run_content(const cJSON *res, size_t max_text, bool restart_told, bool *is_error);
/* A get's reply as a tool's result (text capped as a run's); path names a
 * resource. */
cJSON *mcp_get_content(const cJSON *reply, const char *path, size_t max_text);

#endif
