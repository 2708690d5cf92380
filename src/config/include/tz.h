/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* tz.h: time zones (TZif files and POSIX TZ strings) and the calendar schedules search in. */
#ifndef TZ_H
#define TZ_H

#include <stddef.h>
#include <stdint.h>

struct tz;

/* A stretch of time with one UTC offset, from start (a transition) to end. */
struct tz_seg {
	int64_t start, end;
	int32_t off, prev_off;
};

/*
 * Load the zone called name (an IANA name, no "." or ".." element, looked up under $TZDIR,
 * else /usr/share/zoneinfo: a TZif file, RFC 8536), or for NULL the process's zone as libc
 * finds it (TZ: a zone name, a file or a POSIX TZ string such as
 * "CET-1CEST,M3.5.0,M10.5.0/3"; else /etc/localtime, else UTC). On error returns -1 with
 * *cause naming the fix (caller frees).
 */
int tz_load(const char *name, struct tz **out, char **cause);
void tz_free(struct tz *);

/* The stretch of the zone's timeline with one UTC offset that contains instant t. */
void tz_segment(const struct tz *, int64_t t, struct tz_seg *);

/* The proleptic Gregorian calendar, in days since 1970-01-01. */
int64_t tz_floordiv(int64_t a, int64_t b);
int64_t tz_days_from_civil(int64_t y, int m, int d);
void tz_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
int tz_weekday(int64_t days);
int tz_month_days(int64_t y, int m);

#endif
