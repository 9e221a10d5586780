/* cli.h - what the subcommands share: session options, output, messages. */
#ifndef PTYBOX_CLI_H
#define PTYBOX_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <getopt.h>

#include "ptybox.h"

#define CLI_EXIT_OK	      0
#define CLI_EXIT_FAILED	      1
#define CLI_EXIT_USAGE	      2
#define CLI_EXIT_CANNOT_START 125

#define CLI_MAX_ENV    128
#define CLI_MAX_MOUNTS 64 /* MOUNT_MAX */

/* --packages PATH: the longest PATH (PATH_MAX, less its NUL) */
#define CLI_MAX_PACKAGES 4095

/* Session options as given on the command line. */
struct cli_session_opts {
	struct ptybox_options o;
	char *env[CLI_MAX_ENV + 1];
	size_t nenv;
	/* --packages PATH: "PTYBOX_PACKAGES=PATH", one of env (the driver's
	 * kernel_packages.py reads it), so it travels wherever --env does */
	char packages_env[sizeof("PTYBOX_PACKAGES=") + CLI_MAX_PACKAGES];
	int packages_at;		  /* its index in env, or -1 */
	char *mounts[CLI_MAX_MOUNTS + 1]; /* --mount, as given */
	size_t nmounts;
	unsigned given; /* CLI_GIVEN_* of the limits given on the command line */
	/* human modes only (run, repl, attach): pictures, cli_picture.h */
	const char *output_dir; /* NULL: the current folder */
	bool no_inline_images;
};

/* The limits only the embedded sandbox enforces (cli_warn_unenforced). */
#define CLI_GIVEN_MEMORY   (1U << 0)
#define CLI_GIVEN_PIDS	   (1U << 1)
#define CLI_GIVEN_CPUS	   (1U << 2)
#define CLI_GIVEN_NET	   (1U << 3)
#define CLI_GIVEN_TMP_SIZE (1U << 4)

/* The long options every session-starting subcommand takes, for getopt_long. */
#define CLI_SESSION_LONGOPTS                                                                       \
	{"via", required_argument, NULL, 0x100}, {"timeout", required_argument, NULL, 0x101},      \
		{"max-output", required_argument, NULL, 0x102},                                    \
		{"memory", required_argument, NULL, 0x103},                                        \
		{"pids", required_argument, NULL, 0x104},                                          \
		{"cpus", required_argument, NULL, 0x105},                                          \
		{"tmp-size", required_argument, NULL, 0x106},                                      \
		{"nofile", required_argument, NULL, 0x107},                                        \
		{"max-file-size", required_argument, NULL, 0x108},                                 \
		{"max-get", required_argument, NULL, 0x118}, {"net", no_argument, NULL, 0x109},    \
		{"env", required_argument, NULL, 0x10a},                                           \
		{"python", required_argument, NULL, 0x10b},                                        \
		{"lang", required_argument, NULL, 0x112},                                          \
		{"packages", required_argument, NULL, 0x140},                                      \
		{"log", required_argument, NULL, 0x10c},                                           \
		{"kill-grace", required_argument, NULL, 0x10d},                                    \
		{"output-dir", required_argument, NULL, 0x120},                                    \
		{"no-inline-images", no_argument, NULL, 0x121},                                    \
		{"mount", required_argument, NULL, 0x10f},                                         \
		{"workdir", required_argument, NULL, 0x110},                                       \
		{"wheels", required_argument, NULL, 0x111},                                        \
	{                                                                                          \
		"busy-poll", required_argument, NULL, 0x10e                                        \
	}

void cli_session_opts_init(struct cli_session_opts *c);
/* Handles one getopt result if it is a session option: 1 handled, 0 not
 * ours, -1 bad value (message printed). */
int cli_session_opt(struct cli_session_opts *c, int opt, const char *arg, const char *cmd);
/* Checks what can only be checked once all options are in (and opens the
 * --log file): 0, or -1 with the message printed. */
int cli_session_opts_check(struct cli_session_opts *c, const char *cmd);
/* mkdir -p DIR (0777 & ~umask): 0 once it is a folder, or -errno. */
int cli_mkdirs(const char *dir);
/* What --mount, --workdir and --wheels need of the host and of the other
 * options (part of cli_session_opts_check; the server's too): the host paths
 * there (and absolute when absolute: the server's folder is not its
 * client's), the local sandbox for --mount. 0, or -1 with the message printed. */
