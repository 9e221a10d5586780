/*
 * mcp.c - MCP's JSON-RPC over the server's protocol (mcp.h). A tool call
 * becomes one server request (two for the default session's first use: a
 * `new`, then the call), with an id of ours; the call waits in a list until
 * the reply with that id comes, which becomes the tool's result. A run's
 * result is text (stdout, stderr, the value, the error, what was cut) and one
 * image item per picture, so a plot reaches the model as a picture; code
 * that raised is a result with isError, never a protocol error.
 *
 * Shaped as two sinks and no I/O so that cli_mcp.c can feed it from the
 * loop, from a server in this process or across a socket, and the unit test
 * can check every line that goes out.
 */
#define _GNU_SOURCE
#include "mcp.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp_content.h"
#include "mcp_id.h"
#include "options.h"
#include "protocol.h"
#include "server.h"

/* What a server request was sent for. */
enum mcp_kind {
	K_HELLO,
	K_ENSURE, /* the default session's `new`, before its first call */
	K_RUN,
	K_NEW,
	K_LS,
	K_INTERRUPT,
	K_RESTART,
	K_KILL,
	K_PUT,
	K_GET,
	K_CANCEL, /* an interrupt for a cancelled run: its reply is ours */
};

struct mcp_call {
	struct mcp_call *next;
	uint64_t sid; /* the server request's id */
	enum mcp_kind kind;
	cJSON *rid;	 /* the MCP request's id (NULL: an internal one) */
	cJSON *progress; /* the progressToken, or NULL */
	char session[72];
	char path[512];	 /* get: the file's, for the reply */
	uint64_t exec;	 /* a run's execution, once accepted (0: not yet) */
	size_t max_text; /* its text items' cap */
	double progress_n;
	bool cancelled;	     /* notifications/cancelled named it: no reply */
	bool interrupt;	     /* cancelled before accepted: interrupt once it is */
	bool restart_told;   /* K_RUN: the first run after our restart, which said so */
	bool capped;	     /* K_RUN: its timeout was past timeout_max, which it ran with */
	char *ensure_err;    /* the default session could not be made: why */
	uint64_t ensure_for; /* K_ENSURE: the call it was sent for */
};

struct mcp_restarted {
	struct mcp_restarted *next;
	char session[72];
};

#define MCP_MAX_RESTARTED 256

struct mcp {
	struct mcp_config cfg;
	struct mcp_call *calls; /* newest first */
	size_t ncalls;
	uint64_t next_sid;
	bool default_asked; /* a `new` of the default session was sent and did not fail */
	/* Sessions whose restart this client asked for (its reply says what it
	 * cost) and that have run nothing since: their next run does not say
	 * it again. At most MCP_MAX_RESTARTED, past which the note is repeated. */
	struct mcp_restarted *restarted;
	size_t nrestarted;
	bool gone;
	char gone_why[256];
	/* run_code's timeout may only lower this: the command line's --timeout,
	 * else a session's default (0: none, --timeout 0). */
	double timeout_max;
};

/* A session's timeout when its options give none (session.c's). */
#define MCP_SESSION_TIMEOUT 30.0

static const char *const mcp_versions[] = {MCP_PROTOCOL_LATEST, "2025-03-26", "2024-11-05"};

/* ---- sending ---- */

static void mcp_emit(struct mcp *m, mcp_sink_fn sink, cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!s)
		abort(); /* out of memory is fatal (STYLE.md) */
	size_t n = strlen(s);
	s = protocol_json_escape_unsafe(s, &n);
	if (!s)
		abort();
	char *line = malloc(n + 2);
	if (!line)
		abort();
	memcpy(line, s, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	cJSON_free(s);
	sink(m->cfg.data, line, n + 1);
}

static cJSON *mcp_obj(void)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		abort();
	return o;
}

static cJSON *mcp_envelope(const cJSON *id)
{
	cJSON *o = mcp_obj();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", id ? protocol_json_dup_exact(id) : cJSON_CreateNull());
	return o;
}

static void mcp_result(struct mcp *m, const cJSON *id, cJSON *result)
{
	cJSON *o = mcp_envelope(id);
	cJSON_AddItemToObject(o, "result", result);
	mcp_emit(m, m->cfg.to_client, o);
}

