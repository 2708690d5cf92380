/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* duration.c: durations as operators write them: 500ms, 10s, 5m, 2h, 1d, 1h30m. */

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "xmalloc.h"

static const struct {
	const char *unit;
	uint64_t ms;
} duration_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

#define DURATION_MAX_MS (100ULL * 365 * 86400000ULL)

/* Parse one or more number+unit pairs; on error *cause names the fix. */
int
duration_parse(const char *text, uint64_t *ms, char **cause)
{
	const char *p = text;
	uint64_t total = 0, n;
	size_t i, len;
	int digits;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0') {
		*cause = xstrdup("empty duration: write a number and a unit, e.g. \"10s\" "
		                 "(units: ms, s, m, h, d)");
		return -1;
	}
	while (*p != '\0' && !isspace((unsigned char)*p)) {
		n = 0;
		digits = 0;
		while (isdigit((unsigned char)*p)) {
			n = n * 10 + (uint64_t)(*p++ - '0');
			if (++digits > 12)
				goto too_big;
		}
		if (digits == 0) {
			xasprintf(cause,
			          "bad duration \"%s\": write a number and a unit, e.g. \"10s\" "
			          "(units: ms, s, m, h, d)",
			          text);
			return -1;
		}
		for (i = 0; i < sizeof duration_units / sizeof duration_units[0]; i++) {
			len = strlen(duration_units[i].unit);
			if (strncmp(p, duration_units[i].unit, len) == 0 &&
			    !isalpha((unsigned char)p[len]))
				break;
		}
		if (i == sizeof duration_units / sizeof duration_units[0]) {
			if (*p == '\0' || isspace((unsigned char)*p))
				xasprintf(cause,
				          "duration \"%s\" has no unit: add one, e.g. \"%llus\" "
				          "(units: ms, s, m, h, d)",
				          text, (unsigned long long)n);
			else
				xasprintf(
				    cause,
				    "duration \"%s\" has an unknown unit: use ms, s, m, h or d, "
				    "e.g. \"10s\"",
				    text);
			return -1;
		}
		total += n * duration_units[i].ms;
		if (total > DURATION_MAX_MS)
			goto too_big;
		p += strlen(duration_units[i].unit);
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '\0') {
		xasprintf(cause, "bad duration \"%s\": write it without spaces, e.g. \"1h30m\"",
		          text);
		return -1;
	}
	*ms = total;
	return 0;

too_big:
	xasprintf(cause, "duration \"%s\" is too long: the most is 100 years", text);
	return -1;
}

/* Format ms the way an operator would write it: 1h30m, 10s, 1500ms. */
void
duration_format(uint64_t ms, char *buf, size_t len)
{
	size_t i, off = 0;
	uint64_t n;

	if (ms == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	if (ms % 1000 != 0 && ms < 60000) {
		snprintf(buf, len, "%llums", (unsigned long long)ms);
		return;
	}
	buf[0] = '\0';
	for (i = sizeof duration_units / sizeof duration_units[0]; i-- > 0 && off < len;) {
		if (ms < duration_units[i].ms)
			continue;
		n = ms / duration_units[i].ms;
		ms -= n * duration_units[i].ms;
		off += (size_t)snprintf(buf + off, len - off, "%llu%s", (unsigned long long)n,
		                        duration_units[i].unit);
	}
}
