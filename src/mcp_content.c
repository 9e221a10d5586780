/*
 * mcp_content.c - a tool's result as the model sees it (mcp_content.h). A
 * run gives one text item (what it printed, its value, its error, its
 * status), capped for an agent's context; then one item per display, where
 * a display updated in place shows its last rendering only, as a notebook
 * does; a picture is an image item only when its bytes are one, since model
 * APIs refuse a whole message for an image that does not decode.
 */
#define _GNU_SOURCE
#include "mcp_content.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

/* The display items one result shows at most, and of them pictures (tens
 * of KB each to a model); the rest are counted in a note (a loop of
 * display() calls would flood the context otherwise). */
#define MCP_MAX_DISPLAYS 64
#define MCP_MAX_PICTURES 16

static cJSON *mcp_obj(void)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		abort(); /* out of memory is fatal (STYLE.md) */
	return o;
}

cJSON *mcp_tool_result(cJSON **content, bool is_error)
{
	cJSON *r = mcp_obj();
	*content = cJSON_AddArrayToObject(r, "content");
	cJSON_AddBoolToObject(r, "isError", is_error);
	return r;
}

void mcp_add_text(cJSON *content, const char *text)
{
	cJSON *t = mcp_obj();
	cJSON_AddStringToObject(t, "type", "text");
	cJSON_AddStringToObject(t, "text", text);
	cJSON_AddItemToArray(content, t);
}

static void mcp_add_image(cJSON *content, const char *b64, const char *mime)
{
	cJSON *t = mcp_obj();
	cJSON_AddStringToObject(t, "type", "image");
	cJSON_AddStringToObject(t, "data", b64);
	cJSON_AddStringToObject(t, "mimeType", mime);
	cJSON_AddItemToArray(content, t);
}

const char *mcp_image_mime(const unsigned char *b, size_t n)
{
	if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && memcmp(b, "\xff\xd8\xff", 3) == 0)
		return "image/jpeg";
	if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
		return "image/gif";
	return NULL;
}

char *mcp_text_cap(const char *text, size_t len, size_t max)
{
	if (len <= max) {
		char *out = strndup(text, len);
		if (!out)
			abort();
		return out;
	}
	size_t head = protocol_utf8_prefix(text, len, max / 2);
	size_t tail = len - (max - max / 2);
	while (tail < len && ((unsigned char)text[tail] & 0xc0) == 0x80)
		tail++; /* (to the next character's first byte) */
	char *out;
	if (asprintf(&out, "%.*s\n[... %zu bytes cut ...]\n%.*s", (int)head, text, tail - head,
		     (int)(len - tail), text + tail) < 0)
		abort();
	return out;
}

/* Whether b64 decodes to a picture of type mime. */
static bool mcp_image_ok(const char *b64, const char *mime)
{
	size_t n = strlen(b64), got = 0;
	unsigned char *bytes = malloc(n / 4 * 3 + 3);
	if (!bytes)
		abort();
	const char *is = protocol_base64_decode(bytes, b64, n, &got) == 0
				 ? mcp_image_mime(bytes, got)
				 : NULL;
	bool ok = is && strcmp(is, mime) == 0;
	free(bytes);
	return ok;
}

/* A bundle's text for the model: text/plain, unless it is only the default
 * object repr ("<x.C object at 0x...>") and the object gave markdown or
 * HTML, which say more. */
static const char *mcp_bundle_text(const cJSON *bundle)
{
	const char *plain = protocol_str(bundle, "text/plain");
	size_t n = plain ? strlen(plain) : 0;
	bool bare = !plain || (n > 2 && plain[0] == '<' && plain[n - 1] == '>' &&
			       strstr(plain, " object at 0x"));
	if (bare)
		return protocol_str(bundle, "text/markdown") ?: protocol_str(bundle, "text/html")
							       ?: plain;
	return plain;
}

/* One display (or the value's picture) as an item: its picture when the
 * bytes are one, else its text; a picture that is not is said so. */
