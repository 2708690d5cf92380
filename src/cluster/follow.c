/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (its output endpoint) and `leasekeeper logs --follow`. */
/*
 * follow.c: the parts of a follower's request and of its answer that each side reads from
 * the other, outside input both ways: the request's path and offset (the worker), and the
 * answer's offsets, state and outcome (the command). Strict: anything else is refused.
 */

#include <string.h>

#include "follow.h"

/* Whether id may name a run: 1 to FOLLOW_MAX_RUN_ID of [A-Za-z0-9._-], not "." or "..". */
int
follow_valid_run_id(const char *id)
{
	static const char ok[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t n = strlen(id);

	return n > 0 && n <= FOLLOW_MAX_RUN_ID && strspn(id, ok) == n && strcmp(id, ".") != 0 &&
	       strcmp(id, "..") != 0;
}

/* Whether word is 1 to max of [a-z_] (a state or an outcome, as the worker names them). */
int
follow_valid_word(const char *word, size_t max)
{
	size_t n = strlen(word);

	return n > 0 && n <= max && strspn(word, "abcdefghijklmnopqrstuvwxyz_") == n;
}

/* A decimal offset, digits only, at most FOLLOW_MAX_OFFSET: 0, or -1. */
int
follow_parse_offset(const char *text, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (text[0] == '\0' || strlen(text) > 16)
		return -1;
	for (i = 0; text[i] != '\0'; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(text[i] - '0');
	}
	if (v > FOLLOW_MAX_OFFSET)
		return -1;
	*out = v;
	return 0;
}

/*
 * "/runs/<run id>/output", with "?from=<offset>" or no query (from 0): the run's id into
 * run_id (size bytes) and the offset. 0, or -1 for anything else (no escapes, no other
 * parameter, no fragment: the command never sends them).
 */
int
follow_parse_uri(const char *uri, char *run_id, size_t size, uint64_t *from)
{
	const char *id, *slash, *query;
	size_t n;

	if (strncmp(uri, FOLLOW_PREFIX, strlen(FOLLOW_PREFIX)) != 0)
		return -1;
	id = uri + strlen(FOLLOW_PREFIX);
	if ((slash = strchr(id, '/')) == NULL)
		return -1;
	n = (size_t)(slash - id);
	if (n == 0 || n > FOLLOW_MAX_RUN_ID || n >= size)
		return -1;
	memcpy(run_id, id, n);
	run_id[n] = '\0';
	if (!follow_valid_run_id(run_id))
		return -1;
	if (strncmp(slash, FOLLOW_SUFFIX, strlen(FOLLOW_SUFFIX)) != 0)
		return -1;
	query = slash + strlen(FOLLOW_SUFFIX);
	*from = 0;
	if (*query == '\0')
		return 0;
	if (strncmp(query, "?from=", 6) != 0)
		return -1;
	return follow_parse_offset(query + 6, from);
}
