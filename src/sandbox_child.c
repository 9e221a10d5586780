/*
 * sandbox_child.c - the sandbox's child side, from fork to the driver's exec.
 *
 * Owns sandbox_child_exec and everything it runs: the outer child, init and
 * the driver until its exec. pty.c forks, transport.c calls sandbox_child_exec
 * in the child (already the PTY's session leader), and from there on the code
 * only walks what sandbox_new prepared: the plan's steps (sandbox_plan.c),
 * the uid/gid maps, the rlimits, the compiled seccomp program and the
 * cgroups' paths. It reports the first failing step on err_fd as
 * "step: reason", then _exit(125).
 *
 * Everything here is async-signal-safe: no malloc, no stdio, no locks, no
 * libseccomp. The fork copied one thread of a process that has others
 * (libuv's thread pool, the library's callers), and a lock one of them held
 * at that moment (the allocator's, stdio's) would never be released in the
 * child; the driver moreover runs on init's memory (CLONE_VM) until its exec.
 * Hence the hand-rolled string helpers, error lines and PATH search below.
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
 * What init shows: it is a fork of the client that never execs, so the areas
 * that the kernel set up at the client's exec are still its own: argv and the
 * environment (--env values, the --log path, later -c snippets, a library
 * user's --db-password=..., the host's variables). Its memory (the client's
 * heap, copied) and /proc/1/environ need ptrace access, which PR_SET_DUMPABLE 0
 * denies the sandbox's uid, but /proc/1/cmdline is readable by anyone, and
 * reads on into the environment when the last byte of argv is not a NUL (the
 * setproctitle rule). So init, before anything of the sandbox runs, looks both
 * areas up in /proc/self/stat (arg_start..env_end, fields 48-51, Linux 3.5)
 * and overwrites them in its own copy-on-write pages (the client's stay as
 * they were): the environment with NULs; argv with "ptybox-init", NULs and a
 * final '.', which by that same rule makes cmdline end at the first NUL rather
 * than tell argv's length by its trail of NULs. Its comm ("ptybox", or a
 * library user's program name: /proc/1/comm, status, stat) becomes
 * "ptybox-init" too. Exec'ing a minimal reaper instead would need a binary of
 * its own, shipped and still reachable after the pivot.
 *
 * Identity: inside uid/gid 1000 ("sandbox") is the only mapped id. As host root
 * it maps to nobody/nogroup (65534) and supplementary groups are dropped first;
 * otherwise to the caller's own uid/gid. Inside uid 0 does not exist, so
 * setresuid(1000) keeps the namespace capabilities that the mounts need
 * (the kernel's setuid fixup only clears them when leaving the namespace's
 * uid 0); they are dropped explicitly before the driver is forked.
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
#include <unistd.h>

#define SB_EXIT_SETUP	125	     /* a set-up step failed; the reason is on err_fd */
#define SB_DRIVER_STACK (256 * 1024) /* the driver's stack until its exec */

/* mount_setattr (Linux 5.12), for headers that predate it. */
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
/* openat2 (Linux 5.6). */
#ifndef SYS_openat2
#define SYS_openat2 437
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

/* "what arg: reason\n" on err_fd, then _exit. */
static void sandbox_fail_why(int err_fd, const char *what, const char *arg, const char *why)
	__attribute__((noreturn));
static void sandbox_fail_why(int err_fd, const char *what, const char *arg, const char *why)
{
	char buf[PATH_MAX + 256];
	size_t n = sandbox_cat(buf, sizeof(buf) - 1, 0, what);

	if (arg) {
		n = sandbox_cat(buf, sizeof(buf) - 1, n, " ");
		n = sandbox_cat(buf, sizeof(buf) - 1, n, arg);
	}
	n = sandbox_cat(buf, sizeof(buf) - 1, n, ": ");
	n = sandbox_cat(buf, sizeof(buf) - 1, n, why);
	buf[n++] = '\n';
	if (err_fd >= 0)
		(void)!write(err_fd, buf, n);
	_exit(SB_EXIT_SETUP);
}

/* The same with errnum's text. strerrordesc_np reads a static table: no
 * locale, no allocation. */
static void sandbox_fail(int err_fd, const char *what, const char *arg, int errnum)
	__attribute__((noreturn));
