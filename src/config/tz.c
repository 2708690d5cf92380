/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * tz.c: time zones, read from TZif files and POSIX TZ strings, as runs of constant offset.
 *
 * We read the zone's TZif file under the zoneinfo directory ($TZDIR as glibc and tzcode
 * read it, else /usr/share/zoneinfo) ourselves (RFC 8536: the transition table, then the
 * POSIX TZ string in the footer for the years after it) instead of switching TZ with
 * setenv+tzset around localtime/mktime: that would touch state the rest of the process
 * shares, and mktime guesses inside gaps and overlaps where schedules need an exact answer.
 * A NULL zone follows libc's rules for the process's zone: TZ (a zone name, a file or a
 * POSIX TZ string), else /etc/localtime, else UTC. Each schedule keeps its own zone, so a
 * reload picks up new tzdata.
 */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tz.h"
#include "xmalloc.h"

#define TZ_ZONEINFO "/usr/share/zoneinfo"
#define TZ_DAY      86400
#define TZ_EDGE_LO  (INT64_MIN / 4)
#define TZ_EDGE_HI  (INT64_MAX / 4)
#define TZ_TZIF_MAX (1 << 20)

/* A date in a POSIX TZ rule: Jn, n or Mm.w.d, and the local time of day it takes effect. */
struct tz_rule_date {
	char kind; /* 'J', 'D' (zero-based day of year) or 'M' */
	int day, month, week, wday;
	int32_t secs;
};

/* A time zone: the offset changes from the TZif table, then the footer rule. */
struct tz {
	int64_t *times; /* instants at which the offset changes */
	int32_t *offs;  /* the offset from times[i] on */
	size_t n;
	int32_t first; /* the offset before times[0] */
	int has_rule;
	int rule_dst;
	int32_t std_off, dst_off;
	struct tz_rule_date start, end;
};

/* ---- Calendar arithmetic (proleptic Gregorian, days since 1970-01-01) ---- */

/* Floor division for a positive divisor. */
int64_t
tz_floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* Days since the epoch of y-m-d. */
int64_t
tz_days_from_civil(int64_t y, int m, int d)
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
void
tz_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
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
int
tz_weekday(int64_t days)
{
	return (int)(days + 4 - tz_floordiv(days + 4, 7) * 7);
}

/* Whether y is a leap year. */
static int
tz_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The number of days in month m of year y. */
int
tz_month_days(int64_t y, int m)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return days[m - 1] + (m == 2 && tz_leap(y));
}

/* ---- Time zones ---- */

/* Read a big-endian 32-bit integer. */
static int32_t
tz_be32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	                 (uint32_t)p[3]);
}

/* Read a big-endian 64-bit integer. */
static int64_t
tz_be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)(uint32_t)tz_be32(p) << 32 | (uint64_t)(uint32_t)tz_be32(p + 4));
}

/* Parse a POSIX TZ name (alphabetic, or <quoted>); returns the rest or NULL. */
static const char *
tz_posix_name(const char *p)
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
tz_posix_hms(const char *p, int maxh, int32_t *secs)
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
tz_posix_num(const char *p, int lo, int hi, int *out)
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
tz_posix_date(const char *p, struct tz_rule_date *d)
{
	memset(d, 0, sizeof *d);
	if (*p == 'J') {
		d->kind = 'J';
		p = tz_posix_num(p + 1, 1, 365, &d->day);
	} else if (*p == 'M') {
		d->kind = 'M';
		p = tz_posix_num(p + 1, 1, 12, &d->month);
		if (p == NULL || *p++ != '.')
			return NULL;
		p = tz_posix_num(p, 1, 5, &d->week);
		if (p == NULL || *p++ != '.')
			return NULL;
		p = tz_posix_num(p, 0, 6, &d->wday);
	} else {
		d->kind = 'D';
		p = tz_posix_num(p, 0, 365, &d->day);
	}
	if (p == NULL)
		return NULL;
	d->secs = 7200;
	if (*p == '/')
		p = tz_posix_hms(p + 1, 167, &d->secs);
	return p;
}

/* The day (since the epoch) a rule date falls on in year y. */
static int64_t
tz_rule_day(const struct tz_rule_date *d, int64_t y)
{
	int64_t first;
	int day;

	switch (d->kind) {
	case 'J':
		return tz_days_from_civil(y, 1, 1) + d->day - 1 + (tz_leap(y) && d->day >= 60);
	case 'D':
		return tz_days_from_civil(y, 1, 1) + d->day;
	}
	first = tz_days_from_civil(y, d->month, 1);
	day = 1 + (d->wday - tz_weekday(first) + 7) % 7 + (d->week - 1) * 7;
	while (day > tz_month_days(y, d->month))
		day -= 7;
	return first + day - 1;
}

