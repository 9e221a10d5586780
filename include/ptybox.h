/*
 * ptybox.h - the public C API: a stateful, sandboxed code interpreter session
 * driven by a libuv loop.
 *
 * A session starts its interpreter asynchronously; snippets queued with
 * ptybox_session_exec() run one at a time, in order, and each ends in exactly
 * one on_result callback. The session restarts itself when the interpreter
 * dies or must be killed, and says so in the result (state_lost).
 */
#ifndef PTYBOX_H
#define PTYBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libptybox.so exports: the functions below and nothing else (it is
 * built with -fvisibility=hidden). Every function declared here needs it. */
#if defined(__GNUC__)
#define PTYBOX_API __attribute__((visibility("default")))
#else
#define PTYBOX_API
#endif

typedef struct ptybox_session ptybox_session;
typedef struct ptybox_pool ptybox_pool;

enum ptybox_status {
	PTYBOX_OK,
	PTYBOX_ERROR,	    /* the code raised (SyntaxError, SystemExit included) */
	PTYBOX_TIMEOUT,	    /* ran past its timeout; interrupted or killed */
	PTYBOX_INTERRUPTED, /* ptybox_session_interrupt() */
	PTYBOX_CRASHED,	    /* the interpreter died; the session restarted (message says
			       whether that worked). Also a snippet that never ran because
			       no interpreter could be started ("not run: ...") */
	PTYBOX_CANCELLED,   /* ptybox_session_cancel(): removed from the queue unrun */
};

struct ptybox_options {
	const char *via;     /* "local" (default), "none", "ssh://[user@]host[:port]", "exec:CMD" */
	const char *python;  /* interpreter the driver runs on; NULL: the transport's default */
	double timeout;	     /* seconds per snippet; 0: none. Default 30 */
	double kill_grace;   /* seconds between ^C and kill when the code ignores it. Default 2 */
	double boot_timeout; /* seconds for the interpreter to come up. Default 20 */
	uint64_t max_output; /* bytes kept per stream, head and tail. Default 4 MiB */
	uint64_t memory;     /* sandbox memory limit in bytes; 0: none. Default 1 GiB */
	uint64_t tmp_size;   /* /tmp tmpfs size. Default 256 MiB */
	uint64_t max_file_size; /* Default 256 MiB */
	uint64_t max_get;	/* bytes a get sends whole, at most (ranges within it); 0: none.
				   Default 64 MiB */
	unsigned pids;		/* Default 256 */
	unsigned nofile;	/* Default 1024 */
	double cpus;		/* Default 1 */
	bool net;		/* share the host network (local sandbox) */
	unsigned busy_poll_us;	/* after a snippet is sent, and after each result, each
				   side polls this long for the answer rather than sleep
				   (a wake-up costs more), while answers lately came that
				   quickly and no other session of the process awaits
				   one; 0: never. Default 100 */
	char *const *env;	/* extra "K=V" for the interpreter, NULL-terminated; may be NULL */
	const char *log_path;	/* debug log file, NULL: none */
	ptybox_pool *pool;	/* take interpreters started ahead from here; may be NULL */
	/* The user's terminal, cols x rows (both 1..65535), or 0 x 0 when there
	 * is none: the code's COLUMNS and LINES are then left unset. Default 0.
	 * ptybox_session_resize() changes it later. */
	unsigned short cols, rows;
	bool tty; /* the code's stdout and stderr are a terminal of its own (isatty) */
	/* Host paths bound into the local sandbox: "HOST_PATH:SANDBOX_PATH[:ro|:rw]",
	 * read-only unless ":rw", NULL-terminated, at most 64; may be NULL. A
	 * relative HOST_PATH is relative to the current folder. ptybox(1), --mount. */
	char *const *mounts;
	const char *workdir; /* the folder the code starts in; NULL: /tmp */
	/* A folder of wheels for pip (PTYBOX_WHEELS): the local sandbox binds it
	 * read-only at /run/ptybox/wheels; elsewhere a path on the far side. NULL: none */
	const char *wheels;
	/* --with: run inside the embedded sandbox of this session (which must be
	 * local): its files, processes and cgroup limits, as E2B's contexts share
	 * one sandbox; env, workdir and the rlimits stay this session's own. NULL:
	 * a sandbox of its own. Closing it (or its sandbox dying) ends this
	 * session's interpreter, which then cannot restart. Never takes from a pool. */
	ptybox_session *with;
	/* The kernel's language: "python" (NULL: the default) or "bash"
	 * (ptybox(1), --lang). Another is refused by ptybox_session_new. */
	const char *lang;
};

