/*
 * driver_bench.c - the driver alone against the floor, for work on the driver.
 *
 * ptybox_bench measures what users get (client library, transport, driver);
 * its round-trip ratio moves by 0.1-0.2 between runs on a shared machine, more
 * than most driver changes are worth. This one runs the floor (floor.h) and
 * one or more driver files side by side, each on its own pseudo-terminal,
 * under one minimal blocking client (write an exec request for "x = 1", read
 * until the frame ends), alternating blocks of 100 round trips so that drift
 * hits all alike. The client blocks in read(2), as ptybox_bench's floor
 * client does (an alarm(2) bounds each wait). Each run starts fresh
 * processes; the summary is the median over runs of each driver's p50 ratio
 * to the floor and of its CPU time per round trip (all its threads, from
 * /proc/PID/task/TID/schedstat). Compare two versions of the driver in one go:
 *
 *     ptybox_driver_bench [-n ROUND_TRIPS] [-r RUNS] driver/driver.py /tmp/old.py
 *
 * Not a test and not a figure for users: no sandbox, no client library.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "floor.h"

#define PYTHON	    "/usr/bin/python3"
#define MAX_SUBJECT 8
#define BLOCK	    100
#define DEADLINE_S  10

struct subject {
	const char *name; /* "floor" or a driver file */
	int master;
	pid_t pid;
	double *us, cpu0_ns, *ratio, *cpu_us; /* per round trip; per run */
};

static struct subject subjects[MAX_SUBJECT];
static int nsubjects;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ptybox_driver_bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	for (int i = 0; i < nsubjects; i++)
		if (subjects[i].pid > 0)
			kill(subjects[i].pid, SIGKILL);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n ? v[n / 2] : 0;
}

/* Nanoseconds on a CPU, all threads of pid (schedstat's first field). */
static double cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		die("%s: %s", path, strerror(errno));
	double total = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char file[512];
		snprintf(file, sizeof(file), "%s/%s/schedstat", path, e->d_name);
		FILE *f = fopen(file, "r");
		double ns;
		if (f && fscanf(f, "%lf", &ns) == 1)
			total += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return total;
}

static void on_alarm(int sig)
{
	(void)sig; /* only to interrupt read(2): no SA_RESTART */
}

/* Reads from s until `until` appears in what was read (since the call). */
static void read_until(struct subject *s, const char *until)
{
	static char buf[1 << 16];
	size_t have = 0, keep = strlen(until);
	alarm(DEADLINE_S);
	for (;;) {
		ssize_t n = read(s->master, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			die("%s: nothing within %d s", s->name, DEADLINE_S);
		if (n <= 0)
			die("%s: %s", s->name, n < 0 ? strerror(errno) : "end of file");
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, until)) {
			alarm(0);
			return;
		}
		if (have > sizeof(buf) / 2) { /* keep what may start `until` */
			memmove(buf, buf + have - keep, keep);
			have = keep;
		}
	}
}

static void write_all(struct subject *s, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(s->master, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("%s: write: %s", s->name, strerror(errno));
		p += n, len -= (size_t)n;
	}
}

static bool is_floor(const struct subject *s)
{
	return strcmp(s->name, "floor") == 0;
}

static void start(struct subject *s)
{
	s->pid = forkpty(&s->master, NULL, NULL, NULL);
	if (s->pid < 0)
		die("forkpty: %s", strerror(errno));
	if (s->pid == 0) {
		if (is_floor(s))
			execl(PYTHON, "python3", "-I", "-c", floor_py, (char *)NULL);
		else
			execl(PYTHON, "python3", "-I", "-S", s->name, (char *)NULL);
		_exit(127);
	}
	struct termios t;
	if (tcgetattr(s->master, &t) == 0) { /* no echo of what the client writes */
		cfmakeraw(&t);
		tcsetattr(s->master, TCSANOW, &t);
	}
	if (is_floor(s)) {
		read_until(s, SENTINEL);
		return;
	}
	read_until(s, "NONCE?");
	write_all(s, "0123456789abcdef\n", 17);
	read_until(s, "\"type\":\"ready\"");
}

