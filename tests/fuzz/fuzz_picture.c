/*
 * fuzz_picture.c - libFuzzer target for picture.c: what the terminal
 * answers to the probe, and what the sandbox sends as a picture.
 *
 * Input: byte 0 picks the part. Probe: the rest fed whole and in pieces
 * whose sizes come from the bytes themselves must read the same. Picture:
 * the rest as base64 text; what decodes must come back whole from the kitty
 * and iTerm2 sequences made of it (each a well-formed escape). Sixel check:
 * it must never accept a sequence with an ESC or a C0 control inside.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz_check.h"
#include "picture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_probe(const char *s, size_t n)
{
	struct picture_probe whole, parts;
	picture_probe_init(&whole);
	picture_probe_init(&parts);
	bool d1 = picture_probe_feed(&whole, s, n);
	size_t i = 0;
	bool d2 = false;
	while (i < n) {
		size_t step = 1 + (unsigned char)s[i] % 7;
		if (step > n - i)
			step = n - i;
		d2 = picture_probe_feed(&parts, s + i, step) || d2;
		i += step;
	}
	CHECK(d1 == d2);
	CHECK(whole.kitty == parts.kitty && whole.sixel == parts.sixel);
	CHECK(picture_probe_result(&whole, true) == picture_probe_result(&parts, true));
}

static void fuzz_decode(const char *s, size_t n)
{
	unsigned char *bin;
	size_t len;
	if (picture_decode(PICTURE_PNG, s, n, &bin, &len) != 0) {
		CHECK(bin == NULL);
		return;
	}
	CHECK(len > 0 && len <= PICTURE_MAX_BYTES);
	size_t kn, in;
	char *k = picture_kitty(bin, len, &kn), *it = picture_iterm(bin, len, &in);
	CHECK(k && it);
	CHECK(strlen(k) == kn && memcmp(k, "\033_Ga=T,f=100,q=2,", 17) == 0);
	CHECK(memcmp(k + kn - 2, "\033\\", 2) == 0);
	CHECK(memcmp(it, "\033]1337;File=inline=1;", 21) == 0 && it[in - 1] == '\a');
	/* the iTerm2 payload decodes back to the picture */
	const char *colon = strchr(it, ':');
	CHECK(colon);
	unsigned char *back = malloc(len + 3);
	size_t bn = 0;
	CHECK(back);
	CHECK(sodium_base642bin(back, len + 3, colon + 1, (size_t)(it + in - 1 - colon - 1), NULL,
				&bn, NULL, sodium_base64_VARIANT_ORIGINAL) == 0);
	CHECK(bn == len && memcmp(back, bin, len) == 0);
	free(back);
	free(k);
	free(it);
	free(bin);
}

static void fuzz_sixel(const char *s, size_t n)
{
	if (!picture_sixel_valid(s, n))
		return;
	for (size_t i = 2; i + 2 < n; i++)
		CHECK(s[i] != 0x1b &&
		      ((unsigned char)s[i] >= 0x20 || s[i] == '\n' || s[i] == '\r'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] % 3) {
	case 0: fuzz_probe(s, n); break;
	case 1: fuzz_decode(s, n); break;
	default: fuzz_sixel(s, n); break;
	}
	return 0;
}
