/*
 * cp_path.c - the pure parts of `ptybox cp` and `run --put/--get` (cp_path.h):
 * kept apart from the I/O in cli_cp.c so that unit tests can drive each rule,
 * above all the one that keeps a session's names inside the host's DST.
 */
#include "cp_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server.h"

int cp_parse_side(const char *arg, struct cp_side *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!arg[0]) {
		snprintf(err, errlen, "an empty path");
		return -EINVAL;
	}
	if (strcmp(arg, "-") == 0) {
		out->kind = CP_STDIO;
		out->path = arg;
		return 0;
	}
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0;
	if (!colon || n == 0 || memchr(arg, '/', n)) {
		out->kind = CP_HOST;
		out->path = arg;
		return 0;
	}
	const char *why = server_name_invalid(arg, n);
	if (why) {
		snprintf(err, errlen,
			 "%s: '%.*s' cannot name a session (%s; a host path with ':' "
			 "can be written ./%s)",
			 arg, (int)(n > 80 ? 80 : n), arg, why, arg);
		return -EINVAL;
	}
	out->kind = CP_SESSION;
	memcpy(out->name, arg, n);
	out->name[n] = '\0';
	out->path = colon[1] ? colon + 1 : ".";
	return 0;
}

const char *cp_basename(const char *path, size_t *len)
{
	size_t end = strlen(path);
	while (end > 0 && path[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	*len = end - start;
	return path + start;
}

bool cp_ends_slash(const char *path)
{
	size_t n = strlen(path);
	return n > 0 && path[n - 1] == '/';
}

bool cp_basename_is_contents(const char *path)
{
	size_t n;
	const char *b = cp_basename(path, &n);
	return n == 0 || (n == 1 && b[0] == '.') || (n == 2 && b[0] == '.' && b[1] == '.');
}

int cp_join(const char *dir, const char *name, size_t namelen, char *out, size_t outlen)
{
	size_t d = strlen(dir);
	while (d > 1 && dir[d - 1] == '/')
		d--;
	bool slash = d > 0 && !(d == 1 && dir[0] == '/');
	if (d + slash + namelen + 1 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, dir, d);
	if (slash)
		out[d++] = '/';
	memcpy(out + d, name, namelen);
	out[d + namelen] = '\0';
	return 0;
}

int cp_dest_path(const char *dst, bool into_dir, const char *src, char *out, size_t outlen)
{
	if (into_dir && !cp_basename_is_contents(src)) {
		size_t n;
		const char *b = cp_basename(src, &n);
		return cp_join(dst, b, n, out, outlen);
	}
	size_t n = strlen(dst);
	if (n + 1 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, dst, n + 1);
	return 0;
}

const char *cp_unsafe_name(const char *name, size_t len)
{
	if (len == 0)
		return "an empty name";
	if (len > 4096)
		return "longer than 4096 bytes";
	if (memchr(name, '\0', len))
		return "a NUL in the name";
	if (name[0] == '/')
		return "an absolute path";
	for (size_t i = 0; i <= len;) {
		size_t j = i;
		while (j < len && name[j] != '/')
			j++;
		size_t c = j - i;
		if (c == 0)
			return "an empty component";
		if (c == 2 && name[i] == '.' && name[i + 1] == '.')
			return "a '..' component";
		if (c == 1 && name[i] == '.')
			return "a '.' component";
		i = j + 1;
	}
	return NULL;
}

static const struct {
	const char *name;
	int code;
} cp_errnos[] = {
	{"ENOENT", ENOENT},	  {"EACCES", EACCES},
	{"EPERM", EPERM},	  {"EISDIR", EISDIR},
	{"ENOTDIR", ENOTDIR},	  {"ENOSPC", ENOSPC},
	{"EROFS", EROFS},	  {"EEXIST", EEXIST},
	{"ENOTEMPTY", ENOTEMPTY}, {"ENAMETOOLONG", ENAMETOOLONG},
	{"ELOOP", ELOOP},	  {"EDQUOT", EDQUOT},
	{"EMFILE", EMFILE},	  {"ETXTBSY", ETXTBSY},
	{"EBUSY", EBUSY},
};

int cp_errno_by_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(cp_errnos) / sizeof(cp_errnos[0]); i++)
		if (strcmp(cp_errnos[i].name, name) == 0)
			return cp_errnos[i].code;
	return 0;
}

const char *cp_reason(const char *errno_name, const char *message, const char *op, char *buf,
		      size_t buflen)
{
	int e = cp_errno_by_name(errno_name);
	if (e) {
		snprintf(buf, buflen, "%s", strerror(e));
		return buf;
	}
	if (!message || !message[0]) {
		snprintf(buf, buflen, "%s", errno_name ? errno_name : "failed");
		return buf;
	}
	size_t n = op ? strlen(op) : 0;
	if (n && strncmp(message, op, n) == 0 && message[n] == ':' && message[n + 1] == ' ')
		message += n + 2;
	snprintf(buf, buflen, "%s", message);
	return buf;
}

/* n bytes in MB (10^6: as the rates are said) with one decimal. */
static void cp_mb(char *buf, size_t len, uint64_t n)
{
	snprintf(buf, len, "%.1f MB", (double)n / 1e6);
}

size_t cp_progress_text(char *buf, size_t buflen, uint64_t done, uint64_t total, double secs)
{
	char d[32], t[32], rate[32];
	cp_mb(d, sizeof(d), done);
	if (secs > 0.05)
		snprintf(rate, sizeof(rate), "%.1f MB/s", (double)done / 1e6 / secs);
	else
		snprintf(rate, sizeof(rate), "- MB/s");
	int n;
	if (total) {
		cp_mb(t, sizeof(t), total);
		unsigned pct = done >= total ? 100 : (unsigned)((double)done * 100 / (double)total);
		n = snprintf(buf, buflen, "%s / %s  %3u%%  %s", d, t, pct, rate);
	} else {
		n = snprintf(buf, buflen, "%s  %s", d, rate);
	}
	return n < 0 ? 0 : (size_t)n >= buflen ? buflen - 1 : (size_t)n;
}
