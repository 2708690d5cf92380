/* Runs in: the main process. */
/*
 * schedule.c: when a job runs: @continuous, cron expressions and @every intervals.
 *
 * Time zones. We read the zone's TZif file under /usr/share/zoneinfo ourselves (RFC 8536:
 * the transition table, then the POSIX TZ string in the footer for the years after it)
 * instead of switching TZ with setenv+tzset around localtime/mktime: that would touch state
 * the rest of the process shares, and mktime guesses inside gaps and overlaps where we need
 * an exact answer. A NULL zone follows libc's rules for the process's zone: TZ (a zone name,
 * a file or a POSIX TZ string), else /etc/localtime, else UTC. Each schedule keeps its own
 * copy of the zone, so a reload picks up new tzdata.
 *
 * Search. A zone's timeline is a run of segments with a constant UTC offset. Inside one
 * segment local time is UTC plus a constant, so the next (or previous) match is a plain
 * calendar search on wall-clock time, which skips months and days that cannot match; no
 * minute-by-minute scanning. The daylight-saving policy (docs/schedules.md) acts only at
 * segment edges, and only for jobs with a fixed hour field (no '*' and no step in it):
 *   - clocks jump forward: if a matching wall time was skipped, the job fires once, at the
 *     instant of the jump; jobs with a '*' or stepped hour field just skip the lost times;
 *   - clocks go back: a repeated wall time fires at its first occurrence only; jobs with a
 *     '*' or stepped hour field fire at every occurrence.
 */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "duration.h"
#include "schedule.h"
#include "xmalloc.h"

#define SCHEDULE_ZONEINFO     "/usr/share/zoneinfo"
#define SCHEDULE_DAY          86400
#define SCHEDULE_TIME_MIN     (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define SCHEDULE_TIME_MAX     253402300799LL   /* 9999-12-31T23:59:59Z */
#define SCHEDULE_NEXT_HORIZON (401LL * 366 * SCHEDULE_DAY)
#define SCHEDULE_PREV_HORIZON (400LL * SCHEDULE_DAY)
#define SCHEDULE_EDGE_LO      (INT64_MIN / 4)
#define SCHEDULE_EDGE_HI      (INT64_MAX / 4)
#define SCHEDULE_NONE         INT64_MIN
#define SCHEDULE_TZIF_MAX     (1 << 20)

/* A date in a POSIX TZ rule: Jn, n or Mm.w.d, and the local time of day it takes effect. */
struct schedule_rule_date {
	char kind; /* 'J', 'D' (zero-based day of year) or 'M' */
	int day, month, week, wday;
	int32_t secs;
};

/* A time zone: the offset changes from the TZif table, then the footer rule. */
struct schedule_zone {
	int64_t *times; /* instants at which the offset changes */
	int32_t *offs;  /* the offset from times[i] on */
	size_t n;
	int32_t first; /* the offset before times[0] */
	int has_rule;
	int rule_dst;
	int32_t std_off, dst_off;
	struct schedule_rule_date start, end;
};

/* A stretch of time with one UTC offset, from start (a transition) to end. */
struct schedule_seg {
	int64_t start, end;
	int32_t off, prev_off;
};

struct schedule {
	enum schedule_kind kind;
	char *text;
	char *tz;
	struct schedule_zone zone;

	uint64_t minutes, hours, days, months, weekdays; /* bit i set: value i matches */
	int dom_star, dow_star;
	int fixed_hour;
	int never;

	int64_t every; /* seconds */
};

static const char *const schedule_month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const schedule_day_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

static const struct schedule_field {
	const char *name;
	int min, max;
	const char *const *names;
	int nnames, name_base;
	const char *values;
} schedule_fields[5] = {
    {"minute", 0, 59, NULL, 0, 0, "0-59"},
    {"hour", 0, 23, NULL, 0, 0, "0-23"},
    {"day-of-month", 1, 31, NULL, 0, 0, "1-31"},
    {"month", 1, 12, schedule_month_names, 12, 1, "1-12 or JAN-DEC"},
    {"day-of-week", 0, 7, schedule_day_names, 7, 0, "0-7 (0 and 7 are Sunday) or SUN-SAT"},
};

static const struct {
	const char *name, *expr;
} schedule_aliases[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

#define SCHEDULE_FIELDS_HINT "(minute hour day-of-month month day-of-week)"
#define SCHEDULE_SYNTAX_HINT "write numbers, ranges (1-5), lists (1,5) and steps (*/5)"

/* ---- Calendar arithmetic (proleptic Gregorian, days since 1970-01-01) ---- */

/* Floor division for a positive divisor. */
static int64_t
schedule_floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* Days since the epoch of y-m-d. */
static int64_t
schedule_days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* The date of a day since the epoch. */
static void
schedule_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Day of the week of a day since the epoch, 0 = Sunday. */
static int
schedule_weekday(int64_t days)
{
	return (int)(days + 4 - schedule_floordiv(days + 4, 7) * 7);
}

/* Whether y is a leap year. */
static int
schedule_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The number of days in month m of year y. */
static int
schedule_month_days(int64_t y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return days[m - 1] + (m == 2 && schedule_leap(y));
}

/* ---- Time zones ---- */

/* Read a big-endian 32-bit integer. */
static int32_t
schedule_be32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	                 (uint32_t)p[3]);
}

/* Read a big-endian 64-bit integer. */
static int64_t
schedule_be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)(uint32_t)schedule_be32(p) << 32 |
	                 (uint64_t)(uint32_t)schedule_be32(p + 4));
}

