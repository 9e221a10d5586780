/*
 * cli_cp.c - `ptybox cp SRC DST`: files and folders between this machine and a
 * session of the server, as docker cp and kubectl cp copy them.
 *
 * It is a client of the server protocol's file ops (put, get, files, remove;
 * ptybox-protocol(7)) over cli_client.c's connection. Big files travel in
 * chunks of CP_CHUNK bytes (put with "offset" and "more", get with "offset" and
 * "length"), CP_IN_FLIGHT requests at a time so that the session's terminal
 * never idles while we read or write here; memory stays at a few chunks.
 * A folder from the session is listed (files, recursive) and each of its files
 * fetched: the names come from the session's code, so each is checked
 * (cp_unsafe_name) before it is written under DST. The pure rules are
 * cp_path.c's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
/* (-DCP_NO_OPENAT2: the openat walk alone, as on a kernel before 5.6, to test it) */
#if defined(SYS_openat2) && !defined(CP_NO_OPENAT2)
#include <linux/openat2.h>
#endif

#include "cli.h"
#include "cli_client.h"
#include "cp_path.h"
#include "options.h"
#include "protocol.h"

/* One put's data or one get's length: 8 MiB, an 11 MB line in base64. */
#define CP_CHUNK ((uint64_t)8 << 20)
/* The smallest a get's range shrinks to when the session's --max-get is below CP_CHUNK. */
#define CP_MIN_CHUNK ((uint64_t)64 << 10)
/* Requests sent and not yet answered: two, so that the next is there when one ends. */
#define CP_IN_FLIGHT 2
/* The progress bar: for copies past 8 MiB, at most 10 redraws a second. */
#define CP_PROGRESS_MIN ((uint64_t)8 << 20)
#define CP_PROGRESS_MS	100
/* The most files and folders one copy takes (the server's recursive listing: 100,000). */
#define CP_MAX_JOBS 100000
/* The most bytes one copy out writes here, by default (--max-size). */
#define CP_MAX_SIZE ((uint64_t)16 << 30)

struct cp_job {
	char *remote; /* the session's path */
	char *host;   /* the host's path; NULL: standard input or output */
	char *rel;    /* out: host's path under struct cp's base, walked without links */
	uint64_t size;
	int mode; /* permission bits, -1: none */
	bool dir; /* a folder: made (out), or made empty (in) */
	/* the transfer */
	int fd;
	uint64_t next;	 /* the next offset to ask for (get) or send (put) */
	uint64_t known;	 /* get: the size the far side said last */
	bool sent_last;	 /* put: the request without "more" is out */
	char upload[65]; /* put: its upload's token, from the first chunk's reply */
	bool started;
	bool grew; /* get: a reply said there is more than the listing did: cut there */
	dev_t dev; /* put, from a folder's walk: the file walked, which the one read must be */
	ino_t ino;
};

struct cp_sent {
	uint64_t id;
	size_t job;
	uint64_t offset, length;
};

struct cp {
	struct cli_conn *conn;
	const char *name; /* the session */
	struct cp_job *jobs;
	size_t njobs, capjobs;
	struct cp_sent sent[CP_IN_FLIGHT];
	size_t nsent;
	uint64_t chunk;
	/* progress */
	bool progress;
	uint64_t done, total;
	int64_t t0_ms, drawn_ms;
	bool drawn;
	int rc;
	/* out: every host file and folder is made under base (the folder the user named),
	 * component by component, never through a link that the session may have put there
	 * (through a :rw mount of DST) */
	char *base;
	int basefd;
	uint64_t max_size; /* --max-size */
	/* the folders (rel) that failed: said once, nothing written under them */
	char **failed;
	size_t nfailed, capfailed;
};

static int64_t cp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cp_progress_draw(struct cp *c, bool force)
{
	if (!c->progress || (!c->total && c->done <= CP_PROGRESS_MIN))
		return;
	int64_t now = cp_now_ms();
	if (!force && c->drawn && now - c->drawn_ms < CP_PROGRESS_MS)
		return;
	char text[128], line[160];
	cp_progress_text(text, sizeof(text), c->done, c->total, (double)(now - c->t0_ms) / 1e3);
	int n = snprintf(line, sizeof(line), "\r%s\033[K", text);
	cli_write_all(2, line, (size_t)n);
	c->drawn = true;
	c->drawn_ms = now;
}

/* The bar is gone before any message, and at the end. */
static void cp_progress_clear(struct cp *c)
{
	if (c->drawn)
		cli_write_all(2, "\r\033[K", 4);
	c->drawn = false;
}

static void cp_progress_start(struct cp *c)
{
	c->progress = isatty(2) && c->total > CP_PROGRESS_MIN;
	c->t0_ms = cp_now_ms();
}

/* "cp: WHERE: why", the bar cleared first; the copy fails (exit 1). */
static void cp_fail(struct cp *c, const char *where, const char *why)
{
	cp_progress_clear(c);
	cli_error("cp: %s: %s", where, why);
	c->rc = CLI_EXIT_FAILED;
}

static void cp_warn(struct cp *c, const char *where, const char *why)
{
	cp_progress_clear(c);
	cli_error("cp: warning: %s: %s", where, why);
}

static struct cp_job *cp_add_job(struct cp *c, const char *remote, const char *host)
{
	if (c->njobs == CP_MAX_JOBS)
		return NULL;
	if (c->njobs == c->capjobs) {
		size_t n = c->capjobs ? c->capjobs * 2 : 16;
		struct cp_job *nj = realloc(c->jobs, n * sizeof(*nj));
		if (!nj)
			abort(); /* out of memory is fatal (STYLE.md) */
		c->jobs = nj;
		c->capjobs = n;
	}
	struct cp_job *j = &c->jobs[c->njobs++];
	memset(j, 0, sizeof(*j));
	j->remote = strdup(remote);
	j->host = host ? strdup(host) : NULL;
	if (!j->remote || (host && !j->host))
		abort();
	j->fd = -1;
	j->mode = -1;
	return j;
}

