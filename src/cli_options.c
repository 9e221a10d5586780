/*
 * cli_options.c - the options every session-starting subcommand shares, the
 * small pieces of terminal output they all use, and the signals they handle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lang.h"
#include "log.h"
#include "mount.h"
#include "options.h"
#include "protocol.h"
#include "record.h"
#include "term_safe.h"

/* PID_MAX_LIMIT (2^22), less the sandbox's init and outer child, which its
 * pids cgroup counts along. */
#define CLI_MAX_PIDS ((1U << 22) - 2)
/* A second: past that, polling is just a busy CPU. */
#define CLI_MAX_BUSY_POLL 1000000U

/* (every session-starting command; --log not for new, where the server keeps
 * its own log, and the pictures' options only where a person sees results) */
#define CLI_SESSION_HELP_COMMON                                                                    \
	"Session options:\n"                                                                       \
	"  --via WHERE         local (default: the embedded sandbox), none (no sandbox),\n"        \
	"                      ssh://[user@]host[:port], exec:COMMAND\n"                           \
	"  --timeout SEC       per-snippet time limit (default 30; 0 = none)\n"                    \
	"  --kill-grace SEC    time between ^C and kill for code that ignores ^C (default 2)\n"    \
	"  --max-output SIZE   bytes kept per stream, head and tail (default 4M)\n"                \
	"  --memory SIZE       memory limit (default 1G; 0 = none)\n"                              \
	"  --pids N            process limit (default 256; 0 = none)\n"                            \
	"  --cpus N            CPU quota (default 1; 0 = none)\n"                                  \
	"  --tmp-size SIZE     size of the sandbox's /tmp (default 256M, kept below --memory)\n"   \
	"  --nofile N          open files limit (default 1024, at least 16)\n"                     \
	"  --max-file-size SIZE  largest file the code may write (default 256M; 0 = none)\n"       \
	"  --max-get SIZE      largest file a get sends whole; ranges past it (default 64M)\n"     \
	"  --net               give the sandbox the host's network\n"                              \
	"  --env K=V           set a variable for the code (repeatable)\n"                         \
	"  --mount HOST_PATH:SANDBOX_PATH[:ro|:rw]\n"                                              \
	"                      show a host file or folder in the sandbox, read-only unless\n"      \
	"                      :rw (repeatable, up to 64; local sandbox only)\n"                   \
	"  --workdir PATH      the folder the code starts in (default /tmp)\n"                     \
	"  --wheels DIR        a folder of wheels for pip install without the network\n"           \
	"  --lang LANG         the language: python (default), bash or node\n"                     \
	"  --python PATH       interpreter to run the driver on\n"                                 \
	"  --packages PATH     the folder pip installs into and imports come from, as the\n"       \
	"                      code sees it (default /tmp/.ptybox-packages)\n"                     \
	"  --busy-poll USEC    poll this long for each answer before sleeping (default\n"          \
	"                      100; 0 = never)\n"

const char cli_session_help[] =
	CLI_SESSION_HELP_COMMON "  --log FILE          write a debug log to FILE\n";

const char cli_server_session_help[] = CLI_SESSION_HELP_COMMON;

const char cli_picture_help[] =
	"  --output-dir DIR    save pictures there as ptybox-N.png (.jpg, .svg) and print\n"
	"                      their paths (default: the current folder)\n"
	"  --no-inline-images  do not show pictures in the terminal\n";

void cli_session_opts_init(struct cli_session_opts *c)
{
	memset(c, 0, sizeof(*c));
	ptybox_options_init(&c->o);
	c->o.env = c->env;
	c->packages_at = -1;
}

static int cli_bad(const char *cmd, const char *opt, const char *arg, const char *want)
{
	cli_error("%s: --%s %s: %s", cmd, opt, arg, want);
	return -1;
}

const char cli_record_help[] =
	"  --record FILE       an asciicast v2 recording of what the session shows, with a\n"
	"                      marker per execution (asciinema play FILE); FILE is\n"
	"                      created 0600 or overwritten\n"
	"  --record-max SIZE   the recording's largest size (default 64M): there it stops\n";

