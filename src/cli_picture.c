/*
 * cli_picture.c - pictures in human modes: saved to files, shown inline.
 *
 * A picture (image/png, image/jpeg, image/svg+xml of a display or a result)
 * is written to DIR/ptybox-N.EXT, N the first number from the last one up
 * whose file does not exist (O_EXCL, so no file is ever overwritten, not even
 * by a race with another ptybox), and its path printed on stdout where the
 * picture came among the text. A terminal that shows images gets it inline
 * first. Which one it is, the probe asks once at start-up: it is the only
 * place that reads the terminal, so it owns putting its mode back. What is
 * decided and written lives in picture.c; this file does the I/O.
 */
#define _GNU_SOURCE
#include "cli_picture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_render.h"
#include "cli_sixel.h"
#include "protocol.h"

/* Names tried for one picture before giving up: a folder that full of
 * ptybox-N files is a mistake, not a place to search. */
#define CLI_PICTURE_MAX_TRIES 10000

static int64_t pictures_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The probe itself: stdin without echo and line editing just long enough to
 * read the answer. The signals that would end or stop us wait (blocked)
 * until the terminal is back as it was, then act as they would have. */
static enum picture_inline pictures_probe(const char *query)
{
	struct termios saved, quiet;
	if (tcgetattr(0, &saved) < 0)
		return PICTURE_INLINE_NONE;
	sigset_t hold, old;
	sigemptyset(&hold);
	static const int held[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		sigaddset(&hold, held[i]);
	sigprocmask(SIG_BLOCK, &hold, &old);
	quiet = saved;
	quiet.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	quiet.c_cc[VMIN] = 1;
	quiet.c_cc[VTIME] = 0;
	struct picture_probe pr;
	picture_probe_init(&pr);
	if (tcsetattr(0, TCSANOW, &quiet) == 0) {
		int64_t deadline = pictures_now_ms() + CLI_PICTURE_PROBE_MS;
		if (cli_write_all(1, query, strlen(query)) == 0) {
			while (!pr.done) {
				int64_t left = deadline - pictures_now_ms();
				if (left <= 0)
					break;
				struct pollfd pfd = {.fd = 0, .events = POLLIN};
				int n = poll(&pfd, 1, (int)left);
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0 || !(pfd.revents & POLLIN))
					break;
				char buf[256];
				ssize_t r = read(0, buf, sizeof(buf));
				if (r < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				if (r <= 0)
					break;
				picture_probe_feed(&pr, buf, (size_t)r);
			}
		}
		tcsetattr(0, TCSANOW, &saved);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return picture_probe_result(&pr, cli_sixel_available());
}

void cli_pictures_init(struct cli_pictures *p, const char *dir, bool inline_ok)
{
	memset(p, 0, sizeof(*p));
	p->dir = dir;
	p->next = 1;
	p->inline_mode = PICTURE_INLINE_NONE;
	const char *term = getenv("TERM");
	/* only on a terminal of ours, in the foreground: a background job that
	 * read the terminal would be stopped, and take the user's keys */
	if (!inline_ok || !isatty(0) || !isatty(1) || tcgetpgrp(0) != getpgrp() || !term ||
	    !term[0] || strcmp(term, "dumb") == 0 || strcmp(term, "linux") == 0)
		return; /* (the Linux console shows no images, and an APC as text) */
	/* one terminal: one whose answer would go unread (stdout another one)
	 * would hand it to whatever reads there next, as if typed */
	struct stat in, out;
	if (fstat(0, &in) < 0 || fstat(1, &out) < 0 || in.st_rdev != out.st_rdev)
		return;
	/* (inside tmux, iTerm2's sequences would need wrapping: ask instead) */
	if (!getenv("TMUX") && picture_env_iterm(getenv("TERM_PROGRAM"), getenv("LC_TERMINAL")))
		p->inline_mode = PICTURE_INLINE_ITERM;
	else if (getenv("TMUX") || strncmp(term, "screen", 6) == 0 || strncmp(term, "tmux", 4) == 0)
		p->inline_mode = pictures_probe(picture_probe_query_da1);
	else
		p->inline_mode = pictures_probe(picture_probe_query);
}

/* Writes data to a new file: 0 with path set, or -errno. */
static int pictures_save(struct cli_pictures *p, enum picture_kind k, const unsigned char *data,
			 size_t len, char *path, size_t cap)
{
	for (unsigned tries = 0; tries < CLI_PICTURE_MAX_TRIES && p->next; tries++) {
		int rc = picture_path(path, cap, p->dir, p->next++, k);
		if (rc < 0)
			return rc;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return -errno;
		rc = cli_write_all(fd, (const char *)data, len);
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
		if (rc < 0)
			unlink(path); /* (a part of a picture is none) */
		return rc;
	}
	return -EEXIST;
}

/* The picture inline, if the terminal shows this kind. */
static void pictures_inline(struct cli_pictures *p, enum picture_kind k, const unsigned char *data,
			    size_t len)
{
	char *seq = NULL;
	size_t n = 0;
	if (!picture_looks_like(k, data, len))
		return;
	if (p->inline_mode == PICTURE_INLINE_KITTY && k == PICTURE_PNG)
		seq = picture_kitty(data, len, &n);
	else if (p->inline_mode == PICTURE_INLINE_ITERM)
		seq = picture_iterm(data, len, &n);
	else if (p->inline_mode == PICTURE_INLINE_SIXEL && picture_sixel_fits(k, data, len)) {
		int rc = cli_sixel_show(data, len);
		if (rc == 0)
			cli_render_out(1, "\n", 1);
		else if (rc == -ETIMEDOUT) /* (each would cost the whole deadline again) */
			p->inline_mode = PICTURE_INLINE_NONE;
	}
	if (!seq)
		return;
	cli_render_out(1, seq, n);
	cli_render_out(1, "\n", 1); /* the cursor is at the picture's end */
	free(seq);
}

int cli_pictures_show(struct cli_pictures *p, const cJSON *bundle)
{
	const char *text = NULL;
	enum picture_kind k = picture_of_bundle(bundle, &text);
	if (k == PICTURE_NONE)
		return 0;
	unsigned char *data = NULL;
	size_t len = 0;
	char path[4096];
	int rc = picture_decode(k, text, strlen(text), &data, &len);
	if (rc == 0)
		rc = pictures_save(p, k, data, len, path, sizeof(path));
	if (rc < 0) {
		const char *why = rc == -EINVAL	  ? "not valid base64 (cut on the way?)"
				  : rc == -EFBIG  ? "larger than 64 MiB"
				  : rc == -EEXIST ? "no free ptybox-N name left"
						  : strerror(-rc);
		if (rc == -EINVAL || rc == -EFBIG || rc == -ENAMETOOLONG)
			cli_error("warning: %s not saved: %s", picture_mime(k), why);
		else
			cli_error("warning: %s not saved in %s: %s", picture_mime(k),
				  p->dir ? p->dir : "the current folder", why);
		free(data);
		return 0;
	}
	if (p->inline_mode != PICTURE_INLINE_NONE)
		pictures_inline(p, k, data, len);
	free(data);
	size_t pl = strlen(path);
	path[pl] = '\n'; /* (over the NUL: the path fit with room for it) */
	cli_render_out(1, path, pl + 1);
	return 1;
}
