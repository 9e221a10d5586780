/*
 * bench.c - ptybox against a floor it measures itself, in one run.
 *
 * A benchmark, not a test: `cmake --build build --target bench` builds and
 * runs it; it is never registered with add_test. Every figure is paired with
 * a floor measured in the same run on the same machine:
 *
 *   warm round trip   ptybox_session_exec("x = 1") to on_result, after a warm-up,
 *                     vs a raw-PTY Python loop (openpty + fork/exec python3,
 *                     raw mode, read a line, exec it, write one line back, no
 *                     capture) driven by blocking read/write from here
 *   after 20 MB       the same round trip once a snippet printed 20 MB; judged
 *                     as the p50 of a block of 300 right after each print loop
 *                     over that of the block right before it (median over loops)
 *   throughput        a print loop (200000 lines of 100 bytes: 20 MB), request
 *                     to result, vs the same snippet in the raw loop, where
 *                     stdout is the terminal (line-buffered: one write per line)
 *   1 MB snippet      a 1 MB string literal assignment, vs the same 1 MB line
 *                     sent to the raw loop
 *   cold start        ptybox_session_new to the result of "x = 1", vs bare
 *                     `python3 -c pass` (fork/exec/wait)
 *
 * Rows for information: one 20 MB sys.stdout.write of 'x' * N (the floor writes
 * it straight to its terminal), 20 MB of log-like text written at once (less
 * compressible), and the CPU time of this process (the client) per round trip
 * and per 20 MB (the single write), against what the floor's blocking reads cost.
 *
 * ptybox and its floor run side by side, alternating in blocks, so that the
 * drift of a shared machine hits both alike; the figures that matter are the
 * ratios. Each warm measurement runs once per transport (--via none, the
 * default sandbox "local", or both), with a floor measured alongside.
 *
 * Every wait has a deadline: a result that never comes aborts the run with a
 * message (ptybox side: a uv timer; floor side: alarm(2), whose EINTR ends the
 * blocking call). Medians throughout; CLOCK_MONOTONIC for every clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "ptybox.h"

#ifndef PTYBOX_BENCH_BUILD_TYPE
#define PTYBOX_BENCH_BUILD_TYPE "unknown"
#endif

#define PYTHON "/usr/bin/python3"
#define BASH   "/bin/bash"
#define NODE   "/usr/bin/node"
#define MIB    ((size_t)1 << 20)

#include "floor.h"

/* --lang: the kernel measured; bash's round trip and cold start stand beside
 * a bare bash read/eval loop (floor.h), and the Python-only rows are left out. */
static const char *bench_lang = "python";
static bool bench_bash;
static bool bench_node; /* (like bash: its own floor, no Python-only rows) */
static const char *rt_code = "x = 1";
/* The throughput that matters: print() in a loop, as user code does. */
static const char print_code[] = "for i in range(200000): print('%099d' % i)";
#define PRINT_BYTES ((size_t)200000 * 100)
static const char tput_code[] = "import sys; sys.stdout.write('x' * (20 << 20))";
#define TPUT_BYTES ((size_t)20 << 20)
/* A less compressible variant: 20 MiB of log-like lines, built untimed beforehand. */
static const char log_prep[] =
	"_bench_log = ''.join('%d INFO worker-%d processed item %d in %.3f ms status=ok\\n' % "
	"(i, i % 7, i * 13, (i % 97) * 0.731) for i in range(400000))[:20 << 20]";
static const char log_code[] = "import sys; sys.stdout.write(_bench_log)";

struct config {
	int rt_n, warmup, cold_n, tput_reps, big_reps;
	bool do_none, do_local;
	int cpu; /* -1: no pinning */
	const char *log_path;
};