struct ptybox_result_detail; /* ptybox's own */

/* A result. Pointers are valid during the on_result callback only. */
struct ptybox_result {
	uint64_t id;
	enum ptybox_status status;
	const char *stdout_text; /* NUL-terminated UTF-8 */
	size_t stdout_len;
	const char *stderr_text;
	size_t stderr_len;
	const char *value_text; /* repr of the last expression, or NULL */
	const char *error_name; /* NULL when there was no error */
	const char *error_value;
	const char *traceback; /* the traceback lines joined, or NULL */
	double duration_ms;
	bool truncated;
	uint64_t dropped_bytes;
	bool state_lost;
	const char *message; /* what ptybox did (timeout, crash, restart), or NULL */
	struct ptybox_result_detail *detail; /* ptybox's own, for ptybox_result_json() */
};

/* The whole result as one line of JSON (the fields above, plus the result's
 * MIME bundle, display outputs and error), made on the first call: a caller
 * that reads the fields never pays for it. Valid during on_result only; NULL
 * when out of memory. */
PTYBOX_API const char *ptybox_result_json(const struct ptybox_result *r);

struct ptybox_callbacks {
	/* The interpreter is up (first start and every restart). Optional. */
	void (*on_ready)(ptybox_session *s, void *data);
	/* Output of a snippet run with stream=true, as it comes; late output of
	 * snippets that already ended (background threads) comes with late=true. */
	void (*on_stream)(ptybox_session *s, uint64_t id, const char *name, const char *text,
			  size_t len, bool late, void *data);
	void (*on_result)(ptybox_session *s, const struct ptybox_result *r, void *data);
	/* A rich output (display(), a pyplot figure) of a snippet run with
	 * stream=true, as it comes, in order with its output: bundle is a JSON
	 * object from MIME type to content, e.g. {"text/plain":"..","image/png":
	 * BASE64}. It is in the result too. Those of snippets that already ended
	 * come with late=true, stream or not. Optional. */
	void (*on_display)(ptybox_session *s, uint64_t id, const char *bundle, bool late,
			   void *data);
	/* The session cannot go on (could not start, or keeps dying at start).
	 * After it returns, each snippet still queued ends in a result, status
	 * PTYBOX_CRASHED, message "not run: ..." (unless the session was closed
	 * here: they are dropped then). Then close the session. */
	void (*on_fatal)(ptybox_session *s, const char *message, void *data);
	/* After ptybox_session_close(): every handle is closed; memory is freed
	 * right after this returns. Optional. */
	void (*on_closed)(ptybox_session *s, void *data);
	/* The interpreter is gone (crashed, killed after an ignored ^C, out of
	 * memory, a restart asked) and a fresh one is starting; why says what
	 * happened. on_ready follows once it is up (or on_fatal). Optional. */
	void (*on_restarting)(ptybox_session *s, const char *why, void *data);
	/* A warning of this session's, e.g. "not root: running without cgroup
	 * limits (memory, pids, cpu)", once per session; it goes to the
	 * session's log too. Optional: without it, each warning goes to stderr
	 * once per process, prefixed "ptybox: ". */
	void (*on_warning)(ptybox_session *s, const char *message, void *data);
	/* The last ptybox_session_stdin() chunk is in: the next may come.
	 * Optional. */
	void (*on_stdin_ready)(ptybox_session *s, void *data);
	/* The answer to ptybox_session_is_complete() or _complete() named id: a
	 * JSON object, valid during the call (ptybox-protocol(7), "complete").
	 * Optional. */
	void (*on_reply)(ptybox_session *s, uint64_t id, const char *reply, void *data);
	/* The end of the file op named id (ptybox_session_put, _get, _files,
	 * _remove), exactly one for each: reply is its JSON object, valid during
	 * the call: {"ok":true,...} or {"ok":false,"error":"one line","errno":
	 * "ENOENT"} (ptybox-protocol(7), SERVER PROTOCOL, for the members of
	 * each); a death, restart or fatal failure while it runs or waits gives
	 * "ok":false with errno "EIO" ("ETIMEDOUT" past the timeout). bytes and
	 * len: a get's data (NULL and 0 otherwise), valid during the call.
	 * Optional. */
	void (*on_file)(ptybox_session *s, uint64_t id, const char *reply, const void *bytes,
			size_t len, void *data);
	/* As on_display, with the display's id: display_id is the id the code
	 * gave it (IPython's display(obj, display_id=...)), NULL for a display
	 * without one; update is true for update_display(), a new rendering of
	 * the display of that id (Jupyter's update_display_data); at_end is
	 * true for a figure shown as the snippet ended (a pyplot figure still
	 * open), which a terminal shows after the value. When set, it is called
	 * in place of on_display. Optional. */
	void (*on_display_id)(ptybox_session *s, uint64_t id, const char *bundle, bool late,
			      const char *display_id, bool update, bool at_end, void *data);
};

