/*
 * cli_client.c - the verbs that talk to a server (new, exec, result, ls, ...):
 * each opens a connection (cli_conn.c), sends its requests and shows the
 * replies.
 */
#define _GNU_SOURCE
#include "cli_client.h"
#include "cli_conn_internal.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "mount.h"
#include "cli_render.h"
#include "lang.h"
#include "options.h"
#include "protocol.h"
#include "server.h"

/* ---- the verbs ---- */

struct verb {
	const char *name;
	int (*run)(struct client *cl, const struct client_target *t, int argc, char **argv);
	bool autostart;
	const char *usage;
};

#define CLIENT_COMMON_HELP                                                                         \
	"  -L NAME             the server named NAME (default \"default\")\n"                      \
	"  -S PATH             the server at socket PATH\n"                                        \
	"  -H ssh://[user@]host[:port]  the server on another machine, through\n"                  \
	"                      `ssh host ptybox dial-stdio` (ptybox must be installed there)\n"

static int verb_bad_args(const char *cmd, int argc, char **argv, int optind_, int want_min,
			 int want_max)
{
	int n = argc - optind_;
	if (n < want_min) {
		cli_error("%s: missing the session's name", cmd);
		fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
		return CLI_EXIT_USAGE;
	}
	if (n > want_max) {
		cli_error("%s: unexpected argument '%s'", cmd, argv[optind_ + want_max]);
		fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* new's session options, as given (already checked), for the server to parse again. */
struct new_args {
	const char *key[512], *val[512];
	int n;
	struct cli_record_opts rec;
	char record[PATH_MAX]; /* rec.path, made absolute */
};

/* --record's path as the server needs it: absolute, since the server's folder is not ours.
 * With -H the file is on the server's machine, where our folder means nothing: it must be
 * absolute as given. -1 with the message printed. */
static int new_record_path(struct new_args *na, const char *host)
{
	const char *path = na->rec.path;
	if (!path) {
		if (na->rec.max) {
			cli_error("new: --record-max needs --record FILE");
			return -1;
		}
		return 0;
	}
	if (path[0] != '/' && host) {
		cli_error("new: --record %s: with -H the file is written on %s: give an absolute "
			  "path",
			  path, host);
		return -1;
	}
	char cwd[PATH_MAX];
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		cli_error("new: --record %s: the current folder: %s", path, strerror(errno));
		return -1;
	}
	int n = path[0] == '/' ? snprintf(na->record, sizeof(na->record), "%s", path)
			       : snprintf(na->record, sizeof(na->record), "%s/%s",
					  strcmp(cwd, "/") == 0 ? "" : cwd, path);
	if (n < 0 || (size_t)n >= sizeof(na->record)) {
		cli_error("new: --record %s: the path is too long", path);
		return -1;
	}
	return 0;
}

/* The host path of --opt given (a --mount's spec, --wheels' folder) as the server
 * needs it (as --record's, above): absolute against our folder, or as given with
 * -H. Into out; -1 with the message printed. */
static int new_host_path(const char *opt, const char *given, const char *host, char *out,
			 size_t cap)
{
	char cwd[PATH_MAX];
	int n;
	if (given[0] == '/') {
		n = snprintf(out, cap, "%s", given);
	} else if (host) {
		cli_error("new: --%s %s: with -H the folder is on %s: give an absolute path", opt,
			  given, host);
		return -1;
	} else if (!getcwd(cwd, sizeof(cwd))) {
		cli_error("new: --%s %s: the current folder: %s", opt, given, strerror(errno));
		return -1;
	} else {
		n = snprintf(out, cap, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, given);
	}
	if (n < 0 || (size_t)n >= cap) {
		cli_error("new: --%s %s: the path is too long", opt, given);
		return -1;
	}
	return 0;
}

/* A --mount's spec with its host path made absolute (new_host_path). Into out
 * (PATH_MAX * 2 + 8 bytes); -1 with the message printed. */
static int new_mount_spec(const char *spec, const char *host, char *out, size_t cap)
{
	struct mount_spec m;
	char why[PATH_MAX + 128];
	if (mount_parse(spec, &m, why, sizeof(why)) < 0) { /* (checked already) */
		cli_error("new: --mount %s: %s", spec, why);
		return -1;
	}
	if (m.host[0] == '/') {
		snprintf(out, cap, "%s", spec);
		return 0;
	}
	return new_host_path("mount", spec, host, out, cap);
}

static int verb_new(struct client *cl, const char *name, const struct new_args *na,
		    const char *host)
{
	cJSON *req = client_request("new", name);
	cJSON *opts = cJSON_AddObjectToObject(req, "options");
	for (int i = 0; i < na->n; i++) {
		const char *key = na->key[i], *val = na->val[i];
		if (!val) {
			cJSON_AddBoolToObject(opts, key, 1);
			continue;
		}
		if (strcmp(key, "env") == 0 || strcmp(key, "mount") == 0) {
			char spec[PATH_MAX * 2 + 8];
			if (key[0] == 'm' && new_mount_spec(val, host, spec, sizeof(spec)) < 0) {
				cJSON_Delete(req);
				return CLI_EXIT_USAGE;
			}
			cJSON *env = cJSON_GetObjectItemCaseSensitive(opts, key);
			if (!env)
				env = cJSON_AddArrayToObject(opts, key);
			cJSON_AddItemToArray(env, cJSON_CreateString(key[0] == 'm' ? spec : val));
		} else {
			char abs[PATH_MAX];
			if (strcmp(key, "wheels") == 0) { /* (a host folder, as --mount's) */
				if (new_host_path(key, val, host, abs, sizeof(abs)) < 0) {
					cJSON_Delete(req);
					return CLI_EXIT_USAGE;
				}
				val = abs;
			}
			cJSON_DeleteItemFromObjectCaseSensitive(opts, key); /* the last one wins */
			cJSON_AddStringToObject(opts, key, val);
		}
	}
	if (na->rec.path)
		cJSON_AddStringToObject(req, "record", na->record);
	if (na->rec.max)
		protocol_json_add_uint(req, "record_max", na->rec.max);
	return client_simple(cl, "new", req, NULL);
}

/* An execution's id as the user typed it: digits only (strtoull would take
 * " 7", "+7" and "-5", and wrap 99999999999999999999 to its maximum), 1 or
 * more; 0 if it is none. */
static unsigned long long client_exec_id(const char *word)
{
	if (!word[0] || strspn(word, "0123456789") != strlen(word))
		return 0;
	errno = 0;
	unsigned long long n = strtoull(word, NULL, 10);
	return errno ? 0 : n;
}

static bool client_takes_id(const char *cmd)
{
	return strcmp(cmd, "result") == 0 || strcmp(cmd, "interrupt") == 0 ||
	       strcmp(cmd, "cancel") == 0;
}

static bool client_negative_number(const char *word)
{
	return word[0] == '-' && word[1] && strspn(word + 1, "0123456789") == strlen(word + 1);
}

static int verb_simple(struct client *cl, const char *op, const char *name, const char *exec)
{
	cJSON *req = client_request(op, name);
	if (exec) {
		unsigned long long n = client_exec_id(exec);
		if (n == 0) {
			cJSON_Delete(req);
			cli_error("%s: '%s': expected an execution's id (1, 2, ...)", op, exec);
			return CLI_EXIT_USAGE;
		}
		protocol_json_add_uint(req, "exec", n);
	}
	cJSON *reply = NULL;
	int rc = client_simple(cl, op, req, &reply);
	const cJSON *done = cJSON_GetObjectItemCaseSensitive(reply, "interrupted");
	if (rc == 0 && cJSON_IsFalse(done)) { /* (interrupt NAME ID) */
		const char *state = protocol_str(reply, "state");
		cli_error("%s: execution %s is not running (%s): nothing to interrupt", op, exec,
			  state && strcmp(state, "done") == 0 ? "it has ended"
							      : "it waits its turn");
		rc = CLI_EXIT_FAILED;
	}
	cJSON_Delete(reply);
	if (rc == 0 && strcmp(op, "kill-server") == 0) {
		/* The server closes its connections once its sessions are gone and
		 * its socket removed: kill-server returns then, so that the next
		 * command finds no server (or starts a fresh one). */
		cl->deadline_ms = client_now_ms() + CLIENT_STOP_MS;
		while ((reply = client_next(cl, false, NULL)))
			cJSON_Delete(reply);
		cl->deadline_ms = 0;
	}
	return rc;
}

/* A result in human form or as a line (--json); its exit status. */
static int client_show_result(struct cli_render *r, cJSON *result, bool with_output)
{
	if (with_output && !r->json) {
		const char *out = protocol_str(result, "stdout");
		const char *err = protocol_str(result, "stderr");
		if (out)
			cli_render_text(r, 1, out, strlen(out));
		if (err)
			cli_render_text(r, 2, err, strlen(err));
		const cJSON *display = cJSON_GetObjectItemCaseSensitive(result, "display");
		const cJSON *d;
		cJSON_ArrayForEach(d, display) cli_render_display(r, d);
	}
	return cli_render_result_json(r, result) == 1 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* After ^C: the first of ours is interrupted if it runs, cancelled if it
 * still waits behind someone else's (one of the two does nothing); those
 * after it are cancelled. */
static void client_stop_exec(struct client *cl, const char *name, uint64_t exec, bool first)
{
	if (!exec)
		return;
	for (int i = first ? 0 : 1; i < 2; i++) {
		cJSON *req = client_request(i == 0 ? "interrupt" : "cancel", name);
		protocol_json_add_uint(req, "exec", exec);
		client_send(cl, req);
	}
}

struct exec_args {
	const char *codes[4096];
	size_t ncodes;
	char *file_code;
	size_t file_len;
	const char *file;	/* FILE, or "-" */
	const char **file_argv; /* sys.argv: FILE, its ARGS, NULL */
	bool json, raw, no_wait, stop_on_error, stdin;
	double timeout;
	bool has_timeout;
	const char *env[PROTOCOL_ENV_MAX]; /* --env K=V: each snippet's */
	size_t nenv;
	const char *cwd; /* --cwd PATH: the folder each runs in */
	void *in_data;	 /* our standard input: the first snippet's */
	size_t in_len;
	bool has_in;
};

/* FILE and its ARGS (argv[from..argc)), as run takes them: sys.argv is FILE, ARGS; one of
 * our options among them was meant for us (it goes before FILE, or after -- for FILE). 0, or
 * -1 with the message printed. */
static int exec_file_args(struct exec_args *a, const char *file, int argc, char **argv, int from,
			  const struct option *longopts)
{
	a->file = file;
	if (!file) /* (nothing after NAME) */
		return 0;
	if (!protocol_utf8_valid(file, strlen(file))) {
		cli_error("exec: %s: the file name is not valid UTF-8", file);
		return -1;
	}
	a->file_argv = calloc((size_t)(argc - from) + 2, sizeof(*a->file_argv));
	if (!a->file_argv)
		abort(); /* out of memory is fatal (STYLE.md) */
	size_t n = 0;
	a->file_argv[n++] = file;
	bool dashes = false;
	for (int i = from; i < argc; i++) {
		if (!dashes && strcmp(argv[i], "--") == 0) {
			dashes = true;
			continue;
		}
		if (!dashes && cli_is_option(longopts, "LSHch", argv[i])) {
			cli_error("exec: options go before FILE (got '%s' after '%s'; -- before it "
				  "passes it to FILE)",
				  argv[i], file);
			fprintf(stderr, "Try 'ptybox exec --help'.\n");
			return -1;
		}
		if (!protocol_utf8_valid(argv[i], strlen(argv[i]))) {
			cli_error("exec: argument %d: not valid UTF-8", i - from + 1);
			return -1;
		}
		if (n == 4096) { /* (the driver's cap: sys.argv of 4096 strings) */
			cli_error("exec: more than 4095 arguments for %s", file);
			return -1;
		}
		a->file_argv[n++] = argv[i];
	}
	return 0;
}

/* FILE's result ended by sys.exit(N), N other than 0 (0 is ok): the status python3 FILE
 * exits with, from the error's "exit" (-1 when it is no such end). In human form it then
 * shows as python3 shows it: no traceback, a message (sys.exit("why")) alone on stderr. */
static int exec_file_exit(cJSON *result, bool json)
{
	cJSON *error = cJSON_GetObjectItemCaseSensitive(result, "error");
	const char *ename = protocol_str(error, "name"), *value = protocol_str(error, "value");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(error, "exit");
	const char *status = protocol_str(result, "status");
	if (!status || strcmp(status, "error") != 0 || !ename ||
	    (strcmp(ename, "SystemExit") != 0 && strcmp(ename, "ExitStatus") != 0) ||
	    !cJSON_IsNumber(st) || st->valueint < 0 || st->valueint > 255)
		return -1;
	int n = st->valueint;
	if (json)
		return n;
	const char *v = value ? value + (value[0] == '-') : "";
	if (v[0] && strspn(v, "0123456789") == strlen(v)) {
		cJSON_DeleteItemFromObjectCaseSensitive(result, "error");
	} else {
		cJSON *why = cJSON_CreateObject();
		cJSON_AddStringToObject(why, "name", value ? value : "");
		cJSON_ReplaceItemInObjectCaseSensitive(result, "error", why);
	}
	return n;
}

/* Snippet i's exec request (a -c, or FILE after them). */
static cJSON *exec_request(const struct exec_args *a, const char *name, size_t i)
{
	cJSON *req = client_request("exec", name);
	cJSON_AddStringToObject(req, "code", i < a->ncodes ? a->codes[i] : a->file_code);
	if (i == a->ncodes && a->file_argv) { /* FILE, run as python3 FILE ARGS runs it */
		cJSON_AddStringToObject(req, "filename",
					strcmp(a->file, "-") == 0 ? "<stdin>" : a->file);
		cJSON *args = cJSON_AddArrayToObject(req, "argv");
		for (size_t k = 0; a->file_argv[k]; k++)
			cJSON_AddItemToArray(args, cJSON_CreateString(a->file_argv[k]));
	}
	if (a->has_timeout)
		cJSON_AddNumberToObject(req, "timeout", a->timeout);
	cJSON *env = a->nenv ? cJSON_AddObjectToObject(req, "env") : NULL;
	for (size_t k = 0; k < a->nenv; k++) {
		const char *eq = strchr(a->env[k], '=');
		char *key = strndup(a->env[k], (size_t)(eq - a->env[k]));
		if (!key)
			abort(); /* out of memory is fatal (STYLE.md) */
		cJSON_DeleteItemFromObjectCaseSensitive(env, key); /* (the last one wins) */
		cJSON_AddStringToObject(env, key, eq + 1);
		free(key);
	}
	if (a->cwd)
		cJSON_AddStringToObject(req, "cwd", a->cwd);
	if (i == 0 && a->has_in) {
		cJSON *in = cJSON_CreateString(a->in_data); /* (checked: UTF-8, no NUL) */
		if (!in)
			abort();
		cJSON_AddItemToObject(req, "stdin", in);
	}
	if (a->no_wait) {
		cJSON_AddBoolToObject(req, "wait", 0);
	} else {
		cJSON_AddBoolToObject(req, "stream", !a->json);
		cJSON_AddBoolToObject(req, "ack", 1);
	}
	if (a->stop_on_error)
		cJSON_AddBoolToObject(req, "stop_on_error", 1);
	return req;
}

/* What snippet i is, for a message. */
static const char *exec_what(const struct exec_args *a, size_t i, char *buf, size_t len)
{
	if (i < a->ncodes) {
		snprintf(buf, len, "-c #%zu", i + 1);
		return buf;
	}
	return strcmp(a->file, "-") == 0 ? "standard input" : a->file;
}

/* Past the server's cap a request line is skipped, with an error that has no id
 * (newuser-13: exec waited for its reply forever). Every request that may be as long (its
 * code escaped up to 6 bytes a byte, and its stdin) is measured before any is sent. 0, or
 * -1 said. */
static int exec_requests_fit(const struct exec_args *a, const char *name, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t raw = i < a->ncodes ? strlen(a->codes[i]) : a->file_len;
		if (i == 0 && a->has_in)
			raw += a->in_len;
		if (raw < SERVER_MAX_LINE / 6 - 65536)
			continue;
		size_t len = raw;
		if (raw < SERVER_MAX_LINE) { /* (else too long already) */
			cJSON *req = exec_request(a, name, i);
			char *line = cJSON_PrintUnformatted(req);
			cJSON_Delete(req);
			if (!line)
				abort(); /* out of memory is fatal (STYLE.md) */
			len = strlen(line) + 1;
			cJSON_free(line);
		}
		if (len > SERVER_MAX_LINE) {
			char buf[32];
			cli_error(
				"exec: %s: its request is %.1f MiB, past the server's %zu MiB per "
				"request: nothing sent",
				exec_what(a, i, buf, sizeof(buf)), (double)len / (1 << 20),
				SERVER_MAX_LINE >> 20);
			return -1;
		}
	}
	return 0;
}

static int verb_exec_run(struct client *cl, const char *name, struct exec_args *a)
{
	struct cli_render r;
	cli_render_init(&r, a->json, a->raw, "execution");
	size_t n = a->ncodes + (a->file_code ? 1 : 0);
	uint64_t first = 0;
	if (exec_requests_fit(a, name, n) < 0)
		return CLI_EXIT_USAGE;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = client_send(cl, exec_request(a, name, i));
		if (!id && cl->refused) { /* (measured above: not expected) */
			char buf[32];
			cli_error("exec: %s: its request is past the server's %zu MiB per request: "
				  "not sent",
				  exec_what(a, i, buf, sizeof(buf)), SERVER_MAX_LINE >> 20);
			return CLI_EXIT_USAGE;
		}
		if (!id)
			return client_error_exit("exec", cl, NULL);
		if (!first)
			first = id;
	}
	size_t done = 0, failed = 0;
	int file_exit = -1;   /* FILE's sys.exit(N), N not 0 */
	uint64_t running = 0; /* the execution ids, as the acks tell them */
	uint64_t execs[4096] = {0};
	bool interrupted_once = false;
	while (done < n) {
		bool intr = false;
		cJSON *o = client_next(cl, true, &intr);
		if (intr) {
			client_interrupts = 0;
			if (interrupted_once) /* a second ^C: leave now; it runs on */
				return 130;
			interrupted_once = true;
			for (size_t i = done; i < n; i++)
				client_stop_exec(cl, name, execs[i], i == done);
			continue;
		}
		if (!o) {
			cli_error("exec: %s: %s", cl->where, client_gone_why(cl));
			return CLI_EXIT_FAILED;
		}
		uint64_t id = client_id(o);
		const char *event = protocol_str(o, "event");
		size_t k = id >= first && id < first + n ? (size_t)(id - first) : n;
		if (client_idless_error(o)) {
			/* One of ours the server could not read: no reply will come for it. */
			client_error_exit("exec", cl, o);
			failed++;
			done++;
			cJSON_Delete(o);
			continue;
		}
		if (k == n) { /* a reply to an interrupt or cancel of ours */
			cJSON_Delete(o);
			continue;
		}
		if (event && strcmp(event, "accepted") == 0) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec");
			execs[k] = cJSON_IsNumber(x) ? (uint64_t)x->valuedouble : 0;
			running = execs[done];
			if (interrupted_once) /* a ^C came before its id did */
				client_stop_exec(cl, name, execs[k], k == done);
		} else if (event && strcmp(event, "stream") == 0) {
			const char *sname = protocol_str(o, "name"),
				   *text = protocol_str(o, "text");
			if (sname && text)
				cli_render_stream(&r, sname, text, strlen(text));
		} else if (event && strcmp(event, "display") == 0) {
			const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "at_end")))
				cli_render_display_at_end(&r, data);
			else
				cli_render_display(&r, data);
		} else if (!event && a->no_wait &&
			   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ok"))) {
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec");
			printf("%.0f\n", cJSON_IsNumber(x) ? x->valuedouble : 0.0);
			done++;
		} else if (!event && protocol_str(o, "error")) {
			client_error_exit("exec", cl, o);
			failed++;
			done++;
		} else if (!event) {
			int fx = k == a->ncodes && a->file_argv ? exec_file_exit(o, a->json) : -1;
			if (fx >= 0) /* (a failure of its own kind) */
				file_exit = fx;
			if (client_show_result(&r, o, false) != CLI_EXIT_OK && fx < 0)
				failed++;
			done++;
			running = done < n ? execs[done] : 0;
		}
		cJSON_Delete(o);
	}
	(void)running;
	cli_render_text_end(&r, 1);
	cli_render_text_end(&r, 2);
	fflush(stdout);
	return interrupted_once ? 130
	       : failed		? CLI_EXIT_FAILED
	       : file_exit >= 0 ? file_exit
				: CLI_EXIT_OK;
}

