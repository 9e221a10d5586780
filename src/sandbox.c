/*
 * sandbox.c - the embedded container behind `--via local`: its lifecycle.
 *
 * The sandbox owns everything between fork and the driver's exec: namespaces,
 * the root filesystem, identity, rlimits, cgroups and the seccomp filter.
 * transport.c calls sandbox_new before fork, sandbox_child_exec in the child
 * (already the PTY's session leader) and sandbox_after_fork in the parent;
 * at the session's end sandbox_kill_all, sandbox_death_reason and sandbox_free.
 *
 * Shaped like bubblewrap: sandbox_new turns the options into a plan, a list of
 * mkdir/bind/mount/write steps whose paths, file bodies and error labels are
 * all formatted in advance, plus the compiled seccomp program and the session's
 * cgroups, created and limited. The child only walks the plan with
 * async-signal-safe calls (no malloc, no stdio, no libseccomp) and reports the
 * first failing step on err_fd as "step: reason", then _exit(125).
 *
 * This file owns struct sandbox from sandbox_new to sandbox_free: it formats
 * init's uid/gid maps, asks the other files for their parts, holds the outer
 * child by a pidfd and takes everything down again; it also keeps the small
 * helpers the parent-side files share (sandbox_errf, sandbox_file_read,
 * sandbox_now_ms). Each other concept lives in a file of its own, and
 * sandbox_internal.h is what they share:
 *
 *   sandbox_plan.c     the plan: the root filesystem's steps, the environment,
 *                      the rlimits (parent, before fork)
 *   sandbox_child.c    the child side after fork: the process chain, identity,
 *                      walking the plan, the driver's exec (async-signal-safe)
 *   sandbox_seccomp.c  the seccomp filter and its errno table
 *   sandbox_cgroup.c   the cgroups (v1 or v2, limits, freeze/kill, removal)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SB_NOBODY	65534 /* what SB_ID is on the host when ptybox runs as root */
#define SB_KILL_WAIT_MS 3000  /* sandbox_kill_all: bound on waiting for the last process */

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

void sandbox_warn(const struct sandbox_options *o, int *once, const char *msg)
{
	if (o->warn)
		o->warn(o->warn_ctx, msg); /* a session's: it is told there */
	else if (!__atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "ptybox: %s\n", msg);
}

/* ---------------------------------------------------------------------------
 * Set-up, around fork
 */

int sandbox_child_fd(const struct sandbox *sb)
{
	return sb ? sb->join_pidfd : -1;
}

static int sandbox_init_pidfd(const struct sandbox *sb);

bool sandbox_running(const struct sandbox *sb)
{
	/* Its init's number is still there until the outer child has reaped it:
	 * the pidfd tells (readable once it has exited) whether it still runs. */
	int fd = sb ? sandbox_init_pidfd(sb) : -1;
	struct pollfd pfd = {fd, POLLIN, 0};
	bool alive = fd >= 0 && poll(&pfd, 1, 0) == 0;

	/* An init that exits first lets go of its namespaces (then setns says
	 * ESRCH), and only then waits for the rest of its pid namespace to die:
	 * its /proc/PID/ns links are gone from the start of that wait. */
	if (alive) {
		char path[64];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid",
			 (int)__atomic_load_n(&sb->shared->init_pid, __ATOMIC_SEQ_CST));
		/* (EACCES: not ours to look at, not root; the boot that joins
		 * it is tried again if it was on its way out) */
		alive = stat(path, &st) == 0 || errno == EACCES;
	}
	if (fd >= 0)
		close(fd);
	return alive;
}

/* A pidfd of sb's init (or, joined, its driver), or -1: opened while the
 * outer child has not reaped it, so it is that process whatever the number
 * becomes later. */
