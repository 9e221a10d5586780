/*
 * protocol.h - the wire protocol between client and driver, version 1
 * (man/ptybox-protocol.7). Pure: encodes requests, decodes frames; no I/O.
 */
#ifndef PTYBOX_PROTOCOL_H
#define PTYBOX_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define PROTOCOL_VERSION 2
/* Run by the transport as `python3 -I -S -c BOOTSTRAP`: says it runs and with
 * which bytecode magic (hex, from the importlib already loaded, so that it
 * imports nothing slow), reads a form line, then the driver as base64 lines up
 * to an empty line, and runs it: as marshalled, zlib-compressed code if the
 * form line's first word is its own magic, else as source. The form line's
 * second word, if any, is the kernel's language (l: the driver reads it;
 * lang.h), so that the relay knows it before its first fork. The terminal is still canonical
 * here. The client sends the driver only once it sees PROTOCOL_BOOT_PROMPT, so
 * what a failing transport says ("ssh: connect to host ...") is the last thing
 * on the terminal, not the echo of the driver. The prompt is printed from
 * pieces so that a command line echoed by a remote shell can never match it.
 * No single quote: transports put it inside one. */
#define PROTOCOL_BOOTSTRAP                                                                         \
	"import binascii as b,marshal as m,_frozen_importlib_external as f;"                       \
	"h=f.MAGIC_NUMBER.hex();print(\"PTYBOX/1\",\"BOOT\",h);"                                   \
	"k,_,l=input().partition(\" \");"                                                          \
	"s=b.a2b_base64(\"\".join(iter(input,\"\")));"                                             \
	"exec(m.loads(__import__(\"zlib\").decompress(s))if k==h else s)"
#define PROTOCOL_BOOT_PROMPT "PTYBOX/1 BOOT"
/* The form line for the driver's source; compiled code goes under its magic. */
#define PROTOCOL_BOOT_SOURCE "source"
/* Bytes of the prompt's line kept after PROTOCOL_BOOT_PROMPT (" " and the
 * magic); a longer line is sent the source. */
#define PROTOCOL_BOOT_REST_MAX 64
/* Base64 line length while the terminal is canonical (Linux keeps 4095 a line). */
#define PROTOCOL_BOOT_LINE 512
/* The driver prints this (not framed) once its terminal is raw and silent; the
 * client answers with the nonce line. Its '/', ' ' and '?' never occur in the
 * echo of standard base64 together. */
#define PROTOCOL_NONCE_PROMPT "PTYBOX/1 NONCE?"
#define PROTOCOL_NONCE_BYTES  16
/* The driver's max_output when a request has none: exec lines leave it out. */
#define PROTOCOL_DEFAULT_MAX_OUTPUT ((uint64_t)4 << 20)
/* Microseconds each side polls for the answer (ptybox_options.busy_poll_us);
 * the driver takes it from each exec request, where it is left out when so. */
#define PROTOCOL_DEFAULT_BUSY_POLL 100
/* A kernel's exit status when user code closed or replaced its pipes to the
 * relay (kernel.py: Channel, Kernel._check): one that user code is unlikely to
 * pick, so "exit status 3" stays its own. */
#define PROTOCOL_EXIT_NO_TERMINAL 119
/* ... and when it cannot open the descriptors it needs (RLIMIT_NOFILE set
 * below what it holds, say): a fresh interpreter is the way on. */
#define PROTOCOL_EXIT_NO_FDS 118
/* ... and when it cannot make or send a result, try as it may (user code broke
 * what that takes). */
#define PROTOCOL_EXIT_NO_RESULT 117
/* The relay's exit status when it cannot start a kernel (DEAD_STARTS in a row
 * died before they were up) or lost its fork template (user code killed it). */
#define PROTOCOL_EXIT_NO_KERNEL 116
/* The largest max_output a session takes: PROTOCOL_MAX_PAYLOAD stays far
 * from overflowing. */
