/* test_zone.c: time zones parsed from memory (tz_parse), as the fuzzers drive it. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schedule.h"
#include "tz.h"

/* A schedule of "0 2 * * *" in UTC. */
static struct schedule *
daily_two(void)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	assert_int_equal(schedule_parse("0 2 * * *", "UTC", &s, &cause), 0);
	return s;
}

/* Parse a zone from buf[0..len) and make it s's. */
static void
set_zone(struct schedule *s, const void *buf, size_t len)
{
	struct tz *z = NULL;
	char *cause = NULL;

	assert_int_equal(tz_parse(buf, len, &z, &cause), 0);
	assert_non_null(z);
	schedule_set_zone(s, z);
}

/* A POSIX TZ string sets the zone: 02:00 in CET is 01:00 UTC in January. */
static void
test_posix_string(void **state)
{
	struct schedule *s = daily_two();
	const char *tz = "CET-1CEST,M3.5.0,M10.5.0/3";

	(void)state;
	set_zone(s, tz, strlen(tz));
	/* 2024-01-15T00:00:00Z -> 2024-01-15T01:00:00Z */
	assert_int_equal(schedule_next(s, 1705276800), 1705280400);
	/* July, CEST: 02:00 local is 00:00 UTC. 2024-07-15T00:00:00Z -> 2024-07-16T00:00:00Z */
	assert_int_equal(schedule_next(s, 1721001600), 1721001600 + 86400);
	schedule_free(s);
}

/* A TZif file read into memory gives the same times as the zone loaded by name. */
static void
test_tzif_buffer(void **state)
{
	struct schedule *s = daily_two(), *named = NULL;
	char *cause = NULL, buf[65536];
	size_t n;
	FILE *f;

	(void)state;
	f = fopen("/usr/share/zoneinfo/America/New_York", "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	set_zone(s, buf, n);
	assert_int_equal(schedule_parse("0 2 * * *", "America/New_York", &named, &cause), 0);
	assert_int_equal(schedule_next(s, 1710000000), schedule_next(named, 1710000000));
	assert_int_equal(schedule_next(s, 1730500000), schedule_next(named, 1730500000));
	schedule_free(named);
	schedule_free(s);
}

/* Data that is neither is refused with a cause and no zone, and the schedule keeps its own. */
static void
test_garbage_keeps_the_zone(void **state)
{
	static const char *const bad[] = {"",  "TZif",   "CET-1CEST,M3.5.0",
	                                  "C", "UTC0\n", "CET-1CEST,M13.5.0,M10.5.0"};
	struct schedule *s = daily_two();
	struct tz *z = NULL;
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		if (tz_parse(bad[i], strlen(bad[i]), &z, &cause) != -1)
			fail_msg("\"%s\" was accepted", bad[i]);
		assert_null(z);
		assert_non_null(cause);
		free(cause);
	}
	cause = NULL;
	assert_int_equal(tz_parse("UTC0\0x", 6, &z, &cause), -1);
	assert_null(z);
	free(cause);
	/* Still UTC: 2024-01-15T00:00:00Z -> 02:00Z */
	assert_int_equal(schedule_next(s, 1705276800), 1705276800 + 7200);
	schedule_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_posix_string),
	    cmocka_unit_test(test_tzif_buffer),
	    cmocka_unit_test(test_garbage_keeps_the_zone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
