/* SPDX-License-Identifier: Apache-2.0 */
/* test_schedule.c: cron, alias and @every parsing, next/prev search and the DST policy. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "schedule.h"

/* Unix seconds of a UTC date and time. */
static int64_t
utc(int y, int mo, int d, int h, int mi)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return (int64_t)timegm(&tm);
}

/* Parse spec in tz or fail the test with the cause. */
static struct schedule *
parse(const char *spec, const char *tz)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	if (schedule_parse(spec, tz, &s, &cause) != 0)
		fail_msg("\"%s\" in %s: %s", spec, tz != NULL ? tz : "(local)", cause);
	return s;
}

/* Assert the fire times after `from`: n values, then -1 if want ends with -1. */
static void
expect_next(const char *spec, const char *tz, int64_t from, const int64_t *want, size_t n)
{
	struct schedule *s = parse(spec, tz);
	int64_t t = from;
	size_t i;

	for (i = 0; i < n; i++) {
		t = schedule_next(s, t);
		if (t != want[i])
			fail_msg("\"%s\" in %s: fire %zu after %lld is %lld, want %lld", spec, tz,
			         i, (long long)from, (long long)t, (long long)want[i]);
		if (t == -1)
			break;
	}
	schedule_free(s);
}

#define EXPECT_NEXT(spec, tz, from, ...)                                                           \
	do {                                                                                       \
		const int64_t want_[] = {__VA_ARGS__};                                             \
		expect_next(spec, tz, from, want_, sizeof want_ / sizeof want_[0]);                \
	} while (0)

/* schedule_prev(spec, at) in tz. */
static int64_t
prev_of(const char *spec, const char *tz, int64_t at)
{
	struct schedule *s = parse(spec, tz);
	int64_t t = schedule_prev(s, at);

	schedule_free(s);
	return t;
}

/* A job's schedule with H resolved from name, or fail the test. */
static struct schedule *
parse_job(const char *spec, const char *name)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	if (schedule_parse_job(spec, "UTC", name, &s, &cause) != 0)
		fail_msg("\"%s\" for %s: %s", spec, name, cause);
	return s;
}

/* H: values from the documented hash (FNV-1a, SplitMix64), computed independently in Python. */
static void
test_hash(void **state)
{
	static const struct {
		const char *spec, *name, *resolved;
	} cases[] = {
	    /* backup: mix(k) for k = 0..4 mod 60, 24, 28, 12, 7: 48 5 8(+1) 3(+1) 0 */
	    {"H H H H H", "backup", "48 5 9 4 0"},
	    {"H/15 H/6 * * *", "backup", "3-59/15 5-23/6 * * *"},
	    {"H(0-29) H(9-17) * * H(MON-FRI)", "backup", "18 17 * * 2"},
	    {"H H(0-5)/2 * * *", "a", "43 0-5/2 * * *"},
	    {"H,30 * * * *", "a", "43,30 * * * *"},
	    {"0 3 * * *", "a", "0 3 * * *"},
	};
	struct schedule *s;
	char *cause = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		s = parse_job(cases[i].spec, cases[i].name);
		assert_string_equal(schedule_resolved(s), cases[i].resolved);
		assert_string_equal(schedule_text(s), cases[i].spec);
		schedule_free(s);
	}
	/* The next time follows the resolved fields: backup at 05:48 on the 9th of April. */
	s = parse_job("H H H H *", "backup");
	assert_int_equal(schedule_next(s, utc(2025, 1, 1, 0, 0)), utc(2025, 4, 9, 5, 48));
	schedule_free(s);
	/* H without a name (a zone check, a tool) and malformed H are refused. */
	assert_int_equal(schedule_parse("H * * * *", "UTC", &s, &cause), -1);
	assert_non_null(strstr(cause, "H is derived from a job's name"));
	free(cause);
	static const char *const bad[] = {"H(5) * * * *", "H(9-3) * * * *",  "H/0 * * * *",
	                                  "H5 * * * *",   "H(0-99) * * * *", "Hx * * * *",
	                                  "H/60 * * * *"};
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (schedule_parse_job(bad[i], "UTC", "a", &s, &cause) == 0)
			fail_msg("\"%s\" was accepted", bad[i]);
		free(cause);
	}
}

/* Jitter: a per-job offset in [0, jitter), the same for the same name, within its bounds. */
static void
test_jitter(void **state)
{
	struct schedule *s;
	char *cause = NULL;

	(void)state;
	s = parse_job("@every 10m", "backup");
	assert_int_equal(schedule_set_jitter(s, 600000, &cause), 0);
	assert_int_equal(schedule_offset(s), 567); /* mix(5) mod 600 */
	assert_int_equal(schedule_next(s, 0), 567);
	assert_int_equal(schedule_next(s, 567), 1167);
	assert_int_equal(schedule_prev(s, 1166), 567);
	assert_int_equal(schedule_prev(s, 1167), 1167);
	assert_int_equal(schedule_set_jitter(s, 0, &cause), 0);
	assert_int_equal(schedule_next(s, 0), 600);
	assert_int_equal(schedule_set_jitter(s, 601000, &cause), -1);
	assert_non_null(strstr(cause, "longer than the interval"));
	free(cause);
	assert_int_equal(schedule_set_jitter(s, 1500, &cause), -1);
	assert_non_null(strstr(cause, "whole seconds"));
	free(cause);
	schedule_free(s);

	s = parse_job("0 3 * * *", "a");
	assert_int_equal(schedule_set_jitter(s, 600000, &cause), 0);
	assert_int_equal(schedule_offset(s), 364);
	assert_int_equal(schedule_next(s, utc(2025, 1, 1, 0, 0)), utc(2025, 1, 1, 3, 6) + 4);
	assert_int_equal(schedule_prev(s, utc(2025, 1, 1, 3, 6)), utc(2024, 12, 31, 3, 6) + 4);
	assert_int_equal(schedule_set_jitter(s, 2 * 86400000ULL, &cause), -1);
	free(cause);
	schedule_free(s);

	s = parse_job("@continuous", "a");
	assert_int_equal(schedule_set_jitter(s, 1000, &cause), -1);
	free(cause);
	schedule_free(s);
}