static void mcp_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mcp_error(struct mcp *m, const cJSON *id, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* (it quotes the client's text: cut at a character, or the line is not UTF-8) */
	if (n >= (int)sizeof(msg))
		msg[protocol_utf8_prefix(msg, sizeof(msg) - 1, sizeof(msg) - 2)] = '\0';
	cJSON *o = mcp_envelope(id);
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	mcp_emit(m, m->cfg.to_client, o);
}

/* A tool result of one text item. */
static void mcp_tool_text(struct mcp *m, const cJSON *id, bool is_error, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mcp_tool_text(struct mcp *m, const cJSON *id, bool is_error, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	cJSON *content;
	cJSON *r = mcp_tool_result(&content, is_error);
	mcp_add_text(content, msg);
	free(msg);
	mcp_result(m, id, r);
}

/* ---- calls waiting for the server ---- */

static struct mcp_call *mcp_call_new(struct mcp *m, enum mcp_kind kind, const cJSON *rid,
				     const char *session)
{
	struct mcp_call *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->sid = ++m->next_sid;
	c->kind = kind;
	c->rid = rid ? cJSON_Duplicate(rid, 0) : NULL; /* (as sent: mcp_client_line) */
	c->max_text = m->cfg.max_text ? m->cfg.max_text : MCP_MAX_TEXT;
	snprintf(c->session, sizeof(c->session), "%s", session ? session : "");
	c->next = m->calls;
	m->calls = c;
	m->ncalls++;
	return c;
}

/* Whether session is in the restarted list, and takes it off. */
static bool mcp_restarted_take(struct mcp *m, const char *session)
{
	for (struct mcp_restarted **p = &m->restarted; *p; p = &(*p)->next) {
		if (strcmp((*p)->session, session) != 0)
			continue;
		struct mcp_restarted *r = *p;
		*p = r->next;
		free(r);
		m->nrestarted--;
		return true;
	}
	return false;
}

/* A restart of session is asked for: the server queues it in order, so the
 * next run this client sends is the first on the fresh interpreter. */
static void mcp_restarted_add(struct mcp *m, const char *session)
{
	if (mcp_restarted_take(m, session) || m->nrestarted < MCP_MAX_RESTARTED) {
		struct mcp_restarted *r = calloc(1, sizeof(*r));
		if (!r)
			abort();
		snprintf(r->session, sizeof(r->session), "%s", session);
		r->next = m->restarted;
		m->restarted = r;
		m->nrestarted++;
	}
}

static void mcp_call_free(struct mcp_call *c)
{
	cJSON_Delete(c->rid);
	cJSON_Delete(c->progress);
	free(c->ensure_err);
	free(c);
}

static struct mcp_call *mcp_call_find(struct mcp *m, uint64_t sid)
{
	for (struct mcp_call *c = m->calls; c; c = c->next)
		if (c->sid == sid)
			return c;
	return NULL;
}

static void mcp_call_remove(struct mcp *m, struct mcp_call *c)
{
	for (struct mcp_call **p = &m->calls; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			m->ncalls--;
			return;
		}
}

/* A server request with c's id, op and session (when c names one). */
static cJSON *mcp_request(const struct mcp_call *c, const char *op)
{
	cJSON *r = mcp_obj();
	protocol_json_add_uint(r, "id", c->sid);
	cJSON_AddStringToObject(r, "op", op);
	if (c->session[0])
		cJSON_AddStringToObject(r, "session", c->session);
	return r;
}

static void mcp_send_server(struct mcp *m, cJSON *req)
{
	mcp_emit(m, m->cfg.to_server, req);
}

/* The default session is made on first use: a `new` goes before the call,
 * in the same queue (the server takes a request for a starting session). */
static void mcp_ensure_default(struct mcp *m, struct mcp_call *call)
{
	if (strcmp(call->session, MCP_DEFAULT_SESSION) != 0 || m->default_asked)
		return;
	m->default_asked = true;
	struct mcp_call *e = mcp_call_new(m, K_ENSURE, NULL, MCP_DEFAULT_SESSION);
	e->ensure_for = call->sid;
	/* (sent before call's request, whose id is older: ids need not grow) */
	cJSON *r = mcp_request(e, "new");
	if (m->cfg.options)
		cJSON_AddItemToObject(r, "options", cJSON_Duplicate(m->cfg.options, 1));
	mcp_send_server(m, r);
}

/* ---- tools ---- */

static const char mcp_tools_json[] =
	"["
	"{\"name\":\"run_code\",\"title\":\"Run code\","
	"\"description\":\"Run Python code in a sandboxed, stateful session: variables, imports "
	"and files persist between calls to the same session. Returns stdout, stderr, the value "
	"of the last expression (as a notebook cell does), and the error with its traceback if "
	"the code raised (then isError is true). Each picture the code shows (matplotlib's "
	"plt.show(), an IPython display) comes back as an image. Without 'session' the code runs "
	"in the session 'default', made on first use.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"code\":{\"type\":\"string\",\"description\":\"The code to run.\"},"
	"\"session\":{\"type\":\"string\",\"description\":\"The session to run it in (default: "
	"'default').\"},"
	"\"language\":{\"type\":\"string\",\"enum\":[\"python\"],\"description\":\"The "
	"code's language: python.\"},"
	"\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"description\":\"\"},"
	"\"max_output\":{\"type\":\"integer\",\"minimum\":256,\"description\":\"The most "
	"bytes of text to return (default: 65536, or ptybox mcp --max-text); a longer text "
	"keeps its head and tail.\"}},"
	"\"required\":[\"code\"],\"additionalProperties\":false},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"status\":{\"type\":\"string\",\"description\":\"ok, error, timeout, interrupted, "
	"crashed or cancelled\"},"
	"\"exec\":{\"type\":\"integer\",\"description\":\"The execution's id in its session "
	"(tracebacks name it <exec-N>)\"},"
	"\"session\":{\"type\":\"string\"},\"duration_ms\":{\"type\":\"number\"}},"
	"\"required\":[\"status\"]}},"
	"{\"name\":\"new_session\",\"title\":\"New session\","
	"\"description\":\"Create a new sandboxed Python session under a name, with the limits "
	"ptybox mcp was started with. Sessions are independent: each has its own variables and "
	"files.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
	"\"description\":\"Its name: 1 to 64 printable characters, no '/'.\"}},"
	"\"required\":[\"session\"],\"additionalProperties\":false}},"
	"{\"name\":\"list_sessions\",\"title\":\"List sessions\","
	"\"description\":\"List the sessions: name, state (starting, idle, busy, restarting, "
	"dead), uptime, executions, last status.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
	"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":"
	"\"array\",\"items\":{\"type\":\"object\"}}},\"required\":[\"sessions\"]}},"
	"{\"name\":\"interrupt\",\"title\":\"Interrupt\","
	"\"description\":\"Interrupt the code running in a session (as Ctrl-C: "
	"KeyboardInterrupt), keeping its state.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
	"\"description\":\"The session (default: 'default').\"}},\"additionalProperties\":false}},"
	"{\"name\":\"restart\",\"title\":\"Restart\","
	"\"description\":\"Restart a session's interpreter: every variable is lost, files in "
	"its folder stay.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
	"\"description\":\"The session (default: 'default').\"}},\"additionalProperties\":false}},"
	"{\"name\":\"kill_session\",\"title\":\"Kill session\","
	"\"description\":\"End a session: its interpreter, sandbox and files are gone.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\","
	"\"description\":\"The session to end.\"}},\"required\":[\"session\"],"
	"\"additionalProperties\":false}},"
	"{\"name\":\"put_file\",\"title\":\"Put file\","
	"\"description\":\"Write a file into a session's sandbox (parent folders made), for the "
	"code to read. A relative path is relative to the session's working folder.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"Where to write it.\"},"
	"\"content\":{\"type\":\"string\",\"description\":\"The file's content: text, or "
	"base64 with encoding 'base64'.\"},"
	"\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"],\"description\":"
	"\"How content is given (default: text).\"},"
	"\"session\":{\"type\":\"string\",\"description\":\"The session (default: "
	"'default').\"}},"
	"\"required\":[\"path\",\"content\"],\"additionalProperties\":false}},"
	"{\"name\":\"get_file\",\"title\":\"Get file\","
	"\"description\":\"Read a file from a session's sandbox: text comes back as text, a "
	"PNG, JPEG or GIF as an image, other bytes as a base64 resource.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"The file to read.\"},"
	"\"session\":{\"type\":\"string\",\"description\":\"The session (default: "
	"'default').\"}},"
	"\"required\":[\"path\"],\"additionalProperties\":false}}"
	"]";

/* args' member key as a string: 1 and *out, 0 absent, -1 of another type
 * (answered). */
static int mcp_arg_str(struct mcp *m, const cJSON *id, const cJSON *args, const char *key,
		       const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v)) {
		mcp_error(m, id, -32602, "invalid params: '%s' must be a string", key);
		return -1;
	}
	*out = v->valuestring;
	return 1;
}

