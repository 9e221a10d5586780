/* log.h - the debug log: a file given with -v, never the PTY or the user's terminal. */
#ifndef PTYBOX_LOG_H
#define PTYBOX_LOG_H

int log_open(const char *path);
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_close(void);

#endif
