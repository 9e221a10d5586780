/*
 * cli_run_files.h - `ptybox run --put FILE[:PATH] --get PATH [--output-dir DIR]`: files into
 * the sandbox before the first snippet, and out of it after the last, through the session's
 * file ops (ptybox_session_put, ptybox_session_get).
 */
#ifndef PTYBOX_CLI_RUN_FILES_H
#define PTYBOX_CLI_RUN_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptybox.h"

/* The most --put and the most --get options. */
#define RUN_FILES_MAX 256
/* The most bytes of all the --get of one run. */
#define RUN_FILES_MAX_TOTAL ((uint64_t)16 << 30)
/* The ids of file ops: from here up (snippets count from 1). */
#define RUN_FILES_ID_BASE ((uint64_t)1 << 40)

struct run_files {
	const char *put_host[RUN_FILES_MAX], *put_path[RUN_FILES_MAX]; /* (into argv) */
	size_t nput;
	const char *get[RUN_FILES_MAX];
	size_t nget;
	const char *output_dir; /* NULL: the current folder */
	uint64_t max_get;	/* the session's --max-get: no range past it */
	/* the transfer: one file at a time, two chunks in flight */
	ptybox_session *s;
	size_t cur;
	int fd;
	uint64_t offset, size;
	int mode;
	unsigned in_flight;
	char upload[65]; /* the put's upload, from its first chunk's reply ("": none yet) */
	/* the gets in flight, oldest first: the range each asked for (a reply must match) */
	uint64_t asked_off[4], asked_len[4];
	unsigned asked_head;
	bool phase_gets, last_sent, size_known, dropped, failed;
	bool grew;	/* --get: a reply said there was more than the first did: cut there */
	uint64_t total; /* --get: the sizes so far, RUN_FILES_MAX_TOTAL at most */
	uint64_t next_id;
	char dest[4096]; /* --get: where the file goes */
};

void run_files_init(struct run_files *f);
void run_files_free(struct run_files *f);
/* --put ARG (FILE:PATH: the ':' becomes the end of FILE): 0, or -1 with the message
 * printed. */
int run_files_put_opt(struct run_files *f, char *arg);
/* --get PATH: 0, or -1 with the message printed. */
int run_files_get_opt(struct run_files *f, const char *arg);
/* Before any sandbox starts: each --put a readable regular file, --get names that do not
 * clash; --output-dir made if missing (only when there are gets). 0, or -1 said. */
int run_files_check(struct run_files *f);

/* What run_files_on_file says. */
enum run_files_event {
	RUN_FILES_BUSY,	     /* more to come */
	RUN_FILES_PUTS_DONE, /* every --put is in: the snippets may start */
	RUN_FILES_GETS_DONE, /* every --get is done (f->failed: some failed, said) */
	RUN_FILES_FAILED,    /* a --put failed (said): the run stops */
};

/* Starts the puts (none: RUN_FILES_PUTS_DONE at once) or the gets (none:
 * RUN_FILES_GETS_DONE); a failure to queue is RUN_FILES_FAILED, said. */
enum run_files_event run_files_start_puts(struct run_files *f, ptybox_session *s);
enum run_files_event run_files_start_gets(struct run_files *f, ptybox_session *s);
/* The session's on_file for ids from RUN_FILES_ID_BASE; quiet: say nothing of a failure (the
 * session could not start: that was said). */
enum run_files_event run_files_on_file(struct run_files *f, uint64_t id, const char *reply,
				       const void *data, size_t len, bool quiet);

#endif