static void
test_parse_forms(void **state)
{
	static const struct {
		const char *spec, *text;
		enum schedule_kind kind;
	} forms[] = {
	    {"@continuous", "@continuous", SCHEDULE_CONTINUOUS},
	    {"  @continuous ", "@continuous", SCHEDULE_CONTINUOUS},
	    {"*/5 * * * *", "*/5 * * * *", SCHEDULE_CRON},
	    {" 0\t9  * *   MON-FRI ", "0 9 * * MON-FRI", SCHEDULE_CRON},
	    {"0,15,30,45 8-18/2 1,15 jan,Jul 1-5", "0,15,30,45 8-18/2 1,15 jan,Jul 1-5",
	     SCHEDULE_CRON},
	    {"5/15 * * * *", "5/15 * * * *", SCHEDULE_CRON},
	    {"0 0 * * 7", "0 0 * * 7", SCHEDULE_CRON},
	    {"0 0 * * fri-sun", "0 0 * * fri-sun", SCHEDULE_CRON},
	    {"@yearly", "@yearly", SCHEDULE_CRON},
	    {"@annually", "@annually", SCHEDULE_CRON},
	    {"@monthly", "@monthly", SCHEDULE_CRON},
	    {"@weekly", "@weekly", SCHEDULE_CRON},
	    {"@daily", "@daily", SCHEDULE_CRON},
	    {"@MIDNIGHT", "@midnight", SCHEDULE_CRON},
	    {"@hourly", "@hourly", SCHEDULE_CRON},
	    {"@every 90s", "@every 1m30s", SCHEDULE_EVERY},
	    {"@every   1h30m", "@every 1h30m", SCHEDULE_EVERY},
	    {"@every 1s", "@every 1s", SCHEDULE_EVERY},
	};
	struct schedule *s;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		s = parse(forms[i].spec, "UTC");
		assert_int_equal(schedule_kind(s), forms[i].kind);
		assert_string_equal(schedule_text(s), forms[i].text);
		schedule_free(s);
	}
	s = parse("@continuous", NULL);
	assert_int_equal(schedule_next(s, 0), -1);
	assert_int_equal(schedule_prev(s, 1000000), -1);
	schedule_free(s);
}

