/* test_mcp.c - mcp.c byte by byte: the MCP lines in, the server's requests
 * out, the server's replies in, the MCP responses out. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp.h"
#include "mcp_content.h"
#include "protocol.h"

/* What each sink got, lines kept in order. */
struct sinks {
	char client[1 << 16], server[1 << 16];
	size_t nclient, nserver;
	char fatal[256];
};

static void sink_append(char *buf, size_t *n, size_t cap, char *line, size_t len)
{
	assert_true(*n + len < cap);
	assert_int_equal(line[len - 1], '\n');
	assert_int_equal(strlen(line), len); /* (one line, NUL-terminated) */
	memcpy(buf + *n, line, len);
	*n += len;
	buf[*n] = '\0';
	free(line);
}

static void to_client(void *data, char *line, size_t len)
{
	struct sinks *s = data;
	sink_append(s->client, &s->nclient, sizeof(s->client), line, len);
}

static void to_server(void *data, char *line, size_t len)
{
	struct sinks *s = data;
	sink_append(s->server, &s->nserver, sizeof(s->server), line, len);
}

static void on_fatal(void *data, const char *why)
{
	struct sinks *s = data;
	snprintf(s->fatal, sizeof(s->fatal), "%s", why);
}

static struct mcp *mk(struct sinks *s, const cJSON *options, bool hello)
{
	memset(s, 0, sizeof(*s));
	struct mcp_config cfg = {
		.version = "9.9",
		.options = options,
		.hello = hello,
		.to_client = to_client,
		.to_server = to_server,
		.fatal = on_fatal,
		.data = s,
	};
	struct mcp *m = mcp_new(&cfg);
	assert_non_null(m);
	return m;
}

static void in(struct mcp *m, const char *line)
{
	mcp_client_line(m, line, strlen(line));
}

static void from_server(struct mcp *m, const char *line)
{
	mcp_server_line(m, line, strlen(line));
}

/* The lines got since the last take, then forgotten. */
static void take(char *buf, size_t *n, const char *want)
{
	assert_string_equal(buf, want);
	*n = 0;
	buf[0] = '\0';
}
#define CLIENT(s, want) take((s)->client, &(s)->nclient, want)
#define SERVER(s, want) take((s)->server, &(s)->nserver, want)

static void test_initialize_negotiates_the_version(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
	      "\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}");
	assert_non_null(strstr(s.client, "\"protocolVersion\":\"2025-03-26\""));
	assert_non_null(strstr(s.client, "\"serverInfo\":{\"name\":\"ptybox\""));
	assert_non_null(strstr(s.client, "\"version\":\"9.9\""));
	assert_non_null(strstr(s.client, "\"capabilities\":{\"tools\":{\"listChanged\":false}}"));
	s.nclient = 0;
	s.client[0] = '\0';
	/* one it does not know: the newest it does */
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":{"
	      "\"protocolVersion\":\"2099-01-01\"}}");
	assert_true(strncmp(s.client,
			    "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{"
			    "\"protocolVersion\":\"2025-06-18\",",
			    62) == 0);
	assert_int_equal(s.nserver, 0); /* (nothing asked of the server) */
	mcp_free(m);
}

static void test_errors_of_json_rpc(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\"");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"
		   "\"parse error: not JSON\"}}\n");
	in(m, "\"\xff\"");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"
		   "\"parse error: the line is not UTF-8\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/list\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":"
		   "\"method not found: 'resources/list'\"}}\n");
	in(m, "{\"id\":8,\"method\":\"ping\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"error\":{\"code\":-32600,\"message\":"
		   "\"invalid request: 'jsonrpc' must be \\\"2.0\\\"\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
		   "\"invalid request: 'id' must be a string or a number\"}}\n");
	in(m, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
		   "\"invalid request: batches are not part of MCP 2025-06-18\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":[1]}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: 'params' must be an object\"}}\n");
	/* notifications are never answered, known or not; nor responses; nor blank lines */
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{}}");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	in(m, "  \r");
	CLIENT(&s, "");
	mcp_client_too_long(m, (size_t)64 << 20);
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
		   "\"invalid request: a line longer than 64 MiB was skipped\"}}\n");
	/* ping, with an id that a double would round: echoed as sent */
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"}\r");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"result\":{}}\n");
	mcp_free(m);
}