/* ---------------------------------------------------------------- helpers */

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CPU time of this process (the client side only; children are not waited for). */
static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (sorts v): nearest rank. */
static double quantile(double *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static double median(double *v, size_t n)
{
	return quantile(v, n, 0.5);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---------------------------------------------------------------- floor */

static pid_t floor_pid = -1;
static const char *floor_phase = "";
static volatile sig_atomic_t floor_timed_out;

/* SIGALRM, installed without SA_RESTART: the blocking call in progress fails with EINTR. */
static void floor_alarm(int sig)
{
	floor_timed_out = 1;
}

static void floor_deadline(const char *phase, unsigned seconds)
{
	floor_phase = phase;
	floor_timed_out = 0;
	alarm(seconds);
}

/* After EINTR: go on, or give up if it was the deadline. */
static void floor_check_deadline(void)
{
	if (floor_timed_out)
		die("floor: %s: no reply before the deadline", floor_phase);
}

struct floor {
	pid_t pid;
	int master;
	char *buf;
	size_t cap;
};

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR) {
			floor_check_deadline();
			continue;
		}
		if (w < 0)
			die("floor: write: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* Reads until the stream ends with the sentinel; returns the bytes before it. */
static size_t floor_read_reply(struct floor *f)
{
	size_t total = 0;
	char tail[SENTINEL_LEN] = {0};
	for (;;) {
		ssize_t n = read(f->master, f->buf, f->cap);
		if (n < 0 && errno == EINTR) {
			floor_check_deadline();
			continue;
		}
		if (n <= 0)
			die("floor: read: %s", n < 0 ? strerror(errno) : "end of file");
		total += (size_t)n;
		if ((size_t)n >= SENTINEL_LEN) {
			memcpy(tail, f->buf + n - SENTINEL_LEN, SENTINEL_LEN);
		} else {
			memmove(tail, tail + n, SENTINEL_LEN - (size_t)n);
			memcpy(tail + SENTINEL_LEN - n, f->buf, (size_t)n);
		}
		if (memcmp(tail, SENTINEL, SENTINEL_LEN) == 0)
			return total - SENTINEL_LEN;
	}
}

static void floor_start(struct floor *f)
{
	f->cap = 1 << 16;
	f->buf = malloc(f->cap);
	f->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (!f->buf || f->master < 0 || grantpt(f->master) < 0 || unlockpt(f->master) < 0)
		die("floor: open a pseudo-terminal: %s", strerror(errno));
	const char *slave_path = ptsname(f->master);
	if (!slave_path)
		die("floor: ptsname: %s", strerror(errno));
	struct winsize ws = {.ws_row = 40, .ws_col = 120};
	ioctl(f->master, TIOCSWINSZ, &ws);
	f->pid = fork();
	if (f->pid < 0)
		die("floor: fork: %s", strerror(errno));
	if (f->pid == 0) {
		setsid();
		int s = open(slave_path, O_RDWR);
		if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
			_exit(126);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		if (s > 2)
			close(s);
		if (bench_node)
			execl(NODE, "node", "-e", floor_node, (char *)NULL);
		if (bench_bash)
			execl(BASH, "bash", "--norc", "--noprofile", "-c", floor_bash,
			      (char *)NULL);
		else
			execl(PYTHON, "python3", "-I", "-c", floor_py, (char *)NULL);
		_exit(127);
	}
	floor_pid = f->pid;
	floor_deadline("floor start", 20);
	floor_read_reply(f); /* raw mode is on */
	alarm(0);
}

static void floor_stop(struct floor *f)
{
	close(f->master);
	kill(f->pid, SIGKILL);
	while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
		;
	floor_pid = -1;
	free(f->buf);
}

/* One request line (with its '\n') to a reply; returns the output's length. */
static size_t floor_exec(struct floor *f, const char *line, size_t len)
{
	write_all(f->master, line, len);
	return floor_read_reply(f);
}

/* ---------------------------------------------------------------- ptybox */

struct pb {
	uv_loop_t *loop;
	ptybox_session *s;
	uv_timer_t deadline;
	bool timed_out;
	bool got_result, closed;
	double t_result;
	enum ptybox_status status;
	size_t stdout_len;
	bool truncated;
	char error[200];
	const char *via;
	const char *log_path;
	uint64_t next_id;
};

static struct pb *the_pb;

static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (floor_pid > 0)
		kill(floor_pid, SIGKILL);
	if (the_pb && the_pb->s)
		ptybox_session_close(the_pb->s); /* kills and reaps the interpreter at once */
	exit(1);
}

static void pb_on_result(ptybox_session *s, const struct ptybox_result *r, void *data)
{
	struct pb *b = data;
	b->t_result = now_us();
	b->got_result = true;
	b->status = r->status;
	b->stdout_len = r->stdout_len;
	b->truncated = r->truncated;
	b->error[0] = '\0';
	if (r->status != PTYBOX_OK)
		snprintf(b->error, sizeof(b->error), "%s: %s%s%s", ptybox_status_name(r->status),
			 r->error_name ? r->error_name : "", r->error_value ? ": " : "",
			 r->error_value ? r->error_value
			 : r->message	? r->message
					: "");
}

static void pb_on_fatal(ptybox_session *s, const char *message, void *data)
{
	struct pb *b = data;
	die("ptybox (via %s): the session cannot go on: %s", b->via, message);
}

static void pb_on_closed(ptybox_session *s, void *data)
{
	struct pb *b = data;
	b->closed = true;
}

static void pb_deadline_cb(uv_timer_t *t)
{
	struct pb *b = t->data;
	b->timed_out = true;
}

/* Runs the loop until *flag or the deadline. */
static void pb_wait(struct pb *b, const bool *flag, double seconds, const char *what)
{
	b->timed_out = false;
	uv_timer_start(&b->deadline, pb_deadline_cb, (uint64_t)(seconds * 1000), 0);
	while (!*flag && !b->timed_out)
		uv_run(b->loop, UV_RUN_ONCE);
	uv_timer_stop(&b->deadline);
	if (!*flag)
		die("ptybox (via %s): %s: nothing within %g s", b->via, what, seconds);
}

static void pb_options(const struct pb *b, struct ptybox_options *o)
{
	ptybox_options_init(o);
	o->via = b->via;
	o->max_output = 64 << 20;
	o->timeout = 60;
	o->log_path = b->log_path;
	o->lang = bench_lang;
}

static void pb_open(struct pb *b)
{
	struct ptybox_options o;
	pb_options(b, &o);
	char err[512];
	b->closed = false;
	int rc = ptybox_session_new(b->loop, &o,
				    &(struct ptybox_callbacks){.on_result = pb_on_result,
							       .on_fatal = pb_on_fatal,
							       .on_closed = pb_on_closed},
				    b, &b->s, err, sizeof(err));
	if (rc < 0)
		die("ptybox (via %s): %s", b->via, err);
}

static void pb_close(struct pb *b)
{
	ptybox_session_close(b->s);
	b->s = NULL;
	pb_wait(b, &b->closed, 20, "close");
}

/* One snippet, request to result: microseconds. */
static double pb_exec(struct pb *b, const char *code, size_t len, double deadline_s)
{
	b->got_result = false;
	double t0 = now_us();
	int rc = ptybox_session_exec(b->s, ++b->next_id, code, len, -1, false);
	if (rc < 0)
		die("ptybox (via %s): exec: %s", b->via, strerror(-rc));
	pb_wait(b, &b->got_result, deadline_s, "waiting for a result");
	if (b->status != PTYBOX_OK)
		die("ptybox (via %s): snippet failed: %s", b->via, b->error);
	return b->t_result - t0;
}

/* ---------------------------------------------------------------- report */

struct row {
	char metric[48], via[8], unit[8];
	double ptybox, floor_, ratio;
	char target[24];
	int verdict; /* 1 met, 0 missed, -1 no target */
};

static struct row rows[32];
static size_t nrows;

static void add_row(const char *metric, const char *via, const char *unit, double ptybox,
		    double floor_, double ratio, const char *target, int verdict)
{
	struct row *r = &rows[nrows++];
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->via, sizeof(r->via), "%s", via);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	snprintf(r->target, sizeof(r->target), "%s", target);
	r->ptybox = ptybox;
	r->floor_ = floor_;
	r->ratio = ratio;
	r->verdict = verdict;
	printf("  .. %-30s via %-5s ptybox %10.2f %-5s floor %10.2f  ratio %.2f\n", metric, via,
	       ptybox, unit, floor_, ratio);
	fflush(stdout);
}

