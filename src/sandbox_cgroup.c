/*
 * sandbox_cgroup.c - the session's cgroups (host root only).
 *
 * Owns struct sandbox_cgroups: one directory per hierarchy the session uses,
 * <mount>/ptybox/<ptybox pid>-<n>, with v1 or v2 detected per controller
 * (memory, pids, cpu, freezer), because hosts still mix both. sandbox_new
 * creates and limits them before fork; the outer child joins them with plain
 * open/write (async-signal-safe), on v1 through `tasks` (see sandbox_cgroup_join);
 * sandbox_kill_all freezes, kills and drains
 * them, so that nothing forked or setsid'ed inside escapes the session's end;
 * sandbox_free removes them. Everything the child needs (paths included) is
 * formatted here in the parent.
 *
 * A ptybox that was SIGKILLed leaves its cgroups behind, with its sandbox still
 * dying in them (it goes by PDEATHSIG after ptybox, and a process on its way out
 * stays in its cgroups a while after it stopped showing in /proc, e.g. through
 * an RCU grace period when it releases the mount namespace) or, if ptybox died
 * inside sandbox_cgroup_kill, frozen. The first session of every later ptybox
 * sweeps them (sandbox_cgroup_sweep): thaw, kill, wait until empty, rmdir, in
 * SB_CG_SWEEP_WAIT_MS at most, paid only while a stale cgroup is still busy.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define SB_CG_FREEZE_WAIT_MS 1000 /* sandbox_cgroup_kill: bound on waiting for the freeze */
#define SB_CG_RMDIR_WAIT_MS  1000 /* sandbox_cgroup_remove: bound on retrying a busy cgroup */
#define SB_CG_SWEEP_WAIT_MS  500  /* sandbox_cgroup_sweep: bound on waiting for stale ones */
#define SB_CG_SWEEPS	     3	  /* sweeps per process at most, while some are left */

static const char *const sandbox_cgroup_names[SANDBOX_CG_COUNT] = {"memory", "pids", "cpu",
								   "freezer"};