static const char exec_usage[] =
	"Usage: ptybox exec NAME [OPTIONS] [-c CODE]... [FILE | - [ARGS...]]\n"
	"Run snippets in the session NAME of the server, in order, with the output and\n"
	"exit status of `ptybox run`.\n"
	"\n"
	"  -c CODE             a snippet (repeatable)\n"
	"  FILE, -             one more snippet from a file, or from standard input,\n"
	"                      run as python3 FILE ARGS runs it (as in run; options go\n"
	"                      before FILE; -- before an ARG that is one of ours)\n"
	"  --json              one result object per snippet per line on stdout\n"
	"  --raw               write output to a terminal as it is\n"
	"  --timeout SEC       this snippet's time limit (default: the session's)\n"
	"  --env NAME=VALUE    in os.environ while each of these snippets runs, and no\n"
	"                      longer (repeatable)\n"
	"  --cwd PATH          the folder each of them runs in (the session's own again\n"
	"                      after it)\n"
	"  --no-wait           print each execution's id and return at once\n"
	"  --stop-on-error     if a snippet fails, drop the ones queued after it\n"
	"  -i, --stdin         our standard input (a pipe or a file), read whole, is the\n"
	"                      first snippet's stdin (UTF-8 text, at most 16 MiB);\n"
	"                      without -i it is not read: end of file at once\n" CLIENT_COMMON_HELP;