/* Parse a POSIX TZ name (alphabetic, or <quoted>); returns the rest or NULL. */
static const char *
schedule_posix_name(const char *p)
{
	const char *q;

	if (*p == '<') {
		q = strchr(p, '>');
		return (q == NULL || q == p + 1) ? NULL : q + 1;
	}
	for (q = p; isalpha((unsigned char)*q); q++)
		;
	return q - p < 3 ? NULL : q;
}

/* Parse [+-]hh[:mm[:ss]] with hours up to maxh; returns the rest or NULL. */
static const char *
schedule_posix_hms(const char *p, int maxh, int32_t *secs)
{
	int sign = 1, h = 0, m = 0, s = 0, n;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	for (n = 0; isdigit((unsigned char)*p) && n < 3; n++)
		h = h * 10 + (*p++ - '0');
	if (n == 0 || h > maxh)
		return NULL;
	if (*p == ':') {
		p++;
		if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
			return NULL;
		m = (p[0] - '0') * 10 + (p[1] - '0');
		p += 2;
		if (*p == ':') {
			p++;
			if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
				return NULL;
			s = (p[0] - '0') * 10 + (p[1] - '0');
			p += 2;
		}
		if (m > 59 || s > 59)
			return NULL;
	}
	*secs = sign * (h * 3600 + m * 60 + s);
	return p;
}

/* Parse a number of at most 3 digits within [lo, hi]; returns the rest or NULL. */
static const char *
schedule_posix_num(const char *p, int lo, int hi, int *out)
{
	int n = 0, v = 0;

	while (isdigit((unsigned char)*p) && n < 3) {
		v = v * 10 + (*p++ - '0');
		n++;
	}
	if (n == 0 || v < lo || v > hi)
		return NULL;
	*out = v;
	return p;
}

/* Parse a rule date (Jn, n or Mm.w.d) and its optional /time; returns the rest or NULL. */
static const char *
schedule_posix_date(const char *p, struct schedule_rule_date *d)
{
	memset(d, 0, sizeof *d);
	if (*p == 'J') {
		d->kind = 'J';
		p = schedule_posix_num(p + 1, 1, 365, &d->day);
	} else if (*p == 'M') {
		d->kind = 'M';
		p = schedule_posix_num(p + 1, 1, 12, &d->month);
		if (p == NULL || *p++ != '.')
			return NULL;
		p = schedule_posix_num(p, 1, 5, &d->week);
		if (p == NULL || *p++ != '.')
			return NULL;
		p = schedule_posix_num(p, 0, 6, &d->wday);
	} else {
		d->kind = 'D';
		p = schedule_posix_num(p, 0, 365, &d->day);
	}
	if (p == NULL)
		return NULL;
	d->secs = 7200;
	if (*p == '/')
		p = schedule_posix_hms(p + 1, 167, &d->secs);
	return p;
}

/* The day (since the epoch) a rule date falls on in year y. */
static int64_t
schedule_rule_day(const struct schedule_rule_date *d, int64_t y)
{
	int64_t first;
	int day;

	switch (d->kind) {
	case 'J':
		return schedule_days_from_civil(y, 1, 1) + d->day - 1 +
		       (schedule_leap(y) && d->day >= 60);
	case 'D':
		return schedule_days_from_civil(y, 1, 1) + d->day;
	}
	first = schedule_days_from_civil(y, d->month, 1);
	day = 1 + (d->wday - schedule_weekday(first) + 7) % 7 + (d->week - 1) * 7;
	while (day > schedule_month_days(y, d->month))
		day -= 7;
	return first + day - 1;
}

/* The instants DST starts and ends in year y, in UTC. */
static void
schedule_rule_year(const struct schedule_zone *z, int64_t y, int64_t *start, int64_t *end)
{
	*start = schedule_rule_day(&z->start, y) * SCHEDULE_DAY + z->start.secs - z->std_off;
	*end = schedule_rule_day(&z->end, y) * SCHEDULE_DAY + z->end.secs - z->dst_off;
}

/* Parse a POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3" into z's rule. */
static int
schedule_posix_parse(const char *p, struct schedule_zone *z)
{
	int32_t v;
	int64_t s0, e0, s1, e1;

	if ((p = schedule_posix_name(p)) == NULL || (p = schedule_posix_hms(p, 24, &v)) == NULL)
		return -1;
	z->has_rule = 1;
	z->std_off = -v;
	z->dst_off = z->std_off;
	z->rule_dst = 0;
	if (*p == '\0')
		return 0;
	if ((p = schedule_posix_name(p)) == NULL)
		return -1;
	z->dst_off = z->std_off + 3600;
	if (*p != '\0' && *p != ',') {
		if ((p = schedule_posix_hms(p, 24, &v)) == NULL)
			return -1;
		z->dst_off = -v;
	}
	if (*p == '\0') {
		/* No rule: POSIX leaves it to the implementation; glibc uses the US rule. */
		p = ",M3.2.0,M11.1.0";
	}
	if (*p++ != ',' || (p = schedule_posix_date(p, &z->start)) == NULL)
		return -1;
	if (*p++ != ',' || (p = schedule_posix_date(p, &z->end)) == NULL || *p != '\0')
		return -1;
	z->rule_dst = z->dst_off != z->std_off;

	/* DST all year is written "0/0,J365/25": fold it into a constant offset. */
	schedule_rule_year(z, 2001, &s0, &e0);
	schedule_rule_year(z, 2002, &s1, &e1);
	if (z->rule_dst && s0 <= schedule_days_from_civil(2001, 1, 1) * SCHEDULE_DAY - z->std_off &&
	    e0 >= s1) {
		z->std_off = z->dst_off;
		z->rule_dst = 0;
	}
	return 0;
}