static void sandbox_cgroup_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int sandbox_cgroup_write(const char *path, const char *s)
{
	size_t len = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void sandbox_cgroup_unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

static bool sandbox_cgroup_word_in(const char *list, const char *word, const char *seps)
{
	size_t n = strlen(word);
	const char *p = list;

	while (*p) {
		size_t k = strcspn(p, seps);
		if (k == n && !strncmp(p, word, n))
			return true;
		p += k;
		p += strspn(p, seps);
	}
	return false;
}

static struct sandbox_cgroup *sandbox_cgroup_for_mnt(struct sandbox_cgroups *cgs, const char *mnt,
						     bool v2)
{
	size_t i;

	for (i = 0; i < cgs->n; i++)
		if (cgs->cg[i].v2 == v2 && !strcmp(cgs->cg[i].mnt, mnt))
			return &cgs->cg[i];
	if (cgs->n == SANDBOX_CG_COUNT)
		return NULL;
	cgs->cg[cgs->n].mnt = strdup(mnt);
	cgs->cg[cgs->n].v2 = v2;
	return cgs->cg[cgs->n].mnt ? &cgs->cg[cgs->n++] : NULL;
}

/* Finds, for each controller, the v1 hierarchy serving it or else the v2 tree;
 * returns the mask of controllers found or -errno. */
static int sandbox_cgroup_detect(struct sandbox_cgroups *cgs, char *err, size_t errlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *v2mnt = NULL;
	size_t cap = 0;
	unsigned have = 0;
	int c;

	if (!f) {
		sandbox_errf(err, errlen, "open /proc/self/mountinfo: %s", strerror(errno));
		return -errno;
	}
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - "), *fields[5], *save = NULL, *fstype, *super;
		int n = 0;

		if (!sep)
			continue;
		*sep = '\0';
		for (char *t = strtok_r(line, " ", &save); t && n < 5;
		     t = strtok_r(NULL, " ", &save))
			fields[n++] = t;
		fstype = strtok_r(sep + 3, " ", &save);
		(void)strtok_r(NULL, " ", &save); /* source */
		super = strtok_r(NULL, " \n", &save);
		if (n < 5 || !fstype)
			continue;
		sandbox_cgroup_unescape(fields[4]);
		if (!strcmp(fstype, "cgroup2") && !v2mnt) {
			v2mnt = strdup(fields[4]);
		} else if (!strcmp(fstype, "cgroup") && super) {
			for (c = 0; c < SANDBOX_CG_COUNT; c++) {
				struct sandbox_cgroup *g;
				if ((have & (1u << c)) ||
				    !sandbox_cgroup_word_in(super, sandbox_cgroup_names[c], ","))
					continue;
				g = sandbox_cgroup_for_mnt(cgs, fields[4], false);
				if (!g)
					goto nomem;
				g->mask |= 1u << c;
				have |= 1u << c;
			}
		}
	}
	if (v2mnt && have != (1u << SANDBOX_CG_COUNT) - 1) {
		char path[PATH_MAX], ctl[512];
		struct sandbox_cgroup *g = NULL;

		snprintf(path, sizeof(path), "%s/cgroup.controllers", v2mnt);
		if (sandbox_file_read(path, ctl, sizeof(ctl)) < 0)
			ctl[0] = '\0';
		for (c = 0; c < SANDBOX_CG_COUNT; c++) {
			/* v2 freezing is core (cgroup.freeze), not a controller */
			if ((have & (1u << c)) ||
			    (c != SANDBOX_CG_FREEZER &&
			     !sandbox_cgroup_word_in(ctl, sandbox_cgroup_names[c], " \n")))
				continue;
			if (!g && !(g = sandbox_cgroup_for_mnt(cgs, v2mnt, true)))
				goto nomem;
			g->mask |= 1u << c;
			have |= 1u << c;
		}
	}
	free(line);
	free(v2mnt);
	fclose(f);
	return (int)have;
nomem:
	free(line);
	free(v2mnt);
	fclose(f);
	sandbox_errf(err, errlen, "cgroups: %s", strerror(ENOMEM));
	return -ENOMEM;
}

static const struct sandbox_cgroup *sandbox_cgroup_of(const struct sandbox_cgroups *cgs, int ctrl)
{
	size_t i;

	for (i = 0; i < cgs->n; i++)
		if (cgs->cg[i].dir && (cgs->cg[i].mask & (1u << ctrl)))
			return &cgs->cg[i];
	return NULL;
}

/* Writes value to dir/file; a missing file is skipped when optional. */
static int sandbox_cgroup_set(const struct sandbox_cgroup *g, const char *file, const char *value,
			      bool optional, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", g->dir, file);
	rc = sandbox_cgroup_write(path, value);
	if (rc == -ENOENT && optional)
		return 0;
	if (rc < 0)
		sandbox_errf(err, errlen, "write %s to %s: %s", value, path, strerror(-rc));
	return rc;
}

/* Drops the session's directory name (not the directory itself). */
static void sandbox_cgroup_forget(struct sandbox_cgroup *g)
{
	free(g->dir);
	free(g->procs);
	free(g->join);
	g->dir = g->procs = g->join = NULL;
}

static int sandbox_cgroup_kill_procs(const char *procs, pid_t spare);
static bool sandbox_cgroup_empty(const char *procs);

/* Calls fn on every stale cgroup below base: named <pid>-<n> by a ptybox (not us)
 * that no longer exists. Returns how many fn said it could not remove. */
