/*
 * pty.c - a pseudo-terminal on libuv, and the fork that starts its child.
 *
 * The master is read with our own read(2) calls under a uv_poll_t rather than
 * a uv_tty_t stream: libuv 1.44's stream EOF on a PTY can lose the tail, and
 * we need to read until EIO ourselves to know the slave side is gone. Writes
 * go through a queue so a 10 MB request never blocks the loop while the
 * driver is writing back at the same time. The child's exit comes from the
 * loop's reaper (reap.c: SIGCHLD and waitpid by pid), not from EIO: processes
 * the code started can hold the slave open long after the driver died.
 *
 * The fork follows the usual discipline: every signal blocked around fork;
 * the child resets dispositions and mask, becomes a session leader with the
 * slave as controlling terminal, and hands over to the transport. Set-up
 * errors come back on a close-on-exec pipe as one line of text.
 */
#define _GNU_SOURCE
#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"

#define PTY_READ_CHUNK	      (64 * 1024)
#define PTY_READS_PER_WAKEUP  32   /* fairness between sessions */
#define PTY_LDISC_FULL	      4095 /* bytes of a read that emptied a full N_TTY buffer */
#define PTY_QUEUE_CAP	      ((size_t)512 << 20) /* bytes of pending writes */
#define PTY_SETUP_DEADLINE_MS 20000

struct pty_wbuf {
	struct pty_wbuf *next;
	char *buf;
	size_t len, off;
};

static void pty_poll_cb(uv_poll_t *h, int status, int events);

static void pty_update_poll(struct pty *p)
{
	if (p->closing)
		return;
	int want = 0;
	if (!p->hung_up)
		want |= UV_READABLE;
	if (p->wq_head && !p->hung_up)
		want |= UV_WRITABLE;
	if (want == p->poll_events)
		return;
	p->poll_events = want;
	if (want)
		uv_poll_start(&p->poll, want, pty_poll_cb);
	else
		uv_poll_stop(&p->poll);
}

static void pty_drop_queue(struct pty *p)
{
	while (p->wq_head) {
		struct pty_wbuf *w = p->wq_head;
		p->wq_head = w->next;
		free(w->buf);
		free(w);
	}
	p->wq_tail = NULL;
	p->wq_bytes = 0;
}

static void pty_hangup(struct pty *p)
{
	if (p->hung_up)
		return;
	p->hung_up = true;
	pty_drop_queue(p);
	pty_update_poll(p);
	if (p->cb->on_hangup)
		p->cb->on_hangup(p);
}

/* Reads up to max_reads chunks. A short read took all the terminal had: with
 * short_ends, it ends the turn (the poll says when there is more) rather than
 * costing one more read to learn EAGAIN, while a result's reader waits. But a
 * read that emptied a full line discipline (its buffer holds 4 KiB: a read
 * gives PTY_LDISC_FULL bytes at most, however much is on the way) is not
 * short: more is most likely behind it, and a get's 100 MB would cost a poll
 * for each 4 KiB. */
