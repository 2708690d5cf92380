/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_tz.c: time zones as schedules load them, then the fire times of a few schedules in the
 * zone around a few instants (schedule_next, schedule_prev), which walk the zone's transitions
 * and its footer rule.
 *
 * Input: a TZif file (it starts with "TZif"), written to a private temporary directory that
 * is TZDIR and loaded by name (schedule_parse with the zone "Fuzz", tz_load); anything else is
 * a POSIX TZ string, the process's zone (TZ, schedule_parse with no zone). The file is removed
 * after each input, so the directory is empty when TZ is looked up in it as a zone name.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Daily in a DST gap and overlap, every quarter hour (30- and 45-minute offsets), @every. */
static const char *const fuzz_tz_specs[] = {"30 2 * * *", "0 1 * * *", "*/15 * * * *", "@every 7h"};

/* 1901, before the epoch, the epoch, 2001, 2024 around DST changes, 2100, year 9999. */
static const int64_t fuzz_tz_instants[] = {
    -2147483648LL, -1, 0, 1000000000, 1711846800, 1730595600, 4102444800LL, 253402300000LL};

static char fuzz_tz_dir[] = "/tmp/lk-fuzz-tz.XXXXXX";
static char fuzz_tz_file[sizeof fuzz_tz_dir + 8];

/* Remove the temporary directory at exit. */
static void
fuzz_tz_cleanup(void)
{
	unlink(fuzz_tz_file);
	rmdir(fuzz_tz_dir);
}

/* Create the temporary directory once, and make it TZDIR. */
static void
fuzz_tz_setup(void)
{
	if (fuzz_tz_file[0] != '\0')
		return;
	if (mkdtemp(fuzz_tz_dir) == NULL) {
		perror("fuzz_tz: mkdtemp");
		abort();
	}
	atexit(fuzz_tz_cleanup);
	snprintf(fuzz_tz_file, sizeof fuzz_tz_file, "%s/Fuzz", fuzz_tz_dir);
	setenv("TZDIR", fuzz_tz_dir, 1);
}

/* Write the input as the zone file "Fuzz". */
static void
fuzz_tz_write(const uint8_t *data, size_t size)
{
	FILE *f = fopen(fuzz_tz_file, "wb");

	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
		perror("fuzz_tz: writing the zone file");
		abort();
	}
}

/* Each schedule's next fire times, in the zone, after each instant; and its previous. */
static void
fuzz_tz_schedules(const char *zone)
{
	struct schedule *s;
	char *cause = NULL;
	int64_t t, prev;
	size_t i, j, k;

	for (i = 0; i < sizeof fuzz_tz_specs / sizeof fuzz_tz_specs[0]; i++) {
		if (schedule_parse(fuzz_tz_specs[i], zone, &s, &cause) != 0) {
			free(cause); /* a zone file that is no zone */
			return;
		}
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
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *tz;

	if (size > (1 << 20))
		return 0;
	fuzz_tz_setup();
	if (size >= 4 && memcmp(data, "TZif", 4) == 0) {
		fuzz_tz_write(data, size);
		fuzz_tz_schedules("Fuzz");
		unlink(fuzz_tz_file);
		return 0;
	}
	/*
	 * A POSIX TZ string as TZ. One with a NUL cannot be an environment variable; one that
	 * starts with ':' or '/' names a file, which a fuzzer must not pick.
	 */
	if (size == 0 || memchr(data, '\0', size) != NULL || data[0] == ':' || data[0] == '/')
		return 0;
	tz = malloc(size + 1);
	memcpy(tz, data, size);
	tz[size] = '\0';
	setenv("TZ", tz, 1);
	free(tz);
	fuzz_tz_schedules(NULL);
	return 0;
}