static void
test_parse_errors(void **state)
{
	static const struct {
		const char *spec, *tz, *cause;
	} bad[] = {
	    {"", NULL,
	     "empty schedule: write a cron expression such as \"*/5 * * * *\", an alias such as "
	     "@daily, \"@every 10m\" or @continuous"},
	    {"0 0 * * * *", NULL,
	     "expected 5 fields (minute hour day-of-month month day-of-week), got 6: leasekeeper "
	     "does not take a seconds field"},
	    {"0 0 * * * * 2025", NULL,
	     "expected 5 fields (minute hour day-of-month month day-of-week), got 7: write only "
	     "the "
	     "5 time fields (no seconds, year or command)"},
	    {"0 0 *", NULL,
	     "expected 5 fields (minute hour day-of-month month day-of-week), got 3: write all "
	     "five, e.g. \"0 3 * * *\" for 03:00 daily"},
	    {"61 * * * *", NULL, "minute field \"61\": values run 0-59"},
	    {"0 24 * * *", NULL, "hour field \"24\": values run 0-23"},
	    {"0 0 0 * *", NULL, "day-of-month field \"0\": values run 1-31"},
	    {"0 0 32 * *", NULL, "day-of-month field \"32\": values run 1-31"},
	    {"0 0 * 13 *", NULL, "month field \"13\": values run 1-12 or JAN-DEC"},
	    {"0 0 * 0 *", NULL, "month field \"0\": values run 1-12 or JAN-DEC"},
	    {"0 0 * * 8", NULL,
	     "day-of-week field \"8\": values run 0-7 (0 and 7 are Sunday) or SUN-SAT"},
	    {"1,99999999999999 * * * *", NULL,
	     "minute field \"1,99999999999999\", item \"99999999999999\": values run 0-59"},
	    {"0 0 * JANUARY *", NULL,
	     "month field \"JANUARY\": \"JANUARY\" is not a name this field knows: values run "
	     "1-12 or JAN-DEC"},
	    {"0 0 * * MON-FRY", NULL,
	     "day-of-week field \"MON-FRY\": \"FRY\" is not a name this field knows: values run "
	     "0-7 (0 and 7 are Sunday) or SUN-SAT"},
	    {"0 0 * JAN MAR", NULL,
	     "day-of-week field \"MAR\": \"MAR\" is not a name this field knows: values run 0-7 "
	     "(0 and 7 are Sunday) or SUN-SAT"},
	    {"MON * * * *", NULL,
	     "minute field \"MON\": names are allowed only in the month and day-of-week fields: "
	     "values run 0-59"},
	    {"5-2 * * * *", NULL,
	     "minute field \"5-2\": the range runs backwards: write the smaller value first, and "
	     "a range that wraps as a list, e.g. \"22-23,0-2\""},
	    {"*/0 * * * *", NULL, "minute field \"*/0\": the step must be 1-59"},
	    {"*/60 * * * *", NULL, "minute field \"*/60\": the step must be 1-59"},
	    {"0 */24 * * *", NULL, "hour field \"*/24\": the step must be 1-23"},
	    {"*/x * * * *", NULL, "minute field \"*/x\": the step must be a number, e.g. \"*/5\""},
	    {"*/ * * * *", NULL, "minute field \"*/\": the step is missing: write e.g. \"*/5\""},
	    {"*/5/2 * * * *", NULL,
	     "minute field \"*/5/2\": the step must be a number, e.g. \"*/5\""},
	    {"1-2-3 * * * *", NULL,
	     "minute field \"1-2-3\": a range has two ends: write e.g. \"1-5\""},
	    {"*-5 * * * *", NULL,
	     "minute field \"*-5\": \"*\" stands alone: write \"*\", \"*/N\" or a range such as "
	     "\"0-59\""},
	    {"1,,2 * * * *", NULL,
	     "minute field \"1,,2\": empty list item: separate values with single commas, e.g. "
	     "\"1,15\""},
	    {"1, * * * *", NULL,
	     "minute field \"1,\": empty list item: separate values with single commas, e.g. "
	     "\"1,15\""},
	    {"1x * * * *", NULL,
	     "minute field \"1x\": unexpected \"x\": write numbers, ranges (1-5), lists (1,5) and "
	     "steps (*/5)"},
	    {"-5 * * * *", NULL,
	     "minute field \"-5\": negative values are not allowed: values run 0-59"},
	    {"0 0 ? * MON", NULL, "day-of-month field \"?\": \"?\" is not supported: write \"*\""},
	    {"0 0 L * *", NULL,
	     "day-of-month field \"L\": \"L\" and \"W\" are not supported: run the job on 28-31 "
	     "and test the date in the command, e.g. [ \"$(date -d tomorrow +%d)\" = 01 ]"},
	    {"0 0 15W * *", NULL,
	     "day-of-month field \"15W\": \"L\" and \"W\" are not supported: run the job on 28-31 "
	     "and test the date in the command, e.g. [ \"$(date -d tomorrow +%d)\" = 01 ]"},
	    {"0 0 * * 5#2", NULL,
	     "day-of-week field \"5#2\": \"#\" (nth weekday) is not supported: run the job on the "
	     "days it can fall on (e.g. day-of-month 8-14 for the second) and test the weekday in "
	     "the command, e.g. [ \"$(date +%u)\" = 5 ]"},
	    /* an item that starts with '/' once read before its start (a length that wrapped) */
	    {"/5 * * * *", NULL,
	     "minute field \"/5\": a step needs something to step through before the \"/\": "
	     "write e.g. \"*/5\" or \"0-30/5\""},
	    {"0 0 * * /7", NULL,
	     "day-of-week field \"/7\": a step needs something to step through before the "
	     "\"/\": write e.g. \"*/5\" or \"0-30/5\""},
	    {"*/5 /2 * * *", NULL,
	     "hour field \"/2\": a step needs something to step through before the \"/\": "
	     "write e.g. \"*/5\" or \"0-30/5\""},
	    {"0 0 1,/3 * *", NULL,
	     "day-of-month field \"1,/3\", item \"/3\": a step needs something to step "
	     "through before the \"/\": write e.g. \"*/5\" or \"0-30/5\""},
	    {"/ * * * *", NULL, "minute field \"/\": the step is missing: write e.g. \"*/5\""},
	    {"@dayly", NULL,
	     "unknown schedule \"@dayly\": use @yearly, @annually, @monthly, @weekly, @daily, "
	     "@midnight, @hourly, \"@every DURATION\" or @continuous"},
	    {"@daily 5", NULL,
	     "\"@daily 5\": @daily takes nothing after it: write \"@daily\" alone, or a cron "
	     "expression"},
	    {"@continuous 3", NULL, "\"@continuous 3\": @continuous takes nothing after it"},
	    {"@every", NULL, "@every needs an interval: write e.g. \"@every 10m\""},
	    {"@every 500ms", NULL, "@every 500ms: the interval must be at least 1s"},
	    {"@every 1500ms", NULL,
	     "@every 1500ms: the interval must be whole seconds, e.g. \"@every 1s\""},
	    {"@every 10", NULL,
	     "@every: duration \"10\" has no unit: add one, e.g. \"10s\" (units: ms, s, m, h, d)"},
	    {"@every 10x", NULL,
	     "@every: duration \"10x\" has an unknown unit: use ms, s, m, h or d, e.g. \"10s\""},
	    {"0 0 * * *", "Europe/Pariss",
	     "unknown time zone \"Europe/Pariss\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	    {"@every 1m", "../../etc/passwd",
	     "unknown time zone \"../../etc/passwd\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	    {"@continuous", "/etc/localtime",
	     "unknown time zone \"/etc/localtime\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	    {"0 0 * * *", "zone.tab",
	     "unknown time zone \"zone.tab\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	    {"0 0 * * *", "America",
	     "unknown time zone \"America\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	    {"0 0 * * *", "",
	     "unknown time zone \"\": use an IANA name such as Europe/Paris (see "
	     "/usr/share/zoneinfo)"},
	};
	struct schedule *s;
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s = NULL;
		cause = NULL;
		if (schedule_parse(bad[i].spec, bad[i].tz, &s, &cause) == 0)
			fail_msg("\"%s\" parsed", bad[i].spec);
		assert_null(s);
		assert_non_null(cause);
		if (strcmp(cause, bad[i].cause) != 0)
			fail_msg("\"%s\":\n got  %s\n want %s", bad[i].spec, cause, bad[i].cause);
		free(cause);
	}
}

