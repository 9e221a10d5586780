/*
 * log.c - the debug log. Off unless a path is given; lines carry a monotonic
 * timestamp so the order of PTY events can be read back.
 *
 * Each session may have a log of its own (a server holds many, each with
 * its own --log); what belongs to no session (the CLI's own, a stale cgroup
 * swept) goes to the process's log.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct log {
	FILE *f;
	int refs;
};

static FILE *log_file;

int log_open(const char *path)
{
	if (log_file)
		return 0;
	log_file = fopen(path, "ae");
	if (!log_file)
		return -errno;
	setvbuf(log_file, NULL, _IOLBF, 0);
	return 0;
}

static void log_vline(FILE *f, const char *fmt, va_list ap)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(f, "%ld.%06ld ", (long)ts.tv_sec, ts.tv_nsec / 1000);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void log_msg(const char *fmt, ...)
{
	if (!log_file)
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vline(log_file, fmt, ap);
	va_end(ap);
}

void log_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}

int log_new(const char *path, struct log **out)
{
	struct log *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->f = fopen(path, "ae");
	if (!l->f) {
		int e = errno;
		free(l);
		return -e;
	}
	setvbuf(l->f, NULL, _IOLBF, 0);
	l->refs = 1;
	*out = l;
	return 0;
}

struct log *log_ref(struct log *l)
{
	if (l)
		l->refs++;
	return l;
}

void log_unref(struct log *l)
{
	if (!l || --l->refs > 0)
		return;
	fclose(l->f);
	free(l);
}

void log_to(struct log *l, const char *fmt, ...)
{
	FILE *f = l ? l->f : log_file;
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vline(f, fmt, ap);
	va_end(ap);
}