static int sandbox_cgroup_each_stale(const struct sandbox_cgroup *g, const char *base,
				     int (*fn)(const struct sandbox_cgroup *g, const char *dir,
					       int64_t deadline),
				     int64_t deadline)
{
	DIR *d = opendir(base);
	struct dirent *de;
	int left = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char dir[PATH_MAX + NAME_MAX + 2], *end;
		long owner = strtol(de->d_name, &end, 10);

		if (owner <= 0 || *end != '-' || owner == (long)getpid())
			continue;
		if (kill((pid_t)owner, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", base, de->d_name);
		left += fn(g, dir, deadline);
	}
	closedir(d);
	return left;
}

/* Sweep, first pass: thaw (a ptybox killed inside sandbox_cgroup_kill leaves its
 * session frozen, and a frozen v1 task sits on its SIGKILL) and kill. */
static int sandbox_cgroup_sweep_kill(const struct sandbox_cgroup *g, const char *dir,
				     int64_t deadline)
{
	char path[PATH_MAX + NAME_MAX + 32];

	(void)deadline;
	if (g->mask & (1u << SANDBOX_CG_FREEZER)) {
		snprintf(path, sizeof(path), g->v2 ? "%s/cgroup.freeze" : "%s/freezer.state", dir);
		sandbox_cgroup_write(path, g->v2 ? "0" : "THAWED");
	}
	snprintf(path, sizeof(path), "%s/cgroup.kill", dir); /* v2, Linux 5.14 */
	if (!g->v2 || sandbox_cgroup_write(path, "1") < 0) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		sandbox_cgroup_kill_procs(path, 0);
	}
	return 0;
}

/* Sweep, second pass: wait for the processes to be gone (they may still be dying:
 * a killed ptybox's sandbox dies by PDEATHSIG after it) and remove. 1 if left. */
static int sandbox_cgroup_sweep_remove(const struct sandbox_cgroup *g, const char *dir,
				       int64_t deadline)
{
	char procs[PATH_MAX + NAME_MAX + 32];
	long delay = 1;

	(void)g;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	while (!sandbox_cgroup_empty(procs) && sandbox_now_ms() < deadline) {
		sandbox_cgroup_kill_procs(procs, 0); /* whatever forked before its kill */
		sandbox_cgroup_sleep_ms(1);
	}
	/* an exited task leaves the cgroup a little after cgroup.procs stops showing it */
	while (rmdir(dir) < 0) {
		if (errno != EBUSY || sandbox_now_ms() >= deadline) {
			log_msg("sandbox: could not remove the stale cgroup %s: %s", dir,
				strerror(errno));
			return 1;
		}
		sandbox_cgroup_sleep_ms(delay);
		delay = delay < 16 ? delay * 2 : delay;
	}
	log_msg("sandbox: removed the stale cgroup %s", dir);
	return 0;
}

/* Removes the cgroups of a ptybox that died without cleaning up (SIGKILL): the name
 * says which ptybox made one; if that process is gone, whatever is still inside is
 * thawed and killed in every hierarchy first (the same processes are in each), then
 * awaited and the directories go. Waits at most SB_CG_SWEEP_WAIT_MS in all, and only
 * while a stale cgroup is still busy. Returns how many are left (for a later sweep). */
static int sandbox_cgroup_sweep(const struct sandbox_cgroups *cgs)
{
	int64_t deadline = sandbox_now_ms() + SB_CG_SWEEP_WAIT_MS;
	char base[PATH_MAX];
	size_t i;
	int left = 0;

	for (i = 0; i < cgs->n; i++) {
		snprintf(base, sizeof(base), "%s/ptybox", cgs->cg[i].mnt);
		sandbox_cgroup_each_stale(&cgs->cg[i], base, sandbox_cgroup_sweep_kill, deadline);
	}
	for (i = 0; i < cgs->n; i++) {
		snprintf(base, sizeof(base), "%s/ptybox", cgs->cg[i].mnt);
		left += sandbox_cgroup_each_stale(&cgs->cg[i], base, sandbox_cgroup_sweep_remove,
						  deadline);
	}
	return left;
}

