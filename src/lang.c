/*
 * lang.c - the languages a session's kernel may speak (--lang).
 *
 * A language here is a kernel the driver has: standby_<name>() in the
 * kernel's code (driver/kernel.py and what it includes). Adding one is one
 * entry below and that function.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lang.h"

static const char *const lang_names[] = {
	LANG_DEFAULT,
	"bash",
	"node",
};

#define LANG_COUNT (sizeof(lang_names) / sizeof(lang_names[0]))

const char *lang_find(const char *name)
{
	if (!name || !*name)
		return lang_names[0];
	for (size_t i = 0; i < LANG_COUNT; i++)
		if (strcmp(lang_names[i], name) == 0)
			return lang_names[i];
	return NULL;
}

void lang_list(char *out, size_t outlen)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < LANG_COUNT && n < outlen; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%s%s",
				      i == 0		    ? ""
				      : i + 1 == LANG_COUNT ? " or "
							    : ", ",
				      lang_names[i]);
}

int lang_boot_form(const char *lang, const char *base, char *out, size_t outlen)
{
	int n = !lang || strcmp(lang, LANG_DEFAULT) == 0
			? snprintf(out, outlen, "%s", base)
			: snprintf(out, outlen, "%s %s", base, lang);
	return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}
