/*
 * fuzz_record.c - libFuzzer target for what a recording makes of the session's bytes
 * (src/transcript.c, then the pure line of src/record.c).
 *
 * The input is the session's output, cut in two where its first byte says: through a
 * transcript (an execution's code, the two pieces of output, a result), every chunk the sink
 * gets becomes an event line that must be one line of valid UTF-8 that cJSON reads back as
 * [t, "o", text], text being the chunk with each invalid byte as U+FFFD (so the text is never
 * longer than three times the chunk). The code as echoed holds no control character but the
 * newlines and tabs of the input and the prompt's own ESC. Any disagreement aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_check.h"
#include "protocol.h"
#include "record.h"
#include "transcript.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_sink(void *data, const char *bytes, size_t len, bool sandbox)
{
	char *line;
	size_t n;
	(void)data;
	(void)sandbox;
	CHECK(record_event_line(1.0, 'o', bytes, len, &line, &n) == 0);
	CHECK(n > 0 && line[n - 1] == '\n' && strlen(line) == n);
	CHECK(memchr(line, '\n', n - 1) == NULL);
	CHECK(protocol_utf8_valid(line, n));
	cJSON *a = cJSON_Parse(line);
	CHECK(a && cJSON_GetArraySize(a) == 3);
	const char *text = cJSON_GetArrayItem(a, 2)->valuestring;
	CHECK(text && strlen(text) <= 3 * len);
	CHECK(protocol_utf8_valid(text, strlen(text)));
	cJSON_Delete(a);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct transcript t;
	char *code = malloc(size + 1), *echo = malloc(TRANSCRIPT_INPUT_MAX(size));
	CHECK(code && echo);
	memcpy(code, data, size);
	code[size] = '\0';
	size_t n = transcript_input_format(code, size, size % 2, echo);
	CHECK(n <= TRANSCRIPT_INPUT_MAX(size));
	for (size_t i = 4; i < n; i++) /* (after the prompt's "\x1b[0m") */
		CHECK((unsigned char)echo[i] >= 0x20 || echo[i] == '\n' || echo[i] == '\t');
	transcript_init(&t, true, fuzz_sink, NULL);
	CHECK(transcript_input(&t, code, size) == 0);
	size_t cut = size ? data[0] % (size + 1) : 0;
	transcript_output(&t, code, cut);
	transcript_output(&t, code + cut, size - cut);
	transcript_result(&t, &(struct transcript_result){
				      .value = code, .error_name = "E", .traceback = code + cut});
	free(echo);
	free(code);
	return 0;
}
