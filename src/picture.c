/*
 * picture.c - pictures in rich output, without I/O (see picture.h).
 *
 * cli_picture.c saves and shows them; what it needs to decide and to write
 * is here, so that unit tests check it byte by byte: the terminal's answers
 * come from a program we do not control, and the sequences we send must be
 * exactly what kitty and iTerm2 document.
 *
 * The probe's grammar (bytes the terminal sends after picture_probe_query):
 *   reply  := { noise | apc | csi }
 *   apc    := ESC '_' text ESC '\'         kitty: text = "Gi=31;OK" (or an error)
 *   csi    := ESC '[' '?' Ps { ';' Ps } 'c' DA1: Ps after the first, 4 = sixel
 *           | ESC '[' bytes final          anything else, skipped
 */
#define _GNU_SOURCE
#include "picture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static const char *const picture_mimes[] = {"image/png", "image/jpeg", "image/svg+xml"};
static const char *const picture_exts[] = {"png", "jpg", "svg"};

/* The query: kitty's "does this work" (a 1x1 RGB image, a=q: only answered,
 * never shown), then DA1, which every terminal answers, kitty after the first. */
#define PICTURE_STR(x)	PICTURE_STR_(x)
#define PICTURE_STR_(x) #x
const char picture_probe_query[] =
	"\033_Gi=" PICTURE_STR(PICTURE_KITTY_QUERY_ID) ",s=1,v=1,a=q,t=d,f=24;AAAA\033\\\033[c";
/* Inside tmux or screen: DA1 alone (an APC there sets the pane's title, and
 * kitty's pictures would not pass unwrapped anyway). */
const char picture_probe_query_da1[] = "\033[c";

const char *picture_mime(enum picture_kind k)
{
	return k >= PICTURE_PNG && k <= PICTURE_SVG ? picture_mimes[k] : NULL;
}

const char *picture_ext(enum picture_kind k)
{
	return k >= PICTURE_PNG && k <= PICTURE_SVG ? picture_exts[k] : NULL;
}

enum picture_kind picture_of_bundle(const cJSON *bundle, const char **data)
{
	for (int k = PICTURE_PNG; k <= PICTURE_SVG; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(bundle, picture_mimes[k]);
		if (cJSON_IsString(v) && v->valuestring) {
			*data = v->valuestring;
			return (enum picture_kind)k;
		}
	}
	return PICTURE_NONE;
}

