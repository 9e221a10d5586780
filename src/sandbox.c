/*
 * sandbox.c - the embedded container behind `--via local`.
 *
 * Owns everything between fork and the driver's exec: namespaces, the root
 * filesystem, identity, rlimits, cgroups and the seccomp filter. transport.c
 * calls sandbox_new before fork, sandbox_child_exec in the child (already the
 * PTY's session leader) and sandbox_after_fork in the parent.
 *
 * Shaped like bubblewrap: sandbox_new turns the options into a plan, a list of
 * mkdir/bind/mount/write steps whose paths, file bodies and error labels are
 * all formatted in advance, plus the compiled seccomp program and the session's
 * cgroups, created and limited. The child only walks the plan with
 * async-signal-safe calls (no malloc, no stdio, no libseccomp) and reports the
 * first failing step on err_fd as "step: reason", then _exit(125).
 *
 * Processes, as the host sees them:
 *
 *   ptybox
 *    └ outer child O   session leader of the PTY; stays in the host's namespaces:
 *      │               joins the cgroups, writes init's uid/gid maps (it is in
 *      │               the parent user namespace, so the parent never has to
 *      │               help and sandbox_after_fork never blocks), then waits and
 *      │               exits with init's status.
 *      └ init I        pid 1 of new user, mount, pid, net, ipc, uts and cgroup
 *        │             namespaces: builds the root, pivots, drops every
 *        │             capability, reaps, exits with the driver's status
 *        │             (signal death: 128+sig), which takes the whole pid
 *        │             namespace down with it.
 *        └ driver D    pid 2: own process group in the terminal's foreground, so
 *                      ^C reaches it and its children but neither I nor O;
 *                      rlimits, no_new_privs, seccomp, exec. Started vfork-style
 *                      (shares I's memory until its exec; I waits meanwhile).
 *
 * Each hop sets PR_SET_PDEATHSIG(SIGKILL) after its last credential change
 * (commit_creds clears it): killing O kills I, and the kernel kills every
 * process of a pid namespace whose init dies.
 *
 * Filesystem: a 1 MiB tmpfs root, read-only once built, with the host's system
 * folders and a few files of /etc bound read-only, the mounts below those
 * folders included (mount_setattr, Linux 5.12+, when a folder has any; without
 * it such a sandbox does not start); fresh /proc, /dev/pts, /dev/shm and /tmp.
 *
 * Identity: inside uid/gid 1000 ("sandbox") is the only mapped id. As host root
 * it maps to nobody/nogroup (65534) and supplementary groups are dropped first;
 * otherwise to the caller's own uid/gid. Inside uid 0 does not exist, so
 * setresuid(1000) keeps the namespace capabilities that the mounts need
 * (the kernel's setuid fixup only clears them when leaving the namespace's
 * uid 0); they are dropped explicitly before the driver is forked.
 *
 * Two concepts live in files of their own: the seccomp filter and its errno
 * table in sandbox_seccomp.c, the cgroups (v1 or v2, limits, freeze/kill,
 * removal) in sandbox_cgroup.c; sandbox_internal.h is what they share.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SB_ID		1000   /* uid and gid inside */
#define SB_NOBODY	65534  /* what SB_ID is on the host when ptybox runs as root */
#define SB_STAGE	"/tmp" /* where the new root is assembled (private mount ns) */
#define SB_HOSTNAME	"ptybox"
#define SB_EXIT_SETUP	125	     /* a set-up step failed; the reason is on err_fd */
#define SB_KILL_WAIT_MS 3000	     /* sandbox_kill_all: bound on waiting for the last process */
#define SB_DRIVER_STACK (256 * 1024) /* the driver's stack until its exec */

/* mount_setattr (Linux 5.12), for headers that predate it. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV  0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif

enum sandbox_op_kind {
	OP_MKDIR,   /* path, mode */
	OP_TOUCH,   /* path: an empty file for a file bind mount */
	OP_WRITE,   /* path, data, len */
	OP_SYMLINK, /* src (the target) at path */
	OP_BIND,    /* src onto path, then remount with flags (plus what the kernel locked),
		     * the mounts below it included */
	OP_MOUNT,   /* src (fstype) at path, flags, data */
};