static void cp_free(struct cp *c)
{
	for (size_t i = 0; i < c->njobs; i++) {
		if (c->jobs[i].fd > 2)
			close(c->jobs[i].fd);
		free(c->jobs[i].remote);
		free(c->jobs[i].host);
		free(c->jobs[i].rel);
	}
	free(c->jobs);
	for (size_t i = 0; i < c->capfailed; i++)
		free(c->failed[i]);
	free(c->failed);
	free(c->base);
	if (c->basefd >= 0)
		close(c->basefd);
	cli_conn_close(c->conn);
}

/* "NAME:PATH" for messages; a longer one than buf ends in "...". */
static const char *cp_where(const struct cp *c, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s:%s", c->name, path);
	if ((n < 0 || (size_t)n >= len) && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}

static cJSON *cp_request(const struct cp *c, const char *op, const char *path)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddStringToObject(o, "session", c->name);
	cJSON_AddStringToObject(o, "path", path);
	return o;
}

/* The reply to id (anything else is dropped), or NULL: the server is gone (said). */
static cJSON *cp_reply(struct cp *c, uint64_t id)
{
	bool intr;
	cJSON *o;
	while ((o = cli_conn_next(c->conn, &intr))) {
		if (cli_conn_id(o) == id && !cJSON_GetObjectItemCaseSensitive(o, "event"))
			return o;
		cJSON_Delete(o);
	}
	cp_progress_clear(c);
	c->rc = cli_conn_error_exit("cp", c->conn, NULL);
	return NULL;
}

/* The reply to the oldest request in flight, which *s becomes (taken off the
 * list), or NULL: the server is gone (said). */
static cJSON *cp_oldest_reply(struct cp *c, struct cp_sent *s)
{
	*s = c->sent[0];
	cJSON *reply = cp_reply(c, s->id);
	if (reply)
		memmove(c->sent, c->sent + 1, --c->nsent * sizeof(c->sent[0]));
	return reply;
}

/* Whether reply is an error; if so it is said: a file op's as "cp: NAME:PATH: why", any
 * other (no such session, a usage error) as the server put it. */
static bool cp_error(struct cp *c, const cJSON *reply, const char *op, const char *path)
{
	const char *msg = protocol_str(reply, "error"), *code = protocol_str(reply, "code");
	if (!msg)
		return false;
	if (code && strcmp(code, "file") == 0) {
		char where[PATH_MAX + 80], why[512];
		cp_reason(protocol_str(reply, "errno"), msg, op, why, sizeof(why));
		cp_fail(c, cp_where(c, path, where, sizeof(where)), why);
		return true;
	}
	cp_progress_clear(c);
	c->rc = cli_conn_error_exit("cp", c->conn, reply);
	return true;
}

