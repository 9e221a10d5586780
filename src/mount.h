/*
 * mount.h - `--mount HOST_PATH:SANDBOX_PATH[:ro|:rw]`, `--workdir` and
 * `--wheels` as values: parsed and checked here, bound by the sandbox's plan.
 *
 * mount_parse and mount_check_list are pure (unit tests drive them);
 * mount_check_host looks at the host's file system.
 */
#ifndef PTYBOX_MOUNT_H
#define PTYBOX_MOUNT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The most --mount a session takes. */
#define MOUNT_MAX 64
/* Where --wheels DIR shows inside the local sandbox (read-only). */
#define MOUNT_WHEELS_PATH "/run/ptybox/wheels"
/* The folder the code starts in without --workdir. */
#define MOUNT_WORKDIR_DEFAULT "/tmp"

struct mount_spec {
	char host[PATH_MAX];   /* as given (relative: to the caller's folder) */
	char inside[PATH_MAX]; /* absolute, normalised: no "//", "." or trailing "/" */
	bool rw;
};

/* Splits "HOST:SANDBOX[:ro|:rw]" and checks the sandbox side: absolute, no
 * "..", not "/" nor a folder the sandbox provides (its system folders, /proc,
 * /dev, /sys, /etc, /tmp itself, /run/ptybox; or below or above one of them;
 * below /tmp is fine). 0, or -EINVAL with one line in err. */
int mount_parse(const char *spec, struct mount_spec *m, char *err, size_t errlen);
/* Parses every spec of a NULL-terminated list (NULL: none) and refuses more
 * than MOUNT_MAX of them, and two onto the same place (--wheels' place
 * included when wheels). 0, or -EINVAL with one line in err. */
int mount_check_list(char *const *specs, bool wheels, char *err, size_t errlen);
/* Whether path is an absolute path without ".." components (a --workdir, a
 * sandbox path); "" is not. */
bool mount_path_ok(const char *path);
/* The host side of a parsed mount: made absolute (realpath, against the
 * current folder) in resolved (PATH_MAX bytes), and refused when it does not
 * exist or is "/". 0, or a negative errno with one line in err. */
int mount_check_host(const struct mount_spec *m, char *resolved, char *err, size_t errlen);

#endif
