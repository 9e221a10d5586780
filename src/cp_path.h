/*
 * cp_path.h - the pure parts of `ptybox cp` and `run --put/--get`: which side
 * of a copy is a session's (NAME:PATH), what a copy's destination is called,
 * which names from a session's listing may be written under a host folder,
 * a far side's error in words, and the progress bar's text. No I/O.
 */
#ifndef PTYBOX_CP_PATH_H
#define PTYBOX_CP_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A session's name is at most this long (SERVER_NAME_MAX). */
#define CP_NAME_MAX 64

enum cp_kind {
	CP_HOST,    /* a path on this machine */
	CP_SESSION, /* NAME:PATH */
	CP_STDIO,   /* "-": standard input (SRC) or output (DST) */
};

struct cp_side {
	enum cp_kind kind;
	char name[CP_NAME_MAX + 1]; /* CP_SESSION: the session */
	const char *path;	    /* the path (into the argument); "." for "NAME:" */
};

/* arg as one side of cp: "-", NAME:PATH when what comes before the first ':'
 * holds no '/' (a host path with ':' is written ./a:b), else a host path.
 * 0, or -EINVAL with why in err (an empty argument, a NAME no session could
 * have). */
int cp_parse_side(const char *arg, struct cp_side *out, char *err, size_t errlen);

/* The last component of path, trailing '/'s ignored: *len bytes from the
 * returned pointer ("" for "/" or ""). */
const char *cp_basename(const char *path, size_t *len);

/* Whether path ends in '/' (a folder is meant: cp puts the source inside). */
bool cp_ends_slash(const char *path);

/* Whether a source's basename names its folder's contents rather than the
 * folder (".", "..", "/"): then a copy into a folder copies what is in it. */
bool cp_basename_is_contents(const char *path);

/* dir + "/" + name (one '/' between, none doubled), into out. 0, or
 * -ENAMETOOLONG. */
int cp_join(const char *dir, const char *name, size_t namelen, char *out, size_t outlen);

/* Where a copy of src goes: into dst (dst/basename(src)) when into_dir (dst
 * is an existing folder or ends in '/') and src's basename names a thing,
 * else dst itself. 0, or -ENAMETOOLONG. */
int cp_dest_path(const char *dst, bool into_dir, const char *src, char *out, size_t outlen);

/* Whether a name from a session's recursive listing ("a/b.txt") may be
 * written under a host folder: NULL, or why not (absolute, a ".." or "."
 * component, an empty component, a NUL, longer than 4096 bytes). The
 * session's code makes these names: they must not reach outside DST. */
const char *cp_unsafe_name(const char *name, size_t len);

/* A far side's error in a few words: strerror's for the errnos whose text
 * says it all (ENOENT, EACCES, EISDIR, ENOSPC...), else the server's own
 * message without its "OP: " in front. Into buf; returns buf. */
const char *cp_reason(const char *errno_name, const char *message, const char *op, char *buf,
		      size_t buflen);

/* The errno called name ("ENOENT"), or 0 when it is not one of those
 * cp_reason knows. */
int cp_errno_by_name(const char *name);

/* The progress bar's line, without \r: "12.6 MB / 20.0 MB  63%  31.4 MB/s"
 * (total 0: unknown, "12.6 MB  31.4 MB/s"). secs: since the start. */
size_t cp_progress_text(char *buf, size_t buflen, uint64_t done, uint64_t total, double secs);

#endif