static void test_tools_list(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}");
	cJSON *o = cJSON_Parse(s.client);
	assert_non_null(o);
	const cJSON *tools = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "result"), "tools"), *t;
	const char *want[] = {"run_code", "new_session",  "list_sessions", "interrupt",
			      "restart",  "kill_session", "put_file",	   "get_file"};
	int i = 0;
	cJSON_ArrayForEach(t, tools)
	{
		assert_string_equal(cJSON_GetObjectItem(t, "name")->valuestring, want[i++]);
		assert_true(strlen(cJSON_GetObjectItem(t, "description")->valuestring) > 20);
		const cJSON *schema = cJSON_GetObjectItem(t, "inputSchema");
		assert_string_equal(cJSON_GetObjectItem(schema, "type")->valuestring, "object");
	}
	assert_int_equal(i, 8);
	cJSON_Delete(o);
	mcp_free(m);
}

static void test_run_code_makes_the_default_session_then_runs(void **state)
{
	struct sinks s;
	cJSON *opts = cJSON_Parse("{\"memory\":\"512M\"}");
	struct mcp *m = mk(&s, opts, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"print(1)\\n2\",\"timeout\":1.5}}}");
	SERVER(&s, "{\"id\":2,\"op\":\"new\",\"session\":\"default\",\"options\":{\"memory\":"
		   "\"512M\"}}\n"
		   "{\"id\":1,\"op\":\"exec\",\"session\":\"default\",\"code\":\"print(1)\\n2\","
		   "\"timeout\":1.5,\"ack\":true}\n");
	assert_int_equal(mcp_pending(m), 1);
	from_server(m, "{\"id\":1,\"event\":\"accepted\",\"exec\":1}");
	from_server(m, "{\"id\":2,\"ok\":true,\"session\":\"default\"}");
	CLIENT(&s, "");
	from_server(m, "{\"id\":1,\"status\":\"ok\",\"stdout\":\"1\\n\",\"stderr\":\"\",\"result\":"
		       "{\"text/plain\":\"2\"},\"display\":[],\"error\":null,\"truncated\":false,"
		       "\"dropped_bytes\":0,\"state_lost\":false,\"exec\":1}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"1\\n[value]\\n2\\n\"}],\"isError\":false,\"structuredContent\":{"
		   "\"status\":\"ok\",\"exec\":1}}}\n");
	assert_int_equal(mcp_pending(m), 0);
	/* the second call: no new */
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1/0\",\"language\":\"python\"}}}");
	SERVER(&s, "{\"id\":3,\"op\":\"exec\",\"session\":\"default\",\"code\":\"1/0\",\"ack\":"
		   "true}\n");
	from_server(
		m,
		"{\"id\":3,\"status\":\"error\",\"stdout\":\"\",\"stderr\":\"\",\"result\":"
		"null,\"display\":[{\"text/plain\":\"<Figure>\",\"image/png\":\"iVBORw0KGgo=\"}],"
		"\"error\":{\"name\":\"ZeroDivisionError\",\"value\":\"division by zero\","
		"\"traceback\":[\"Traceback\\n\",\"ZeroDivisionError: division by "
		"zero\\n\"]},\"truncated\":true,\"dropped_bytes\":10,\"exec\":2}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"[error]\\nTraceback\\nZeroDivisionError: division by zero\\n"
		   "[output cut: 10 bytes dropped from the middle]\\n\"},{\"type\":\"image\","
		   "\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}],\"isError\":true,"
		   "\"structuredContent\":{\"status\":\"error\",\"exec\":2}}}\n");
	mcp_free(m);
	cJSON_Delete(opts);
}