#define PROTOCOL_MAX_OUTPUT ((uint64_t)1 << 40)
/* The longest frame payload the client takes, for a session's max_output;
 * longer frames are dropped unread. The driver computes the same bound and
 * keeps its result and display frames under it (relay.py, kernel.py: _frame_cap). */
#define PROTOCOL_MAX_PAYLOAD(max_output) ((size_t)(max_output)*4 + ((size_t)16 << 20))
/* The most JSON values a frame may hold. cJSON spends some 64 bytes of heap
 * on each value whatever its text, so a payload of "0," pairs costs 32 times
 * its size: a 30 MB frame, over a gigabyte. A real frame holds a few strings,
 * or a result whose traceback has one string per entry (a RecursionError's
 * folds its repeats: a few thousand at most). A frame with more is refused
 * before cJSON sees it (protocol_parse_frame: -E2BIG) and dropped like an
 * oversize one; so a frame costs at most about 4 MiB of cJSON items besides
 * its strings. */
#define PROTOCOL_MAX_VALUES ((size_t)1 << 16)
/* The largest --max-get: 1 TiB. */
#define PROTOCOL_MAX_GET ((uint64_t)1 << 40)
/* A file op's path, at most (bytes). */
#define PROTOCOL_PATH_MAX 4096
/* Bytes of a put's data in one "!" line, at most (the relay's cap). */
#define PROTOCOL_DATA_LINE ((size_t)1 << 20)
/* The most JSON values a file frame may hold (a listing: up to 100,000
 * entries of six values; cJSON items for all of them cost some 50 MiB). */
#define PROTOCOL_MAX_FILE_VALUES ((size_t)1 << 20)
/* Bytes a "#z" binary frame may inflate to (the relay deflates 1 MiB chunks). */
#define PROTOCOL_BINARY_Z_MAX ((size_t)1 << 20)
/* Bytes a deflated stream frame's text may inflate to (the relay deflates at
 * most 1 MiB of text into one: Z_MAX); a frame past it is refused. */
#define PROTOCOL_STREAM_Z_MAX ((size_t)4 << 20)

#endif

#ifndef PTYBOX_PROTOCOL_FUNCS
#define PTYBOX_PROTOCOL_FUNCS

struct ptybox_result;

enum protocol_frame_type {
	FRAME_UNKNOWN,
	FRAME_READY,
	FRAME_STREAM,
	FRAME_DISPLAY,
	FRAME_RESULT,
	FRAME_PONG,
	FRAME_ERROR,
	FRAME_DIED,  /* the kernel died under the relay; a ready frame follows its successor */
	FRAME_REPLY, /* the answer to a query: complete, is_complete */
	FRAME_FILE,  /* the answer to a file op: put, get, files, remove */
	FRAME_STDIN, /* a stdin chunk is all in the kernel's pipe: the next may follow */
};

struct protocol_frame {
	enum protocol_frame_type type;
	bool has_id;
	uint64_t id;
	cJSON *root; /* owned; the whole payload */
};

/* A fresh session nonce: 2*PROTOCOL_NONCE_BYTES hex characters and a NUL. */
int protocol_make_nonce(char *out, size_t outlen);
/* Whether the driver may go as code compiled by the interpreter whose bytecode
 * magic is magic (hex): rest is what followed PROTOCOL_BOOT_PROMPT on its line,
 * without the newline. Only " MAGIC" (a carriage return after it aside)
 * matches; a missing or other magic, or an empty magic, does not. */
bool protocol_boot_code_fits(const char *rest, size_t len, const char *magic);
/* What the boot reads after its prompt: the form line (the magic for compiled
 * code, else PROTOCOL_BOOT_SOURCE), then data as standard base64 lines of at
 * most PROTOCOL_BOOT_LINE characters, then an empty line. -EINVAL for a form
 * that is empty, longer than PROTOCOL_BOOT_REST_MAX or not one line. Caller
 * frees *out. */
