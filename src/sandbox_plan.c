/*
 * sandbox_plan.c - the sandbox's plan, built in the parent before fork.
 *
 * Owns the steps (struct sandbox_op) that build the root filesystem, the
 * strings they point to (sb->strs, freed by sandbox_free), the child's
 * environment and the list of rlimits. sandbox_new calls sandbox_plan_env,
 * sandbox_plan and sandbox_plan_rlimit; sandbox_child.c walks the result in
 * order. Every path, file body and error label is formatted here, so that the
 * child needs no malloc and no stdio; the only I/O is looking at the host
 * paths the plan mirrors (lstat, readlink) and reading /etc/resolv.conf.
 *
 * Filesystem: a 1 MiB tmpfs root, read-only once built, with the host's system
 * folders and a few files of /etc bound read-only, the mounts below those
 * folders included (mount_setattr, Linux 5.12+, when a folder has any; without
 * it such a sandbox does not start); fresh /proc, /dev/pts, /dev/shm and /tmp.
 * Then the --mount binds and --wheels, parents before children, their mount
 * points made where they are missing (in the root or in /tmp).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox_internal.h"
#include "mount.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Helpers
 */

/* Formats a string owned by sb (freed by sandbox_free); NULL when out of memory. */
static char *sandbox_str(struct sandbox *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static char *sandbox_str(struct sandbox *sb, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (sb->nstrs == sb->capstrs) {
		size_t cap = sb->capstrs ? sb->capstrs * 2 : 64;
		char **n = realloc(sb->strs, cap * sizeof(*n));
		if (!n)
			return NULL;
		sb->strs = n;
		sb->capstrs = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		sb->strs[sb->nstrs++] = s;
	return s;
}

static struct sandbox_op *sandbox_op_add(struct sandbox *sb, enum sandbox_op_kind kind)
{
	struct sandbox_op *op;

	if (sb->nops == sb->capops) {
		size_t cap = sb->capops ? sb->capops * 2 : 64;
		struct sandbox_op *n = realloc(sb->ops, cap * sizeof(*n));
		if (!n)
			return NULL;
		sb->ops = n;
		sb->capops = cap;
	}
	op = &sb->ops[sb->nops++];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	return op;
}

/* ---------------------------------------------------------------------------
 * The plan
 */

static int sandbox_plan_mkdir(struct sandbox *sb, const char *inside, mode_t mode)
{
	struct sandbox_op *op = sandbox_op_add(sb, OP_MKDIR);

	if (!op || !(op->path = sandbox_str(sb, SB_STAGE "%s", inside)) ||
	    !(op->what = sandbox_str(sb, "mkdir %s", inside)))
		return -ENOMEM;
	op->mode = mode;
	return 0;
}

static int sandbox_plan_symlink(struct sandbox *sb, const char *target, const char *inside)
{
	struct sandbox_op *op = sandbox_op_add(sb, OP_SYMLINK);

	if (!op || !(op->src = sandbox_str(sb, "%s", target)) ||
	    !(op->path = sandbox_str(sb, SB_STAGE "%s", inside)) ||
	    !(op->what = sandbox_str(sb, "symlink %s -> %s", inside, target)))
		return -ENOMEM;
	return 0;
}

static int sandbox_plan_write(struct sandbox *sb, const char *inside, const char *body)
{
	struct sandbox_op *op = sandbox_op_add(sb, OP_WRITE);

	if (!op || !(op->path = sandbox_str(sb, SB_STAGE "%s", inside)) ||
	    !(op->data = sandbox_str(sb, "%s", body)) ||
	    !(op->what = sandbox_str(sb, "write %s", inside)))
		return -ENOMEM;
	op->len = strlen(body);
	op->mode = 0644;
	return 0;
}

static int sandbox_plan_mount(struct sandbox *sb, const char *fstype, const char *inside,
			      unsigned long flags, const char *data)
{
	struct sandbox_op *op = sandbox_op_add(sb, OP_MOUNT);

	if (!op || !(op->src = sandbox_str(sb, "%s", fstype)) ||
	    !(op->path = sandbox_str(sb, SB_STAGE "%s", inside)) ||
	    (data && !(op->data = sandbox_str(sb, "%s", data))) ||
	    !(op->what =
		      sandbox_str(sb, "mount %s on %s", fstype, *inside ? inside : "/ (new root)")))
		return -ENOMEM;
	op->flags = flags;
	return 0;
}

/* Mirrors host path `host` at the same place inside: a symlink is recreated, a
 * directory or file is bound and remounted with `flags`; absent paths are skipped. */
static int sandbox_plan_mirror(struct sandbox *sb, const char *host, unsigned long flags)
{
	struct stat st;
	struct sandbox_op *op;

	if (lstat(host, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(host, target, sizeof(target) - 1);
		if (n <= 0)
			return 0;
		target[n] = '\0';
		return sandbox_plan_symlink(sb, target, host);
	}
	if (S_ISDIR(st.st_mode)) {
		if (sandbox_plan_mkdir(sb, host, 0755) < 0)
			return -ENOMEM;
	} else {
		op = sandbox_op_add(sb, OP_TOUCH);
		if (!op || !(op->path = sandbox_str(sb, SB_STAGE "%s", host)) ||
		    !(op->what = sandbox_str(sb, "create %s", host)))
			return -ENOMEM;
		op->mode = 0644;
	}
	op = sandbox_op_add(sb, OP_BIND);
	if (!op || !(op->src = sandbox_str(sb, "%s", host)) ||
	    !(op->path = sandbox_str(sb, SB_STAGE "%s", host)) ||
	    !(op->what = sandbox_str(sb, "bind %s", host)) ||
	    !(op->what2 = sandbox_str(sb, "remount %s%s", host,
				      (flags & MS_RDONLY) ? " read-only" : "")))
		return -ENOMEM;
	op->flags = flags;
	return 0;
}

/* One of the user's binds, resolved. */
struct sandbox_plan_bind {
	char inside[PATH_MAX];
	char host[PATH_MAX];
	bool rw, dir;
};

static int sandbox_plan_bind_cmp(const void *a, const void *b)
{
	/* a parent sorts before what is below it: its prefix */
	return strcmp(((const struct sandbox_plan_bind *)a)->inside,
		      ((const struct sandbox_plan_bind *)b)->inside);
}

static int sandbox_plan_mkpoint(struct sandbox *sb, const char *inside, bool dir)
{
	struct sandbox_op *op = sandbox_op_add(sb, OP_MKPOINT);

	if (!op || !(op->path = sandbox_str(sb, SB_STAGE "%s", inside)) ||
	    !(op->what = sandbox_str(sb, "make the mount point %s", inside)))
		return -ENOMEM;
	op->mode = dir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
	return 0;
}

/* The mount point of b and its missing parents, then the bind. */
static int sandbox_plan_bind_host(struct sandbox *sb, const struct sandbox_plan_bind *b)
{
	char parent[PATH_MAX];
	struct sandbox_op *op;

	for (const char *p = strchr(b->inside + 1, '/'); p; p = strchr(p + 1, '/')) {
		snprintf(parent, sizeof(parent), "%.*s", (int)(p - b->inside), b->inside);
		if (strcmp(parent, "/tmp") != 0 && sandbox_plan_mkpoint(sb, parent, true) < 0)
			return -ENOMEM;
	}
	if (sandbox_plan_mkpoint(sb, b->inside, b->dir) < 0)
		return -ENOMEM;
	op = sandbox_op_add(sb, OP_BIND_HOST);
	if (!op || !(op->src = sandbox_str(sb, "%s", b->host)) ||
	    !(op->path = sandbox_str(sb, SB_STAGE "%s", b->inside)) ||
	    !(op->what = sandbox_str(sb, "mount %s", b->host)) ||
	    !(op->what2 = sandbox_str(sb, "remount %s%s", b->inside, b->rw ? "" : " read-only")))
		return -ENOMEM;
	op->flags = MS_NOSUID | MS_NODEV | (b->rw ? 0 : MS_RDONLY);
	op->fd = -1;
	return 0;
}

/* --mount and --wheels: resolved on the host now (the child only opens them),
 * sorted so that a mount inside another one comes after it. */
static int sandbox_plan_binds(struct sandbox *sb, char *err, size_t errlen)
{
	const struct sandbox_options *o = &sb->opts;
	size_t n = 0, nm = 0, cap;
	struct mount_spec m;
	int rc = 0;

	while (o->mounts && o->mounts[nm])
		nm++;
	cap = nm + (o->wheels ? 1 : 0);
	if (!cap)
		return 0;
	rc = mount_check_list(o->mounts, o->wheels != NULL, err, errlen);
	if (rc < 0)
		return rc;
	struct sandbox_plan_bind *b = calloc(cap, sizeof(*b));
	if (!b) {
		sandbox_errf(err, errlen, "sandbox plan: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (size_t i = 0; i < cap; i++) {
		char why[PATH_MAX + 128];
		bool wheels = i == nm;
		struct stat st;
		if (wheels) {
			memset(&m, 0, sizeof(m));
			snprintf(m.host, sizeof(m.host), "%s", o->wheels);
			snprintf(m.inside, sizeof(m.inside), "%s", MOUNT_WHEELS_PATH);
		} else if ((rc = mount_parse(o->mounts[i], &m, why, sizeof(why))) < 0) {
			sandbox_errf(err, errlen, "--mount %s: %s", o->mounts[i], why);
			goto out;
		}
		if ((rc = mount_check_host(&m, b[n].host, why, sizeof(why))) < 0) {
			sandbox_errf(err, errlen, "%s %s", wheels ? "--wheels" : "--mount", why);
			goto out;
		}
		if (stat(b[n].host, &st) < 0) {
			rc = -errno;
			sandbox_errf(err, errlen, "%s %s: %s", wheels ? "--wheels" : "--mount",
				     m.host, strerror(-rc));
			goto out;
		}
		memcpy(b[n].inside, m.inside, sizeof(m.inside));
		b[n].rw = m.rw;
		b[n].dir = S_ISDIR(st.st_mode);
		n++;
	}
	qsort(b, n, sizeof(*b), sandbox_plan_bind_cmp);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = sandbox_plan_bind_host(sb, &b[i]);
	if (rc < 0)
		sandbox_errf(err, errlen, "sandbox plan: %s", strerror(-rc));
out:
	free(b);
	return rc;
}

int sandbox_plan(struct sandbox *sb, char *err, size_t errlen)
{
	static const char *const sys_dirs[] = {"/usr",	 "/bin",   "/sbin",  "/lib",
					       "/lib64", "/lib32", "/libx32"};
	/* Read-only configuration the runtime needs; nothing with secrets. */
	static const char *const etc[] = {
		"/etc/ld.so.cache",   "/etc/ld.so.conf",      "/etc/ld.so.conf.d",
		"/etc/nsswitch.conf", "/etc/localtime",	      "/etc/alternatives",
		"/etc/ssl/certs",     "/etc/ssl/openssl.cnf", "/etc/python3",
		"/etc/python3.11",    "/etc/python3.12",      "/etc/python3.13",
		"/etc/mime.types",    "/etc/protocols",	      "/etc/services",
		"/etc/gai.conf",      "/etc/host.conf",	      "/etc/matplotlibrc",
		"/etc/fonts",
	};
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	const unsigned long ro = MS_RDONLY | MS_NOSUID | MS_NODEV;
	const struct sandbox_options *o = &sb->opts;
	char data[128], path[64];
	size_t i;

#define TRY(x)                                                                                     \
	do {                                                                                       \
		if ((x) < 0) {                                                                     \
			sandbox_errf(err, errlen, "sandbox plan: %s", strerror(ENOMEM));           \
			return -ENOMEM;                                                            \
		}                                                                                  \
	} while (0)

	TRY(sandbox_plan_mount(sb, "tmpfs", "", MS_NOSUID | MS_NODEV,
			       "mode=0755,size=1m,nr_inodes=1024"));
	for (i = 0; i < sizeof(sys_dirs) / sizeof(sys_dirs[0]); i++)
		TRY(sandbox_plan_mirror(sb, sys_dirs[i], ro));

	TRY(sandbox_plan_mkdir(sb, "/etc", 0755));
	TRY(sandbox_plan_mkdir(sb, "/etc/ssl", 0755));
	for (i = 0; i < sizeof(etc) / sizeof(etc[0]); i++)
		TRY(sandbox_plan_mirror(sb, etc[i], ro));
	TRY(sandbox_plan_write(sb, "/etc/passwd",
			       "root:x:0:0:root:/root:/usr/sbin/nologin\n"
			       "sandbox:x:1000:1000:sandbox:/tmp:/bin/sh\n"
			       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"));
	TRY(sandbox_plan_write(sb, "/etc/group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"));
	TRY(sandbox_plan_write(sb, "/etc/hostname", SB_HOSTNAME "\n"));
	TRY(sandbox_plan_write(sb, "/etc/hosts",
			       "127.0.0.1\tlocalhost\n127.0.1.1\t" SB_HOSTNAME "\n"
			       "::1\tlocalhost ip6-localhost ip6-loopback\n"));
	if (o->net) {
		char resolv[4096];
		if (sandbox_file_read("/etc/resolv.conf", resolv, sizeof(resolv)) > 0)
			TRY(sandbox_plan_write(sb, "/etc/resolv.conf", resolv));
	}

	TRY(sandbox_plan_mkdir(sb, "/proc", 0555));
	TRY(sandbox_plan_mount(sb, "proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));

	TRY(sandbox_plan_mkdir(sb, "/dev", 0755));
	for (i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		snprintf(path, sizeof(path), "/dev/%s", devs[i]);
		TRY(sandbox_plan_mirror(sb, path, MS_NOSUID | MS_NOEXEC));
	}
	TRY(sandbox_plan_mkdir(sb, "/dev/pts", 0755));
	TRY(sandbox_plan_mount(sb, "devpts", "/dev/pts", MS_NOSUID | MS_NOEXEC,
			       "newinstance,ptmxmode=0666,mode=0620"));
	TRY(sandbox_plan_symlink(sb, "pts/ptmx", "/dev/ptmx"));
	TRY(sandbox_plan_mkdir(sb, "/dev/shm", 01777));
	{
		uint64_t shm = o->tmp_size && o->tmp_size < (64u << 20) ? o->tmp_size : (64u << 20);
		snprintf(data, sizeof(data), "mode=1777,size=%llu,nr_inodes=1024",
			 (unsigned long long)shm);
		TRY(sandbox_plan_mount(sb, "tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, data));
	}
	TRY(sandbox_plan_symlink(sb, "/proc/self/fd", "/dev/fd"));
	TRY(sandbox_plan_symlink(sb, "/proc/self/fd/0", "/dev/stdin"));
	TRY(sandbox_plan_symlink(sb, "/proc/self/fd/1", "/dev/stdout"));
	TRY(sandbox_plan_symlink(sb, "/proc/self/fd/2", "/dev/stderr"));

	TRY(sandbox_plan_mkdir(sb, "/tmp", 01777));
	if (o->tmp_size) {
		/* one inode per 8 KiB, so many tiny files cannot pin unbounded kernel memory */
		uint64_t inodes = o->tmp_size / 8192;
		inodes = inodes < 1024 ? 1024 : inodes > (1u << 20) ? (1u << 20) : inodes;
		snprintf(data, sizeof(data), "mode=1777,size=%llu,nr_inodes=%llu",
			 (unsigned long long)o->tmp_size, (unsigned long long)inodes);
	} else {
		snprintf(data, sizeof(data), "mode=1777");
	}
	TRY(sandbox_plan_mount(sb, "tmpfs", "/tmp", MS_NOSUID | MS_NODEV, data));
	TRY(!(sb->workdir = sandbox_str(sb, "%s", o->workdir ? o->workdir : MOUNT_WORKDIR_DEFAULT))
		    ? -1
		    : 0);
#undef TRY
	return sandbox_plan_binds(sb, err, errlen);
}

int sandbox_plan_join(struct sandbox *sb)
{
	const struct sandbox_options *o = &sb->opts;

	sb->workdir = sandbox_str(sb, "%s", o->workdir ? o->workdir : MOUNT_WORKDIR_DEFAULT);
	return sb->workdir ? 0 : -ENOMEM;
}

void sandbox_plan_rlimit(struct sandbox *sb, int resource, uint64_t value, const char *what)
{
	sb->rl[sb->nrl].resource = resource;
	sb->rl[sb->nrl].value = (rlim_t)value;
	sb->rl[sb->nrl].what = what;
	sb->nrl++;
}

int sandbox_plan_env(struct sandbox *sb)
{
	size_t n = 0, i;

	while (sb->opts.env && sb->opts.env[n])
		n++;
	sb->env = calloc(n + 1, sizeof(*sb->env));
	if (!sb->env)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		sb->env[i] = sandbox_str(sb, "%s", sb->opts.env[i]);
		if (!sb->env[i])
			return -ENOMEM;
		if (!strncmp(sb->env[i], "PATH=", 5))
			sb->path = sb->env[i] + 5;
	}
	if (!sb->path)
		sb->path = "/usr/local/bin:/usr/bin:/bin";
	sb->opts.env = sb->env;
	return 0;
}