static void test_the_default_session_that_cannot_start_says_why(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\"}}}");
	from_server(m, "{\"id\":2,\"error\":\"no python3\",\"code\":\"cannot_start\"}");
	from_server(m, "{\"id\":1,\"error\":\"no session 'default'\",\"code\":\"no_session\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"the session 'default' could not be made: no python3\"}],"
		   "\"isError\":true}}\n");
	/* the next call tries again */
	s.nserver = 0;
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\"}}}");
	assert_non_null(strstr(s.server, "\"op\":\"new\""));
	mcp_free(m);
}

static void test_bad_arguments_and_other_languages(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\",\"language\":\"ruby\"}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"language 'ruby' is not available: this ptybox runs python\"}],"
		   "\"isError\":true}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\",\"timout\":3}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: unknown argument 'timout'\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: 'code' is required\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"rm_rf\"}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":"
		   "\"unknown tool 'rm_rf'\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"kill_session\",\"arguments\":{}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: 'session' is required\"}}\n");
	SERVER(&s, "");
	mcp_free(m);
}

static void test_cancelled_run_is_interrupted_and_not_answered(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"while 1: pass\",\"session\":\"s\"},"
	      "\"_meta\":{\"progressToken\":\"p\"}}}");
	SERVER(&s, "{\"id\":1,\"op\":\"exec\",\"session\":\"s\",\"code\":\"while 1: pass\","
		   "\"ack\":true,\"stream\":true}\n");
	/* cancelled before the server said which execution: interrupted once it does */
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	      "\"requestId\":\"r\",\"reason\":\"enough\"}}");
	SERVER(&s, "");
	from_server(m, "{\"id\":1,\"event\":\"accepted\",\"exec\":4}");
	SERVER(&s, "{\"id\":2,\"op\":\"interrupt\",\"session\":\"s\",\"exec\":4}\n");
	/* its stream is no progress any more, and its result is nobody's */
	from_server(m, "{\"id\":1,\"event\":\"stream\",\"exec\":4,\"name\":\"stdout\",\"text\":"
		       "\"x\"}");
	from_server(m, "{\"id\":2,\"ok\":true,\"interrupted\":true}");
	from_server(m, "{\"id\":1,\"status\":\"interrupted\",\"exec\":4}");
	CLIENT(&s, "");
	assert_int_equal(mcp_pending(m), 0);
	/* a queued one is cancelled instead */
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\",\"session\":\"s\"}}}");
	from_server(m, "{\"id\":3,\"event\":\"accepted\",\"exec\":5}");
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	      "\"requestId\":9}}");
	from_server(m, "{\"id\":4,\"ok\":true,\"interrupted\":false,\"state\":\"queued\"}");
	SERVER(&s, "{\"id\":3,\"op\":\"exec\",\"session\":\"s\",\"code\":\"1\",\"ack\":true}\n"
		   "{\"id\":4,\"op\":\"interrupt\",\"session\":\"s\",\"exec\":5}\n"
		   "{\"id\":5,\"op\":\"cancel\",\"session\":\"s\",\"exec\":5}\n");
	mcp_free(m);
}

static void test_progress_carries_the_stream(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"x\",\"session\":\"s\"},"
	      "\"_meta\":{\"progressToken\":12}}}");
	from_server(m, "{\"id\":1,\"event\":\"stream\",\"exec\":1,\"name\":\"stdout\",\"text\":"
		       "\"step 1\\n\"}");
	from_server(m, "{\"id\":1,\"event\":\"stream\",\"exec\":1,\"name\":\"stderr\",\"text\":"
		       "\"w\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
		   "\"progressToken\":12,\"progress\":1,\"message\":\"step 1\\n\"}}\n"
		   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
		   "\"progressToken\":12,\"progress\":2,\"message\":\"w\"}}\n");
	mcp_free(m);
}