static const char *const verb_usages[][2] = {
	{"new",
	 "Usage: ptybox new NAME [--pool N] [--with OTHER] [--record FILE] [SESSION OPTIONS]\n"
	 "Create the session NAME in the server (started if none runs); returns once\n"
	 "it is ready. Takes the session options of `ptybox run` but --log (the\n"
	 "server keeps its own log). --record: the server records the session\n"
	 "from now until it ends.\n"
	 "  --pool N            the server keeps N interpreters of these options started\n"
	 "                      ahead, so that the next new with them is ready at once\n"
	 "  --with OTHER        run in OTHER's sandbox (its files, processes and limits;\n"
	 "                      OTHER runs --via local); killing OTHER kills this one\n"},
	{"result", "Usage: ptybox result NAME [ID] [--json] [--raw] [--no-wait]\n"
		   "The result of execution ID of session NAME (default: the last), waiting\n"
		   "for it if it runs (--no-wait: its state, running or queued, and exit\n"
		   "status 4).\n"},
	{"ls", "Usage: ptybox ls [--json]\n"
	       "The server's sessions, one per line (none: \"no sessions\" on stderr).\n"},
	{"interrupt", "Usage: ptybox interrupt NAME [ID]\n"
		      "Interrupt what runs in session NAME (only if it is execution ID).\n"},
	{"cancel", "Usage: ptybox cancel NAME ID\nDrop execution ID, queued and not started.\n"},
	{"restart", "Usage: ptybox restart NAME\nA fresh interpreter for session NAME.\n"},
	{"kill", "Usage: ptybox kill NAME\nEnd session NAME and its sandbox.\n"},
	{"kill-server", "Usage: ptybox kill-server\nEnd every session and the server.\n"},
	{"capture", "Usage: ptybox capture NAME [-e] [-S START]\n"
		    "The session's screen as text (-e: with colours; -S -N: N lines of\n"
		    "scrollback too).\n"},
	{"watch", "Usage: ptybox watch NAME\n"
		  "Follow session NAME live, as JSON lines (ptybox-protocol(7)).\n"},
	{"exec", exec_usage},
};

