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

#define PROTOCOL_VERSION 1
/* Run by the transport as `python3 -I -c BOOTSTRAP`: says it runs, then reads
 * the driver as base64 lines up to an empty line. The terminal is still
 * canonical here. The client sends the driver only once it sees
 * PROTOCOL_BOOT_PROMPT, so what a failing transport says ("ssh: connect to
 * host ...") is the last thing on the terminal, not the echo of the driver.
 * The prompt is printed from two pieces so that a command line echoed by a
 * remote shell can never match it. */
#define PROTOCOL_BOOTSTRAP                                                                         \
	"import base64;print(\"PTYBOX/1\",\"BOOT\");"                                              \
	"exec(base64.b64decode(\"\".join(iter(input,\"\"))))"
#define PROTOCOL_BOOT_PROMPT "PTYBOX/1 BOOT"
/* Base64 line length while the terminal is canonical (Linux keeps 4095 a line). */
#define PROTOCOL_BOOT_LINE 512
/* The driver prints this (not framed) once its terminal is raw and silent; the
 * client answers with the nonce line. Its '/', ' ' and '?' never occur in the
 * echo of standard base64 together. */
#define PROTOCOL_NONCE_PROMPT "PTYBOX/1 NONCE?"
#define PROTOCOL_NONCE_BYTES  16

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
};

struct protocol_frame {
	enum protocol_frame_type type;
	bool has_id;
	uint64_t id;
	cJSON *root; /* owned; the whole payload */
};

/* A fresh session nonce: 2*PROTOCOL_NONCE_BYTES hex characters and a NUL. */
int protocol_make_nonce(char *out, size_t outlen);
/* The driver's source as the boot expects it: standard base64 lines of at most
 * PROTOCOL_BOOT_LINE characters, then an empty line. Caller frees *out. */
int protocol_boot_lines(const unsigned char *src, size_t len, char **out, size_t *outlen);
/* One request line: base64url of the JSON object, then '\n'. Caller frees. */
int protocol_request_line(const cJSON *req, char **out, size_t *outlen);
/* The exec request for a snippet. -EINVAL if code has a NUL byte. */
int protocol_exec_line(uint64_t id, const char *code, size_t len, uint64_t max_output, char **out,
		       size_t *outlen);
/* ^C, then the interrupt request naming snippet id (the driver learns from it
 * which snippet a ^C was meant for). Caller frees. */
int protocol_interrupt_line(uint64_t id, char **out, size_t *outlen);
/* Parses one frame's payload. 0 or -EINVAL (not a JSON object with a known
 * shape); on success the caller frees with protocol_frame_free. */
int protocol_parse_frame(const char *payload, size_t len, struct protocol_frame *f);
void protocol_frame_free(struct protocol_frame *f);
/* A string member, or NULL. */
const char *protocol_str(const cJSON *obj, const char *key);
/* The result object as one line of JSON (no newline). Caller frees. */
char *protocol_result_json(const struct ptybox_result *r, const cJSON *bundle, const cJSON *error,
			   const cJSON *display);

#endif