static void pty_read_some(struct pty *p, int max_reads, bool short_ends)
{
	char buf[PTY_READ_CHUNK];
	for (int i = 0; i < max_reads && !p->hung_up && !p->closing; i++) {
		ssize_t n = read(p->master, buf, sizeof(buf));
		if (n > 0) {
			p->cb->on_data(p, buf, (size_t)n);
			if (short_ends && (size_t)n < PTY_LDISC_FULL)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EIO (every slave fd closed) or EOF. */
		pty_hangup(p);
		return;
	}
}

static void pty_flush_queue(struct pty *p)
{
	while (p->wq_head) {
		struct pty_wbuf *w = p->wq_head;
		ssize_t n = write(p->master, w->buf + w->off, w->len - w->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			log_to(p->log, "pty: write: %s", strerror(errno));
			pty_drop_queue(p);
			break;
		}
		w->off += (size_t)n;
		p->wq_bytes -= (size_t)n;
		if (w->off < w->len)
			continue;
		p->wq_head = w->next;
		if (!p->wq_head)
			p->wq_tail = NULL;
		free(w->buf);
		free(w);
	}
	pty_update_poll(p);
}

static void pty_poll_cb(uv_poll_t *h, int status, int events)
{
	struct pty *p = h->data;
	if (status < 0) {
		log_to(p->log, "pty: poll: %s", uv_strerror(status));
		pty_hangup(p);
		return;
	}
	if (events & UV_WRITABLE)
		pty_flush_queue(p);
	if (events & (UV_READABLE | UV_DISCONNECT))
		pty_read_some(p, PTY_READS_PER_WAKEUP, true);
}

/* Closed once the poll handle is closed and the child reaped. */
static void pty_maybe_closed(struct pty *p)
{
	if (!p->closing || !p->poll_closed || !p->exited)
		return;
	if (p->master >= 0)
		close(p->master);
	p->master = -1;
	if (p->cb->on_closed)
		p->cb->on_closed(p); /* (may free p) */
}

static void pty_exit_cb(struct reap_watch *w, int wstatus)
{
	struct pty *p = w->data;
	p->exited = true;
	p->cb->on_exit(p, wstatus);
	pty_maybe_closed(p);
}

int pty_write_take(struct pty *p, char *buf, size_t len)
{
	if (p->hung_up || p->closing) {
		free(buf);
		return -EPIPE;
	}
	if (p->wq_bytes + len > PTY_QUEUE_CAP) {
		free(buf);
		return -ENOBUFS;
	}
	size_t off = 0;
	bool direct = !p->wq_head;
	if (direct) {
		/* Nothing queued: write at once; only what the terminal does not
		 * take now is queued (a request is usually taken whole). */
		ssize_t n;
		do
			n = write(p->master, buf, len);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			log_to(p->log, "pty: write: %s", strerror(errno));
			free(buf);
			return 0; /* as a failed queued write: the hang-up or exit follows */
		}
		off = n > 0 ? (size_t)n : 0;
		if (off == len) {
			free(buf);
			return 0;
		}
	}
	struct pty_wbuf *w = malloc(sizeof(*w));
	if (!w) {
		free(buf);
		return -ENOMEM;
	}
	*w = (struct pty_wbuf){.buf = buf, .len = len, .off = off};
	if (p->wq_tail)
		p->wq_tail->next = w;
	else
		p->wq_head = w;
	p->wq_tail = w;
	p->wq_bytes += len - off;
	if (direct)
		pty_update_poll(p); /* the terminal is full: wait until it takes more */
	else
		pty_flush_queue(p);
	return 0;
}

int pty_write(struct pty *p, const char *buf, size_t len)
{
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	return pty_write_take(p, copy, len);
}

size_t pty_queued(const struct pty *p)
{
	return p->wq_bytes;
}

int pty_resize(struct pty *p, unsigned short cols, unsigned short rows)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	return ioctl(p->master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

void pty_drain(struct pty *p)
{
	/* Bounded: a process still writing cannot keep us here. */
	pty_read_some(p, 64, false);
}

/* In the child: only async-signal-safe calls from here on. */
static void pty_child(const char *slave_path, int master, int err_fd, struct transport *t)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	const char *what = "setsid";
	if (setsid() < 0)
		goto fail;
	what = "open the terminal";
	int slave = open(slave_path, O_RDWR);
	if (slave < 0)
		goto fail;
	what = "TIOCSCTTY";
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		goto fail;
	/* IUTF8 so the line editor of the canonical boot phase counts characters
	 * right. */
	struct termios tio;
	if (tcgetattr(slave, &tio) == 0) {
		tio.c_iflag |= IUTF8;
		/* Nothing needs the echo of the boot lines; transports that keep
		 * echo on (a remote terminal) work too, only slower to start. */
		tio.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
		tcsetattr(slave, TCSANOW, &tio);
	}
	what = "dup2";
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			goto fail;
	if (slave > 2)
		close(slave);
	close(master);
	/* Close everything else but the error pipe and what the transport keeps
	 * (--with: the pidfd of the sandbox it joins). */
	int keep[2] = {err_fd, transport_child_fd(t)};
	if (keep[1] >= 0 && keep[1] < keep[0]) {
		keep[1] = keep[0];
		keep[0] = transport_child_fd(t);
	}
	unsigned from = 3;
	for (int i = 0; i < 2; i++) {
		if (keep[i] < 3)
			continue;
		if ((unsigned)keep[i] > from)
			close_range(from, (unsigned)keep[i] - 1, 0);
		from = (unsigned)keep[i] + 1;
	}
	close_range(from, ~0U, 0);
	transport_child_exec(t, err_fd);

fail:;
	/* No stdio here: a lock held by another thread at fork would never be released. */
	const char *why = strerrordesc_np(errno);
	struct iovec iov[3] = {{(void *)what, strlen(what)}, {": ", 2}, {(void *)why, strlen(why)}};
	ssize_t w = writev(err_fd, iov, 3);
	(void)w;
	_exit(125);
}