int cli_record_opt(struct cli_record_opts *r, int opt, const char *arg, const char *cmd)
{
	switch (opt) {
	case 0x180:
		if (!arg[0])
			return cli_bad(cmd, "record", "''", "expected a file's path");
		r->path = arg;
		return 1;
	case 0x181:
		return options_parse_size(arg, &r->max) == 0 && r->max >= RECORD_MAX_MIN &&
				       r->max <= RECORD_MAX_MAX
			       ? 1
			       : cli_bad(cmd, "record-max", arg,
					 "expected a size from 4K to 1T, e.g. 64M");
	default: return 0;
	}
}

int cli_session_opt(struct cli_session_opts *c, int opt, const char *arg, const char *cmd)
{
	struct ptybox_options *o = &c->o;
	switch (opt) {
	case 0x100: o->via = arg; return 1;
	case 0x101:
		return options_parse_seconds(arg, &o->timeout) == 0
			       ? 1
			       : cli_bad(cmd, "timeout", arg,
					 "expected seconds from 0 to 31536000 (a year), e.g. 1.5");
	case 0x102:
		return options_parse_size(arg, &o->max_output) == 0 && o->max_output >= 2 &&
				       o->max_output <= PROTOCOL_MAX_OUTPUT
			       ? 1
			       : cli_bad(cmd, "max-output", arg,
					 "expected a size from 2 to 1T, e.g. 4M");
	case 0x103:
		c->given |= CLI_GIVEN_MEMORY;
		return options_parse_size(arg, &o->memory) == 0
			       ? 1
			       : cli_bad(cmd, "memory", arg, "expected a size, e.g. 512M");
	case 0x104: /* the kernel's limit, with room for the sandbox's own two */
		c->given |= CLI_GIVEN_PIDS;
		return options_parse_uint(arg, 0, CLI_MAX_PIDS, &o->pids) == 0
			       ? 1
			       : cli_bad(cmd, "pids", arg, "expected a number from 0 to 4194302");
	case 0x105:
		c->given |= CLI_GIVEN_CPUS;
		return options_parse_cpus(arg, &o->cpus) == 0
			       ? 1
			       : cli_bad(cmd, "cpus", arg, "expected a number of CPUs, e.g. 0.5");
	case 0x106:
		c->given |= CLI_GIVEN_TMP_SIZE;
		return options_parse_size(arg, &o->tmp_size) == 0
			       ? 1
			       : cli_bad(cmd, "tmp-size", arg, "expected a size, e.g. 256M");
	case 0x107:
		return options_parse_uint(arg, 16, 1 << 20, &o->nofile) == 0
			       ? 1
			       : cli_bad(cmd, "nofile", arg, "expected a number from 16");
	case 0x108:
		return options_parse_size(arg, &o->max_file_size) == 0
			       ? 1
			       : cli_bad(cmd, "max-file-size", arg, "expected a size, e.g. 64M");
	case 0x118:
		return options_parse_size(arg, &o->max_get) == 0 && o->max_get <= PROTOCOL_MAX_GET
			       ? 1
			       : cli_bad(cmd, "max-get", arg,
					 "expected a size from 0 to 1T, e.g. 64M");
	case 0x109:
		c->given |= CLI_GIVEN_NET;
		o->net = true;
		return 1;
	case 0x10a:
		if (!strchr(arg, '=') || arg[0] == '=')
			return cli_bad(cmd, "env", arg, "expected NAME=VALUE");
		if (c->nenv == CLI_MAX_ENV)
			return cli_bad(cmd, "env", arg, "too many variables");
		c->env[c->nenv++] = (char *)arg;
		return 1;
	case 0x10f: {
		struct mount_spec m;
		char why[PATH_MAX + 128];
		if (mount_parse(arg, &m, why, sizeof(why)) < 0)
			return cli_bad(cmd, "mount", arg, why);
		for (size_t i = 0; i < c->nmounts; i++) {
			struct mount_spec other;
			if (mount_parse(c->mounts[i], &other, why, sizeof(why)) == 0 &&
			    strcmp(other.inside, m.inside) == 0) {
				cli_error("%s: --mount %s: %s is mounted twice", cmd, arg,
					  m.inside);
				return -1;
			}
		}
		if (c->nmounts == CLI_MAX_MOUNTS)
			return cli_bad(cmd, "mount", arg, "more than 64 mounts");
		c->mounts[c->nmounts++] = (char *)arg;
		o->mounts = c->mounts;
		return 1;
	}
	case 0x110:
		if (!mount_path_ok(arg))
			return cli_bad(cmd, "workdir", arg,
				       "expected an absolute path without '..', e.g. /tmp/work");
		o->workdir = arg;
		return 1;
	case 0x111:
		if (!arg[0])
			return cli_bad(cmd, "wheels", "''", "expected a folder");
		o->wheels = arg;
		return 1;
	case 0x10b: o->python = arg; return 1;
	case 0x112: {
		o->lang = arg[0] ? lang_find(arg) : NULL; /* ("": say what is meant) */
		if (o->lang)
			return 1;
		char want[160] = "expected ";
		lang_list(want + strlen(want), sizeof(want) - strlen(want));
		return cli_bad(cmd, "lang", arg[0] ? arg : "''", want);
	}
	case 0x140: { /* (an --env PTYBOX_PACKAGES=PATH of its own: a later one wins) */
		if (!arg[0] || strlen(arg) > CLI_MAX_PACKAGES)
			return cli_bad(cmd, "packages", arg[0] ? "PATH" : "''",
				       "expected a folder's path, at most 4095 bytes");
		if (c->packages_at < 0 && c->nenv == CLI_MAX_ENV)
			return cli_bad(cmd, "packages", arg, "too many variables");
		snprintf(c->packages_env, sizeof(c->packages_env), "PTYBOX_PACKAGES=%s", arg);
		if (c->packages_at < 0)
			c->packages_at = (int)c->nenv++;
		c->env[c->packages_at] = c->packages_env;
		return 1;
	}
	case 0x10c: o->log_path = arg; return 1;
	case 0x10d:
		return options_parse_seconds(arg, &o->kill_grace) == 0
			       ? 1
			       : cli_bad(cmd, "kill-grace", arg,
					 "expected seconds from 0 to 31536000 (a year)");
	case 0x10e:
		return options_parse_uint(arg, 0, CLI_MAX_BUSY_POLL, &o->busy_poll_us) == 0
			       ? 1
			       : cli_bad(cmd, "busy-poll", arg,
					 "expected microseconds from 0 to 1000000");
	case 0x120:
	case 0x121:
		/* (where results are rendered for a person: the server would
		 * take them and do nothing) */
		if (strcmp(cmd, "run") != 0 && strcmp(cmd, "repl") != 0 &&
		    strcmp(cmd, "attach") != 0) {
			cli_error("%s: --%s: only for run, repl and attach", cmd,
				  opt == 0x120 ? "output-dir" : "no-inline-images");
			return -1;
		}
		if (opt == 0x121) {
			c->no_inline_images = true;
			return 1;
		}
		if (!arg[0])
			return cli_bad(cmd, "output-dir", arg, "expected a folder");
		c->output_dir = arg;
		return 1;
	default: return 0;
	}
}