static void mcp_add_bundle(cJSON *items, const cJSON *d, bool pictures_only, size_t max_text)
{
	static const char *const types[] = {"image/png", "image/jpeg"};
	const char *text = mcp_bundle_text(d);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const char *b64 = protocol_str(d, types[i]);
		if (!b64)
			continue;
		if (mcp_image_ok(b64, types[i])) {
			mcp_add_image(items, b64, types[i]);
			return;
		}
		char *note;
		if (asprintf(&note,
			     "[a picture that is not %s data (%zu characters): not shown]%s%s",
			     types[i], strlen(b64), text ? "\n" : "", text ? text : "") < 0)
			abort();
		char *capped = mcp_text_cap(note, strlen(note), max_text);
		mcp_add_text(items, capped);
		free(capped);
		free(note);
		return;
	}
	if (!pictures_only && text) {
		char *capped = mcp_text_cap(text, strlen(text), max_text);
		mcp_add_text(items, capped);
		free(capped);
	}
}

struct mcp_shown {
	const char *id; /* display_id, or NULL */
	size_t at;
};

static int mcp_shown_cmp(const void *a, const void *b)
{
	const struct mcp_shown *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The display list as items: a display_id's last rendering where its first
 * was, the others as they came, MCP_MAX_DISPLAYS at most. */
static void mcp_add_displays(cJSON *items, const cJSON *list, size_t max_text)
{
	size_t n = (size_t)cJSON_GetArraySize(list), i = 0, k = 0;
	if (!n)
		return;
	const cJSON **at = calloc(n, sizeof(*at)), **show = calloc(n, sizeof(*show)), *d;
	struct mcp_shown *ids = calloc(n, sizeof(*ids));
	if (!at || !show || !ids)
		abort();
	cJSON_ArrayForEach(d, list)
	{
		at[i] = show[i] = d;
		const char *id = protocol_str(d, "display_id");
		if (id)
			ids[k++] = (struct mcp_shown){id, i};
		i++;
	}
	qsort(ids, k, sizeof(*ids), mcp_shown_cmp);
	for (size_t g = 0; g < k;) {
		size_t e = g;
		while (e + 1 < k && strcmp(ids[e + 1].id, ids[g].id) == 0)
			e++;
		for (size_t j = g + 1; j <= e; j++)
			show[ids[j].at] = NULL; /* (an update: shown where the first was) */
		show[ids[g].at] = at[ids[e].at];
		g = e + 1;
	}
	size_t shown = 0, pictures = 0, more = 0;
	for (i = 0; i < n; i++) {
		if (!show[i])
			continue;
		bool picture =
			protocol_str(show[i], "image/png") || protocol_str(show[i], "image/jpeg");
		if (shown < MCP_MAX_DISPLAYS && (!picture || pictures < MCP_MAX_PICTURES)) {
			mcp_add_bundle(items, show[i], false, max_text);
			shown++;
			pictures += picture;
		} else {
			more++;
		}
	}
	if (more) {
		char note[96];
		snprintf(note, sizeof(note),
			 "[%zu more displays not shown (at most %d, %d pictures)]", more,
			 MCP_MAX_DISPLAYS, MCP_MAX_PICTURES);
		mcp_add_text(items, note);
	}
	free(ids);
	free(show);
	free(at);
}

cJSON *mcp_run_content(const cJSON *res, size_t max_text, bool restart_told, bool *is_error)
{
	const char *status = protocol_str(res, "status");
	*is_error = !status || strcmp(status, "ok") != 0;
	cJSON *content;
	cJSON *r = mcp_tool_result(&content, *is_error);
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	if (!f)
		abort();
	const char *out = protocol_str(res, "stdout"), *err = protocol_str(res, "stderr");
	if (out && out[0])
		fprintf(f, "%s%s", out, out[strlen(out) - 1] == '\n' ? "" : "\n");
	if (err && err[0])
		fprintf(f, "[stderr]\n%s%s", err, err[strlen(err) - 1] == '\n' ? "" : "\n");
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(res, "result");
	const char *plain = mcp_bundle_text(value);
	if (plain)
		fprintf(f, "[value]\n%s\n", plain);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
	if (cJSON_IsObject(e)) {
		const cJSON *tb = cJSON_GetObjectItemCaseSensitive(e, "traceback"), *l;
		if (cJSON_GetArraySize(tb) > 0) {
			fputs("[error]\n", f);
			cJSON_ArrayForEach(l, tb)
			{
				if (cJSON_IsString(l))
					fputs(l->valuestring, f);
			}
		} else {
			fprintf(f, "[error]\n%s: %s\n", protocol_str(e, "name") ?: "Error",
				protocol_str(e, "value") ?: "");
		}
	}
	bool said = status && strcmp(status, "ok") != 0 && strcmp(status, "error") != 0;
	if (said) { /* (its message says what a restart cost: once is enough) */
		const char *msg = protocol_str(res, "message");
		fprintf(f, "[status: %s%s%s]\n", status, msg ? ": " : "", msg ? msg : "");
	}
	if (!said && !restart_told &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "state_lost")))
		fputs("[the interpreter was restarted: every variable is lost]\n", f);
	const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(res, "dropped_bytes");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "truncated")) ||
	    (cJSON_IsNumber(dropped) && dropped->valuedouble > 0))
		fprintf(f, "[output cut: %.0f bytes dropped from the middle]\n",
			cJSON_IsNumber(dropped) ? dropped->valuedouble : 0.0);
	fclose(f);
	if (!text)
		abort();
	/* Pictures and displays: the display list's, then the value's picture
	 * (a figure as the last line). */
	cJSON *items = cJSON_CreateArray();
	if (!items)
		abort();
	mcp_add_displays(items, cJSON_GetObjectItemCaseSensitive(res, "display"), max_text);
	if (cJSON_IsObject(value))
		mcp_add_bundle(items, value, true, max_text);
	if (tlen) {
		char *capped = mcp_text_cap(text, tlen, max_text);
		mcp_add_text(content, capped);
		free(capped);
	} else if (!cJSON_GetArraySize(items)) {
		mcp_add_text(content, "(no output)");
	}
	free(text);
	while (cJSON_GetArraySize(items))
		cJSON_AddItemToArray(content, cJSON_DetachItemFromArray(items, 0));
	cJSON_Delete(items);
	/* The same, for a program: what outputSchema promises. */
	cJSON *sc = cJSON_AddObjectToObject(r, "structuredContent");
	cJSON_AddStringToObject(sc, "status", status ? status : "error");
	static const char *const keep[] = {"exec", "session", "duration_ms"};
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, keep[i]);
		if (cJSON_IsNumber(v) || cJSON_IsString(v))
			cJSON_AddItemToObject(sc, keep[i], protocol_json_dup_exact(v));
	}
	return r;
}

