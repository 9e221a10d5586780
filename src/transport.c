/*
 * transport.c - how the PTY's child comes to run the protocol's bootstrap.
 *
 * local: inside the embedded sandbox (sandbox.c); none: bare, on this host;
 * ssh and exec: through a command that gives a terminal elsewhere. Everything
 * the child needs (argv, environment, the sandbox plan) is built here in the
 * parent, so the child only calls async-signal-safe functions.
 */
#define _GNU_SOURCE
#include "transport.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang.h"
#include "mount.h"
#include "protocol.h"
#include "ptybox.h"

#define TRANSPORT_PATH	  "/usr/local/bin:/usr/bin:/bin"
#define TRANSPORT_MAX_ENV 256

struct transport {
	enum transport_kind kind;
	char *argv[16];
	char *envp[TRANSPORT_MAX_ENV + 1];
	size_t envc;
	char *exec_path; /* argv[0] resolved in the parent (none, ssh, exec) */
	char *workdir;	 /* none: where the child starts */
	struct sandbox *sandbox;
};

/* "[user@]host[:port]", host a name, an IPv4 address or an IPv6 one in
 * brackets ("[::1]:2222"). What the URL does not say stays empty, and is
 * ssh's to choose (~/.ssh/config's User and Port, say). -EINVAL when it is
 * not such a URL. */
static int transport_ssh_split(const char *target, char *user, char *host, char *port, size_t cap)
{
	const char *at = strrchr(target, '@'), *h = at ? at + 1 : target, *end, *p = NULL;
	if ((at && (at == target || (size_t)(at - target) >= cap)) || !*h)
		return -EINVAL;
	snprintf(user, cap, "%.*s", at ? (int)(at - target) : 0, target);
	if (*h == '[') {
		if (!(end = strchr(++h, ']')) || end == h || (end[1] && end[1] != ':'))
			return -EINVAL;
		p = end[1] ? end + 2 : NULL;
	} else {
		end = strchr(h, ':');
		if (end && strchr(end + 1, ':'))
			return -EINVAL; /* a bare IPv6 address: its port is ambiguous */
		p = end ? end + 1 : NULL;
		end = end ? end : h + strlen(h);
	}
	if (end == h || (size_t)(end - h) >= cap || *h == '-')
		return -EINVAL;
	snprintf(host, cap, "%.*s", (int)(end - h), h);
	port[0] = '\0';
	if (p) {
		char *stop;
		long n = strtol(p, &stop, 10);
		if (!*p || *stop || n < 1 || n > 65535 || *p == '+' || *p == '-')
			return -EINVAL;
		snprintf(port, cap, "%ld", n);
	}
	return 0;
}

int transport_parse_via(const char *via, struct transport_options *o, char *err, size_t errlen)
{
	char user[256], host[256], port[256];
	if (!via || strcmp(via, "local") == 0) {
		o->kind = TRANSPORT_LOCAL;
	} else if (strcmp(via, "none") == 0) {
		o->kind = TRANSPORT_NONE;
	} else if (strncmp(via, "ssh://", 6) == 0 && !strpbrk(via + 6, " /'\"\\;") &&
		   transport_ssh_split(via + 6, user, host, port, sizeof(host)) == 0) {
		o->kind = TRANSPORT_SSH;
		o->target = via + 6;
	} else if (strncmp(via, "exec:", 5) == 0 && via[5]) {
		o->kind = TRANSPORT_EXEC;
		o->target = via + 5;
	} else {
		snprintf(err, errlen,
			 "--via %s: expected local, none, ssh://[user@]host[:port] or exec:COMMAND",
			 via);
		return -EINVAL;
	}
	return 0;
}