int cli_write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = {.fd = fd, .events = POLLOUT};
				poll(&p, 1, -1);
				continue;
			}
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

bool cli_error_quiet;
bool cli_error_raw;
static char cli_last[1024];

const char *cli_last_error(void)
{
	return cli_last;
}

void cli_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(msg) - 2)
		n = sizeof(msg) - 2;
	memcpy(cli_last, msg, (size_t)n);
	cli_last[n] = '\0';
	if (cli_error_quiet)
		return;
	fflush(stdout);
	cli_write_all(2, "ptybox: ", 8);
	/* A message may quote what a session made (a file's name, its kernel's error text):
	 * on a terminal it shows as run shows the sandbox's output (term_safe.c). */
	if (!cli_error_raw && isatty(2)) {
		char safe[TERM_SAFE_OUT_MAX(sizeof(msg))];
		struct term_safe t;
		term_safe_init(&t);
		size_t m = term_safe_feed(&t, msg, (size_t)n, safe);
		m += term_safe_end(&t, safe + m);
		safe[m++] = '\n';
		cli_write_all(2, safe, m);
		return;
	}
	msg[n++] = '\n';
	cli_write_all(2, msg, (size_t)n);
}

int cli_session_opts_check(struct cli_session_opts *c, const char *cmd)
{
	/* Opened here, so that a log that cannot be written is a usage error,
	 * not a session that runs without the log asked for. */
	int rc = c->o.log_path ? log_open(c->o.log_path) : 0;
	if (rc < 0) {
		cli_error("%s: --log %s: %s", cmd, c->o.log_path, strerror(-rc));
		return -1;
	}
	/* Made if missing (as mkdir -p), now rather than at the first picture or
	 * --get; one that cannot be written is told at each picture. */
	int e = c->output_dir ? -cli_mkdirs(c->output_dir) : 0;
	if (e) {
		cli_error("%s: --output-dir %s: %s", cmd, c->output_dir, strerror(e));
		return -1;
	}
	return cli_session_paths_check(c, cmd, false);
}