/* Append a transition to z unless it leaves the offset unchanged. */
static int
schedule_zone_add(struct schedule_zone *z, int64_t t, int32_t off)
{
	int32_t cur = z->n > 0 ? z->offs[z->n - 1] : z->first;

	if (z->n > 0 && t <= z->times[z->n - 1])
		return -1;
	if (off == cur)
		return 0;
	z->times = xreallocarray(z->times, z->n + 1, sizeof *z->times);
	z->offs = xreallocarray(z->offs, z->n + 1, sizeof *z->offs);
	z->times[z->n] = t;
	z->offs[z->n] = off;
	z->n++;
	return 0;
}

/* Parse a TZif file (RFC 8536, versions 1 to 4) into z. */
static int
schedule_tzif_parse(const unsigned char *buf, size_t len, struct schedule_zone *z)
{
	const unsigned char *p = buf, *end = buf + len, *idx, *types, *foot;
	size_t isut, isstd, leap, ntimes, ntypes, nchars, tsize, data, i;
	char footer[256];
	int32_t off;
	int64_t t, prev = INT64_MIN;

	for (tsize = 4;; tsize = 8) {
		if ((size_t)(end - p) < 44 || memcmp(p, "TZif", 4) != 0)
			return -1;
		isut = (uint32_t)schedule_be32(p + 20);
		isstd = (uint32_t)schedule_be32(p + 24);
		leap = (uint32_t)schedule_be32(p + 28);
		ntimes = (uint32_t)schedule_be32(p + 32);
		ntypes = (uint32_t)schedule_be32(p + 36);
		nchars = (uint32_t)schedule_be32(p + 40);
		if (ntimes > 100000 || ntypes > 256 || nchars > 65536 || leap > 100000 ||
		    isut > 256 || isstd > 256)
			return -1;
		data =
		    ntimes * (tsize + 1) + ntypes * 6 + nchars + leap * (tsize + 4) + isstd + isut;
		if ((size_t)(end - p) - 44 < data)
			return -1;
		if (tsize == 8 || p[4] == '\0')
			break;
		p += 44 + data; /* version 2+: skip the 32-bit block */
	}
	if (ntypes == 0 || leap != 0)
		return -1; /* no types, or leap seconds ("right/" zones) */
	p += 44;
	idx = p + ntimes * tsize;
	types = idx + ntimes;
	for (i = 0; i < ntypes; i++) {
		off = schedule_be32(types + i * 6);
		if (off < -89999 || off > 93599 || types[i * 6 + 4] > 1)
			return -1;
	}
	z->first = schedule_be32(types);
	for (i = 0; i < ntimes; i++) {
		t = tsize == 8 ? schedule_be64(p + i * 8) : schedule_be32(p + i * 4);
		if (idx[i] >= ntypes || t <= prev)
			return -1;
		prev = t;
		if (schedule_zone_add(z, t, schedule_be32(types + idx[i] * 6)) != 0)
			return -1;
	}
	if (tsize == 4)
		return 0;
	foot = types + ntypes * 6 + nchars + leap * 12 + isstd + isut;
	if (foot >= end || *foot != '\n')
		return -1;
	for (i = 0, foot++; foot < end && *foot != '\n' && i < sizeof footer - 1; foot++)
		footer[i++] = (char)*foot;
	if (foot >= end)
		return -1;
	footer[i] = '\0';
	if (i == 0)
		return 0;
	return schedule_posix_parse(footer, z);
}

/* Parse a zone from memory: a TZif file, or a POSIX TZ string (no NUL, under 256 bytes). */
static int
schedule_zone_from_buf(const void *buf, size_t len, struct schedule_zone *z)
{
	char tz[256];
	int r = -1;

	memset(z, 0, sizeof *z);
	if (len >= 4 && memcmp(buf, "TZif", 4) == 0)
		r = schedule_tzif_parse(buf, len, z);
	else if (len > 0 && len < sizeof tz && memchr(buf, '\0', len) == NULL) {
		memcpy(tz, buf, len);
		tz[len] = '\0';
		r = schedule_posix_parse(tz, z);
	}
	if (r != 0) {
		free(z->times);
		free(z->offs);
		memset(z, 0, sizeof *z);
	}
	return r;
}

/* Replace s's zone with one parsed from memory; the zone loaders come through here. */
int
schedule_zone_parse(struct schedule *s, const void *buf, size_t len, char **cause)
{
	struct schedule_zone z;

	if (schedule_zone_from_buf(buf, len, &z) != 0) {
		*cause = xstrdup("bad time zone data: neither a TZif file (RFC 8536) nor a POSIX "
		                 "TZ string such as \"CET-1CEST,M3.5.0,M10.5.0/3\"");
		return -1;
	}
	free(s->zone.times);
	free(s->zone.offs);
	s->zone = z;
	return 0;
}

/* Read the TZif file at path; returns 0, or -1 with errno (EINVAL: not a TZif file). */
static int
schedule_zone_read(const char *path, unsigned char **out, size_t *outlen)
{
	struct stat sb;
	unsigned char *buf;
	ssize_t r;
	size_t done = 0;
	int fd, error;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) || sb.st_size > SCHEDULE_TZIF_MAX) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	while (done < (size_t)sb.st_size) {
		r = read(fd, buf + done, (size_t)sb.st_size - done);
		if (r <= 0) {
			error = r == 0 ? EINVAL : errno;
			free(buf);
			close(fd);
			errno = error;
			return -1;
		}
		done += (size_t)r;
	}
	close(fd);
	if (done < 4 || memcmp(buf, "TZif", 4) != 0) {
		free(buf);
		errno = EINVAL;
		return -1;
	}
	*out = buf;
	*outlen = done;
	return 0;
}