static const char *verb_usage(const char *cmd)
{
	for (size_t i = 0; i < sizeof(verb_usages) / sizeof(verb_usages[0]); i++)
		if (strcmp(verb_usages[i][0], cmd) == 0)
			return verb_usages[i][1];
	return "";
}

bool cli_client_verb(const char *cmd)
{
	return verb_usage(cmd)[0] != '\0';
}

/* name, then spaces up to width columns as a terminal shows it: a name may be
 * any UTF-8 (é takes one column in two bytes, 日 two in three), which printf's
 * padding counts in bytes. The library's widths, under a UTF-8 locale of its
 * own (the CLI's is "C"); a name it cannot measure is padded by its bytes. */
static void client_print_padded(const char *name, int width)
{
	int cols = 0;
	static locale_t utf8;
	if (!utf8)
		utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t was = utf8 ? uselocale(utf8) : (locale_t)0;
	mbstate_t st = {0};
	for (const char *p = name; *p && utf8;) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, p, strlen(p), &st);
		int w = n == (size_t)-1 || n == (size_t)-2 || n == 0 ? -1 : wcwidth(wc);
		if (w < 0) {
			cols = (int)strlen(name);
			break;
		}
		cols += w;
		p += n;
	}
	if (!utf8)
		cols = (int)strlen(name);
	if (was)
		uselocale(was);
	fputs(name, stdout);
	for (; cols < width; cols++)
		putchar(' ');
}

