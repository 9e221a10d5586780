/*
 * sandbox_internal.h - what the sandbox's files share with each other: sandbox.c
 * (the lifecycle), sandbox_plan.c, sandbox_child.c, sandbox_seccomp.c and
 * sandbox_cgroup.c; nothing outside the sandbox includes it.
 *
 * The plan, the seccomp program and the session's cgroups are each built by
 * their own file before fork; sandbox.c embeds the results in struct sandbox
 * and sandbox_child.c only hands them to the kernel (or to the cgroups' tasks
 * files) in the child.
 */
#ifndef PTYBOX_SANDBOX_INTERNAL_H
#define PTYBOX_SANDBOX_INTERNAL_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "sandbox.h"

/* Shared helpers (sandbox.c). */

/* One line into err (if any), printf-style. */
void sandbox_errf(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Reads a small file into buf (NUL-terminated); returns the length or -errno. */
ssize_t sandbox_file_read(const char *path, char *buf, size_t cap);
int64_t sandbox_now_ms(void);
/* A warning: to o->warn, else to stderr once per process (once: its flag). */
void sandbox_warn(const struct sandbox_options *o, int *once, const char *msg);

/* The seccomp filter (sandbox_seccomp.c). */

/* Parent, before fork. Points prog at the program, compiled on the first call and
 * shared by every later one (it does not depend on the options; never freed).
 * Returns 0, or a negative errno with one line in err. */
int sandbox_seccomp_program(struct sock_fprog *prog, char *err, size_t errlen);

/* Cgroups (sandbox_cgroup.c). */

enum { SANDBOX_CG_MEMORY, SANDBOX_CG_PIDS, SANDBOX_CG_CPU, SANDBOX_CG_FREEZER, SANDBOX_CG_COUNT };

/* One cgroup hierarchy the session uses: a v1 controller mount, or the v2 tree. */
struct sandbox_cgroup {
	char *mnt; /* the hierarchy's mount point */
	bool v2;
	unsigned mask; /* 1 << SANDBOX_CG_* served by this hierarchy */
	char *dir;     /* the session's directory, once created */
	char *procs;   /* dir/cgroup.procs: who is inside, for kill and drain */
	char *join;    /* what the child writes "0" to: dir/tasks on v1, else procs */
};

/* The session's cgroups, one per hierarchy; zeroed means none. Owns its strings. */
struct sandbox_cgroups {
	struct sandbox_cgroup cg[SANDBOX_CG_COUNT];
	size_t n;
};

/* Parent, before fork, as host root: detects the hierarchies (saying once on
 * stderr which controllers are missing), creates <mount>/ptybox/<parent>-<n> in
 * each and writes the limits of o. The first call of a process also removes the
 * cgroups that SIGKILLed ptyboxes left, killing what is inside; it blocks up to
 * 500 ms while one of them is still busy (and again in the next calls, two at
 * most, if one is left). On failure err has one line; what was
 * created is undone by sandbox_cgroup_remove. */
int sandbox_cgroup_setup(struct sandbox_cgroups *cgs, const struct sandbox_options *o, pid_t parent,
			 char *err, size_t errlen);
/* Child, async-signal-safe, single-threaded: moves the calling process into every
 * cgroup. Returns 0, or -1 with errno set and *failed the cgroup it could not join. */
int sandbox_cgroup_join(const struct sandbox_cgroups *cgs, const char **failed);
/* Freezes the session, SIGKILLs every member but spare, thaws (bounded: 1 s). */
void sandbox_cgroup_kill(const struct sandbox_cgroups *cgs, pid_t spare);
/* Kills whatever is left in the session's cgroups until they are empty or deadline
 * (sandbox_now_ms) has passed. */
void sandbox_cgroup_drain(const struct sandbox_cgroups *cgs, int64_t deadline);
/* "out of memory" if the memory cgroup killed a process since *seen said (the
 * count of its kills, updated: each kill is told once); else NULL. */
const char *sandbox_cgroup_death_reason(const struct sandbox_cgroups *cgs, uint64_t *told);
/* How many processes the memory cgroup's OOM killer has killed so far (0 without one). */
uint64_t sandbox_cgroup_oom_kills(const struct sandbox_cgroups *cgs);
/* The memory cgroup's usage in bytes (memory.current, v1 memory.usage_in_bytes),
 * or -ENOTSUP without one, or the read's -errno. */
long long sandbox_cgroup_memory(const struct sandbox_cgroups *cgs);
/* Removes the session's directories (retrying briefly while they are busy) and
 * frees the strings. The processes must be gone. */
void sandbox_cgroup_remove(struct sandbox_cgroups *cgs);

/* The sandbox itself: sandbox.c owns it from sandbox_new to sandbox_free,
 * sandbox_plan.c fills in its plan, sandbox_child.c walks it after fork. */

#define SB_ID	    1000   /* uid and gid inside */
#define SB_STAGE    "/tmp" /* where the new root is assembled (private mount ns) */
#define SB_HOSTNAME "ptybox"
#define SB_NS_FD    200 /* where the outer child keeps init's namespaces (--with) */

enum sandbox_op_kind {
	OP_MKDIR,     /* path, mode */
	OP_TOUCH,     /* path: an empty file for a file bind mount */
	OP_WRITE,     /* path, data, len */
	OP_SYMLINK,   /* src (the target) at path */
	OP_BIND,      /* src onto path, then remount with flags (plus what the kernel locked),
		       * the mounts below it included */
	OP_MOUNT,     /* src (fstype) at path, flags, data */
	OP_MKPOINT,   /* path: a folder (mode a folder's) or an empty file, unless there */
	OP_BIND_HOST, /* a --mount: src, opened (fd) before the root is staged over the host's
		       * /tmp, onto path, as OP_BIND does */
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
	int fd;		   /* OP_BIND_HOST: src as an O_PATH fd, in init only */
};

/* Shared with the outer child (MAP_SHARED before fork; exec drops it). */
struct sandbox_shared {
	/* the namespace's init, host pid; 0 once the outer child reaped it. In a
	 * joined sandbox (--with), the driver: what it has of its own */
	pid_t init_pid;
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
	const char *path;    /* PATH for argv[0] lookup, from env */
	const char *workdir; /* where the driver starts (a string of strs) */
	struct sandbox_rlimit rl[5];
	size_t nrl;
	struct sock_fprog prog;
	struct sandbox_cgroups cgroups;
	struct sandbox_shared *shared;
	pid_t child;	 /* the outer child, from sandbox_after_fork */
	int child_pidfd; /* the same, immune to pid reuse once the caller has reaped it */
	/* --with: the joined sandbox's init (a pidfd: setns takes every namespace
	 * from it at once, Linux 5.8) and copies of its cgroups' dir and join
	 * paths (only those: they are not ours to limit or remove); -1 and none
	 * otherwise */
	int join_pidfd;
	pid_t join_outer; /* its outer child, which keeps its namespaces at SB_NS_FD */
	struct sandbox_cgroups join_cgroups;
	/* The memory cgroup's OOM kills already told, one count for every
	 * session of the cgroup (--with shares it): a kill is told once, to the
	 * first whose process died. Counted references; NULL: none. */
	struct sandbox_oom *oom;
};

struct sandbox_oom {
	uint64_t told;
	int refs;
};

/* The plan (sandbox_plan.c): parent, before fork, called by sandbox_new. What it
 * formats belongs to sb (freed by sandbox_free). */

/* Appends the root filesystem's steps to sb->ops, in the order the child runs
 * them; 0, or a negative errno with one line in err (a --mount's host path
 * that is not there, say). */
int sandbox_plan(struct sandbox *sb, char *err, size_t errlen);
/* --with: the plan of a sandbox that joins another's: no root of its own, only
 * where its driver starts; 0 or -ENOMEM. */
int sandbox_plan_join(struct sandbox *sb);
/* Copies opts.env into sb->env (and points sb->opts.env at it) and sets sb->path,
 * where argv[0] is looked up; 0 or -ENOMEM. */
int sandbox_plan_env(struct sandbox *sb);
/* Adds one of the rlimits (at most 5) the driver sets before its exec; what is the
 * label of its error. */
void sandbox_plan_rlimit(struct sandbox *sb, int resource, uint64_t value, const char *what);

#endif