cJSON *mcp_get_content(const cJSON *reply, const char *path, size_t max_text)
{
	cJSON *content;
	cJSON *r = mcp_tool_result(&content, false);
	const char *b64 = protocol_str(reply, "data") ?: "";
	size_t n = strlen(b64), got = 0;
	unsigned char *bytes = malloc(n / 4 * 3 + 3);
	if (!bytes)
		abort();
	if (protocol_base64_decode(bytes, b64, n, &got) < 0)
		got = 0;
	const char *mime = mcp_image_mime(bytes, got);
	if (mime) {
		mcp_add_image(content, b64, mime);
	} else if (protocol_utf8_valid((const char *)bytes, got) && !memchr(bytes, 0, got)) {
		char *text = malloc(got + 1);
		if (!text)
			abort();
		memcpy(text, bytes, got);
		text[got] = '\0';
		char *capped = mcp_text_cap(text, got, max_text);
		mcp_add_text(content, capped);
		free(capped);
		free(text);
	} else {
		cJSON *item = mcp_obj();
		cJSON_AddStringToObject(item, "type", "resource");
		cJSON *res = cJSON_AddObjectToObject(item, "resource");
		char *uri;
		if (asprintf(&uri, "file://%s", path) < 0)
			abort();
		cJSON_AddStringToObject(res, "uri", uri);
		free(uri);
		cJSON_AddStringToObject(res, "mimeType", "application/octet-stream");
		cJSON_AddStringToObject(res, "blob", b64);
		cJSON_AddItemToArray(content, item);
	}
	free(bytes);
	return r;
}