/* The session a call names, or the default. -1 answered. */
static int mcp_arg_session(struct mcp *m, const cJSON *id, const cJSON *args, bool required,
			   const char **out)
{
	int rc = mcp_arg_str(m, id, args, "session", out);
	if (rc < 0)
		return -1;
	if (rc == 0 && required) {
		mcp_error(m, id, -32602, "invalid params: 'session' is required");
		return -1;
	}
	if (rc == 0)
		*out = MCP_DEFAULT_SESSION;
	if (strlen(*out) > 64) {
		mcp_tool_text(m, id, true, "session name longer than 64 bytes");
		return -1;
	}
	return 0;
}

/* Members of args that the tool does not take: one named, the call refused,
 * as the server refuses a typo ("timout") rather than run with a default. */
static int mcp_args_known(struct mcp *m, const cJSON *id, const cJSON *args, const char *takes)
{
	const cJSON *a;
	cJSON_ArrayForEach(a, args)
	{
		char word[80];
		snprintf(word, sizeof(word), " %s ", a->string ? a->string : "");
		if (!strstr(takes, word)) {
			mcp_error(m, id, -32602, "invalid params: unknown argument '%s'",
				  a->string ? a->string : "");
			return -1;
		}
	}
	return 0;
}

/* run_code's timeout as this mcp has it: its default, and its most. */
static void mcp_timeout_schema(const struct mcp *m, cJSON *tools)
{
	cJSON *run = cJSON_GetArrayItem(tools, 0);
	cJSON *schema = cJSON_GetObjectItemCaseSensitive(run, "inputSchema");
	cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	cJSON *t = cJSON_GetObjectItemCaseSensitive(props, "timeout");
	char text[256];
	if (m->timeout_max > 0)
		snprintf(text, sizeof(text),
			 "Seconds before the run is stopped (default and most: %g; a larger one "
			 "is cut to %g).",
			 m->timeout_max, m->timeout_max);
	else
		snprintf(text, sizeof(text),
			 "Seconds before the run is stopped (default: none, no limit).");
	cJSON *d = cJSON_CreateString(text);
	if (!d || !cJSON_ReplaceItemInObjectCaseSensitive(t, "description", d))
		abort(); /* (out of memory) */
}

/* "[timeout: ...]" at the end of the result's text: the call asked for more
 * than this mcp allows, and ran with its most. */