struct sandbox_op {
	enum sandbox_op_kind kind;
	const char *src;
	const char *path;
	const char *data;
	size_t len;
	unsigned long flags;
	mode_t mode;
	const char *what;  /* error label: "bind /usr" */
	const char *what2; /* OP_BIND: label of the remount */
};

/* Shared with the outer child (MAP_SHARED before fork; exec drops it). */
struct sandbox_shared {
	pid_t init_pid; /* the namespace's init, host pid; 0 once the outer child reaped it */
};

struct sandbox_rlimit {
	int resource;
	rlim_t value;
	const char *what;
};

struct sandbox {
	struct sandbox_options opts;
	pid_t parent;
	bool root;
	unsigned long clone_flags;
	char uid_map[48], gid_map[48];
	struct sandbox_op *ops;
	size_t nops, capops;
	char **strs; /* every string the plan points to */
	size_t nstrs, capstrs;
	char **env;
	const char *path; /* PATH for argv[0] lookup, from env */
	struct sandbox_rlimit rl[5];
	size_t nrl;
	struct sock_fprog prog;
	struct sandbox_cgroups cgroups;
	struct sandbox_shared *shared;
	pid_t child;	 /* the outer child, from sandbox_after_fork */
	int child_pidfd; /* the same, immune to pid reuse once the caller has reaped it */
};

/* ---------------------------------------------------------------------------
 * Parent-side helpers
 */

void sandbox_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

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

ssize_t sandbox_file_read(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;

	if (fd < 0)
		return -errno;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

int64_t sandbox_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int sandbox_plan(struct sandbox *sb)
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
		if ((x) < 0)                                                                       \
			return -ENOMEM;                                                            \
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
#undef TRY
	return 0;
}

static void sandbox_plan_rlimit(struct sandbox *sb, int resource, uint64_t value, const char *what)
{
	sb->rl[sb->nrl].resource = resource;
	sb->rl[sb->nrl].value = (rlim_t)value;
	sb->rl[sb->nrl].what = what;
	sb->nrl++;
}

static int sandbox_plan_env(struct sandbox *sb)
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