static void print_table(void)
{
	printf("\n%-31s %-6s %12s %12s %-5s %7s  %-10s %s\n", "metric", "via", "ptybox", "floor",
	       "unit", "ratio", "target", "");
	for (size_t i = 0; i < 100; i++)
		putchar('-');
	putchar('\n');
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		int d = strcmp(r->unit, "x") == 0 ? 2 : 1;
		printf("%-31s %-6s %12.*f %12.*f %-5s %7.2f  %-10s %s\n", r->metric, r->via, d,
		       r->ptybox, d, r->floor_, r->unit, r->ratio, r->target,
		       r->verdict < 0 ? ""
		       : r->verdict   ? "met"
				      : "MISSED");
	}
}

/* ---------------------------------------------------------------- measurements */

struct warm {
	double p50, p99, after_p50, after_p99, print_mbs, tput_mbs, log_mbs, big_ms;
	double after_before; /* median over the print loops of a block's p50 after over before */
	double rt_cpu_us, tput_cpu_ms; /* CPU of this process: per round trip, per 20 MB */
};

/* Series of samples for ptybox (p) and its floor (f), measured side by side. */
struct series {
	double *p, *f;
};

#define BLOCK 100 /* round trips per turn when ptybox and the floor alternate */

static const char *rt_line = "x = 1\n";
static const char tput_line[] = "import sys; sys.stdout.write('x' * (20 << 20))\n";

