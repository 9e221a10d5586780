/* options.h - parsing of option values (sizes, durations, counts). Pure. */
#ifndef PTYBOX_OPTIONS_H
#define PTYBOX_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* "512M", "4k", "1G", "1048576": binary suffixes K M G T, optional trailing
 * "B" or "iB". 0 or -EINVAL / -ERANGE. */
int options_parse_size(const char *s, uint64_t *out);
/* The longest time limit taken anywhere (a year): milliseconds of anything
 * longer would not fit the timers' uint64_t. */
#define OPTIONS_MAX_SECONDS (365.0 * 24 * 3600)
/* "1.5", "30", "0": non-negative, finite, at most OPTIONS_MAX_SECONDS. */
int options_parse_seconds(const char *s, double *out);
/* Whether v is such a number of seconds (what a parsed JSON number must be). */
bool options_seconds_valid(double v);
/* Seconds as whole milliseconds, rounded up; 0 for v <= 0 or NaN, and at
 * most OPTIONS_MAX_SECONDS' worth, whatever v is. */
uint64_t options_seconds_ms(double v);
/* A whole number in [min, max]. */
int options_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
/* A positive number of CPUs, fractions allowed ("0.5"); 0 means none. */
int options_parse_cpus(const char *s, double *out);

#endif
