/* main.c - argv dispatch to the subcommands; nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char main_usage[] =
	"Usage: ptybox COMMAND [OPTIONS]\n"
	"A stateful, sandboxed code interpreter.\n"
	"\n"
	"Commands:\n"
	"  run      run snippets in one session: ptybox run -c 'x = 1' -c 'x + 1'\n"
	"  serve    drive a session with JSON lines: ptybox serve --stdio\n"
	"\n"
	"  -h, --help     this help\n"
	"  --version      the version\n"
	"\n"
	"'ptybox COMMAND --help' describes a command. See ptybox(1).\n";

/* Started with fd 0, 1 or 2 closed, the first file we open would take its
 * place (a PTY as our "stdout"), and libuv refuses to close fds 0-2: open
 * /dev/null there first, as ssh and tmux do. */
static int main_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) /* (the lowest free fd: this one) */
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) < 0)
			return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	if (main_std_fds() < 0)
		return CLI_EXIT_CANNOT_START;
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fputs(main_usage, stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(main_usage, stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("ptybox %s\n", ptybox_version());
		return CLI_EXIT_OK;
	}
	if (strcmp(cmd, "run") == 0)
		return cli_run(argc - 1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return cli_serve(argc - 1, argv + 1);
	cli_error("unknown command '%s'", cmd);
	fputs("Try 'ptybox --help'.\n", stderr);
	return CLI_EXIT_USAGE;
}