int protocol_boot_lines(const char *form, const unsigned char *data, size_t len, char **out,
			size_t *outlen);
/* The exec request for a snippet (max_output left out when it is the
 * driver's default: a shorter line costs less to encode, send and decode).
 * -EINVAL if code has a NUL byte. */
int protocol_exec_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
		       unsigned busy_poll_us, char **out, size_t *outlen);
/* The exec request for a file run as `python3 FILE ARGS` runs it (ptybox run
 * FILE): as protocol_exec_line's, with "filename" (__file__, the file name in
 * tracebacks), "argv" (sys.argv: argv, NULL-terminated; NULL: [filename])
 * and "main":true (non-daemon threads awaited, sys.exit(0) is ok). -EINVAL
 * if code has a NUL byte or filename is NULL; -ENOMEM. */
int protocol_exec_file_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
			    unsigned busy_poll_us, const char *filename, const char *const *argv,
			    char **out, size_t *outlen);
/* A snippet's own input, for protocol_exec_input_line: env entries "K=V"
 * (NULL-terminated; NULL: none), the folder it runs in (NULL: the current
 * one) and the bytes of its stdin (when has_stdin). */
struct protocol_exec_input {
	const char *const *env;
	const char *cwd;
	const void *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	bool stdin_stream; /* fd 0 is the session's stdin stream (protocol_stdin_line) */
};
/* Caps of a snippet's input (the driver refuses more). */
#define PROTOCOL_ENV_MAX   4096
#define PROTOCOL_STDIN_MAX ((size_t)16 << 20)
/* Whether in is within what the driver takes: at most PROTOCOL_ENV_MAX env
 * entries, each "K=V" with K non-empty (V may be empty), a non-empty cwd,
 * at most PROTOCOL_STDIN_MAX bytes of stdin. */
bool protocol_exec_input_valid(const struct protocol_exec_input *in);
/* The exec request for a snippet (filename NULL) or a file (as
 * protocol_exec_file_line's) with in's members: "env" (an object),
 * "cwd" and "stdin_b64" (base64). in NULL: none of them. -EINVAL if code has
 * a NUL byte or in is not valid; -ENOMEM. Caller frees. */
int protocol_exec_input_line(uint64_t id, const char *code, size_t len, uint64_t max_output,
			     unsigned busy_poll_us, const char *filename, const char *const *argv,
			     const struct protocol_exec_input *in, char **out, size_t *outlen);
/* Bytes of one stdin request at most (the relay refuses more). */
#define PROTOCOL_STDIN_CHUNK ((size_t)1 << 20)
/* A stdin request: len (at most PROTOCOL_STDIN_CHUNK, else -E2BIG) more bytes
 * of the stream that snippets run with stdin_stream read, and with eof its
 * end. One at a time: the relay acks each with a "stdin" frame naming id once
 * it is all in the kernel's pipe. Caller frees. */
int protocol_stdin_line(uint64_t id, const void *data, size_t len, bool eof, char **out,
			size_t *outlen);
/* The resize request: the client's terminal is cols x rows (1..65535 each,
 * else -EINVAL); the kernel's COLUMNS and LINES follow from its next snippet
 * on (and its terminal, with --tty). Caller frees. */
int protocol_resize_line(unsigned cols, unsigned rows, char **out, size_t *outlen);
/* The tty request: the kernel's stdout and stderr become a terminal of its
 * own (os.isatty(1)); before the first snippet only. Caller frees. */
int protocol_tty_line(char **out, size_t *outlen);
/* The interrupt request naming snippet id: the relay sends SIGINT to its
 * kernel if that snippet runs, or starts it interrupted. Caller frees. */
int protocol_interrupt_line(uint64_t id, char **out, size_t *outlen);
/* A query request (op "complete" or "is_complete"): the code, and for
 * complete the cursor in characters (cursor < 0: left out). -EINVAL if code
 * has a NUL byte. Caller frees. */