static void sandbox_fail(int err_fd, const char *what, const char *arg, int errnum)
{
	char num[40];
	const char *desc = strerrordesc_np(errnum);

	if (!desc) {
		char *d = sandbox_utoa((unsigned long)errnum, num + sizeof(num));
		memcpy(d - 6, "error ", 6);
		desc = d - 6;
	}
	sandbox_fail_why(err_fd, what, arg, desc);
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

/* Binds src onto dst (op->path, or a /proc/self/fd link to it); whether the
 * bind took the mounts below src along. */
static bool sandbox_bind_mount(const struct sandbox_op *op, const char *src, const char *dst,
			       int err_fd)
{
	/* Non-recursive where the kernel allows it, so mounts under a bound folder
	 * stay out; but a tree with locked submounts (all of the host's, in our
	 * user namespace) can only be bound whole. */
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		if (errno != EINVAL || mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		return true;
	}
	return false;
}

/* Remounts the bind at path (its root) with op->flags. */
static void sandbox_bind_remount(const struct sandbox_op *op, const char *path, bool rec,
				 int err_fd)
{
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | op->flags | sandbox_locked_flags(path),
		  NULL) < 0)
		sandbox_fail(err_fd, op->what2, NULL, errno);
	/* A remount changes one mount: the ones it took along (a host's
	 * /usr/local...) would stay writable. Without mount_setattr the sandbox
	 * does not start rather than start with them so. */
	if (rec && sandbox_remount_below(path, op->flags) < 0)
		sandbox_fail(err_fd, op->what2, "(the mounts below)", errno);
}

/* Binds src onto op->path and remounts it with op->flags: the system folders,
 * in the root that init itself made (no link of anyone's is on the way). */
static void sandbox_bind(const struct sandbox_op *op, const char *src, int err_fd)
{
	sandbox_bind_remount(op, op->path, sandbox_bind_mount(op, src, op->path, err_fd), err_fd);
}

/* "/proc/self/fd/N" into buf (at least 32 bytes). */
static const char *sandbox_fd_path(char *buf, int fd)
{
	char num[24];
	size_t n = sandbox_cat(buf, 32, 0, "/proc/self/fd/");

	n = sandbox_cat(buf, 32, n, sandbox_utoa((unsigned long)fd, num + sizeof(num)));
	buf[n] = '\0';
	return buf;
}

/* The first len bytes of path (below SB_STAGE) as an O_PATH fd, resolved without
 * following any symbolic link and without leaving the staged root; -1 with errno
 * (ELOOP: a link on the way) otherwise. Mount points are a --mount's, or in one,
 * where earlier code of the sandbox or the host may have left links: followed,
 * one would move the mount elsewhere in the root, or out onto the host. */
static int sandbox_open_beneath(const char *path, size_t len)
{
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_PATH | O_CLOEXEC, 0, 0x04 /* RESOLVE_NO_SYMLINKS */ | 0x08 /* BENEATH */};
	char rel[PATH_MAX], name[NAME_MAX + 1];
	size_t n = sizeof(SB_STAGE) - 1, r = 0;
	int root, fd, e;

	if (len < n || len - n >= sizeof(rel))
		return errno = ENAMETOOLONG, -1;
	for (size_t i = n; i < len; i++)
		if (r || path[i] != '/')
			rel[r++] = path[i];
	rel[r] = '\0';
	root = open(SB_STAGE, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || !r)
		return root;
	fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != E2BIG && errno != EINVAL)) {
		e = errno;
		close(root);
		errno = e;
		return fd;
	}
	/* Before Linux 5.6: one component at a time, none of them a link. */
	fd = root;
	for (const char *p = rel; *p;) {
		size_t k = strcspn(p, "/");
		struct stat st;
		int next;

		if (k > NAME_MAX || (k == 2 && p[0] == '.' && p[1] == '.')) {
			close(fd);
			return errno = k > NAME_MAX ? ENAMETOOLONG : EXDEV, -1;
		}
		memcpy(name, p, k);
		name[k] = '\0';
		p += k;
		while (*p == '/')
			p++;
		next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		close(fd);
		if (next < 0)
			return errno = e, -1;
		if (fstat(next, &st) < 0)
			st.st_mode = 0;
		if (S_ISLNK(st.st_mode) || (*p && !S_ISDIR(st.st_mode))) {
			e = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
			close(next);
			return errno = e, -1;
		}
		fd = next;
	}
	return fd;
}

/* Fails naming the mount point: op->path without the staging prefix. */
static void sandbox_fail_point(const struct sandbox_op *op, int errnum, int err_fd)
	__attribute__((noreturn));