static void
test_next_ordinary(void **state)
{
	int64_t t = utc(2024, 5, 14, 10, 2); /* a Tuesday */

	(void)state;
	EXPECT_NEXT("*/5 * * * *", "UTC", t, utc(2024, 5, 14, 10, 5), utc(2024, 5, 14, 10, 10));
	/* Strictly after: a fire time itself is not its own next. */
	EXPECT_NEXT("*/5 * * * *", "UTC", utc(2024, 5, 14, 10, 5), utc(2024, 5, 14, 10, 10));
	EXPECT_NEXT("* * * * *", "UTC", t + 59, utc(2024, 5, 14, 10, 3));
	EXPECT_NEXT("5/15 * * * *", "UTC", t, utc(2024, 5, 14, 10, 5), utc(2024, 5, 14, 10, 20),
	            utc(2024, 5, 14, 10, 35), utc(2024, 5, 14, 10, 50), utc(2024, 5, 14, 11, 5));
	EXPECT_NEXT("10-20/4 * * * *", "UTC", t, utc(2024, 5, 14, 10, 10), utc(2024, 5, 14, 10, 14),
	            utc(2024, 5, 14, 10, 18), utc(2024, 5, 14, 11, 10));
	EXPECT_NEXT("0 9 * * MON-FRI", "UTC", utc(2024, 5, 17, 12, 0), utc(2024, 5, 20, 9, 0));
	EXPECT_NEXT("0 9 * * sat,7", "UTC", t, utc(2024, 5, 18, 9, 0), utc(2024, 5, 19, 9, 0),
	            utc(2024, 5, 25, 9, 0));
	EXPECT_NEXT("0 9 * * 0", "UTC", t, utc(2024, 5, 19, 9, 0));
	EXPECT_NEXT("0 9 * * FRI-SUN", "UTC", t, utc(2024, 5, 17, 9, 0), utc(2024, 5, 18, 9, 0),
	            utc(2024, 5, 19, 9, 0), utc(2024, 5, 24, 9, 0));
	EXPECT_NEXT("30 4 1 jul,Jan *", "UTC", t, utc(2024, 7, 1, 4, 30), utc(2025, 1, 1, 4, 30));
	EXPECT_NEXT("0 0 1 */4 *", "UTC", t, utc(2024, 9, 1, 0, 0), utc(2025, 1, 1, 0, 0));
	EXPECT_NEXT("@hourly", "UTC", t, utc(2024, 5, 14, 11, 0));
	EXPECT_NEXT("@daily", "UTC", t, utc(2024, 5, 15, 0, 0));
	EXPECT_NEXT("@midnight", "UTC", t, utc(2024, 5, 15, 0, 0));
	EXPECT_NEXT("@weekly", "UTC", t, utc(2024, 5, 19, 0, 0), utc(2024, 5, 26, 0, 0));
	EXPECT_NEXT("@monthly", "UTC", t, utc(2024, 6, 1, 0, 0));
	EXPECT_NEXT("@yearly", "UTC", t, utc(2025, 1, 1, 0, 0), utc(2026, 1, 1, 0, 0));
	EXPECT_NEXT("@annually", "UTC", t, utc(2025, 1, 1, 0, 0));
	/* A zone without DST: 09:00 in Kolkata is 03:30 UTC. */
	EXPECT_NEXT("0 9 * * *", "Asia/Kolkata", t, utc(2024, 5, 15, 3, 30));

	assert_int_equal(prev_of("*/5 * * * *", "UTC", t), utc(2024, 5, 14, 10, 0));
	/* At or before: a fire time is its own prev. */
	assert_int_equal(prev_of("*/5 * * * *", "UTC", utc(2024, 5, 14, 10, 0)),
	                 utc(2024, 5, 14, 10, 0));
	assert_int_equal(prev_of("0 9 * * MON-FRI", "UTC", utc(2024, 5, 20, 8, 59)),
	                 utc(2024, 5, 17, 9, 0));
	assert_int_equal(prev_of("@yearly", "UTC", t), utc(2024, 1, 1, 0, 0));
}