int cli_mkdirs(const char *dir)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char was = *s;
		*s = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			return -errno;
		if (!was)
			break;
		*s = '/';
	}
	struct stat st;
	if (stat(dir, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int cli_session_paths_check(const struct cli_session_opts *c, const char *cmd, bool absolute)
{
	const char *via = c->o.via;
	bool local = !via || strcmp(via, "local") == 0;
	char why[PATH_MAX + 128], resolved[PATH_MAX];
	struct mount_spec m;

	if (c->nmounts && !local) {
		cli_error("%s: --mount needs the local sandbox (not --via %s)", cmd, via);
		return -1;
	}
	for (size_t i = 0; i < c->nmounts; i++) {
		if (mount_parse(c->mounts[i], &m, why, sizeof(why)) < 0) {
			cli_error("%s: --mount %s: %s", cmd, c->mounts[i], why);
			return -1;
		}
		if (absolute && m.host[0] != '/') {
			cli_error("%s: --mount %s: the host's path must be absolute", cmd,
				  c->mounts[i]);
			return -1;
		}
		if (mount_check_host(&m, resolved, why, sizeof(why)) < 0) {
			cli_error("%s: --mount %s", cmd, why);
			return -1;
		}
	}
	/* (elsewhere the folder is on the far side: its pip says what it finds) */
	const char *w = c->o.wheels;
	struct stat st;
	if (w && local && absolute && w[0] != '/') {
		cli_error("%s: --wheels %s: the host's path must be absolute", cmd, w);
		return -1;
	}
	if (w && local) {
		memset(&m, 0, sizeof(m));
		snprintf(m.host, sizeof(m.host), "%s", w);
		if (mount_check_host(&m, resolved, why, sizeof(why)) < 0) {
			cli_error("%s: --wheels %s", cmd, why);
			return -1;
		}
		if (stat(resolved, &st) == 0 && !S_ISDIR(st.st_mode)) {
			cli_error("%s: --wheels %s: %s", cmd, w, strerror(ENOTDIR));
			return -1;
		}
	}
	return 0;
}

void cli_warn_unsandboxed(const struct ptybox_options *o)
{
	if (o->via && strcmp(o->via, "none") == 0)
		cli_error("warning: --via none: the code runs WITHOUT a sandbox, with your "
			  "privileges and files");
}

void cli_warn_unenforced(const struct cli_session_opts *c)
{
	static const struct {
		unsigned bit;
		const char *name;
	} limits[] = {
		{CLI_GIVEN_MEMORY, "--memory"},	    {CLI_GIVEN_PIDS, "--pids"},
		{CLI_GIVEN_CPUS, "--cpus"},	    {CLI_GIVEN_NET, "--net"},
		{CLI_GIVEN_TMP_SIZE, "--tmp-size"},
	};
	const char *via = c->o.via;
	if (!via || strcmp(via, "local") == 0 || !c->given)
		return;
	const char *where = strcmp(via, "none") == 0	     ? "--via none"
			    : strncmp(via, "ssh://", 6) == 0 ? "--via ssh://"
			    : strncmp(via, "exec:", 5) == 0  ? "--via exec:"
							     : NULL;
	if (!where)
		return; /* (a --via that is no transport: refused later, by its own message) */
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		if (!(c->given & limits[i].bit))
			continue;
		if (limits[i].bit == CLI_GIVEN_NET)
			cli_error("warning: --net changes nothing with %s: the code has the "
				  "network of the host it runs on",
				  where);
		else
			cli_error("warning: %s is not enforced with %s: only the embedded "
				  "sandbox (--via local) sets limits",
				  limits[i].name, where);
	}
}

bool cli_value_missing(const char *cmd, const struct option *longopts, int longindex, int opt,
		       const char *arg)
{
	/* "--x", or a lone short option such as "-c": a negative number or a
	 * value such as "-" is not taken for one. */
	bool is_opt =
		arg && ((arg[0] == '-' && arg[1] == '-') ||
			(arg[0] == '-' && arg[1] && !arg[2] &&
			 ((arg[1] >= 'a' && arg[1] <= 'z') || (arg[1] >= 'A' && arg[1] <= 'Z'))));
	if (!is_opt)
		return false;
	if (longindex >= 0)
		cli_error("%s: --%s needs a value (got the option '%s')", cmd,
			  longopts[longindex].name, arg);
	else
		cli_error("%s: -%c needs a value (got the option '%s')", cmd, opt, arg);
	fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
	return true;
}

void cli_bad_option(const char *cmd, int opt, const char *word)
{
	bool is_long = strncmp(word, "--", 2) == 0;
	if (opt == ':')
		cli_error("%s: option '%s' needs a value", cmd, word);
	else if (is_long && optopt) /* a known long option, given a value (--net=1) */
		cli_error("%s: option '%.*s' takes no value", cmd, (int)strcspn(word, "="), word);
	else if (!is_long && optopt && optopt != '?')
		cli_error("%s: unknown option '-%c'", cmd, optopt);
	else
		cli_error("%s: unknown option '%.*s'", cmd, (int)strcspn(word, "="), word);
	fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
}

void cli_signals_start(uv_loop_t *loop, uv_signal_t *h, uv_signal_cb cb, void *data)
{
	static const int signums[CLI_NSIGNALS] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < CLI_NSIGNALS; i++) {
		uv_signal_init(loop, &h[i]);
		h[i].data = data;
		uv_signal_start(&h[i], cb, signums[i]);
	}
}

/* The handles live in their command's struct, which outlives the loop. */
static void cli_signal_closed_cb(uv_handle_t *h)
{
}

void cli_signals_close(uv_signal_t *h)
{
	for (int i = 0; i < CLI_NSIGNALS; i++)
		if (h[i].loop && !uv_is_closing((uv_handle_t *)&h[i]))
			uv_close((uv_handle_t *)&h[i], cli_signal_closed_cb);
}

bool cli_is_option(const struct option *longopts, const char *shorts, const char *word)
{
	if (word[0] != '-' || !word[1])
		return false;
	if (word[1] != '-')
		return strchr(shorts, word[1]) != NULL;
	size_t n = strcspn(word + 2, "=");
	for (const struct option *o = longopts; o->name; o++)
		if (strlen(o->name) == n && strncmp(o->name, word + 2, n) == 0)
			return true;
	return false;
}
