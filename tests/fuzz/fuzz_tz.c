/*
 * fuzz_tz.c: time zones from TZif files and POSIX TZ strings (tz_parse), then the
 * fire times of a few schedules in the zone around a few instants (schedule_next,
 * schedule_prev), which walk the zone's transitions and its footer rule.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedule.h"
#include "tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Daily in a DST gap and overlap, every quarter hour (30- and 45-minute offsets), @every. */
static const char *const fuzz_tz_specs[] = {"30 2 * * *", "0 1 * * *", "*/15 * * * *", "@every 7h"};

/* 1901, before the epoch, the epoch, 2001, 2024 around DST changes, 2100, year 9999. */
static const int64_t fuzz_tz_instants[] = {
    -2147483648LL, -1, 0, 1000000000, 1711846800, 1730595600, 4102444800LL, 253402300000LL};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct schedule *s;
	struct tz *z;
	char *cause = NULL;
	int64_t t, prev;
	size_t i, j, k;

	if (size > (1 << 20))
		return 0;
	setenv("TZ", "UTC0", 1); /* schedules start in a zone parsed from a string, not a file */
	for (i = 0; i < sizeof fuzz_tz_specs / sizeof fuzz_tz_specs[0]; i++) {
		if (schedule_parse(fuzz_tz_specs[i], NULL, &s, &cause) != 0)
			abort();
		if (tz_parse(data, size, &z, &cause) != 0) {
			free(cause);
			schedule_free(s);
			return 0;
		}
		schedule_set_zone(s, z);
		for (j = 0; j < sizeof fuzz_tz_instants / sizeof fuzz_tz_instants[0]; j++) {
			t = fuzz_tz_instants[j];
			for (k = 0; k < 3; k++) {
				prev = t;
				if ((t = schedule_next(s, t)) == -1)
					break;
				if (t <= prev) {
					fprintf(stderr, "\"%s\": next after %lld is %lld\n",
					        fuzz_tz_specs[i], (long long)prev, (long long)t);
					abort();
				}
			}
			(void)schedule_prev(s, fuzz_tz_instants[j]);
		}
		schedule_free(s);
	}
	return 0;
}
