/*
 * record.c - an asciicast v2 recording of what a session showed (`--record FILE.cast`).
 *
 * Fed by a session's transcript (transcript.c), the same bytes its screen gets, never raw PTY
 * bytes. Shaped for a loop that must not wait: the file is a regular one (a FIFO or a device
 * could block, so they are refused), written with plain write(2) from a buffer of RECORD_BUFFER
 * bytes, flushed when full, at each execution's end (record_flush), at close, and whenever
 * the owner likes (the server: each second), so an abrupt end loses little. Bounded: the file never
 * passes its cap; the event that would pass it is replaced by a last one saying the recording
 * stops, then nothing more is written. A write error (ENOSPC, EIO, EFBIG) stops the recording too.
 * Either is said once, through the owner's warn, and never ends the session. The formatting
 * (record_header_line, record_event_line) is pure, for the unit tests.
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "protocol.h"
#include "term_safe.h"

/* Sandbox text filtered per event. */
#define RECORD_CHUNK ((size_t)16 << 10)
/* Room kept under the cap for the last event, which says the recording stops. */
#define RECORD_NOTE_ROOM 256
#define RECORD_LABEL_MAX 200
#define RECORD_TITLE_MAX 200

struct record {
	int fd;
	char *path;
	struct timespec start;
	double last_t;
	uint64_t max, size; /* the cap; the bytes written or buffered */
	char *buf;
	size_t blen;
	bool stopped, in_text, last_cr;
	struct term_safe safe;
	void (*warn)(void *data, const char *message);
	void *data;
};

/* The length of the well-formed UTF-8 sequence at s (at most n bytes), 0 if there is none. */
static size_t record_utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;
	if (c < 0x80)
		return c ? 1 : 0; /* (a NUL would end the JSON string's C form) */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* in as valid UTF-8 without NUL, NUL-terminated, into a new string: each byte that starts no
 * well-formed sequence becomes U+FFFD. NULL when out of memory. */
