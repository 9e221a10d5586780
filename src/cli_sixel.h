/*
 * cli_sixel.h - a picture as sixel, for terminals that show sixel but
 * neither kitty's nor iTerm2's images (xterm -ti vt340, foot, mlterm, ...).
 */
#ifndef PTYBOX_CLI_SIXEL_H
#define PTYBOX_CLI_SIXEL_H

#include <stdbool.h>
#include <stddef.h>

/* How long the encoder may take, and how much it may write. */
#define CLI_SIXEL_DEADLINE_MS 5000
#define CLI_SIXEL_MAX_OUT     ((size_t)32 << 20)

/* Whether this ptybox was built with libsixel. */
bool cli_sixel_available(void);
/* Writes the PNG or JPEG in data to stdout as sixel. The decoder runs in a
 * child process of its own (the picture comes from the sandbox: its bytes
 * are hostile), under a seccomp filter that leaves it read and write on its
 * pipes, within a memory and time limit; what it writes goes out only if it
 * is one sixel image (picture_sixel_valid). 0, or -errno (nothing written). */
int cli_sixel_show(const unsigned char *data, size_t len);

#endif