static double floor_rt_us(struct floor *f)
{
	double t0 = now_us();
	floor_exec(f, rt_line, strlen(rt_line));
	return now_us() - t0;
}

static double pb_rt_us(struct pb *b)
{
	return pb_exec(b, rt_code, strlen(rt_code), 10);
}

/* n round trips each, in alternating blocks so that drift hits both alike. */
/* How much the p50 ratio moves within the run: the ratio of each block pair's
 * medians (measured back to back), at p10, p50 and p90. Information only; the
 * verdict stays the ratio of the whole series' medians. */
static void block_ratios(const struct series *v, int n, const char *via, bool after)
{
	int nb = (n + BLOCK - 1) / BLOCK;
	double *r = malloc(sizeof(double) * (size_t)nb), tmp[BLOCK];
	if (!r)
		die("out of memory");
	for (int i = 0, blk = 0; i < n; i += BLOCK, blk++) {
		size_t m = (size_t)(n - i < BLOCK ? n - i : BLOCK);
		memcpy(tmp, v->p + i, m * sizeof(double));
		double p = median(tmp, m);
		memcpy(tmp, v->f + i, m * sizeof(double));
		r[blk] = p / median(tmp, m);
	}
	printf("  .. round trip p50 ratio per block of %d %-9s via %-5s p10 %.2f  p50 %.2f  p90 "
	       "%.2f\n",
	       BLOCK, after ? "after" : "", via, quantile(r, (size_t)nb, 0.1),
	       quantile(r, (size_t)nb, 0.5), quantile(r, (size_t)nb, 0.9));
	free(r);
}

#define AB_BLOCK 300 /* round trips right before and right after each print loop */

static double pb_rt(void *b)
{
	return pb_rt_us(b);
}

static double floor_rt(void *f)
{
	return floor_rt_us(f);
}

/* The p50 of a block of round trips, after a few to settle. */
static double block_p50(double (*rt)(void *), void *ctx)
{
	double t[AB_BLOCK];
	for (int k = 0; k < 10; k++)
		rt(ctx);
	for (int k = 0; k < AB_BLOCK; k++)
		t[k] = rt(ctx);
	return median(t, AB_BLOCK);
}

static void rt_series(const struct config *c, struct pb *b, struct floor *f, const struct series *v,
		      struct warm *pw, struct warm *fw, bool after)
{
	int n = c->rt_n;
	double pcpu = 0, fcpu = 0;
	floor_deadline(after ? "round trips after 20 MB" : "round trips", 120);
	for (int i = 0, blk = 0; i < n; i += BLOCK, blk++) {
		int m = n - i < BLOCK ? n - i : BLOCK;
		for (int pass = 0; pass < 2; pass++) {
			double c0 = cpu_us();
			if ((pass ^ blk) & 1) {
				for (int k = 0; k < m; k++)
					v->p[i + k] = pb_rt_us(b);
				pcpu += cpu_us() - c0;
			} else {
				for (int k = 0; k < m; k++)
					v->f[i + k] = floor_rt_us(f);
				fcpu += cpu_us() - c0;
			}
		}
	}
	alarm(0);
	if (!after) {
		pw->rt_cpu_us = pcpu / n;
		fw->rt_cpu_us = fcpu / n;
	}
	block_ratios(v, n, b->via, after);
	double pp50 = quantile(v->p, (size_t)n, 0.5), pp99 = quantile(v->p, (size_t)n, 0.99);
	double fp50 = quantile(v->f, (size_t)n, 0.5), fp99 = quantile(v->f, (size_t)n, 0.99);
	if (after) {
		pw->after_p50 = pp50, pw->after_p99 = pp99;
		fw->after_p50 = fp50, fw->after_p99 = fp99;
	} else {
		pw->p50 = pp50, pw->p99 = pp99;
		fw->p50 = fp50, fw->p99 = fp99;
	}
}

