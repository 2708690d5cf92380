/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_follow.c: what the worker's output endpoint and `logs --follow` read from each other
 * (follow.c), and the dashboard's tail (webtail.c). The first byte picks the parser: the
 * request's path (the worker), the answer's offset header (the command), the dashboard's
 * path, or a worker node's listen address; the rest is the text, up to a NUL.
 *
 * A path that parses must name a valid run id, and rebuilt from its parts it parses back
 * to the same; an offset that parses is digits only and at most FOLLOW_MAX_OFFSET. The
 * dashboard's path names a job without '/' or NUL and a valid run id, and its run part
 * parses as the worker's path does; an address that parses is a port 1 to 65535 and a host
 * of the allowed characters, within its buffer.
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

/* The dashboard's path: a job, a valid run id, an offset in bounds. */
static void
fuzz_follow_tail(const char *text)
{
	char job[256], id[FOLLOW_MAX_RUN_ID + 1];
	uint64_t from;

	if (follow_parse_tail_uri(text, job, sizeof job, id, sizeof id, &from) != 0)
		return;
	if (job[0] == '\0' || strchr(job, '/') != NULL || strlen(job) >= sizeof job ||
	    !follow_valid_run_id(id) || from > FOLLOW_MAX_OFFSET)
		abort();
}

/* A worker node's "http", with a host name for a wildcard address. */
static void
fuzz_follow_listen(const char *text)
{
	static const char ok[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:-_";
	char host[64];
	int port;

	if (follow_parse_listen(text, "worker-1.example", host, sizeof host, &port) != 0)
		return;
	if (port < 1 || port > 65535 || strlen(host) >= sizeof host ||
	    strspn(host, ok) != strlen(host))
		abort();
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
	if (data[0] & 2) {
		if (data[0] & 1)
			fuzz_follow_tail(text);
		else
			fuzz_follow_listen(text);
	} else if (data[0] & 1)
		fuzz_follow_uri(text);
	else if (follow_parse_offset(text, &v) == 0 &&
	         (v > FOLLOW_MAX_OFFSET || strspn(text, "0123456789") != strlen(text)))
		abort(); /* digits only (leading zeros allowed), within bounds */
	follow_valid_word(text, 24);
	free(text);
	return 0;
}
