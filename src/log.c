/*
 * log.c - the debug log. Off unless a path is given; lines carry a monotonic
 * timestamp so the order of PTY events can be read back.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

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

void log_msg(const char *fmt, ...)
{
	if (!log_file)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(log_file, "%ld.%06ld ", (long)ts.tv_sec, ts.tv_nsec / 1000);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(log_file, fmt, ap);
	va_end(ap);
	fputc('\n', log_file);
}

void log_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}