/* One request and its reply, an error said: the reply, or NULL. */
static cJSON *cp_call(struct cp *c, cJSON *req, const char *op, const char *path)
{
	uint64_t id = cli_conn_send(c->conn, req);
	cJSON *reply = id ? cp_reply(c, id) : NULL;
	if (!id) {
		c->rc = cli_conn_error_exit("cp", c->conn, NULL);
		return NULL;
	}
	if (reply && cp_error(c, reply, op, path)) {
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

static uint64_t cp_num(const cJSON *o, const char *key, uint64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9.0e15
		       ? (uint64_t)v->valuedouble
		       : dflt;
}

/* ---- the host side of a copy out: under base, never through a link ---- */

static uint64_t cp_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* (FNV-1a) */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

/* Whether folder rel (n bytes of it) failed; add: it has now (true if it had before). */
static bool cp_failed(struct cp *c, const char *rel, size_t n, bool add)
{
	if (add && (c->nfailed + 1) * 2 > c->capfailed) {
		size_t cap = c->capfailed ? c->capfailed * 2 : 64;
		char **nf = calloc(cap, sizeof(*nf));
		if (!nf)
			abort();
		for (size_t i = 0; i < c->capfailed; i++) {
			if (!c->failed[i])
				continue;
			size_t k = cp_hash(c->failed[i], strlen(c->failed[i])) & (cap - 1);
			while (nf[k])
				k = (k + 1) & (cap - 1);
			nf[k] = c->failed[i];
		}
		free(c->failed);
		c->failed = nf;
		c->capfailed = cap;
	}
	if (!c->capfailed)
		return false;
	size_t k = cp_hash(rel, n) & (c->capfailed - 1);
	for (; c->failed[k]; k = (k + 1) & (c->capfailed - 1))
		if (strlen(c->failed[k]) == n && memcmp(c->failed[k], rel, n) == 0)
			return true;
	if (add) {
		c->failed[k] = strndup(rel, n);
		if (!c->failed[k])
			abort();
		c->nfailed++;
	}
	return false;
}

/* Whether something of rel's folders failed before (then nothing goes under it). */
static bool cp_under_failed(struct cp *c, const char *rel)
{
	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/'))
		if (cp_failed(c, rel, (size_t)(p - rel), false))
			return true;
	return false;
}

/* "BASE/REL" for messages (n bytes of rel). */
static const char *cp_host_where(const struct cp *c, const char *rel, size_t n, char *buf,
				 size_t len)
{
	snprintf(buf, len, "%s%s%.*s", c->base, cp_ends_slash(c->base) ? "" : "/", (int)n, rel);
	return buf;
}

/* Why name, in folder fd, could not be opened as a folder or a file (errno e): a link there
 * is said so. */
static const char *cp_why_not(int fd, const char *name, int e, bool folder)
{
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return "a symbolic link is there: not followed";
		if (folder && !S_ISDIR(st.st_mode))
			return "exists and is not a folder";
		if (!folder && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
			return "not a regular file is there: not written";
	}
	return strerror(e);
}

/* Folder rel's first n bytes failed (why): said, unless it was said before. */
static void cp_folder_failed(struct cp *c, const char *rel, size_t n, const char *why)
{
	char where[PATH_MAX + 80];
	if (!cp_failed(c, rel, n, true))
		cp_fail(c, cp_host_where(c, rel, n, where, sizeof(where)), why);
}

/* The folder that holds rel's last component (*last), opened under c->basefd without
 * following a link at any component (openat2's RESOLVE_NO_SYMLINKS where the kernel has it,
 * else one openat O_NOFOLLOW per component): its fd, to close with cp_parent_close, or -1
 * (said, once per folder). */
static int cp_parent_open(struct cp *c, const char *rel, const char **last)
{
	const char *slash = strrchr(rel, '/');
	*last = slash ? slash + 1 : rel;
	if (!slash)
		return c->basefd;
	size_t plen = (size_t)(slash - rel);
	char buf[PATH_MAX];
	if (plen >= sizeof(buf)) {
		cp_folder_failed(c, rel, plen, strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(buf, rel, plen);
	buf[plen] = '\0';
	if (cp_under_failed(c, rel))
		return -1;
#if defined(SYS_openat2) && !defined(CP_NO_OPENAT2)
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fast = (int)syscall(SYS_openat2, c->basefd, buf, &how, sizeof(how));
	if (fast >= 0)
		return fast;
		/* (else the walk below: the same rule, and it finds the component to name) */
#endif
	int fd = c->basefd;
	for (size_t at = 0; at < plen;) {
		size_t e = at;
		while (e < plen && buf[e] != '/')
			e++;
		buf[e] = '\0';
		int nfd = openat(fd, buf + at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			int err = errno;
			const char *why = cp_why_not(fd, buf + at, err, true);
			if (fd != c->basefd)
				close(fd);
			cp_folder_failed(c, rel, e, why);
			return -1;
		}
		if (fd != c->basefd)
			close(fd);
		fd = nfd;
		if (e < plen)
			buf[e] = '/';
		at = e + 1;
	}
	return fd;
}

static void cp_parent_close(const struct cp *c, int fd)
{
	if (fd >= 0 && fd != c->basefd)
		close(fd);
}

/* Makes folder rel under base (or takes the folder there, never a link): 0, or -1 (said). */
static int cp_mkdir_under(struct cp *c, const char *rel, mode_t mode)
{
	const char *last;
	int pfd = cp_parent_open(c, rel, &last);
	if (pfd < 0) {
		cp_failed(c, rel, strlen(rel), true); /* (nothing under it either) */
		return -1;
	}
	int rc = 0;
	struct stat st;
	if (mkdirat(pfd, last, mode) < 0) {
		int e = errno;
		if (!(e == EEXIST && fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISDIR(st.st_mode))) {
			cp_folder_failed(c, rel, strlen(rel), cp_why_not(pfd, last, e, true));
			rc = -1;
		}
	}
	cp_parent_close(c, pfd);
	return rc;
}

/* File rel under base, open for writing: created 0600 (its mode comes once it is whole),
 * truncated if it was there, never through a link, never anything but a regular file.
 * Its fd, or -1 (said). */
static int cp_create_under(struct cp *c, const char *rel, const char *host)
{
	const char *last;
	int pfd = cp_parent_open(c, rel, &last);
	if (pfd < 0) {
		c->rc = CLI_EXIT_FAILED;
		return -1;
	}
	/* (O_NONBLOCK: a FIFO put there would hold the open) */
	int fd = openat(pfd, last,
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	const char *why = NULL;
	struct stat st;
	if (fd < 0)
		why = cp_why_not(pfd, last, errno, false);
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		why = "not a regular file is there: not written";
		close(fd);
		fd = -1;
	}
	cp_parent_close(c, pfd);
	if (why)
		cp_fail(c, host, why);
	return fd;
}

/* Folder rel's mode, once it is whole (the folder, never a link put at its name). */
static void cp_chmod_under(struct cp *c, const char *rel, const char *host, mode_t mode)
{
	if (cp_failed(c, rel, strlen(rel), false) || cp_under_failed(c, rel))
		return;
	const char *last;
	int pfd = cp_parent_open(c, rel, &last);
	if (pfd < 0)
		return;
	int fd = openat(pfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, mode) < 0)
		cp_fail(c, host, fd < 0 ? cp_why_not(pfd, last, errno, true) : strerror(errno));
	if (fd >= 0)
		close(fd);
	cp_parent_close(c, pfd);
}

/* ---- out of the session ---- */

static int cp_get_send(struct cp *c, size_t k)
{
	struct cp_job *j = &c->jobs[k];
	cJSON *req = cp_request(c, "get", j->remote);
	uint64_t want = c->chunk;
	protocol_json_add_uint(req, "offset", j->next);
	protocol_json_add_uint(req, "length", want);
	uint64_t id = cli_conn_send(c->conn, req);
	if (!id) {
		c->rc = cli_conn_error_exit("cp", c->conn, NULL);
		return -1;
	}
	c->sent[c->nsent++] =
		(struct cp_sent){.id = id, .job = k, .offset = j->next, .length = want};
	j->next += want;
	j->started = true;
	return 0;
}

/* The host file of job j, open for writing (cp_create_under). */
static int cp_get_open(struct cp *c, struct cp_job *j)
{
	if (j->fd >= 0)
		return 0;
	if (!j->host) {
		j->fd = 1;
		return 0;
	}
	j->fd = cp_create_under(c, j->rel, j->host);
	return j->fd < 0 ? -1 : 0;
}

static int cp_get_finish(struct cp *c, struct cp_job *j)
{
	if (j->grew) {
		char where[PATH_MAX + 80], why[96];
		snprintf(why, sizeof(why), "grew while copied: cut at %llu bytes",
			 (unsigned long long)j->known);
		cp_fail(c, j->host ? j->host : cp_where(c, j->remote, where, sizeof(where)), why);
		j->grew = false;
	}
	if (j->fd <= 2)
		return 0;
	int rc = 0;
	if (j->mode >= 0 && fchmod(j->fd, (mode_t)j->mode & 0777) < 0)
		rc = -errno;
	if (close(j->fd) < 0 && !rc)
		rc = -errno;
	j->fd = -1;
	if (rc < 0)
		cp_fail(c, j->host, strerror(-rc));
	return rc;
}

/* A get's reply: its bytes written where they go. 0, 1 to ask again with a smaller range
 * (the session's --max-get is below ours), or -1 (said). */
static int cp_get_reply(struct cp *c, const struct cp_sent *s, cJSON *reply)
{
	struct cp_job *j = &c->jobs[s->job];
	const char *msg = protocol_str(reply, "error");
	if (msg) {
		const char *e = protocol_str(reply, "errno");
		if (e && strcmp(e, "EFBIG") == 0 && c->chunk > CP_MIN_CHUNK) {
			c->chunk = c->chunk / 8 > CP_MIN_CHUNK ? c->chunk / 8 : CP_MIN_CHUNK;
			return 1;
		}
		cp_error(c, reply, "get", j->remote);
		return -1;
	}
	const char *data = protocol_str(reply, "data");
	if (!data && cp_num(reply, "length", 1) == 0)
		data = ""; /* (none for an empty range) */
	if (!data) {
		cp_fail(c, j->remote, "the server's reply has no data");
		return -1;
	}
	size_t b64 = strlen(data), len = 0;
	unsigned char *buf = malloc(b64 / 4 * 3 + 3);
	if (!buf)
		abort();
	if (sodium_base642bin(buf, b64 / 4 * 3 + 3, data, b64, NULL, &len, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0) {
		free(buf);
		cp_fail(c, j->remote, "the server's data is not base64");
		return -1;
	}
	/* What is written is bounded by what the listing said (the session's code may change
	 * its kernel, which answers: "size" and "eof" are its word): the range asked, and
	 * nothing past the listed size. More than that is cut, and said at the end. */
	bool eof = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "eof"));
	uint64_t room = s->offset < j->known ? j->known - s->offset : 0;
	if (room > s->length)
		room = s->length;
	if (len > s->length) {
		free(buf);
		cp_fail(c, j->remote, "the server's reply holds more than the range asked");
		return -1;
	}
	if (len > room || cp_num(reply, "size", 0) > j->known)
		j->grew = true;
	if (len > room)
		len = room;
	if (!len && room && !eof) {
		char where[PATH_MAX + 80], why[160];
		free(buf);
		snprintf(why, sizeof(why),
			 "the session's reply to a get of %llu bytes at offset %llu brought none "
			 "and no end of file: it was not progress",
			 (unsigned long long)room, (unsigned long long)s->offset);
		cp_fail(c, cp_where(c, j->remote, where, sizeof(where)), why);
		return -1;
	}
	/* The file's own mode, from the get (it follows links): the listing's is the lstat's,
	 * 0777 for a link. */
	if (j->fd < 0 && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(reply, "mode")))
		j->mode = (int)cp_num(reply, "mode", 0) & 0777;
	int rc = cp_get_open(c, j);
	if (rc == 0 && len) {
		int w = j->fd == 1 ? cli_write_all(1, (const char *)buf, len) : 0;
		if (j->fd != 1 && pwrite(j->fd, buf, len, (off_t)s->offset) != (ssize_t)len)
			w = errno ? -errno : -EIO;
		if (w < 0) {
			cp_fail(c, j->host ? j->host : "standard output", strerror(-w));
			rc = -1;
		}
	}
	free(buf);
	c->done += len;
	if (eof && s->offset + len < j->known)
		j->known = s->offset + len; /* (it shrank) */
	return rc;
}

/* The get jobs, CP_IN_FLIGHT ranges at a time: 0 or -1 (said). */
static int cp_get_all(struct cp *c)
{
	size_t k = 0; /* the job whose ranges are being asked for */
	c->chunk = CP_CHUNK;
	for (;;) {
		while (c->nsent < CP_IN_FLIGHT && k < c->njobs) {
			struct cp_job *j = &c->jobs[k];
			if (j->dir || (j->started && j->next >= j->known)) {
				k++;
				continue;
			}
			if (cp_get_send(c, k) < 0)
				return -1;
		}
		if (!c->nsent)
			return 0;
		struct cp_sent s;
		cJSON *reply = cp_oldest_reply(c, &s);
		if (!reply)
			return -1;
		int rc = cp_get_reply(c, &s, reply);
		cJSON_Delete(reply);
		if (rc < 0)
			return -1;
		if (rc ==
		    1) { /* again from that range, smaller: what was sent after it is dropped */
			for (size_t i = 0; i < c->nsent; i++) {
				cJSON *r = cp_reply(c, c->sent[i].id);
				if (!r)
					return -1;
				cJSON_Delete(r);
			}
			c->nsent = 0;
			for (size_t i = s.job + 1; i < c->njobs; i++)
				c->jobs[i].next = 0, c->jobs[i].started = false;
			c->jobs[s.job].next = s.offset;
			k = s.job;
			continue;
		}
		struct cp_job *j = &c->jobs[s.job];
		bool pending = false;
		for (size_t i = 0; i < c->nsent; i++)
			pending |= c->sent[i].job == s.job;
		if (j->next < j->known && k > s.job)
			k = s.job; /* (it grew: more of it to ask for) */
		if (!pending && j->next >= j->known) {
			if (cp_get_open(c, j) < 0 || cp_get_finish(c, j) < 0)
				return -1;
		}
		cp_progress_draw(c, false);
	}
}

/* Makes dir, the user's own path (DST ending in '/'), or takes it as it is. */
static int cp_mkdir(struct cp *c, const char *dir, mode_t mode)
{
	struct stat st;
	if (mkdir(dir, mode) == 0)
		return 0;
	int e = errno;
	if (e == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	cp_fail(c, dir, e == EEXIST ? "exists and is not a folder" : strerror(e));
	return -1;
}

/* Where the copy goes: c->base, the folder the user named (DST, or the folder DST is in), as
 * the user's path resolves; *top, what is made in it ("" for base itself: a folder's
 * contents into DST). 0, or -1 (said). */
static int cp_out_base(struct cp *c, const char *src, const struct cp_side *dst, bool into,
		       char *top, size_t toplen)
{
	size_t n;
	const char *b;
	if (into) {
		c->base = strdup(dst->path);
		b = cp_basename_is_contents(src) ? "" : cp_basename(src, &n);
		if (!b[0])
			n = 0;
	} else {
		b = cp_basename(dst->path, &n);
		c->base =
			b == dst->path ? strdup(".") : strndup(dst->path, (size_t)(b - dst->path));
	}
	if (!c->base)
		abort();
	const char *why = n ? cp_unsafe_name(b, n) : NULL;
	if (why || n >= toplen) {
		cp_fail(c, dst->path, why ? why : strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(top, b, n);
	top[n] = '\0';
	c->basefd = open(c->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->basefd < 0) {
		cp_fail(c, c->base, strerror(errno));
		return -1;
	}
	return 0;
}

/* Whether a copy out of total bytes is past --max-size (said). */
static bool cp_too_big(struct cp *c, const char *src, uint64_t total)
{
	if (total <= c->max_size)
		return false;
	char where[PATH_MAX + 80], why[160];
	snprintf(why, sizeof(why),
		 "%llu bytes, more than cp's --max-size (%llu bytes): nothing copied",
		 (unsigned long long)total, (unsigned long long)c->max_size);
	cp_fail(c, cp_where(c, src, where, sizeof(where)), why);
	return true;
}

static int cp_out(struct cp *c, const char *src, const struct cp_side *dst)
{
	char where[PATH_MAX + 80];
	cJSON *req = cp_request(c, "files", src);
	cJSON_AddBoolToObject(req, "recursive", 1);
	cJSON *list = cp_call(c, req, "files", src);
	if (!list)
		return -1;
	const char *type = protocol_str(list, "type"), *abs = protocol_str(list, "path");
	bool folder = type && strcmp(type, "dir") == 0;
	int rc = 0;
	if (!abs || !type) {
		cp_fail(c, cp_where(c, src, where, sizeof(where)),
			"the server's reply has no path");
		goto out;
	}
	if (!folder && strcmp(type, "file") != 0) {
		char why[64];
		snprintf(why, sizeof(why), "not a regular file (a %.40s)", type);
		cp_fail(c, cp_where(c, src, where, sizeof(where)), why);
		goto out;
	}
	if (dst->kind == CP_STDIO) {
		if (folder) {
			cp_fail(c, cp_where(c, src, where, sizeof(where)),
				"a folder cannot go to standard output");
			goto out;
		}
		struct cp_job *j = cp_add_job(c, abs, NULL);
		const cJSON *e =
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(list, "entries"), 0);
		j->size = j->known = cp_num(e, "size", 0);
		c->total = j->size;
		goto get;
	}
	struct stat st;
	bool exists = stat(dst->path, &st) == 0;
	bool into = (exists && S_ISDIR(st.st_mode)) || cp_ends_slash(dst->path);
	if (!exists && cp_ends_slash(dst->path) && cp_mkdir(c, dst->path, 0777) < 0)
		goto out;
	char dest[PATH_MAX], top[PATH_MAX];
	if (cp_dest_path(dst->path, into, src, dest, sizeof(dest)) < 0) {
		cp_fail(c, dst->path, strerror(ENAMETOOLONG));
		goto out;
	}
	if (cp_out_base(c, src, dst, into, top, sizeof(top)) < 0)
		goto out;
	if (!folder) {
		if (!top[0]) {
			cp_fail(c, dst->path, "expected a file's name");
			goto out;
		}
		struct cp_job *j = cp_add_job(c, abs, dest);
		const cJSON *e =
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(list, "entries"), 0);
		j->rel = strdup(top);
		if (!j->rel)
			abort();
		j->size = j->known = cp_num(e, "size", 0);
		j->mode = cJSON_GetObjectItemCaseSensitive(e, "mode")
				  ? (int)cp_num(e, "mode", 0) & 0777
				  : -1;
		c->total = j->size;
		goto get;
	}
	const cJSON *e;
	uint64_t listed = 0; /* (past --max-size: nothing is made either) */
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(list, "entries"))
	{
		const char *t = protocol_str(e, "type");
		if (t && strcmp(t, "file") == 0) {
			uint64_t n = cp_num(e, "size", 0);
			listed = n > UINT64_MAX - listed ? UINT64_MAX : listed + n;
		}
	}
	if (cp_too_big(c, src, listed))
		goto out;
	if (top[0] && cp_mkdir_under(c, top, 0777) < 0)
		goto out;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(list, "entries"))
	{
		const char *name = protocol_str(e, "name"), *t = protocol_str(e, "type");
		char rpath[PATH_MAX + 80], hpath[PATH_MAX], rel[PATH_MAX];
		if (!name || !t)
			continue;
		const char *why = cp_unsafe_name(name, strlen(name));
		if (cp_join(abs, name, strlen(name), rpath, sizeof(rpath)) < 0)
			why = "the path is too long";
		if (!why && (cp_join(dest, name, strlen(name), hpath, sizeof(hpath)) < 0 ||
			     (top[0] ? cp_join(top, name, strlen(name), rel, sizeof(rel))
				     : snprintf(rel, sizeof(rel), "%s", name)) < 0 ||
			     strlen(name) >= sizeof(rel)))
			why = "the path is too long here";
		if (why) { /* (the session's code made this name: never written here) */
			char msg[600];
			snprintf(msg, sizeof(msg), "refused: %s", why);
			cp_fail(c, cp_where(c, why[0] == 't' ? abs : rpath, where, sizeof(where)),
				msg);
			continue;
		}
		/* A name that is not UTF-8 comes with U+FFFD for its bytes: no get could name
		 * it. Skipped (an error: cp exits 1), the rest copied. */
		if (strstr(name, "\xef\xbf\xbd")) {
			cp_fail(c, cp_where(c, rpath, where, sizeof(where)),
				"the name is not UTF-8 (U+FFFD stands for its bytes), skipped");
			continue;
		}
		bool isdir = strcmp(t, "dir") == 0;
		if (!isdir && strcmp(t, "file") != 0) {
			char msg[96];
			snprintf(msg, sizeof(msg), "%.60s, skipped",
				 strcmp(t, "link") == 0 ? "a symbolic link" : t);
			cp_warn(c, cp_where(c, rpath, where, sizeof(where)), msg);
			continue;
		}
		/* (the listing is sorted: a folder comes before what is in it; under one that
		 * could not be made, nothing is written, and that was said) */
		if (cp_under_failed(c, rel)) {
			if (isdir)
				cp_failed(c, rel, strlen(rel), true);
			continue;
		}
		struct cp_job *j = cp_add_job(c, rpath, hpath);
		if (!j) {
			cp_fail(c, cp_where(c, src, where, sizeof(where)),
				"more than 100,000 entries");
			break;
		}
		j->rel = strdup(rel);
		if (!j->rel)
			abort();
		j->dir = isdir;
		j->size = j->known = isdir ? 0 : cp_num(e, "size", 0);
		j->mode = (int)cp_num(e, "mode", isdir ? 0755 : 0644) & 0777;
		c->total += j->size;
		if (isdir && cp_mkdir_under(c, rel, 0700) < 0) {
			c->njobs--;
			free(j->remote);
			free(j->host);
			free(j->rel);
		}
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(list, "cut")))
		cp_fail(c, cp_where(c, src, where, sizeof(where)),
			"the listing was cut (too many entries): not all of it is copied");
