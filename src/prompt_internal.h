/*
 * prompt_internal.h - what prompt.c (the loop, the server, showing),
 * prompt_paste.c (a bracketed paste) and
 * prompt_keys.c (Tab, ^D, history) share: the prompt's state.
 */
#ifndef PTYBOX_PROMPT_INTERNAL_H
#define PTYBOX_PROMPT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <termios.h>

#include <cjson/cJSON.h>

#include "cli_render.h"
#include "linebuf.h"
#include "prompt.h"
#include "record.h"
#include "transcript.h"

/* The longest line the server sends (a result: some 4x the session's max
 * output). */
#define PROMPT_MAX_LINE ((size_t)1 << 32)
/* How long the prompt waits for is_complete or complete, and how many lines
 * of the server it keeps for later meanwhile. */
#define PROMPT_ASK_MS	 6000
#define PROMPT_QUEUE_MAX 65536
/* Lines kept in the history file. */
#define PROMPT_HISTORY_MAX 1000
/* A start slower than this shows the spinner; it turns this often. */
#define PROMPT_SPIN_AFTER_MS 150
#define PROMPT_SPIN_MS	     100
/* Completions listed under the prompt, at most (the driver sends 200). */
#define PROMPT_LIST_MAX 200
/* The block being entered, at most (SERVER_MAX_LINE bounds a request). */
#define PROMPT_BLOCK_MAX ((size_t)64 << 20)

/* Keys read from the terminal at once, at most (the rest waits in it). A
 * paste's end marker is waited for this long after its last byte; without
 * it, what came is the paste. */
#define PROMPT_KEYS_MAX 4096
#define PROMPT_PASTE_MS 2000
/* Bracketed paste (xterm's mode 2004): a paste comes as ESC[200~ ... ESC[201~. */
#define PROMPT_PASTE_ON	 "\033[?2004h"
#define PROMPT_PASTE_OFF "\033[?2004l"

enum prompt_state { P_STARTING, P_EDIT, P_RUN, P_LEAVE };

struct prompt {
	const struct prompt_config *cfg;
	bool tty, color, spin;
	bool bracketed; /* the terminal's bracketed paste is ours to turn on */
	enum prompt_state state;
	int status; /* prompt_run's */
	/* From the server: lines split, parsed and queued until handled. */
	struct linebuf lines;
	cJSON **q;
	size_t qn, qcap;
	bool eof;
	uint64_t next_id, watch_id, capture_id;
	/* The block being entered. */
	char *block;
	size_t block_len, block_cap;
	char indent[260];
	bool editing; /* libedit's handler is installed */
	/* Keys libedit reads through us (prompt_getc), so that a paste read to
	 * its end leaves what came after it for libedit. */
	unsigned char keys[PROMPT_KEYS_MAX];
	size_t keys_at, keys_len;
	char *paste; /* a paste of lines, with the line it went into, to run */
	/* The terminal as we found it, and while code runs: no echo and no
	 * lines (keys typed ahead, ^D among them, wait for the prompt as they
	 * are), signals on (^C interrupts, ^\ detaches). */
	struct termios tty_orig, tty_run;
	struct termios tty_edit; /* libedit's mode while it edits (back after fg) */
	bool tty_saved, tty_edit_saved;
	/* Our execution: its request, its code (to know its exec event) and id. */
	uint64_t exec_req, mine;
	char *sent_code;
	bool interrupt_due; /* ^C before its id was known */
	bool col0;	    /* what was shown ends at column 0 */
	unsigned failed;
	bool script_stop;
	char *ahead; /* script mode: a line read that starts the next block */
	struct cli_render r;
	struct cli_pictures pictures;
	struct record *rec; /* --record, or NULL */
	struct transcript ts;
	/* Executions the session announced (exec events) without a result yet:
	 * while there is one, a death is told by its result, not twice. */
	unsigned long unended;
	uint64_t start_ms;
	unsigned spin_frame;
	bool spinning;
};

/* The prompt that runs (libedit's callbacks take no data). */
extern struct prompt *prompt_current;

/* prompt.c */
void prompt_out(const char *s);
/* Editing the next line (libedit's handler in), the terminal in its run
 * mode, the block: added to (-E2BIG past PROMPT_BLOCK_MAX), cleared, sent. */
void prompt_edit(struct prompt *p);
void prompt_tty_run(struct prompt *p);
int prompt_block_add(struct prompt *p, const char *line, size_t n);
void prompt_block_clear(struct prompt *p);
void prompt_submit(struct prompt *p);
/* Sends o (taken) with the next id and the session's name: that id, or 0. */
uint64_t prompt_send(struct prompt *p, cJSON *o);
cJSON *prompt_request(const char *op);
uint64_t prompt_uint(const cJSON *o, const char *key);
/* The reply to request id, waited for up to ms (what else comes stays
 * queued), or NULL. */
cJSON *prompt_wait(struct prompt *p, uint64_t id, int ms);

/* prompt_keys.c: the keys bound to libedit (Tab, ^D, ^\\), the
 * terminal's keys as libedit reads them, and history. */
int prompt_tab(int count, int key);
int prompt_eof(int count, int key);
int prompt_getc(FILE *f);
/* 1 when keys wait in p->keys (read from the terminal within ms; -1: with
 * no end), 0 when none came, -1 at the terminal's end. */
int prompt_keys_fill(struct prompt *p, int ms);
bool prompt_keys_waiting(const struct prompt *p);
void prompt_history_load(const char *path);
void prompt_history_save(const char *path);

/* prompt_paste.c: the bracketed paste. prompt_paste is the key of its start;
 * prompt_on_paste runs a paste of lines it left in p->paste. */
void prompt_bracketed(struct prompt *p, bool on);
int prompt_paste(int count, int key);
void prompt_on_paste(struct prompt *p);

#endif
