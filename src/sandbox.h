/*
 * sandbox.h - the embedded container (`--via local`).
 *
 * The parent builds a plan from the options (every string, the seccomp BPF
 * program, the cgroups) before fork; the child only executes the plan's steps
 * in order, with async-signal-safe calls, each failing with its own message
 * ("mount /proc: Operation not permitted") written to a close-on-exec pipe.
 */
#ifndef PTYBOX_SANDBOX_H
#define PTYBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sandbox_options {
	bool net;		/* --net: share the host's network namespace */
	uint64_t memory;	/* bytes; RLIMIT_AS and memory cgroup; 0 = none */
	uint64_t tmp_size;	/* bytes of the /tmp tmpfs; kept below memory; 0 = none */
	uint64_t max_file_size; /* RLIMIT_FSIZE; 0 = none */
	unsigned pids;		/* pids cgroup / RLIMIT_NPROC; 0 = none */
	unsigned nofile;	/* RLIMIT_NOFILE; 0 = the host's */
	double cpus;		/* CPU quota in CPUs; 0 = none */
	/* Where warnings go (each once per call of sandbox_new); NULL: stderr,
	 * once per process. */
	void (*warn)(void *ctx, const char *message);
	void *warn_ctx;
	char *const *env;    /* the child's complete environment (already allow-listed);
			      * copied by sandbox_new. Its PATH is where argv[0] is looked
			      * up inside; HOME should be /tmp (the working folder). */
	char *const *mounts; /* --mount specs (checked by mount_check_list), NULL-terminated */
	const char *workdir; /* where the driver starts; NULL: /tmp */
	const char *wheels;  /* a host folder bound read-only at MOUNT_WHEELS_PATH; NULL: none */
	/* --with: a running sandbox whose namespaces and cgroups this one joins
	 * (its files, processes and limits) instead of making its own; read only
	 * by sandbox_new, which holds what it needs (no pointer to it is kept).
	 * The mounts, workdir's folder and cgroup limits are then the joined
	 * one's; env and the rlimits are still opts' own. */
	const struct sandbox *join;
};

struct sandbox;

/* Parent, before fork. Builds the plan; on failure fills err with one line.
 * As root it also creates and limits the session's cgroups; otherwise it says once
 * on stderr that it runs without them. */
int sandbox_new(const struct sandbox_options *opts, struct sandbox **out, char *err, size_t errlen);
/* Whether sb's sandbox is up: its init runs (the one --with can join). */
bool sandbox_running(const struct sandbox *sb);

/* The fd the child needs open (--with: the joined init's pidfd), or -1. */
int sandbox_child_fd(const struct sandbox *sb);

/* Parent, right after fork, with the child's pid. Never blocks: the child joins the
 * cgroups and writes its namespace's uid/gid maps itself. Holds the child by a
 * pidfd, so sandbox_kill_all stays safe after the caller has reaped it. */
int sandbox_after_fork(struct sandbox *sb, pid_t child, char *err, size_t errlen);
/* Child, after the PTY became its controlling terminal and fds 0-2: enters the
 * sandbox and execs argv[0] (searched in the sandbox's PATH) with opts->env.
 * Never returns; on failure writes one line to err_fd and _exit(125). err_fd
 * reaches EOF exactly when the driver has exec'd. The child (the pid the parent
 * knows) stays outside the sandbox as the session leader and exits with the
 * driver's status: its exit code, or 128+N when signal N killed it (137: SIGKILL,
 * e.g. an OOM kill). */
void sandbox_child_exec(struct sandbox *sb, char *const argv[], int err_fd)
	__attribute__((noreturn));
/* Every process of the sandbox gone (double-forked and setsid ones included) when
 * it returns (bounded: 3 s), and the child has exited; the caller still reaps it.
 * Safe to call more than once, and after the child was reaped. */
void sandbox_kill_all(struct sandbox *sb, pid_t child);
/* Why the sandbox's last process died, if the sandbox knows better than the
 * exit status (e.g. "out of memory"); NULL otherwise. */
const char *sandbox_death_reason(struct sandbox *sb);
/* The sandbox's memory in bytes from its cgroup, or -ENOTSUP without one. */
long long sandbox_memory(const struct sandbox *sb);
/* Removes cgroups and whatever else the plan created; frees. Call sandbox_kill_all
 * first if the child ever ran. NULL is fine. */
void sandbox_free(struct sandbox *sb);

#endif