static void test_files(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"put_file\",\"arguments\":{\"path\":\"a.txt\",\"content\":\"hi\\n\","
	      "\"session\":\"s\"}}}");
	SERVER(&s, "{\"id\":1,\"op\":\"put\",\"session\":\"s\",\"path\":\"a.txt\",\"data\":"
		   "\"aGkK\"}\n");
	from_server(m, "{\"id\":1,\"ok\":true,\"path\":\"/tmp/a.txt\",\"size\":3}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"wrote 3 bytes to /tmp/a.txt\"}],\"isError\":false}}\n");
	/* text, a picture, bytes, and a failure */
	const char *replies[] = {
		"\"ok\":true,\"data\":\"aGkK\",\"path\":\"/tmp/a\"}",
		"\"ok\":true,\"data\":\"iVBORw0KGgo=\",\"path\":\"/tmp/a\"}",
		"\"ok\":true,\"data\":\"AAEC\",\"path\":\"/tmp/a\"}",
		"\"error\":\"get: /tmp/a: No such file or directory\",\"code\":"
		"\"file\",\"errno\":\"ENOENT\"}",
	};
	const char *want[] = {
		"{\"type\":\"text\",\"text\":\"hi\\n\"}],\"isError\":false",
		"{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\"}],"
		"\"isError\":false",
		"{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///tmp/a\",\"mimeType\":"
		"\"application/octet-stream\",\"blob\":\"AAEC\"}}],\"isError\":false",
		"{\"type\":\"text\",\"text\":\"get: /tmp/a: No such file or directory\"}],"
		"\"isError\":true",
	};
	for (int i = 0; i < 4; i++) {
		s.nserver = 0;
		in(m,
		   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		   "\"get_file\",\"arguments\":{\"path\":\"a\",\"session\":\"s\"}}}");
		char line[256], expect[512];
		snprintf(line, sizeof(line), "{\"id\":%d,%s", i + 2, replies[i]);
		snprintf(expect, sizeof(expect),
			 "{\"id\":%d,\"op\":\"get\",\"session\":\"s\",\"path\":\"a\"}\n", i + 2);
		SERVER(&s, expect);
		from_server(m, line);
		snprintf(expect, sizeof(expect),
			 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[%s}}\n", want[i]);
		CLIENT(&s, expect);
	}
	mcp_free(m);
}

static void test_hello_and_a_server_that_goes(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, true);
	SERVER(&s, "{\"id\":1,\"op\":\"hello\",\"protocol\":1}\n");
	from_server(m, "{\"id\":1,\"ok\":true,\"protocol\":1}");
	assert_string_equal(s.fatal, "");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"list_sessions\"}}");
	SERVER(&s, "{\"id\":2,\"op\":\"ls\"}\n");
	mcp_server_gone(m, "end of input");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"the server is gone: end of input\"}],\"isError\":true}}\n");
	assert_string_equal(s.fatal, "the server is gone: end of input");
	mcp_free(m);
	/* a hello refused */
	m = mk(&s, NULL, true);
	from_server(m, "{\"id\":1,\"error\":\"the client speaks protocol 1, this server speaks "
		       "2\",\"code\":\"protocol\"}");
	assert_string_equal(s.fatal, "the client speaks protocol 1, this server speaks 2");
	mcp_free(m);
}

/* A run_code on session "s" (extra: more arguments), answered with reply (the
 * members after the id): the client's line. */
static char *run_answered(struct mcp *m, struct sinks *s, const char *extra, const char *reply)
{
	char *call, *line;
	assert_true(asprintf(&call,
			     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
			     "\"name\":\"run_code\",\"arguments\":{\"code\":\"1\",\"session\":"
			     "\"s\"%s}}}",
			     extra) > 0);
	in(m, call);
	free(call);
	unsigned sid = 0;
	assert_int_equal(sscanf(s->server, "{\"id\":%u,", &sid), 1);
	s->nserver = 0;
	assert_true(asprintf(&line, "{\"id\":%u,%s", sid, reply) > 0);
	from_server(m, line);
	free(line);
	char *got = strdup(s->client);
	s->nclient = 0;
	s->client[0] = '\0';
	return got;
}