int transport_options_from(const struct ptybox_options *o, struct transport_options *t, char *err,
			   size_t errlen)
{
	memset(t, 0, sizeof(*t));
	int rc = transport_parse_via(o->via, t, err, errlen);
	if (rc < 0)
		return rc;
	t->python = o->python;
	if (!(t->lang = lang_find(o->lang))) {
		char list[128];
		lang_list(list, sizeof(list));
		snprintf(err, errlen, "--lang %s: expected %s", o->lang, list);
		return -EINVAL;
	}
	t->env_extra = o->env;
	t->workdir = o->workdir ? o->workdir : MOUNT_WORKDIR_DEFAULT;
	t->wheels = o->wheels && *o->wheels ? o->wheels : NULL;
	if (!mount_path_ok(t->workdir)) {
		snprintf(err, errlen, "--workdir %s: expected an absolute path without '..'",
			 t->workdir);
		return -EINVAL;
	}
	if (o->mounts && *o->mounts && t->kind != TRANSPORT_LOCAL) {
		snprintf(err, errlen, "--mount needs the local sandbox (--via local)");
		return -EINVAL;
	}
	if ((rc = mount_check_list(o->mounts, t->wheels && t->kind == TRANSPORT_LOCAL, err,
				   errlen)) < 0)
		return rc;
	t->sandbox = (struct sandbox_options){
		.net = o->net,
		.memory = o->memory,
		.tmp_size = o->tmp_size,
		.max_file_size = o->max_file_size,
		.pids = o->pids,
		.nofile = o->nofile,
		.cpus = o->cpus,
		.mounts = o->mounts,
		.workdir = t->workdir,
		.wheels = t->kind == TRANSPORT_LOCAL ? t->wheels : NULL,
	};
	/* tmpfs pages count against the memory limit: /tmp stays below it. */
	struct sandbox_options *so = &t->sandbox;
	if (so->memory && (so->tmp_size == 0 || so->tmp_size >= so->memory))
		so->tmp_size = so->memory / 2;
	return 0;
}

static bool transport_str_equal(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether two NULL-terminated lists hold the same strings in the same order
 * (an empty list is no list). */
static bool transport_list_equal(char *const *e, char *const *f)
{
	for (; e && f && *e && *f; e++, f++)
		if (strcmp(*e, *f) != 0)
			return false;
	return !(e && *e) && !(f && *f);
}

bool transport_options_equal(const struct transport_options *a, const struct transport_options *b)
{
	const struct sandbox_options *x = &a->sandbox, *y = &b->sandbox;
	/* A pooled interpreter made without a session's mounts (or with another
	 * one's) would show it other files: such a session starts its own. */
	return transport_list_equal(a->env_extra, b->env_extra) &&
	       transport_list_equal(x->mounts, y->mounts) &&
	       transport_str_equal(a->workdir, b->workdir) &&
	       transport_str_equal(a->wheels, b->wheels) && a->kind == b->kind &&
	       transport_str_equal(a->target, b->target) &&
	       transport_str_equal(a->python, b->python) && transport_str_equal(a->lang, b->lang) &&
	       x->net == y->net && x->memory == y->memory && x->tmp_size == y->tmp_size &&
	       x->max_file_size == y->max_file_size && x->pids == y->pids &&
	       x->nofile == y->nofile && x->cpus == y->cpus;
}

static int transport_add_env(struct transport *t, const char *k, const char *v)
{
	if (t->envc == TRANSPORT_MAX_ENV)
		return -E2BIG;
	char *kv;
	if (v ? asprintf(&kv, "%s=%s", k, v) < 0 : !(kv = strdup(k)))
		return -ENOMEM;
	/* A later value for the same key replaces the earlier one. */
	size_t klen = strcspn(kv, "=");
	for (size_t i = 0; i < t->envc; i++) {
		if (strncmp(t->envp[i], kv, klen + 1) == 0) {
			free(t->envp[i]);
			t->envp[i] = kv;
			return 0;
		}
	}
	t->envp[t->envc++] = kv;
	return 0;
}

/* The allow-list: nothing of ptybox's own environment reaches the code but
 * TERM (the terminal really is one) and what the user passed with --env. */
static int transport_build_env(struct transport *t, const struct transport_options *o)
{
	const char *term = getenv("TERM");
	const char *home = o->kind == TRANSPORT_NONE && getenv("HOME") ? getenv("HOME") : "/tmp";
	int rc = 0;
	rc = rc ? rc : transport_add_env(t, "PATH", TRANSPORT_PATH);
	rc = rc ? rc : transport_add_env(t, "HOME", home);
	rc = rc ? rc : transport_add_env(t, "LANG", "C.UTF-8");
	rc = rc ? rc : transport_add_env(t, "TERM", term && *term ? term : "xterm-256color");
	rc = rc ? rc : transport_add_env(t, "MPLBACKEND", "Agg");
	/* Fewer malloc arenas: the driver's threads must not eat RLIMIT_AS. */
	rc = rc ? rc : transport_add_env(t, "MALLOC_ARENA_MAX", "2");
	for (char *const *e = o->env_extra; !rc && e && *e; e++)
		rc = transport_add_env(t, *e, NULL);
	/* ptybox's own, after --env: they say what the session is */
	rc = rc ? rc : transport_add_env(t, "PTYBOX_WORKDIR", o->workdir);
	if (o->wheels)
		rc = rc ? rc
			: transport_add_env(t, "PTYBOX_WHEELS",
					    o->kind == TRANSPORT_LOCAL ? MOUNT_WHEELS_PATH
								       : o->wheels);
	if (o->kind == TRANSPORT_LOCAL && o->sandbox.net)
		rc = rc ? rc : transport_add_env(t, "PTYBOX_NET", "1");
	return rc;
}

/* Python run before the bootstrap over ssh and exec, where no process of ours
 * runs on the far side before the interpreter: the folder the code starts in
 * (the relay and every kernel it forks inherit it). Its error is the last line
 * on the terminal, which the session's start failure tells. */
#define TRANSPORT_CHDIR                                                                            \
	"import os;w=os.environ.get(\"PTYBOX_WORKDIR\");w and(os.path.isdir(w)or "                 \
	"__import__(\"sys\").exit(\"ptybox: workdir \"+w+\": No such file or directory\"));"       \
	"w and os.chdir(w);"

/* execvp's search, done in the parent. */
static char *transport_which(const char *name)
{
	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? strdup(name) : NULL;
	const char *path = getenv("PATH");
	char *dirs = strdup(path && *path ? path : TRANSPORT_PATH), *save = NULL;
	if (!dirs)
		return NULL;
	char *found = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *cand;
		if (asprintf(&cand, "%s/%s", *d ? d : ".", name) < 0)
			break;
		if (access(cand, X_OK) == 0)
			found = cand;
		else
			free(cand);
	}
	free(dirs);
	return found;
}

