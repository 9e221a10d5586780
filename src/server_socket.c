/* server_socket.c - the server's socket path, its folder's checks, connecting. */
#define _GNU_SOURCE
#include "server_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "protocol.h"
#include "server.h"

/* The folder must be ours alone: a directory (not a link to one), owned by
 * us, no access for group or others. */
static int server_socket_check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(dir, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: not a directory (a symbolic link?): refused", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != getuid()) {
		snprintf(err, errlen, "%s: owned by uid %u, not by you (uid %u): refused", dir,
			 (unsigned)st.st_uid, (unsigned)getuid());
		return -EPERM;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: mode %03o lets others in (must be 700): refused", dir,
			 (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

int server_socket_path(const char *label, const char *path, bool create, char *out, size_t outlen,
		       char *err, size_t errlen)
{
	char dir[SERVER_SOCKET_PATH_MAX + 64];
	if (path) {
		if (!path[0]) {
			snprintf(err, errlen, "-S: an empty path");
			return -EINVAL;
		}
		if (strlen(path) >= SERVER_SOCKET_PATH_MAX || strlen(path) >= outlen) {
			snprintf(err, errlen, "-S %s: longer than a socket's path may be (%d)",
				 path, SERVER_SOCKET_PATH_MAX - 1);
			return -ENAMETOOLONG;
		}
		snprintf(out, outlen, "%s", path);
		return 0; /* (the user named it: theirs to place) */
	}
	if (!label)
		label = "default";
	const char *why = server_name_invalid(label, strlen(label));
	if (why) {
		snprintf(err, errlen, "-L %s: not a server's name: %s", label, why);
		return -EINVAL;
	}
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/ptybox", xdg);
	else
		n = snprintf(dir, sizeof(dir), "/tmp/ptybox-%u", (unsigned)getuid());
	if (n < 0 || (size_t)n >= sizeof(dir) ||
	    (size_t)n + 1 + strlen(label) >= SERVER_SOCKET_PATH_MAX ||
	    (size_t)n + 1 + strlen(label) >= outlen) {
		snprintf(err, errlen, "the socket's path in %s would be too long", dir);
		return -ENAMETOOLONG;
	}
	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	int rc = server_socket_check_dir(dir, err, errlen);
	if (rc < 0)
		return rc;
	snprintf(out, outlen, "%s/%s", dir, label);
	return 0;
}

int server_socket_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

bool server_socket_peer_ok(int fd, unsigned *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	*uid = (unsigned)cred.uid;
	return cred.uid == getuid() || cred.uid == 0;
}
