/*
 * options.c - option values as users type them. Kept apart from the CLI so
 * the unit tests can feed them every odd spelling.
 */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int options_parse_size(const char *s, uint64_t *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	case 'T':
		shift = 40;
		end++;
		break;
	default: break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int options_parse_double(const char *s, double max, double *out)
{
	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end != '\0' || end == s || !isfinite(v) || strncasecmp(s, "0x", 2) == 0)
		return -EINVAL;
	if (errno == ERANGE || v < 0 || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int options_parse_seconds(const char *s, double *out)
{
	return options_parse_double(s, OPTIONS_MAX_SECONDS, out);
}

bool options_seconds_valid(double v)
{
	return v >= 0 && v <= OPTIONS_MAX_SECONDS; /* (false for NaN) */
}

uint64_t options_seconds_ms(double v)
{
	if (!(v > 0))
		return 0;
	return (uint64_t)ceil((v < OPTIONS_MAX_SECONDS ? v : OPTIONS_MAX_SECONDS) * 1000.0);
}

int options_parse_cpus(const char *s, double *out)
{
	return options_parse_double(s, 4096, out);
}

int options_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}