static int transport_set_argv(struct transport *t, const char *const *argv)
{
	for (size_t i = 0; argv[i]; i++)
		if (!(t->argv[i] = strdup(argv[i])))
			return -ENOMEM;
	return 0;
}

/* " 'K=V' ..." for the far side's env(1): each --env single-quoted for the
 * shell that reads the remote command line ('\'' for a quote inside). "" when
 * there are none; NULL when out of memory. */
static char *transport_remote_env(char *const *env)
{
	size_t n = 1;
	for (char *const *e = env; e && *e; e++) {
		n += 3; /* a space and two quotes */
		for (const char *c = *e; *c; c++)
			n += *c == '\'' ? 4 : 1;
	}
	char *out = malloc(n), *o = out;
	if (!out)
		return NULL;
	for (char *const *e = env; e && *e; e++) {
		*o++ = ' ';
		*o++ = '\'';
		for (const char *c = *e; *c; c++) {
			if (*c == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
			} else {
				*o++ = *c;
			}
		}
		*o++ = '\'';
	}
	*o = '\0';
	return out;
}

int transport_new(const struct transport_options *o, struct transport **out, char *err,
		  size_t errlen)
{
	struct transport *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->kind = o->kind;
	int rc = transport_build_env(t, o);
	if (rc < 0) {
		snprintf(err, errlen, "environment: %s", strerror(-rc));
		goto fail;
	}
	/* Debian's interpreter: the sandbox sees only the system's folders. */
	const char *python = o->python ? o->python : "/usr/bin/python3";
	char *remote = NULL, *renv = NULL;
	/* Over ssh and exec the local allow-list stays here (the far side has its
	 * own PATH and HOME), but --env goes along, through env(1). */
	const char *env_cmd = "";
	if (o->kind == TRANSPORT_SSH || o->kind == TRANSPORT_EXEC) {
		/* ptybox's own variables go along too (transport_build_env put them last) */
		char *own[4] = {NULL};
		size_t n = 0;
		for (size_t i = 0; i < t->envc && n < 3; i++)
			if (strncmp(t->envp[i], "PTYBOX_", 7) == 0)
				own[n++] = t->envp[i];
		char *user = transport_remote_env(o->env_extra), *ours = transport_remote_env(own);
		if (user && ours && asprintf(&renv, "%s%s", user, ours) < 0)
			renv = NULL;
		free(user);
		free(ours);
		if (!renv)
			goto nomem;
		env_cmd = "env";
	}
	switch (o->kind) {
	case TRANSPORT_LOCAL:
	case TRANSPORT_NONE:
		rc = transport_set_argv(t, (const char *const[]){python, "-I", "-S", "-c",
								 PROTOCOL_BOOTSTRAP, NULL});
		break;
	case TRANSPORT_SSH: {
		if (asprintf(&remote, "exec %s%s %s -I -S -c '%s'", env_cmd, renv ? renv : "",
			     o->python ? o->python : "python3",
			     TRANSPORT_CHDIR PROTOCOL_BOOTSTRAP) < 0) {
			remote = NULL;
			rc = -ENOMEM;
			break;
		}
		/* -p and -l only when the URL says them: else ssh's own config
		 * decides, as it does for `ssh host`. */
		char user[256], host[256], port[256];
		const char *argv[12] = {"ssh", "-tt", "-o", "BatchMode=yes"};
		size_t n = 4;
		if (transport_ssh_split(o->target, user, host, port, sizeof(host)) < 0) {
			rc = -EINVAL; /* (transport_parse_via let it through) */
			break;
		}
		if (port[0]) {
			argv[n++] = "-p";
			argv[n++] = port;
		}
		if (user[0]) {
			argv[n++] = "-l";
			argv[n++] = user;
		}
		argv[n++] = "--";
		argv[n++] = host;
		argv[n++] = remote;
		argv[n] = NULL;
		rc = transport_set_argv(t, argv);
		break;
	}
	case TRANSPORT_EXEC:
		if (asprintf(&remote, "exec %s %s%s %s -I -S -c '%s'", o->target, env_cmd,
			     renv ? renv : "", o->python ? o->python : "python3",
			     TRANSPORT_CHDIR PROTOCOL_BOOTSTRAP) < 0) {
			remote = NULL;
			rc = -ENOMEM;
			break;
		}
		rc = transport_set_argv(t, (const char *const[]){"/bin/sh", "-c", remote, NULL});
		break;
	}
	free(remote);
	free(renv);
	if (rc < 0)
		goto nomem;

	if (o->kind == TRANSPORT_LOCAL) {
		struct sandbox_options so = o->sandbox;
		so.env = t->envp;
		rc = sandbox_new(&so, &t->sandbox, err, errlen);
		if (rc < 0)
			goto fail;
	} else {
		if (o->kind == TRANSPORT_NONE && !(t->workdir = strdup(o->workdir)))
			goto nomem;
		t->exec_path = transport_which(t->argv[0]);
		if (!t->exec_path) {
			snprintf(err, errlen, "%s: not found", t->argv[0]);
			rc = -ENOENT;
			goto fail;
		}
	}
	*out = t;
	return 0;

nomem:
	rc = -ENOMEM;
	snprintf(err, errlen, "out of memory");
fail:
	transport_free(t);
	return rc;
}