static char *record_utf8_fix(const char *in, size_t len)
{
	char *out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t n = record_utf8_seq((const unsigned char *)in + i, len - i);
		if (n) {
			memcpy(out + o, in + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

static char *record_json_string(const char *s, size_t len)
{
	char *fixed = record_utf8_fix(s, len);
	cJSON *str = fixed ? cJSON_CreateString(fixed) : NULL;
	free(fixed);
	char *out = str ? cJSON_PrintUnformatted(str) : NULL;
	cJSON_Delete(str);
	return out;
}

int record_header_line(unsigned width, unsigned height, long long timestamp, const char *title,
		       const char *term, const char *shell, char **out, size_t *len)
{
	cJSON *o = cJSON_CreateObject();
	char *t = NULL, *s = NULL;
	if (!o)
		return -ENOMEM;
	cJSON_AddNumberToObject(o, "version", 2);
	cJSON_AddNumberToObject(o, "width", width);
	cJSON_AddNumberToObject(o, "height", height);
	cJSON_AddNumberToObject(o, "timestamp", (double)timestamp);
	if (title) {
		size_t n = strlen(title);
		t = record_utf8_fix(title, protocol_utf8_prefix(title, n, RECORD_TITLE_MAX));
		if (!t || !cJSON_AddStringToObject(o, "title", t))
			goto fail;
	}
	cJSON *env = cJSON_AddObjectToObject(o, "env");
	if (!env)
		goto fail;
	const char *key[2] = {"TERM", "SHELL"}, *val[2] = {term, shell};
	for (int i = 0; i < 2; i++) {
		if (!val[i])
			continue;
		char *v = record_utf8_fix(val[i], strlen(val[i]));
		cJSON *item = v ? cJSON_AddStringToObject(env, key[i], v) : NULL;
		free(v);
		if (!item)
			goto fail;
	}
	s = cJSON_PrintUnformatted(o);
	if (!s)
		goto fail;
	size_t n = strlen(s);
	*out = malloc(n + 2);
	if (!*out)
		goto fail;
	memcpy(*out, s, n);
	(*out)[n++] = '\n';
	(*out)[n] = '\0';
	*len = n;
	cJSON_free(s);
	free(t);
	cJSON_Delete(o);
	return 0;
fail:
	cJSON_free(s);
	free(t);
	cJSON_Delete(o);
	return -ENOMEM;
}

int record_event_line(double t, char type, const char *data, size_t len, char **out, size_t *olen)
{
	char *js = record_json_string(data, len);
	if (!js)
		return -ENOMEM;
	size_t n = strlen(js);
	*out = malloc(n + 40);
	if (!*out) {
		cJSON_free(js);
		return -ENOMEM;
	}
	if (t < 0 || t != t)
		t = 0;
	int m = snprintf(*out, n + 40, "[%.6f, \"%c\", %s]\n", t, type, js);
	cJSON_free(js);
	if (m < 0 || (size_t)m >= n + 40) { /* (a time past 1e20 s: not from a clock) */
		free(*out);
		return -ENOMEM;
	}
	*olen = (size_t)m;
	return 0;
}

static double record_now(struct record *r)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double t = (double)(now.tv_sec - r->start.tv_sec) +
		   (double)(now.tv_nsec - r->start.tv_nsec) / 1e9;
	if (t < r->last_t) /* (never backwards, whatever the clock does) */
		t = r->last_t;
	r->last_t = t;
	return t;
}

/* The recording ends early: "recording PATH: stopped" + why, said once. */
static void record_stop(struct record *r, const char *why)
{
	char msg[512];
	r->stopped = true;
	r->blen = 0;
	snprintf(msg, sizeof(msg), "recording %s: stopped%s", r->path, why);
	if (r->warn)
		r->warn(r->data, msg);
}

static void record_write(struct record *r, const char *p, size_t n)
{
	while (n && !r->stopped) {
		ssize_t w = write(r->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			char why[128];
			snprintf(why, sizeof(why), ": %s", strerror(w < 0 ? errno : EIO));
			record_stop(r, why);
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

void record_flush(struct record *r)
{
	if (!r || r->stopped || !r->blen)
		return;
	size_t n = r->blen;
	r->blen = 0;
	record_write(r, r->buf, n);
}

/* A line into the file's buffer, if it stays under the cap; else the last line. */
static void record_put(struct record *r, const char *line, size_t n, double t)
{
	if (r->stopped)
		return;
	if (r->size + n + RECORD_NOTE_ROOM > r->max) {
		char note[160], *last = NULL;
		size_t ln = 0;
		int m = snprintf(note, sizeof(note),
				 "\r\n\x1b[0m[ptybox: the recording stops here: it reached its "
				 "cap of %llu bytes]\r\n",
				 (unsigned long long)r->max);
		if (record_event_line(t, 'o', note, (size_t)m, &last, &ln) == 0 &&
		    r->size + ln <= r->max) {
			record_flush(r);
			record_write(r, last, ln);
		}
		free(last);
		if (!r->stopped) {
			char why[96];
			snprintf(why, sizeof(why), " at its size cap (%llu bytes)",
				 (unsigned long long)r->max);
			record_stop(r, why);
		}
		return;
	}
	r->size += n;
	if (r->blen + n > RECORD_BUFFER)
		record_flush(r);
	if (n > RECORD_BUFFER) {
		record_write(r, line, n);
		return;
	}
	memcpy(r->buf + r->blen, line, n);
	r->blen += n;
}

static void record_event(struct record *r, char type, const char *data, size_t len)
{
	char *line;
	size_t n;
	if (r->stopped || (!len && type == 'o'))
		return;
	double t = record_now(r);
	if (record_event_line(t, type, data, len, &line, &n) < 0)
		return; /* (out of memory: this event is lost, the next may fit) */
	record_put(r, line, n, t);
	free(line);
}

/* Filtered bytes as a tty with onlcr shows them: each lone LF as CR LF. */
static void record_emit_crlf(struct record *r, const char *p, size_t n)
{
	char *out = malloc(2 * n + 1);
	size_t o = 0;
	if (!out)
		return;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n' && !r->last_cr)
			out[o++] = '\r';
		out[o++] = p[i];
		r->last_cr = p[i] == '\r';
	}
	record_event(r, 'o', out, o);
	free(out);
}

/* What the filter holds of a sandbox text (an unfinished sequence) comes out, escaped. */
static void record_text_end(struct record *r)
{
	char held[TERM_SAFE_OUT_MAX(0)];
	size_t n = term_safe_end(&r->safe, held);
	r->in_text = false;
	if (n)
		record_emit_crlf(r, held, n);
}

void record_output(struct record *r, const char *bytes, size_t len, bool sandbox)
{
	if (!r || r->stopped)
		return;
	if (!sandbox && r->in_text)
		record_text_end(r);
	char *buf = malloc(TERM_SAFE_OUT_MAX(len < RECORD_CHUNK ? len : RECORD_CHUNK));
	if (!buf)
		return;
	while (len) {
		size_t n = len < RECORD_CHUNK ? len : RECORD_CHUNK;
		/* (ptybox's own bytes too: the code it echoes is the sandbox user's) */
		size_t m = term_safe_feed(&r->safe, bytes, n, buf);
		record_emit_crlf(r, buf, m);
		bytes += n;
		len -= n;
	}
	free(buf);
	if (sandbox)
		r->in_text = true;
	else
		record_text_end(r);
}

void record_transcript_emit(void *data, const char *bytes, size_t len, bool sandbox)
{
	record_output(data, bytes, len, sandbox);
}

void record_marker(struct record *r, const char *label)
{
	if (!r || r->stopped)
		return;
	if (r->in_text)
		record_text_end(r);
	record_event(r, 'm', label, protocol_utf8_prefix(label, strlen(label), RECORD_LABEL_MAX));
}

void record_exec(struct record *r, uint64_t id, const char *code, size_t len)
{
	char label[RECORD_LABEL_MAX + 1];
	size_t i = 0;
	while (i < len && (code[i] == '\n' || code[i] == '\r'))
		i++; /* (the first line that says something) */
	size_t end = i;
	while (end < len && code[end] != '\n' && end - i < RECORD_LABEL_MAX)
		end++;
	snprintf(label, sizeof(label), "exec %llu: %.*s", (unsigned long long)id, (int)(end - i),
		 code + i);
	for (char *p = label; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	record_marker(r, label);
}

void record_resize(struct record *r, unsigned cols, unsigned rows)
{
	char size[32];
	if (!r)
		return;
	int n = snprintf(size, sizeof(size), "%ux%u", cols, rows);
	record_event(r, 'r', size, (size_t)n);
}

bool record_stopped(const struct record *r)
{
	return r && r->stopped;
}

int record_open(struct record **out, const struct record_config *cfg, char *err, size_t errlen)
{
	struct record *r = calloc(1, sizeof(*r));
	char *header = NULL;
	size_t hlen = 0;
	int rc = -ENOMEM;
	if (!r || !(r->path = strdup(cfg->path)) || !(r->buf = malloc(RECORD_BUFFER))) {
		snprintf(err, errlen, "%s: out of memory", cfg->path);
		goto fail_free;
	}
	r->max = cfg->max_bytes ? cfg->max_bytes : RECORD_MAX_DEFAULT;
	r->warn = cfg->warn;
	r->data = cfg->data;
	term_safe_init(&r->safe);
	/* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of waiting for one */
	/* (truncated only once it is known to be ours to overwrite) */
	r->fd = open(cfg->path, O_RDWR | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	bool readable = r->fd >= 0;
	if (r->fd < 0 && errno == EACCES) /* (a file we may write and not read) */
		r->fd = open(cfg->path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
			     0600);
	if (r->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", cfg->path,
			 rc == -ENXIO ? "not a regular file" : strerror(-rc));
		goto fail_free;
	}
	struct stat st;
	if (fstat(r->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file", cfg->path);
		goto fail_close;
	}
	/* `ptybox run --record out >> out`: both would write into one file */
	for (int fd = 1; fd <= 2; fd++) {
		struct stat o;
		if (fstat(fd, &o) == 0 && o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
			rc = -EINVAL;
			snprintf(err, errlen, "%s: it is the standard %s", cfg->path,
				 fd == 1 ? "output" : "error");
			goto fail_close;
		}
	}
	/* `--record notes.py`, a slip for another option's value: only a
	 * recording (or an empty file) is overwritten, as asciinema rec won't
	 * overwrite without being told */
	static const char magic[] = "{\"version\"";
	char head[sizeof(magic) - 1];
	if (readable && st.st_size > 0 &&
	    (pread(r->fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	     memcmp(head, magic, sizeof(head)) != 0)) {
		rc = -EEXIST;
		snprintf(err, errlen, "%s: exists and is not a recording: remove it first",
			 cfg->path);
		goto fail_close;
	}
	/* Held until record_close (on this open file: another open of it, in this process or
	 * another, does not get it): a file that a session or a run records is refused, not
	 * truncated under it (newuser-12: the two then wrote one corrupt file). A file system
	 * without locks does not stop us. */
	if (flock(r->fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		rc = -EBUSY;
		snprintf(err, errlen,
			 "%s: another recording writes it (a session's --record, or a run's): "
			 "choose another file",
			 cfg->path);
		goto fail_close;
	}
	if (ftruncate(r->fd, 0) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", cfg->path, strerror(-rc));
		goto fail_close;
	}
	fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) & ~O_NONBLOCK);
	const char *term = getenv("TERM"), *shell = getenv("SHELL");
	rc = record_header_line(cfg->width ? cfg->width : 80, cfg->height ? cfg->height : 24,
				(long long)time(NULL), cfg->title,
				term && *term ? term : "xterm-256color",
				shell && *shell ? shell : "/bin/sh", &header, &hlen);
	if (rc < 0) {
		snprintf(err, errlen, "%s: out of memory", cfg->path);
		goto fail_close;
	}
	if (hlen + RECORD_NOTE_ROOM > r->max) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: a cap of %llu bytes leaves no room for events",
			 cfg->path, (unsigned long long)r->max);
		goto fail_close;
	}
	/* The header is written now: a file that cannot take it is the user's error at once. */
	errno = 0;
	if (write(r->fd, header, hlen) != (ssize_t)hlen) {
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: %s", cfg->path, strerror(-rc));
		goto fail_close;
	}
	r->size = hlen;
	free(header);
	clock_gettime(CLOCK_MONOTONIC, &r->start);
	*out = r;
	return 0;
fail_close:
	close(r->fd);
fail_free:
	free(header);
	if (r) {
		free(r->buf);
		free(r->path);
		free(r);
	}
	return rc;
}

void record_close(struct record *r)
{
	if (!r)
		return;
	if (!r->stopped && r->in_text)
		record_text_end(r);
	record_flush(r);
	if (close(r->fd) < 0 && !r->stopped) {
		char why[128];
		snprintf(why, sizeof(why), ": %s", strerror(errno));
		record_stop(r, why);
	}
	free(r->buf);
	free(r->path);
	free(r);
}
