/*
 * stream_frame.c - the fast way through the one frame that carries bulk output.
 *
 * A stream frame is nearly all of the bytes a busy session sends: 20 MB of
 * print is 20 MB of stream text. cJSON decodes a string one byte at a time and
 * the value count before it (protocol_parse_frame) reads every byte again, so
 * the server spent a third of its time there. The relay writes stream frames
 * in one exact shape (relay.py: Out.prefix and emit), and this file reads that
 * shape only:
 *
 *     {"type":"stream","id":DIGITS,"name":"stdout"|"stderr","text":"..."}
 *     {"type":"stream","id":DIGITS,"name":"stdout"|"stderr","z":"BASE64"}
 *     either ending ,"late":true}
 *
 * with the text printable ASCII and JSON escapes; z, a big text deflated (zlib,
 * RFC 1950) and in standard base64, read into "text" here and nowhere else, so
 * every consumer sees a plain stream frame. Its text is bounded
 * (PROTOCOL_STREAM_Z_MAX), free of NUL and valid UTF-8, or the frame is refused. Anything else (a
 * dropped count, a string id, a \u0000, a byte outside printable ASCII) is not handled here and
 * goes to cJSON as before, so both ways give the same tree. Pure: no I/O, unit-tested byte by byte
 * (tests/unit/test_protocol.c).
 */
#include "stream_frame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <zlib.h>

#include "protocol.h"

static const char stream_head[] = "{\"type\":\"stream\",\"id\":";
static const char stream_name[] = ",\"name\":\"std";
static const char stream_text[] = "\",\"text\":\"";
static const char stream_late[] = ",\"late\":true}";
static const char stream_z[] = "\",\"z\":\"";

/* The text of a z member (base64 of a zlib stream) at p, n bytes, into *out
 * (cJSON_malloc'd, NUL-terminated): 0, or -EINVAL for one that is not base64,
 * not a whole zlib stream, inflates past PROTOCOL_STREAM_Z_MAX, holds a NUL or
 * is not UTF-8; -ENOMEM. */
static int stream_inflate(const char *p, size_t n, char **out, size_t *outlen)
{
	size_t zcap = n / 4 * 3 + 3, zlen = 0;
	unsigned char *z = malloc(zcap ? zcap : 1);
	if (!z)
		return -ENOMEM;
	if (sodium_base642bin(z, zcap, p, n, NULL, &zlen, NULL, sodium_base64_VARIANT_ORIGINAL) !=
		    0 ||
	    zlen == 0) {
		free(z);
		return -EINVAL;
	}
	size_t cap = zlen * 8 < ((size_t)64 << 10) ? (size_t)64 << 10 : zlen * 8;
	if (cap > PROTOCOL_STREAM_Z_MAX)
		cap = PROTOCOL_STREAM_Z_MAX;
	char *text = cJSON_malloc(cap + 1);
	z_stream zs = {.next_in = z, .avail_in = (uInt)zlen};
	int rc = -ENOMEM;
	if (!text || inflateInit(&zs) != Z_OK)
		goto done;
	int zr = Z_OK;
	rc = -EINVAL;
	while (zr == Z_OK) {
		if (zs.total_out == cap) { /* full: twice the room, up to the cap */
			if (cap >= PROTOCOL_STREAM_Z_MAX)
				break;
			size_t more =
				cap * 2 > PROTOCOL_STREAM_Z_MAX ? PROTOCOL_STREAM_Z_MAX : cap * 2;
			char *bigger = realloc(text, more + 1); /* (cJSON's hooks are malloc's) */
			if (!bigger) {
				rc = -ENOMEM;
				break;
			}
			text = bigger;
			cap = more;
		}
		zs.next_out = (unsigned char *)text + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zr = inflate(&zs, Z_NO_FLUSH);
	}
	size_t len = zs.total_out;
	inflateEnd(&zs);
	if (zr == Z_STREAM_END && zs.avail_in == 0 && !memchr(text, '\0', len) &&
	    protocol_utf8_valid(text, len)) {
		text[len] = '\0';
		*out = text;
		*outlen = len;
		text = NULL;
		rc = 0;
	}
done:
	cJSON_free(text);
	free(z);
	return rc;
}

static int stream_hex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