static void sandbox_fail_point(const struct sandbox_op *op, int errnum, int err_fd)
{
	const char *inside = op->path + sizeof(SB_STAGE) - 1;

	if (errnum == ELOOP)
		sandbox_fail_why(err_fd, "mount point", inside,
				 "a symbolic link is on the way (mount points are not followed)");
	sandbox_fail(err_fd, "mount point", inside, errnum);
}

/* Makes op->path's last component where it is missing; parents are there (the
 * plan made them first). Only what is missing: a mount point may be in a
 * --mount above it, where nothing may change (no chmod of the host's folder). */
static void sandbox_mkpoint(const struct sandbox_op *op, int err_fd)
{
	const char *last = strrchr(op->path, '/') + 1;
	struct stat st;
	int dir, fd;

	dir = sandbox_open_beneath(op->path, (size_t)(last - op->path));
	if (dir < 0)
		sandbox_fail_point(op, errno, err_fd);
	if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			sandbox_fail_point(op, ELOOP, err_fd);
	} else if (errno != ENOENT) {
		sandbox_fail(err_fd, op->what, NULL, errno);
	} else if (S_ISDIR(op->mode)) {
		if (mkdirat(dir, last, op->mode & 07777) < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
	} else {
		fd = openat(dir, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    op->mode & 07777);
		if (fd < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
		close(fd);
	}
	close(dir);
}

/* A --mount: the host folder sandbox_open_binds opened, onto the mount point
 * as resolved by sandbox_open_beneath, both by their /proc/self/fd links. */
static void sandbox_bind_host(const struct sandbox_op *op, int err_fd)
{
	char src[32], dst[32];
	int point = sandbox_open_beneath(op->path, strlen(op->path));
	bool rec;

	if (point < 0)
		sandbox_fail_point(op, errno, err_fd);
	rec = sandbox_bind_mount(op, sandbox_fd_path(src, op->fd), sandbox_fd_path(dst, point),
				 err_fd);
	close(point);
	close(op->fd);
	/* point is the folder below the bind: the remount wants the bind's root,
	 * which the same walk now reaches. */
	point = sandbox_open_beneath(op->path, strlen(op->path));
	if (point < 0)
		sandbox_fail_point(op, errno, err_fd);
	sandbox_bind_remount(op, sandbox_fd_path(dst, point), rec, err_fd);
	close(point);
}

/* Opens the host side of every --mount while the host's tree is still in view:
 * the new root is staged over /tmp, where host paths may be. With the
 * sandbox's own rights (uid 1000 of the new user namespace): a folder it
 * cannot reach fails here, with its reason. */
static void sandbox_open_binds(const struct sandbox *sb, int err_fd)
{
	for (size_t i = 0; i < sb->nops; i++) {
		struct sandbox_op *op = &sb->ops[i];
		if (op->kind != OP_BIND_HOST)
			continue;
		op->fd = open(op->src, O_PATH | O_CLOEXEC);
		if (op->fd < 0 && errno == EACCES) /* (said so: the user is not the caller) */
			sandbox_fail_why(err_fd, op->what, NULL,
					 "Permission denied to the sandbox's user (the host's "
					 "nobody when ptybox runs as root: see --mount)");
		if (op->fd < 0)
			sandbox_fail(err_fd, op->what, NULL, errno);
	}
}

static void sandbox_run_op(const struct sandbox_op *op, int err_fd)
{
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
	case OP_BIND: sandbox_bind(op, op->src, err_fd); break;
	case OP_BIND_HOST: sandbox_bind_host(op, err_fd); break;
	case OP_MKPOINT: sandbox_mkpoint(op, err_fd); break;
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

static void sandbox_pivot(const struct sandbox *sb, int err_fd)
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
	/* after the mounts: a --workdir may be one, or in one */
	if (chdir(sb->workdir) < 0)
		sandbox_fail(err_fd, "workdir", sb->workdir, errno);
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

/* Overwrites init's argv and environment areas (see the top of the file) and
 * renames it. The areas' bounds are fields 48-51 of /proc/self/stat: the 46th to
 * 49th after the last ')', which closes comm (comm may hold blanks and parens). */
static void sandbox_init_hide(int err_fd)
{
	static const char name[] = "ptybox-init";
	char buf[2048], *p = NULL;
	unsigned long v[4] = {0, 0, 0, 0};
	size_t len = 0, i, keep;
	int fd, field = 2;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		sandbox_fail(err_fd, "open", "/proc/self/stat", errno);
	while (len + 1 < sizeof(buf)) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			sandbox_fail(err_fd, "read", "/proc/self/stat", errno);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		if (buf[i] == ')')
			p = buf + i + 1;
	for (; p && *p && field <= 51; p++) {
		if (*p == ' ')
			field++;
		else if (field >= 48 && *p >= '0' && *p <= '9')
			v[field - 48] = v[field - 48] * 10 + (unsigned long)(*p - '0');
	}
	if (field < 51 || !v[0] || v[0] >= v[1] || v[2] > v[3])
		sandbox_fail(err_fd, "read", "/proc/self/stat: no arg_start..env_end", EINVAL);
	memset((void *)v[2], 0, v[3] - v[2]);
	memset((void *)v[0], 0, v[1] - v[0]);
	keep = v[1] - v[0] - 1 < sizeof(name) - 1 ? v[1] - v[0] - 1 : sizeof(name) - 1;
	memcpy((void *)v[0], name, keep);
	/* cmdline is then "ptybox-init" without the trail of NULs (see the top) */
	if (v[1] - v[0] > sizeof(name))
		((char *)v[1])[-1] = '.';
	if (prctl(PR_SET_NAME, name, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_NAME", name, errno);
}

/* The sandbox's own uid and gid (SB_ID), then PR_SET_PDEATHSIG again: the
 * change of credentials cleared it. */
static void sandbox_become_sandbox_user(int err_fd)
{
	if (setresgid(SB_ID, SB_ID, SB_ID) < 0)
		sandbox_fail(err_fd, "setresgid", "1000", errno);
	if (setresuid(SB_ID, SB_ID, SB_ID) < 0)
		sandbox_fail(err_fd, "setresuid", "1000", errno);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_PDEATHSIG", NULL, errno);
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
	sandbox_become_sandbox_user(err_fd);
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
		_exit(SB_EXIT_SETUP); /* the outer child died before PDEATHSIG was armed */
	close(sync_fd);
	sandbox_init_hide(err_fd);
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
	sandbox_open_binds(sb, err_fd);
	for (i = 0; i < sb->nops; i++)
		sandbox_run_op(&sb->ops[i], err_fd);
	sandbox_pivot(sb, err_fd);
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

/* The namespaces a --with session joins, in setns's order: the user namespace
 * first, which gives the rights the others take. */
static const struct {
	int flag;
	const char *name;
} sandbox_namespaces[] = {
	{CLONE_NEWUSER, "user"},     {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"},
	{CLONE_NEWNET, "net"},	     {CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"},
	{CLONE_NEWCGROUP, "cgroup"},
};
#define SB_NAMESPACES (sizeof(sandbox_namespaces) / sizeof(sandbox_namespaces[0]))

/* The outer child, before init runs (and turns non-dumpable, after which only
 * host root may open its /proc/PID/ns): init's namespaces, kept open at
 * SB_NS_FD + i for the life of the sandbox. A --with session of a user
 * without CAP_SYS_PTRACE opens them through /proc/OUTER/fd (the outer child
 * is dumpable, and in the host's pid namespace: no code of the sandbox sees
 * it). One that cannot be kept is not: --with then says why. */
static void sandbox_keep_namespaces(const struct sandbox *sb, const char *pidstr)
{
	char path[64];
	size_t i;

	for (i = 0; i < SB_NAMESPACES; i++) {
		size_t n;
		int fd;

		if (!(sb->clone_flags & (unsigned long)sandbox_namespaces[i].flag))
			continue;
		n = sandbox_cat(path, sizeof(path), 0, "/proc/");
		n = sandbox_cat(path, sizeof(path), n, pidstr);
		n = sandbox_cat(path, sizeof(path), n, "/ns/");
		n = sandbox_cat(path, sizeof(path), n, sandbox_namespaces[i].name);
		path[n] = '\0';
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		if (fd != SB_NS_FD + (int)i) {
			(void)dup2(fd, SB_NS_FD + (int)i);
			close(fd);
		}
	}
}

/* --with without the rights for setns through init's pidfd (host root's
 * CAP_SYS_PTRACE over a non-dumpable init): the namespaces the outer child
 * of the shared sandbox keeps (sandbox_keep_namespaces), each opened before
 * any is entered (entering the mount namespace hides the host's /proc). */
static void sandbox_join_by_fds(const struct sandbox *sb, int err_fd)
{
	int fds[SB_NAMESPACES];
	char path[80], num[24];
	size_t i;

	for (i = 0; i < SB_NAMESPACES; i++) {
		size_t n;

		fds[i] = -1;
		if (!(sb->clone_flags & (unsigned long)sandbox_namespaces[i].flag))
			continue;
		n = sandbox_cat(path, sizeof(path), 0, "/proc/");
		n = sandbox_cat(path, sizeof(path), n,
				sandbox_utoa((unsigned long)sb->join_outer, num + sizeof(num)));
		n = sandbox_cat(path, sizeof(path), n, "/fd/");
		n = sandbox_cat(path, sizeof(path), n,
				sandbox_utoa((unsigned long)(SB_NS_FD + i), num + sizeof(num)));
		path[n] = '\0';
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			sandbox_fail(err_fd, "open the namespace", sandbox_namespaces[i].name,
				     errno);
	}
	for (i = 0; i < SB_NAMESPACES; i++) {
		if (fds[i] < 0)
			continue;
		if (setns(fds[i], sandbox_namespaces[i].flag) < 0)
			sandbox_fail(err_fd, "setns", sandbox_namespaces[i].name, errno);
		close(fds[i]);
	}
}

/* The outer child's end: waits for pid (init, or a joined sandbox's driver),
 * says it is gone (init_pid), and exits with its status (signal death: 128+N). */
static void sandbox_pass_on(struct sandbox *sb, pid_t pid) __attribute__((noreturn));
static void sandbox_pass_on(struct sandbox *sb, pid_t pid)
{
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, 0);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			_exit(SB_EXIT_SETUP);
	}
	__atomic_store_n(&sb->shared->init_pid, 0, __ATOMIC_SEQ_CST);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* --with: the outer child joins the cgroups and every namespace of the
 * sandbox it shares, then is what init is in a sandbox of its own: of the
 * uid inside, without capabilities, the driver's parent, passing its status
 * on. It stays in the host's pid namespace (setns of one moves only the
 * children), so the code of the shared sandbox never sees it. */
static void sandbox_join_exec(struct sandbox *sb, char *const argv[], int err_fd)
	__attribute__((noreturn));
static void sandbox_join_exec(struct sandbox *sb, char *const argv[], int err_fd)
{
	const char *failed = NULL;
	pid_t driver;

	/* The driver runs on this process's memory (CLONE_VM) until its exec, in
	 * the shared pid namespace: its /proc/PID/cmdline is our argv until then.
	 * (Here, while /proc/self is still ours.) */
	sandbox_init_hide(err_fd);
	if (sandbox_cgroup_join(&sb->join_cgroups, &failed) < 0)
		sandbox_fail(err_fd, "join cgroup", failed, errno);
	if (setns(sb->join_pidfd, (int)sb->clone_flags) < 0) {
		if (errno != EPERM)
			sandbox_fail(err_fd, "setns", "(the sandbox of --with)", errno);
		sandbox_join_by_fds(sb, err_fd);
	}
	close(sb->join_pidfd);
	sandbox_become_sandbox_user(err_fd);
	if (getppid() != sb->parent)
		_exit(SB_EXIT_SETUP); /* ptybox went before PDEATHSIG was armed again */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sandbox_fail(err_fd, "prctl PR_SET_DUMPABLE", NULL, errno);
	if (chdir(sb->workdir) < 0)
		sandbox_fail(err_fd, "workdir", sb->workdir, errno);
	sandbox_drop_caps(err_fd);
	driver = sandbox_spawn_driver(sb, argv, err_fd);
	if (driver < 0)
		sandbox_fail(err_fd, "fork", "the driver", errno);
	__atomic_store_n(&sb->shared->init_pid, driver, __ATOMIC_SEQ_CST);
	close(err_fd);
	close(1);
	close(2);
	(void)prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sb->prog, 0, 0); /* (as init's) */
	sandbox_pass_on(sb, driver);
}

void sandbox_child_exec(struct sandbox *sb, char *const argv[], int err_fd)
{
	char path[64], num[24], *pidstr;
	const char *failed = NULL;
	struct sigaction sa;
	int sync[2];
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
	if (sb->join_pidfd >= 0)
		sandbox_join_exec(sb, argv, err_fd);
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
	sandbox_keep_namespaces(sb, pidstr);
	if (write(sync[1], "g", 1) != 1)
		sandbox_fail_reap(err_fd, "start init", NULL, errno, init);
	/* sync[1] stays open: init polls it to learn whether we are still alive. */
	close(err_fd);
	close(0);
	close(1);
	close(2);
	sandbox_pass_on(sb, init);
}
