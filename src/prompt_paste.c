/*
 * prompt_paste.c - a bracketed paste (xterm's mode 2004, on while ptybox
 * has the terminal): the text between ESC[200~ and ESC[201~ read whole, as
 * one piece, and a paste of lines run as one block, as a notebook runs a
 * pasted cell (line by line, an indented paste fails at its second line).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <editline/readline.h>

#include "cli.h"
#include "prompt_internal.h"
#include "prompt_text.h"

/* Bracketed paste on the terminal while ptybox has it (off for the shell
 * at a stop and at the end). */
void prompt_bracketed(struct prompt *p, bool on)
{
	if (p->bracketed)
		prompt_out(on ? PROMPT_PASTE_ON : PROMPT_PASTE_OFF);
}

/* One byte more of a paste, kept while under the block's cap (past it the
 * paste is read on to its end, and dropped). */
static void prompt_paste_add(char **buf, size_t *len, size_t *cap, char c, bool *over)
{
	if (*len + 2 > PROMPT_BLOCK_MAX) {
		*over = true;
		return;
	}
	if (*len + 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 4096;
		char *nb = realloc(*buf, ncap);
		if (!nb)
			abort(); /* out of memory is fatal (STYLE.md) */
		*buf = nb;
		*cap = ncap;
	}
	(*buf)[(*len)++] = c;
}

/* ESC[200~, the start of a bracketed paste: the text to ESC[201~ is read
 * here whole. A paste within a line goes into it; one of lines is left in
 * p->paste (with the line around it) for the loop to run as one block
 * (prompt.c), as a notebook runs a pasted cell, and not line by line. */
int prompt_paste(int count, int key)
{
	static const char end[] = "\033[201~";
	struct prompt *p = prompt_current;
	(void)count;
	(void)key;
	char *buf = NULL;
	size_t len = 0, cap = 0, matched = 0;
	bool over = false;
	while (matched < sizeof(end) - 1 && prompt_keys_fill(p, PROMPT_PASTE_MS) > 0) {
		unsigned char c = p->keys[p->keys_at++];
		if (c == (unsigned char)end[matched]) {
			matched++;
			continue;
		}
		/* (a mismatch gives back what matched; only the marker's first
		 * byte is an ESC, so c may start it anew) */
		for (size_t i = 0; i < matched; i++)
			prompt_paste_add(&buf, &len, &cap, end[i], &over);
		matched = c == '\033';
		if (!matched)
			prompt_paste_add(&buf, &len, &cap, (char)c, &over);
	}
	if (over) {
		cli_error("\n%s: the paste is over %zu MiB: dropped", p->cfg->cmd,
			  PROMPT_BLOCK_MAX >> 20);
		free(buf);
		rl_forced_update_display();
		return 0;
	}
	if (!buf)
		return 0;
	len = prompt_text_paste(buf, len);
	buf[len] = '\0';
	const char *line = rl_line_buffer ? rl_line_buffer : "";
	size_t n = strlen(line),
	       point = rl_point > 0 && (size_t)rl_point < n ? (size_t)rl_point : n;
	if (!memchr(buf, '\n', len)) {
		rl_insert_text(buf);
		free(buf);
		prompt_out("\r");
		rl_forced_update_display();
		return 0;
	}
	free(p->paste);
	if (asprintf(&p->paste, "%.*s%s%s", (int)point, line, buf, line + point) < 0)
		abort();
	free(buf);
	return 0;
}

/* A paste of lines (prompt_paste): shown as typed lines would be, and run
 * as one block with the block before it; a last line without its newline
 * is left to edit. The driver dedents it (a paste indented as a whole). */
void prompt_on_paste(struct prompt *p)
{
	char *text = p->paste;
	p->paste = NULL;
	p->editing = false;
	rl_callback_handler_remove();
	prompt_tty_run(p);
	char *tail = strrchr(text, '\n');
	*tail++ = '\0';
	prompt_out("\r\033[K");
	bool more = p->block_len > 0;
	for (char *line = text, *nl; line; line = nl ? nl + 1 : NULL, more = true) {
		nl = strchr(line, '\n');
		prompt_out(more ? "... " : ">>> ");
		cli_render_out(1, line, nl ? (size_t)(nl - line) : strlen(line));
		prompt_out("\n");
	}
	p->col0 = true;
	if (prompt_block_add(p, text, strlen(text)) < 0) {
		cli_error("%s: the block is over %zu MiB: dropped", p->cfg->cmd,
			  PROMPT_BLOCK_MAX >> 20);
		prompt_block_clear(p);
		tail = "";
	}
	if (!*tail && p->block_len) {
		free(text);
		prompt_submit(p);
		return;
	}
	p->indent[0] = '\0'; /* (the paste brings its own) */
	prompt_edit(p);
	rl_insert_text(tail);
	prompt_out("\r");
	rl_forced_update_display();
	free(text);
}
