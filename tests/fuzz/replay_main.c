/*
 * replay_main.c - main() for a fuzz target built without libFuzzer: runs the files, or the
 * files in the directories, named on its command line through LLVMFuzzerTestOneInput, so that
 * ctest replays each target's corpus with any compiler.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *grown;
	size_t len = 0, cap = 0, got;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			cap = cap * 2 + 4096;
			grown = realloc(buf, cap);
			if (grown == NULL) {
				perror(path);
				fclose(f);
				free(buf);
				return -1;
			}
			buf = grown;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		perror(path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

/* Arguments are files or directories of files, as for a libFuzzer binary. */
int main(int argc, char **argv)
{
	struct dirent *de;
	struct stat st;
	char path[4096];
	int i, runs = 0;
	DIR *d;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) != 0)
				return 1;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (d == NULL) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (replay_file(path) != 0) {
				closedir(d);
				return 1;
			}
			runs++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", runs);
	/* No input at all means the corpus went missing: that should not pass quietly. */
	return runs > 0 ? 0 : 1;
}