int picture_decode(enum picture_kind k, const char *text, size_t len, unsigned char **out,
		   size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	if (k == PICTURE_SVG) {
		if (len > PICTURE_MAX_BYTES)
			return -EFBIG;
		if (!(*out = malloc(len + 1)))
			return -ENOMEM;
		memcpy(*out, text, len);
		*out_len = len;
		return 0;
	}
	if (k != PICTURE_PNG && k != PICTURE_JPEG)
		return -EINVAL;
	size_t max = len / 4 * 3 + 3;
	if (max > PICTURE_MAX_BYTES + 3)
		return -EFBIG;
	unsigned char *bin = malloc(max + 1);
	if (!bin)
		return -ENOMEM;
	const char *end = NULL;
	size_t n = 0;
	if (sodium_base642bin(bin, max, text, len, " \t\r\n", &n, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != text + len || n == 0) {
		free(bin);
		return -EINVAL;
	}
	if (n > PICTURE_MAX_BYTES) {
		free(bin);
		return -EFBIG;
	}
	*out = bin;
	*out_len = n;
	return 0;
}

bool picture_looks_like(enum picture_kind k, const unsigned char *data, size_t len)
{
	switch (k) {
	case PICTURE_PNG: return len >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0;
	case PICTURE_JPEG: return len >= 3 && memcmp(data, "\xff\xd8\xff", 3) == 0;
	default: return false;
	}
}

static unsigned picture_be(const unsigned char *p, int n)
{
	unsigned v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int picture_size(enum picture_kind k, const unsigned char *data, size_t len, unsigned *w,
		 unsigned *h)
{
	if (!picture_looks_like(k, data, len))
		return -EINVAL;
	if (k == PICTURE_PNG) { /* signature, length, "IHDR", width, height */
		if (len < 24 || memcmp(data + 12, "IHDR", 4) != 0)
			return -EINVAL;
		*w = picture_be(data + 16, 4);
		*h = picture_be(data + 20, 4);
		return 0;
	}
	/* JPEG: segments after SOI until a start of frame (SOF0-15 but DHT,
	 * JPG and DAC), which holds precision, height, width. */
	size_t i = 2;
	while (i + 4 <= len) {
		if (data[i] != 0xff)
			return -EINVAL;
		unsigned char m = data[i + 1];
		if (m == 0xff) { /* (fill bytes) */
			i++;
			continue;
		}
		if (m == 0xd8 || (m >= 0xd0 && m <= 0xd7) || m == 0x01) {
			i += 2; /* (markers without a length) */
			continue;
		}
		if (m == 0xd9 || m == 0xda)
			return -EINVAL; /* (the image's end or its data, and no frame yet) */
		unsigned seg = picture_be(data + i + 2, 2);
		if (seg < 2)
			return -EINVAL;
		if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
			if (seg < 7 || i + 9 > len)
				return -EINVAL;
			*h = picture_be(data + i + 5, 2);
			*w = picture_be(data + i + 7, 2);
			return 0;
		}
		i += 2 + seg;
	}
	return -EINVAL;
}

bool picture_sixel_fits(enum picture_kind k, const unsigned char *data, size_t len)
{
	unsigned w, h;
	return picture_size(k, data, len, &w, &h) == 0 && w && h && w <= PICTURE_SIXEL_MAX_SIDE &&
	       h <= PICTURE_SIXEL_MAX_SIDE && (unsigned long long)w * h <= PICTURE_SIXEL_MAX_PIXELS;
}

int picture_path(char *buf, size_t cap, const char *dir, unsigned n, enum picture_kind k)
{
	const char *ext = picture_ext(k);
	if (!ext)
		return -EINVAL;
	bool bare = !dir || !dir[0] || strcmp(dir, ".") == 0;
	size_t dl = bare ? 0 : strlen(dir);
	const char *sep = !bare && dir[dl - 1] != '/' ? "/" : "";
	int w = snprintf(buf, cap, "%s%sptybox-%u.%s", bare ? "" : dir, sep, n, ext);
	return w < 0 || (size_t)w >= cap ? -ENAMETOOLONG : 0;
}

/* data as base64 (no newlines), NUL-terminated; NULL when out of memory. */
static char *picture_base64(const unsigned char *data, size_t len, size_t *b64_len)
{
	size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *b64 = malloc(cap);
	if (!b64)
		return NULL;
	sodium_bin2base64(b64, cap, data, len, sodium_base64_VARIANT_ORIGINAL);
	*b64_len = strlen(b64);
	return b64;
}

char *picture_kitty(const unsigned char *png, size_t len, size_t *out_len)
{
	size_t blen;
	char *b64 = picture_base64(png, len, &blen);
	if (!b64)
		return NULL;
	size_t chunks = blen ? (blen + PICTURE_KITTY_CHUNK - 1) / PICTURE_KITTY_CHUNK : 1;
	char *out = malloc(blen + chunks * 32 + 1);
	if (!out) {
		free(b64);
		return NULL;
	}
	size_t o = 0;
	for (size_t i = 0; i < chunks; i++) {
		size_t at = i * PICTURE_KITTY_CHUNK;
		size_t n = blen - at < PICTURE_KITTY_CHUNK ? blen - at : PICTURE_KITTY_CHUNK;
		int more = i + 1 < chunks;
		/* the first command says what the data is; the others only m= */
		o += (size_t)sprintf(out + o, i == 0 ? "\033_Ga=T,f=100,q=2,m=%d;" : "\033_Gm=%d;",
				     more);
		memcpy(out + o, b64 + at, n);
		o += n;
		memcpy(out + o, "\033\\", 2);
		o += 2;
	}
	out[o] = '\0';
	free(b64);
	*out_len = o;
	return out;
}

char *picture_iterm(const unsigned char *data, size_t len, size_t *out_len)
{
	size_t blen;
	char *b64 = picture_base64(data, len, &blen);
	if (!b64)
		return NULL;
	char *out = malloc(blen + 96);
	if (!out) {
		free(b64);
		return NULL;
	}
	int o = sprintf(out, "\033]1337;File=inline=1;size=%zu;preserveAspectRatio=1:", len);
	memcpy(out + o, b64, blen);
	out[o + blen] = '\a';
	out[o + blen + 1] = '\0';
	*out_len = (size_t)o + blen + 1;
	free(b64);
	return out;
}

bool picture_sixel_valid(const char *s, size_t len)
{
	if (len < 5 || memcmp(s, "\033P", 2) != 0 || memcmp(s + len - 2, "\033\\", 2) != 0)
		return false;
	size_t i = 2;
	while (i < len - 2 && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';'))
		i++;
	if (i == len - 2 || s[i] != 'q')
		return false;
	for (i++; i < len - 2; i++)
		if ((s[i] < 0x20 || s[i] > 0x7e) && s[i] != '\n' && s[i] != '\r')
			return false;
	return true;
}

