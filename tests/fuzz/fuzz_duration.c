/*
 * fuzz_duration.c: durations and sizes as operators write them (duration_parse,
 * duration_format, config_parse_size). The first byte picks the parser; the rest is the text.
 * A duration that parses must survive a round trip through duration_format.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *cause = NULL, buf[64];
	uint64_t ms, again, bytes;

	if (size == 0 || size > 4096)
		return 0;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] & 1) {
		if (config_parse_size(text, &bytes, &cause) != 0)
			free(cause);
	} else if (duration_parse(text, &ms, &cause) == 0) {
		duration_format(ms, buf, sizeof buf);
		if (duration_parse(buf, &again, &cause) != 0 || again != ms) {
			fprintf(stderr,
			        "\"%s\" is %llu ms, formatted \"%s\", which reads back as %s\n",
			        text, (unsigned long long)ms, buf,
			        cause != NULL ? cause : "another value");
			abort();
		}
	} else
		free(cause);
	free(text);
	return 0;
}