/* Load the TZif file at path as s's zone; returns 0, or -1 (not readable or not TZif). */
static int
schedule_zone_load_file(struct schedule *s, const char *path)
{
	unsigned char *buf;
	size_t len;
	char *cause = NULL;
	int r;

	if (schedule_zone_read(path, &buf, &len) != 0)
		return -1;
	if ((r = schedule_zone_parse(s, buf, len, &cause)) != 0)
		free(cause);
	free(buf);
	return r;
}

/* Whether name looks like an IANA zone name we may look up under the zoneinfo directory. */
static int
schedule_zone_name_ok(const char *name)
{
	const char *p, *c = name;
	size_t len = strlen(name);

	if (len == 0 || len > 255 || *name == '/')
		return 0;
	for (p = name;; p++) {
		if (*p == '/' || *p == '\0') {
			if (p == c || (p - c == 1 && c[0] == '.') ||
			    (p - c == 2 && c[0] == '.' && c[1] == '.'))
				return 0;
			if (*p == '\0')
				return 1;
			c = p + 1;
		} else if (!isalnum((unsigned char)*p) && strchr("_-+.", *p) == NULL)
			return 0;
	}
}

/* Load the process's zone the way libc does: TZ, else /etc/localtime, else UTC. */
static void
schedule_zone_load_local(struct schedule *s)
{
	const char *tz = getenv("TZ");
	char *path, *cause = NULL;
	int r = -1;

	if (tz == NULL) {
		schedule_zone_load_file(s, "/etc/localtime");
		return;
	}
	if (*tz == ':')
		tz++;
	if (*tz == '/')
		r = schedule_zone_load_file(s, tz);
	else if (schedule_zone_name_ok(tz)) {
		xasprintf(&path, "%s/%s", SCHEDULE_ZONEINFO, tz);
		r = schedule_zone_load_file(s, path);
		free(path);
	}
	if (r != 0 && *tz != '\0' && schedule_zone_parse(s, tz, strlen(tz), &cause) != 0)
		free(cause);
}

/* Load the zone called name as s's, or the process's zone for NULL; else *cause names the fix. */
static int
schedule_zone_load(struct schedule *s, const char *name, char **cause)
{
	char *path;
	int r;

	if (name == NULL) {
		schedule_zone_load_local(s);
		return 0;
	}
	if (schedule_zone_name_ok(name)) {
		xasprintf(&path, "%s/%s", SCHEDULE_ZONEINFO, name);
		r = schedule_zone_load_file(s, path);
		free(path);
		if (r == 0)
			return 0;
	}
	xasprintf(cause, "unknown time zone \"%s\": use an IANA name such as Europe/Paris (see %s)",
	          name, SCHEDULE_ZONEINFO);
	return -1;
}

/* Find the segment of z's timeline that contains instant t. */
static void
schedule_zone_segment(const struct schedule_zone *z, int64_t t, struct schedule_seg *seg)
{
	size_t lo = 0, hi = z->n, mid, i, j, k;
	int64_t y, yy, at[6], tmp, jan1, s, e;
	int32_t of[6], tmpo, cur;
	int mo, d;

	if (z->n > 0 && t < z->times[z->n - 1]) {
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (z->times[mid] <= t)
				lo = mid + 1;
			else
				hi = mid;
		}
		seg->end = z->times[lo];
		if (lo == 0) {
			seg->start = SCHEDULE_EDGE_LO;
			seg->off = seg->prev_off = z->first;
		} else {
			seg->start = z->times[lo - 1];
			seg->off = z->offs[lo - 1];
			seg->prev_off = lo >= 2 ? z->offs[lo - 2] : z->first;
		}
		return;
	}

	/* After the table: its last offset, then the footer rule if it has DST. */
	seg->end = SCHEDULE_EDGE_HI;
	if (z->n > 0) {
		seg->start = z->times[z->n - 1];
		seg->off = z->offs[z->n - 1];
		seg->prev_off = z->n >= 2 ? z->offs[z->n - 2] : z->first;
	} else {
		seg->start = SCHEDULE_EDGE_LO;
		seg->off = seg->prev_off = z->has_rule ? z->std_off : z->first;
	}
	if (!z->has_rule || !z->rule_dst)
		return;

	/* The rule's transitions in the year before, of and after t, in order. */
	schedule_civil_from_days(schedule_floordiv(t, SCHEDULE_DAY), &y, &mo, &d);
	for (k = 0, yy = y - 1; yy <= y + 1; yy++) {
		schedule_rule_year(z, yy, &s, &e);
		at[k] = s;
		of[k++] = z->dst_off;
		at[k] = e;
		of[k++] = z->std_off;
	}
	for (i = 1; i < 6; i++) {
		for (j = i; j > 0 && at[j - 1] > at[j]; j--) {
			tmp = at[j], at[j] = at[j - 1], at[j - 1] = tmp;
			tmpo = of[j], of[j] = of[j - 1], of[j - 1] = tmpo;
		}
	}
	jan1 = schedule_days_from_civil(y - 1, 1, 1) * SCHEDULE_DAY;
	if (seg->start < jan1) {
		/* The state at the start of year y-1 comes from the rule, not the table. */
		schedule_rule_year(z, y - 1, &s, &e);
		seg->start = jan1;
		seg->off = seg->prev_off = s < e ? z->std_off : z->dst_off;
	}
	cur = seg->off;
	for (i = 0; i < 6; i++) {
		if (at[i] <= seg->start || (i + 1 < 6 && at[i + 1] == at[i]) || of[i] == cur)
			continue;
		if (at[i] > t) {
			seg->end = at[i];
			return;
		}
		seg->prev_off = cur;
		seg->start = at[i];
		seg->off = cur = of[i];
	}
	seg->end = schedule_days_from_civil(y + 2, 1, 1) * SCHEDULE_DAY;
}