get:
	if (cp_too_big(c, src, c->total))
		goto out;
	cp_progress_start(c);
	rc = cp_get_all(c);
	/* the folders' modes last (deepest first), once they need no more writing */
	for (size_t i = c->njobs; i-- > 0;)
		if (c->jobs[i].dir)
			cp_chmod_under(c, c->jobs[i].rel, c->jobs[i].host, (mode_t)c->jobs[i].mode);
out:
	cJSON_Delete(list);
	cp_progress_clear(c);
	return rc < 0 || c->rc ? -1 : 0;
}

/* ---- into the session ---- */

/* Reads up to want bytes (fewer only at the end of the file). */
static ssize_t cp_read_full(int fd, unsigned char *buf, size_t want)
{
	size_t got = 0;
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* The host file of put j, open for reading: a file of a folder walked is opened as it was
 * walked, one component at a time without following a link (a :rw mount of it lets the
 * session swap a folder for a link meanwhile), and must be the file walked. 0, or -1 (said). */
static int cp_put_open(struct cp *c, struct cp_job *j)
{
	if (!j->host) {
		j->fd = 0;
		return 0;
	}
	if (!j->rel) { /* (SRC itself, a file: as the user named it) */
		j->fd = open(j->host, O_RDONLY | O_CLOEXEC);
		if (j->fd < 0) {
			cp_fail(c, j->host, strerror(errno));
			return -1;
		}
		return 0;
	}
	const char *last;
	int pfd = cp_parent_open(c, j->rel, &last);
	if (pfd < 0) {
		c->rc = CLI_EXIT_FAILED;
		return -1;
	}
	int fd = openat(pfd, last, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	const char *why = NULL;
	struct stat st;
	if (fd < 0)
		why = cp_why_not(pfd, last, errno, false);
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != j->dev ||
		 st.st_ino != j->ino)
		why = "changed while copied (not the file walked): not read";
	cp_parent_close(c, pfd);
	if (why) {
		if (fd >= 0)
			close(fd);
		cp_fail(c, j->host, why);
		return -1;
	}
	j->fd = fd;
	return 0;
}

/* The next chunk of job k as a put: 0, or -1 (said). The last one (a short read, or
 * the size reached) goes without "more". */
static int cp_put_send(struct cp *c, size_t k)
{
	struct cp_job *j = &c->jobs[k];
	if (j->fd < 0 && cp_put_open(c, j) < 0)
		return -1;
	uint64_t left = j->size - j->next;
	size_t want = left < CP_CHUNK ? (size_t)left : (size_t)CP_CHUNK;
	unsigned char *buf = malloc(want ? want : 1);
	if (!buf)
		abort();
	ssize_t n = cp_read_full(j->fd, buf, want);
	if (n < 0) {
		free(buf);
		cp_fail(c, j->host ? j->host : "standard input", strerror((int)-n));
		return -1;
	}
	bool last = (size_t)n < want || (uint64_t)n == left;
	size_t b64len = sodium_base64_ENCODED_LEN((size_t)n, sodium_base64_VARIANT_ORIGINAL);
	char *b64 = malloc(b64len);
	if (!b64)
		abort();
	sodium_bin2base64(b64, b64len, buf, (size_t)n, sodium_base64_VARIANT_ORIGINAL);
	free(buf);
	cJSON *req = cp_request(c, "put", j->remote);
	cJSON_AddItemToObject(req, "data", cJSON_CreateStringReference(b64));
	if (j->mode >= 0)
		cJSON_AddNumberToObject(req, "mode", j->mode);
	if (j->next)
		protocol_json_add_uint(req, "offset", j->next);
	if (j->upload[0])
		cJSON_AddStringToObject(req, "upload", j->upload);
	if (!last)
		cJSON_AddBoolToObject(req, "more", 1);
	uint64_t id = cli_conn_send(c->conn, req); /* (frees req, not b64) */
	free(b64);
	if (!id) {
		c->rc = cli_conn_error_exit("cp", c->conn, NULL);
		return -1;
	}
	c->sent[c->nsent++] =
		(struct cp_sent){.id = id, .job = k, .offset = j->next, .length = (uint64_t)n};
	j->next += (uint64_t)n;
	j->started = true;
	if (last) {
		j->sent_last = true;
		if (j->fd > 0)
			close(j->fd);
		j->fd = -1;
	}
	return 0;
}

static int cp_put_all(struct cp *c)
{
	size_t k = 0;
	for (;;) {
		while (c->nsent < CP_IN_FLIGHT && k < c->njobs) {
			if (c->jobs[k].dir || c->jobs[k].sent_last) {
				k++;
				continue;
			}
			if (c->jobs[k].started && !c->jobs[k].upload[0])
				break; /* (the next chunk names the upload the first one's reply
					  names) */
			if (cp_put_send(c, k) < 0)
				return -1;
		}
		if (!c->nsent)
			return 0;
		struct cp_sent s;
		cJSON *reply = cp_oldest_reply(c, &s);
		if (!reply)
			return -1;
		bool bad = cp_error(c, reply, "put", c->jobs[s.job].remote);
		const char *token = protocol_str(reply, "upload");
		if (!bad && token && !c->jobs[s.job].upload[0])
			snprintf(c->jobs[s.job].upload, sizeof(c->jobs[s.job].upload), "%s", token);
		else if (!bad && !c->jobs[s.job].upload[0] && !c->jobs[s.job].sent_last) {
			cp_fail(c, c->jobs[s.job].remote,
				"the server named no upload to go on with");
			bad = true;
		}
		cJSON_Delete(reply);
		if (bad)
			return -1;
		c->done += s.length;
		cp_progress_draw(c, false);
	}
}

/* An empty folder, which put alone cannot make: a file put in it (its parents made), then
 * removed. */
static int cp_put_dir(struct cp *c, const struct cp_job *j)
{
	char keep[PATH_MAX + 80];
	if (cp_join(j->remote, ".ptybox-keep", 12, keep, sizeof(keep)) < 0) {
		cp_fail(c, j->remote, strerror(ENAMETOOLONG));
		return -1;
	}
	cJSON *req = cp_request(c, "put", keep);
	cJSON_AddStringToObject(req, "data", "");
	cJSON *reply = cp_call(c, req, "put", j->remote);
	if (!reply)
		return -1;
	cJSON_Delete(reply);
	reply = cp_call(c, cp_request(c, "remove", keep), "remove", keep);
	cJSON_Delete(reply);
	return reply ? 0 : -1;
}

/* host (a folder, open as dfd; rel: its path under c->base) as jobs to remote, without
 * following links out of it: links, FIFOs, sockets and devices are skipped with a warning; a
 * folder with nothing copied in it is made empty. Each file is opened later the same way,
 * and must be the file walked (cp_put_open). Takes dfd. */
static int cp_walk(struct cp *c, int dfd, const char *host, const char *rel, const char *remote,
		   int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		cp_fail(c, host, strerror(errno));
		close(dfd);
		return -1;
	}
	size_t before = c->njobs;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char h[PATH_MAX], r[PATH_MAX], rl[PATH_MAX];
		size_t n = strlen(de->d_name);
		if (cp_join(host, de->d_name, n, h, sizeof(h)) < 0 ||
		    cp_join(remote, de->d_name, n, r, sizeof(r)) < 0 ||
		    (rel[0] ? cp_join(rel, de->d_name, n, rl, sizeof(rl))
			    : snprintf(rl, sizeof(rl), "%s", de->d_name)) < 0 ||
		    n >= sizeof(rl)) {
			cp_fail(c, host, strerror(ENAMETOOLONG));
			rc = -1;
			break;
		}
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			cp_fail(c, h, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = depth >= 256
					  ? -1
					  : openat(dirfd(d), de->d_name,
						   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				cp_fail(c, h,
					depth >= 256
						? "folders nested too deep"
						: cp_why_not(dirfd(d), de->d_name, errno, true));
				rc = -1;
			} else {
				rc = cp_walk(c, sub, h, rl, r, depth + 1);
			}
		} else if (S_ISREG(st.st_mode)) {
			struct cp_job *j = cp_add_job(c, r, h);
			if (!j) {
				cp_fail(c, host, "more than 100,000 files");
				rc = -1;
				break;
			}
			j->rel = strdup(rl);
			if (!j->rel)
				abort();
			j->dev = st.st_dev;
			j->ino = st.st_ino;
			j->size = (uint64_t)st.st_size;
			j->mode = (int)(st.st_mode & 0777);
			c->total += j->size;
		} else {
			cp_warn(c, h,
				S_ISLNK(st.st_mode)    ? "a symbolic link, skipped"
				: S_ISFIFO(st.st_mode) ? "a fifo, skipped"
						       : "not a regular file, skipped");
		}
	}
	closedir(d);
	if (rc == 0 && c->njobs == before) {
		struct cp_job *j = cp_add_job(c, remote, host);
		if (!j)
			return -1;
		j->dir = true;
	}
	return rc;
}

