/*
 * mcp.h - the Model Context Protocol (JSON-RPC 2.0, revision 2025-06-18) on
 * top of the server's protocol: MCP messages in, the server's requests out;
 * the server's replies and events in, MCP responses and notifications out.
 * Pure: no I/O. Both sides are lines handed to sinks, so the same code
 * drives sessions in this process (a server_client) or another server's
 * (its socket, or ssh and dial-stdio), and unit tests drive it byte by byte.
 */
#ifndef PTYBOX_MCP_H
#define PTYBOX_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The revisions spoken, newest first: initialize answers the client's if it
 * is one of them, else the first. */
#define MCP_PROTOCOL_LATEST "2025-06-18"
/* The session a tool call without "session" goes to, made on first use. */
#define MCP_DEFAULT_SESSION "default"
/* Tool calls waiting for the server at once; more are answered with an
 * error at once (an agent runs a handful). */
#define MCP_MAX_CALLS 4096
/* The most of one stream event that a progress notification carries. */
#define MCP_PROGRESS_TEXT 4096

/* Each sink takes a line (malloc'd, newline included). */
typedef void (*mcp_sink_fn)(void *data, char *line, size_t len);

struct mcp_config {
	const char *version; /* serverInfo's */
	/* new's "options" for the sessions made (may be NULL); kept by the caller. */
	const cJSON *options;
	bool hello; /* say hello to the server first (a socket, not in-process) */
	mcp_sink_fn to_client, to_server;
	/* The server refused hello, or is gone: mcp answers no more (may be NULL). */
	void (*fatal)(void *data, const char *why);
	void *data;
};

struct mcp;

/* NULL when out of memory. Sends hello when cfg->hello. */
struct mcp *mcp_new(const struct mcp_config *cfg);
/* One line from the MCP client (no newline). */
void mcp_client_line(struct mcp *m, const char *line, size_t len);
/* A line from the client passed the cap (max bytes) and was skipped. */
void mcp_client_too_long(struct mcp *m, size_t max);
/* One line from the server (no newline). */
void mcp_server_line(struct mcp *m, const char *line, size_t len);
/* The server is gone: every call waiting is answered with why, and so is
 * every later one. */
void mcp_server_gone(struct mcp *m, const char *why);
/* Tool calls not answered yet. */
size_t mcp_pending(const struct mcp *m);
void mcp_free(struct mcp *m);

#endif
