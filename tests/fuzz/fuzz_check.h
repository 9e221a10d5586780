/*
 * fuzz_check.h - the fuzz targets' assertion: a failed check aborts, which
 * libFuzzer (and the corpus replay under ctest) reports as a crash.
 */
#ifndef PTYBOX_FUZZ_CHECK_H
#define PTYBOX_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