PTYBOX_API void ptybox_options_init(struct ptybox_options *o);

/* File ops, run in the interpreter's process (the code's own rights and view
 * of the filesystem) between snippets, queued in order with them; each ends
 * in one on_file. A relative path is relative to the folder the interpreter
 * started in (a snippet's os.chdir does not move it); paths are 1 to 4096
 * bytes without NUL, else -EINVAL. Each has the session's timeout, past which
 * the interpreter is restarted. -EPIPE once the session is fatal or closing,
 * -ENOBUFS when the queue is full.
 *
 * put: len bytes of data (copied) to path, atomically (a temporary file beside
 * it, renamed over it), parent folders made; mode (0..07777) or -1: the
 * replaced file's, else 0666 & ~umask. more: an upload in chunks, which the
 * next put of path at offset (the bytes so far, naming the upload:
 * ptybox_session_put_upload) continues, and the first put without more puts
 * in place (an unfinished one dies with the interpreter).
 * -ENOBUFS past 256 MiB of put data waiting in the session. */
PTYBOX_API int ptybox_session_put(ptybox_session *s, uint64_t id, const char *path,
				  const void *data, size_t len, int mode, uint64_t offset,
				  bool more);
/* put, of an upload in chunks: the first chunk's reply names its upload
 * ("upload": a token of hex digits); each later chunk must name it (upload),
 * else EINVAL; abort drops the upload named (its temporary file removed; no
 * data). An upload unused for 10 minutes is dropped, and at most 64 are kept. */
PTYBOX_API int ptybox_session_put_upload(ptybox_session *s, uint64_t id, const char *path,
					 const void *data, size_t len, int mode, uint64_t offset,
					 bool more, const char *upload, bool abort);
/* get: a regular file's bytes from offset, length of them (0: to its end);
 * refused (EFBIG) past the session's max_get. */
PTYBOX_API int ptybox_session_get(ptybox_session *s, uint64_t id, const char *path, uint64_t offset,
				  uint64_t length);
/* files: a folder's entries (recursive: the whole tree, links not followed),
 * or a file's own. */
PTYBOX_API int ptybox_session_files(ptybox_session *s, uint64_t id, const char *path,
				    bool recursive);
/* remove: a file, a link or an empty folder; recursive: a whole tree. */
PTYBOX_API int ptybox_session_remove(ptybox_session *s, uint64_t id, const char *path,
				     bool recursive);