int sandbox_new(const struct sandbox_options *opts, struct sandbox **out, char *err, size_t errlen)
{
	static int warned;
	struct sandbox *sb;
	int rc;

	*out = NULL;
	sb = calloc(1, sizeof(*sb));
	if (!sb) {
		sandbox_errf(err, errlen, "sandbox: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	sb->opts = *opts;
	sb->child_pidfd = -1;
	sb->parent = getpid();
	sb->root = geteuid() == 0;
	sb->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (!opts->net)
		sb->clone_flags |= CLONE_NEWNET;
	if (access("/proc/self/ns/cgroup", F_OK) == 0)
		sb->clone_flags |= CLONE_NEWCGROUP;
	snprintf(sb->uid_map, sizeof(sb->uid_map), "%d %ld 1\n", SB_ID,
		 sb->root ? (long)SB_NOBODY : (long)geteuid());
	snprintf(sb->gid_map, sizeof(sb->gid_map), "%d %ld 1\n", SB_ID,
		 sb->root ? (long)SB_NOBODY : (long)getegid());

	sb->shared = mmap(NULL, sizeof(*sb->shared), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sb->shared == MAP_FAILED) {
		rc = -errno;
		sb->shared = NULL;
		sandbox_errf(err, errlen, "sandbox: mmap: %s", strerror(-rc));
		goto fail;
	}

	rc = sandbox_seccomp_program(&sb->prog, err, errlen);
	if (rc < 0)
		goto fail;

	rc = sandbox_plan_env(sb);
	if (rc == 0)
		rc = sandbox_plan(sb);
	if (rc < 0) {
		sandbox_errf(err, errlen, "sandbox plan: %s", strerror(-rc));
		goto fail;
	}
	sandbox_plan_rlimit(sb, RLIMIT_CORE, 0, "setrlimit RLIMIT_CORE");
	if (opts->memory)
		sandbox_plan_rlimit(sb, RLIMIT_AS, opts->memory, "setrlimit RLIMIT_AS");
	if (opts->max_file_size)
		sandbox_plan_rlimit(sb, RLIMIT_FSIZE, opts->max_file_size,
				    "setrlimit RLIMIT_FSIZE");
	if (opts->nofile)
		sandbox_plan_rlimit(sb, RLIMIT_NOFILE, opts->nofile, "setrlimit RLIMIT_NOFILE");
	if (opts->pids) /* counted per user namespace (Linux 5.14+); + init */
		sandbox_plan_rlimit(sb, RLIMIT_NPROC, (uint64_t)opts->pids + 1,
				    "setrlimit RLIMIT_NPROC");

	if (sb->root) {
		rc = sandbox_cgroup_setup(&sb->cgroups, &sb->opts, sb->parent, err, errlen);
		if (rc < 0)
			goto fail;
	} else if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
		fprintf(stderr,
			"ptybox: not root: running without cgroup limits (memory, pids, cpu)\n");
	}
	*out = sb;
	return 0;
fail:
	sandbox_free(sb);
	return rc;
}

int sandbox_after_fork(struct sandbox *sb, pid_t child, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	/* Nothing to wait for: the outer child joins the cgroups before it forks and
	 * writes init's maps itself. Only hold it by a pidfd, so that sandbox_kill_all
	 * stays right after the caller has reaped it (the pid may be someone else's by then). */
	sb->child = child;
	if (sb->child_pidfd < 0)
		sb->child_pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	return 0;
}

/* ---------------------------------------------------------------------------
 * Child side: async-signal-safe only. No malloc, no stdio, no locks.
 */

/* Ignored by the outer child (and so by init) until the driver puts them back to
 * default: a ^C before the driver owns the foreground must not take down the session
 * leader, and the hang-up when the master closes must not kill it before it has
 * passed init's status on (it dies by PDEATHSIG or sandbox_kill_all anyway). */
static const int sandbox_held_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};

static size_t sandbox_cat(char *buf, size_t cap, size_t at, const char *s)
{
	while (s && *s && at + 1 < cap)
		buf[at++] = *s++;
	return at;
}