static void measure_warm(const struct config *c, struct pb *b, const char *big, size_t big_len,
			 struct warm *pw, struct warm *fw)
{
	size_t cap = (size_t)(c->rt_n > 16 ? c->rt_n : 16);
	struct series v = {malloc(sizeof(double) * cap), malloc(sizeof(double) * cap)};
	char *big_line = malloc(big_len + 1);
	if (!v.p || !v.f || !big_line)
		die("out of memory");
	memcpy(big_line, big, big_len);
	big_line[big_len] = '\n';
	struct floor f;
	floor_start(&f);
	pb_open(b);

	floor_deadline("warm-up", 60);
	pb_exec(b, rt_code, strlen(rt_code), 30); /* the start-up */
	for (int i = 0; i < c->warmup; i++) {
		floor_rt_us(&f);
		pb_rt_us(b);
	}
	rt_series(c, b, &f, &v, pw, fw, false);
	if (bench_bash || bench_node) { /* (the rest is Python code) */
		pb_close(b);
		floor_stop(&f);
		free(big_line);
		free(v.p);
		free(v.f);
		return;
	}

	/* The print loop: 200000 print() calls, in both. */
	_Static_assert(sizeof(print_code) <= sizeof(log_prep) &&
			       sizeof(log_code) <= sizeof(log_prep),
		       "line[] holds each snippet");
	char line[sizeof(log_prep) + 1];
	snprintf(line, sizeof(line), "%s\n", print_code);
	floor_deadline("print loop", 120);
	double *ab_p = malloc(sizeof(double) * (size_t)c->tput_reps),
	       *ab_f = malloc(sizeof(double) * (size_t)c->tput_reps);
	if (!ab_p || !ab_f)
		die("out of memory");
	for (int i = 0; i < c->tput_reps; i++) {
		/* Each print loop between two blocks of round trips, a moment apart:
		 * what the machine does over seconds moves both blocks alike. */
		double before_p = block_p50(pb_rt, b), before_f = block_p50(floor_rt, &f);
		double t0 = now_us();
		size_t got = floor_exec(&f, line, strlen(line));
		double us = now_us() - t0;
		if (got != PRINT_BYTES)
			die("floor: print loop: got %zu bytes", got);
		v.f[i] = (double)PRINT_BYTES / MIB / (us / 1e6);
		us = pb_exec(b, print_code, sizeof(print_code) - 1, 60);
		if (b->stdout_len != PRINT_BYTES || b->truncated)
			die("ptybox (via %s): print loop: got %zu bytes of stdout%s", b->via,
			    b->stdout_len, b->truncated ? ", truncated" : "");
		v.p[i] = (double)PRINT_BYTES / MIB / (us / 1e6);
		ab_p[i] = block_p50(pb_rt, b) / before_p;
		ab_f[i] = block_p50(floor_rt, &f) / before_f;
	}
	pw->print_mbs = median(v.p, (size_t)c->tput_reps);
	fw->print_mbs = median(v.f, (size_t)c->tput_reps);
	pw->after_before = median(ab_p, (size_t)c->tput_reps);
	fw->after_before = median(ab_f, (size_t)c->tput_reps);
	free(ab_p);
	free(ab_f);

	floor_deadline("20 MB output", 120);
	double pcpu[16], fcpu[16];
	for (int i = 0; i < c->tput_reps; i++) {
		double c0 = cpu_us(), t0 = now_us();
		size_t got = floor_exec(&f, tput_line, sizeof(tput_line) - 1);
		double us = now_us() - t0;
		fcpu[i] = (cpu_us() - c0) / 1e3;
		if (got != TPUT_BYTES)
			die("floor: 20 MB output: got %zu bytes", got);
		v.f[i] = (double)TPUT_BYTES / MIB / (us / 1e6);

		c0 = cpu_us();
		us = pb_exec(b, tput_code, sizeof(tput_code) - 1, 60);
		pcpu[i] = (cpu_us() - c0) / 1e3;
		if (b->stdout_len != TPUT_BYTES || b->truncated)
			die("ptybox (via %s): 20 MB snippet: got %zu bytes of stdout%s", b->via,
			    b->stdout_len, b->truncated ? ", truncated" : "");
		v.p[i] = (double)TPUT_BYTES / MIB / (us / 1e6);
	}
	pw->tput_mbs = median(v.p, (size_t)c->tput_reps);
	fw->tput_mbs = median(v.f, (size_t)c->tput_reps);
	pw->tput_cpu_ms = median(pcpu, (size_t)c->tput_reps);
	fw->tput_cpu_ms = median(fcpu, (size_t)c->tput_reps);