/* The instants DST starts and ends in year y, in UTC. */
static void
tz_rule_year(const struct tz *z, int64_t y, int64_t *start, int64_t *end)
{
	*start = tz_rule_day(&z->start, y) * TZ_DAY + z->start.secs - z->std_off;
	*end = tz_rule_day(&z->end, y) * TZ_DAY + z->end.secs - z->dst_off;
}

/* Parse a POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3" into z's rule. */
static int
tz_posix_parse(const char *p, struct tz *z)
{
	int32_t v;
	int64_t s0, e0, s1, e1;

	if ((p = tz_posix_name(p)) == NULL || (p = tz_posix_hms(p, 24, &v)) == NULL)
		return -1;
	z->has_rule = 1;
	z->std_off = -v;
	z->dst_off = z->std_off;
	z->rule_dst = 0;
	if (*p == '\0')
		return 0;
	if ((p = tz_posix_name(p)) == NULL)
		return -1;
	z->dst_off = z->std_off + 3600;
	if (*p != '\0' && *p != ',') {
		if ((p = tz_posix_hms(p, 24, &v)) == NULL)
			return -1;
		z->dst_off = -v;
	}
	if (*p == '\0') {
		/* No rule: POSIX leaves it to the implementation; glibc uses the US rule. */
		p = ",M3.2.0,M11.1.0";
	}
	if (*p++ != ',' || (p = tz_posix_date(p, &z->start)) == NULL)
		return -1;
	if (*p++ != ',' || (p = tz_posix_date(p, &z->end)) == NULL || *p != '\0')
		return -1;
	z->rule_dst = z->dst_off != z->std_off;

	/* DST all year is written "0/0,J365/25": fold it into a constant offset. */
	tz_rule_year(z, 2001, &s0, &e0);
	tz_rule_year(z, 2002, &s1, &e1);
	if (z->rule_dst && s0 <= tz_days_from_civil(2001, 1, 1) * TZ_DAY - z->std_off && e0 >= s1) {
		z->std_off = z->dst_off;
		z->rule_dst = 0;
	}
	return 0;
}

