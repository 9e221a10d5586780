/*
 * cli_run_files.c - `ptybox run --put FILE[:PATH] --get PATH`: the files a one-shot run
 * takes in and gives back (cli_run_files.h).
 *
 * File ops are items of the session's queue, in order with the snippets: so the puts go
 * first and the snippets are queued once every put is in (a put of many chunks would
 * otherwise queue its later chunks behind them), and the gets after the last result. One
 * file at a time, RUN_FILES_IN_FLIGHT chunks of RUN_FILES_CHUNK queued at once: memory
 * stays at a few chunks, and a file past the session's --max-get comes in ranges.
 */
#define _GNU_SOURCE
#include "cli_run_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cp_path.h"
#include "protocol.h"

#define RUN_FILES_CHUNK	    ((uint64_t)8 << 20)
#define RUN_FILES_IN_FLIGHT 2

void run_files_init(struct run_files *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->next_id = RUN_FILES_ID_BASE;
}

void run_files_free(struct run_files *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

static bool run_files_path_ok(const char *opt, const char *path)
{
	size_t n = strlen(path);
	if (n == 0 || n > 4096 || !protocol_utf8_valid(path, n)) {
		cli_error("run: %s %s: expected a path of 1 to 4096 bytes of UTF-8", opt, path);
		return false;
	}
	return true;
}

int run_files_put_opt(struct run_files *f, char *arg)
{
	if (f->nput == RUN_FILES_MAX) {
		cli_error("run: more than %d --put", RUN_FILES_MAX);
		return -1;
	}
	struct stat st;
	char *colon = strrchr(arg, ':');
	const char *path = NULL;
	/* (FILE:PATH, split at the last ':', unless FILE itself has a ':' and no PATH is
	 * given: FILE ends where the ':' was) */
	if (colon && stat(arg, &st) < 0) {
		if (colon == arg || !colon[1]) {
			cli_error("run: --put %s: expected FILE or FILE:PATH", arg);
			return -1;
		}
		*colon = '\0';
		path = colon + 1;
	}
	const char *host = arg;
	if (!path) {
		size_t n;
		const char *b = cp_basename(host, &n);
		path = b; /* (a trailing '/': not a file, said by run_files_check) */
	}
	if (path[0] && !run_files_path_ok("--put", path))
		return -1;
	f->put_host[f->nput] = host;
	f->put_path[f->nput++] = path;
	return 0;
}

int run_files_get_opt(struct run_files *f, const char *arg)
{
	if (f->nget == RUN_FILES_MAX) {
		cli_error("run: more than %d --get", RUN_FILES_MAX);
		return -1;
	}
	if (!run_files_path_ok("--get", arg))
		return -1;
	if (cp_basename_is_contents(arg)) {
		cli_error("run: --get %s: expected a file's path", arg);
		return -1;
	}
	f->get[f->nget++] = arg;
	return 0;
}

int run_files_check(struct run_files *f)
{
	for (size_t i = 0; i < f->nput; i++) {
		const char *h = f->put_host[i];
		struct stat st;
		/* (O_NONBLOCK: a FIFO's open would wait for a writer before its type is seen) */
		int fd = open(h, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		int e = fd < 0 ? errno : fstat(fd, &st) < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
		if (e) {
			cli_error("run: --put %s: %s", h, strerror(e));
			return -1;
		}
		if (S_ISDIR(st.st_mode) || !f->put_path[i][0]) {
			cli_error("run: --put %s: not a regular file (a folder goes in with ptybox "
				  "cp)",
				  h);
			return -1;
		}
		if (!S_ISREG(st.st_mode)) {
			cli_error("run: --put %s: not a regular file (a %s)", h,
				  S_ISFIFO(st.st_mode)	 ? "FIFO"
				  : S_ISSOCK(st.st_mode) ? "socket"
				  : S_ISCHR(st.st_mode)	 ? "character device"
				  : S_ISBLK(st.st_mode)	 ? "block device"
							 : "special file");
			return -1;
		}
	}
	for (size_t i = 0; i < f->nget; i++) {
		size_t n, m;
		const char *b = cp_basename(f->get[i], &n);
		for (size_t k = 0; k < i; k++) {
			const char *c = cp_basename(f->get[k], &m);
			if (m == n && memcmp(b, c, n) == 0) {
				cli_error("run: --get %s and --get %s would both be saved as %.*s",
					  f->get[k], f->get[i], (int)n, b);
				return -1;
			}
		}
	}
	return 0; /* (--output-dir is made by cli_session_opts_check) */
}

/* "run: --put FILE: why" or "run: --get PATH: why" from a failed reply. */
static void run_files_say(struct run_files *f, bool put, const cJSON *reply, bool quiet)
{
	f->failed = true;
	if (quiet)
		return;
	char why[512];
	cp_reason(protocol_str(reply, "errno"), protocol_str(reply, "error"), put ? "put" : "get",
		  why, sizeof(why));
	if (put)
		cli_error("run: --put %s: %s: %s", f->put_host[f->cur], f->put_path[f->cur], why);
	else if (strcmp(protocol_str(reply, "errno") ? protocol_str(reply, "errno") : "",
			"EISDIR") == 0)
		cli_error("run: --get %s: a folder (--get takes files: a folder comes out with "
			  "ptybox cp, from a session of the server)",
			  f->get[f->cur]);
	else
		cli_error("run: --get %s: %s", f->get[f->cur], why);
}

/* ---- puts ---- */

/* The next chunk of put f->cur queued: 0, or -errno. */
static int run_files_put_next(struct run_files *f)
{
	if (f->fd < 0) {
		struct stat st;
		f->fd = open(f->put_host[f->cur], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (f->fd < 0 || fstat(f->fd, &st) < 0)
			return -errno;
		if (!S_ISREG(st.st_mode)) { /* (it changed since run_files_check) */
			close(f->fd);
			f->fd = -1;
			return -EINVAL;
		}
		f->size = (uint64_t)st.st_size;
		f->mode = (int)(st.st_mode & 0777);
		f->offset = 0;
		f->last_sent = false;
		f->upload[0] = '\0';
	}
	uint64_t left = f->size - f->offset;
	size_t want = left < RUN_FILES_CHUNK ? (size_t)left : (size_t)RUN_FILES_CHUNK;
	char *buf = malloc(want ? want : 1);
	if (!buf)
		abort();
	size_t got = 0;
	while (got < want) {
		ssize_t n = read(f->fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (n == 0)
			break; /* (it shrank: what there is) */
		got += (size_t)n;
	}
	bool last = got < want || got == left;
	int rc = ptybox_session_put_upload(f->s, f->next_id++, f->put_path[f->cur], buf, got,
					   f->mode, f->offset, !last,
					   f->upload[0] ? f->upload : NULL, false);
	free(buf); /* (the session has its copy) */
	if (rc < 0)
		return rc;
	f->offset += got;
	f->in_flight++;
	if (last) {
		f->last_sent = true;
		close(f->fd);
		f->fd = -1;
	}
	return 0;
}

static enum run_files_event run_files_put_fill(struct run_files *f)
{
	/* (after the first chunk, the next waits for its reply: it names the upload) */
	while (f->cur < f->nput && f->in_flight < RUN_FILES_IN_FLIGHT && !f->last_sent &&
	       (f->fd < 0 || f->offset == 0 || f->upload[0])) {
		int rc = run_files_put_next(f);
		if (rc < 0) {
			f->failed = true;
			cli_error("run: --put %s: %s", f->put_host[f->cur], strerror(-rc));
			return RUN_FILES_FAILED;
		}
	}
	return f->cur < f->nput ? RUN_FILES_BUSY : RUN_FILES_PUTS_DONE;
}

enum run_files_event run_files_start_puts(struct run_files *f, ptybox_session *s)
{
	f->s = s;
	f->cur = 0;
	f->in_flight = 0;
	f->last_sent = false;
	return run_files_put_fill(f);
}

static enum run_files_event run_files_put_reply(struct run_files *f, const cJSON *reply, bool quiet)
{
	f->in_flight--;
	if (f->failed) /* (a chunk after a failed one: said already) */
		return f->in_flight ? RUN_FILES_BUSY : RUN_FILES_FAILED;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		run_files_say(f, true, reply, quiet);
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		return f->in_flight ? RUN_FILES_BUSY : RUN_FILES_FAILED;
	}
	const char *token = protocol_str(reply, "upload");
	if (token && !f->upload[0] && strlen(token) < sizeof(f->upload))
		memcpy(f->upload, token, strlen(token) + 1);
	else if (!f->upload[0] && !f->last_sent) {
		f->failed = true;
		cli_error("run: --put %s: the session named no upload to go on with",
			  f->put_host[f->cur]);
		return f->in_flight ? RUN_FILES_BUSY : RUN_FILES_FAILED;
	}
	if (f->last_sent && f->in_flight == 0) { /* that file is in */
		f->cur++;
		f->last_sent = false;
	}
	return run_files_put_fill(f);
}

/* ---- gets ---- */

static int run_files_get_next(struct run_files *f)
{
	uint64_t want = RUN_FILES_CHUNK;
	if (f->max_get && f->max_get < want)
		want = f->max_get;
	int rc = ptybox_session_get(f->s, f->next_id++, f->get[f->cur], f->offset, want);
	if (rc < 0)
		return rc;
	unsigned at = (f->asked_head + f->in_flight) % 4; /* (in_flight is at most 2) */
	f->asked_off[at] = f->offset;
	f->asked_len[at] = want;
	f->offset += want;
	f->in_flight++;
	return 0;
}

/* Queues what get f->cur needs next, or moves on to the next --get. */
static enum run_files_event run_files_get_fill(struct run_files *f)
{
	while (f->cur < f->nget) {
		/* (the first range alone: its reply says the file's size) */
		while (!f->dropped && f->in_flight < (f->size_known ? RUN_FILES_IN_FLIGHT : 1) &&
		       (!f->size_known ? f->offset == 0 : f->offset < f->size)) {
			int rc = run_files_get_next(f);
			if (rc < 0) {
				cli_error("run: --get %s: %s", f->get[f->cur], strerror(-rc));
				f->failed = true;
				return RUN_FILES_GETS_DONE;
			}
		}
		if (f->in_flight)
			return RUN_FILES_BUSY;
		/* that one is done (or failed): the next */
		if (f->grew && f->fd >= 0) {
			cli_error("run: --get %s: grew while copied: cut at %llu bytes",
				  f->get[f->cur], (unsigned long long)f->size);
			f->failed = true;
		}
		f->grew = false;
		if (f->fd >= 0) {
			if (f->mode >= 0)
				fchmod(f->fd, (mode_t)f->mode);
			if (close(f->fd) < 0 && !f->failed) {
				cli_error("run: --get %s: %s: %s", f->get[f->cur], f->dest,
					  strerror(errno));
				f->failed = true;
			}
			f->fd = -1;
		}
		f->cur++;
		f->offset = f->size = 0;
		f->size_known = f->dropped = false;
		f->mode = -1;
	}
	return RUN_FILES_GETS_DONE;
}

enum run_files_event run_files_start_gets(struct run_files *f, ptybox_session *s)
{
	f->s = s;
	f->phase_gets = true;
	f->cur = 0;
	f->in_flight = 0;
	f->offset = f->size = 0;
	f->size_known = f->dropped = f->grew = false;
	f->mode = -1;
	f->total = 0;
	return run_files_get_fill(f);
}

static uint64_t run_files_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.0e15
		       ? (uint64_t)v->valuedouble
		       : 0;
}

/* A failed get leaves no half file behind. */
static void run_files_get_drop(struct run_files *f)
{
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
		unlink(f->dest);
	}
	f->dropped = true; /* (nothing more asked for) */
}

static enum run_files_event run_files_get_reply(struct run_files *f, const cJSON *reply,
						const void *data, size_t len, bool quiet)
{
	uint64_t asked = f->asked_off[f->asked_head], asked_len = f->asked_len[f->asked_head];
	f->asked_head = (f->asked_head + 1) % 4;
	f->in_flight--;
	bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
	if (f->dropped) /* (a range after a failed one) */
		return run_files_get_fill(f);
	if (!ok) {
		run_files_say(f, false, reply, quiet);
		run_files_get_drop(f);
		return run_files_get_fill(f);
	}
	/* The data goes where it was asked for, never where the reply says (the session's
	 * code could make a sparse terabyte on the host): a reply for another range is refused. */
	uint64_t off = asked;
	if (run_files_num(reply, "offset") != asked || len > asked_len) {
		cli_error("run: --get %s: the session's reply is for another range than asked "
			  "(offset %llu, %llu bytes at most)",
			  f->get[f->cur], (unsigned long long)asked, (unsigned long long)asked_len);
		f->failed = true;
		run_files_get_drop(f);
		return run_files_get_fill(f);
	}
	if (!f->size_known) {
		f->size = run_files_num(reply, "size");
		f->size_known = true;
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(reply, "mode");
		f->mode = cJSON_IsNumber(m) ? m->valueint & 0777 : -1;
		size_t n;
		const char *b = cp_basename(f->get[f->cur], &n);
		if (cp_join(f->output_dir ? f->output_dir : ".", b, n, f->dest, sizeof(f->dest)) <
		    0) {
			cli_error("run: --get %s: the path is too long", f->get[f->cur]);
			f->failed = true;
			run_files_get_drop(f);
			return run_files_get_fill(f);
		}
		if (f->size > RUN_FILES_MAX_TOTAL - f->total) {
			cli_error(
				"run: --get %s: %llu bytes, past the %llu bytes all the --get of a "
				"run may bring: not copied",
				f->get[f->cur], (unsigned long long)f->size,
				(unsigned long long)RUN_FILES_MAX_TOTAL);
			f->failed = true;
			run_files_get_drop(f);
			return run_files_get_fill(f);
		}
		f->total += f->size;
		/* Never through a link at the name (the code may have put one there, through a
		 * :rw mount of the output folder), never into anything but a regular file
		 * (O_NONBLOCK: a FIFO there would hold the open). */
		f->fd = open(f->dest,
			     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			     0600);
		int e = errno;
		struct stat st;
		const char *why = NULL;
		if (f->fd < 0)
			why = lstat(f->dest, &st) == 0 && S_ISLNK(st.st_mode)
				      ? "a symbolic link is there: not followed"
				      : strerror(e);
		else if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode))
			why = "not a regular file is there: not written";
		if (why) {
			if (f->fd >= 0)
				close(f->fd);
			f->fd = -1; /* (nothing of ours to remove) */
			cli_error("run: --get %s: %s: %s", f->get[f->cur], f->dest, why);
			f->failed = true;
			run_files_get_drop(f);
			return run_files_get_fill(f);
		}
	}
	/* What is written is bounded by the first reply's size (the code may change the
	 * kernel that answers: its later "size" and "eof" are its word): more is cut, and said
	 * at the end; a reply that brings nothing of a range left, and no eof, is no
	 * progress. */
	bool eof = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "eof"));
	uint64_t room = off < f->size ? f->size - off : 0;
	if (room > asked_len)
		room = asked_len;
	if (len > room || run_files_num(reply, "size") > f->size)
		f->grew = true;
	if (len > room)
		len = (size_t)room;
	if (!len && room && !eof) {
		cli_error(
			"run: --get %s: the session's reply to a get of %llu bytes at offset %llu "
			"brought none and no end of file: it was not progress",
			f->get[f->cur], (unsigned long long)room, (unsigned long long)off);
		f->failed = true;
		run_files_get_drop(f);
		return run_files_get_fill(f);
	}
	if (f->fd >= 0 && len && pwrite(f->fd, data, len, (off_t)off) != (ssize_t)len) {
		cli_error("run: --get %s: %s: %s", f->get[f->cur], f->dest,
			  errno ? strerror(errno) : "short write");
		f->failed = true;
		run_files_get_drop(f);
	}
	if (eof && off + len < f->size)
		f->size = off + len; /* (it shrank) */
	return run_files_get_fill(f);
}

enum run_files_event run_files_on_file(struct run_files *f, uint64_t id, const char *reply,
				       const void *data, size_t len, bool quiet)
{
	cJSON *o = cJSON_Parse(reply);
	enum run_files_event ev;
	if (!o) { /* (the session's own JSON: only out of memory) */
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "error", "out of memory");
		o = e;
	}
	ev = f->phase_gets ? run_files_get_reply(f, o, data, len, quiet)
			   : run_files_put_reply(f, o, quiet);
	cJSON_Delete(o);
	return ev;
}
