/*
 * prompt_text.c - the prompt's pure text logic (prompt_text.h): no I/O, so
 * the unit tests drive it string by string. The Python rules here are only
 * what a prompt needs when the driver's own verdict (codeop's) is not to be
 * had: a fallback, never the judge.
 */
#include "prompt_text.h"

#include <string.h>

static bool prompt_text_word(const char *line, size_t len, const char *kw)
{
	size_t n = strlen(kw);
	if (len < n || memcmp(line, kw, n) != 0)
		return false;
	if (len == n)
		return true;
	char c = line[n];
	return !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		 (c >= '0' && c <= '9') || (unsigned char)c >= 0x80);
}

bool prompt_text_continues(const char *line, size_t len)
{
	static const char *const kws[] = {"else", "elif", "except", "finally"};
	for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
		if (prompt_text_word(line, len, kws[i]))
			return true;
	return false;
}

bool prompt_text_blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (line[i] == '#')
			return true;
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\f')
			return false;
	}
	return true;
}

bool prompt_text_guess_incomplete(const char *code, size_t len)
{
	long depth = 0;
	char quote = 0;
	bool triple = false;
	char last = 0; /* the last character outside strings and comments, blanks aside */
	for (size_t i = 0; i < len; i++) {
		char c = code[i];
		if (quote) {
			if (c == '\\' && i + 1 < len) {
				i++;
			} else if (c == quote && !triple) {
				quote = 0;
			} else if (c == quote && i + 2 < len && code[i + 1] == quote &&
				   code[i + 2] == quote) {
				quote = 0;
				i += 2;
			} else if (c == '\n' && !triple) {
				quote = 0; /* (an unclosed string: the compiler's to say) */
			}
			last = 'a';
			continue;
		}
		if (c == '#') {
			while (i + 1 < len && code[i + 1] != '\n')
				i++;
			continue;
		}
		if (c == '\'' || c == '"') {
			triple = i + 2 < len && code[i + 1] == c && code[i + 2] == c;
			quote = c;
			if (triple)
				i += 2;
			last = 'a';
			continue;
		}
		if (c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == ')' || c == ']' || c == '}') && depth > 0)
			depth--;
		if (c == '\n')
			last = last == '\\' ? '\\' : (depth > 0 ? last : '\n');
		else if (c != ' ' && c != '\t' && c != '\r')
			last = c;
	}
	return depth > 0 || (quote && triple) || last == ':' || last == '\\';
}

size_t prompt_text_chars(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

size_t prompt_text_bytes(const char *s, size_t len, size_t n)
{
	size_t i = 0;
	for (; i < len; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (n == 0)
				break;
			n--;
		}
	}
	return i;
}

size_t prompt_text_common(const char *const *v, size_t n)
{
	if (n == 0)
		return 0;
	size_t k = strlen(v[0]);
	for (size_t i = 1; i < n; i++) {
		size_t j = 0;
		while (j < k && v[i][j] && v[i][j] == v[0][j])
			j++;
		k = j;
	}
	while (k > 0 && ((unsigned char)v[0][k] & 0xC0) == 0x80)
		k--; /* (a character cut in two: not shared) */
	return k;
}

size_t prompt_text_utf8_len(unsigned char lead)
{
	return lead < 0x80   ? 1
	       : lead < 0xc2 ? 0
	       : lead < 0xe0 ? 2
	       : lead < 0xf0 ? 3
	       : lead < 0xf5 ? 4
			     : 0;
}

size_t prompt_text_paste(char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\r') {
			s[o++] = '\n';
			if (i + 1 < len && s[i + 1] == '\n')
				i++;
		} else if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t') {
			s[o++] = (char)c;
		}
	}
	return o;
}