static int sandbox_cgroup_create(struct sandbox_cgroups *cgs, pid_t parent, char *err,
				 size_t errlen)
{
	static int sweeps;
	static unsigned seq;
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < cgs->n; i++) {
		struct sandbox_cgroup *g = &cgs->cg[i];

		snprintf(path, sizeof(path), "%s/ptybox", g->mnt);
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			sandbox_errf(err, errlen, "mkdir %s: %s", path, strerror(errno));
			return -errno;
		}
		for (int c = 0; g->v2 && c < SANDBOX_CG_COUNT; c++) {
			char en[32];
			if (c == SANDBOX_CG_FREEZER || !(g->mask & (1u << c)))
				continue;
			snprintf(en, sizeof(en), "+%s", sandbox_cgroup_names[c]);
			snprintf(path, sizeof(path), "%s/cgroup.subtree_control", g->mnt);
			int rc = sandbox_cgroup_write(path, en);
			if (rc == 0) {
				snprintf(path, sizeof(path), "%s/ptybox/cgroup.subtree_control",
					 g->mnt);
				rc = sandbox_cgroup_write(path, en);
			}
			if (rc < 0) {
				sandbox_errf(err, errlen, "write %s to %s: %s", en, path,
					     strerror(-rc));
				return rc;
			}
		}
	}
	/* Once per process; again at the next sessions while some are left (busy),
	 * SB_CG_SWEEPS times at most. */
	if (sweeps < SB_CG_SWEEPS)
		sweeps = sandbox_cgroup_sweep(cgs) ? sweeps + 1 : SB_CG_SWEEPS;
	/* The same name in every hierarchy; a stale one (a recycled ptybox pid) moves us on. */
	for (int tries = 0;; tries++) {
		unsigned n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
		int e = 0;

		for (i = 0; i < cgs->n && !e; i++) {
			struct sandbox_cgroup *g = &cgs->cg[i];
			if (asprintf(&g->dir, "%s/ptybox/%ld-%u", g->mnt, (long)parent, n) < 0)
				g->dir = NULL;
			if (!g->dir || asprintf(&g->procs, "%s/cgroup.procs", g->dir) < 0)
				g->procs = NULL;
			if (!g->procs || asprintf(&g->join, "%s/%s", g->dir,
						  g->v2 ? "cgroup.procs" : "tasks") < 0)
				g->join = NULL;
			if (!g->join)
				e = ENOMEM;
			else if (mkdir(g->dir, 0755) < 0)
				e = errno;
		}
		if (!e)
			return 0;
		sandbox_errf(err, errlen, "mkdir %s: %s",
			     cgs->cg[i - 1].dir ? cgs->cg[i - 1].dir : "cgroup", strerror(e));
		sandbox_cgroup_forget(&cgs->cg[i - 1]);
		while (i-- > 1) {
			rmdir(cgs->cg[i - 1].dir);
			sandbox_cgroup_forget(&cgs->cg[i - 1]);
		}
		if (e != EEXIST || tries == 100)
			return -e;
	}
}

