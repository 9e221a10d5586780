/* server_name.c - what may name a session (or a server): pure. */
#include <string.h>

#include "protocol.h"
#include "server.h"

const char *server_name_invalid(const char *name, size_t len)
{
	if (len == 0)
		return "empty";
	if (len > SERVER_NAME_MAX)
		return "longer than 64 bytes";
	if (!protocol_utf8_valid(name, len) || memchr(name, '\0', len))
		return "not valid UTF-8";
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return "'.' and '..' are not names";
	if (name[0] == '-')
		return "it starts with '-'";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch < 0x20 || ch == 0x7f)
			return "it holds a control character";
		if (ch == '/')
			return "it holds a '/'";
		/* C1 controls (U+0080-U+009F) and the bidi controls (U+200E,
		 * U+200F, U+202A-U+202E, U+2066-U+2069) would rewrite a listing. */
		if (ch == 0xc2 && i + 1 < len && (unsigned char)name[i + 1] < 0xa0)
			return "it holds a control character";
		if (ch == 0xe2 && i + 2 < len) {
			unsigned char b1 = (unsigned char)name[i + 1],
				      b2 = (unsigned char)name[i + 2];
			if ((b1 == 0x80 &&
			     (b2 == 0x8e || b2 == 0x8f || (b2 >= 0xaa && b2 <= 0xae))) ||
			    (b1 == 0x81 && b2 >= 0xa6 && b2 <= 0xa9))
				return "it holds a bidirectional control character";
		}
	}
	return NULL;
}
