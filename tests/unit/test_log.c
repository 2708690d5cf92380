/* test_log.c: the limiter that turns a repeating warning into one line and a count. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* The first occurrence goes out; the rest of the interval is counted, not logged. */
static void
test_limit_first_then_held(void **state)
{
	struct log_limit l;
	unsigned long held;
	uint64_t span;
	int i;

	(void)state;
	memset(&l, 0, sizeof l);
	l.interval_ms = 30000;
	assert_int_equal(log_limit_check(&l, 1000, &held, &span), 1);
	assert_int_equal(held, 0);
	for (i = 0; i < 1540; i++)
		assert_int_equal(log_limit_check(&l, 1000 + (uint64_t)i * 19, &held, &span), 0);
	/* One millisecond short of the interval: still held. */
	assert_int_equal(log_limit_check(&l, 30999, &held, &span), 0);
	/* At the interval: logged, with the 1541 held back over 30 s. */
	assert_int_equal(log_limit_check(&l, 31000, &held, &span), 1);
	assert_int_equal(held, 1541);
	assert_int_equal(span, 30000);
	/* A new window: the next one right after is held again, and counted from zero. */
	assert_int_equal(log_limit_check(&l, 31001, &held, &span), 0);
	assert_int_equal(log_limit_check(&l, 61000, &held, &span), 1);
	assert_int_equal(held, 1);
}

/* A fault that recurs only after a quiet interval is logged each time, with no count. */
static void
test_limit_rare_fault_always_logged(void **state)
{
	struct log_limit l;
	unsigned long held;
	uint64_t span;
	int i;

	(void)state;
	memset(&l, 0, sizeof l);
	for (i = 0; i < 5; i++) {
		assert_int_equal(
		    log_limit_check(&l, (uint64_t)i * LOG_LIMIT_INTERVAL_MS, &held, &span), 1);
		assert_int_equal(held, 0);
	}
}

/* A clock that went backwards never holds a warning back for ever. */
static void
test_limit_clock_backwards(void **state)
{
	struct log_limit l;
	unsigned long held;
	uint64_t span;

	(void)state;
	memset(&l, 0, sizeof l);
	assert_int_equal(log_limit_check(&l, 100000, &held, &span), 1);
	assert_int_equal(log_limit_check(&l, 100001, &held, &span), 0);
	assert_int_equal(log_limit_check(&l, 50, &held, &span), 1);
	assert_int_equal(held, 1);
}

/* Count the lines of a file that contain needle. */
static int
count_lines(FILE *f, const char *needle, char *last, size_t lastlen)
{
	char line[1024];
	int n = 0;

	rewind(f);
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, needle) != NULL) {
			n++;
			snprintf(last, lastlen, "%s", line);
		}
	return n;
}

/* Through stderr: 1,541 disk-full warnings make one line, and the flush says how many. */
static void
test_limit_output_and_flush(void **state)
{
	struct log_limit l;
	FILE *f = tmpfile();
	char last[1024];
	int saved = dup(STDERR_FILENO), i;

	(void)state;
	assert_non_null(f);
	memset(&l, 0, sizeof l);
	l.interval_ms = 3600 * 1000; /* nothing in this test waits that long */
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	for (i = 0; i < 1541; i++)
		log_warnx_limited(&l, "job x: write /dev/full: No space left on device");
	log_limit_flush(&l);
	log_limit_flush(&l); /* nothing more held: says nothing */
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_int_equal(count_lines(f, "No space left on device", last, sizeof last), 2);
	assert_non_null(strstr(last, "(repeated 1540 times in the last "));
	fclose(f);
}

/* With a burst of 3, three lines go out in an interval, then the rest are counted. */
static void
test_limit_burst(void **state)
{
	struct log_limit l = {.burst = 3};
	unsigned long held;
	uint64_t span;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_int_equal(log_limit_check(&l, 1000 + (uint64_t)i * 100, &held, &span), 1);
		assert_int_equal(held, 0);
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(log_limit_check(&l, 1500 + (uint64_t)i, &held, &span), 0);
	/* The next interval: a line with the count, and a fresh burst. */
	assert_int_equal(log_limit_check(&l, 31000, &held, &span), 1);
	assert_int_equal(held, 10);
	assert_int_equal(log_limit_check(&l, 31001, &held, &span), 1);
	assert_int_equal(log_limit_check(&l, 31002, &held, &span), 1);
	assert_int_equal(log_limit_check(&l, 31003, &held, &span), 0);
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
