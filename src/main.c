/* main.c - argv dispatch to the subcommands; nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_client.h"

static const char main_usage[] =
	"Usage: ptybox COMMAND [OPTIONS]\n"
	"A stateful, sandboxed code interpreter.\n"
	"\n"
	"Commands:\n"
	"  run      run snippets in one session: ptybox run -c 'x = 1' -c 'x + 1'\n"
	"  repl     a stateful prompt on a fresh session (Ctrl-D leaves)\n"
	"  serve    drive sessions with JSON lines (--stdio), or over HTTP (--http)\n"
	"  mcp      an MCP server on stdio, for agents: run_code and the rest\n"
	"\n"
	"Sessions in a server, which outlive their client (as tmux's do):\n"
	"  new NAME [OPTIONS]          create one (the server starts on first use)\n"
	"  exec NAME -c CODE | FILE    run code in it, as run does\n"
	"  result NAME [ID]            an execution's result, kept for later\n"
	"  ls                          the sessions\n"
	"  interrupt, cancel, restart, kill NAME;  kill-server\n"
	"  attach NAME                 its prompt, live (Ctrl-D or Ctrl-\\ detaches)\n"
	"  capture NAME                its screen as text\n"
	"  cp SRC DST                  copy files in or out: ptybox cp data.csv NAME:\n"
	"  watch NAME                  follow it live, as JSON lines\n"
	"  -L NAME, -S PATH            another server;  -H ssh://HOST: one on HOST\n"
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
	/* -L, -S, -H before the command (ptybox -L work ls): moved after it. */
	char *args[argc + 1];
	int g = 1;
	while (g + 1 < argc && (strcmp(argv[g], "-L") == 0 || strcmp(argv[g], "-S") == 0 ||
				strcmp(argv[g], "-H") == 0))
		g += 2;
	if (g > 1 && g < argc) {
		args[0] = argv[0];
		args[1] = argv[g];
		memcpy(args + 2, argv + 1, (size_t)(g - 1) * sizeof(char *));
		/* (-S before the command is the socket, always: capture's own -S
		 * is where it starts) */
		for (int i = 2; i < g + 1; i += 2)
			if (strcmp(args[i], "-S") == 0)
				args[i] = "--socket";
		memcpy(args + g + 1, argv + g + 1, (size_t)(argc - g - 1) * sizeof(char *));
		args[argc] = NULL;
		argv = args;
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
	if (strcmp(cmd, "mcp") == 0)
		return cli_mcp(argc - 1, argv + 1);
	if (strcmp(cmd, "repl") == 0)
		return cli_repl(argc - 1, argv + 1);
	if (strcmp(cmd, "attach") == 0)
		return cli_attach(argc - 1, argv + 1);
	if (strcmp(cmd, "server") == 0)
		return cli_server(argc - 1, argv + 1);
	if (strcmp(cmd, "dial-stdio") == 0)
		return cli_dial_stdio(argc - 1, argv + 1);
	if (strcmp(cmd, "cp") == 0)
		return cli_cp(argc - 1, argv + 1);
	if (cli_client_verb(cmd))
		return cli_client(argc - 1, argv + 1);
	cli_error("unknown command '%s'", cmd);
	fputs("Try 'ptybox --help'.\n", stderr);
	return CLI_EXIT_USAGE;
}
