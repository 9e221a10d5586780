/*
 * picture.h - pictures in rich output, without I/O: which part of a MIME
 * bundle is a picture, its bytes, the name it is saved under, the escape
 * sequences that show it inline (kitty, iTerm2), and what a terminal answers
 * when asked which of them it speaks.
 */
#ifndef PTYBOX_PICTURE_H
#define PTYBOX_PICTURE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The largest picture saved or shown, decoded: more is not a picture a
 * person looks at (and a session keeps at most 64 MiB of displays anyway). */
#define PICTURE_MAX_BYTES ((size_t)64 << 20)
/* The most base64 bytes in one kitty graphics command (its protocol's cap). */
#define PICTURE_KITTY_CHUNK 4096
/* The image id of the kitty query (any number: the reply carries it). */
#define PICTURE_KITTY_QUERY_ID 31

/* The picture kinds, in the order one is chosen from a bundle. */
enum picture_kind { PICTURE_NONE = -1, PICTURE_PNG, PICTURE_JPEG, PICTURE_SVG };

/* How the terminal shows pictures inline. */
enum picture_inline {
	PICTURE_INLINE_NONE,
	PICTURE_INLINE_KITTY,
	PICTURE_INLINE_ITERM,
	PICTURE_INLINE_SIXEL
};

/* "image/png", ...; "png", "jpg", "svg". */
const char *picture_mime(enum picture_kind k);
const char *picture_ext(enum picture_kind k);
/* A bundle's picture: the first of image/png, image/jpeg, image/svg+xml that
 * is a string (*data set to it), or PICTURE_NONE. (text/html is no picture.) */
enum picture_kind picture_of_bundle(const cJSON *bundle, const char **data);
/* The picture's bytes from its bundle text: base64 decoded (with libsodium;
 * whitespace skipped) for PNG and JPEG, the text itself for SVG. *out is
 * malloc'ed (caller frees). 0, -EINVAL (not base64), -EFBIG (over
 * PICTURE_MAX_BYTES), -ENOMEM. */
int picture_decode(enum picture_kind k, const char *text, size_t len, unsigned char **out,
		   size_t *out_len);
/* Whether data starts as a file of kind k (PNG signature, JPEG SOI): what
 * an inline protocol would fail on is not sent to the terminal. */
bool picture_looks_like(enum picture_kind k, const unsigned char *data, size_t len);
/* The most pixels of a picture decoded on our side (sixel): a small PNG can
 * claim a huge canvas (a "PNG bomb"), whose decoding and encoding would keep
 * the client busy for seconds each; no terminal window is larger anyway. */
#define PICTURE_SIXEL_MAX_SIDE	 8192u
#define PICTURE_SIXEL_MAX_PIXELS ((unsigned long long)4096 * 4096)
/* The width and height the file says it has (PNG's IHDR, JPEG's SOF): 0, or
 * -EINVAL when data says none. */
int picture_size(enum picture_kind k, const unsigned char *data, size_t len, unsigned *w,
		 unsigned *h);
/* Whether a picture is small enough to be decoded for sixel. */
bool picture_sixel_fits(enum picture_kind k, const unsigned char *data, size_t len);
/* "DIR/ptybox-N.EXT" in buf (DIR NULL or "" or ".": "ptybox-N.EXT"). 0, or
 * -ENAMETOOLONG when it does not fit in cap bytes. */
int picture_path(char *buf, size_t cap, const char *dir, unsigned n, enum picture_kind k);

/* kitty's graphics protocol: transmit and show a PNG (f=100, a=T, q=2 so
 * that the terminal answers nothing), its base64 in commands of at most
 * PICTURE_KITTY_CHUNK bytes (m=1 on all but the last, m=0 on the last).
 * Malloc'ed, *out_len bytes (and a NUL); NULL when out of memory. */
char *picture_kitty(const unsigned char *png, size_t len, size_t *out_len);
/* iTerm2's inline image: OSC 1337 ; File=inline=1;size=N... : BASE64 BEL. */
char *picture_iterm(const unsigned char *data, size_t len, size_t *out_len);

/* Whether s is one sixel image and nothing else: ESC P, parameters, q,
 * printable ASCII (sixel data, colours, raster attributes), ESC \. What an
 * encoder wrote goes to the terminal only so: no other sequence slips by. */
bool picture_sixel_valid(const char *s, size_t len);

/* The terminal's answer to picture_probe_query: a kitty graphics reply for
 * our id (if it speaks the protocol), then the DA1 reply (every terminal):
 * "ESC [ ? 62 ; 4 ; ... c", attribute 4 being sixel. Bytes around them (a key
 * the user pressed) are skipped. */
extern const char picture_probe_query[];
extern const char picture_probe_query_da1[];
struct picture_probe {
	int state;
	bool kitty, sixel, done;
	unsigned param;	 /* the DA1 parameter being read */
	unsigned nparam; /* DA1 parameters before it (the first is the level) */
	bool da_sixel;	 /* one of them was 4 (kept once the reply ends) */
	size_t apc_len;	 /* bytes of the APC string kept */
	char apc[64];	 /* the start of an APC string: "Gi=31;OK" */
};
void picture_probe_init(struct picture_probe *p);
/* Feeds the terminal's bytes; true once the DA1 reply is complete. */
bool picture_probe_feed(struct picture_probe *p, const char *buf, size_t len);
/* What the answer means: kitty first, then sixel (when sixel_ok: ptybox can
 * encode it), else none. */
enum picture_inline picture_probe_result(const struct picture_probe *p, bool sixel_ok);
/* Terminals known by their environment to show iTerm2's inline images
 * (TERM_PROGRAM iTerm.app or WezTerm, LC_TERMINAL iTerm2): no probe needed. */
bool picture_env_iterm(const char *term_program, const char *lc_terminal);

#endif