static void test_a_nul_in_a_string_is_refused_not_cut(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"put_file\",\"arguments\":{\"path\":\"a.txt\",\"content\":\"abc\\u0000def\"}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: a string holds \\\\u0000, which ptybox cannot pass on (a "
		   "file's bytes: put_file with encoding 'base64')\"}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"pi\\u0000ng\"}");
	assert_non_null(
		strstr(s.client, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602"));
	CLIENT(&s, s.client); /* (forgotten) */
	/* an id cut by the NUL: answered as null, not as "" (nobody's id) */
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000x\",\"method\":\"ping\"}");
	assert_non_null(strstr(s.client, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
					 "-32602"));
	CLIENT(&s, s.client);
	/* a notification: never answered, and not acted on */
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	      "\"requestId\":\"a\\u0000\"}}");
	CLIENT(&s, "");
	SERVER(&s, "");
	mcp_free(m);
}

static void test_ids_are_echoed_as_sent(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	const char *ids[] = {"12345678901234567890", "1e400", "-0", "1.50", "7"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char line[128], want[128];
		snprintf(line, sizeof(line),
			 "{\"jsonrpc\":\"2.0\", \"id\" : %s ,\"method\":\"ping\"}", ids[i]);
		snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n",
			 ids[i]);
		in(m, line);
		CLIENT(&s, want);
	}
	/* a tool call's result too, and a cancellation names it by its number */
	in(m,
	   "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890,\"method\":\"tools/call\","
	   "\"params\":{\"name\":\"run_code\",\"arguments\":{\"code\":\"1\",\"session\":\"s\"}}}");
	SERVER(&s, "{\"id\":1,\"op\":\"exec\",\"session\":\"s\",\"code\":\"1\",\"ack\":true}\n");
	from_server(m, "{\"id\":1,\"event\":\"accepted\",\"exec\":4}");
	in(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
	      "\"requestId\":12345678901234567890}}");
	SERVER(&s, "{\"id\":2,\"op\":\"interrupt\",\"session\":\"s\",\"exec\":4}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
		   "\"invalid request: 'id' must be a string or a number\"}}\n");
	mcp_free(m);
}

static void test_every_line_out_is_utf8(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	/* a tool's name and a method's, "xy"/"x" then 600 "é": the message that
	 * quotes it is cut at a character whatever the byte count */
	static const char *const shapes[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"",
	};
	for (int shape = 0; shape < 2; shape++) {
		for (int odd = 0; odd < 2; odd++) {
			char line[2048];
			int n = snprintf(line, sizeof(line), "%s%s", shapes[shape],
					 odd ? "xy" : "x");
			for (int i = 0; i < 600; i++)
				n += snprintf(line + n, sizeof(line) - (size_t)n, "\xc3\xa9");
			snprintf(line + n, sizeof(line) - (size_t)n, shape ? "\"}" : "\"}}");
			in(m, line);
			assert_true(s.nclient > 400);
			assert_true(protocol_utf8_valid(s.client, s.nclient));
			s.nclient = 0;
		}
	}
	mcp_free(m);
}

