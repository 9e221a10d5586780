/*
 * frame_ref_binary.h - the reference reading of a binary frame, for the frame
 * scanner's unit test and its fuzz target alike (each compares the scanner
 * with its own reference of the whole stream). Included after the file
 * defines struct rec, rec_event() and END (the end marker, ":ptybox>>>").
 */
#ifndef PTYBOX_FRAME_REF_BINARY_H
#define PTYBOX_FRAME_REF_BINARY_H

#define REF_END_LEN (sizeof(END) - 1)

/* A binary frame's reference: the start marker at i, '#' after it. Records its event (or its
 * noise) and returns where scanning resumes. */
static size_t ref_binary(struct rec *r, size_t i, size_t sl, size_t cap, const char *in, size_t n)
{
	size_t p = i + sl, j = p + 1, len = 0, digits = 0, d, k, keep;

	if (j < n && in[j] == 'z')
		j++;
	while (j < n && in[j] >= '0' && in[j] <= '9' && !(digits == 1 && len == 0) &&
	       len <= (FRAME_BINARY_MAX - (size_t)(in[j] - '0')) / 10) {
		len = len * 10 + (size_t)(in[j] - '0');
		digits++;
		j++;
	}
	if (j >= n || in[j] != ':' || digits == 0) {
		rec_event(r, FRAME_EVENT_NOISE, in + i, j - i);
		return j;
	}
	d = j + 1;
	if (n - d < len) {
		keep = n - d < cap ? n - d : cap;
		rec_event(r, FRAME_EVENT_NOISE, in + i, d - i + keep);
		return n;
	}
	for (k = 0; k < REF_END_LEN && d + len + k < n && in[d + len + k] == END[k]; k++)
		;
	if (k == REF_END_LEN) {
		if (len <= cap)
			rec_event(r, in[p + 1] == 'z' ? FRAME_EVENT_BINARY_Z : FRAME_EVENT_BINARY,
				  in + d, len);
		else
			rec_event(r, FRAME_EVENT_OVERSIZE, NULL, len);
		return d + len + REF_END_LEN;
	}
	keep = len < cap ? len : cap;
	rec_event(r, FRAME_EVENT_NOISE, in + i, d - i + keep);
	if (k > 0)
		rec_event(r, FRAME_EVENT_NOISE, END, k);
	return d + len + k;
}

#endif