int protocol_query_line(uint64_t id, const char *op, const char *code, size_t len, long cursor,
			char **out, size_t *outlen);
/* The restart request: the relay kills its kernel (died follows) and starts a
 * fresh one, whose ready frame carries "restart":id (a ready without it is
 * that of a kernel that replaced one that died by itself). Caller frees. */
int protocol_restart_line(uint64_t id, char **out, size_t *outlen);
/* What a wait status says, in words, with ptybox's own exit statuses named. */
void protocol_describe_exit(int wstatus, char *why, size_t len);
/* Parses one frame's payload. 0, -EINVAL (not a JSON object with a known
 * shape), -E2BIG (more than PROTOCOL_MAX_VALUES values: not parsed) or
 * -ENOMEM; a lone surrogate escape in a string is read as U+FFFD. On success
 * the caller frees with protocol_frame_free. */
int protocol_parse_frame(const char *payload, size_t len, struct protocol_frame *f);
void protocol_frame_free(struct protocol_frame *f);
/* A put's data escaped for a "!" line (protocol_files.c): the bytes a terminal
 * or transport acts on as "=XX", the others as they are. out has room for 3 *
 * len bytes; returns the bytes written. */
size_t protocol_escape_data(char *out, const unsigned char *data, size_t len);
/* An upload's token (a chunked put's first reply gives it): 1 to
 * PROTOCOL_UPLOAD_MAX lowercase hex digits. */
#define PROTOCOL_UPLOAD_MAX 64
bool protocol_upload_ok(const char *token);
/* The put request for len bytes of data (mode < 0: none; offset 0: none;
 * more: the upload goes on; upload: the token of the upload it continues, or
 * NULL; abort: that upload dropped), followed by its data lines, in one buffer.
 * -EINVAL for a path that is empty or past PROTOCOL_PATH_MAX, a mode past
 * 07777 or a bad token. Caller frees. */
int protocol_put_lines(uint64_t id, const char *path, const void *data, size_t len, int mode,
		       uint64_t offset, bool more, const char *upload, bool abort, char **out,
		       size_t *outlen);
/* As protocol_put_lines, the data as standard base64 (b64len characters, padding optional),
 * decoded on the way into the lines (no copy of the whole data); *datalen the bytes it held.
 * -EILSEQ for data that is not base64. */
int protocol_put_lines_base64(uint64_t id, const char *path, const char *b64, size_t b64len,
			      int mode, uint64_t offset, bool more, const char *upload, bool abort,
			      char **out, size_t *outlen, size_t *datalen);
/* The bytes len characters of base64 hold (its padding, if any, at the end). */
size_t protocol_base64_decoded_len(const char *b64, size_t len);
/* Where the top-level member key's string value lies in the JSON object line: its characters
 * from *start to *stop (the quotes excluded). False when there is none, when it is not a string
 * or has an escape (a backslash), or when the line is not an object as far as read: then the
 * whole line goes to the parser, which says what is wrong. A key spelt with an escape is not
 * found. The first such member counts, as for cJSON. */
bool protocol_json_data_span(const char *line, size_t len, const char *key, size_t *start,
			     size_t *stop);
/* Standard base64 (padding optional, nothing else between) into out, which
 * has room for len / 4 * 3 + 2 bytes: a table's speed, as libsodium's
 * constant-time decoder is not needed for a file's bytes. -EINVAL for a
 * character that is not base64. */
int protocol_base64_decode(unsigned char *out, const char *in, size_t len, size_t *outlen);
/* len bytes as standard padded base64 at out (room for (len + 2) / 3 * 4, no
 * NUL written); returns the characters written. A table's speed: libsodium's
 * constant-time encoder took a third of the server's time for a big get. */
size_t protocol_base64_encode(char *out, const unsigned char *in, size_t len);
/* The get request: length 0 (none) is the rest of the file, max (0: none) the
 * session's --max-get. Caller frees. */
