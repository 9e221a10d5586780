/*
 * protocol_files.c - the file ops' requests on the terminal wire (ptybox-protocol(7), REQUESTS):
 * put (its request line, then its data as "!" lines), get, files and remove. Pure: bytes in,
 * lines out.
 *
 * A put's data goes as it is but for the bytes a terminal or a transport in between would act
 * on (NUL, ^C, CR, LF, ^P, XON, XOFF, and '~' for ssh's escapes; '=' as the escape itself),
 * which are sent as "=XX" (uppercase hex): the relay decodes a line with binascii.a2b_qp, at C
 * speed. Random bytes grow by some 7% (base64 would add 33%), and the PTY is the bottleneck.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <sodium.h>

#include "protocol.h"

/* 1: the byte goes as "=XX". */
static const unsigned char protocol_escaped[256] = {
	[0x00] = 1, [0x03] = 1, [0x0a] = 1, [0x0d] = 1, [0x10] = 1,
	[0x11] = 1, [0x13] = 1, ['='] = 1,  ['~'] = 1,
};

size_t protocol_escape_data(char *out, const unsigned char *data, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *o = out;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = data[i];
		if (!protocol_escaped[c]) {
			*o++ = (char)c;
			continue;
		}
		*o++ = '=';
		*o++ = hex[c >> 4];
		*o++ = hex[c & 15];
	}
	return (size_t)(o - out);
}

/* json (not NUL-terminated, jlen bytes) as a request line: base64url and '\n', at out (room
 * for protocol_request_len(jlen)); returns the length. */
static size_t protocol_request(char *out, const char *json, size_t jlen)
{
	size_t cap = sodium_base64_ENCODED_LEN(jlen, sodium_base64_VARIANT_URLSAFE);
	sodium_bin2base64(out, cap, (const unsigned char *)json, jlen,
			  sodium_base64_VARIANT_URLSAFE);
	out[cap - 1] = '\n'; /* (the encoded length is exact; cap counts the NUL) */
	return cap;
}

static size_t protocol_request_len(size_t jlen)
{
	return sodium_base64_ENCODED_LEN(jlen, sodium_base64_VARIANT_URLSAFE);
}

static bool protocol_path_ok(const char *path)
{
	size_t n = path ? strnlen(path, PROTOCOL_PATH_MAX + 1) : 0;
	return n > 0 && n <= PROTOCOL_PATH_MAX;
}

/* The JSON of a file op's request; NULL when out of memory. */
static char *protocol_file_json(uint64_t id, const char *op, const char *path, cJSON **req)
{
	*req = cJSON_CreateObject();
	if (*req && protocol_json_add_uint(*req, "id", id) &&
	    cJSON_AddStringToObject(*req, "op", op) && cJSON_AddStringToObject(*req, "path", path))
		return "";
	cJSON_Delete(*req);
	*req = NULL;
	return NULL;
}

static int protocol_file_finish(cJSON *req, char **out, size_t *outlen)
{
	char *json = req ? cJSON_PrintUnformatted(req) : NULL;
	cJSON_Delete(req);
	if (!json)
		return -ENOMEM;
	size_t jlen = strlen(json);
	char *line = malloc(protocol_request_len(jlen) + 1);
	if (!line) {
		cJSON_free(json);
		return -ENOMEM;
	}
	*outlen = protocol_request(line, json, jlen);
	line[*outlen] = '\0';
	cJSON_free(json);
	*out = line;
	return 0;
}

/* Plain base64 of file data, here and not libsodium's: sodium's is constant-time
 * (made for secrets), 80-95 ms for 8 MiB on this project's 2-core machine
 * against some 8 ms here, on the server's loop, for data that is no secret. */