int cli_session_paths_check(const struct cli_session_opts *c, const char *cmd, bool absolute);
/* Help text lines for the session options (run, repl, serve); without --log
 * (new: the server keeps its own log); --output-dir and --no-inline-images
 * (run; repl and attach list them in their own words). */
extern const char cli_session_help[];
extern const char cli_server_session_help[];
extern const char cli_picture_help[];
/* Whether word is one of a command's options: -X for X in shorts, or a
 * longopts name exactly or as --name=value (options go before FILE). */
bool cli_is_option(const struct option *longopts, const char *shorts, const char *word);

/* --record FILE and --record-max SIZE: the commands that show a session (run, new; repl and
 * attach) take them, for getopt_long. */
#define CLI_RECORD_LONGOPTS                                                                        \
	{"record", required_argument, NULL, 0x180},                                                \
	{                                                                                          \
		"record-max", required_argument, NULL, 0x181                                       \
	}
struct cli_record_opts {
	const char *path; /* NULL: no recording */
	uint64_t max;	  /* the file's cap in bytes; 0: the default */
};
/* Handles one getopt result if it is a record option: 1 handled, 0 not ours, -1 bad value
 * (message printed). */
int cli_record_opt(struct cli_record_opts *r, int opt, const char *arg, const char *cmd);
/* Help text lines for them. */
extern const char cli_record_help[];

/* Writes all of buf to fd, waiting if the fd is non-blocking. 0 or -errno. */
int cli_write_all(int fd, const char *buf, size_t len);
/* "ptybox: " + message + "\n" on stderr, unless cli_error_quiet (the server
 * checking a request's options: the message goes back to the client). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* With it, cli_error writes a terminal what the message holds as it is (run --raw); else a
 * message to a terminal is filtered as the sandbox's output is (term_safe.h): a message may
 * quote a name or an error text that a session made. */
extern bool cli_error_raw;
extern bool cli_error_quiet;
/* The message cli_error last formatted, without "ptybox: ". */
const char *cli_last_error(void);
/* The one-line message for an unknown option or a missing value (getopt's
 * '?' or ':'), then where to find help. */
void cli_bad_option(const char *cmd, int opt, const char *word);
/* Says that --via none has no sandbox, once. */
void cli_warn_unsandboxed(const struct ptybox_options *o);
/* One warning line for each of --memory, --pids, --cpus, --net and --tmp-size
 * given explicitly with a --via that cannot enforce it (none, ssh://, exec:). */
void cli_warn_unenforced(const struct cli_session_opts *c);
/* Whether the value getopt gave an option is another option ("--via --json":
 * the user left the value out); if so, says "CMD: --NAME needs a value" and
 * where help is. longindex: getopt_long's, or -1 for a short option opt. Values
 * that may start with '-' (-c CODE) are not checked. */
bool cli_value_missing(const char *cmd, const struct option *longopts, int longindex, int opt,
		       const char *arg);

/* The signals a session-driving command handles: SIGINT, SIGTERM, SIGHUP. Left
 * to their default, they would end ptybox and leave the interpreter running
 * (with --via none, ssh and exec, nothing else kills it). */
#define CLI_NSIGNALS 3
/* Starts a handler for each of them in h[0..CLI_NSIGNALS), with data. */
void cli_signals_start(uv_loop_t *loop, uv_signal_t *h, uv_signal_cb cb, void *data);
/* Closes them (again: nothing); a signal that comes after is deadly again. */
void cli_signals_close(uv_signal_t *h);

/* A snippet from a file, or standard input for "-": checked (at most 256
 * MiB, UTF-8, no NUL; a BOM dropped) and NUL-terminated. NULL with the
 * message printed. */
char *cli_read_code(const char *cmd, const char *path, size_t *len);
/* Our standard input, read whole, for a snippet's stdin: only when it is a
 * pipe or a file (never a terminal, /dev/null or a socket). 1 with *data
 * (caller frees) and *len, 0 when it is none of those, -1 past
 * PROTOCOL_STDIN_MAX or on a read error (message printed). */
int cli_read_stdin(const char *cmd, void **data, size_t *len);

int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
/* serve --http (cli_serve_http.c): runs until a signal. */
struct http_limits;
int cli_serve_http(const char *addr, const char *token_file, unsigned pool, unsigned max_active,
		   const char *python, const struct http_limits *limits);
int cli_mcp(int argc, char **argv);
int cli_repl(int argc, char **argv);
int cli_attach(int argc, char **argv);

#endif