int protocol_get_line(uint64_t id, const char *path, uint64_t offset, uint64_t length, uint64_t max,
		      char **out, size_t *outlen);
/* The files or remove request (op). Caller frees. */
int protocol_file_line(uint64_t id, const char *op, const char *path, bool recursive, char **out,
		       size_t *outlen);
/* At least as many as the JSON values that the text holds (each '[', '{' and
 * ',' outside strings counts one, and the text one more), counted up to
 * max + 1 at most: a bound on the cJSON items a parse can make, in one pass
 * that skips strings with memchr. */
size_t protocol_json_values(const char *json, size_t len, size_t max);
/* The heap that v and what it holds cost: items, keys and strings (0 for
 * NULL). What keeping a parsed value costs, whatever its text was. */
size_t protocol_json_cost(const cJSON *v);
/* A string member, or NULL. */
const char *protocol_str(const cJSON *obj, const char *key);
/* key: v, exactly (as a raw number: a double would round past 2^53). */
bool protocol_json_add_uint(cJSON *o, const char *key, uint64_t v);
/* A copy of v (a request's id) whose numbers print as exactly the doubles
 * they hold, not rounded to 15 digits as cJSON prints them. NULL when out of
 * memory. */
cJSON *protocol_json_dup_exact(const cJSON *v);
/* A member name that some object in v (at any depth) holds twice, or NULL.
 * cJSON keeps both, and a reader that takes the first and one that takes the
 * last disagree: a request with one is refused (review2-1..3: "net":false,
 * "net":true passed the HTTP limits and made a session with the host's
 * network). The name points into v. */
const char *protocol_json_duplicate(const cJSON *v);
/* Whether the JSON text has a NUL character in a string, escaped (\u0000) or
 * raw: cJSON hands strings over NUL-terminated, so the rest would vanish. A
 * \u without four hex digits counts: cJSON reads it as \u0000. */
bool protocol_json_has_nul(const char *json, size_t len);
/* Replaces each \u escape of a lone UTF-16 surrogate in the JSON text (one
 * not in a high-low pair) with \ufffd, in place; returns how many. cJSON
 * refuses the whole text over one, so the request's id would be lost with
 * it: this finds the id to answer the request with an error. */
size_t protocol_json_mask_surrogates(char *json, size_t len);
/* Puts U+2400 (the symbol for NUL) in place of each escape that cJSON reads as
 * U+0000 (see protocol_json_has_nul), and a space for each raw NUL byte, in
 * place; returns how many. So a string that held one parses whole. */
size_t protocol_json_mask_nul(char *json, size_t len);
/* Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF). */
bool protocol_utf8_valid(const char *s, size_t len);
/* How many of the first max bytes of the UTF-8 string s to keep so that no
 * character is cut. */
size_t protocol_utf8_prefix(const char *s, size_t len, size_t max);
/* JSON text with each character that term_safe_hidden names (C1 and bidi
 * controls, which cJSON prints as raw UTF-8) written as a \uXXXX escape
 * instead: the same value, but nothing that a terminal acts on or that makes
 * the line read otherwise. Takes ownership of json (*len bytes and a NUL,
 * from cJSON's allocator) and returns it, or, if it held such a character,
 * a new string in its place (*len updated; json freed). NULL when out of
 * memory (json freed). */
char *protocol_json_escape_unsafe(char *json, size_t *len);
/* Behind struct ptybox_result: the parts of the result kept as JSON. */
struct ptybox_result_detail {
	const cJSON *bundle, *error, *display; /* each may be NULL */
	char *json;			       /* ptybox_result_json(), once made */
};
/* The result as a JSON object (NULL when out of memory). Caller deletes. */
cJSON *protocol_result_object(const struct ptybox_result *r);
/* The same as one line of JSON (no newline), escaped by
 * protocol_json_escape_unsafe. Caller frees with cJSON_free. */
char *protocol_result_json(const struct ptybox_result *r);

#endif
