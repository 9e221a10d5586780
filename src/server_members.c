/*
 * server_members.c - which members each request of the server's protocol
 * takes: pure, so that the table is tested apart from the server.
 *
 * A member no op takes is a mistake of its sender ("timout", "streem", a
 * "via" beside "options" instead of in them) that would otherwise pass in
 * silence and change what runs (a snippet's 2 s instead of 0.5 s). So it is
 * refused as an unknown option is, naming it. "id" and "op" go with every
 * request; "session" with those about one session.
 */
#include <string.h>

#include "server.h"

struct member_table {
	const char *op;
	const char *takes; /* its members beside id and op, each followed by ", " */
};

static const struct member_table member_tables[] = {
	{"hello", "protocol, via, "},
	{"ping", ""},
	{"ls", ""},
	{"kill-server", ""},
	{"new", "session, options, record, record_max, "},
	{"exec", "session, code, timeout, stream, wait, stop_on_error, render, ack, filename, "
		 "argv, env, cwd, "
		 "stdin, "},
	{"result", "session, exec, wait, stream, "},
	{"interrupt", "session, exec, "},
	{"cancel", "session, exec, "},
	{"restart", "session, "},
	{"kill", "session, "},
	{"watch", "session, "},
	{"capture", "session, escapes, start, "},
	{"complete", "session, code, cursor, "},
	{"is_complete", "session, code, "},
	{"resize", "session, cols, rows, "},
	{"put", "session, path, data, mode, offset, more, upload, abort, "},
	{"get", "session, path, offset, length, "},
	{"files", "session, path, recursive, "},
	{"remove", "session, path, recursive, "},
};

/* Whether name is one of list's "a, b, " entries. */
static bool member_listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *end = strstr(p, ", ");
		if (!end)
			break;
		if ((size_t)(end - p) == n && memcmp(p, name, n) == 0)
			return true;
		p = end + 2;
	}
	return false;
}

const char *server_request_unknown_member(const cJSON *req, const char *op, const char **takes)
{
	const struct member_table *t = NULL;
	for (size_t i = 0; i < sizeof(member_tables) / sizeof(member_tables[0]); i++)
		if (strcmp(member_tables[i].op, op) == 0)
			t = &member_tables[i];
	if (!t)
		return NULL; /* (an unknown op is its own error) */
	if (takes)
		*takes = t->takes;
	const cJSON *m;
	cJSON_ArrayForEach(m, req)
	{
		if (!m->string || strcmp(m->string, "id") == 0 || strcmp(m->string, "op") == 0)
			continue;
		if (!member_listed(t->takes, m->string))
			return m->string;
	}
	return NULL;
}
