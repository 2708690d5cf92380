/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_cron.c: cron expressions (H too), aliases and @every (schedule_parse_job), a jitter
 * (schedule_set_jitter), then the fire times before and after a few instants
 * (schedule_next, schedule_prev) in a few zones.
 *
 * Input: the schedule on the first line; an optional second line names the zone (an IANA
 * name under /usr/share/zoneinfo), else the input's length picks one of a fixed few.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_cron_zones[] = {"UTC", "Europe/Berlin", "America/New_York",
                                              "Australia/Lord_Howe", "Asia/Kathmandu"};

/* Around the epoch, a DST change in Berlin and New York, the present, 2100, year 9999. */
static const int64_t fuzz_cron_instants[] = {0,          -1,         1711846800,  1730595600,
                                             1700000000, 4102444800, 253402300000};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct schedule *s = NULL;
	char *text, *nl, *cause = NULL;
	const char *zone;
	int64_t t, prev;
	size_t i, k;

	if (size > 4096)
		return 0;
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	zone = fuzz_cron_zones[size % (sizeof fuzz_cron_zones / sizeof fuzz_cron_zones[0])];
	if ((nl = strchr(text, '\n')) != NULL) {
		*nl = '\0';
		zone = nl + 1;
	}
	/* A job's schedule: H resolves from a name; the input's length picks a jitter. */
	if (schedule_parse_job(text, zone, "fuzz-job", &s, &cause) != 0) {
		free(cause);
		free(text);
		return 0;
	}
	(void)schedule_kind(s);
	(void)schedule_text(s);
	(void)schedule_resolved(s);
	if (schedule_set_jitter(s, (uint64_t)(size % 7) * 1000, &cause) != 0)
		free(cause);
	for (i = 0; i < sizeof fuzz_cron_instants / sizeof fuzz_cron_instants[0]; i++) {
		t = fuzz_cron_instants[i];
		for (k = 0; k < 3; k++) {
			prev = t;
			if ((t = schedule_next(s, t)) == -1)
				break;
			if (t <= prev) {
				fprintf(stderr, "\"%s\": next after %lld is %lld\n", text,
				        (long long)prev, (long long)t);
				abort();
			}
		}
		(void)schedule_prev(s, fuzz_cron_instants[i]);
	}
	schedule_free(s);
	free(text);
	return 0;
}
