/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_follow.c: what the worker's output endpoint and `logs --follow` read from each other
 * (follow.c). The first byte picks the parser: the request's path (the worker), or the
 * answer's offset header (the command); the rest is the text, up to a NUL.
 *
 * A path that parses must name a valid run id, and rebuilt from its parts it parses back
 * to the same; an offset that parses is digits only and at most FOLLOW_MAX_OFFSET.
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "follow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A path that parses is rebuilt and parsed again: the same run id and offset. */
static void
fuzz_follow_uri(const char *text)
{
	char id[FOLLOW_MAX_RUN_ID + 1], again[FOLLOW_MAX_RUN_ID + 1], uri[FOLLOW_MAX_RUN_ID + 64];
	uint64_t from, from2;

	if (follow_parse_uri(text, id, sizeof id, &from) != 0)
		return;
	if (!follow_valid_run_id(id) || from > FOLLOW_MAX_OFFSET)
		abort();
	snprintf(uri, sizeof uri, FOLLOW_PREFIX "%s" FOLLOW_SUFFIX "?from=%" PRIu64, id, from);
	if (follow_parse_uri(uri, again, sizeof again, &from2) != 0 || strcmp(id, again) != 0 ||
	    from != from2) {
		fprintf(stderr, "\"%s\" parses as %s from %" PRIu64 ", rebuilt \"%s\" does not\n",
		        text, id, from, uri);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	uint64_t v;

	if (size == 0 || size > 4096)
		return 0;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] & 1)
		fuzz_follow_uri(text);
	else if (follow_parse_offset(text, &v) == 0 &&
	         (v > FOLLOW_MAX_OFFSET || strspn(text, "0123456789") != strlen(text)))
		abort(); /* digits only (leading zeros allowed), within bounds */
	follow_valid_word(text, 24);
	free(text);
	return 0;
}