static int sandbox_init_pidfd(const struct sandbox *sb)
{
	pid_t init = sb->shared ? __atomic_load_n(&sb->shared->init_pid, __ATOMIC_SEQ_CST) : 0;
	int fd;

	if (init <= 0)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, init, 0);
	if (fd >= 0 && __atomic_load_n(&sb->shared->init_pid, __ATOMIC_SEQ_CST) != init) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* --with: what the child needs of the sandbox it joins, taken now (the joined
 * one may restart or go while this one runs; then the namespaces it held die,
 * and this sandbox's processes with them). */
static int sandbox_join_prepare(struct sandbox *sb, const struct sandbox *with, char *err,
				size_t errlen)
{
	size_t i;

	if (with->join_pidfd >= 0) {
		sandbox_errf(err, errlen,
			     "sandbox: --with: that session shares another's "
			     "sandbox: name that one");
		return -EINVAL;
	}
	sb->join_pidfd = sandbox_init_pidfd(with);
	if (sb->join_pidfd < 0) {
		sandbox_errf(err, errlen, "sandbox: --with: its sandbox is not running");
		return -ESRCH;
	}
	sb->clone_flags = with->clone_flags;
	sb->join_outer = with->child;
	for (i = 0; i < with->cgroups.n; i++) {
		const struct sandbox_cgroup *from = &with->cgroups.cg[i];
		struct sandbox_cgroup *to = &sb->join_cgroups.cg[i];
		if (!from->join || !from->dir)
			continue;
		to->v2 = from->v2;
		to->mask = from->mask;
		if (!(to->dir = strdup(from->dir)) || !(to->join = strdup(from->join))) {
			sandbox_errf(err, errlen, "sandbox: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
	}
	sb->join_cgroups.n = with->cgroups.n;
	if ((sb->oom = with->oom))
		__atomic_add_fetch(&sb->oom->refs, 1, __ATOMIC_SEQ_CST);
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
	sb->opts.join = NULL;
	sb->child_pidfd = -1;
	sb->join_pidfd = -1;
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
	if (rc < 0) {
		sandbox_errf(err, errlen, "sandbox plan: %s", strerror(-rc));
		goto fail;
	}
	if (opts->join) {
		rc = sandbox_join_prepare(sb, opts->join, err, errlen);
		if (rc == 0 && (rc = sandbox_plan_join(sb)) < 0)
			sandbox_errf(err, errlen, "sandbox plan: %s", strerror(-rc));
		if (rc < 0)
			goto fail;
	} else {
		rc = sandbox_plan(sb, err, errlen);
		if (rc < 0)
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

	if (opts->join) {
		/* the joined sandbox's cgroups hold its limits, and said so if it has none */
	} else if (sb->root) {
		rc = sandbox_cgroup_setup(&sb->cgroups, &sb->opts, sb->parent, err, errlen);
		if (rc < 0)
			goto fail;
		if (!(sb->oom = calloc(1, sizeof(*sb->oom)))) {
			rc = -ENOMEM;
			sandbox_errf(err, errlen, "sandbox: %s", strerror(ENOMEM));
			goto fail;
		}
		sb->oom->refs = 1;
	} else {
		sandbox_warn(opts, &warned,
			     "not root: running without cgroup limits (memory, pids, cpu)");
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
	initfd = sandbox_init_pidfd(sb);
	/* Joined (--with), the driver is this sandbox's own: its process group
	 * (the relay and its template) goes with it; its kernels follow their
	 * relay (kernel.py's watchdog). The joined sandbox's other processes stay. */
	if (initfd >= 0 && sb->join_pidfd >= 0)
		kill(-init, SIGKILL);
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
	if (!sb)
		return NULL;
	if (!sb->oom)
		return NULL;
	return sandbox_cgroup_death_reason(sb->join_pidfd >= 0 ? &sb->join_cgroups : &sb->cgroups,
					   &sb->oom->told);
}

long long sandbox_memory(const struct sandbox *sb)
{
	if (!sb)
		return -ENOTSUP;
	return sandbox_cgroup_memory(sb->join_pidfd >= 0 ? &sb->join_cgroups : &sb->cgroups);
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
	if (sb->join_pidfd >= 0)
		close(sb->join_pidfd);
	if (sb->oom && __atomic_sub_fetch(&sb->oom->refs, 1, __ATOMIC_SEQ_CST) == 0)
		free(sb->oom);
	for (i = 0; i < SANDBOX_CG_COUNT; i++) {
		free(sb->join_cgroups.cg[i].dir);
		free(sb->join_cgroups.cg[i].join);
	}
	for (i = 0; i < sb->nstrs; i++)
		free(sb->strs[i]);
	free(sb->strs);
	free(sb->ops);
	free(sb->env);
	free(sb);
}
