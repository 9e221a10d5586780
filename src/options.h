/* options.h - parsing of option values (sizes, durations, counts). Pure. */
#ifndef PTYBOX_OPTIONS_H
#define PTYBOX_OPTIONS_H

#include <stdint.h>

/* "512M", "4k", "1G", "1048576": binary suffixes K M G T, optional trailing
 * "B" or "iB". 0 or -EINVAL / -ERANGE. */
int options_parse_size(const char *s, uint64_t *out);
/* "1.5", "30", "0": non-negative, finite, at most a year. */
int options_parse_seconds(const char *s, double *out);
/* A whole number in [min, max]. */
int options_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
/* A positive number of CPUs, fractions allowed ("0.5"); 0 means none. */
int options_parse_cpus(const char *s, double *out);

#endif
