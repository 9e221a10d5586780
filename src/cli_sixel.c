/*
 * cli_sixel.c - pictures as sixel, decoded and encoded by libsixel.
 *
 * kitty and iTerm2 take the PNG itself and decode it in the terminal; sixel
 * needs pixels, so someone on our side must decode a PNG that the sandboxed
 * code made, and image decoders are where hostile files find bugs. So the
 * decoding happens in a child that can do nothing else: it gets the picture
 * on fd 0 (a memfd), writes sixel to a pipe on fd 1, has no other fd, runs
 * under RLIMIT_AS and RLIMIT_CPU, and a seccomp filter allows it only memory
 * and I/O on the fds it has. The parent reads the pipe within a deadline and
 * a cap, and writes the result to the terminal only if it is one sixel image
 * and nothing else. The child runs library code after fork() in a process
 * that may have threads: glibc's fork keeps malloc usable there, and the
 * child does nothing that takes another lock.
 */
#define _GNU_SOURCE
#include "cli_sixel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_render.h"
#include "picture.h"

#ifdef PTYBOX_HAVE_SIXEL
#include <seccomp.h>
#include <sixel.h>

/* The decoder's memory: a picture of 64 MiB at most, its pixels and the
 * encoder's tables. A PNG that claims to be larger fails to allocate. */
#define SIXEL_CHILD_AS ((rlim_t)1 << 30)

static int64_t sixel_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Memory and I/O on the fds it has; everything else fails with EPERM. */
static int sixel_child_filter(void)
{
	static const int allowed[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(readv),
		SCMP_SYS(writev),
		SCMP_SYS(mmap),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(brk),
		SCMP_SYS(madvise),
		SCMP_SYS(fstat),
		SCMP_SYS(newfstatat),
		SCMP_SYS(lseek),
		SCMP_SYS(close),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(futex),
		/* (asked for by sanitizer runtimes on their way out; harmless) */
		SCMP_SYS(gettid),
		SCMP_SYS(getpid),
		SCMP_SYS(sigaltstack),
		SCMP_SYS(rt_sigprocmask),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	if (rc == 0)
		rc = seccomp_load(ctx); /* (sets no_new_privs first) */
	seccomp_release(ctx);
	return rc;
}

static void sixel_child(int in, int out) __attribute__((noreturn));
static void sixel_child(int in, int out)
{
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || null < 0 || dup2(null, 2) < 0)
		_exit(1);
	close_range(3, ~0U, 0);
	struct rlimit as = {SIXEL_CHILD_AS, SIXEL_CHILD_AS};
	struct rlimit cpu = {CLI_SIXEL_DEADLINE_MS / 1000, CLI_SIXEL_DEADLINE_MS / 1000};
#ifdef __SANITIZE_ADDRESS__
	as.rlim_cur = as.rlim_max = RLIM_INFINITY; /* (ASan's shadow memory is terabytes) */
#endif
	if (setrlimit(RLIMIT_AS, &as) < 0 || setrlimit(RLIMIT_CPU, &cpu) < 0 ||
	    sixel_child_filter() < 0)
		_exit(1);
	sixel_encoder_t *enc = NULL;
	if (SIXEL_FAILED(sixel_encoder_new(&enc, NULL)))
		_exit(1);
	SIXELSTATUS st = sixel_encoder_encode(enc, "-");
	sixel_encoder_unref(enc);
	_exit(SIXEL_FAILED(st) ? 1 : 0);
}

/* What the child writes, until it closes the pipe, the deadline or the cap. */
static int sixel_read(int fd, char **out, size_t *out_len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int64_t deadline = sixel_now_ms() + CLI_SIXEL_DEADLINE_MS;
	int rc = buf ? 0 : -ENOMEM;
	while (rc == 0) {
		int64_t left = deadline - sixel_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		if (n == cap) {
			char *nb = cap < CLI_SIXEL_MAX_OUT ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				rc = cap < CLI_SIXEL_MAX_OUT ? -ENOMEM : -EFBIG;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0) {
			rc = got < 0 ? -errno : 0;
			break;
		}
		n += (size_t)got;
	}
	*out = buf;
	*out_len = n;
	return rc;
}

bool cli_sixel_available(void)
{
	return true;
}

int cli_sixel_show(const unsigned char *data, size_t len)
{
	int in = memfd_create("ptybox-picture", MFD_CLOEXEC);
	if (in < 0)
		return -errno;
	int rc = cli_write_all(in, (const char *)data, len);
	int pipefd[2] = {-1, -1};
	if (rc == 0 && lseek(in, 0, SEEK_SET) < 0)
		rc = -errno;
	if (rc == 0 && pipe2(pipefd, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc < 0) {
		close(in);
		return rc;
	}
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old); /* (no handler of ours runs in the child) */
	pid_t pid = fork();
	if (pid == 0)
		sixel_child(in, pipefd[1]);
	int fork_errno = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(in);
	close(pipefd[1]);
	if (pid < 0) {
		close(pipefd[0]);
		return -fork_errno;
	}
	char *out = NULL;
	size_t n = 0;
	rc = sixel_read(pipefd[0], &out, &n);
	close(pipefd[0]);
	if (rc < 0)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = -EINVAL; /* (not a picture it could read) */
	if (rc == 0 && !picture_sixel_valid(out, n))
		rc = -EPROTO;
	if (rc == 0)
		cli_render_out(1, out, n);
	free(out);
	return rc;
}
#else
bool cli_sixel_available(void)
{
	return false;
}

int cli_sixel_show(const unsigned char *data, size_t len)
{
	return -ENOTSUP;
}
#endif