static const char protocol_b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t protocol_base64_encode(char *out, const unsigned char *in, size_t len)
{
	const char *a = protocol_b64_alphabet;
	size_t o = 0, i = 0;
	for (; i + 3 <= len; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
		out[o++] = a[v >> 18];
		out[o++] = a[v >> 12 & 63];
		out[o++] = a[v >> 6 & 63];
		out[o++] = a[v & 63];
	}
	if (i < len) { /* one or two bytes left: padded */
		unsigned v = (unsigned)in[i] << 16 | (len - i == 2 ? (unsigned)in[i + 1] << 8 : 0);
		out[o++] = a[v >> 18];
		out[o++] = a[v >> 12 & 63];
		out[o++] = len - i == 2 ? a[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

/* Each base64 character's value, shifted to its place in a group of four (protocol_b64_d[k]:
 * the k-th character's); not one: bit 24, which no group's 24 bits reach. A group is four
 * lookups OR'd, and a bad character is looked for once a call, not once a group. */
static uint32_t protocol_b64_d[4][256];

static void protocol_b64_init(void)
{
	const char *alphabet = protocol_b64_alphabet;
	if (protocol_b64_d[3]['B'] == 1)
		return;
	for (int k = 0; k < 4; k++)
		for (int i = 0; i < 256; i++)
			protocol_b64_d[k][i] = (uint32_t)1 << 24;
	for (uint32_t i = 0; i < 64; i++) {
		unsigned char c = (unsigned char)alphabet[i];
		protocol_b64_d[0][c] = i << 18;
		protocol_b64_d[1][c] = i << 12;
		protocol_b64_d[2][c] = i << 6;
		protocol_b64_d[3][c] = i;
	}
}

int protocol_base64_decode(unsigned char *out, const char *in, size_t len, size_t *outlen)
{
	protocol_b64_init();
	const uint32_t(*d)[256] = protocol_b64_d;
	const unsigned char *p = (const unsigned char *)in;
	for (int pad = 0; pad < 2 && len > 0 && p[len - 1] == '='; pad++)
		len--; /* (two at most: a third is a bad character) */
	if (len % 4 == 1)
		return -EINVAL;
	uint32_t bad = 0;
	size_t o = 0, i = 0;
	for (; i + 4 <= len; i += 4) {
		uint32_t v = d[0][p[i]] | d[1][p[i + 1]] | d[2][p[i + 2]] | d[3][p[i + 3]];
		bad |= v;
		out[o++] = (unsigned char)(v >> 16);
		out[o++] = (unsigned char)(v >> 8);
		out[o++] = (unsigned char)v;
	}
	if (i < len) { /* two or three characters left: one or two bytes */
		uint32_t v = d[0][p[i]] | d[1][p[i + 1]] | (len - i == 3 ? d[2][p[i + 2]] : 0);
		bad |= v;
		out[o++] = (unsigned char)(v >> 16);
		if (len - i == 3)
			out[o++] = (unsigned char)(v >> 8);
	}
	if (bad >> 24)
		return -EINVAL;
	*outlen = o;
	return 0;
}

bool protocol_upload_ok(const char *token)
{
	size_t n = strlen(token);
	return n > 0 && n <= PROTOCOL_UPLOAD_MAX && strspn(token, "0123456789abcdef") == n;
}

/* A put's request line, with room after it for its data lines (worst case: data_len bytes
 * all escaped, and "!" and '\n' a line). */
static int protocol_put_head(uint64_t id, const char *path, size_t len, int mode, uint64_t offset,
			     bool more, const char *upload, bool abort, char **buf, size_t *n)
{
	cJSON *req;
	if (!protocol_path_ok(path) || mode > 07777 || (upload && !protocol_upload_ok(upload)))
		return -EINVAL;
	if (!protocol_file_json(id, "put", path, &req) ||
	    !protocol_json_add_uint(req, "size", len) ||
	    (mode >= 0 && !cJSON_AddNumberToObject(req, "mode", mode)) ||
	    (offset && !protocol_json_add_uint(req, "offset", offset)) ||
	    (more && !cJSON_AddTrueToObject(req, "more")) ||
	    (upload && !cJSON_AddStringToObject(req, "upload", upload)) ||
	    (abort && !cJSON_AddTrueToObject(req, "abort"))) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	char *json = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!json)
		return -ENOMEM;
	size_t jlen = strlen(json), lines = (len + PROTOCOL_DATA_LINE - 1) / PROTOCOL_DATA_LINE;
	size_t cap = protocol_request_len(jlen) + 3 * len + 2 * lines + 1;
	if (!(*buf = malloc(cap))) {
		cJSON_free(json);
		return -ENOMEM;
	}
	*n = protocol_request(*buf, json, jlen);
	cJSON_free(json);
	return 0;
}

/* Data lines being written: at buf + n, in_line bytes into the line now open. */
struct protocol_put_out {
	char *buf;
	size_t n, in_line;
};

/* k more bytes of data, escaped, lines of PROTOCOL_DATA_LINE bytes opened and closed. */
static void protocol_put_data(struct protocol_put_out *o, const unsigned char *p, size_t k)
{
	while (k) {
		if (!o->in_line)
			o->buf[o->n++] = '!';
		size_t take = PROTOCOL_DATA_LINE - o->in_line;
		if (take > k)
			take = k;
		o->n += protocol_escape_data(o->buf + o->n, p, take);
		o->in_line += take;
		p += take;
		k -= take;
		if (o->in_line == PROTOCOL_DATA_LINE) {
			o->buf[o->n++] = '\n';
			o->in_line = 0;
		}
	}
}

static void protocol_put_end(struct protocol_put_out *o, char **out, size_t *outlen)
{
	if (o->in_line)
		o->buf[o->n++] = '\n';
	o->buf[o->n] = '\0';
	*out = o->buf;
	*outlen = o->n;
}

int protocol_put_lines(uint64_t id, const char *path, const void *data, size_t len, int mode,
		       uint64_t offset, bool more, const char *upload, bool abort, char **out,
		       size_t *outlen)
{
	struct protocol_put_out o = {0};
	int rc = protocol_put_head(id, path, len, mode, offset, more, upload, abort, &o.buf, &o.n);
	if (rc < 0)
		return rc;
	protocol_put_data(&o, data, len);
	protocol_put_end(&o, out, outlen);
	return 0;
}

size_t protocol_base64_decoded_len(const char *b64, size_t len)
{
	for (int pad = 0; pad < 2 && len > 0 && b64[len - 1] == '='; pad++)
		len--;
	return len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
}

/* Base64 characters decoded at a time: the bytes stay in the cache on their way to the line. */
#define PROTOCOL_B64_PIECE ((size_t)48 << 10)

int protocol_put_lines_base64(uint64_t id, const char *path, const char *b64, size_t b64len,
			      int mode, uint64_t offset, bool more, const char *upload, bool abort,
			      char **out, size_t *outlen, size_t *datalen)
{
	size_t len = protocol_base64_decoded_len(b64, b64len);
	struct protocol_put_out o = {0};
	int rc = protocol_put_head(id, path, len, mode, offset, more, upload, abort, &o.buf, &o.n);
	if (rc < 0)
		return rc;
	unsigned char piece[PROTOCOL_B64_PIECE / 4 * 3];
	size_t got = 0;
	for (size_t at = 0; at < b64len; at += PROTOCOL_B64_PIECE) {
		size_t k = b64len - at < PROTOCOL_B64_PIECE ? b64len - at : PROTOCOL_B64_PIECE;
		size_t n;
		/* Padding only at the very end ("QQ==QUJD" is not base64). */
		if ((at + k < b64len && b64[at + k - 1] == '=') ||
		    protocol_base64_decode(piece, b64 + at, k, &n) != 0) {
			free(o.buf);
			return -EILSEQ;
		}
		protocol_put_data(&o, piece, n);
		got += n;
	}
	if (got != len) { /* ("QQ=" and the like) */
		free(o.buf);
		return -EILSEQ;
	}
	protocol_put_end(&o, out, outlen);
	*datalen = len;
	return 0;
}

/* The end of the JSON string that opens at p (its '"'), or NULL. */
static const char *protocol_json_string_end(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '"')
			return p + 1;
		if (*p == '\\' && ++p == end)
			return NULL;
	}
	return NULL;
}