	/* The same with log-like text. */
	snprintf(line, sizeof(line), "%s\n", log_prep);
	floor_exec(&f, line, strlen(line));
	pb_exec(b, log_prep, sizeof(log_prep) - 1, 60);
	snprintf(line, sizeof(line), "%s\n", log_code);
	for (int i = 0; i < c->tput_reps; i++) {
		double t0 = now_us();
		size_t got = floor_exec(&f, line, strlen(line));
		double us = now_us() - t0;
		if (got != TPUT_BYTES)
			die("floor: 20 MB of log text: got %zu bytes", got);
		v.f[i] = (double)TPUT_BYTES / MIB / (us / 1e6);
		us = pb_exec(b, log_code, sizeof(log_code) - 1, 60);
		if (b->stdout_len != TPUT_BYTES || b->truncated)
			die("ptybox (via %s): 20 MB of log text: got %zu bytes of stdout%s", b->via,
			    b->stdout_len, b->truncated ? ", truncated" : "");
		v.p[i] = (double)TPUT_BYTES / MIB / (us / 1e6);
	}
	pw->log_mbs = median(v.p, (size_t)c->tput_reps);
	fw->log_mbs = median(v.f, (size_t)c->tput_reps);
	floor_exec(&f, "del _bench_log\n", 15);
	pb_exec(b, "del _bench_log", 14, 10);

	floor_deadline("warm-up after 20 MB", 60);
	for (int i = 0; i < 50; i++) {
		floor_rt_us(&f);
		pb_rt_us(b);
	}
	rt_series(c, b, &f, &v, pw, fw, true);

	floor_deadline("1 MB line", 120);
	for (int i = 0; i < c->big_reps; i++) {
		double t0 = now_us();
		floor_exec(&f, big_line, big_len + 1);
		v.f[i] = (now_us() - t0) / 1e3;
		v.p[i] = pb_exec(b, big, big_len, 60) / 1e3;
	}
	alarm(0);
	pw->big_ms = median(v.p, (size_t)c->big_reps);
	fw->big_ms = median(v.f, (size_t)c->big_reps);
	pb_close(b);
	floor_stop(&f);
	free(big_line);
	free(v.p);
	free(v.f);
}

static double bare_python_us(void)
{
	floor_deadline("bare python start-up", 20);
	double t0 = now_us();
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
		}
		execl(PYTHON, "python3", "-c", "pass", (char *)NULL);
		_exit(127);
	}
	floor_pid = pid;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		floor_check_deadline();
	double us = now_us() - t0;
	floor_pid = -1;
	alarm(0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("bare %s -c pass: status 0x%x", PYTHON, st);
	return us;
}

/* bash's cold-start floor: its bare read/eval loop started on a PTY, to the
 * reply to its first line. */
static double bare_bash_us(void)
{
	double t0 = now_us();
	struct floor f;
	floor_start(&f);
	floor_deadline("bare bash", 20);
	floor_rt_us(&f);
	alarm(0);
	double us = now_us() - t0;
	floor_stop(&f);
	return us;
}

static double cold_start_us(struct pb *b)
{
	b->got_result = false;
	double t0 = now_us();
	pb_open(b);
	int rc = ptybox_session_exec(b->s, ++b->next_id, rt_code, strlen(rt_code), -1, false);
	if (rc < 0)
		die("ptybox (via %s): exec: %s", b->via, strerror(-rc));
	pb_wait(b, &b->got_result, 30, "cold start");
	if (b->status != PTYBOX_OK)
		die("ptybox (via %s): snippet failed: %s", b->via, b->error);
	double us = b->t_result - t0;
	pb_close(b);
	return us;
}