/* Starts a session. On error returns a negative errno and writes one line to err. */
PTYBOX_API int ptybox_session_new(uv_loop_t *loop, const struct ptybox_options *o,
				  const struct ptybox_callbacks *cb, void *data,
				  ptybox_session **out, char *err, size_t errlen);
/* Queues a snippet. timeout < 0: the session's default. Copies code. */
PTYBOX_API int ptybox_session_exec(ptybox_session *s, uint64_t id, const char *code, size_t len,
				   double timeout, bool stream);
/* Queues a file's code run as `python3 FILE ARGS...` runs it: sys.argv is
 * argv (NULL-terminated, its first the file as the user named it; NULL:
 * [filename]) and __file__ is
 * filename, both left so for later snippets; tracebacks name filename;
 * non-daemon threads are waited for
 * (within the timeout) before the result; sys.exit(), sys.exit(0) and
 * sys.exit(None) end it ok, another status is an error "SystemExit" whose
 * error object says "exit": the status python3 would exit with. Copies all. */
PTYBOX_API int ptybox_session_exec_file(ptybox_session *s, uint64_t id, const char *code,
					size_t len, double timeout, bool stream,
					const char *filename, const char *const *argv);
/* One execution and all it may ask, for ptybox_session_exec_with: members
 * added later are zero (not asked) in a struct set to {0} first. */
struct ptybox_exec {
	const char *code; /* its source (no NUL byte) ... */
	size_t len;	  /* ... of len bytes */
	double timeout;	  /* < 0: the session's default */
	bool stream;	  /* on_stream and on_display for its output as it comes */
	/* A file run as python3 FILE ARGS runs it (see ptybox_session_exec_file);
	 * NULL: a snippet. argv NULL-terminated; NULL: [filename]. */
	const char *filename;
	const char *const *argv;
	/* Added to os.environ for this execution only ("K=V", K non-empty and
	 * without '=', NULL-terminated; at most 4096), and visible to the
	 * processes it starts; what they replaced is put back after it. */
	const char *const *env;
	/* The folder it runs in (relative to the current one), the current one
	 * again after it; a missing folder is its FileNotFoundError. NULL: here. */
	const char *cwd;
	/* What it reads from sys.stdin and fd 0 (at most 16 MiB), then end of
	 * file; without has_stdin, end of file at once. */
	const void *stdin_data;
	size_t stdin_len;
	bool has_stdin;
	/* Without has_stdin: sys.stdin and fd 0 are the session's stdin stream,
	 * fed by ptybox_session_stdin(), shared by the snippets that ask for it
	 * in order, as one process's stdin is. */
	bool stdin_stream;
};
/* Bytes of one ptybox_session_stdin() chunk at most. */
#define PTYBOX_STDIN_CHUNK ((size_t)1 << 20)
/* More bytes (at most PTYBOX_STDIN_CHUNK, else -E2BIG) of the session's stdin
 * stream, and with eof its end: snippets run with stdin_stream read them as
 * they come, end of file after the end. One chunk at a time: -EBUSY until
 * on_stdin_ready says the last is in the interpreter's pipe (so the caller
 * reads its input only as fast as the code takes it). Copies data. A chunk
 * given to an interpreter that dies unread is lost, as a process's unread
 * stdin is; a fresh one gets end of file at once after eof. -EPIPE once
 * closing or after eof. */
PTYBOX_API int ptybox_session_stdin(ptybox_session *s, const void *data, size_t len, bool eof);
/* Whether ptybox_session_stdin() takes a chunk now. */
PTYBOX_API bool ptybox_session_stdin_ready(const ptybox_session *s);
/* Queues the execution x describes. Copies all. -EINVAL for a NUL in code,
 * an env entry without "K=", an empty cwd or more than 16 MiB of stdin;
 * -ENOBUFS when the queue is full; -EPIPE once the session is closing. */
PTYBOX_API int ptybox_session_exec_with(ptybox_session *s, uint64_t id,
					const struct ptybox_exec *x);