static void test_pictures_are_checked_and_updates_collapsed(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	/* not base64, and base64 of b"hello" as a PNG: said so, no image item */
	char *got = run_answered(m, &s, "",
				 "\"status\":\"ok\",\"stdout\":\"\",\"result\":null,\"display\":["
				 "{\"image/png\":\"not base64 !!\"},{\"text/plain\":\"<A>\","
				 "\"image/png\":\"aGVsbG8=\"},{\"image/jpeg\":\"/9j/4AAQ\"}]}");
	assert_null(strstr(got, "(no output)"));
	assert_null(strstr(got, "\"type\":\"image\",\"data\":\"not"));
	assert_non_null(strstr(got, "{\"type\":\"text\",\"text\":\"[a picture that is not "
				    "image/png data (13 characters): not shown]\"}"));
	assert_non_null(strstr(got, "{\"type\":\"text\",\"text\":\"[a picture that is not "
				    "image/png data (8 characters): not shown]\\n<A>\"}"));
	assert_non_null(strstr(got, "{\"type\":\"image\",\"data\":\"/9j/4AAQ\",\"mimeType\":"
				    "\"image/jpeg\"}"));
	free(got);
	/* a display_id's last rendering, where its first was; no "(no output)" */
	got = run_answered(
		m, &s, "",
		"\"status\":\"ok\",\"stdout\":\"\",\"result\":null,\"display\":["
		"{\"text/plain\":\"'0%'\",\"display_id\":\"p\"},{\"text/plain\":\"'a'\"},"
		"{\"text/plain\":\"'50%'\",\"display_id\":\"p\",\"update\":true},"
		"{\"text/plain\":\"'q1'\",\"display_id\":\"q\"},"
		"{\"text/plain\":\"'100%'\",\"display_id\":\"p\",\"update\":true}]}");
	assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":["
				 "{\"type\":\"text\",\"text\":\"'100%'\"},{\"type\":\"text\","
				 "\"text\":\"'a'\"},{\"type\":\"text\",\"text\":\"'q1'\"}],"
				 "\"isError\":false,\"structuredContent\":{\"status\":\"ok\"}}}\n");
	free(got);
	/* the default repr of an object with markdown (or HTML): the markdown */
	got = run_answered(
		m, &s, "",
		"\"status\":\"ok\",\"stdout\":\"\",\"result\":{\"text/plain\":"
		"\"<__main__.C object at 0x7f00>\",\"text/html\":\"<b>hi</b>\","
		"\"text/markdown\":\"**hi**\"},\"display\":[{\"text/plain\":\"<__main__.D "
		"object at 0x7f01>\",\"text/html\":\"<i>d</i>\"}]}");
	assert_non_null(strstr(got, "{\"type\":\"text\",\"text\":\"[value]\\n**hi**\\n\"},"
				    "{\"type\":\"text\",\"text\":\"<i>d</i>\"}"));
	free(got);
	/* a loop of displays: 64 items at most, 16 of them pictures, the rest counted */
	char *many = malloc(100 * 64 + 128), *q = many;
	q += sprintf(q, "\"status\":\"ok\",\"display\":[");
	for (int i = 0; i < 100; i++)
		q += sprintf(q, "%s{\"text/plain\":\"%d\"%s}", i ? "," : "", i,
			     i % 2 ? ",\"image/png\":\"iVBORw0KGgo=\"" : "");
	strcpy(q, "]}");
	got = run_answered(m, &s, "", many);
	free(many);
	cJSON *o = cJSON_Parse(got);
	const cJSON *content = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "result"), "content"), *c;
	int images = 0, texts = 0;
	cJSON_ArrayForEach(c, content)
	{
		bool image = strcmp(cJSON_GetObjectItem(c, "type")->valuestring, "image") == 0;
		images += image;
		texts += !image;
	}
	assert_int_equal(images, 16);
	assert_int_equal(texts, 48 + 1);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetArrayItem(content, 64), "text")->valuestring,
		"[36 more displays not shown (at most 64, 16 pictures)]");
	cJSON_Delete(o);
	free(got);
	/* nothing at all */
	got = run_answered(m, &s, "", "\"status\":\"ok\",\"stdout\":\"\",\"display\":[]}");
	assert_non_null(strstr(got, "[{\"type\":\"text\",\"text\":\"(no output)\"}]"));
	free(got);
	mcp_free(m);
}