static int cp_in(struct cp *c, const struct cp_side *src, const char *dst)
{
	char where[PATH_MAX + 80];
	struct stat st;
	if (src->kind == CP_STDIO) {
		struct cp_job *j = cp_add_job(c, dst, NULL);
		j->size = UINT64_MAX; /* (until the end of the input) */
		cp_progress_start(c);
		c->progress = isatty(2); /* (once past 8 MB: the size is not known) */
		int rc = cp_put_all(c);
		cp_progress_clear(c);
		return rc;
	}
	if (stat(src->path, &st) < 0) { /* (a link given by name is followed, as cp does) */
		cp_fail(c, src->path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		cp_fail(c, src->path, "not a regular file or a folder");
		return -1;
	}
	bool into = cp_ends_slash(dst);
	if (!into) { /* is DST a folder there? */
		cJSON *req = cp_request(c, "files", dst);
		uint64_t id = cli_conn_send(c->conn, req);
		cJSON *reply = id ? cp_reply(c, id) : NULL;
		if (!reply)
			return -1;
		const char *e = protocol_str(reply, "errno"), *type = protocol_str(reply, "type");
		if (protocol_str(reply, "error") && !(e && strcmp(e, "ENOENT") == 0)) {
			cp_error(c, reply, "files", dst);
			cJSON_Delete(reply);
			return -1;
		}
		into = !protocol_str(reply, "error") && type && strcmp(type, "dir") == 0;
		bool onto_file = !protocol_str(reply, "error") && !into && S_ISDIR(st.st_mode);
		cJSON_Delete(reply);
		if (onto_file) { /* (as cp(1): a folder does not replace a file) */
			cp_fail(c, cp_where(c, dst, where, sizeof(where)),
				"exists and is not a folder: a folder cannot replace it");
			return -1;
		}
	}
	char dest[PATH_MAX];
	if (cp_dest_path(dst, into, src->path, dest, sizeof(dest)) < 0) {
		cp_fail(c, cp_where(c, dst, where, sizeof(where)), strerror(ENAMETOOLONG));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		/* (SRC itself is followed, as the user named it; nothing under it is) */
		c->base = strdup(src->path);
		if (!c->base)
			abort();
		c->basefd = open(src->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c->basefd < 0) {
			cp_fail(c, src->path, strerror(errno));
			return -1;
		}
		int dfd = dup(c->basefd);
		if (dfd < 0) {
			cp_fail(c, src->path, strerror(errno));
			return -1;
		}
		if (cp_walk(c, dfd, src->path, "", dest, 0) < 0)
			return -1;
	} else {
		struct cp_job *j = cp_add_job(c, dest, src->path);
		j->size = (uint64_t)st.st_size;
		j->mode = (int)(st.st_mode & 0777);
		c->total = j->size;
	}
	cp_progress_start(c);
	int rc = cp_put_all(c);
	for (size_t i = 0; rc == 0 && i < c->njobs; i++)
		if (c->jobs[i].dir)
			rc = cp_put_dir(c, &c->jobs[i]);
	cp_progress_clear(c);
	return rc < 0 || c->rc ? -1 : 0;
}

static const char cp_usage[] =
	"Usage: ptybox cp [-L NAME | -S PATH | -H ssh://HOST] SRC DST\n"
	"Copy a file or a folder between here and session NAME of the server, as docker\n"
	"cp does: one of SRC and DST is NAME:PATH (a relative PATH is in the session's\n"
	"working folder), the other a path here, or - (SRC: standard input as one file;\n"
	"DST: the file to standard output). Folders are copied whole. Into an existing\n"
	"folder (or a DST ending in '/') the copy keeps SRC's name; else DST is its new\n"
	"name. Permission bits are kept, times are not; links and special files inside a\n"
	"folder are skipped with a warning. A host path with ':' is written ./a:b.\n"
	"Out of a session, a file is cut at the size the listing said (it grew while\n"
	"copied: an error), and nothing is written through a link found here.\n"
	"A progress bar shows on a terminal for copies past 8 MB.\n"
	"\n"
	"  -L NAME             the server named NAME (default \"default\")\n"
	"  -S PATH             the server at socket PATH\n"
	"  --max-size SIZE     the most a copy out writes here (default 16G): past it,\n"
	"                      nothing is copied\n"
	"  -H ssh://[user@]host[:port]  the server on another machine, through\n"
	"                      `ssh host ptybox dial-stdio` (ptybox must be installed there)\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0 copied, 1 it failed (a message names the path), 2 usage error.\n";

int cli_cp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 'S'},
		{"max-size", required_argument, NULL, 0x200},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *label = NULL, *spath = NULL, *host = NULL;
	uint64_t max_size = CP_MAX_SIZE;
	int opt, li;
	optind = 1;
	opterr = 0;
	while ((li = -1, opt = getopt_long(argc, argv, ":L:S:H:h", longopts, &li)) != -1) {
		if (optarg && cli_value_missing("cp", longopts, li, opt, optarg))
			return CLI_EXIT_USAGE;
		switch (opt) {
		case 'L': label = optarg; break;
		case 'S': spath = optarg; break;
		case 'H': host = optarg; break;
		case 0x200:
			if (options_parse_size(optarg, &max_size) < 0 || !max_size) {
				cli_error("cp: --max-size %s: expected a size, e.g. 16G", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h': fputs(cp_usage, stdout); return CLI_EXIT_OK;
		default: cli_bad_option("cp", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		cli_error(argc - optind < 2 ? "cp: expected SRC and DST"
					    : "cp: unexpected argument '%s'",
			  argc - optind < 2 ? "" : argv[optind + 2]);
		fprintf(stderr, "Try 'ptybox cp --help'.\n");
		return CLI_EXIT_USAGE;
	}
	struct cp_side src, dst;
	char err[600];
	if (cp_parse_side(argv[optind], &src, err, sizeof(err)) < 0 ||
	    cp_parse_side(argv[optind + 1], &dst, err, sizeof(err)) < 0) {
		cli_error("cp: %s", err);
		return CLI_EXIT_USAGE;
	}
	if ((src.kind == CP_SESSION) == (dst.kind == CP_SESSION)) {
		cli_error("cp: one of SRC and DST must be NAME:PATH (a session's), and only one%s",
			  src.kind == CP_SESSION
				  ? " (a host file with ':' in its name is written ./NAME:PATH)"
				  : "");
		fprintf(stderr, "Try 'ptybox cp --help'.\n");
		return CLI_EXIT_USAGE;
	}
	struct cp c = {.rc = 0, .basefd = -1, .max_size = max_size};
	c.name = src.kind == CP_SESSION ? src.name : dst.name;
	int rc = cli_conn_open("cp", label, spath, host, &c.conn);
	if (rc)
		return rc;
	rc = src.kind == CP_SESSION ? cp_out(&c, src.path, &dst) : cp_in(&c, &src, dst.path);
	int status = rc < 0 ? (c.rc ? c.rc : CLI_EXIT_FAILED) : CLI_EXIT_OK;
	cp_free(&c);
	return status;
}
