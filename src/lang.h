/*
 * lang.h - the languages a session's kernel may speak (--lang): their names,
 * and the form line that tells the relay which one to start (BOOT in
 * ptybox-protocol(7)). Pure: unit tests drive it.
 */
#ifndef PTYBOX_LANG_H
#define PTYBOX_LANG_H

#include <stddef.h>

/* The language without --lang: the kernel the driver always had. */
#define LANG_DEFAULT "python"

/* The table's entry for name (its own pointer, static: compare names by
 * pointer after this), or NULL if the driver has no kernel for it. NULL or ""
 * is LANG_DEFAULT. */
const char *lang_find(const char *name);
/* The known languages as "a, b or c", for a message (cut at outlen). */
void lang_list(char *out, size_t outlen);
/* The boot's form line for lang (from lang_find) after base (the magic, or
 * PROTOCOL_BOOT_SOURCE): base alone for LANG_DEFAULT (the wire Python always
 * had), else "base lang". -ENOSPC if it does not fit out. */
int lang_boot_form(const char *lang, const char *base, char *out, size_t outlen);

#endif