/* Append a transition to z unless it leaves the offset unchanged. */
static int
tz_add(struct tz *z, int64_t t, int32_t off)
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
tz_tzif_parse(const unsigned char *buf, size_t len, struct tz *z)
{
	const unsigned char *p = buf, *end = buf + len, *idx, *types, *foot;
	size_t isut, isstd, leap, ntimes, ntypes, nchars, tsize, data, i;
	char footer[256];
	int32_t off;
	int64_t t, prev = INT64_MIN;

	for (tsize = 4;; tsize = 8) {
		if ((size_t)(end - p) < 44 || memcmp(p, "TZif", 4) != 0)
			return -1;
		isut = (uint32_t)tz_be32(p + 20);
		isstd = (uint32_t)tz_be32(p + 24);
		leap = (uint32_t)tz_be32(p + 28);
		ntimes = (uint32_t)tz_be32(p + 32);
		ntypes = (uint32_t)tz_be32(p + 36);
		nchars = (uint32_t)tz_be32(p + 40);
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
		off = tz_be32(types + i * 6);
		if (off < -89999 || off > 93599 || types[i * 6 + 4] > 1)
			return -1;
	}
	z->first = tz_be32(types);
	for (i = 0; i < ntimes; i++) {
		t = tsize == 8 ? tz_be64(p + i * 8) : tz_be32(p + i * 4);
		if (idx[i] >= ntypes || t <= prev)
			return -1;
		prev = t;
		if (tz_add(z, t, tz_be32(types + idx[i] * 6)) != 0)
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
	return tz_posix_parse(footer, z);
}

/* Parse a zone from memory: a TZif file, or a POSIX TZ string (no NUL, under 256 bytes). */
static int
tz_from_buf(const void *buf, size_t len, struct tz *z)
{
	char tz[256];
	int r = -1;

	memset(z, 0, sizeof *z);
	if (len >= 4 && memcmp(buf, "TZif", 4) == 0)
		r = tz_tzif_parse(buf, len, z);
	else if (len > 0 && len < sizeof tz && memchr(buf, '\0', len) == NULL) {
		memcpy(tz, buf, len);
		tz[len] = '\0';
		r = tz_posix_parse(tz, z);
	}
	if (r != 0) {
		free(z->times);
		free(z->offs);
		memset(z, 0, sizeof *z);
	}
	return r;
}

/* Replace z with the zone in buf, a TZif file or a POSIX TZ string; -1 leaves z as it was. */
static int
tz_replace(struct tz *z, const void *buf, size_t len)
{
	struct tz n;

	if (tz_from_buf(buf, len, &n) != 0)
		return -1;
	free(z->times);
	free(z->offs);
	*z = n;
	return 0;
}

/* Read the TZif file at path; returns 0, or -1 with errno (EINVAL: not a TZif file). */
static int
tz_read_file(const char *path, unsigned char **out, size_t *outlen)
{
	struct stat sb;
	unsigned char *buf;
	ssize_t r;
	size_t done = 0;
	int fd, error;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) || sb.st_size > TZ_TZIF_MAX) {
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

/* Load the TZif file at path as z; returns 0, or -1 (not readable or not TZif). */
static int
tz_load_file(struct tz *z, const char *path)
{
	unsigned char *buf;
	size_t len;
	int r;

	if (tz_read_file(path, &buf, &len) != 0)
		return -1;
	r = tz_replace(z, buf, len);
	free(buf);
	return r;
}

/*
 * The directory zone names are looked up in: $TZDIR when set and not empty, as glibc and
 * tzcode do (tzset(3)), else /usr/share/zoneinfo.
 */
static const char *
tz_dir(void)
{
	const char *dir = getenv("TZDIR");

	return dir != NULL && *dir != '\0' ? dir : TZ_ZONEINFO;
}

/*
 * Whether name looks like an IANA zone name we may look up under the zoneinfo directory:
 * relative, and no element empty, "." or "..", so it cannot name a file outside it.
 */
static int
tz_name_ok(const char *name)
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
tz_load_local(struct tz *z)
{
	const char *tz = getenv("TZ");
	char *path;
	int r = -1;

	if (tz == NULL) {
		tz_load_file(z, "/etc/localtime");
		return;
	}
	if (*tz == ':')
		tz++;
	if (*tz == '/')
		r = tz_load_file(z, tz);
	else if (tz_name_ok(tz)) {
		xasprintf(&path, "%s/%s", tz_dir(), tz);
		r = tz_load_file(z, path);
		free(path);
	}
	if (r != 0 && *tz != '\0')
		(void)tz_replace(z, tz, strlen(tz));
}

/* Load the zone called name, or the process's zone for NULL; else *cause names the fix. */
int
tz_load(const char *name, struct tz **out, char **cause)
{
	struct tz *z = xcalloc(1, sizeof *z);
	char *path;
	int r;

	if (name == NULL) {
		tz_load_local(z);
		*out = z;
		return 0;
	}
	if (tz_name_ok(name)) {
		xasprintf(&path, "%s/%s", tz_dir(), name);
		r = tz_load_file(z, path);
		free(path);
		if (r == 0) {
			*out = z;
			return 0;
		}
	}
	free(z);
	xasprintf(cause, "unknown time zone \"%s\": use an IANA name such as Europe/Paris (see %s)",
	          name, tz_dir());
	return -1;
}

/* Free a zone. */
void
tz_free(struct tz *z)
{
	if (z == NULL)
		return;
	free(z->times);
	free(z->offs);
	free(z);
}

/* Find the segment of z's timeline that contains instant t. */
void
tz_segment(const struct tz *z, int64_t t, struct tz_seg *seg)
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
			seg->start = TZ_EDGE_LO;
			seg->off = seg->prev_off = z->first;
		} else {
			seg->start = z->times[lo - 1];
			seg->off = z->offs[lo - 1];
			seg->prev_off = lo >= 2 ? z->offs[lo - 2] : z->first;
		}
		return;
	}

	/* After the table: its last offset, then the footer rule if it has DST. */
	seg->end = TZ_EDGE_HI;
	if (z->n > 0) {
		seg->start = z->times[z->n - 1];
		seg->off = z->offs[z->n - 1];
		seg->prev_off = z->n >= 2 ? z->offs[z->n - 2] : z->first;
	} else {
		seg->start = TZ_EDGE_LO;
		seg->off = seg->prev_off = z->has_rule ? z->std_off : z->first;
	}
	if (!z->has_rule || !z->rule_dst)
		return;

	/* The rule's transitions in the year before, of and after t, in order. */
	tz_civil_from_days(tz_floordiv(t, TZ_DAY), &y, &mo, &d);
	for (k = 0, yy = y - 1; yy <= y + 1; yy++) {
		tz_rule_year(z, yy, &s, &e);
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
	jan1 = tz_days_from_civil(y - 1, 1, 1) * TZ_DAY;
	if (seg->start < jan1) {
		/* The state at the start of year y-1 comes from the rule, not the table. */
		tz_rule_year(z, y - 1, &s, &e);
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
	seg->end = tz_days_from_civil(y + 2, 1, 1) * TZ_DAY;
}