static char *sandbox_utoa(unsigned long v, char *end)
{
	*--end = '\0';
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/* "what arg: reason\n" on err_fd, then _exit. strerrordesc_np reads a static
 * table: no locale, no allocation. */
static void sandbox_fail(int err_fd, const char *what, const char *arg, int errnum)
	__attribute__((noreturn));
static void sandbox_fail(int err_fd, const char *what, const char *arg, int errnum)
{
	char buf[PATH_MAX + 256], num[24];
	const char *desc = strerrordesc_np(errnum);
	size_t n = sandbox_cat(buf, sizeof(buf) - 1, 0, what);

	if (arg) {
		n = sandbox_cat(buf, sizeof(buf) - 1, n, " ");
		n = sandbox_cat(buf, sizeof(buf) - 1, n, arg);
	}
	n = sandbox_cat(buf, sizeof(buf) - 1, n, ": ");
	if (desc) {
		n = sandbox_cat(buf, sizeof(buf) - 1, n, desc);
	} else {
		n = sandbox_cat(buf, sizeof(buf) - 1, n, "error ");
		n = sandbox_cat(buf, sizeof(buf) - 1, n,
				sandbox_utoa((unsigned long)errnum, num + sizeof(num)));
	}
	buf[n++] = '\n';
	if (err_fd >= 0)
		(void)!write(err_fd, buf, n);
	_exit(SB_EXIT_SETUP);
}

/* The outer child fails after init exists: init must not outlive it unreaped. */
static void sandbox_fail_reap(int err_fd, const char *what, const char *arg, int errnum, pid_t init)
	__attribute__((noreturn));
static void sandbox_fail_reap(int err_fd, const char *what, const char *arg, int errnum, pid_t init)
{
	kill(init, SIGKILL);
	while (waitpid(init, NULL, 0) < 0 && errno == EINTR)
		;
	sandbox_fail(err_fd, what, arg, errnum);
}

static int sandbox_write_all(const char *path, const char *data, size_t len, int flags, mode_t mode)
{
	int fd = open(path, flags | O_WRONLY | O_CLOEXEC, mode);
	int rc = 0;

	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -1;
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	if (rc < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

static pid_t sandbox_clone(unsigned long flags)
{
	/* The raw system call: fork-like (no new stack), no atfork handlers, and the only
	 * way to ask for the namespaces at once. */
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* Mount flags that a bind inherits and a remount must repeat (the kernel locks
 * atime flags and friends in a user namespace). */
static unsigned long sandbox_locked_flags(const char *path)
{
	struct statfs st;
	unsigned long f = 0;

	if (statfs(path, &st) < 0)
		return 0;
	if (st.f_flags & ST_RDONLY)
		f |= MS_RDONLY;
	if (st.f_flags & ST_NOSUID)
		f |= MS_NOSUID;
	if (st.f_flags & ST_NODEV)
		f |= MS_NODEV;
	if (st.f_flags & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (st.f_flags & ST_NOATIME)
		f |= MS_NOATIME;
	if (st.f_flags & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (st.f_flags & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* Gives every mount below path (not path itself) the MS_RDONLY, MS_NOSUID, MS_NODEV
 * and MS_NOEXEC of flags; 0 or -1 with errno. */
static int sandbox_remount_below(const char *path, unsigned long flags)
{
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = {0, 0, 0, 0};

	if (flags & MS_RDONLY)
		attr.attr_set |= MOUNT_ATTR_RDONLY;
	if (flags & MS_NOSUID)
		attr.attr_set |= MOUNT_ATTR_NOSUID;
	if (flags & MS_NODEV)
		attr.attr_set |= MOUNT_ATTR_NODEV;
	if (flags & MS_NOEXEC)
		attr.attr_set |= MOUNT_ATTR_NOEXEC;
	/* AT_RECURSIVE: path and every mount below it (path has them already). */
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &attr, sizeof(attr));
}

static void sandbox_run_op(const struct sandbox_op *op, int err_fd)
{
	bool rec = false;
	int fd;

	switch (op->kind) {
	case OP_MKDIR:
		if (mkdir(op->path, op->mode) < 0 && errno != EEXIST)
			sandbox_fail(err_fd, op->what, NULL, errno);
		if (chmod(op->path, op->mode) < 0) /* past the umask: /tmp wants 1777 */
			sandbox_fail(err_fd, op->what, NULL, errno);
		break;
	case OP_TOUCH:
		fd = open(op->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op->mode);
		if (fd < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		close(fd);
		break;
	case OP_WRITE:
		if (sandbox_write_all(op->path, op->data, op->len, O_CREAT | O_EXCL, op->mode) < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		break;
	case OP_SYMLINK:
		if (symlink(op->src, op->path) < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		break;
	case OP_BIND:
		/* Non-recursive where the kernel allows it, so mounts under a bound folder
		 * stay out; but a tree with locked submounts (all of the host's, in our
		 * user namespace) can only be bound whole. */
		if (mount(op->src, op->path, NULL, MS_BIND, NULL) < 0) {
			if (errno != EINVAL ||
			    mount(op->src, op->path, NULL, MS_BIND | MS_REC, NULL) < 0)
				sandbox_fail(err_fd, op->what, NULL, errno);
			rec = true;
		}
		if (mount(NULL, op->path, NULL,
			  MS_REMOUNT | MS_BIND | op->flags | sandbox_locked_flags(op->path),
			  NULL) < 0)
			sandbox_fail(err_fd, op->what2, NULL, errno);
		/* A remount changes one mount: the ones it took along (a host's
		 * /usr/local...) would stay writable. Without mount_setattr the sandbox
		 * does not start rather than start with them so. */
		if (rec && sandbox_remount_below(op->path, op->flags) < 0)
			sandbox_fail(err_fd, op->what2, "(the mounts below)", errno);
		break;
	case OP_MOUNT:
		if (mount(op->src, op->path, op->src, op->flags, op->data) < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		break;
	}
}

static void sandbox_drop_caps(int err_fd)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	int cap;

	for (cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL)
			break; /* past the kernel's last capability */
		sandbox_fail(err_fd, "drop capability from the bounding set", NULL, errno);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		sandbox_fail(err_fd, "clear ambient capabilities", NULL, errno);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		sandbox_fail(err_fd, "capset", NULL, errno);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_NO_NEW_PRIVS", NULL, errno);
}

static void sandbox_loopback_up(int err_fd)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		sandbox_fail(err_fd, "bring up lo: socket", NULL, errno);
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		sandbox_fail(err_fd, "bring up lo", NULL, errno);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		sandbox_fail(err_fd, "bring up lo", NULL, errno);
	close(s);
}

static void sandbox_pivot(int err_fd)
{
	if (chdir(SB_STAGE) < 0)
		sandbox_fail(err_fd, "chdir", "to the new root", errno);
	/* pivot_root(".", ".") stacks the old root on the new one; detaching it
	 * leaves nothing of the host's mount table behind. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		sandbox_fail(err_fd, "pivot_root", NULL, errno);
	if (umount2(".", MNT_DETACH) < 0)
		sandbox_fail(err_fd, "detach the old root", NULL, errno);
	if (chdir("/") < 0)
		sandbox_fail(err_fd, "chdir", "/", errno);
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | sandbox_locked_flags("/"),
		  NULL) < 0)
		sandbox_fail(err_fd, "remount / read-only", NULL, errno);
	if (chdir("/tmp") < 0)
		sandbox_fail(err_fd, "chdir", "/tmp", errno);
}

static void sandbox_exec(const struct sandbox *sb, char *const argv[], int err_fd)
	__attribute__((noreturn));
static void sandbox_exec(const struct sandbox *sb, char *const argv[], int err_fd)
{
	char buf[PATH_MAX];
	const char *p = sb->path;
	int saved = ENOENT;

	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, sb->env);
		sandbox_fail(err_fd, "exec", argv[0], errno);
	}
	/* execvpe may allocate; this is its loop, on the stack. */
	for (;;) {
		size_t k = strcspn(p, ":"), n = 0;

		if (k == 0)
			n = sandbox_cat(buf, sizeof(buf), n, ".");
		else if (k < sizeof(buf) - 2) {
			memcpy(buf, p, k);
			n = k;
		}
		if (n) {
			n = sandbox_cat(buf, sizeof(buf), n, "/");
			n = sandbox_cat(buf, sizeof(buf), n, argv[0]);
			buf[n] = '\0';
			execve(buf, argv, sb->env);
			if (errno == EACCES)
				saved = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR)
				sandbox_fail(err_fd, "exec", buf, errno);
		}
		if (!p[k])
			break;
		p += k + 1;
	}
	sandbox_fail(err_fd, "exec", argv[0], saved);
}

/* pid 2: the driver. Its own foreground process group, limits, filter, exec. */
static void sandbox_driver(const struct sandbox *sb, char *const argv[], int err_fd)
	__attribute__((noreturn));
static void sandbox_driver(const struct sandbox *sb, char *const argv[], int err_fd)
{
	struct sigaction sa;
	sigset_t none;
	pid_t self;
	size_t i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_PDEATHSIG", NULL, errno);
	if (setpgid(0, 0) < 0)
		sandbox_fail(err_fd, "setpgid", NULL, errno);
	/* SIGTTOU is still ignored (from the outer child), so a background group may do this. */
	self = getpid();
	if (ioctl(0, TIOCSPGRP, &self) < 0 && errno != ENOTTY)
		sandbox_fail(err_fd, "tcsetpgrp", NULL, errno);
	umask(022);
	for (i = 0; i < sb->nrl; i++) {
		struct rlimit rl;
		if (getrlimit(sb->rl[i].resource, &rl) < 0)
			sandbox_fail(err_fd, sb->rl[i].what, NULL, errno);
		if (rl.rlim_max != RLIM_INFINITY && sb->rl[i].value > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max; /* cannot raise a hard limit; keep the host's */
		else
			rl.rlim_cur = rl.rlim_max = sb->rl[i].value;
		if (setrlimit(sb->rl[i].resource, &rl) < 0)
			sandbox_fail(err_fd, sb->rl[i].what, NULL, errno);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < sizeof(sandbox_held_signals) / sizeof(sandbox_held_signals[0]); i++)
		sigaction(sandbox_held_signals[i], &sa, NULL);
	/* An ignored SIGXFSZ survives exec: writes past RLIMIT_FSIZE fail with EFBIG. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGXFSZ, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_NO_NEW_PRIVS", NULL, errno);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sb->prog, 0, 0) < 0)
		sandbox_fail(err_fd, "seccomp", NULL, errno);
	sandbox_exec(sb, argv, err_fd);
}

struct sandbox_driver_args {
	const struct sandbox *sb;
	char *const *argv;
	int err_fd;
};

static int sandbox_driver_main(void *p)
{
	const struct sandbox_driver_args *a = p;

	sandbox_driver(a->sb, a->argv, a->err_fd);
}

/* Starts the driver the way posix_spawn does: sharing init's memory on a stack of
 * its own (CLONE_VM) while init waits (CLONE_VFORK) until it has exec'd or failed.
 * A fork would copy init's page tables, a copy of ptybox's whole heap: milliseconds
 * in a busy server. Only our code runs in the driver before its exec. */
static pid_t sandbox_spawn_driver(const struct sandbox *sb, char *const argv[], int err_fd)
{
	struct sandbox_driver_args a = {sb, argv, err_fd};
	long page = sysconf(_SC_PAGESIZE);
	char *stack;
	pid_t pid;
	int e;

	stack = mmap(NULL, SB_DRIVER_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	/* a guard page: an overflow faults instead of writing into init's memory */
	if (mprotect(stack, (size_t)page, PROT_NONE) < 0) {
		e = errno;
		munmap(stack, SB_DRIVER_STACK);
		errno = e;
		return -1;
	}
	pid = clone(sandbox_driver_main, stack + SB_DRIVER_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD,
		    &a);
	e = errno;
	munmap(stack, SB_DRIVER_STACK); /* the driver has exec'd or exited by now */
	errno = e;
	return pid;
}

/* pid 1 of the new namespaces. */
static void sandbox_init(const struct sandbox *sb, char *const argv[], int err_fd, int sync_fd)
	__attribute__((noreturn));
static void sandbox_init(const struct sandbox *sb, char *const argv[], int err_fd, int sync_fd)
{
	struct pollfd pfd = {sync_fd, POLLIN, 0};
	pid_t driver;
	ssize_t n;
	size_t i;
	char c;
	int st;

	do
		n = read(sync_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(SB_EXIT_SETUP); /* the outer child failed and said why */
	if (setresgid(SB_ID, SB_ID, SB_ID) < 0)
		sandbox_fail(err_fd, "setresgid", "1000", errno);
	if (setresuid(SB_ID, SB_ID, SB_ID) < 0)
		sandbox_fail(err_fd, "setresuid", "1000", errno);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_PDEATHSIG", NULL, errno);
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
		_exit(SB_EXIT_SETUP); /* the outer child died before PDEATHSIG was armed */
	close(sync_fd);
	/* Non-dumpable: the sandbox's code runs as the same uid, and must not reach
	 * into its unfiltered init through /proc/1/mem. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_DUMPABLE", NULL, errno);
	if (sethostname(SB_HOSTNAME, sizeof(SB_HOSTNAME) - 1) < 0)
		sandbox_fail(err_fd, "sethostname", SB_HOSTNAME, errno);
	if (sb->clone_flags & CLONE_NEWNET)
		sandbox_loopback_up(err_fd);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		sandbox_fail(err_fd, "make / private", NULL, errno);
	for (i = 0; i < sb->nops; i++)
		sandbox_run_op(&sb->ops[i], err_fd);
	sandbox_pivot(err_fd);
	sandbox_drop_caps(err_fd);

	driver = sandbox_spawn_driver(sb, argv, err_fd);
	if (driver < 0)
		sandbox_fail(err_fd, "fork", "the driver", errno);
	close(err_fd);
	/* fd 0, the terminal, stays open until the driver is gone: if the driver's
	 * code closes every fd it has, the terminal lives on and the driver reopens
	 * it (/dev/tty) instead of the client seeing a hang-up. Nothing here reads
	 * or polls it, so it costs no wake-ups. */
	close(1);
	close(2);
	/* The same filter for init, in case code of the sandbox ever reached it. */
	(void)prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sb->prog, 0, 0);
	for (;;) {
		pid_t r = waitpid(-1, &st, 0);
		if (r == driver)
			break;
		if (r < 0 && errno != EINTR)
			_exit(SB_EXIT_SETUP);
	}
	/* Exiting takes every other process of the namespace with it. */
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

void sandbox_child_exec(struct sandbox *sb, char *const argv[], int err_fd)
{
	char path[64], num[24], *pidstr;
	const char *failed = NULL;
	struct sigaction sa;
	int sync[2], st;
	pid_t init;
	size_t i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_PDEATHSIG", NULL, errno);
	if (getppid() != sb->parent)
		_exit(SB_EXIT_SETUP); /* ptybox is already gone */
	if (sandbox_cgroup_join(&sb->cgroups, &failed) < 0)
		sandbox_fail(err_fd, "join cgroup", failed, errno);
	/* Supplementary groups would keep their host meaning inside; setgroups is denied there. */
	if (sb->root && setgroups(0, NULL) < 0)
		sandbox_fail(err_fd, "setgroups", NULL, errno);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	for (i = 0; i < sizeof(sandbox_held_signals) / sizeof(sandbox_held_signals[0]); i++)
		sigaction(sandbox_held_signals[i], &sa, NULL);
	if (pipe2(sync, O_CLOEXEC) < 0)
		sandbox_fail(err_fd, "pipe", NULL, errno);

	init = sandbox_clone(sb->clone_flags);
	if (init < 0)
		sandbox_fail(err_fd, "clone", "(new namespaces)", errno);
	if (init == 0) {
		close(sync[1]);
		sandbox_init(sb, argv, err_fd, sync[0]);
	}
	close(sync[0]);
	__atomic_store_n(&sb->shared->init_pid, init, __ATOMIC_SEQ_CST);

	/* init's user namespace: only SB_ID is mapped; the outer child has the
	 * rights to say so because it stayed in the parent namespace. */
	pidstr = sandbox_utoa((unsigned long)init, num + sizeof(num));
	{
		static const char *const files[] = {"setgroups", "uid_map", "gid_map"};
		const char *bodies[] = {"deny", sb->uid_map, sb->gid_map};
		for (i = 0; i < 3; i++) {
			size_t n = sandbox_cat(path, sizeof(path), 0, "/proc/");
			n = sandbox_cat(path, sizeof(path), n, pidstr);
			n = sandbox_cat(path, sizeof(path), n, "/");
			n = sandbox_cat(path, sizeof(path), n, files[i]);
			path[n] = '\0';
			if (sandbox_write_all(path, bodies[i], strlen(bodies[i]), 0, 0) < 0)
				sandbox_fail_reap(err_fd, "write", path, errno, init);
		}
	}
	if (write(sync[1], "g", 1) != 1)
		sandbox_fail_reap(err_fd, "start init", NULL, errno, init);
	/* sync[1] stays open: init polls it to learn whether we are still alive. */
	close(err_fd);
	close(0);
	close(1);
	close(2);
	for (;;) {
		pid_t r = waitpid(init, &st, 0);
		if (r == init)
			break;
		if (r < 0 && errno != EINTR)
			_exit(SB_EXIT_SETUP);
	}
	__atomic_store_n(&sb->shared->init_pid, 0, __ATOMIC_SEQ_CST);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* ---------------------------------------------------------------------------
 * Teardown
 */

/* Waits until a pidfd's process has exited (or the deadline); true if it has. */
static bool sandbox_pidfd_wait(int pidfd, int64_t deadline)
{
	struct pollfd pfd = {pidfd, POLLIN, 0};

	for (;;) {
		int64_t left = deadline - sandbox_now_ms();
		int r = poll(&pfd, 1, left > 0 ? (int)left : 0);
		if (r > 0)
			return true;
		if (r == 0 || errno != EINTR)
			return false;
	}
}

static int sandbox_pidfd_kill(int pidfd)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
}

/* Kills init (so the kernel empties the pid namespace), lets the outer child reap it
 * and exit on its own (killing both at once would leave init to the host's pid 1),
 * and kills the outer child only if it lingers. Bounded by SB_KILL_WAIT_MS. */
void sandbox_kill_all(struct sandbox *sb, pid_t child)
{
	int64_t deadline = sandbox_now_ms() + SB_KILL_WAIT_MS;
	int outer = -1, own = -1, initfd = -1;
	pid_t init;

	if (!sb)
		return;
	if (sb->child_pidfd >= 0)
		outer = sb->child_pidfd;
	else if (child > 0)
		outer = own = (int)syscall(SYS_pidfd_open, child, 0);
	/* The outer child zeroes init_pid once it has reaped init: a pidfd opened while
	 * the value still stands is init's, whatever happens to the number later. */
	init = sb->shared ? __atomic_load_n(&sb->shared->init_pid, __ATOMIC_SEQ_CST) : 0;
	if (init > 0) {
		initfd = (int)syscall(SYS_pidfd_open, init, 0);
		if (initfd >= 0 &&
		    __atomic_load_n(&sb->shared->init_pid, __ATOMIC_SEQ_CST) != init) {
			close(initfd);
			initfd = -1;
		}
	}
	sandbox_cgroup_kill(&sb->cgroups, sb->child > 0 ? sb->child : child);
	if (initfd >= 0) {
		/* init's exit comes after the kernel has killed and reaped its whole namespace */
		sandbox_pidfd_kill(initfd);
		sandbox_pidfd_wait(initfd, deadline);
		close(initfd);
	} else if (outer >= 0) {
		sandbox_pidfd_kill(outer); /* no init (yet, or any more): nothing for it to reap */
	}
	if (outer >= 0) {
		if (!sandbox_pidfd_wait(outer, deadline)) {
			sandbox_pidfd_kill(outer);
			sandbox_pidfd_wait(outer, sandbox_now_ms() + 100);
		}
	} else if (child > 0) {
		kill(child, SIGKILL); /* no pidfds (Linux < 5.3) */
	}
	if (own >= 0)
		close(own);
	sandbox_cgroup_drain(&sb->cgroups, deadline);
}

const char *sandbox_death_reason(struct sandbox *sb)
{
	return sb ? sandbox_cgroup_death_reason(&sb->cgroups) : NULL;
}

void sandbox_free(struct sandbox *sb)
{
	size_t i;

	if (!sb)
		return;
	sandbox_cgroup_remove(&sb->cgroups);
	if (sb->shared)
		munmap(sb->shared, sizeof(*sb->shared));
	if (sb->child_pidfd >= 0)
		close(sb->child_pidfd);
	for (i = 0; i < sb->nstrs; i++)
		free(sb->strs[i]);
	free(sb->strs);
	free(sb->ops);
	free(sb->env);
	free(sb);
}
