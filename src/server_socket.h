/*
 * server_socket.h - where a server's socket lives, and reaching it.
 *
 * The socket of server LABEL ("default", or -L LABEL) is
 * $XDG_RUNTIME_DIR/ptybox/LABEL, or /tmp/ptybox-UID/LABEL without one, in a
 * folder that must be a real directory (lstat: no symlink), owned by the
 * user, mode 0700; -S PATH names the socket itself. Beside it: LABEL.lock,
 * held by the server for its lifetime and unlinked at its end (two servers
 * never share a socket, and a socket without a server holding its lock is
 * stale), and LABEL.log, which stays (cli_server.c says why).
 */
#ifndef PTYBOX_SERVER_SOCKET_H
#define PTYBOX_SERVER_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

#define SERVER_SOCKET_PATH_MAX 108 /* sun_path */

/* The socket's path for label or path (one of them NULL); with create, its
 * folder is made (0700) if missing. Either way the folder is checked. 0 or
 * -errno with err filled. */
int server_socket_path(const char *label, const char *path, bool create, char *out, size_t outlen,
		       char *err, size_t errlen);
/* Connects to the socket at path (blocking). The fd, or -errno. */
int server_socket_connect(const char *path);
/* Whether uid may use the server of this user: itself, or root. */
bool server_socket_peer_ok(int fd, unsigned *uid);

#endif
