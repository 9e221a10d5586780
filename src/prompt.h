/*
 * prompt.h - the prompt of `ptybox repl` and `ptybox attach`: one session of
 * a server, driven through the server's protocol (JSON lines) on a pair of
 * fds, with line editing, history, multi-line blocks (the driver's
 * is_complete), completion (its complete) and the live output of every
 * execution of the session (watch).
 */
#ifndef PTYBOX_PROMPT_H
#define PTYBOX_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

struct prompt_config {
	int rfd, wfd;		       /* the server: replies and events in, requests out */
	const char *session;	       /* its name */
	const char *where;	       /* the server, in messages */
	const char *cmd;	       /* "repl" or "attach", in messages */
	bool attach;		       /* opens with the session's screen; leaving keeps it */
	const char *history;	       /* the history file, or NULL: none */
	const char *output_dir;	       /* pictures go there (NULL: the current folder) */
	bool no_inline_images;	       /* --no-inline-images */
	const char *record;	       /* --record FILE: an asciicast of what the prompt shows */
	unsigned long long record_max; /* --record-max; 0: the default */
};

/* The history file: $XDG_STATE_HOME/ptybox/history (default
 * ~/.local/state/ptybox/history), its folder made 0700. 0, or -errno. */
int prompt_history_path(char *out, size_t len);

/* Runs the prompt until the user leaves (Ctrl-D, Ctrl-\), standard input
 * ends (a script on a pipe), or the session or the server goes. Its exit
 * status: 0; 1 when a block of a script failed or the session went; 130
 * after ^C in a script; 125 when the session could not start. */
int prompt_run(const struct prompt_config *cfg);

#endif
