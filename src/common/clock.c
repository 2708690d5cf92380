/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * clock.c: the clocks leasekeeper measures with.
 *
 * Lease deadlines use CLOCK_BOOTTIME rather than CLOCK_MONOTONIC: both are immune to
 * wall-clock steps, but only BOOTTIME keeps counting while the host is suspended, and the
 * ZooKeeper server keeps counting a session's timeout while we sleep. A deadline that a
 * suspend silently postponed would let a job outlive its lease after resume.
 */

#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "log.h"

/* Nanoseconds on CLOCK_BOOTTIME, shared by every process of the host. */
uint64_t
clock_now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		fatal("clock_gettime(CLOCK_BOOTTIME)");
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Milliseconds since the Unix epoch, for records that people read. */
uint64_t
clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ULL + (uint64_t)ts.tv_nsec / 1000000ULL;
}

/* Format a wall-clock time in milliseconds as 2026-01-02T03:04:05.678Z. */
void
clock_iso8601(uint64_t wall_ms, char *buf, unsigned long len)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", base, (unsigned)(wall_ms % 1000));
}