static void stop(struct subject *s)
{
	close(s->master);
	kill(s->pid, SIGKILL);
	while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
		;
	s->pid = -1;
}

static double round_trip(struct subject *s, unsigned long id)
{
	char line[256];
	size_t len;
	if (is_floor(s)) {
		len = (size_t)snprintf(line, sizeof(line), "x = 1\n");
	} else {
		char json[96];
		int n = snprintf(json, sizeof(json),
				 "{\"id\":%lu,\"op\":\"exec\",\"code\":\"x = 1\"}", id);
		sodium_bin2base64(line, sizeof(line), (const unsigned char *)json, (size_t)n,
				  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		len = strlen(line);
		line[len++] = '\n';
	}
	double t0 = now_us();
	write_all(s, line, len);
	read_until(s, is_floor(s) ? SENTINEL : ":ptybox>>>");
	return now_us() - t0;
}

static void run(int n, int r)
{
	unsigned long id = 0;
	for (int i = 0; i < nsubjects; i++)
		start(&subjects[i]);
	for (int k = 0; k < 2 * BLOCK; k++) /* warm-up: caches, the deferred site import */
		for (int i = 0; i < nsubjects; i++)
			round_trip(&subjects[i], ++id);
	for (int i = 0; i < nsubjects; i++)
		subjects[i].cpu0_ns = cpu_ns(subjects[i].pid);
	for (int b = 0; b * BLOCK < n; b++) {
		for (int k = 0; k < nsubjects; k++) {
			struct subject *s = &subjects[(k + b) % nsubjects];
			for (int j = b * BLOCK; j < n && j < (b + 1) * BLOCK; j++)
				s->us[j] = round_trip(s, ++id);
		}
	}
	double floor_p50 = median(subjects[0].us, (size_t)n);
	printf("run %d: floor %.1f us", r + 1, floor_p50);
	for (int i = 0; i < nsubjects; i++) {
		struct subject *s = &subjects[i];
		s->cpu_us[r] = (cpu_ns(s->pid) - s->cpu0_ns) / 1e3 / n;
		s->ratio[r] = median(s->us, (size_t)n) / floor_p50;
		if (i > 0)
			printf("  %s %.3f", s->name, s->ratio[r]);
		stop(s);
	}
	putchar('\n');
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int n = 3000, runs = 6, opt;
	while ((opt = getopt(argc, argv, "n:r:h")) != -1) {
		if (opt == 'n' && atoi(optarg) > 0)
			n = atoi(optarg);
		else if (opt == 'r' && atoi(optarg) > 0)
			runs = atoi(optarg);
		else {
			fprintf(stderr, "Usage: ptybox_driver_bench [-n ROUND_TRIPS] [-r RUNS] "
					"DRIVER.py...\n");
			return 2;
		}
	}
	if (optind == argc || argc - optind >= MAX_SUBJECT) {
		fprintf(stderr, "ptybox_driver_bench: give 1 to %d driver files\n",
			MAX_SUBJECT - 1);
		return 2;
	}
	subjects[nsubjects++].name = "floor";
	for (int i = optind; i < argc; i++) {
		if (access(argv[i], R_OK) < 0)
			die("%s: %s", argv[i], strerror(errno));
		subjects[nsubjects++].name = argv[i];
	}
	for (int i = 0; i < nsubjects; i++) {
		subjects[i].us = malloc(sizeof(double) * (size_t)n);
		subjects[i].ratio = malloc(sizeof(double) * (size_t)runs);
		subjects[i].cpu_us = malloc(sizeof(double) * (size_t)runs);
		if (!subjects[i].us || !subjects[i].ratio || !subjects[i].cpu_us)
			die("out of memory");
	}
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	for (int r = 0; r < runs; r++)
		run(n, r);
	printf("\nmedian of %d runs of %d round trips (x = 1), each against the floor in the same "
	       "run:\n",
	       runs, n);
	for (int i = 0; i < nsubjects; i++) {
		struct subject *s = &subjects[i];
		printf("  %-40s p50 ratio %.3f  CPU per round trip %5.1f us\n", s->name,
		       median(s->ratio, (size_t)runs), median(s->cpu_us, (size_t)runs));
	}
	return 0;
}
