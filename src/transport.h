/*
 * transport.h - how the PTY's child is started: in the embedded sandbox
 * (local), bare (none), or through a command that gives a remote terminal
 * (ssh, exec:CMD). Whatever the transport, the child ends up running the
 * protocol's bootstrap in a terminal; the session above does not know which.
 */
#ifndef PTYBOX_TRANSPORT_H
#define PTYBOX_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox.h"

enum transport_kind { TRANSPORT_LOCAL, TRANSPORT_NONE, TRANSPORT_SSH, TRANSPORT_EXEC };

struct transport_options {
	enum transport_kind kind;
	const char *target;	/* ssh: "[user@]host[:port]"; exec: a command line */
	const char *python;	/* the interpreter the bootstrap runs; NULL: default */
	char *const *env_extra; /* --env K=V, NULL-terminated, may be NULL */
	const char *workdir;	/* where the code starts (PTYBOX_WORKDIR); never NULL */
	const char *wheels;	/* --wheels (PTYBOX_WHEELS), NULL: none */
	const char *lang;	/* the kernel's language (lang_find's); never NULL */
	struct sandbox_options sandbox;
};

struct ptybox_options;
/* The transport's view of a session's options (--via parsed, limits checked). */
int transport_options_from(const struct ptybox_options *o, struct transport_options *t, char *err,
			   size_t errlen);
/* Whether interpreters started with a and with b are alike: the same
 * transport, target, interpreter, language, environment, folders (--workdir,
 * --mount, --wheels) and sandbox limits. */
bool transport_options_equal(const struct transport_options *a, const struct transport_options *b);
/* Parses "local", "none", "ssh://[user@]host[:port]" or "exec:CMD". */
int transport_parse_via(const char *via, struct transport_options *opts, char *err, size_t errlen);

struct transport;

/* Parent, before fork: argv, environment and (local) the sandbox plan. */
int transport_new(const struct transport_options *opts, struct transport **out, char *err,
		  size_t errlen);
/* Child: fds 0-2 are the PTY, which is the controlling terminal; signal
 * dispositions and mask are default. Never returns; on failure writes one line
 * to err_fd (close-on-exec) and _exit(125). */
void transport_child_exec(struct transport *t, int err_fd) __attribute__((noreturn));
/* An fd of the parent's that the child needs (kept open across the fork's
 * closing of all others), or -1. */
int transport_child_fd(const struct transport *t);
/* Parent, right after fork. */
int transport_after_fork(struct transport *t, pid_t child, char *err, size_t errlen);
/* Whether transport_kill or transport_free can take long (the local sandbox:
 * waiting for its processes to die, removing its cgroups): then they belong
 * off the loop's thread. */
bool transport_kill_waits(const struct transport *t);
/* Every process the transport started is gone. reaped: the child was waited
 * for (its pid may be someone else's by now). */
void transport_kill(struct transport *t, pid_t child, bool reaped);
const char *transport_death_reason(struct transport *t);
/* The local sandbox, for another to join (--with); NULL elsewhere. */
const struct sandbox *transport_sandbox(const struct transport *t);
/* The sandbox's memory in bytes, or -ENOTSUP where ptybox cannot know it. */
long long transport_memory(const struct transport *t);
void transport_free(struct transport *t);

#endif