static int sandbox_cgroup_limit(const struct sandbox_cgroups *cgs, const struct sandbox_options *o,
				char *err, size_t errlen)
{
	const struct sandbox_cgroup *g;
	char v[64];
	int rc = 0;

	if (o->memory && (g = sandbox_cgroup_of(cgs, SANDBOX_CG_MEMORY))) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)o->memory);
		if (g->v2) {
			rc = sandbox_cgroup_set(g, "memory.max", v, false, err, errlen);
			if (rc == 0)
				rc = sandbox_cgroup_set(g, "memory.swap.max", "0", true, err,
							errlen);
		} else {
			rc = sandbox_cgroup_set(g, "memory.limit_in_bytes", v, false, err, errlen);
			if (rc == 0)
				rc = sandbox_cgroup_set(g, "memory.memsw.limit_in_bytes", v, true,
							err, errlen);
		}
		if (rc < 0)
			return rc;
	}
	if (o->pids && (g = sandbox_cgroup_of(cgs, SANDBOX_CG_PIDS))) {
		/* + the outer child and init, so the user gets all of --pids */
		snprintf(v, sizeof(v), "%u", o->pids + 2);
		rc = sandbox_cgroup_set(g, "pids.max", v, false, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (o->cpus > 0 && (g = sandbox_cgroup_of(cgs, SANDBOX_CG_CPU))) {
		unsigned long quota = (unsigned long)(o->cpus * 100000.0 + 0.5);
		if (quota < 1000)
			quota = 1000;
		if (g->v2) {
			snprintf(v, sizeof(v), "%lu 100000", quota);
			rc = sandbox_cgroup_set(g, "cpu.max", v, false, err, errlen);
		} else {
			rc = sandbox_cgroup_set(g, "cpu.cfs_period_us", "100000", false, err,
						errlen);
			snprintf(v, sizeof(v), "%lu", quota);
			if (rc == 0)
				rc = sandbox_cgroup_set(g, "cpu.cfs_quota_us", v, false, err,
							errlen);
		}
	}
	return rc;
}

int sandbox_cgroup_setup(struct sandbox_cgroups *cgs, const struct sandbox_options *o, pid_t parent,
			 char *err, size_t errlen)
{
	static int warned;
	int have, rc;

	have = sandbox_cgroup_detect(cgs, err, errlen);
	if (have < 0)
		return have;
	if (have != (1 << SANDBOX_CG_COUNT) - 1) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "cgroup controllers missing:%s%s%s%s; running without those limits",
			 have & (1 << SANDBOX_CG_MEMORY) ? "" : " memory",
			 have & (1 << SANDBOX_CG_PIDS) ? "" : " pids",
			 have & (1 << SANDBOX_CG_CPU) ? "" : " cpu",
			 have & (1 << SANDBOX_CG_FREEZER) ? "" : " freezer");
		sandbox_warn(o, &warned, msg);
	}
	rc = sandbox_cgroup_create(cgs, parent, err, errlen);
	if (rc == 0)
		rc = sandbox_cgroup_limit(cgs, o, err, errlen);
	return rc;
}

/* On v1 the caller writes "0" to `tasks`, which moves only the calling thread: the
 * kernel then skips the global threadgroup lock, whose write side waits for an RCU
 * grace period (5-20 ms per join, measured; cgroup.procs pays it on every hierarchy
 * the first time). The outer child is a fork's only thread and has no children yet,
 * so the thread is the whole process, and everything it forks later inherits the
 * cgroups. v2 has no `tasks` (cgroup.threads is for threaded cgroups only). */
int sandbox_cgroup_join(const struct sandbox_cgroups *cgs, const char **failed)
{
	size_t i;

	for (i = 0; i < cgs->n; i++) {
		int fd, e;

		if (!cgs->cg[i].join)
			continue;
		fd = open(cgs->cg[i].join, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n;
			do
				n = write(fd, "0", 1);
			while (n < 0 && errno == EINTR);
			e = n == 1 ? 0 : n < 0 ? errno : EIO;
			if (close(fd) < 0 && !e)
				e = errno;
			if (!e)
				continue;
		} else {
			e = errno;
		}
		*failed = cgs->cg[i].dir;
		errno = e;
		return -1;
	}
	return 0;
}

/* Reads pids from a cgroup.procs file and sends each but `spare` SIGKILL; returns how many. */
static int sandbox_cgroup_kill_procs(const char *procs, pid_t spare)
{
	char buf[8192], *p, *nl;
	int fd = open(procs, O_RDONLY | O_CLOEXEC), n = 0;
	size_t len = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = '\0';
		for (p = buf; (nl = strchr(p, '\n')); p = nl + 1) {
			long pid = strtol(p, NULL, 10);
			if (pid > 0 && pid != spare && kill((pid_t)pid, SIGKILL) == 0)
				n++;
		}
		len = strlen(p);
		memmove(buf, p, len);
	}
	close(fd);
	return n;
}

static bool sandbox_cgroup_empty(const char *procs)
{
	char buf[16];

	return sandbox_file_read(procs, buf, sizeof(buf)) <= 0;
}

/* Freeze so nothing forks behind our back, kill every member but the outer child
 * (it must outlive init to reap it), thaw so the kills land. Not v2's cgroup.kill:
 * it cannot spare anyone. */
