/*
 * prompt_keys.c - the prompt's keys of its own (Tab: the driver's
 * completion; ^D and ^\\ as keys) and its history file. They run inside
 * libedit's rl_callback_read_char(), on the prompt that runs
 * (prompt_current): a Tab asks the server and waits for the answer there
 * (PROMPT_ASK_MS at most; the server answers within 5 s). libedit reads
 * the terminal through prompt_getc, so that a bracketed paste is read here
 * to its end marker as one piece of text.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <editline/readline.h>

#include "cli.h"
#include "prompt_internal.h"
#include "prompt_text.h"
#include "protocol.h"

/* Tab: the driver's completion of the word before the cursor, as far as all
 * its matches agree, and the list of them when that is no further. At the
 * start of a line, an indent. */
int prompt_tab(int count, int key)
{
	struct prompt *p = prompt_current;
	(void)count;
	(void)key;
	const char *line = rl_line_buffer ? rl_line_buffer : "";
	size_t point = rl_point > 0 ? (size_t)rl_point : 0, len = strlen(line);
	if (point > len)
		point = len;
	bool lead = true;
	for (size_t i = 0; i < point; i++)
		if (line[i] != ' ' && line[i] != '\t')
			lead = false;
	if (lead) {
		rl_insert_text("    ");
		prompt_out("\r");
		rl_forced_update_display();
		return 0;
	}
	cJSON *o = prompt_request("complete");
	cJSON_AddStringToObject(o, "code", line);
	cJSON_AddNumberToObject(o, "cursor", (double)prompt_text_chars(line, point));
	cJSON *reply = prompt_wait(p, prompt_send(p, o), PROMPT_ASK_MS);
	const cJSON *matches = cJSON_GetObjectItemCaseSensitive(reply, "matches");
	size_t start = prompt_text_bytes(line, len, prompt_uint(reply, "cursor_start"));
	const char *v[PROMPT_LIST_MAX];
	size_t n = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, matches) if (cJSON_IsString(m) && n < PROMPT_LIST_MAX) v[n++] =
		m->valuestring;
	size_t typed = start <= point ? point - start : 0;
	size_t common = prompt_text_common(v, n);
	if (n && common > typed && strncmp(v[0], line + start, typed) == 0) {
		char *more = strndup(v[0] + typed, common - typed);
		if (more)
			rl_insert_text(more);
		free(more);
		prompt_out("\r");
		rl_forced_update_display();
	} else if (n > 1) {
		int rows = 0, cols = 80;
		rl_get_screen_size(&rows, &cols);
		size_t width = 0;
		for (size_t i = 0; i < n; i++)
			if (strlen(v[i]) > width)
				width = strlen(v[i]);
		width += 2;
		size_t per = cols > 0 && (size_t)cols > width ? (size_t)cols / width : 1;
		prompt_out("\n");
		for (size_t i = 0; i < n; i++) {
			char cell[1100];
			snprintf(cell, sizeof(cell), "%-*s", (int)width, v[i]);
			cli_render_text(&p->r, 1, cell, strlen(cell));
			if ((i + 1) % per == 0 || i + 1 == n)
				prompt_out("\n");
		}
		cli_render_text_end(&p->r, 1);
		rl_forced_update_display();
	} else {
		rl_ding();
	}
	cJSON_Delete(reply);
	return 0;
}

int prompt_keys_fill(struct prompt *p, int ms)
{
	if (p->keys_at < p->keys_len)
		return 1;
	struct pollfd fd = {.fd = 0, .events = POLLIN};
	int n = poll(&fd, 1, ms);
	if (n <= 0)
		return n < 0 && errno != EINTR ? -1 : 0;
	ssize_t k = read(0, p->keys, sizeof(p->keys));
	if (k < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (k == 0)
		return -1;
	p->keys_at = 0;
	p->keys_len = (size_t)k;
	return 1;
}

bool prompt_keys_waiting(const struct prompt *p)
{
	return p->keys_at < p->keys_len;
}

/* libedit's next key: a character (UTF-8 decoded, as libedit's own read
 * does: a custom reader gets no decoding), or -1 at the end. A signal while
 * it waits (mid escape sequence) leaves it waiting, as libedit's read does. */
int prompt_getc(FILE *f)
{
	struct prompt *p = prompt_current;
	(void)f;
	int rc;
	while ((rc = prompt_keys_fill(p, -1)) == 0)
		;
	if (rc < 0)
		return -1;
	unsigned char lead = p->keys[p->keys_at++];
	size_t need = prompt_text_utf8_len(lead);
	if (need <= 1)
		return need ? lead : 0xfffd;
	uint32_t cp = lead & (0x7fu >> need);
	for (size_t i = 1; i < need; i++) {
		if (prompt_keys_fill(p, PROMPT_PASTE_MS) <= 0)
			return 0xfffd;
		unsigned char b = p->keys[p->keys_at];
		if ((b & 0xc0) != 0x80)
			return 0xfffd; /* (b starts the next key) */
		p->keys_at++;
		cp = cp << 6 | (b & 0x3fu);
	}
	return (int)cp;
}

/* ^D: leaves on an empty line, else deletes the character under the cursor
 * (ours, not libedit's end of file, which takes the terminal's eof character
 * as libedit last saw it in cooked mode, and the prompt runs code in a mode
 * of its own). Ctrl-\ when the terminal gives it as a key: leaves. */
int prompt_eof(int count, int key)
{
	struct prompt *p = prompt_current;
	(void)count;
	if (key == 4 && rl_end > 0) {
		if (rl_point < rl_end) {
			rl_delete_text(rl_point, rl_point + 1);
			prompt_out("\r");
			rl_forced_update_display();
		}
		return 0;
	}
	prompt_out("\n");
	p->state = P_LEAVE; /* (the loop ends; the handler goes then) */
	return 0;
}

int prompt_history_path(char *out, size_t len)
{
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char dir[4096];
	if (state && state[0] == '/')
		snprintf(dir, sizeof(dir), "%s/ptybox", state);
	else if (home && home[0])
		snprintf(dir, sizeof(dir), "%s/.local/state/ptybox", home);
	else
		return -ENOENT;
	/* Each folder on the way, as mkdir -p would. */
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	int n = snprintf(out, len, "%s/history", dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The history file itself, opened without following a symlink or waiting
 * on a FIFO: 0 if it is a regular file (made 0600 if missing), or -errno. */
static int prompt_history_check(const char *path)
{
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		      0600);
	if (fd < 0)
		return -errno;
	struct stat st;
	int rc = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	close(fd);
	return rc;
}

void prompt_history_load(const char *path)
{
	stifle_history(PROMPT_HISTORY_MAX);
	if (prompt_history_check(path) == 0)
		read_history(path);
}

void prompt_history_save(const char *path)
{
	/* (never through a symlink, which the load refused to read: its file
	 * would be replaced by this session's lines alone) */
	int rc = prompt_history_check(path);
	if (rc < 0) {
		cli_error("warning: history not saved: %s: %s", path,
			  rc == -ELOOP || rc == -EINVAL ? "not a regular file (a symlink?)"
							: strerror(-rc));
		return;
	}
	mode_t old = umask(077); /* (write_history may make the file anew) */
	if (write_history(path) == 0)
		history_truncate_file(path, PROMPT_HISTORY_MAX);
	umask(old);
}
