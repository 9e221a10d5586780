/*
 * cli_picture.h - pictures in human modes (run, repl): each one saved as
 * ptybox-N.EXT in the output folder and its path printed, and shown inline
 * when the terminal can (detected once, at start-up).
 */
#ifndef PTYBOX_CLI_PICTURE_H
#define PTYBOX_CLI_PICTURE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "picture.h"

/* How long the terminal has to answer the probe. Every terminal worth
 * asking answers DA1, which ends the wait at once: the deadline is for the
 * rare one that does not, and long enough for an answer over ssh, which
 * would otherwise come late and be read as typed. */
#define CLI_PICTURE_PROBE_MS 1000

struct cli_pictures {
	const char *dir; /* where they go; NULL: the current folder */
	enum picture_inline inline_mode;
	unsigned next;	 /* the N to try first for the next one */
	char last[4096]; /* the path of the last one saved ("" before one) */
};

/* Sets p up for dir. With inline_ok (not --no-inline-images), and standard
 * input and output both the foreground's terminal, asks the terminal which
 * inline images it shows (within CLI_PICTURE_PROBE_MS; its mode is put back
 * as it was, and a ^C or SIGTERM meanwhile acts only after that). */
void cli_pictures_init(struct cli_pictures *p, const char *dir, bool inline_ok);
/* The bundle's picture, if it has one: saved (O_EXCL: never over a file),
 * shown inline when the terminal can, its path printed on stdout. 1 when
 * it is saved; 0 when the bundle has no picture or it could not be saved
 * (a one-line warning on stderr): then the caller shows its text/plain. */
int cli_pictures_show(struct cli_pictures *p, const cJSON *bundle);

#endif