static void report_warm(const char *via, const struct warm *p, const struct warm *f)
{
	add_row(bench_node   ? "round trip p50 (void (x = 1), node)"
		: bench_bash ? "round trip p50 (x=1, bash)"
			     : "round trip p50 (x = 1)",
		via, "us", p->p50, f->p50, p->p50 / f->p50, "<= 1.25", p->p50 <= 1.25 * f->p50);
	add_row("round trip p99", via, "us", p->p99, f->p99, p->p99 / f->p99, "-", -1);
	if (bench_bash || bench_node)
		return;
	add_row("round trip p50 after 20 MB", via, "us", p->after_p50, f->after_p50,
		p->after_p50 / f->after_p50, "-", -1);
	add_row("round trip p99 after 20 MB", via, "us", p->after_p99, f->after_p99,
		p->after_p99 / f->after_p99, "-", -1);
	/* Judged on blocks a moment apart around each print loop (measure_warm): the series
	 * above are seconds apart, over which this machine's round trips drift by more than
	 * 5%, the floor's too. */
	double pa = p->after_before, fa = f->after_before;
	add_row("  p50 after/before 20 MB", via, "x", pa, fa, pa / fa, "<= 1.05", pa <= 1.05);
	add_row("output throughput, print loop", via, "MiB/s", p->print_mbs, f->print_mbs,
		p->print_mbs / f->print_mbs, ">= 2", p->print_mbs >= 2 * f->print_mbs);
	add_row("output, one 20 MB write", via, "MiB/s", p->tput_mbs, f->tput_mbs,
		p->tput_mbs / f->tput_mbs, "(info)", -1);
	add_row("output throughput, log text", via, "MiB/s", p->log_mbs, f->log_mbs,
		p->log_mbs / f->log_mbs, "(info)", -1);
	add_row("1 MB snippet", via, "ms", p->big_ms, f->big_ms, p->big_ms / f->big_ms, "-", -1);
	add_row("client CPU per round trip", via, "us", p->rt_cpu_us, f->rt_cpu_us,
		p->rt_cpu_us / f->rt_cpu_us, "(info)", -1);
	add_row("client CPU per 20 MB", via, "ms", p->tput_cpu_ms, f->tput_cpu_ms,
		p->tput_cpu_ms / f->tput_cpu_ms, "(info)", -1);
}

static void usage(void)
{
	printf("Usage: ptybox_bench [--via none|local|both] [--rt N] [--cold N] [--reps N]\n"
	       "                    [--cpu N] [--log FILE] [--lang python|bash|node]\n"
	       "  --lang bash  bash's round trip and cold start, beside a bare bash loop\n"
	       "  --lang node  node's, beside a bare node REPL loop\n"
	       "  --cpu N   pin the bench and every process it starts to CPU N\n"
	       "Prints ptybox's figures next to a floor measured in the same run.\n");
}