/* The sessions as a table, or as JSON lines (none for no session: a program
 * reads an empty list); the table's header goes only above a session. */
static void client_ls_print(const cJSON *sessions, bool json)
{
	const cJSON *s;
	if (!json && cJSON_GetArraySize(sessions))
		printf("%-16s %-10s %-10s %-7s %8s %6s %-11s %9s %s\n", "NAME", "STATE", "VIA",
		       "LANG", "UPTIME", "EXECS", "LAST", "MEMORY", "CLIENTS");
	cJSON_ArrayForEach(s, sessions)
	{
		if (json) {
			cli_render_json_line(s);
			continue;
		}
		const cJSON *up = cJSON_GetObjectItemCaseSensitive(s, "uptime_s");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(s, "memory");
		const cJSON *ex = cJSON_GetObjectItemCaseSensitive(s, "executions");
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(s, "clients");
		char uptime[32], memory[32], via[64];
		double u = cJSON_IsNumber(up) ? up->valuedouble : 0;
		if (u < 120)
			snprintf(uptime, sizeof(uptime), "%.0fs", u);
		else if (u < 7200)
			snprintf(uptime, sizeof(uptime), "%.0fm", u / 60);
		else
			snprintf(uptime, sizeof(uptime), "%.0fh", u / 3600);
		if (cJSON_IsNumber(mem))
			snprintf(memory, sizeof(memory), "%.1fM", mem->valuedouble / (1 << 20));
		else
			snprintf(memory, sizeof(memory), "-");
		/* (a name is printable by construction; --via is the user's own
		 * words, but shown safe all the same) */
		const char *v = protocol_str(s, "via"), *with = protocol_str(s, "with");
		if (with) /* (in that session's sandbox) */
			snprintf(via, sizeof(via), "with:%s", with);
		else
			snprintf(via, sizeof(via), "%s", v ? v : "?");
		for (char *p = via; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		const char *last = protocol_str(s, "last_status");
		/* (a language the server knows: one of lang.c's names) */
		const char *lang = protocol_str(s, "lang");
		client_print_padded(protocol_str(s, "name"), 16);
		printf(" %-10s %-10s %-7s %8s %6.0f %-11s %9s %.0f\n", protocol_str(s, "state"),
		       via, lang && lang_find(lang) ? lang : "?", uptime,
		       cJSON_IsNumber(ex) ? ex->valuedouble : 0, last ? last : "-", memory,
		       cJSON_IsNumber(cl) ? cl->valuedouble : 0);
	}
}

int cli_client(int argc, char **argv)
{
	const char *cmd = argv[0];
	/* Every word goes to the server in JSON, which is UTF-8: one that is not
	 * would be a line the server cannot answer by its id. */
	for (int i = 1; i < argc; i++)
		if (!protocol_utf8_valid(argv[i], strlen(argv[i]))) {
			cli_error("%s: argument %d is not valid UTF-8", cmd, i);
			return CLI_EXIT_USAGE;
		}
	struct client_target t = {0};
	struct cli_session_opts so;
	cli_session_opts_init(&so);
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"raw", no_argument, NULL, 'r'},
		{"no-wait", no_argument, NULL, 'n'},
		{"stop-on-error", no_argument, NULL, 'E'},
		{"stdin", no_argument, NULL, 'i'},
		{"cwd", required_argument, NULL, 0x1c0},
		{"pool", required_argument, NULL, 'P'},
		{"with", required_argument, NULL, 'W'},
		{"socket", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		CLI_RECORD_LONGOPTS,
		CLI_SESSION_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	bool is_new = strcmp(cmd, "new") == 0, is_exec = strcmp(cmd, "exec") == 0;
	bool is_capture = strcmp(cmd, "capture") == 0;
	static struct exec_args a;
	memset(&a, 0, sizeof(a));
	bool escapes = false;
	const char *start = NULL;
	static struct new_args na;
	na.n = 0;
	memset(&na.rec, 0, sizeof(na.rec));
	int opt, ro;
	optind = 1;
	opterr = 0;
	/* (capture's -S is its scrollback start, as tmux's capture-pane has it) */
	/* (GNU order: the name first, options after it, as tmux takes them) */
	/* (exec: in order, "-": NAME, then FILE, after which all is FILE's ARGS, as
	 * run takes them) */
	const char *shortopts = is_capture ? ":L:H:c:ehS:"
				: is_exec  ? "-:L:S:H:c:hi"
					   : ":L:S:H:c:h";
	const char *exec_pos[2] = {NULL, NULL}; /* exec's NAME and FILE */
	int npos = 0;
	bool want_name = strcmp(cmd, "ls") != 0 && strcmp(cmd, "kill-server") != 0;
	int li = -1;
	while ((li = -1, opt = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
		if (opt != 'c' && optarg && cli_value_missing(cmd, longopts, li, opt, optarg))
			return CLI_EXIT_USAGE;
		if (opt == 1) { /* (exec only) */
			exec_pos[npos++] = optarg;
			if (npos == 2)
				break;
			continue;
		}
		switch (opt) {
		case 'L': t.label = optarg; break;
		case 'S':
			if (is_capture)
				start = optarg;
			else
				t.spath = optarg;
			break;
		case 'H': t.host = optarg; break;
		case 's': t.spath = optarg; break;
		case 'e': escapes = true; break;
		case 'h':
			printf("%s%s", verb_usage(cmd), is_exec ? "" : CLIENT_COMMON_HELP);
			if (is_new)
				printf("%s\n%s", cli_record_help, cli_server_session_help);
			return CLI_EXIT_OK;
		case 'j':
		case 'r':
		case 'n':
		case 'i':
		case 'E': {
			/* (each where its help lists it, and only there) */
			static const struct {
				int opt;
				const char *name, *takers, *said;
			} only[] = {
				{'j', "json", " exec result ls ", "exec, result and ls"},
				{'r', "raw", " exec result ", "exec and result"},
				{'n', "no-wait", " exec result ", "exec and result"},
				{'E', "stop-on-error", " exec ", "exec"},
				{'i', "stdin", " exec ", "exec"},
			};
			size_t i = 0;
			while (only[i].opt != opt)
				i++;
			char word[32];
			snprintf(word, sizeof(word), " %s ", cmd);
			if (!strstr(only[i].takers, word)) {
				cli_error("%s: option '--%s' is for %s", cmd, only[i].name,
					  only[i].said);
				return CLI_EXIT_USAGE;
			}
			a.json |= opt == 'j';
			a.raw |= opt == 'r';
			a.no_wait |= opt == 'n';
			a.stop_on_error |= opt == 'E';
			a.stdin |= opt == 'i';
			break;
		}
		case 'P':
		case 'W':
			if (!is_new) {
				cli_error("%s: option '--%s' is for new", cmd,
					  opt == 'P' ? "pool" : "with");
				return CLI_EXIT_USAGE;
			}
			for (int i = 0; i < na.n; i++)
				if (strcmp(na.key[i], opt == 'P' ? "pool" : "with") == 0) {
					cli_error("%s: --%s given twice", cmd,
						  opt == 'P' ? "pool" : "with");
					return CLI_EXIT_USAGE;
				}
			na.key[na.n] = opt == 'P' ? "pool" : "with";
			na.val[na.n++] = optarg;
			break;
		case 'c':
			if (!is_exec) {
				cli_bad_option(cmd, '?', "-c");
				return CLI_EXIT_USAGE;
			}
			if (a.ncodes == 4096) {
				cli_error("exec: more than 4096 snippets");
				return CLI_EXIT_USAGE;
			}
			if (!protocol_utf8_valid(optarg, strlen(optarg))) {
				cli_error("exec: -c #%zu: not valid UTF-8", a.ncodes + 1);
				return CLI_EXIT_USAGE;
			}
			a.codes[a.ncodes++] = optarg;
			break;
		case '?':
			/* ("result NAME -55": an id, not an option; getopt may still be
			 * inside the word, "-55" being a cluster to it) */
			for (int w = optind - 1; client_takes_id(cmd) && w <= optind && w < argc;
			     w++)
				if (w > 0 && client_negative_number(argv[w])) {
					cli_error(
						"%s: '%s': expected an execution's id (1, 2, ...)",
						cmd, argv[w]);
					return CLI_EXIT_USAGE;
				}
			if (want_name && optopt && optopt != '?' &&
			    strncmp(argv[optind - 1], "--", 2) != 0) {
				/* ("new -bad": a name, or options? neither) */
				cli_error("%s: unknown option '-%c' (a session's name cannot start "
					  "with '-')",
					  cmd, optopt);
				fprintf(stderr, "Try 'ptybox %s --help'.\n", cmd);
				return CLI_EXIT_USAGE;
			}
			cli_bad_option(cmd, opt, argv[optind - 1]);
			return CLI_EXIT_USAGE;
		case ':': /* (-c is exec's only) */
			cli_bad_option(cmd, optopt == 'c' && !is_exec ? '?' : opt,
				       argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			if (opt == 0x1c0 || (is_exec && opt == 0x10a)) { /* --cwd, --env: each's */
				const char *on = opt == 0x1c0 ? "cwd" : "env";
				if (!is_exec) {
					cli_error("%s: option '--%s' is for exec", cmd, on);
					return CLI_EXIT_USAGE;
				}
				if (!protocol_utf8_valid(optarg, strlen(optarg))) {
					cli_error("exec: --%s %s: not valid UTF-8", on, optarg);
					return CLI_EXIT_USAGE;
				}
				if (opt == 0x1c0) {
					if (!optarg[0]) {
						cli_error("exec: --cwd needs a folder");
						return CLI_EXIT_USAGE;
					}
					a.cwd = optarg;
					break;
				}
				const char *eq = strchr(optarg, '=');
				if (!eq || eq == optarg) {
					cli_error("exec: --env %s: expected NAME=VALUE", optarg);
					return CLI_EXIT_USAGE;
				}
				if (a.nenv == PROTOCOL_ENV_MAX) {
					cli_error("exec: more than %d --env", PROTOCOL_ENV_MAX);
					return CLI_EXIT_USAGE;
				}
				a.env[a.nenv++] = optarg;
				break;
			}
			if (is_exec && opt == 0x101) { /* --timeout: this snippet's */
				if (options_parse_seconds(optarg, &a.timeout) < 0) {
					cli_error("exec: --timeout %s: expected seconds from 0 to "
						  "31536000 (a year), e.g. 1.5",
						  optarg);
					return CLI_EXIT_USAGE;
				}
				a.has_timeout = true;
				break;
			}
			if (is_new && (ro = cli_record_opt(&na.rec, opt, optarg, "new")) != 0) {
				if (ro < 0)
					return CLI_EXIT_USAGE;
				break;
			}
			if (!is_new) {
				const struct option *lo = longopts;
				while (lo->name && lo->val != opt)
					lo++;
				cli_error("%s: option '--%s' is for %s", cmd,
					  lo->name ? lo->name : "?",
					  opt == 0x120 || opt == 0x121 ? "run, repl and attach"
					  : opt == 0x10c	       ? "run, repl and serve"
								       : "new");
				return CLI_EXIT_USAGE;
			}
			if (cli_session_opt(&so, opt, optarg, "new") != 1)
				return CLI_EXIT_USAGE;
			if (opt == 0x10c) {
				cli_error("new: --log: the server keeps its own log, beside its "
					  "socket");
				return CLI_EXIT_USAGE;
			}
			for (const struct option *lo = longopts; lo->name && na.n < 512; lo++)
				if (lo->val == opt) {
					na.key[na.n] = lo->name;
					na.val[na.n++] = lo->has_arg == no_argument ? NULL : optarg;
					break;
				}
		}
	}
	if (is_exec && npos < 2 && optind < argc) /* (after "--") */
		exec_pos[npos++] = argv[optind++];
	if (is_exec && npos < 2 && optind < argc)
		exec_pos[npos++] = argv[optind++];
	if (is_exec && !exec_pos[0]) {
		cli_error("exec: missing the session's name");
		fprintf(stderr, "Try 'ptybox exec --help'.\n");
		return CLI_EXIT_USAGE;
	}
	if (is_exec && exec_file_args(&a, exec_pos[1], argc, argv, optind, longopts) < 0) {
		free(a.file_argv);
		return CLI_EXIT_USAGE;
	}
	int want_min = strcmp(cmd, "ls") == 0 || strcmp(cmd, "kill-server") == 0 ? 0 : 1;
	int want_max = want_min == 0 ? 0
		       : is_exec     ? 2
		       : strcmp(cmd, "result") == 0 || strcmp(cmd, "interrupt") == 0 ||
				       strcmp(cmd, "cancel") == 0
			       ? 2
			       : 1;
	if (strcmp(cmd, "cancel") == 0)
		want_min = 2;
	if (strcmp(cmd, "cancel") == 0 && argc - optind == 1) {
		cli_error("cancel: missing the execution's id (ptybox cancel NAME ID)");
		return CLI_EXIT_USAGE;
	}
	int bad = is_exec ? 0 : verb_bad_args(cmd, argc, argv, optind, want_min, want_max);
	if (bad)
		return bad;
	const char *name = is_exec ? exec_pos[0] : want_min ? argv[optind] : NULL;
	if (is_exec) {
		if (a.file && !(a.file_code = cli_read_code("exec", a.file, &a.file_len))) {
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		if (a.ncodes == 0 && !a.file_code) {
			cli_error("exec: nothing to run: give -c CODE or a FILE (- for standard "
				  "input)");
			return CLI_EXIT_USAGE;
		}
		/* Our standard input is the first snippet's with -i alone (as docker exec
		 * -i): a caller that leaves an open pipe on it must not wait for us. */
		if (a.stdin && a.file && strcmp(a.file, "-") == 0) {
			cli_error("exec: -i and - both take standard input (the code comes from "
				  "it: leave out -i)");
			free(a.file_code);
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		int got = !a.stdin ? 0 : cli_read_stdin("exec", &a.in_data, &a.in_len);
		if (got > 0 && (memchr(a.in_data, '\0', a.in_len) ||
				!protocol_utf8_valid(a.in_data, a.in_len))) {
			cli_error("exec: standard input: not UTF-8 text without NUL (the "
				  "server takes a snippet's stdin as text)");
			got = -1;
		}
		if (got < 0) {
			free(a.in_data);
			free(a.file_code);
			free(a.file_argv);
			return CLI_EXIT_USAGE;
		}
		if (got > 0) { /* (a string for cJSON: its NUL) */
			char *buf = realloc(a.in_data, a.in_len + 1);
			if (!buf)
				abort();
			buf[a.in_len] = '\0';
			a.in_data = buf;
			a.has_in = true;
		}
	}
	if (is_new && new_record_path(&na, t.host) < 0)
		return CLI_EXIT_USAGE;
	/* (beside --with the server refuses every --via but the embedded
	 * sandbox's: a warning about one would only come before its refusal) */
	bool with = false;
	for (int i = 0; i < na.n; i++)
		with = with || strcmp(na.key[i], "with") == 0;
	if (is_new && !with) {
		cli_warn_unsandboxed(&so.o);
		cli_warn_unenforced(&so);
	}
	/* (an id that is none is said before any server is looked for) */
	if (client_takes_id(cmd) && optind + 1 < argc && client_exec_id(argv[optind + 1]) == 0) {
		cli_error("%s: '%s': expected an execution's id (1, 2, ...)", cmd,
			  argv[optind + 1]);
		free(a.file_code);
		free(a.in_data);
		free(a.file_argv);
		return CLI_EXIT_USAGE;
	}
	struct client cl;
	if (client_open(&cl, cmd, &t, is_new) < 0) {
		free(a.file_code);
		free(a.in_data);
		free(a.file_argv);
		return CLI_EXIT_FAILED;
	}
	struct sigaction sa = {.sa_handler = client_on_sigint}; /* (no SA_RESTART: reads end) */
	sigaction(SIGINT, &sa, NULL);
	int rc = 0;
	if (is_new) {
		rc = verb_new(&cl, name, &na, t.host);
	} else if (is_exec) {
		rc = verb_exec_run(&cl, name, &a);
	} else if (strcmp(cmd, "ls") == 0) {
		cJSON *reply = NULL;
		rc = client_simple_within(&cl, cmd, client_request("ls", NULL), &reply,
					  CLIENT_REPLY_MS);
		const cJSON *sessions = cJSON_GetObjectItemCaseSensitive(reply, "sessions");
		if (rc == 0)
			client_ls_print(sessions, a.json);
		/* A server with no session says so, where a person looks (no
		 * output at all reads as a hang or a bug); stdout stays empty. */
		if (rc == 0 && !a.json && cJSON_GetArraySize(sessions) == 0)
			fprintf(stderr, "ptybox: ls: no sessions (server at %s)\n", cl.where);
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "result") == 0) {
		cJSON *req = client_request("result", name);
		if (optind + 1 < argc) {
			unsigned long long n = client_exec_id(argv[optind + 1]);
			if (n == 0) {
				cli_error("result: '%s': expected an execution's id (1, 2, ...)",
					  argv[optind + 1]);
				cJSON_Delete(req);
				client_close(&cl);
				return CLI_EXIT_USAGE;
			}
			protocol_json_add_uint(req, "exec", n);
		}
		if (a.no_wait)
			cJSON_AddBoolToObject(req, "wait", 0);
		cJSON *reply = NULL;
		rc = client_simple(&cl, cmd, req, &reply);
		if (rc == 0 && protocol_str(reply, "status")) {
			struct cli_render r;
			cli_render_init(&r, a.json, a.raw, "execution");
			rc = client_show_result(&r, reply, true);
		} else if (rc == 0) { /* --no-wait: it has not ended, which is not "ok" */
			printf("%s\n",
			       protocol_str(reply, "state") ? protocol_str(reply, "state") : "?");
			rc = CLI_EXIT_NOT_ENDED;
		}
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "interrupt") == 0 || strcmp(cmd, "cancel") == 0) {
		rc = verb_simple(&cl, cmd, name, optind + 1 < argc ? argv[optind + 1] : NULL);
	} else if (strcmp(cmd, "restart") == 0 || strcmp(cmd, "kill") == 0 ||
		   strcmp(cmd, "kill-server") == 0) {
		rc = verb_simple(&cl, cmd, name, NULL);
	} else if (is_capture) {
		cJSON *req = client_request("capture", name);
		if (escapes)
			cJSON_AddBoolToObject(req, "escapes", 1);
		if (start) {
			char *end;
			long n = strtol(start, &end, 10);
			if (!start[0] || *end) {
				cli_error("capture: -S %s: expected a line number (-100: 100 lines "
					  "of scrollback)",
					  start);
				cJSON_Delete(req);
				client_close(&cl);
				return CLI_EXIT_USAGE;
			}
			cJSON_AddNumberToObject(req, "start", (double)n);
		}
		cJSON *reply = NULL;
		rc = client_simple_within(&cl, cmd, req, &reply, CLIENT_REPLY_MS);
		const char *text = protocol_str(reply, "text");
		if (rc == 0 && text)
			cli_render_out(1, text, strlen(text));
		cJSON_Delete(reply);
	} else if (strcmp(cmd, "watch") == 0) {
		uint64_t id = client_send(&cl, client_request("watch", name));
		cJSON *o;
		bool intr = false, ended = false;
		rc = CLI_EXIT_OK;
		while (id && (o = client_next(&cl, true, &intr))) {
			if (protocol_str(o, "error") && client_id(o) == id) {
				rc = client_error_exit(cmd, &cl, o);
				cJSON_Delete(o);
				break;
			}
			cli_render_json_line(o);
			const char *event = protocol_str(o, "event");
			ended = event && strcmp(event, "killed") == 0;
			cJSON_Delete(o);
			if (ended)
				break;
		}
		if (intr) {
			rc = 130;
		} else if (rc == CLI_EXIT_OK && !ended) { /* (the server went away) */
			cli_error("watch: %s: %s", cl.where, client_gone_why(&cl));
			rc = CLI_EXIT_FAILED;
		}
	}
	client_close(&cl);
	free(a.file_code);
	free(a.in_data);
	free(a.file_argv);
	return rc;
}