enum { P_GROUND, P_ESC, P_APC, P_APC_ESC, P_CSI, P_DA, P_CSI_OTHER };

void picture_probe_init(struct picture_probe *p)
{
	memset(p, 0, sizeof(*p));
}

/* An APC string is kitty's answer to our query when it names our id and
 * says OK (an error answer means the protocol is there but would not show
 * this: not used). */
static void picture_probe_apc(struct picture_probe *p)
{
	static const char ours[] = "Gi=" PICTURE_STR(PICTURE_KITTY_QUERY_ID);
	size_t n = sizeof(ours) - 1;
	if (p->apc_len <= n || memcmp(p->apc, ours, n) != 0 ||
	    (p->apc[n] != ';' && p->apc[n] != ','))
		return;
	const char *semi = memchr(p->apc, ';', p->apc_len);
	if (semi && (size_t)(p->apc + p->apc_len - semi) >= 3 && memcmp(semi + 1, "OK", 2) == 0)
		p->kitty = true;
}

static void picture_probe_param_end(struct picture_probe *p)
{
	if (p->nparam++ > 0 && p->param == 4)
		p->da_sixel = true;
	p->param = 0;
}

bool picture_probe_feed(struct picture_probe *p, const char *buf, size_t len)
{
	for (size_t i = 0; i < len && !p->done; i++) {
		unsigned char c = (unsigned char)buf[i];
		switch (p->state) {
		case P_GROUND:
			if (c == 0x1b)
				p->state = P_ESC;
			break;
		case P_ESC:
			p->state = c == '_'    ? P_APC
				   : c == '['  ? P_CSI
				   : c == 0x1b ? P_ESC
					       : P_GROUND;
			p->apc_len = 0;
			break;
		case P_APC:
			if (c == 0x1b)
				p->state = P_APC_ESC;
			else if (p->apc_len < sizeof(p->apc))
				p->apc[p->apc_len++] = (char)c;
			break;
		case P_APC_ESC:
			if (c == '\\') {
				picture_probe_apc(p);
				p->state = P_GROUND;
			} else { /* not ST: an ESC that starts something else */
				p->state = P_ESC;
				i--;
			}
			break;
		case P_CSI:
			if (c == '?') {
				p->state = P_DA;
				p->param = p->nparam = 0;
				p->da_sixel = false;
			} else {
				p->state = P_CSI_OTHER;
				i--;
			}
			break;
		case P_DA:
			if (c >= '0' && c <= '9') {
				if (p->param < 100000)
					p->param = p->param * 10 + (c - '0');
			} else if (c == ';') {
				picture_probe_param_end(p);
			} else if (c == 'c') {
				picture_probe_param_end(p);
				p->sixel = p->da_sixel;
				p->done = true;
			} else if (c == 0x1b) {
				p->state = P_ESC;
			} else { /* another CSI: to its final byte */
				p->state = c >= 0x40 && c <= 0x7e ? P_GROUND : P_CSI_OTHER;
			}
			break;
		case P_CSI_OTHER:
			if (c == 0x1b)
				p->state = P_ESC;
			else if (c >= 0x40 && c <= 0x7e)
				p->state = P_GROUND;
			break;
		}
	}
	return p->done;
}

enum picture_inline picture_probe_result(const struct picture_probe *p, bool sixel_ok)
{
	if (p->kitty)
		return PICTURE_INLINE_KITTY;
	if (p->sixel && sixel_ok)
		return PICTURE_INLINE_SIXEL;
	return PICTURE_INLINE_NONE;
}

bool picture_env_iterm(const char *term_program, const char *lc_terminal)
{
	return (term_program &&
		(strcmp(term_program, "iTerm.app") == 0 || strcmp(term_program, "WezTerm") == 0)) ||
	       (lc_terminal && strcmp(lc_terminal, "iTerm2") == 0);
}