static void
test_month_ends_and_leap_years(void **state)
{
	(void)state;
	EXPECT_NEXT("0 0 31 * *", "UTC", utc(2024, 1, 31, 0, 0), utc(2024, 3, 31, 0, 0),
	            utc(2024, 5, 31, 0, 0), utc(2024, 7, 31, 0, 0), utc(2024, 8, 31, 0, 0),
	            utc(2024, 10, 31, 0, 0), utc(2024, 12, 31, 0, 0));
	EXPECT_NEXT("0 0 30 * *", "UTC", utc(2023, 1, 30, 0, 0), utc(2023, 3, 30, 0, 0));
	EXPECT_NEXT("0 0 1,30 * *", "UTC", utc(2033, 2, 15, 0, 0), utc(2033, 3, 1, 0, 0),
	            utc(2033, 3, 30, 0, 0));
	EXPECT_NEXT("59 23 28-31 2 *", "UTC", utc(2023, 3, 1, 0, 0), utc(2024, 2, 28, 23, 59),
	            utc(2024, 2, 29, 23, 59), utc(2025, 2, 28, 23, 59));
	/* 2100 is not a leap year, 2000 was. */
	EXPECT_NEXT("0 0 29 2 *", "UTC", utc(2023, 6, 1, 0, 0), utc(2024, 2, 29, 0, 0),
	            utc(2028, 2, 29, 0, 0));
	EXPECT_NEXT("0 0 29 2 *", "UTC", utc(2096, 3, 1, 0, 0), utc(2104, 2, 29, 0, 0));
	EXPECT_NEXT("0 0 29 2 *", "UTC", utc(1999, 1, 1, 0, 0), utc(2000, 2, 29, 0, 0));
	/* 29 February on a Sunday ("*" in day-of-week: both must match): 2032, then 2060. */
	EXPECT_NEXT("0 0 29 2 */7", "UTC", utc(2024, 3, 1, 0, 0), utc(2032, 2, 29, 0, 0),
	            utc(2060, 2, 29, 0, 0));
	assert_int_equal(prev_of("0 0 29 2 *", "UTC", utc(2024, 3, 1, 0, 0)),
	                 utc(2024, 2, 29, 0, 0));
	assert_int_equal(prev_of("0 0 1,31 * *", "UTC", utc(2024, 5, 30, 0, 0)),
	                 utc(2024, 5, 1, 0, 0));
	assert_int_equal(prev_of("0 0 31 * *", "UTC", utc(2024, 5, 30, 0, 0)),
	                 utc(2024, 3, 31, 0, 0));
	/* prev looks back 400 days at most. */
	assert_int_equal(prev_of("0 0 29 2 *", "UTC", utc(2025, 4, 3, 0, 0)),
	                 utc(2024, 2, 29, 0, 0));
	assert_int_equal(prev_of("0 0 29 2 *", "UTC", utc(2025, 4, 4, 0, 1)), -1);
}

static void
test_dom_dow_rule(void **state)
{
	(void)state;
	/* Both restricted: the 13th OR any Friday. */
	EXPECT_NEXT("0 0 13 * 5", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 6, 0, 0),
	            utc(2024, 9, 13, 0, 0), utc(2024, 9, 20, 0, 0), utc(2024, 9, 27, 0, 0),
	            utc(2024, 10, 4, 0, 0), utc(2024, 10, 11, 0, 0), utc(2024, 10, 13, 0, 0));
	/* A field starting with '*' makes it AND: odd days that are Fridays. */
	EXPECT_NEXT("0 0 */2 * 5", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 13, 0, 0),
	            utc(2024, 9, 27, 0, 0), utc(2024, 10, 11, 0, 0));
	/* A day-of-week step of 5 from 0 is 0 and 5: the 13th on a Sunday or a Friday. */
	EXPECT_NEXT("0 0 13 * */5", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 13, 0, 0),
	            utc(2024, 10, 13, 0, 0), utc(2024, 12, 13, 0, 0));
	/* "1-31" does not start with '*': OR with Monday, so every day. */
	EXPECT_NEXT("0 0 1-31 * 1", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 2, 0, 0),
	            utc(2024, 9, 3, 0, 0));
	EXPECT_NEXT("0 0 * * 1", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 2, 0, 0),
	            utc(2024, 9, 9, 0, 0));
	/* 29 February OR a Monday in February: quick, not a search for a leap Monday. */
	EXPECT_NEXT("0 0 29 2 1", "UTC", utc(2023, 3, 1, 0, 0), utc(2024, 2, 5, 0, 0),
	            utc(2024, 2, 12, 0, 0), utc(2024, 2, 19, 0, 0), utc(2024, 2, 26, 0, 0),
	            utc(2024, 2, 29, 0, 0), utc(2025, 2, 3, 0, 0));
	/* OR lets an impossible day-of-month still fire on the weekday. */
	EXPECT_NEXT("0 0 31 9 1", "UTC", utc(2024, 9, 1, 0, 0), utc(2024, 9, 2, 0, 0));
	assert_int_equal(prev_of("0 0 13 * 5", "UTC", utc(2024, 10, 12, 0, 0)),
	                 utc(2024, 10, 11, 0, 0));
}