static void mcp_note_capped(const struct mcp *m, cJSON *result)
{
	char note[160];
	snprintf(note, sizeof(note),
		 "[timeout: %g s is the most here (ptybox mcp --timeout); the run had %g s]\n",
		 m->timeout_max, m->timeout_max);
	cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
	cJSON *first = cJSON_GetArrayItem(content, 0);
	cJSON *text = cJSON_GetObjectItemCaseSensitive(first, "text");
	const char *type = protocol_str(first, "type");
	if (cJSON_IsString(text) && type && strcmp(type, "text") == 0 &&
	    strcmp(text->valuestring, "(no output)") != 0) {
		size_t n = strlen(text->valuestring);
		char *s = malloc(n + strlen(note) + 2);
		if (!s)
			abort();
		sprintf(s, "%s%s%s", text->valuestring,
			n && text->valuestring[n - 1] != '\n' ? "\n" : "", note);
		cJSON_SetValuestring(text, s);
		free(s);
		return;
	}
	cJSON *item = cJSON_CreateObject();
	if (!item || !cJSON_AddStringToObject(item, "type", "text") ||
	    !cJSON_AddStringToObject(item, "text", note))
		abort();
	if (cJSON_IsString(text) && strcmp(text->valuestring, "(no output)") == 0)
		cJSON_ReplaceItemInArray(content, 0, item);
	else
		cJSON_InsertItemInArray(content, 0, item);
}

