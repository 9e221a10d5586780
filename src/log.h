/* log.h - the debug log: a file given with -v, never the PTY or the user's terminal. */
#ifndef PTYBOX_LOG_H
#define PTYBOX_LOG_H

struct log;

/* The process's log (the CLI's --log): the first path wins. */
int log_open(const char *path);
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_close(void);

/* A log of its own (a session's --log), reference-counted: whoever may log
 * to it holds a reference, so an instance that outlives its session still
 * can. 0 or -errno. */
int log_new(const char *path, struct log **out);
struct log *log_ref(struct log *l);
void log_unref(struct log *l);
/* One line to l, or to the process's log when l is NULL. */
void log_to(struct log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