static void
test_every(void **state)
{
	struct schedule *s, *k;

	(void)state;
	s = parse("@every 1h", "UTC");
	assert_int_equal(schedule_next(s, 3601), 7200);
	assert_int_equal(schedule_next(s, 7200), 10800);
	assert_int_equal(schedule_next(s, -1), 0);
	assert_int_equal(schedule_next(s, -3600), 0);
	assert_int_equal(schedule_next(s, -3601), -3600);
	assert_int_equal(schedule_prev(s, 7200), 7200);
	assert_int_equal(schedule_prev(s, 7199), 3600);
	assert_int_equal(schedule_prev(s, -1), -3600);
	schedule_free(s);

	/* Ticks count from the epoch in UTC, whatever the zone: a day is UTC midnight. */
	s = parse("@every 1d", "Asia/Kolkata");
	k = parse("@every 1d", "UTC");
	assert_int_equal(schedule_next(s, utc(2024, 5, 14, 10, 0)), utc(2024, 5, 15, 0, 0));
	assert_int_equal(schedule_next(k, utc(2024, 5, 14, 10, 0)), utc(2024, 5, 15, 0, 0));
	schedule_free(s);
	schedule_free(k);

	s = parse("@every 7s", NULL);
	assert_int_equal(schedule_next(s, 0), 7);
	assert_int_equal(schedule_next(s, 1700000000), 1700000001);
	schedule_free(s);

	/* A tick more than 400 days back is not a prev. */
	s = parse("@every 500d", "UTC");
	assert_int_equal(schedule_prev(s, 500 * 86400 + 400 * 86400), 500 * 86400);
	assert_int_equal(schedule_prev(s, 500 * 86400 + 400 * 86400 + 1), -1);
	schedule_free(s);
}

/*
 * Spring forward. Europe/Berlin 2024-03-31: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
 * America/New_York 2024-03-10: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
 * Australia/Lord_Howe 2024-10-06: 02:00 (+10:30) becomes 02:30 (+11) at 15:30 UTC on 10-05.
 */
static void
test_dst_gap(void **state)
{
	(void)state;
	/* Fixed hour: the skipped 02:30 fires once, at the jump (03:00 CEST). */
	EXPECT_NEXT("30 2 * * *", "Europe/Berlin", utc(2024, 3, 30, 12, 0), utc(2024, 3, 31, 1, 0),
	            utc(2024, 4, 1, 0, 30));
	/* Several skipped times still fire once. */
	EXPECT_NEXT("*/15 2 * * *", "Europe/Berlin", utc(2024, 3, 30, 12, 0),
	            utc(2024, 3, 31, 1, 0), utc(2024, 4, 1, 0, 0), utc(2024, 4, 1, 0, 15));
	/* A fixed time that coincides with the jump fires once, not twice. */
	EXPECT_NEXT("0 2,3 * * *", "Europe/Berlin", utc(2024, 3, 30, 12, 0), utc(2024, 3, 31, 1, 0),
	            utc(2024, 4, 1, 0, 0));
	/* Wildcard or stepped hour: skipped times are skipped. */
	EXPECT_NEXT("30 * * * *", "Europe/Berlin", utc(2024, 3, 31, 0, 0), utc(2024, 3, 31, 0, 30),
	            utc(2024, 3, 31, 1, 30), utc(2024, 3, 31, 2, 30));
	EXPECT_NEXT("0 */2 * * *", "Europe/Berlin", utc(2024, 3, 30, 22, 0),
	            utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 2, 0));
	EXPECT_NEXT("0 0-4/2 * * *", "Europe/Berlin", utc(2024, 3, 30, 22, 0),
	            utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 2, 0));
	EXPECT_NEXT("30 2 * * *", "America/New_York", utc(2024, 3, 9, 12, 0),
	            utc(2024, 3, 10, 7, 0), utc(2024, 3, 11, 6, 30));
	/* Lord Howe skips only 02:00-02:29. */
	EXPECT_NEXT("15 2 * * *", "Australia/Lord_Howe", utc(2024, 10, 5, 0, 0),
	            utc(2024, 10, 5, 15, 30), utc(2024, 10, 6, 15, 15));
	EXPECT_NEXT("45 2 * * *", "Australia/Lord_Howe", utc(2024, 10, 5, 0, 0),
	            utc(2024, 10, 5, 15, 45));
	EXPECT_NEXT("15 * * * *", "Australia/Lord_Howe", utc(2024, 10, 5, 14, 0),
	            utc(2024, 10, 5, 14, 45), utc(2024, 10, 5, 16, 15));

	/* prev agrees: the jump instant is the fire time. */
	assert_int_equal(prev_of("30 2 * * *", "Europe/Berlin", utc(2024, 3, 31, 1, 0)),
	                 utc(2024, 3, 31, 1, 0));
	assert_int_equal(prev_of("30 2 * * *", "Europe/Berlin", utc(2024, 3, 31, 0, 59)),
	                 utc(2024, 3, 30, 1, 30));
	assert_int_equal(prev_of("30 * * * *", "Europe/Berlin", utc(2024, 3, 31, 1, 29)),
	                 utc(2024, 3, 31, 0, 30));
}

/*
 * Fall back. Europe/Berlin 2024-10-27: 03:00 CEST becomes 02:00 CET at 01:00 UTC.
 * America/New_York 2024-11-03: 02:00 EDT becomes 01:00 EST at 06:00 UTC.
 * Australia/Lord_Howe 2024-04-07: 02:00 (+11) becomes 01:30 (+10:30) at 15:00 UTC on 04-06.
 */
