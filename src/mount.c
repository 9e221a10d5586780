/*
 * mount.c - the values of --mount, --workdir and --wheels.
 *
 * A mount is "HOST_PATH:SANDBOX_PATH[:ro|:rw]", split at its last colons so
 * that a host path may hold one. The sandbox side is checked here without
 * I/O: what the sandbox builds itself (its system folders, /proc, /dev, /etc,
 * /tmp, /run/ptybox) cannot be mounted over, nor can a folder above one of
 * them, which would hide it. The host side is resolved by mount_check_host,
 * and again by the sandbox's plan when a sandbox starts (sandbox_plan.c).
 */
#define _GNU_SOURCE
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What the sandbox provides: mounting on, below or above one is refused. */
static const char *const mount_reserved[] = {
	"/usr",	   "/bin", "/sbin", "/lib", "/lib64", "/lib32",
	"/libx32", "/etc", "/proc", "/dev", "/sys",   "/run/ptybox",
};

/* Whether a is b or a folder below b. */
static bool mount_under(const char *a, const char *b)
{
	size_t n = strlen(b);
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

bool mount_path_ok(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n;
	}
	return true;
}

/* path (absolute, no "..") without "//", "." and a trailing "/" into out. */
static void mount_normalise(const char *path, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n && !(n == 1 && p[0] == '.') && o + n + 2 < cap) {
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
}

int mount_parse(const char *spec, struct mount_spec *m, char *err, size_t errlen)
{
	static const char want[] = "expected HOST_PATH:SANDBOX_PATH[:ro|:rw]";
	size_t len = strlen(spec);
	const char *colon = strrchr(spec, ':');

	memset(m, 0, sizeof(*m));
	if (!colon) {
		snprintf(err, errlen, "%s", want);
		return -EINVAL;
	}
	bool suffix = strcmp(colon + 1, "ro") == 0 || strcmp(colon + 1, "rw") == 0;
	if (colon[1] != '/' && (suffix || memrchr(spec, ':', (size_t)(colon - spec)))) {
		if (!suffix) {
			snprintf(err, errlen, "'%s': expected :ro or :rw at the end", colon + 1);
			return -EINVAL;
		}
		m->rw = colon[2] == 'w';
		len = (size_t)(colon - spec);
		colon = memrchr(spec, ':', len);
		if (!colon) {
			snprintf(err, errlen, "%s", want);
			return -EINVAL;
		}
	}
	size_t hlen = (size_t)(colon - spec), ilen = len - hlen - 1;
	if (!hlen || !ilen) {
		snprintf(err, errlen, "%s", want);
		return -EINVAL;
	}
	if (hlen >= sizeof(m->host) || ilen >= sizeof(m->inside)) {
		snprintf(err, errlen, "the path is too long");
		return -EINVAL;
	}
	memcpy(m->host, spec, hlen);
	char inside[PATH_MAX];
	memcpy(inside, colon + 1, ilen);
	inside[ilen] = '\0';
	if (inside[0] != '/') {
		snprintf(err, errlen, "the sandbox's path (%s) must be absolute", inside);
		return -EINVAL;
	}
	if (!mount_path_ok(inside)) {
		snprintf(err, errlen, "'..' is not allowed in the sandbox's path");
		return -EINVAL;
	}
	mount_normalise(inside, m->inside, sizeof(m->inside));
	if (strcmp(m->inside, "/") == 0 || strcmp(m->inside, "/tmp") == 0) {
		snprintf(err, errlen, "%s is the sandbox's own: mount below it (e.g. /tmp/data)",
			 m->inside);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(mount_reserved) / sizeof(mount_reserved[0]); i++) {
		const char *r = mount_reserved[i];
		if (mount_under(m->inside, r) || mount_under(r, m->inside)) {
			snprintf(err, errlen,
				 "the sandbox provides %s itself; mount elsewhere, e.g. at /data "
				 "or below /tmp",
				 r);
			return -EINVAL;
		}
	}
	return 0;
}

int mount_check_list(char *const *specs, bool wheels, char *err, size_t errlen)
{
	size_t count = 0, n = 0;
	char why[PATH_MAX + 128];
	int rc = -EINVAL;

	while (specs && specs[count])
		count++;
	if (count > MOUNT_MAX) {
		snprintf(err, errlen, "--mount: more than %d mounts", MOUNT_MAX);
		return -EINVAL;
	}
	if (!count)
		return 0;
	/* (8 KiB each: on the heap) */
	struct mount_spec *seen = malloc(count * sizeof(*seen));
	if (!seen) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (; n < count; n++) {
		const char *s = specs[n];
		if (mount_parse(s, &seen[n], why, sizeof(why)) < 0) {
			snprintf(err, errlen, "--mount %s: %s", s, why);
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(seen[i].inside, seen[n].inside) == 0) {
				snprintf(err, errlen, "--mount %s: %s is mounted twice", s,
					 seen[n].inside);
				goto out;
			}
		if (wheels && strcmp(seen[n].inside, MOUNT_WHEELS_PATH) == 0) {
			snprintf(err, errlen, "--mount %s: %s is where --wheels goes", s,
				 MOUNT_WHEELS_PATH);
			goto out;
		}
	}
	rc = 0;
out:
	free(seen);
	return rc;
}

int mount_check_host(const struct mount_spec *m, char *resolved, char *err, size_t errlen)
{
	if (!realpath(m->host, resolved)) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", m->host, strerror(e));
		return -e;
	}
	if (strcmp(resolved, "/") == 0) {
		snprintf(err, errlen, "%s: the host's whole file system cannot be mounted",
			 m->host);
		return -EINVAL;
	}
	struct stat st;
	if (stat(resolved, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", m->host, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: neither a folder nor a file", m->host);
		return -EINVAL;
	}
	return 0;
}
