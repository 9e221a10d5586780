/*
 * cli_repl.c - `ptybox repl` and `ptybox attach`: one prompt (prompt.c) on
 * two kinds of connection to a server. repl starts its own, `ptybox serve
 * --stdio` with repl's session options, as a child in a process group of its
 * own (the terminal's ^C is the prompt's to give, as an interrupt), and ends
 * it with the prompt: the sandbox goes too. attach opens the server's socket
 * (or -H: `ssh host ptybox dial-stdio`) and leaves the session running.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"
#include "prompt.h"

/* How long repl waits for its server to end (every process of the sandbox
 * gone) before it kills it. */
#define REPL_END_MS 10000

extern char **environ;

static const char repl_usage[] =
	"Usage: ptybox repl [SESSION OPTIONS]\n"
	"A stateful prompt on a fresh sandboxed session, as python3's own: line\n"
	"editing and history, multi-line blocks, Tab completion from the live session.\n"
	"\n"
	"  Enter               run the block when it is complete; a blank line ends\n"
	"                      a block that goes on (def, for, if ...)\n"
	"  Tab                 complete a name or an attribute (obj.att)\n"
	"  Ctrl-C              interrupt the running code (its state stays), or clear\n"
	"                      the line at the prompt\n"
	"  Ctrl-D, Ctrl-\\      leave: the session and its sandbox end\n"
	"\n"
	"With standard input not a terminal, the blocks of a script run in order\n"
	"and nothing is prompted. History: $XDG_STATE_HOME/ptybox/history.\n"
	"\n";

static const char attach_usage[] =
	"Usage: ptybox attach NAME [-L NAME | -S PATH | -H ssh://HOST]\n"
	"The prompt of `ptybox repl` on session NAME of the server: its screen first,\n"
	"then the live output of everything that runs in it, whoever started it.\n"
	"\n"
	"  Ctrl-D, Ctrl-\\      detach: the session runs on (Ctrl-\\ also while code\n"
	"                      runs)\n"
	"  Ctrl-C              interrupt the code this prompt started\n"
	"  -L NAME             the server named NAME (default \"default\")\n"
	"  -S PATH             the server at socket PATH\n"
	"  -H ssh://[user@]host[:port]  the server on another machine, through\n"
	"                      `ssh host ptybox dial-stdio`\n"
	"  --output-dir DIR    save pictures there as ptybox-N.png (default: here)\n"
	"  --no-inline-images  do not show pictures in the terminal\n"
	"  --record FILE       an asciicast v2 recording of what this prompt shows\n"
	"  --record-max SIZE   the recording's largest size (default 64M)\n"
	"  -h, --help          this help\n";

static uint64_t repl_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Waits for pid up to ms; then kills its process group. */
static void repl_reap(pid_t pid, int ms)
{
	uint64_t deadline = repl_now_ms() + (uint64_t)ms;
	int st;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (repl_now_ms() >= deadline) {
			kill(-pid, SIGKILL); /* (its group, when it leads one) */
			kill(pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return;
		}
		struct timespec t = {0, 10 * 1000 * 1000};
		nanosleep(&t, NULL); /* (a child's exit has no fd to poll here) */
	}
}

static int repl_spawn(char **args, int nargs, pid_t *pid, int *rfd, int *wfd)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	char **argv = calloc((size_t)nargs + 6, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = exe;
	argv[1] = "serve";
	argv[2] = "--stdio";
	/* (our end, however it comes: an _exit on a closed terminal, a
	 * SIGKILL, is its end of input; the sandbox must not outlive us) */
	argv[3] = "--stop-at-eof";
	argv[4] = "--quiet"; /* (the prompt says why the session cannot start) */
	memcpy(argv + 5, args, (size_t)nargs * sizeof(*argv));
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0) {
		free(argv);
		return -errno;
	}
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		free(argv);
		return -e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	int rc = posix_spawn(pid, exe, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(argv);
	close(in[0]);
	close(out[1]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		return -rc;
	}
	*rfd = out[0];
	*wfd = in[1];
	return 0;
}