static void
test_dst_overlap(void **state)
{
	(void)state;
	/* Fixed hour: the repeated 02:30 fires at its first occurrence only. */
	EXPECT_NEXT("30 2 * * *", "Europe/Berlin", utc(2024, 10, 26, 12, 0),
	            utc(2024, 10, 27, 0, 30), utc(2024, 10, 28, 1, 30));
	EXPECT_NEXT("*/30 2 * * *", "Europe/Berlin", utc(2024, 10, 26, 12, 0),
	            utc(2024, 10, 27, 0, 0), utc(2024, 10, 27, 0, 30), utc(2024, 10, 28, 1, 0));
	/* Wildcard hour: every real occurrence. */
	EXPECT_NEXT("30 * * * *", "Europe/Berlin", utc(2024, 10, 27, 0, 0),
	            utc(2024, 10, 27, 0, 30), utc(2024, 10, 27, 1, 30), utc(2024, 10, 27, 2, 30));
	EXPECT_NEXT("0 */1 * * *", "Europe/Berlin", utc(2024, 10, 26, 23, 30),
	            utc(2024, 10, 27, 0, 0), utc(2024, 10, 27, 1, 0), utc(2024, 10, 27, 2, 0));
	EXPECT_NEXT("30 1 * * *", "America/New_York", utc(2024, 11, 2, 12, 0),
	            utc(2024, 11, 3, 5, 30), utc(2024, 11, 4, 6, 30));
	EXPECT_NEXT("30 * * * *", "America/New_York", utc(2024, 11, 3, 5, 0),
	            utc(2024, 11, 3, 5, 30), utc(2024, 11, 3, 6, 30), utc(2024, 11, 3, 7, 30));
	EXPECT_NEXT("45 1 * * *", "Australia/Lord_Howe", utc(2024, 4, 6, 0, 0),
	            utc(2024, 4, 6, 14, 45), utc(2024, 4, 7, 15, 15));
	EXPECT_NEXT("45 * * * *", "Australia/Lord_Howe", utc(2024, 4, 6, 14, 0),
	            utc(2024, 4, 6, 14, 45), utc(2024, 4, 6, 15, 15), utc(2024, 4, 6, 16, 15));

	/* prev from inside the second 02:00-02:59 finds the first 02:30. */
	assert_int_equal(prev_of("30 2 * * *", "Europe/Berlin", utc(2024, 10, 27, 1, 45)),
	                 utc(2024, 10, 27, 0, 30));
	assert_int_equal(prev_of("30 * * * *", "Europe/Berlin", utc(2024, 10, 27, 1, 45)),
	                 utc(2024, 10, 27, 1, 30));
}

/* After 2037 the TZif table ends and the footer's POSIX rule takes over. */
static void
test_dst_rule_years(void **state)
{
	(void)state;
	/* Europe/Berlin 2050-03-27 gap and 2050-10-30 overlap. */
	EXPECT_NEXT("30 2 * * *", "Europe/Berlin", utc(2050, 3, 26, 12, 0), utc(2050, 3, 27, 1, 0),
	            utc(2050, 3, 28, 0, 30));
	EXPECT_NEXT("30 2 * * *", "Europe/Berlin", utc(2050, 10, 29, 12, 0),
	            utc(2050, 10, 30, 0, 30), utc(2050, 10, 31, 1, 30));
	/* America/Nuuk's rule changes at -1:00 on Sunday: Saturday 23:00 is skipped. */
	EXPECT_NEXT("30 23 * * *", "America/Nuuk", utc(2050, 3, 26, 12, 0), utc(2050, 3, 27, 1, 0),
	            utc(2050, 3, 28, 0, 30));
	/* Australia/Lord_Howe in 2100, southern hemisphere, half-hour shift. */
	EXPECT_NEXT("0 2 * * *", "Australia/Lord_Howe", utc(2100, 10, 2, 0, 0),
	            utc(2100, 10, 2, 15, 30), utc(2100, 10, 3, 15, 0));
	EXPECT_NEXT("30 2 * * *", "Australia/Sydney", utc(2060, 4, 3, 0, 0),
	            utc(2060, 4, 3, 15, 30), utc(2060, 4, 4, 16, 30));
	/* Before its first transition a zone keeps its first offset: Berlin's LMT, +0:53:28. */
	EXPECT_NEXT("0 12 * * *", "Europe/Berlin", utc(1850, 6, 1, 0, 0),
	            utc(1850, 6, 1, 11, 6) + 32);
	/* The last representable fire time, then nothing. */
	EXPECT_NEXT("59 23 31 12 *", "UTC", utc(9999, 1, 1, 0, 0), utc(9999, 12, 31, 23, 59), -1);
}

static void
test_impossible(void **state)
{
	static const char *const never[] = {"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 */7",
	                                    "* * 30-31 feb *"};
	struct schedule *s;
	struct timespec t0, t1;
	size_t i;
	int n;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; n < 200; n++) {
		for (i = 0; i < sizeof never / sizeof never[0]; i++) {
			s = parse(never[i], "Europe/Berlin");
			assert_true(schedule_never(s));
			assert_int_equal(schedule_next(s, utc(2024, 1, 1, 0, 0) + n), -1);
			assert_int_equal(schedule_prev(s, utc(2024, 1, 1, 0, 0) + n), -1);
			schedule_free(s);
		}
		/* Rare but possible: 29 February on a Sunday, in a DST zone. */
		s = parse("0 0 29 2 */7", "America/New_York");
		assert_false(schedule_never(s));
		assert_int_equal(schedule_next(s, utc(2060, 3, 1, 0, 0) + n),
		                 utc(2088, 2, 29, 5, 0));
		schedule_free(s);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* 1000 parses and 1800 searches; generous for sanitizers and slow machines. */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 5000);
}