static void mcp_tool_run(struct mcp *m, const cJSON *id, const cJSON *args, const cJSON *progress)
{
	const char *code, *session, *lang;
	if (mcp_args_known(m, id, args, " code session language timeout max_output ") < 0 ||
	    mcp_arg_str(m, id, args, "code", &code) < 0 ||
	    mcp_arg_session(m, id, args, false, &session) < 0 ||
	    mcp_arg_str(m, id, args, "language", &lang) < 0)
		return;
	if (!code) {
		mcp_error(m, id, -32602, "invalid params: 'code' is required");
		return;
	}
	if (lang && strcasecmp(lang, "python") != 0 && strcasecmp(lang, "python3") != 0) {
		mcp_tool_text(m, id, true,
			      "language '%s' is not available: this ptybox runs python", lang);
		return;
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout");
	if (t && (!cJSON_IsNumber(t) || !(t->valuedouble > 0) || t->valuedouble > 1e9)) {
		mcp_error(m, id, -32602, "invalid params: 'timeout' must be a number of seconds");
		return;
	}
	const cJSON *mo = cJSON_GetObjectItemCaseSensitive(args, "max_output");
	if (mo && (!cJSON_IsNumber(mo) || !(mo->valuedouble >= MCP_MIN_TEXT) ||
		   mo->valuedouble > (double)(64u << 20))) {
		mcp_error(m, id, -32602,
			  "invalid params: 'max_output' must be a number of bytes, %u to 64 MiB",
			  MCP_MIN_TEXT);
		return;
	}
	struct mcp_call *c = mcp_call_new(m, K_RUN, id, session);
	c->restart_told = mcp_restarted_take(m, session);
	if (mo)
		c->max_text = (size_t)mo->valuedouble;
	if (progress)
		c->progress = cJSON_Duplicate(progress, 1);
	mcp_ensure_default(m, c);
	cJSON *r = mcp_request(c, "exec");
	cJSON_AddStringToObject(r, "code", code);
	c->capped = t && m->timeout_max > 0 && t->valuedouble > m->timeout_max;
	if (t)
		cJSON_AddNumberToObject(r, "timeout", c->capped ? m->timeout_max : t->valuedouble);
	cJSON_AddBoolToObject(r, "ack", 1); /* its exec id, for a cancellation */
	if (progress)
		cJSON_AddBoolToObject(r, "stream", 1);
	mcp_send_server(m, r);
}

static void mcp_tool_put(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *path, *content, *enc, *session;
	if (mcp_args_known(m, id, args, " path content encoding session ") < 0 ||
	    mcp_arg_str(m, id, args, "path", &path) < 0 ||
	    mcp_arg_str(m, id, args, "content", &content) < 0 ||
	    mcp_arg_str(m, id, args, "encoding", &enc) < 0 ||
	    mcp_arg_session(m, id, args, false, &session) < 0)
		return;
	if (!path || !content) {
		mcp_error(m, id, -32602, "invalid params: 'path' and 'content' are required");
		return;
	}
	bool b64 = enc && strcmp(enc, "base64") == 0;
	if (enc && !b64 && strcmp(enc, "text") != 0) {
		mcp_error(m, id, -32602, "invalid params: 'encoding' is 'text' or 'base64'");
		return;
	}
	size_t n = strlen(content);
	char *data = NULL;
	if (b64) { /* (checked here: the server's refusal names its own member) */
		unsigned char *bytes = malloc(n / 4 * 3 + 3);
		size_t got;
		if (!bytes)
			abort();
		int rc = protocol_base64_decode(bytes, content, n, &got);
		free(bytes);
		if (rc < 0) {
			mcp_error(m, id, -32602,
				  "invalid params: 'content' is not base64 (encoding is 'base64')");
			return;
		}
	} else {
		data = malloc((n + 2) / 3 * 4 + 1);
		if (!data)
			abort();
		data[protocol_base64_encode(data, (const unsigned char *)content, n)] = '\0';
	}
	struct mcp_call *c = mcp_call_new(m, K_PUT, id, session);
	mcp_ensure_default(m, c);
	cJSON *r = mcp_request(c, "put");
	cJSON_AddStringToObject(r, "path", path);
	cJSON_AddStringToObject(r, "data", b64 ? content : data);
	free(data);
	mcp_send_server(m, r);
}

static void mcp_tool_get(struct mcp *m, const cJSON *id, const cJSON *args)
{
	const char *path, *session;
	if (mcp_args_known(m, id, args, " path session ") < 0 ||
	    mcp_arg_str(m, id, args, "path", &path) < 0 ||
	    mcp_arg_session(m, id, args, false, &session) < 0)
		return;
	if (!path) {
		mcp_error(m, id, -32602, "invalid params: 'path' is required");
		return;
	}
	struct mcp_call *c = mcp_call_new(m, K_GET, id, session);
	snprintf(c->path, sizeof(c->path), "%s", path);
	mcp_ensure_default(m, c);
	cJSON *r = mcp_request(c, "get");
	cJSON_AddStringToObject(r, "path", path);
	mcp_send_server(m, r);
}

/* The tools that are one request on one session, or none. */
static void mcp_tool_simple(struct mcp *m, const cJSON *id, const cJSON *args, enum mcp_kind kind)
{
	static const struct {
		enum mcp_kind kind;
		const char *op;
		bool session, required;
	} ops[] = {
		{K_NEW, "new", true, true},
		{K_LS, "ls", false, false},
		{K_INTERRUPT, "interrupt", true, false},
		{K_RESTART, "restart", true, false},
		{K_KILL, "kill", true, true},
	};
	size_t i = 0;
	while (ops[i].kind != kind)
		i++;
	const char *session = NULL;
	if (mcp_args_known(m, id, args, ops[i].session ? " session " : " ") < 0 ||
	    (ops[i].session && mcp_arg_session(m, id, args, ops[i].required, &session) < 0))
		return;
	struct mcp_call *c = mcp_call_new(m, kind, id, session);
	cJSON *r = mcp_request(c, ops[i].op);
	if (kind == K_NEW && m->cfg.options)
		cJSON_AddItemToObject(r, "options", cJSON_Duplicate(m->cfg.options, 1));
	if (kind == K_RESTART)
		mcp_restarted_add(m, session);
	else if (kind == K_KILL) /* (a new session of that name has lost nothing) */
		mcp_restarted_take(m, session);
	mcp_send_server(m, r);
}

static void mcp_tools_call(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name)) {
		mcp_error(m, id, -32602, "invalid params: tools/call needs a 'name'");
		return;
	}
	if (args && cJSON_IsNull(args))
		args = NULL;
	if (args && !cJSON_IsObject(args)) {
		mcp_error(m, id, -32602, "invalid params: 'arguments' must be an object");
		return;
	}
	static const cJSON empty = {.type = cJSON_Object};
	if (!args)
		args = &empty;
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	const cJSON *progress = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	if (progress && !cJSON_IsString(progress) && !cJSON_IsNumber(progress))
		progress = NULL;
	if (m->gone) {
		mcp_tool_text(m, id, true, "%s", m->gone_why);
		return;
	}
	if (m->ncalls >= MCP_MAX_CALLS) {
		mcp_tool_text(m, id, true, "too many tool calls waiting (%d): try again later",
			      MCP_MAX_CALLS);
		return;
	}
	const char *n = name->valuestring;
	if (strcmp(n, "run_code") == 0)
		mcp_tool_run(m, id, args, progress);
	else if (strcmp(n, "put_file") == 0)
		mcp_tool_put(m, id, args);
	else if (strcmp(n, "get_file") == 0)
		mcp_tool_get(m, id, args);
	else if (strcmp(n, "new_session") == 0)
		mcp_tool_simple(m, id, args, K_NEW);
	else if (strcmp(n, "list_sessions") == 0)
		mcp_tool_simple(m, id, args, K_LS);
	else if (strcmp(n, "interrupt") == 0)
		mcp_tool_simple(m, id, args, K_INTERRUPT);
	else if (strcmp(n, "restart") == 0)
		mcp_tool_simple(m, id, args, K_RESTART);
	else if (strcmp(n, "kill_session") == 0)
		mcp_tool_simple(m, id, args, K_KILL);
	else
		mcp_error(m, id, -32602, "unknown tool '%s'", n);
}

/* ---- the client's messages ---- */

static void mcp_initialize(struct mcp *m, const cJSON *id, const cJSON *params)
{
	const char *want = protocol_str(params, "protocolVersion");
	const char *version = mcp_versions[0];
	for (size_t i = 0; want && i < sizeof(mcp_versions) / sizeof(mcp_versions[0]); i++)
		if (strcmp(want, mcp_versions[i]) == 0)
			version = mcp_versions[i];
	cJSON *r = mcp_obj();
	cJSON_AddStringToObject(r, "protocolVersion", version);
	cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", 0);
	cJSON *info = cJSON_AddObjectToObject(r, "serverInfo");
	cJSON_AddStringToObject(info, "name", "ptybox");
	cJSON_AddStringToObject(info, "title", "ptybox: sandboxed, stateful Python");
	cJSON_AddStringToObject(info, "version", m->cfg.version ? m->cfg.version : "0");
	cJSON_AddStringToObject(r, "instructions",
				"Run Python code with run_code: each session keeps its variables "
				"between calls, in a sandbox (no network unless allowed, limited "
				"memory and time). Pictures come back as images.");
	mcp_result(m, id, r);
}