static const char *protocol_json_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* The end of the JSON value at p (a scalar, string, object or array), or NULL: only where it
 * ends, not whether it is well formed (the parser that reads the rest says that). */
static const char *protocol_json_value_end(const char *p, const char *end)
{
	int depth = 0;
	while (p < end) {
		char ch = *p;
		if (ch == '"') {
			if (!(p = protocol_json_string_end(p, end)))
				return NULL;
			if (!depth)
				return p;
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']') {
			if (--depth < 0)
				return p; /* (the end of the enclosing object) */
			if (!depth)
				return p + 1;
		} else if (!depth && ch == ',')
			return p;
		p++;
	}
	return NULL;
}

bool protocol_json_data_span(const char *line, size_t len, const char *key, size_t *start,
			     size_t *stop)
{
	const char *p = line, *end = line + len;
	size_t klen = strlen(key);
	p = protocol_json_blank(p, end);
	if (p == end || *p++ != '{')
		return false;
	for (;;) {
		p = protocol_json_blank(p, end);
		if (p == end || *p != '"')
			return false;
		const char *k = p + 1, *kend = protocol_json_string_end(p, end);
		if (!kend ||
		    memchr(k, '\\', (size_t)(kend - 1 - k))) /* (an escaped key might be it) */
			return false;
		p = protocol_json_blank(kend, end);
		if (p == end || *p++ != ':')
			return false;
		p = protocol_json_blank(p, end);
		if (p < end && *p == '"' && (size_t)(kend - 1 - k) == klen &&
		    memcmp(k, key, klen) == 0) {
			/* The value: to its closing quote, which must come with no escape before
			 * it. */
			const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
			if (!q || memchr(p + 1, '\\', (size_t)(q - p - 1)))
				return false;
			*start = (size_t)(p + 1 - line);
			*stop = (size_t)(q - line);
			return true;
		}
		if (!(p = protocol_json_value_end(p, end)))
			return false;
		p = protocol_json_blank(p, end);
		if (p == end || *p++ != ',')
			return false;
	}
}

int protocol_get_line(uint64_t id, const char *path, uint64_t offset, uint64_t length, uint64_t max,
		      char **out, size_t *outlen)
{
	cJSON *req;
	if (!protocol_path_ok(path))
		return -EINVAL;
	if (!protocol_file_json(id, "get", path, &req) ||
	    (offset && !protocol_json_add_uint(req, "offset", offset)) ||
	    (length && !protocol_json_add_uint(req, "length", length)) ||
	    (max && !protocol_json_add_uint(req, "max", max))) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	return protocol_file_finish(req, out, outlen);
}

int protocol_file_line(uint64_t id, const char *op, const char *path, bool recursive, char **out,
		       size_t *outlen)
{
	cJSON *req;
	if (!protocol_path_ok(path))
		return -EINVAL;
	if (!protocol_file_json(id, op, path, &req) ||
	    (recursive && !cJSON_AddTrueToObject(req, "recursive"))) {
		cJSON_Delete(req);
		return -ENOMEM;
	}
	return protocol_file_finish(req, out, outlen);
}