static long stream_hex4(const char *p)
{
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int d = stream_hex(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

static size_t stream_put_utf8(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The JSON string body at p (after its opening quote) decoded into out (room
 * for n bytes and a NUL: no escape grows); the offset of its closing quote, or
 * -1 when it is not one this file takes (see the top). A lone surrogate becomes
 * U+FFFD, as protocol_parse_frame's masking makes it. */
static long stream_unescape(const char *p, size_t n, char *out, size_t *outlen)
{
	size_t i = 0, o = 0;
	while (i < n) {
		/* the run up to the next quote or backslash, as it is */
		size_t start = i;
		while (i < n && p[i] != '"' && p[i] != '\\') {
			unsigned char c = (unsigned char)p[i];
			if (c < 0x20 || c > 0x7e)
				return -1;
			i++;
		}
		memcpy(out + o, p + start, i - start);
		o += i - start;
		if (i == n)
			return -1;
		if (p[i] == '"') {
			out[o] = '\0';
			*outlen = o;
			return (long)i;
		}
		if (i + 1 >= n)
			return -1;
		char e = p[i + 1];
		const char *simple = strchr("\"\\/bfnrt", e);
		if (e && simple) {
			out[o++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
			i += 2;
			continue;
		}
		if (e != 'u' || n - i < 6)
			return -1;
		long cp = stream_hex4(p + i + 2);
		if (cp <= 0)
			return -1; /* (\u0000: cJSON's string would end there; it decides) */
		i += 6;
		if (cp >= 0xd800 && cp <= 0xdbff && n - i >= 6 && p[i] == '\\' && p[i + 1] == 'u') {
			long lo = stream_hex4(p + i + 2);
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
		}
		if (cp >= 0xd800 && cp <= 0xdfff)
			cp = 0xfffd;
		o += stream_put_utf8(out + o, (unsigned long)cp);
	}
	return -1;
}

int stream_frame_parse(const char *payload, size_t len, cJSON **root, uint64_t *id)
{
	const size_t hl = sizeof(stream_head) - 1, nl = sizeof(stream_name) - 1,
		     tl = sizeof(stream_text) - 1;
	*root = NULL;
	if (len < hl || memcmp(payload, stream_head, hl) != 0)
		return 0;
	size_t i = hl;
	uint64_t v = 0;
	size_t digits = 0;
	while (i < len && payload[i] >= '0' && payload[i] <= '9' && digits < 16) {
		v = v * 10 + (uint64_t)(payload[i] - '0');
		i++;
		digits++;
	}
	/* up to 2^53, as cJSON's double holds it exactly; no leading zero */
	if (!digits || v >= (1ULL << 53) || (digits > 1 && payload[hl] == '0'))
		return 0;
	if (len - i < nl + 3 + tl || memcmp(payload + i, stream_name, nl) != 0) /* (tl > z's) */
		return 0;
	i += nl;
	const char *name = memcmp(payload + i, "out", 3) == 0	? "stdout"
			   : memcmp(payload + i, "err", 3) == 0 ? "stderr"
								: NULL;
	if (!name)
		return 0;
	const size_t zl = sizeof(stream_z) - 1;
	char *text;
	size_t text_len;
	long end;
	bool deflated = memcmp(payload + i + 3, stream_z, zl) == 0;
	if (deflated) {
		i += 3 + zl;
		const char *q = memchr(payload + i, '"', len - i);
		if (!q)
			return -EINVAL;
		end = q - (payload + i);
		int rc = stream_inflate(payload + i, (size_t)end, &text, &text_len);
		if (rc < 0)
			return rc;
	} else {
		if (memcmp(payload + i + 3, stream_text, tl) != 0)
			return 0;
		i += 3 + tl;
		if (!(text = cJSON_malloc(len - i + 1)))
			return -ENOMEM;
		end = stream_unescape(payload + i, len - i, text, &text_len);
		if (end < 0) {
			cJSON_free(text);
			return 0;
		}
	}
	const char *rest = payload + i + end + 1;
	size_t rn = len - i - (size_t)end - 1;
	bool late = rn == sizeof(stream_late) - 1 && memcmp(rest, stream_late, rn) == 0;
	if (!late && !(rn == 1 && rest[0] == '}')) {
		cJSON_free(text);
		return deflated ? -EINVAL : 0;
	}
	cJSON *o = cJSON_CreateObject(), *t = NULL;
	if (!o || !cJSON_AddStringToObject(o, "type", "stream") ||
	    !cJSON_AddNumberToObject(o, "id", (double)v) ||
	    !cJSON_AddStringToObject(o, "name", name) ||
	    !(t = cJSON_AddStringToObject(o, "text", "")) ||
	    (late && !cJSON_AddTrueToObject(o, "late"))) {
		cJSON_Delete(o);
		cJSON_free(text);
		return -ENOMEM;
	}
	cJSON_free(t->valuestring); /* (the text, decoded in place of cJSON's copy) */
	t->valuestring = text;
	*root = o;
	*id = v;
	return 1;
}