static void test_text_is_capped_head_and_tail(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	size_t n = 100000;
	char *reply = malloc(n + 64), *p = reply;
	p += sprintf(p, "\"status\":\"ok\",\"stdout\":\"");
	for (size_t i = 0; i < n; i++)
		*p++ = i < 400 ? 'h' : i >= n - 400 ? 't' : 'm';
	strcpy(p, "\"}");
	char *got = run_answered(m, &s, ",\"max_output\":1000", reply);
	cJSON *o = cJSON_Parse(got);
	const cJSON *c = cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(o, "result"), "content"), 0);
	const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
	assert_non_null(strstr(text, "\n[... 99001 bytes cut ...]\n"));
	assert_int_equal(strncmp(text, "hhhh", 4), 0);
	assert_int_equal(strlen(text), 1000 + strlen("\n[... 99001 bytes cut ...]\n"));
	assert_int_equal(text[strlen(text) - 2], 't'); /* (the tail, then its newline) */
	cJSON_Delete(o);
	free(got);
	free(reply);
	/* a crash's restart said once, by its status line */
	got = run_answered(
		m, &s, "",
		"\"status\":\"crashed\",\"stdout\":\"\",\"state_lost\":true,"
		"\"message\":\"the interpreter died (killed by signal 9); restarted with "
		"fresh state\"}");
	assert_non_null(strstr(got, "[status: crashed: the interpreter died"));
	assert_null(strstr(got, "every variable is lost"));
	free(got);
	/* cut at a character, never inside one */
	char *cut = mcp_text_cap("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8, 5);
	assert_true(protocol_utf8_valid(cut, strlen(cut)));
	free(cut);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"run_code\",\"arguments\":{\"code\":\"1\",\"max_output\":10}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: 'max_output' must be a number of bytes, 256 to 64 MiB\"}}\n");
	mcp_free(m);
}

static void test_hints_lists_and_put_errors(void **state)
{
	struct sinks s;
	struct mcp *m = mk(&s, NULL, false);
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"interrupt\"}}");
	from_server(m, "{\"id\":1,\"error\":\"no session 'default'\",\"code\":\"no_session\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"no session 'default' (nothing has run in it yet: run_code makes "
		   "it)\"}],\"isError\":true}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"restart\",\"arguments\":{\"session\":\"x\"}}}");
	from_server(m, "{\"id\":2,\"error\":\"no session 'x'\",\"code\":\"no_session\"}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\","
		   "\"text\":\"no session 'x' (make it with new_session)\"}],\"isError\":true}}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"list_sessions\"}}");
	from_server(m, "{\"id\":3,\"ok\":true,\"sessions\":[{\"name\":\"a\",\"state\":\"idle\"},"
		       "{\"name\":\"b\",\"state\":\"busy\"}]}");
	assert_non_null(strstr(s.client, "[{\"type\":\"text\",\"text\":\"{\\\"name\\\":\\\"a\\\","
					 "\\\"state\\\":\\\"idle\\\"}\\n{\\\"name\\\":\\\"b\\\","
					 "\\\"state\\\":\\\"busy\\\"}\\n\"}]"));
	s.nclient = 0;
	SERVER(&s, "{\"id\":1,\"op\":\"interrupt\",\"session\":\"default\"}\n"
		   "{\"id\":2,\"op\":\"restart\",\"session\":\"x\"}\n"
		   "{\"id\":3,\"op\":\"ls\"}\n");
	in(m, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
	      "\"put_file\",\"arguments\":{\"path\":\"a\",\"content\":\"@@\",\"encoding\":"
	      "\"base64\",\"session\":\"s\"}}}");
	CLIENT(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":"
		   "\"invalid params: 'content' is not base64 (encoding is 'base64')\"}}\n");
	SERVER(&s, "");
	mcp_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initialize_negotiates_the_version),
		cmocka_unit_test(test_errors_of_json_rpc),
		cmocka_unit_test(test_tools_list),
		cmocka_unit_test(test_run_code_makes_the_default_session_then_runs),
		cmocka_unit_test(test_the_default_session_that_cannot_start_says_why),
		cmocka_unit_test(test_bad_arguments_and_other_languages),
		cmocka_unit_test(test_cancelled_run_is_interrupted_and_not_answered),
		cmocka_unit_test(test_progress_carries_the_stream),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_hello_and_a_server_that_goes),
		cmocka_unit_test(test_a_nul_in_a_string_is_refused_not_cut),
		cmocka_unit_test(test_ids_are_echoed_as_sent),
		cmocka_unit_test(test_every_line_out_is_utf8),
		cmocka_unit_test(test_pictures_are_checked_and_updates_collapsed),
		cmocka_unit_test(test_text_is_capped_head_and_tail),
		cmocka_unit_test(test_hints_lists_and_put_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