int main(int argc, char **argv)
{
	struct config c = {
		.rt_n = 2000,
		.warmup = 200,
		.cold_n = 20,
		.tput_reps = 9, /* (the after/before pairs, one per print loop, need as many) */
		.big_reps = 5,
		.do_none = true,
		.do_local = true,
		.cpu = -1};
	static const struct option longopts[] = {
		{"via", required_argument, NULL, 'v'},
		{"rt", required_argument, NULL, 'r'},
		{"cold", required_argument, NULL, 'c'},
		{"reps", required_argument, NULL, 'p'},
		{"log", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{"cpu", required_argument, NULL, 'u'},
		{"lang", required_argument, NULL, 'g'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'v':
			c.do_none = strcmp(optarg, "none") == 0 || strcmp(optarg, "both") == 0;
			c.do_local = strcmp(optarg, "local") == 0 || strcmp(optarg, "both") == 0;
			if (!c.do_none && !c.do_local) {
				usage();
				return 2;
			}
			break;
		case 'r': c.rt_n = atoi(optarg); break;
		case 'c': c.cold_n = atoi(optarg); break;
		case 'p': c.tput_reps = c.big_reps = atoi(optarg); break;
		case 'l': c.log_path = optarg; break;
		case 'u': c.cpu = atoi(optarg); break;
		case 'g':
			if (strcmp(optarg, "python") != 0 && strcmp(optarg, "bash") != 0 &&
			    strcmp(optarg, "node") != 0) {
				usage();
				return 2;
			}
			bench_lang = optarg;
			bench_bash = strcmp(optarg, "bash") == 0;
			bench_node = strcmp(optarg, "node") == 0;
			if (bench_bash) {
				rt_code = "x=1";
				rt_line = "x=1\n";
			}
			if (bench_node) { /* (no value: no util.inspect, as the floor) */
				rt_code = "void (x = 1)";
				rt_line = "void (x = 1)\n";
			}
			break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (c.rt_n < 1 || c.cold_n < 1 || c.tput_reps < 1 || c.tput_reps > 16) {
		usage();
		return 2;
	}
	if (c.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(c.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("--cpu %d: %s", c.cpu, strerror(errno));
	}
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = floor_alarm}; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct utsname un;
	uname(&un);
	printf("ptybox %s bench (build %s), kernel %s, %ld CPUs, interpreter %s\n",
	       ptybox_version(), PTYBOX_BENCH_BUILD_TYPE, un.release, sysconf(_SC_NPROCESSORS_ONLN),
	       PYTHON);
	if (strcmp(PTYBOX_BENCH_BUILD_TYPE, "Release") != 0)
		printf("warning: not a Release build: figures are not representative\n");
	if (c.cpu >= 0)
		printf("pinned to CPU %d (with every process started)\n", c.cpu);
	printf("ptybox options: defaults + max_output 64 MiB, timeout 60 s; via set per row\n");
	printf("round trips N=%d after %d warm-up; 20 MB and 1 MB: median of %d; cold start: "
	       "median of %d\n\n",
	       c.rt_n, c.warmup, c.tput_reps, c.cold_n);

	/* The 1 MB snippet: x = '<1 MiB of a>' */
	size_t big_len = MIB + 6;
	char *big = malloc(big_len + 1);
	if (!big)
		die("out of memory");
	memcpy(big, "x = '", 5);
	memset(big + 5, 'a', MIB);
	big[5 + MIB] = '\'';
	big[big_len] = '\0';

	uv_loop_t loop;
	uv_loop_init(&loop);
	struct pb b = {.loop = &loop, .log_path = c.log_path};
	the_pb = &b;
	uv_timer_init(&loop, &b.deadline);
	b.deadline.data = &b;

	double t_start = now_us();
	struct warm fw, pw;
	const char *vias[2] = {c.do_none ? "none" : NULL, c.do_local ? "local" : NULL};
	for (int i = 0; i < 2; i++) {
		if (!vias[i])
			continue;
		b.via = vias[i];
		printf("via %s: warm round trips, 20 MB of output, 1 MB snippet (floor alongside) "
		       "...\n",
		       b.via);
		measure_warm(&c, &b, big, big_len, &pw, &fw);
		report_warm(b.via, &pw, &fw);
	}

	/* Cold starts, interleaved so that drift hits all three alike. */
	printf("cold starts ...\n");
	double *bare = malloc(sizeof(double) * (size_t)c.cold_n);
	double *cold[2] = {malloc(sizeof(double) * (size_t)c.cold_n),
			   malloc(sizeof(double) * (size_t)c.cold_n)};
	if (!bare || !cold[0] || !cold[1])
		die("out of memory");
	double (*bare_us)(void) = bench_bash || bench_node ? bare_bash_us : bare_python_us;
	bare_us(); /* page cache warm */
	for (int k = 0; k < c.cold_n; k++) {
		bare[k] = bare_us();
		for (int i = 0; i < 2; i++) {
			if (!vias[i])
				continue;
			b.via = vias[i];
			cold[i][k] = cold_start_us(&b);
		}
	}
	double bare_ms = median(bare, (size_t)c.cold_n) / 1e3;
	for (int i = 0; i < 2; i++) {
		if (!vias[i])
			continue;
		double ms = median(cold[i], (size_t)c.cold_n) / 1e3;
		bool sandboxed = i == 1;
		add_row(bench_node   ? "cold start to first result (node)"
			: bench_bash ? "cold start to first result (bash)"
				     : "cold start to first result",
			vias[i], "ms", ms, bare_ms, ms / bare_ms, sandboxed ? "<= 1.5" : "-",
			sandboxed ? ms <= 1.5 * bare_ms : -1);
	}

	if (bench_node)
		printf("\nfloors: %s -e LOOP on a raw PTY (read a line, evaluate it, one-line "
		       "reply, no capture), blocking write; cold start: that loop started on a "
		       "fresh PTY to its first reply\n",
		       NODE);
	else if (bench_bash)
		printf("\nfloors: %s -c LOOP on a raw PTY (read a line, eval it, one-line "
		       "reply, no capture), blocking read/write; cold start: that loop started "
		       "on a fresh PTY to its first reply\n",
		       BASH);
	else
		printf("\nfloors: round trip and throughput: %s -I -c LOOP on a raw PTY (read "
		       "a line, exec, one-line reply, no capture; the snippet's stdout is the "
		       "terminal, so print() writes once per line), blocking read/write; cold "
		       "start: bare `%s -c pass` fork/exec/wait\n",
		       PYTHON, PYTHON);
	print_table();
	printf("\ntotal bench time %.1f s\n", (now_us() - t_start) / 1e6);

	free(bare);
	free(cold[0]);
	free(cold[1]);
	free(big);
	the_pb = NULL;
	uv_close((uv_handle_t *)&b.deadline, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&loop) != 0) {
		fprintf(stderr, "bench: handles left open at the end\n");
		return 1;
	}
	return 0;
}