/* The run a cancellation names: interrupted (or, queued, dropped), and
 * answered never. */
static void mcp_cancelled(struct mcp *m, const cJSON *params)
{
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
	if (!rid)
		return;
	for (struct mcp_call *c = m->calls; c; c = c->next) {
		if (!c->rid || c->cancelled || !mcp_id_same(c->rid, rid))
			continue;
		c->cancelled = true;
		if (c->kind != K_RUN)
			return;
		if (!c->exec) {
			c->interrupt = true; /* (once the server says which exec it is) */
			return;
		}
		struct mcp_call *i = mcp_call_new(m, K_CANCEL, NULL, c->session);
		i->exec = c->exec;
		cJSON *r = mcp_request(i, "interrupt");
		protocol_json_add_uint(r, "exec", c->exec);
		mcp_send_server(m, r);
		return;
	}
}

static bool mcp_id_ok(const cJSON *id)
{
	return cJSON_IsString(id) || cJSON_IsNumber(id) || cJSON_IsRaw(id);
}

/* msg's id as the client wrote it: a number as its text from the line (a
 * raw item in *raw, the caller's to free), since a double would answer
 * 12345678901234567890 or 1e400 as another id; a string with a \u0000 in it
 * (cut by cJSON: no client could match the reply) as none. */
static const cJSON *mcp_id_as_sent(const cJSON *msg, const char *line, size_t len, cJSON **raw)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	size_t at, n;
	*raw = NULL;
	if (!(cJSON_IsNumber(id) || cJSON_IsString(id)) ||
	    mcp_json_member_text(line, len, "id", &at, &n) < 0)
		return id; /* (an escaped key: cJSON's reading, the best there is) */
	if (cJSON_IsString(id))
		return protocol_json_has_nul(line + at, n) ? NULL : id;
	if (line[at] != '-' && (line[at] < '0' || line[at] > '9'))
		return id; /* (another member spelled "id": an escaped key came first) */
	char *text = strndup(line + at, n);
	if (!text)
		abort();
	*raw = cJSON_CreateRaw(text);
	free(text);
	if (!*raw)
		abort();
	return *raw;
}

void mcp_client_line(struct mcp *m, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	size_t skip = 0;
	while (skip < len && (line[skip] == ' ' || line[skip] == '\t'))
		skip++;
	if (skip == len)
		return; /* (a blank line: nothing was asked) */
	if (!protocol_utf8_valid(line, len)) {
		mcp_error(m, NULL, -32700, "parse error: the line is not UTF-8");
		return;
	}
	cJSON *msg = cJSON_ParseWithLength(line, len);
	if (!msg) {
		mcp_error(m, NULL, -32700, "parse error: not JSON");
		return;
	}
	cJSON *raw_id = NULL;
	const cJSON *id = mcp_id_as_sent(msg, line, len, &raw_id);
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	if (!cJSON_IsObject(msg)) {
		mcp_error(m, NULL, -32600, "invalid request: %s",
			  cJSON_IsArray(msg) ? "batches are not part of MCP 2025-06-18"
					     : "not a JSON object");
		goto done;
	}
	if (!method && id &&
	    (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
	     cJSON_GetObjectItemCaseSensitive(msg, "error")))
		goto done; /* a response: we ask the client nothing, so it is nobody's */
	const char *v = protocol_str(msg, "jsonrpc");
	bool has_id = cJSON_GetObjectItemCaseSensitive(msg, "id") != NULL;
	if (protocol_json_has_nul(line, len)) { /* (cJSON ends a string there) */
		if (has_id)
			mcp_error(
				m, mcp_id_ok(id) ? id : NULL, -32602,
				"invalid params: a string holds \\u0000, which ptybox cannot pass "
				"on (a file's bytes: put_file with encoding 'base64')");
		goto done;
	}
	if (has_id && !mcp_id_ok(id)) {
		mcp_error(m, NULL, -32600, "invalid request: 'id' must be a string or a number");
		goto done;
	}
	if (!v || strcmp(v, "2.0") != 0 || !cJSON_IsString(method)) {
		mcp_error(m, id, -32600, "invalid request: %s",
			  !v || strcmp(v, "2.0") != 0 ? "'jsonrpc' must be \"2.0\""
						      : "'method' must be a string");
		goto done;
	}
	if (params && !cJSON_IsObject(params)) {
		if (has_id)
			mcp_error(m, id, -32602, "invalid params: 'params' must be an object");
		goto done;
	}
	const char *name = method->valuestring;
	if (!has_id) { /* a notification: never answered */
		if (strcmp(name, "notifications/cancelled") == 0)
			mcp_cancelled(m, params);
		goto done; /* (initialized and the rest need nothing of us) */
	}
	if (strcmp(name, "initialize") == 0)
		mcp_initialize(m, id, params);
	else if (strcmp(name, "ping") == 0)
		mcp_result(m, id, mcp_obj());
	else if (strcmp(name, "tools/list") == 0) {
		cJSON *r = mcp_obj();
		cJSON *tools = cJSON_Parse(mcp_tools_json);
		if (!tools)
			abort(); /* (a constant: out of memory) */
		mcp_timeout_schema(m, tools);
		cJSON_AddItemToObject(r, "tools", tools);
		mcp_result(m, id, r);
	} else if (strcmp(name, "tools/call") == 0)
		mcp_tools_call(m, id, params);
	else
		mcp_error(m, id, -32601, "method not found: '%s'", name);
done:
	cJSON_Delete(raw_id);
	cJSON_Delete(msg);
}

