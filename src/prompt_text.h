/*
 * prompt_text.h - the prompt's pure text logic: what the driver's
 * is_complete cannot say (it is busy, or a script is read from a pipe), the
 * common prefix of completion matches, and characters against bytes. No I/O.
 */
#ifndef PTYBOX_PROMPT_TEXT_H
#define PTYBOX_PROMPT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a line at column 0 of a script continues the statement before it
 * (else:, elif, except, finally) rather than starting a new one. */
bool prompt_text_continues(const char *line, size_t len);
/* Whether a line is blank or a comment alone (nothing to run). */
bool prompt_text_blank(const char *line, size_t len);
/* A guess at is_complete when the driver cannot answer (a snippet of someone
 * else runs): true when code must go on (its last line ends with ':' or '\',
 * or a bracket is open outside strings and comments). */
bool prompt_text_guess_incomplete(const char *code, size_t len);
/* The characters (UTF-8 lead bytes) in the first len bytes of s. */
size_t prompt_text_chars(const char *s, size_t len);
/* The bytes of the first n characters of s (at most len). */
size_t prompt_text_bytes(const char *s, size_t len, size_t n);
/* The length in bytes of the longest prefix that all n strings share, cut to
 * a whole UTF-8 character. */
size_t prompt_text_common(const char *const *v, size_t n);
/* The bytes of the UTF-8 character that starts with lead: 1 to 4, or 0 for a
 * byte no character starts with. */
size_t prompt_text_utf8_len(unsigned char lead);
/* A bracketed paste as code, in place: its new length. Terminals send a
 * newline as CR: CR LF and CR become LF; other control characters but tab
 * (an ESC of a coloured copy, a NUL) go. */
size_t prompt_text_paste(char *s, size_t len);

#endif