/* The user's terminal is now cols x rows (1..65535 each, else -EINVAL): the
 * session's PTY takes the size at once, the code's COLUMNS and LINES (and
 * its terminal, with tty) before its next snippet. */
PTYBOX_API int ptybox_session_resize(ptybox_session *s, unsigned cols, unsigned rows);
/* Asks the interpreter about code without running it, for a prompt:
 * is_complete says whether code is a whole input ({"status": "complete",
 * "incomplete", "invalid" or "unknown", "indent": what the next line starts
 * with}, as Python's codeop decides); complete gives the names that could go
 * at cursor (in characters) from the live namespace ({"matches": [...],
 * "cursor_start": K, "cursor_end": N}: each match replaces code[K:N]). The
 * answer comes in on_reply, never inside this call, within 5 s: at once with
 * "busy": true while a snippet runs or waits (never behind it), the status
 * "unknown" or no matches; with "timeout": true when the code's own
 * __getattr__ or __dir__ took over a second and ignored ^C. -ENOBUFS past 64
 * in flight, -EPIPE after on_fatal. */
PTYBOX_API int ptybox_session_is_complete(ptybox_session *s, uint64_t id, const char *code,
					  size_t len);
PTYBOX_API int ptybox_session_complete(ptybox_session *s, uint64_t id, const char *code, size_t len,
				       size_t cursor);
/* Interrupts the running snippet (keeping state if the code lets itself be
 * interrupted, else killing and restarting). While the interpreter starts,
 * the snippet waiting for it ends unrun, as PTYBOX_INTERRUPTED. -ENOENT when
 * nothing runs or waits. */
PTYBOX_API int ptybox_session_interrupt(ptybox_session *s);
/* Replaces the interpreter with a fresh one, in order: after the snippets
 * queued before it (the running one included), before those queued after it;
 * the first result after it says state_lost. To stop a running snippet first,
 * interrupt it. After on_fatal, tries to start again. */
PTYBOX_API int ptybox_session_restart(ptybox_session *s);
/* Removes a queued snippet that has not started. It ends in on_result
 * (status PTYBOX_CANCELLED, message "cancelled before it started") before
 * this returns: the one callback that runs inside the caller's call. -EBUSY
 * when it runs (interrupt it instead), -ENOENT when no such snippet waits. */
PTYBOX_API int ptybox_session_cancel(ptybox_session *s, uint64_t id);
/* Snippets queued or running. */
PTYBOX_API size_t ptybox_session_pending(const ptybox_session *s);
/* Whether a snippet runs now; if so *id (when not NULL) says which. */
PTYBOX_API bool ptybox_session_running(const ptybox_session *s, uint64_t *id);
/* The sandbox's memory now, in bytes, from its cgroup (memory.current), or
 * a negative errno: -ENOTSUP when there is no memory cgroup (--via none, ssh,
 * exec, or not root), -ESRCH while no interpreter runs. */
PTYBOX_API long long ptybox_session_memory(const ptybox_session *s);
/* Tears the session down (every process gone); on_closed follows. */
PTYBOX_API void ptybox_session_close(ptybox_session *s);

/* A warm pool: `size` interpreters started ahead with the options o (whose
 * strings must outlive the pool), so that a session that names the pool in
 * its options, or restarts, is ready at once. Sessions using it must be
 * closed before it. */
PTYBOX_API int ptybox_pool_new(uv_loop_t *loop, const struct ptybox_options *o, unsigned size,
			       ptybox_pool **out, char *err, size_t errlen);
/* Interpreters ready to be taken now. */
PTYBOX_API unsigned ptybox_pool_ready(const ptybox_pool *p);
/* Stops every interpreter of the pool; memory goes once their handles closed. */
PTYBOX_API void ptybox_pool_close(ptybox_pool *p);

PTYBOX_API const char *ptybox_status_name(enum ptybox_status st);
PTYBOX_API const char *ptybox_version(void);

#ifdef __cplusplus
}
#endif
#endif