/* ---- Parsing ---- */

/* Set *cause to "<field> field "<text>"[, item "<item>"]: <message>". */
static int __attribute__((format(printf, 5, 6)))
schedule_field_error(char **cause, const struct schedule_field *f, const char *text,
                     const char *item, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		msg = NULL;
	va_end(ap);
	if (msg == NULL)
		msg = xstrdup("out of memory");
	if (strcmp(text, item) == 0)
		xasprintf(cause, "%s field \"%s\": %s", f->name, text, msg);
	else
		xasprintf(cause, "%s field \"%s\", item \"%s\": %s", f->name, text, item, msg);
	free(msg);
	return -1;
}

/* Parse one value (a number or a name) of field f from [p, end). */
static int
schedule_field_value(const struct schedule_field *f, const char *text, const char *item,
                     const char *p, const char *end, int *out, char **cause)
{
	size_t len = (size_t)(end - p);
	long v = 0;
	int i;

	if (len == 0)
		return schedule_field_error(cause, f, text, item, "a value is missing: %s",
		                            SCHEDULE_SYNTAX_HINT);
	if (isdigit((unsigned char)*p)) {
		for (; p < end; p++) {
			if (!isdigit((unsigned char)*p))
				return schedule_field_error(cause, f, text, item,
				                            "unexpected \"%c\": %s", *p,
				                            SCHEDULE_SYNTAX_HINT);
			if (v < 1000)
				v = v * 10 + (*p - '0');
		}
		if (v < f->min || v > f->max)
			return schedule_field_error(cause, f, text, item, "values run %s",
			                            f->values);
		*out = (int)v;
		return 0;
	}
	if (isalpha((unsigned char)*p)) {
		if (f->names == NULL)
			return schedule_field_error(cause, f, text, item,
			                            "names are allowed only in the month and "
			                            "day-of-week fields: values run %s",
			                            f->values);
		for (i = 0; i < f->nnames; i++) {
			if (len == 3 && strncasecmp(p, f->names[i], 3) == 0) {
				*out = i + f->name_base;
				return 0;
			}
		}
		return schedule_field_error(
		    cause, f, text, item, "\"%.*s\" is not a name this field knows: values run %s",
		    (int)len, p, f->values);
	}
	if (*p == '-')
		return schedule_field_error(cause, f, text, item,
		                            "negative values are not allowed: values run %s",
		                            f->values);
	return schedule_field_error(cause, f, text, item, "unexpected \"%c\": %s", *p,
	                            SCHEDULE_SYNTAX_HINT);
}

/* Parse one comma-separated item of field f ("*", "5", "1-5", "*" or "1-5" or "5" + "/2"). */
static int
schedule_field_item(const struct schedule_field *f, const char *text, const char *item,
                    uint64_t *mask, char **cause)
{
	const char *slash, *dash, *end = item + strlen(item), *p;
	int lo, hi, step = 1, v;

	if (strchr(item, '?') != NULL)
		return schedule_field_error(cause, f, text, item,
		                            "\"?\" is not supported: write \"*\"");
	if (strchr(item, '#') != NULL)
		return schedule_field_error(
		    cause, f, text, item,
		    "\"#\" (nth weekday) is not supported: run the job on the days it can fall on "
		    "(e.g. day-of-month 8-14 for the second) and test the weekday in the command, "
		    "e.g. [ \"$(date +%%u)\" = 5 ]");
	if (f == &schedule_fields[2] &&
	    (strcasecmp(item, "L") == 0 || strcasecmp(item, "LW") == 0 ||
	     (end > item && (end[-1] == 'W' || end[-1] == 'w') && isdigit((unsigned char)item[0]))))
		return schedule_field_error(
		    cause, f, text, item,
		    "\"L\" and \"W\" are not supported: run the job on 28-31 and test the date in "
		    "the command, e.g. [ \"$(date -d tomorrow +%%d)\" = 01 ]");

	if ((slash = strchr(item, '/')) != NULL) {
		p = slash + 1;
		if (*p == '\0')
			return schedule_field_error(cause, f, text, item,
			                            "the step is missing: write e.g. \"*/5\"");
		for (step = 0; *p != '\0'; p++) {
			if (!isdigit((unsigned char)*p))
				return schedule_field_error(
				    cause, f, text, item,
				    "the step must be a number, e.g. \"*/5\"");
			if (step < 1000)
				step = step * 10 + (*p - '0');
		}
		if (step < 1 || step > f->max - f->min)
			return schedule_field_error(cause, f, text, item, "the step must be 1-%d",
			                            f->max - f->min);
		end = slash;
	}
	if (end == item)
		return schedule_field_error(cause, f, text, item,
		                            "a step needs something to step through before the "
		                            "\"/\": write e.g. \"*/5\" or \"0-30/5\"");
	if (end - item == 1 && *item == '*') {
		lo = f->min;
		hi = f->max;
	} else if (*item == '*') {
		return schedule_field_error(cause, f, text, item,
		                            "\"*\" stands alone: write \"*\", \"*/N\" or a range "
		                            "such as \"%d-%d\"",
		                            f->min, f->max);
	} else {
		dash = memchr(item + 1, '-', (size_t)(end - item - 1));
		if (dash == NULL) {
			if (schedule_field_value(f, text, item, item, end, &lo, cause) != 0)
				return -1;
			hi = slash != NULL ? f->max : lo;
		} else {
			if (memchr(dash + 1, '-', (size_t)(end - dash - 1)) != NULL)
				return schedule_field_error(cause, f, text, item,
				                            "a range has two ends: write e.g. "
				                            "\"1-5\"");
			if (schedule_field_value(f, text, item, item, dash, &lo, cause) != 0 ||
			    schedule_field_value(f, text, item, dash + 1, end, &hi, cause) != 0)
				return -1;
			if (f == &schedule_fields[4] && hi == 0 && lo > 0)
				hi = 7; /* FRI-SUN */
			if (lo > hi)
				return schedule_field_error(
				    cause, f, text, item,
				    "the range runs backwards: write the smaller value first, and "
				    "a "
				    "range that wraps as a list, e.g. \"22-23,0-2\"");
		}
	}
	for (v = lo; v <= hi; v += step)
		*mask |= 1ULL << v;
	return 0;
}