int cli_repl(int argc, char **argv)
{
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_LONGOPTS,
		CLI_RECORD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct cli_record_opts rec = {0};
	int opt;
	optind = 1;
	opterr = 0;
	/* What serve takes: the session's options, not the prompt's. */
	char **child = calloc((size_t)argc + 1, sizeof(*child));
	int nchild = 0, at = 1;
	if (!child)
		return CLI_EXIT_FAILED;
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (opt != 0x120 && opt != 0x121 && opt != 0x180 && opt != 0x181)
			for (int i = at; i < optind; i++)
				child[nchild++] = argv[i];
		at = optind;
		switch (opt) {
		case 'h':
			free(child);
			printf("%s%s%s%s", repl_usage, cli_session_help, cli_picture_help,
			       cli_record_help);
			return CLI_EXIT_OK;
		case '?':
		case ':':
			free(child);
			cli_bad_option("repl", opt, argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			if ((opt == 0x180 || opt == 0x181
				     ? cli_record_opt(&rec, opt, optarg, "repl")
				     : cli_session_opt(&so, opt, optarg, "repl")) != 1) {
				free(child);
				return CLI_EXIT_USAGE;
			}
		}
	}
	if (optind < argc) {
		free(child);
		cli_error("repl: unexpected argument '%s'", argv[optind]);
		fputs("Try 'ptybox repl --help'.\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_session_opts_check(&so, "repl") < 0) {
		free(child);
		return CLI_EXIT_USAGE;
	}
	pid_t pid;
	int rfd = -1, wfd = -1; /* (set by repl_spawn; gcc -O2 cannot tell) */
	/* (the options as given: serve parses them again, to the same effect) */
	int rc = repl_spawn(child, nchild, &pid, &rfd, &wfd);
	free(child);
	if (rc < 0) {
		cli_error("repl: starting the session: %s", strerror(-rc));
		return CLI_EXIT_CANNOT_START;
	}
	char history[4200];
	bool has_history = prompt_history_path(history, sizeof(history)) == 0;
	struct prompt_config cfg = {
		.rfd = rfd,
		.wfd = wfd,
		.session = "default",
		.where = "its session",
		.cmd = "repl",
		.history = has_history ? history : NULL,
		.output_dir = so.output_dir,
		.no_inline_images = so.no_inline_images,
		.record = rec.path,
		.record_max = rec.max,
	};
	signal(SIGPIPE, SIG_IGN);
	int status = prompt_run(&cfg);
	/* The session ends with the prompt: kill-server ends it now, even with
	 * code still running; its end of input lets serve go. */
	static const char bye[] = "{\"op\":\"kill-server\"}\n";
	cli_write_all(wfd, bye, sizeof(bye) - 1);
	close(wfd);
	repl_reap(pid, REPL_END_MS);
	close(rfd);
	return status;
}

int cli_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{"output-dir", required_argument, NULL, 0x120},
		{"no-inline-images", no_argument, NULL, 0x121},
		CLI_RECORD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct cli_record_opts rec = {0};
	const char *label = NULL, *spath = NULL, *host = NULL;
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":L:S:H:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'L': label = optarg; break;
		case 'S':
		case 's': spath = optarg; break;
		case 'H': host = optarg; break;
		case 'h': fputs(attach_usage, stdout); return CLI_EXIT_OK;
		case 0x120:
		case 0x121:
			if (cli_session_opt(&so, opt, optarg, "attach") != 1)
				return CLI_EXIT_USAGE;
			break;
		case 0x180:
		case 0x181:
			if (cli_record_opt(&rec, opt, optarg, "attach") != 1)
				return CLI_EXIT_USAGE;
			break;
		default: cli_bad_option("attach", opt, argv[optind - 1]); return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cli_error("attach: %s",
			  argc - optind < 1 ? "missing the session's name" : "unexpected argument");
		fputs("Try 'ptybox attach --help'.\n", stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_session_opts_check(&so, "attach") < 0)
		return CLI_EXIT_USAGE;
	const char *name = argv[optind];
	struct cli_client_link link;
	int rc = cli_client_dial("attach", label, spath, host, &link);
	if (rc)
		return rc;
	char history[4200];
	bool has_history = prompt_history_path(history, sizeof(history)) == 0;
	struct prompt_config cfg = {
		.rfd = link.rfd,
		.wfd = link.wfd,
		.session = name,
		.where = link.where,
		.cmd = "attach",
		.attach = true,
		.history = has_history ? history : NULL,
		.output_dir = so.output_dir,
		.no_inline_images = so.no_inline_images,
		.record = rec.path,
		.record_max = rec.max,
	};
	int status = prompt_run(&cfg);
	if (link.wfd != link.rfd)
		close(link.wfd);
	close(link.rfd);
	/* The far server owes a watcher its events until the session ends: it
	 * would keep dial-stdio, and so ssh, going. Detached means gone. */
	if (link.ssh > 0) {
		kill(link.ssh, SIGTERM);
		repl_reap(link.ssh, REPL_END_MS);
	}
	return status;
}
