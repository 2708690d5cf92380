/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (its output endpoint), `leasekeeper logs --follow` and `leasekeeper web`. */
/*
 * follow.c: the parts of a follower's request and of its answer that each side reads from
 * the other, outside input both ways: the request's path and offset (the worker), and the
 * answer's offsets, state and outcome (the command). Strict: anything else is refused.
 */

#include <stdio.h>
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

/* Whether a host name or address read from a worker node may be connected to. */
static int
follow_host_ok(const char *host)
{
	static const char ok[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:-_";

	return strspn(host, ok) == strlen(host);
}

/*
 * Where to reach a worker's listener from its node's "http" ("host:port" or "[v6]:port"):
 * the host into host (size bytes), or hostname for a wildcard address, and the port.
 * 0, or -1 if it is not one.
 */
int
follow_parse_listen(const char *listen, const char *hostname, char *host, size_t size, int *port)
{
	const char *colon = strrchr(listen, ':');
	size_t n, i;
	long p = 0;

	if (colon == NULL || (n = (size_t)(colon - listen)) >= size || size < 2)
		return -1;
	memcpy(host, listen, n);
	host[n] = '\0';
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	if (colon[1] == '\0' || strlen(colon + 1) > 5)
		return -1;
	for (i = 1; colon[i] != '\0'; i++) {
		if (colon[i] < '0' || colon[i] > '9')
			return -1;
		p = p * 10 + (colon[i] - '0');
	}
	if (p < 1 || p > 65535 || !follow_host_ok(host))
		return -1;
	if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) {
		if (hostname == NULL || hostname[0] == '\0' || strlen(hostname) > 253 ||
		    strlen(hostname) >= size || !follow_host_ok(hostname))
			return -1;
		memcpy(host, hostname, strlen(hostname) + 1);
	}
	*port = (int)p;
	return 0;
}

/* The value of a hex digit, or -1. */
static int
follow_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The dashboard's "/api/runs/<job, percent-encoded>/<run id>/output", with "?from=<offset>"
 * or no query (from 0): the job's name (decoded, no NUL, no '/') into job (jsize bytes), the
 * run's id into run_id (size bytes), the offset. 0, or -1 for anything else.
 */
int
follow_parse_tail_uri(const char *uri, char *job, size_t jsize, char *run_id, size_t size,
                      uint64_t *from)
{
	const char *p, *end, *slash;
	char path[FOLLOW_MAX_RUN_ID + 32];
	size_t n = 0;
	int hi, lo;

	if (strncmp(uri, FOLLOW_TAIL_PREFIX, strlen(FOLLOW_TAIL_PREFIX)) != 0 || jsize == 0)
		return -1;
	p = uri + strlen(FOLLOW_TAIL_PREFIX);
	if ((end = strchr(p, '?')) == NULL)
		end = p + strlen(p);
	/* <job>/<run id>/output: the job ends at the slash before the run id. */
	for (slash = end; slash > p && slash[-1] != '/'; slash--)
		;
	if (slash == p || (size_t)(end - slash) != strlen("output") ||
	    strncmp(slash, "output", 6) != 0)
		return -1;
	for (slash -= 1; slash > p && slash[-1] != '/'; slash--)
		;
	if (slash == p || (size_t)(end - slash) + strlen(FOLLOW_PREFIX) >= sizeof path)
		return -1;
	/* "/<run id>/output?from=N" is what follow_parse_uri reads. */
	snprintf(path, sizeof path, "/runs/%.*s", (int)(end - slash), slash);
	if (*end != '\0' && strlen(path) + strlen(end) < sizeof path)
		strcat(path, end);
	else if (*end != '\0')
		return -1;
	if (follow_parse_uri(path, run_id, size, from) != 0)
		return -1;
	for (; p < slash - 1; p++) {
		if (n + 1 >= jsize)
			return -1;
		if (*p != '%') {
			job[n++] = *p;
			continue;
		}
		if (p + 2 >= slash - 1 || (hi = follow_hex(p[1])) < 0 ||
		    (lo = follow_hex(p[2])) < 0)
			return -1;
		job[n++] = (char)(hi << 4 | lo);
		p += 2;
	}
	job[n] = '\0';
	if (n == 0 || strlen(job) != n || strchr(job, '/') != NULL)
		return -1;
	return 0;
}
