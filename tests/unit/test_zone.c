/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_zone.c: time zones as schedules get them, through schedule_parse: a zone name looked
 * up under $TZDIR (here a private directory of TZif files written by the test), and the
 * process's zone from TZ (a zone name or a POSIX TZ string).
 */

#include <sys/stat.h>

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "schedule.h"

#define NEW_YORK "/usr/share/zoneinfo/America/New_York"

/*
 * The test's directory: TZDIR is its zoneinfo/, which holds Inside and Copy/New_York (copies
 * of America/New_York), and Outside is the same file beside zoneinfo/.
 */
static char dir[] = "/tmp/lk-test-zone.XXXXXX";
static char zoneinfo[sizeof dir + 16], outside[sizeof dir + 16];

/* Write buf[0..len) to path. */
static void
write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Write a zone file under TZDIR. */
static void
write_zone(const char *name, const void *buf, size_t len)
{
	char path[sizeof zoneinfo + 64];

	snprintf(path, sizeof path, "%s/%s", zoneinfo, name);
	write_file(path, buf, len);
}

/* The bytes of a file; *len its size (caller frees). */
static unsigned char *
read_file(const char *path, size_t *len)
{
	unsigned char *buf = malloc(1 << 20);
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* Big-endian 32 bits, as TZif stores them. */
static void
be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/*
 * A TZif version 2 file with no transitions, one type of offset off, and footer (a POSIX TZ
 * string, for the years after the table: here, all of them). Returns its length.
 */
static size_t
tzif_footer(unsigned char *buf, int32_t off, const char *footer)
{
	size_t n = 0;
	int block;

	for (block = 0; block < 2; block++) { /* the 32-bit block, then the 64-bit one */
		memset(buf + n, 0, 44);
		memcpy(buf + n, "TZif2", 5);
		be32(buf + n + 36, 1); /* one type */
		be32(buf + n + 40, 4); /* four bytes of abbreviations */
		n += 44;
		be32(buf + n, (uint32_t)off);
		buf[n + 4] = buf[n + 5] = 0;
		memcpy(buf + n + 6, "ZZZ", 4);
		n += 10;
	}
	return n + (size_t)sprintf((char *)buf + n, "\n%s\n", footer);
}

/* The test's TZDIR, and no TZ: each test sets what it needs. */
static int
setup(void **state)
{
	char path[sizeof zoneinfo + 16];
	unsigned char *ny;
	size_t len;

	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(zoneinfo, sizeof zoneinfo, "%s/zoneinfo", dir);
	snprintf(outside, sizeof outside, "%s/Outside", dir);
	if (mkdir(zoneinfo, 0700) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/Copy", zoneinfo);
	if (mkdir(path, 0700) != 0)
		return -1;
	setenv("TZDIR", zoneinfo, 1);
	unsetenv("TZ");
	ny = read_file(NEW_YORK, &len);
	write_file(outside, ny, len);
	write_zone("Inside", ny, len);
	write_zone("Copy/New_York", ny, len);
	free(ny);
	return 0;
}

/* Remove one entry of the test's directory. */
static int
remove_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int
teardown(void **state)
{
	(void)state;
	unsetenv("TZDIR");
	unsetenv("TZ");
	return nftw(dir, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* "0 2 * * *" in zone (NULL: the process's), which must parse. */
static struct schedule *
daily_two(const char *zone)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	if (schedule_parse("0 2 * * *", zone, &s, &cause) != 0)
		fail_msg("zone %s: %s", zone != NULL ? zone : "(TZ)", cause);
	return s;
}

/* 02:00 in CET is 01:00 UTC in January; in July, CEST, 02:00 local is 00:00 UTC. */
static void
assert_cet(struct schedule *s)
{
	/* 2024-01-15T00:00:00Z -> 2024-01-15T01:00:00Z */
	assert_int_equal(schedule_next(s, 1705276800), 1705280400);
	/* 2024-07-15T00:00:00Z -> 2024-07-16T00:00:00Z */
	assert_int_equal(schedule_next(s, 1721001600), 1721001600 + 86400);
	schedule_free(s);
}

/* 02:00 UTC: 2024-01-15T00:00:00Z -> 02:00Z, and the same in July. */
static void
assert_utc(struct schedule *s)
{
	assert_int_equal(schedule_next(s, 1705276800), 1705276800 + 7200);
	assert_int_equal(schedule_next(s, 1721001600), 1721001600 + 7200);
	schedule_free(s);
}

/* A POSIX TZ string: as the process's zone (TZ), and as the footer of a TZif file. */
static void
test_posix_string(void **state)
{
	const char *cet = "CET-1CEST,M3.5.0,M10.5.0/3";
	unsigned char buf[512];

	(void)state;
	setenv("TZ", cet, 1);
	assert_cet(daily_two(NULL));
	unsetenv("TZ");
	write_zone("Footer", buf, tzif_footer(buf, 3600, cet));
	assert_cet(daily_two("Footer"));
}

/* A TZif file under TZDIR gives the same times as the system's copy of it. */
static void
test_tzif_file(void **state)
{
	struct schedule *copy, *as_tz, *named;
	const int64_t at[] = {1710000000, 1730500000, 0, 4102444800LL};
	size_t i;

	(void)state;
	copy = daily_two("Copy/New_York");
	setenv("TZ", "Copy/New_York", 1); /* the process's zone is looked up there too */
	as_tz = daily_two(NULL);
	unsetenv("TZ");
	setenv("TZDIR", "", 1); /* empty: the default, /usr/share/zoneinfo */
	named = daily_two("America/New_York");
	setenv("TZDIR", zoneinfo, 1);
	for (i = 0; i < sizeof at / sizeof at[0]; i++) {
		assert_int_equal(schedule_next(copy, at[i]), schedule_next(named, at[i]));
		assert_int_equal(schedule_next(as_tz, at[i]), schedule_next(named, at[i]));
	}
	/* Not the same as UTC, or this would prove nothing. */
	assert_int_not_equal(schedule_next(copy, 1705276800), 1705276800 + 7200);
	schedule_free(named);
	schedule_free(as_tz);
	schedule_free(copy);
}

/*
 * Data that is neither a TZif file nor a POSIX TZ string is refused: as a zone name's file,
 * with a cause naming TZDIR; as TZ, the process's zone is UTC, as libc has it.
 */
static void
test_garbage_is_refused(void **state)
{
	static const char *const bad_files[] = {"", "TZif", "CET-1CEST,M3.5.0,M10.5.0/3", "UTC0\n"};
	static const char *const bad_tz[] = {"CET-1CEST,M3.5.0", "CET-1\n",
	                                     "CET-1CEST,M13.5.0,M10.5.0", "CET-1CEST,M3.5.0,"};
	struct schedule *s;
	unsigned char *ny, buf[512];
	char *cause;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof bad_files / sizeof bad_files[0] + 3; i++) {
		if (i < sizeof bad_files / sizeof bad_files[0])
			write_zone("Bad", bad_files[i], strlen(bad_files[i]));
		else if (i == sizeof bad_files / sizeof bad_files[0]) {
			ny = read_file(NEW_YORK, &len);
			write_zone("Bad", ny, len / 2); /* cut short */
			free(ny);
		} else if (i == sizeof bad_files / sizeof bad_files[0] + 1) /* footer cut short */
			write_zone("Bad", buf,
			           tzif_footer(buf, 3600, "CET-1CEST,M3.5.0,M10.5.0/3") - 1);
		else
			write_zone("Bad", buf, tzif_footer(buf, 3600, "CET-1CEST,M13.5.0,M10.5.0"));
		s = NULL;
		cause = NULL;
		if (schedule_parse("0 2 * * *", "Bad", &s, &cause) != -1)
			fail_msg("zone file %zu was accepted", i);
		assert_null(s);
		assert_non_null(cause);
		assert_non_null(strstr(cause, zoneinfo));
		free(cause);
	}
	for (i = 0; i < sizeof bad_tz / sizeof bad_tz[0]; i++) {
		setenv("TZ", bad_tz[i], 1);
		assert_utc(daily_two(NULL));
	}
	unsetenv("TZ");
}

/* TZDIR moves where names are looked up, not what a name may be: none leaves the directory. */
static void
test_names_stay_under_tzdir(void **state)
{
	static const char *const bad[] = {
	    "../Outside", "./Inside", "Copy/../Inside", "Copy//New_York", "Inside/", outside, ""};
	struct schedule *s;
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s = NULL;
		cause = NULL;
		if (schedule_parse("0 2 * * *", bad[i], &s, &cause) != -1)
			fail_msg("zone \"%s\" was accepted", bad[i]);
		assert_null(s);
		free(cause);
	}
	/* What they name is there: they are refused for their names. */
	schedule_free(daily_two("Inside"));
	/* As TZ, such a name is no zone either (nor a POSIX TZ string): UTC. */
	setenv("TZ", "../Outside", 1);
	assert_utc(daily_two(NULL));
	unsetenv("TZ");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_posix_string),
	    cmocka_unit_test(test_tzif_file),
	    cmocka_unit_test(test_garbage_is_refused),
	    cmocka_unit_test(test_names_stay_under_tzdir),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