/* Waits for the child's set-up verdict: EOF (it exec'd) or one line. */
static int pty_read_setup_error(int fd, char *err, size_t errlen)
{
	size_t got = 0;
	char buf[512];
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int r = poll(&pfd, 1, PTY_SETUP_DEADLINE_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			snprintf(err, errlen, "the sandbox did not start within %d s",
				 PTY_SETUP_DEADLINE_MS / 1000);
			return -ETIMEDOUT;
		}
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	if (got == 0)
		return 0;
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(err, errlen, "%s", buf);
	return -ECHILD;
}

static void pty_poll_closed_cb(uv_handle_t *h)
{
	struct pty *p = h->data;
	p->poll_closed = true;
	pty_maybe_closed(p);
}

int pty_spawn(struct pty *p, uv_loop_t *loop, struct transport *t, unsigned short cols,
	      unsigned short rows, const struct pty_callbacks *cb, void *data, int *setup_fd,
	      char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->loop = loop;
	p->cb = cb;
	p->data = data;
	p->master = -1;
	p->pid = -1;
	int errp[2] = {-1, -1};
	char slave_path[128];
	int rc;

	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0 ||
	    ptsname_r(p->master, slave_path, sizeof(slave_path)) != 0) {
		rc = -errno;
		snprintf(err, errlen, "open a pseudo-terminal: %s", strerror(errno));
		goto fail;
	}
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	ioctl(p->master, TIOCSWINSZ, &ws);
	if (pipe2(errp, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p->pid = fork();
	if (p->pid == 0)
		pty_child(slave_path, p->master, errp[1], t);
	int fork_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(errp[1]);
	errp[1] = -1;
	if (p->pid < 0) {
		rc = -fork_errno;
		snprintf(err, errlen, "fork: %s", strerror(fork_errno));
		goto fail;
	}
	rc = transport_after_fork(t, p->pid, err, errlen);
	if (rc == 0 && !setup_fd)
		rc = pty_read_setup_error(errp[0], err, errlen);
	if (rc < 0) {
		transport_kill(t, p->pid, false);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		goto fail;
	}
	if (setup_fd) {
		fcntl(errp[0], F_SETFL, O_NONBLOCK);
		*setup_fd = errp[0];
	} else {
		close(errp[0]);
	}

	uv_poll_init(loop, &p->poll, p->master);
	p->poll.data = p;
	pty_update_poll(p);
	/* An exit that came already is told from here (on_exit before we return). */
	if (reap_watch(loop, &p->reap, p->pid, pty_exit_cb, p) < 0) {
		p->exited = true; /* (cannot happen but out of memory: then kill and wait) */
		transport_kill(t, p->pid, false);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->cb->on_exit(p, 0);
	}
	return 0;

fail:
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (p->master >= 0)
		close(p->master);
	p->master = -1;
	return rc;
}

void pty_close(struct pty *p)
{
	if (p->closing)
		return;
	p->closing = true;
	pty_drop_queue(p);
	uv_close((uv_handle_t *)&p->poll, pty_poll_closed_cb);
}