/* Parse field number i of a cron expression into *mask. */
static int
schedule_field_parse(int i, const char *text, uint64_t *mask, char **cause)
{
	const struct schedule_field *f = &schedule_fields[i];
	const char *p = text, *comma;
	char *item;
	int r;

	*mask = 0;
	for (;;) {
		comma = strchr(p, ',');
		item = comma != NULL ? xstrndup(p, (size_t)(comma - p)) : xstrdup(p);
		if (*item == '\0') {
			free(item);
			return schedule_field_error(cause, f, text, text,
			                            "empty list item: separate values with single "
			                            "commas, e.g. \"1,15\"");
		}
		r = schedule_field_item(f, text, item, mask, cause);
		free(item);
		if (r != 0)
			return -1;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	if (i == 4 && (*mask & (1ULL << 7))) {
		*mask &= ~(1ULL << 7);
		*mask |= 1;
	}
	return 0;
}

/* Whether a cron day-of-month and month can ever meet (false for "30 2" and "31 4,6"). */
static int
schedule_cron_possible(const struct schedule *s)
{
	int m, d;

	if (!s->dom_star && !s->dow_star)
		return 1; /* either matches: every month has every weekday */
	for (m = 1; m <= 12; m++) {
		if (!(s->months & (1ULL << m)))
			continue;
		for (d = 1; d <= (m == 2 ? 29 : schedule_month_days(2001, m)); d++) {
			if (s->days & (1ULL << d))
				return 1;
		}
	}
	return 0;
}

/* Whether s is a cron schedule that can never fire, such as "0 0 30 2 *". */
int
schedule_never(const struct schedule *s)
{
	return s->kind == SCHEDULE_CRON && s->never;
}

/* Parse a 5-field cron expression into s. */
static int
schedule_cron_parse(struct schedule *s, const char *expr, char **cause)
{
	char *copy, *fields[6], *p, *save = NULL;
	uint64_t *masks[5] = {&s->minutes, &s->hours, &s->days, &s->months, &s->weekdays};
	int n = 0, i;

	copy = xstrdup(expr);
	for (p = strtok_r(copy, " \t", &save); p != NULL; p = strtok_r(NULL, " \t", &save)) {
		if (n < 6)
			fields[n] = p;
		n++;
	}
	if (n != 5) {
		free(copy);
		if (n == 6)
			xasprintf(cause, "expected 5 fields " SCHEDULE_FIELDS_HINT
			                 ", got 6: leasekeeper does not take a seconds field");
		else if (n > 6)
			xasprintf(cause,
			          "expected 5 fields " SCHEDULE_FIELDS_HINT
			          ", got %d: write only the 5 time fields (no seconds, year or "
			          "command)",
			          n);
		else
			xasprintf(cause,
			          "expected 5 fields " SCHEDULE_FIELDS_HINT
			          ", got %d: write all five, e.g. \"0 3 * * *\" for 03:00 daily",
			          n);
		return -1;
	}
	for (i = 0; i < 5; i++) {
		if (schedule_field_parse(i, fields[i], masks[i], cause) != 0) {
			free(copy);
			return -1;
		}
	}
	s->dom_star = fields[2][0] == '*';
	s->dow_star = fields[4][0] == '*';
	s->fixed_hour = strpbrk(fields[1], "*/") == NULL;
	xasprintf(&s->text, "%s %s %s %s %s", fields[0], fields[1], fields[2], fields[3],
	          fields[4]);
	free(copy);
	s->never = !schedule_cron_possible(s);
	s->kind = SCHEDULE_CRON;
	return 0;
}

/* Parse the DURATION of "@every DURATION" into s. */
static int
schedule_every_parse(struct schedule *s, const char *arg, char **cause)
{
	char buf[64], *why;
	uint64_t ms;

	while (isspace((unsigned char)*arg))
		arg++;
	if (*arg == '\0') {
		*cause = xstrdup("@every needs an interval: write e.g. \"@every 10m\"");
		return -1;
	}
	if (duration_parse(arg, &ms, &why) != 0) {
		xasprintf(cause, "@every: %s", why);
		free(why);
		return -1;
	}
	if (ms < 1000) {
		xasprintf(cause, "@every %s: the interval must be at least 1s", arg);
		return -1;
	}
	if (ms % 1000 != 0) {
		xasprintf(cause,
		          "@every %s: the interval must be whole seconds, e.g. \"@every %llus\"",
		          arg, (unsigned long long)(ms / 1000));
		return -1;
	}
	s->every = (int64_t)(ms / 1000);
	duration_format(ms, buf, sizeof buf);
	xasprintf(&s->text, "@every %s", buf);
	s->kind = SCHEDULE_EVERY;
	return 0;
}

/* Parse spec into a schedule in zone tz (NULL: the process's zone); on error *cause names the fix. */
int
schedule_parse(const char *spec, const char *tz, struct schedule **out, char **cause)
{
	struct schedule *s;
	const char *p = spec, *word_end;
	char *trimmed;
	size_t len, i;
	int r = -1;

	while (isspace((unsigned char)*p))
		p++;
	len = strlen(p);
	while (len > 0 && isspace((unsigned char)p[len - 1]))
		len--;
	if (len == 0) {
		*cause = xstrdup("empty schedule: write a cron expression such as \"*/5 * * * *\", "
		                 "an alias such as @daily, \"@every 10m\" or @continuous");
		return -1;
	}
	trimmed = xstrndup(p, len);
	s = xcalloc(1, sizeof *s);

	if (trimmed[0] != '@')
		r = schedule_cron_parse(s, trimmed, cause);
	else {
		for (word_end = trimmed; *word_end != '\0' && !isspace((unsigned char)*word_end);
		     word_end++)
			;
		len = (size_t)(word_end - trimmed);
		if (len == 6 && strncasecmp(trimmed, "@every", 6) == 0)
			r = schedule_every_parse(s, word_end, cause);
		else if (len == 11 && strncasecmp(trimmed, "@continuous", 11) == 0) {
			s->kind = SCHEDULE_CONTINUOUS;
			s->text = xstrdup("@continuous");
			r = 0;
		} else {
			for (i = 0; i < sizeof schedule_aliases / sizeof schedule_aliases[0]; i++) {
				if (strlen(schedule_aliases[i].name) == len &&
				    strncasecmp(trimmed, schedule_aliases[i].name, len) == 0)
					break;
			}
			if (i == sizeof schedule_aliases / sizeof schedule_aliases[0])
				xasprintf(cause,
				          "unknown schedule \"%.*s\": use @yearly, @annually, "
				          "@monthly, @weekly, @daily, @midnight, @hourly, "
				          "\"@every DURATION\" or @continuous",
				          (int)len, trimmed);
			else if (*word_end != '\0')
				xasprintf(cause,
				          "\"%s\": %s takes nothing after it: write \"%s\" alone, "
				          "or a cron expression",
				          trimmed, schedule_aliases[i].name,
				          schedule_aliases[i].name);
			else if ((r = schedule_cron_parse(s, schedule_aliases[i].expr, cause)) ==
			         0) {
				free(s->text);
				s->text = xstrdup(schedule_aliases[i].name);
			}
		}
		if (r == 0 && s->kind == SCHEDULE_CONTINUOUS && *word_end != '\0') {
			xasprintf(cause, "\"%s\": @continuous takes nothing after it", trimmed);
			r = -1;
		}
	}
	free(trimmed);
	if (r == 0 && (r = schedule_zone_load(s, tz, cause)) == 0 && tz != NULL)
		s->tz = xstrdup(tz);
	if (r != 0) {
		schedule_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* Free a schedule. */
void
schedule_free(struct schedule *s)
{
	if (s == NULL)
		return;
	free(s->zone.times);
	free(s->zone.offs);
	free(s->text);
	free(s->tz);
	free(s);
}

/* Which kind of schedule s is. */
enum schedule_kind
schedule_kind(const struct schedule *s)
{
	return s->kind;
}

/* The canonical text of s: an alias, "@every 1h30m", @continuous or the five fields. */
const char *
schedule_text(const struct schedule *s)
{
	return s->text;
}

/* The zone s was parsed with, or NULL for the process's zone. */
const char *
schedule_timezone(const struct schedule *s)
{
	return s->tz;
}

/* ---- Search ---- */

/* The lowest set bit of mask at or above k, or -1. */
static int
schedule_bit_next(uint64_t mask, int k)
{
	if (k > 63)
		return -1;
	mask &= ~0ULL << k;
	return mask == 0 ? -1 : __builtin_ctzll(mask);
}

/* The highest set bit of mask at or below k, or -1. */
static int
schedule_bit_prev(uint64_t mask, int k)
{
	if (k < 0)
		return -1;
	if (k < 63)
		mask &= (1ULL << (k + 1)) - 1;
	return mask == 0 ? -1 : 63 - __builtin_clzll(mask);
}

/* Whether the day-of-month and day-of-week fields accept a day (Vixie's rule). */
static int
schedule_day_matches(const struct schedule *s, int mday, int wday)
{
	int dom = (s->days >> mday) & 1, dow = (s->weekdays >> wday) & 1;

	if (s->dom_star || s->dow_star)
		return dom && dow;
	return dom || dow;
}

/*
 * The first matching wall time (local seconds, as if UTC) after x and before bound, or
 * SCHEDULE_NONE.
 */
static int64_t
schedule_wall_next(const struct schedule *s, int64_t x, int64_t bound)
{
	int64_t w, days, y;
	int mo, d, h, m, nh, nm;

	w = schedule_floordiv(x, 60) * 60 + 60;
	days = schedule_floordiv(w, SCHEDULE_DAY);
	h = (int)(w - days * SCHEDULE_DAY) / 3600;
	m = (int)(w - days * SCHEDULE_DAY) % 3600 / 60;
	for (;;) {
		if (days * SCHEDULE_DAY + h * 3600 + m * 60 >= bound)
			return SCHEDULE_NONE;
		schedule_civil_from_days(days, &y, &mo, &d);
		if (!(s->months & (1ULL << mo))) {
			days = mo == 12 ? schedule_days_from_civil(y + 1, 1, 1)
			                : schedule_days_from_civil(y, mo + 1, 1);
			h = m = 0;
			continue;
		}
		if (schedule_day_matches(s, d, schedule_weekday(days))) {
			while ((nh = schedule_bit_next(s->hours, h)) != -1) {
				nm = schedule_bit_next(s->minutes, nh == h ? m : 0);
				if (nm != -1) {
					w = days * SCHEDULE_DAY + nh * 3600 + nm * 60;
					return w < bound ? w : SCHEDULE_NONE;
				}
				h = nh + 1;
				m = 0;
			}
		}
		days++;
		h = m = 0;
	}
}

/* The last matching wall time at or before x and at or after lower, or SCHEDULE_NONE. */
static int64_t
schedule_wall_prev(const struct schedule *s, int64_t x, int64_t lower)
{
	int64_t w, days, y;
	int mo, d, h, m, nh, nm;

	w = schedule_floordiv(x, 60) * 60;
	days = schedule_floordiv(w, SCHEDULE_DAY);
	h = (int)(w - days * SCHEDULE_DAY) / 3600;
	m = (int)(w - days * SCHEDULE_DAY) % 3600 / 60;
	for (;;) {
		if (days * SCHEDULE_DAY + h * 3600 + m * 60 < lower)
			return SCHEDULE_NONE;
		schedule_civil_from_days(days, &y, &mo, &d);
		if (!(s->months & (1ULL << mo))) {
			days = schedule_days_from_civil(y, mo, 1) - 1;
			h = 23;
			m = 59;
			continue;
		}
		if (schedule_day_matches(s, d, schedule_weekday(days))) {
			while ((nh = schedule_bit_prev(s->hours, h)) != -1) {
				nm = schedule_bit_prev(s->minutes, nh == h ? m : 59);
				if (nm != -1) {
					w = days * SCHEDULE_DAY + nh * 3600 + nm * 60;
					return w >= lower ? w : SCHEDULE_NONE;
				}
				h = nh - 1;
				m = 59;
			}
		}
		days--;
		h = 23;
		m = 59;
	}
}

/* Whether a fixed-hour job has a wall time in the gap clocks skip at the start of seg. */
static int
schedule_gap_fires(const struct schedule *s, const struct schedule_seg *seg)
{
	if (!s->fixed_hour || seg->prev_off >= seg->off)
		return 0;
	return schedule_wall_next(s, seg->start + seg->prev_off - 1, seg->start + seg->off) !=
	       SCHEDULE_NONE;
}

/* Whether wall time w in seg already happened before seg began (clocks went back). */
static int
schedule_repeated(const struct schedule *s, const struct schedule_seg *seg, int64_t w)
{
	return s->fixed_hour && seg->prev_off > seg->off && w < seg->start + seg->prev_off;
}

/* The first cron fire time after `after`, walking the zone's segments forwards. */
static int64_t
schedule_cron_next(const struct schedule *s, int64_t after)
{
	struct schedule_seg seg;
	int64_t t = after, limit = after + SCHEDULE_NEXT_HORIZON, stop, w;

	while (t < limit) {
		schedule_zone_segment(&s->zone, t + 1, &seg);
		if (seg.start == t + 1 && schedule_gap_fires(s, &seg))
			return seg.start;
		stop = seg.end < limit ? seg.end : limit;
		w = schedule_wall_next(s, t + seg.off, stop + seg.off);
		if (w == SCHEDULE_NONE) {
			t = stop - 1;
			if (stop == limit)
				break;
			continue;
		}
		if (schedule_repeated(s, &seg, w)) {
			t = w - seg.off;
			continue;
		}
		return w - seg.off > SCHEDULE_TIME_MAX ? -1 : w - seg.off;
	}
	return -1;
}

/* The last cron fire time at or before `at`, walking the zone's segments backwards. */
static int64_t
schedule_cron_prev(const struct schedule *s, int64_t at)
{
	struct schedule_seg seg;
	int64_t t = at, floor = at - SCHEDULE_PREV_HORIZON, lower, w;

	while (t >= floor) {
		schedule_zone_segment(&s->zone, t, &seg);
		lower = seg.start > floor ? seg.start : floor;
		w = schedule_wall_prev(s, t + seg.off, lower + seg.off);
		if (w != SCHEDULE_NONE) {
			if (schedule_repeated(s, &seg, w)) {
				t = w - seg.off - 1;
				continue;
			}
			return w - seg.off;
		}
		if (seg.start < floor)
			break;
		if (schedule_gap_fires(s, &seg))
			return seg.start;
		t = seg.start - 1;
	}
	return -1;
}

/* The first fire time strictly after `after`, or -1. */
int64_t
schedule_next(const struct schedule *s, int64_t after)
{
	if (after < SCHEDULE_TIME_MIN || after > SCHEDULE_TIME_MAX)
		return -1;
	switch (s->kind) {
	case SCHEDULE_CONTINUOUS:
		return -1;
	case SCHEDULE_EVERY:
		return (schedule_floordiv(after, s->every) + 1) * s->every;
	case SCHEDULE_CRON:
		break;
	}
	if (s->never)
		return -1;
	return schedule_cron_next(s, after);
}

/* The latest fire time at or before `at`, or -1 when none within the past 400 days. */
int64_t
schedule_prev(const struct schedule *s, int64_t at)
{
	int64_t t;

	if (at < SCHEDULE_TIME_MIN || at > SCHEDULE_TIME_MAX)
		return -1;
	switch (s->kind) {
	case SCHEDULE_CONTINUOUS:
		return -1;
	case SCHEDULE_EVERY:
		t = schedule_floordiv(at, s->every) * s->every;
		return at - t > SCHEDULE_PREV_HORIZON ? -1 : t;
	case SCHEDULE_CRON:
		break;
	}
	if (s->never)
		return -1;
	return schedule_cron_prev(s, at);
}
