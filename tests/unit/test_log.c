/* test_log.c: the limiter that turns a repeating warning into one line and a count. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/*
 * Time: a limiter whose interval is HELD_MS holds every repeat back (no test runs for a
 * minute), and interval_passed() sets a 1 ms interval and sleeps longer than that, so the next
 * warning is past the interval. More elapsed time never changes what these tests expect.
 */
#define HELD_MS 60000

#define TEXT "job x: write /dev/full: No space left on device"

static void
interval_passed(struct log_limit *l)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	l->interval_ms = 1;
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Count the lines of a file that contain needle; the last of them in last. */
static int
count_lines(FILE *f, const char *needle, char *last, size_t lastlen)
{
	char line[1024];
	int n = 0;

	rewind(f);
	last[0] = '\0';
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, needle) != NULL) {
			n++;
			snprintf(last, lastlen, "%s", line);
		}
	return n;
}

/*
 * With stderr captured: times warnings through l (or times flushes of l), and how many lines
 * went out, the last in last. stderr is back before the caller asserts anything.
 */
static int
warn(struct log_limit *l, int times, int flush, char *last, size_t lastlen)
{
	FILE *f = tmpfile();
	int saved, i, n;

	assert_non_null(f);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(f), STDERR_FILENO);
	for (i = 0; i < times; i++) {
		if (flush)
			log_limit_flush(l);
		else
			log_warnx_limited(l, "%s", TEXT);
	}
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = count_lines(f, TEXT, last, lastlen);
	fclose(f);
	return n;
}

/* The first occurrence goes out; the rest of the interval is counted, not logged. */
static void
test_limit_first_then_held(void **state)
{
	struct log_limit l;
	char last[1024];

	(void)state;
	memset(&l, 0, sizeof l);
	l.interval_ms = HELD_MS;
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_null(strstr(last, "repeated"));
	/* Within the interval: held. */
	assert_int_equal(warn(&l, 1541, 0, last, sizeof last), 0);
	/* Past the interval: logged, with the 1541 held back and over how long. */
	interval_passed(&l);
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_non_null(strstr(last, TEXT " (repeated 1541 times in the last "));
	assert_true(atoi(strstr(last, "in the last ") + strlen("in the last ")) >= 1);
	/* A new window: the next one right after is held again, and counted from zero. */
	l.interval_ms = HELD_MS;
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 0);
	interval_passed(&l);
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_non_null(strstr(last, "(repeated 1 time in the last "));
}

/* A fault that recurs only after a quiet interval is logged each time, with no count. */
static void
test_limit_rare_fault_always_logged(void **state)
{
	struct log_limit l;
	char last[1024];
	int i;

	(void)state;
	memset(&l, 0, sizeof l);
	for (i = 0; i < 5; i++) {
		interval_passed(&l);
		assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
		assert_null(strstr(last, "repeated"));
	}
}

/*
 * A clock that went backwards never holds a warning back for ever. CLOCK_BOOTTIME does not,
 * so the last line is made to have gone out in the future instead.
 */
static void
test_limit_clock_backwards(void **state)
{
	struct log_limit l;
	char last[1024];

	(void)state;
	memset(&l, 0, sizeof l);
	l.interval_ms = HELD_MS;
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 0);
	l.since_ms +=
	    1000ULL * 1000 * 1000 * 1000; /* now is a thousand million seconds before it */
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_non_null(strstr(last, "(repeated 1 time in the last "));
}

/* Through stderr: 1,541 disk-full warnings make one line, and the flush says how many. */
static void
test_limit_output_and_flush(void **state)
{
	struct log_limit l;
	char last[1024];

	(void)state;
	memset(&l, 0, sizeof l);
	l.interval_ms = HELD_MS;
	assert_int_equal(warn(&l, 1541, 0, last, sizeof last), 1);
	assert_int_equal(warn(&l, 1, 1, last, sizeof last), 1);
	assert_non_null(strstr(last, "(repeated 1540 times in the last "));
	/* Nothing more held: says nothing. */
	assert_int_equal(warn(&l, 1, 1, last, sizeof last), 0);
}

/* With a burst of 3, three lines go out in an interval, then the rest are counted. */
static void
test_limit_burst(void **state)
{
	struct log_limit l = {.interval_ms = HELD_MS, .burst = 3};
	char last[1024];

	(void)state;
	assert_int_equal(warn(&l, 3, 0, last, sizeof last), 3);
	assert_null(strstr(last, "repeated"));
	assert_int_equal(warn(&l, 10, 0, last, sizeof last), 0);
	/* The next interval: a line with the count, and a fresh burst. */
	interval_passed(&l);
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 1);
	assert_non_null(strstr(last, "(repeated 10 times in the last "));
	l.interval_ms = HELD_MS;
	assert_int_equal(warn(&l, 2, 0, last, sizeof last), 2);
	assert_null(strstr(last, "repeated"));
	assert_int_equal(warn(&l, 1, 0, last, sizeof last), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limit_first_then_held),
	    cmocka_unit_test(test_limit_rare_fault_always_logged),
	    cmocka_unit_test(test_limit_clock_backwards),
	    cmocka_unit_test(test_limit_output_and_flush),
	    cmocka_unit_test(test_limit_burst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