/* next and prev describe one set of fire times: p <= x < n, next(p) == n, prev(n) == n. */
static void
test_next_prev_agree(void **state)
{
	static const char *const specs[] = {
	    "30 2 * * *",  "*/15 2 * * *", "30 * * * *",   "0 */2 * * *",   "45 1 * * *",
	    "0 0 * * *",   "* * * * *",    "15 1-3 * * 0", "0 0 29 2 1",    "*/7 0-3 * 3,10 *",
	    "0 12 13 * 5", "@weekly",      "@every 45m",   "59 23 31 12 *", "0,30 0-4 * * *",
	    "5 4 1 1,4 *", "* 2 * * *",    "0 3 * * *",    "30 0 * * *",    "*/10 * * * 6",
	};
	static const char *const zones[] = {"UTC",
	                                    "Europe/Berlin",
	                                    "America/New_York",
	                                    "Australia/Lord_Howe",
	                                    "Australia/Sydney",
	                                    "America/Sao_Paulo",
	                                    "Pacific/Apia",
	                                    "America/Nuuk",
	                                    "Asia/Kolkata",
	                                    NULL};
	struct schedule *s;
	uint64_t seed = 42;
	int64_t x, n, p;
	size_t i, j;
	int k;

	(void)state;
	for (i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		for (j = 0; j < sizeof zones / sizeof zones[0]; j++) {
			s = parse(specs[i], zones[j]);
			for (k = 0; k < 60; k++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				x = (int64_t)((seed >> 11) % 4102444800ULL); /* 1970-2100 */
				n = schedule_next(s, x);
				p = schedule_prev(s, x);
				assert_true(n > x);
				assert_int_equal(schedule_prev(s, n), n);
				if (p == -1)
					continue;
				assert_true(p <= x);
				assert_int_equal(schedule_next(s, p), n);
				assert_int_equal(schedule_prev(s, n - 1), p);
			}
			schedule_free(s);
		}
	}
}

/* A NULL zone is the process's: TZ as a zone name or as a POSIX TZ string. */
static void
test_local_zone(void **state)
{
	const char *old = getenv("TZ");
	char *saved = old != NULL ? strdup(old) : NULL;
	struct schedule *s;

	(void)state;
	setenv("TZ", "America/New_York", 1);
	s = parse("30 2 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 3, 9, 12, 0)), utc(2024, 3, 10, 7, 0));
	schedule_free(s);

	setenv("TZ", ":Europe/Berlin", 1);
	s = parse("30 2 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 3, 30, 12, 0)), utc(2024, 3, 31, 1, 0));
	schedule_free(s);

	setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);
	s = parse("30 1 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 11, 2, 12, 0)), utc(2024, 11, 3, 5, 30));
	assert_int_equal(schedule_next(s, utc(2024, 11, 3, 5, 30)), utc(2024, 11, 4, 6, 30));
	schedule_free(s);

	setenv("TZ", "<+0530>-5:30", 1);
	s = parse("0 9 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 5, 14, 10, 0)), utc(2024, 5, 15, 3, 30));
	schedule_free(s);

	/* Rule dates "Jn" (1-365, 29 February never counted) and "n" (0-365, counted). */
	setenv("TZ", "AAA-1BBB,J60/2,J300/3", 1);
	s = parse("30 2 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 2, 28, 12, 0)), utc(2024, 2, 29, 1, 30));
	assert_int_equal(schedule_next(s, utc(2024, 2, 29, 12, 0)), utc(2024, 3, 1, 1, 0));
	assert_int_equal(schedule_next(s, utc(2100, 2, 28, 12, 0)), utc(2100, 3, 1, 1, 0));
	schedule_free(s);
	setenv("TZ", "AAA-1BBB,59/2,299/3", 1);
	s = parse("30 2 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 2, 28, 12, 0)), utc(2024, 2, 29, 1, 0));
	assert_int_equal(schedule_next(s, utc(2025, 2, 28, 12, 0)), utc(2025, 3, 1, 1, 0));
	schedule_free(s);

	setenv("TZ", "", 1);
	s = parse("0 9 * * *", NULL);
	assert_int_equal(schedule_next(s, utc(2024, 5, 14, 10, 0)), utc(2024, 5, 15, 9, 0));
	schedule_free(s);

	/* Parsing leaves TZ alone. */
	assert_string_equal(getenv("TZ"), "");
	if (saved != NULL)
		setenv("TZ", saved, 1);
	else
		unsetenv("TZ");
	free(saved);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_forms),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_hash),
	    cmocka_unit_test(test_jitter),
	    cmocka_unit_test(test_next_ordinary),
	    cmocka_unit_test(test_month_ends_and_leap_years),
	    cmocka_unit_test(test_dom_dow_rule),
	    cmocka_unit_test(test_every),
	    cmocka_unit_test(test_dst_gap),
	    cmocka_unit_test(test_dst_overlap),
	    cmocka_unit_test(test_dst_rule_years),
	    cmocka_unit_test(test_impossible),
	    cmocka_unit_test(test_next_prev_agree),
	    cmocka_unit_test(test_local_zone),
	};

	unsetenv("TZDIR"); /* the system's zones, as the expected messages name them */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