void transport_child_exec(struct transport *t, int err_fd)
{
	if (t->kind == TRANSPORT_LOCAL)
		sandbox_child_exec(t->sandbox, t->argv, err_fd);
	const char *what = "exec ", *arg = t->exec_path;
	if (t->workdir && chdir(t->workdir) < 0) {
		what = "workdir ";
		arg = t->workdir;
	} else {
		execve(t->exec_path, t->argv, t->envp);
	}
	const char *why = strerrordesc_np(errno);
	ssize_t w = write(err_fd, what, strlen(what));
	w = write(err_fd, arg, strlen(arg));
	w = write(err_fd, ": ", 2);
	w = write(err_fd, why, strlen(why));
	(void)w;
	_exit(125);
}

int transport_after_fork(struct transport *t, pid_t child, char *err, size_t errlen)
{
	if (t->kind == TRANSPORT_LOCAL)
		return sandbox_after_fork(t->sandbox, child, err, errlen);
	return 0;
}

bool transport_kill_waits(const struct transport *t)
{
	return t->kind == TRANSPORT_LOCAL;
}

void transport_kill(struct transport *t, pid_t child, bool reaped)
{
	if (t->kind == TRANSPORT_LOCAL) {
		sandbox_kill_all(t->sandbox, child);
		return;
	}
	/* The child leads its own session and process group; signalling the group
	 * and not the pid stays safe after the child was reaped. Before that, the
	 * pid is ours alone, and the group may not exist yet (no setsid so far):
	 * the caller's waitpid would wait for good. */
	kill(-child, SIGKILL);
	if (!reaped)
		kill(child, SIGKILL);
}

const char *transport_death_reason(struct transport *t)
{
	return t->kind == TRANSPORT_LOCAL ? sandbox_death_reason(t->sandbox) : NULL;
}

int transport_child_fd(const struct transport *t)
{
	return t->kind == TRANSPORT_LOCAL ? sandbox_child_fd(t->sandbox) : -1;
}

const struct sandbox *transport_sandbox(const struct transport *t)
{
	return t && t->kind == TRANSPORT_LOCAL ? t->sandbox : NULL;
}

long long transport_memory(const struct transport *t)
{
	return t->kind == TRANSPORT_LOCAL ? sandbox_memory(t->sandbox) : -ENOTSUP;
}

void transport_free(struct transport *t)
{
	if (!t)
		return;
	if (t->sandbox)
		sandbox_free(t->sandbox);
	for (size_t i = 0; i < sizeof(t->argv) / sizeof(t->argv[0]); i++)
		free(t->argv[i]);
	for (size_t i = 0; i < t->envc; i++)
		free(t->envp[i]);
	free(t->exec_path);
	free(t->workdir);
	free(t);
}