void sandbox_cgroup_kill(const struct sandbox_cgroups *cgs, pid_t spare)
{
	const struct sandbox_cgroup *g = sandbox_cgroup_of(cgs, SANDBOX_CG_FREEZER);
	char path[PATH_MAX], state[64];
	int64_t deadline = sandbox_now_ms() + SB_CG_FREEZE_WAIT_MS;

	if (!g)
		return;
	snprintf(path, sizeof(path), g->v2 ? "%s/cgroup.freeze" : "%s/freezer.state", g->dir);
	if (sandbox_cgroup_write(path, g->v2 ? "1" : "FROZEN") == 0) {
		const char *fpath = path;
		char events[PATH_MAX];
		if (g->v2) {
			snprintf(events, sizeof(events), "%s/cgroup.events", g->dir);
			fpath = events;
		}
		while (sandbox_now_ms() < deadline &&
		       sandbox_file_read(fpath, state, sizeof(state)) > 0 &&
		       !(g->v2 ? strstr(state, "frozen 1") : strstr(state, "FROZEN")))
			sandbox_cgroup_sleep_ms(1);
	}
	sandbox_cgroup_kill_procs(g->procs, spare);
	sandbox_cgroup_write(path, g->v2 ? "0" : "THAWED");
}

void sandbox_cgroup_drain(const struct sandbox_cgroups *cgs, int64_t deadline)
{
	size_t i;

	for (i = 0; i < cgs->n; i++) {
		if (!cgs->cg[i].procs)
			continue;
		while (!sandbox_cgroup_empty(cgs->cg[i].procs) && sandbox_now_ms() < deadline) {
			sandbox_cgroup_kill_procs(cgs->cg[i].procs, 0);
			sandbox_cgroup_sleep_ms(1);
		}
	}
}

uint64_t sandbox_cgroup_oom_kills(const struct sandbox_cgroups *cgs)
{
	const struct sandbox_cgroup *g = sandbox_cgroup_of(cgs, SANDBOX_CG_MEMORY);
	char path[PATH_MAX], buf[1024], *p;

	if (!g)
		return 0;
	snprintf(path, sizeof(path), g->v2 ? "%s/memory.events" : "%s/memory.oom_control", g->dir);
	if (sandbox_file_read(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; (p = strstr(p, "oom_kill ")); p++)
		if (p == buf || p[-1] == '\n')
			return strtoull(p + 9, NULL, 10);
	return 0;
}

const char *sandbox_cgroup_death_reason(const struct sandbox_cgroups *cgs, uint64_t *told)
{
	uint64_t kills = sandbox_cgroup_oom_kills(cgs);
	uint64_t was = __atomic_load_n(told, __ATOMIC_SEQ_CST);

	while (kills > was)
		if (__atomic_compare_exchange_n(told, &was, kills, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return "out of memory";
	return NULL;
}

long long sandbox_cgroup_memory(const struct sandbox_cgroups *cgs)
{
	const struct sandbox_cgroup *g = sandbox_cgroup_of(cgs, SANDBOX_CG_MEMORY);
	char path[PATH_MAX], buf[32];
	ssize_t n;

	if (!g)
		return -ENOTSUP;
	snprintf(path, sizeof(path), g->v2 ? "%s/memory.current" : "%s/memory.usage_in_bytes",
		 g->dir);
	n = sandbox_file_read(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? n : -ENODATA;
	return strtoll(buf, NULL, 10);
}

void sandbox_cgroup_remove(struct sandbox_cgroups *cgs)
{
	size_t i;

	for (i = 0; i < cgs->n; i++) {
		int64_t deadline = sandbox_now_ms() + SB_CG_RMDIR_WAIT_MS;
		long delay = 1;

		if (cgs->cg[i].dir) {
			/* Tasks leave a cgroup a little after they are reaped; retry briefly. */
			while (rmdir(cgs->cg[i].dir) < 0 && errno == EBUSY &&
			       sandbox_now_ms() < deadline) {
				sandbox_cgroup_sleep_ms(delay);
				delay = delay < 32 ? delay * 2 : delay;
			}
		}
		sandbox_cgroup_forget(&cgs->cg[i]);
		free(cgs->cg[i].mnt);
		cgs->cg[i].mnt = NULL;
	}
	cgs->n = 0;
}
