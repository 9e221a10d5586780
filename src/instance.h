/*
 * instance.h - one interpreter: a transport's child on a PTY, booted through
 * the protocol's handshake to the point where it takes requests.
 */
#ifndef PTYBOX_INSTANCE_H
#define PTYBOX_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "admit.h"
#include "frame.h"
#include "protocol.h"
#include "pty.h"
#include "transport.h"

#define INSTANCE_NOISE_TAIL 400

enum instance_state {
	I_QUEUED,     /* waiting for boot admission (admit.c): nothing forked yet */
	I_BOOT,	      /* waiting for the bootstrap's prompt */
	I_BOOT_MAGIC, /* prompt seen; reading the rest of its line (the magic) */
	I_HANDSHAKE,  /* driver sent; waiting for its nonce prompt */
	I_WAIT_READY, /* nonce sent; waiting for the ready frame */
	I_READY,
	I_DYING, /* exited or killed; draining the terminal */
	I_DEAD,	 /* settled; on_dead was called */
	I_CLOSING,
};

struct instance;

struct instance_callbacks {
	void (*on_ready)(struct instance *in);
	/* A frame's payload (ready and later). */
	void (*on_frame)(struct instance *in, const char *payload, size_t len);
	void (*on_oversize)(struct instance *in, size_t len);
	/* A binary frame's data (a file's bytes; z: a zlib stream), ready and later. May be NULL.
	 */
	void (*on_binary)(struct instance *in, const char *data, size_t len, bool z);
	/* The child is gone and the terminal drained. why says how it ended; for
	 * a death before ready it ends with what the terminal last said. */
	void (*on_dead)(struct instance *in, const char *why, bool during_boot);
};

struct instance {
	enum instance_state state;
	uv_loop_t *loop;
	struct transport *transport;
	struct pty pty;
	uv_timer_t timer; /* the boot deadline, the hung-up-yet-alive grace, the drain deadline */
	uv_poll_t setup;  /* the child's set-up verdict, without blocking the loop */
	int setup_fd;
	char setup_error[256];
	int open_handles;
	uv_work_t work;	    /* the transport's kill or free, off the loop (instance_work_cb) */
	bool work_busy;	    /* work is queued or running */
	bool work_free;	    /* it frees the transport (else it kills) */
	bool kill_again;    /* a kill asked for while one ran: one more after it */
	bool shutting_down; /* closing: the relay was asked to end; its exit is awaited */
	bool kill_done;	    /* closing: the last kill is over, every process gone */
	bool child_exited, hung_up, pty_live;
	bool started;		    /* spawned, and set up: exits are handled as they come */
	bool boot_late;		    /* killed at the boot deadline */
	struct admit_ticket ticket; /* its place among the loop's boots */
	bool terminal_lost;	    /* hung up while the child ran on: killed for it */
	int wstatus;
	char nonce[2 * PROTOCOL_NONCE_BYTES + 1];
	size_t prompt_matched;
	char boot_rest[PROTOCOL_BOOT_REST_MAX]; /* the prompt's line after the prompt */
	size_t boot_rest_len;
	const char *lang; /* the kernel the relay starts (lang_find's) */
	struct frame_scanner scanner;
	char noise[INSTANCE_NOISE_TAIL + 1];
	size_t noise_len;
	uint64_t boot_ms;
	uint64_t started_ns, ready_ns;
	const struct instance_callbacks *cb;
	void *data;
	struct log *log; /* its owner's debug log (a reference); NULL: the process's */
	void (*closed_cb)(void *closed_data); /* see instance_close_notify */
	void *closed_data;
};

/* Starts the child and the boot, at once or, when the loop boots as many
 * as it may already, once admitted (admit.c; the boot deadline counts from
 * then). The caller owns the result: it ends with instance_close(), which
 * frees it. On error returns a negative errno with one line in err, and
 * nothing is left. */
int instance_start(uv_loop_t *loop, const struct transport_options *topts, size_t max_payload,
		   double boot_timeout, const struct instance_callbacks *cb, void *data,
		   struct log *log, struct instance **out, char *err, size_t errlen);
/* Hands the instance to another owner, who logs to log. */
void instance_adopt(struct instance *in, const struct instance_callbacks *cb, void *data,
		    struct log *log);
/* Takes ownership of buf. */
int instance_write(struct instance *in, char *buf, size_t len);
/* ^C over the terminal, and the interrupt request that names snippet id. */
int instance_interrupt(struct instance *in, uint64_t id);
/* Kills the child and every process of the sandbox (off the loop's thread
 * when that can wait: the local sandbox); on_dead follows once the terminal
 * is drained. */
void instance_kill(struct instance *in);
/* Ends the instance without blocking the loop: a ready relay is asked to end
 * (bounded), then every process is killed and the child reaped, the handles
 * closed, the transport freed (its cgroups removed, off the loop's thread),
 * and the memory last. No callback of the owner's is called after this. */
void instance_close(struct instance *in);
/* instance_close, then cb(data) once every handle is closed and the
 * transport is gone (its cgroups removed): for an owner that must not finish
 * before its instance does. */
void instance_close_notify(struct instance *in, void (*cb)(void *data), void *data);

#endif