void mcp_client_too_long(struct mcp *m, size_t max)
{
	mcp_error(m, NULL, -32600, "invalid request: a line longer than %zu MiB was skipped",
		  max >> 20);
}

/* ---- the server's replies ---- */

/* An error reply to c's call, as the tool's result. */
static void mcp_call_error(struct mcp *m, struct mcp_call *c, const cJSON *reply)
{
	const char *why = protocol_str(reply, "error") ?: "the server refused";
	const char *code = protocol_str(reply, "code") ?: "";
	if (c->ensure_err)
		why = c->ensure_err; /* (the session could not be made: that is why) */
	else if (strcmp(code, "no_session") == 0 && strcmp(c->session, MCP_DEFAULT_SESSION) == 0)
		m->default_asked = false; /* (killed: made again on next use) */
	if (strcmp(code, "no_session") == 0 && !c->ensure_err) {
		/* (run_code makes the default session; others are made by name) */
		mcp_tool_text(m, c->rid, true, "%s (%s)", why,
			      strcmp(c->session, MCP_DEFAULT_SESSION) == 0
				      ? "nothing has run in it yet: run_code makes it"
				      : "make it with new_session");
		return;
	}
	mcp_tool_text(m, c->rid, true, "%s", why);
}

static void mcp_stream_event(struct mcp *m, struct mcp_call *c, const cJSON *ev)
{
	const char *event = protocol_str(ev, "event");
	if (strcmp(event, "accepted") == 0) {
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(ev, "exec");
		if (cJSON_IsNumber(x) && x->valuedouble >= 1)
			c->exec = (uint64_t)x->valuedouble;
		if (c->interrupt && c->exec) {
			c->interrupt = false;
			struct mcp_call *i = mcp_call_new(m, K_CANCEL, NULL, c->session);
			i->exec = c->exec;
			cJSON *r = mcp_request(i, "interrupt");
			protocol_json_add_uint(r, "exec", c->exec);
			mcp_send_server(m, r);
		}
		return;
	}
	if (!c->progress || c->cancelled || strcmp(event, "stream") != 0)
		return;
	const char *text = protocol_str(ev, "text");
	if (!text)
		return;
	char msg[MCP_PROGRESS_TEXT + 1];
	size_t keep = protocol_utf8_prefix(text, strlen(text), MCP_PROGRESS_TEXT);
	memcpy(msg, text, keep);
	msg[keep] = '\0';
	cJSON *o = mcp_obj();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddStringToObject(o, "method", "notifications/progress");
	cJSON *p = cJSON_AddObjectToObject(o, "params");
	cJSON_AddItemToObject(p, "progressToken", protocol_json_dup_exact(c->progress));
	cJSON_AddNumberToObject(p, "progress", ++c->progress_n);
	cJSON_AddStringToObject(p, "message", msg);
	mcp_emit(m, m->cfg.to_client, o);
}

