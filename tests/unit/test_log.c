/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c: the limiter that turns a repeating warning into one line and a count, and the
 * line format: a timestamp on a plain stderr, a syslog priority prefix on the journal's.
 */

#include <sys/stat.h>

#include <errno.h>
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

/*
 * With stderr on a temporary file and JOURNAL_STREAM set to journal (NULL: unset; "" or
 * "match": that file's DEVICE:INODE): one line of each level (a warning with an errno, an
 * info line with a newline inside, a debug line) into out, as log_init found it.
 */
static void
log_lines(const char *journal, char *out, size_t outlen)
{
	FILE *f = tmpfile();
	char stream[64];
	struct stat st;
	size_t n;
	int saved;

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	snprintf(stream, sizeof stream, "%llu:%llu", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
	if (journal == NULL)
		unsetenv("JOURNAL_STREAM");
	else
		setenv("JOURNAL_STREAM", strcmp(journal, "match") == 0 ? stream : journal, 1);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(f), STDERR_FILENO);
	log_init(1, "main");
	errno = ENOSPC;
	log_warn("warned");
	log_info("two\nlines");
	log_set_process("supervisor");
	log_debug("debugged");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	log_init(0, "main");
	rewind(f);
	n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	fclose(f);
}

/* On the journal: a priority per level, the role and pid, no timestamp, one line each. */
static void
test_journal_prefixes(void **state)
{
	char out[2048], expect[1024];
	long pid = (long)getpid();

	(void)state;
	log_lines("match", out, sizeof out);
	snprintf(expect, sizeof expect,
	         "<4>main[%ld] warn: warned: %s\n"
	         "<6>main[%ld] info: two lines\n"
	         "<7>supervisor[%ld] debug: debugged\n",
	         pid, strerror(ENOSPC), pid, pid);
	assert_string_equal(out, expect);
}

/* Elsewhere, today's format: a UTC timestamp first, and no priority prefix. */
static void
test_plain_format(void **state)
{
	static const char *const journals[] = {NULL, "1:1", "match:x", "garbage", ""};
	char out[2048], expect[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof journals / sizeof journals[0]; i++) {
		log_lines(journals[i], out, sizeof out);
		assert_true(out[0] >= '2' && out[0] <= '9'); /* a year */
		assert_int_equal(out[4], '-');
		assert_null(strchr(out, '<'));
		snprintf(expect, sizeof expect, "Z leasekeeper[%ld] main warn: warned: %s\n",
		         (long)getpid(), strerror(ENOSPC));
		assert_non_null(strstr(out, expect));
		assert_non_null(strstr(out, " supervisor debug: debugged\n"));
	}
}

/* JOURNAL_STREAM as systemd writes it, and what is not that (read as no journal). */
static void
test_journal_stream_parse(void **state)
{
	uint64_t dev, ino;

	(void)state;
	assert_int_equal(log_journal_stream_parse("8:123456", &dev, &ino), 0);
	assert_true(dev == 8 && ino == 123456);
	assert_int_equal(log_journal_stream_parse("18446744073709551615:0", &dev, &ino), 0);
	assert_true(dev == UINT64_MAX && ino == 0);
	assert_int_equal(log_journal_stream_parse("18446744073709551616:1", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse("-1:5", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse(" 8:5", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse("8: 5", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse("8:5x", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse("8:", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse(":5", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse("85", &dev, &ino), -1);
	assert_int_equal(log_journal_stream_parse(NULL, &dev, &ino), -1);
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
	    cmocka_unit_test(test_journal_prefixes),
	    cmocka_unit_test(test_plain_format),
	    cmocka_unit_test(test_journal_stream_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