/* The reply that ends call c. */
static void mcp_call_done(struct mcp *m, struct mcp_call *c, const cJSON *reply)
{
	bool failed = cJSON_GetObjectItemCaseSensitive(reply, "error") != NULL;
	if (c->kind == K_HELLO) {
		if (failed && m->cfg.fatal)
			m->cfg.fatal(m->cfg.data, protocol_str(reply, "error") ?: "hello refused");
		return;
	}
	if (c->kind == K_ENSURE) {
		const char *code = protocol_str(reply, "code") ?: "";
		if (failed && strcmp(code, "exists") != 0) {
			m->default_asked = false;
			struct mcp_call *f = mcp_call_find(m, c->ensure_for);
			if (f && !f->ensure_err) {
				if (asprintf(&f->ensure_err,
					     "the session '%s' could not be made: %s",
					     MCP_DEFAULT_SESSION,
					     protocol_str(reply, "error") ?: "refused") < 0)
					abort();
			}
		}
		return;
	}
	if (c->kind == K_CANCEL) {
		/* Not started yet: it is dropped from the queue instead. */
		const char *state = protocol_str(reply, "state");
		if (state && strcmp(state, "queued") == 0) {
			struct mcp_call *x = mcp_call_new(m, K_CANCEL, NULL, c->session);
			x->exec = UINT64_MAX; /* (its reply ends it) */
			cJSON *r = mcp_request(x, "cancel");
			protocol_json_add_uint(r, "exec", c->exec);
			mcp_send_server(m, r);
		}
		return;
	}
	if (c->kind == K_RESTART && failed) /* (no restart: the next run is not told it) */
		mcp_restarted_take(m, c->session);
	if (c->cancelled)
		return; /* (the client no longer waits for it) */
	if (failed && c->kind != K_RUN) {
		mcp_call_error(m, c, reply);
		return;
	}
	switch (c->kind) {
	case K_RUN: {
		if (failed && !protocol_str(reply, "status")) {
			mcp_call_error(m, c, reply);
			return;
		}
		bool is_error;
		cJSON *res = mcp_run_content(reply, c->max_text, c->restart_told, &is_error);
		if (c->capped)
			mcp_note_capped(m, res);
		mcp_result(m, c->rid, res);
		return;
	}
	case K_NEW:
		if (strcmp(c->session, MCP_DEFAULT_SESSION) == 0)
			m->default_asked = true;
		mcp_tool_text(m, c->rid, false, "session '%s' is ready", c->session);
		return;
	case K_LS: {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(reply, "sessions");
		cJSON *list = cJSON_IsArray(s) ? cJSON_Duplicate(s, 1) : cJSON_CreateArray();
		if (!list)
			abort();
		/* One compact JSON line a session: read at a glance, parsed by a line. */
		char *text = NULL;
		size_t tlen = 0;
		FILE *f = open_memstream(&text, &tlen);
		if (!f)
			abort();
		const cJSON *one;
		cJSON_ArrayForEach(one, list)
		{
			char *line = cJSON_PrintUnformatted(one);
			if (!line)
				abort();
			fprintf(f, "%s\n", line);
			cJSON_free(line);
		}
		fclose(f);
		if (!text)
			abort();
		cJSON *content;
		cJSON *r = mcp_tool_result(&content, false);
		mcp_add_text(content, tlen ? text : "(no sessions)");
		free(text);
		cJSON_AddItemToObject(cJSON_AddObjectToObject(r, "structuredContent"), "sessions",
				      list);
		mcp_result(m, c->rid, r);
		return;
	}
	case K_INTERRUPT:
		mcp_tool_text(m, c->rid, false, "interrupted what ran in '%s'", c->session);
		return;
	case K_RESTART:
		mcp_tool_text(m, c->rid, false,
			      "session '%s' restarted: a fresh interpreter, variables gone",
			      c->session);
		return;
	case K_KILL:
		if (strcmp(c->session, MCP_DEFAULT_SESSION) == 0)
			m->default_asked = false;
		mcp_tool_text(m, c->rid, false, "session '%s' ended", c->session);
		return;
	case K_PUT: {
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(reply, "size");
		mcp_tool_text(m, c->rid, false, "wrote %.0f bytes to %s",
			      cJSON_IsNumber(size) ? size->valuedouble : 0.0,
			      protocol_str(reply, "path") ?: "the file");
		return;
	}
	case K_GET:
		mcp_result(m, c->rid,
			   mcp_get_content(reply, protocol_str(reply, "path") ?: c->path,
					   c->max_text));
		return;
	default: return;
	}
}

void mcp_server_line(struct mcp *m, const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (!cJSON_IsNumber(id) || id->valuedouble < 0) {
		cJSON_Delete(o); /* (a notice for nobody: the log has it) */
		return;
	}
	struct mcp_call *c = mcp_call_find(m, (uint64_t)id->valuedouble);
	if (!c) {
		cJSON_Delete(o); /* (late output of a run answered already) */
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "event")) {
		if (protocol_str(o, "event"))
			mcp_stream_event(m, c, o);
		cJSON_Delete(o);
		return;
	}
	mcp_call_remove(m, c);
	mcp_call_done(m, c, o);
	mcp_call_free(c);
	cJSON_Delete(o);
}

void mcp_server_gone(struct mcp *m, const char *why)
{
	if (m->gone)
		return;
	m->gone = true;
	snprintf(m->gone_why, sizeof(m->gone_why), "the server is gone: %s", why);
	while (m->calls) {
		struct mcp_call *c = m->calls;
		m->calls = c->next;
		m->ncalls--;
		if (c->rid && !c->cancelled)
			mcp_tool_text(m, c->rid, true, "%s", m->gone_why);
		mcp_call_free(c);
	}
	if (m->cfg.fatal)
		m->cfg.fatal(m->cfg.data, m->gone_why);
}

size_t mcp_pending(const struct mcp *m)
{
	size_t n = 0;
	for (const struct mcp_call *c = m->calls; c; c = c->next)
		n += c->rid && !c->cancelled;
	return n;
}

struct mcp *mcp_new(const struct mcp_config *cfg)
{
	struct mcp *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cfg = *cfg;
	m->timeout_max = MCP_SESSION_TIMEOUT;
	const char *t = protocol_str(cfg->options, "timeout");
	if (t && options_parse_seconds(t, &m->timeout_max) < 0)
		m->timeout_max = MCP_SESSION_TIMEOUT; /* (cli_mcp.c checked it) */
	if (cfg->hello) {
		struct mcp_call *c = mcp_call_new(m, K_HELLO, NULL, NULL);
		cJSON *r = mcp_request(c, "hello");
		cJSON_AddNumberToObject(r, "protocol", SERVER_PROTOCOL);
		mcp_send_server(m, r);
	}
	return m;
}

void mcp_free(struct mcp *m)
{
	if (!m)
		return;
	while (m->calls) {
		struct mcp_call *c = m->calls;
		m->calls = c->next;
		mcp_call_free(c);
	}
	while (m->restarted)
		mcp_restarted_take(m, m->restarted->session);
	free(m);
}
