/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * schedule.c: when a job runs: @continuous, cron expressions and @every intervals.
 *
 * Time zones are tz.c's; each schedule owns its zone.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "schedule.h"
#include "tz.h"
#include "xmalloc.h"

#define SCHEDULE_DAY          86400
#define SCHEDULE_TIME_MIN     (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define SCHEDULE_TIME_MAX     253402300799LL   /* 9999-12-31T23:59:59Z */
#define SCHEDULE_NEXT_HORIZON (401LL * 366 * SCHEDULE_DAY)
#define SCHEDULE_PREV_HORIZON (400LL * SCHEDULE_DAY)
#define SCHEDULE_NONE         INT64_MIN

struct schedule {
	enum schedule_kind kind;
	char *text;
	struct tz *zone; /* NULL only while parsing */

	uint64_t minutes, hours, days, months, weekdays; /* bit i set: value i matches */
	int dom_star, dow_star;
	int fixed_hour;
	int never;

	int64_t every; /* seconds */

	uint64_t seed;  /* FNV-1a of the job's name: H and the jitter offset derive from it */
	int has_seed;   /* a name was given: H is allowed */
	char *resolved; /* the five fields with every H resolved; NULL when there is no H */
	int64_t offset; /* jitter: every tick is shifted this many seconds later */
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

static int64_t schedule_base_next(const struct schedule *, int64_t);
static int64_t schedule_base_prev(const struct schedule *, int64_t);

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

/* ---- H: values derived from the job's name ---- */

/* FNV-1a (64 bits) of a name: the seed of H and of the jitter offset. */
static uint64_t
schedule_fnv1a(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The SplitMix64 finaliser of seed + k: field k's value (0 minute .. 4 weekday, 5 jitter). */
static uint64_t
schedule_mix(uint64_t seed, uint64_t k)
{
	uint64_t z = seed + k + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Append ",item" (or item first) to *out. */
static void
schedule_append(char **out, const char *item)
{
	char *t;

	xasprintf(&t, "%s%s%s", *out != NULL ? *out : "", *out != NULL ? "," : "", item);
	free(*out);
	*out = t;
}

/*
 * Parse an H item of field f: "H", "H(lo-hi)", "H/step" or "H(lo-hi)/step" (Jenkins). H
 * alone is one value in the field's range (day-of-month 1-28, day-of-week 0-6, so that it
 * falls in every month and week); with a step it is the offset of the first value.
 */
static int
schedule_field_hash(const struct schedule *s, const struct schedule_field *f, const char *text,
                    const char *item, uint64_t *mask, char **out, char **cause)
{
	const char *p = item + 1, *close, *dash;
	int lo = f->min, hi = f->max, step = 0, v;
	uint64_t r;
	char buf[32];

	if (f == &schedule_fields[2])
		hi = 28;
	else if (f == &schedule_fields[4])
		hi = 6;
	if (*p == '(') {
		close = strchr(p, ')');
		dash = close != NULL ? memchr(p + 1, '-', (size_t)(close - p - 1)) : NULL;
		if (close == NULL || dash == NULL)
			return schedule_field_error(cause, f, text, item,
			                            "H takes a range in parentheses: write e.g. "
			                            "\"H(0-29)\"");
		if (schedule_field_value(f, text, item, p + 1, dash, &lo, cause) != 0 ||
		    schedule_field_value(f, text, item, dash + 1, close, &hi, cause) != 0)
			return -1;
		if (lo > hi)
			return schedule_field_error(cause, f, text, item,
			                            "the range runs backwards: write the smaller "
			                            "value first, e.g. \"H(0-29)\"");
		p = close + 1;
	}
	if (*p == '/') {
		for (p++; isdigit((unsigned char)*p); p++) {
			if (step < 1000)
				step = step * 10 + (*p - '0');
		}
		if (*p != '\0' || step < 1 || step > f->max - f->min)
			return schedule_field_error(cause, f, text, item,
			                            "the step after H must be a number 1-%d, e.g. "
			                            "\"H/15\"",
			                            f->max - f->min);
	} else if (*p != '\0')
		return schedule_field_error(cause, f, text, item,
		                            "write H as \"H\", \"H(0-29)\", \"H/15\" or "
		                            "\"H(0-29)/10\"");
	if (!s->has_seed)
		return schedule_field_error(cause, f, text, item,
		                            "H is derived from a job's name: use it in a job's "
		                            "schedule");
	r = schedule_mix(s->seed, (uint64_t)(f - schedule_fields));
	if (step == 0) {
		v = lo + (int)(r % (uint64_t)(hi - lo + 1));
		*mask |= 1ULL << v;
		snprintf(buf, sizeof buf, "%d", v);
	} else {
		/* the first value stays in the range even when the step is wider */
		lo += (int)(r % (uint64_t)(step < hi - lo + 1 ? step : hi - lo + 1));
		for (v = lo; v <= hi; v += step)
			*mask |= 1ULL << v;
		snprintf(buf, sizeof buf, "%d-%d/%d", lo, hi, step);
	}
	schedule_append(out, buf);
	return 0;
}

/* Parse one comma-separated item of field f ("*", "5", "1-5", "*" or "1-5" or "5" + "/2"). */
static int
schedule_field_item(const struct schedule *s, const struct schedule_field *f, const char *text,
                    const char *item, uint64_t *mask, char **out, char **cause)
{
	const char *slash, *dash, *end = item + strlen(item), *p;
	int lo, hi, step = 1, v;

	if (*item == 'H')
		return schedule_field_hash(s, f, text, item, mask, out, cause);

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
	schedule_append(out, item);
	return 0;
}

/* Parse field number i of a cron expression into *mask, and its H-resolved text into *out. */
static int
schedule_field_parse(const struct schedule *s, int i, const char *text, uint64_t *mask, char **out,
                     char **cause)
{
	const struct schedule_field *f = &schedule_fields[i];
	const char *p = text, *comma;
	char *item;
	int r;

	*mask = 0;
	*out = NULL;
	for (;;) {
		comma = strchr(p, ',');
		item = comma != NULL ? xstrndup(p, (size_t)(comma - p)) : xstrdup(p);
		if (*item == '\0') {
			free(item);
			free(*out);
			*out = NULL;
			return schedule_field_error(cause, f, text, text,
			                            "empty list item: separate values with single "
			                            "commas, e.g. \"1,15\"");
		}
		r = schedule_field_item(s, f, text, item, mask, out, cause);
		free(item);
		if (r != 0) {
			free(*out);
			*out = NULL;
			return -1;
		}
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
		for (d = 1; d <= (m == 2 ? 29 : tz_month_days(2001, m)); d++) {
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
	char *resolved[5];
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
		if (schedule_field_parse(s, i, fields[i], masks[i], &resolved[i], cause) != 0) {
			while (i-- > 0)
				free(resolved[i]);
			free(copy);
			return -1;
		}
	}
	s->dom_star = fields[2][0] == '*';
	s->dow_star = fields[4][0] == '*';
	s->fixed_hour = strpbrk(fields[1], "*/") == NULL;
	xasprintf(&s->text, "%s %s %s %s %s", fields[0], fields[1], fields[2], fields[3],
	          fields[4]);
	if (strchr(s->text, 'H') != NULL)
		xasprintf(&s->resolved, "%s %s %s %s %s", resolved[0], resolved[1], resolved[2],
		          resolved[3], resolved[4]);
	for (i = 0; i < 5; i++)
		free(resolved[i]);
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
	return schedule_parse_job(spec, tz, NULL, out, cause);
}

/* Parse a job's schedule: as schedule_parse, with H derived from the job's name. */
int
schedule_parse_job(const char *spec, const char *tz, const char *name, struct schedule **out,
                   char **cause)
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
	if (name != NULL) {
		s->seed = schedule_fnv1a(name);
		s->has_seed = 1;
	}

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
		} else if (len == 6 && strncasecmp(trimmed, "@after", 6) == 0) {
			s->kind = SCHEDULE_AFTER; /* the schedule of a job with `after` */
			s->text = xstrdup("@after");
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
		if (r == 0 && (s->kind == SCHEDULE_CONTINUOUS || s->kind == SCHEDULE_AFTER) &&
		    *word_end != '\0') {
			xasprintf(cause, "\"%s\": %s takes nothing after it", trimmed, s->text);
			r = -1;
		}
	}
	free(trimmed);
	if (r == 0)
		r = tz_load(tz, &s->zone, cause);
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
	tz_free(s->zone);
	free(s->text);
	free(s->resolved);
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

/* The five fields with every H resolved ("17 3 * * *"); the text when there is no H. */
const char *
schedule_resolved(const struct schedule *s)
{
	return s->resolved != NULL ? s->resolved : s->text;
}

/*
 * Shift every tick of s by a per-job offset in [0, jitter_ms), whole seconds, derived from
 * the job's name: every worker computes the same. On error *cause names the fix.
 */
int
schedule_set_jitter(struct schedule *s, uint64_t jitter_ms, char **cause)
{
	char buf[64];

	s->offset = 0;
	if (jitter_ms == 0)
		return 0;
	duration_format(jitter_ms, buf, sizeof buf);
	if (s->kind == SCHEDULE_CONTINUOUS || s->kind == SCHEDULE_AFTER) {
		*cause = xstrdup("jitter spreads the ticks of scheduled jobs: an @continuous job, "
		                 "or one run after another (after), has none: remove jitter");
		return -1;
	}
	if (jitter_ms % 1000 != 0) {
		xasprintf(cause, "jitter %s: ticks fall on whole seconds, write e.g. %llus", buf,
		          (unsigned long long)(jitter_ms / 1000 + 1));
		return -1;
	}
	if (s->kind == SCHEDULE_EVERY && jitter_ms / 1000 > (uint64_t)s->every) {
		xasprintf(cause,
		          "jitter %s is longer than the interval of %s: the offset is less than "
		          "the jitter, so more than the interval spreads nothing further; write "
		          "at most the interval",
		          buf, s->text);
		return -1;
	}
	if (jitter_ms > (uint64_t)SCHEDULE_DAY * 1000) {
		xasprintf(cause, "jitter %s is longer than a day: write at most 1d", buf);
		return -1;
	}
	s->offset = (int64_t)(schedule_mix(s->seed, 5) % (jitter_ms / 1000));
	return 0;
}

/* The jitter offset of s in seconds (0 without jitter). */
int64_t
schedule_offset(const struct schedule *s)
{
	return s->offset;
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

	w = tz_floordiv(x, 60) * 60 + 60;
	days = tz_floordiv(w, SCHEDULE_DAY);
	h = (int)(w - days * SCHEDULE_DAY) / 3600;
	m = (int)(w - days * SCHEDULE_DAY) % 3600 / 60;
	for (;;) {
		if (days * SCHEDULE_DAY + h * 3600 + m * 60 >= bound)
			return SCHEDULE_NONE;
		tz_civil_from_days(days, &y, &mo, &d);
		if (!(s->months & (1ULL << mo))) {
			days = mo == 12 ? tz_days_from_civil(y + 1, 1, 1)
			                : tz_days_from_civil(y, mo + 1, 1);
			h = m = 0;
			continue;
		}
		if (schedule_day_matches(s, d, tz_weekday(days))) {
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

	w = tz_floordiv(x, 60) * 60;
	days = tz_floordiv(w, SCHEDULE_DAY);
	h = (int)(w - days * SCHEDULE_DAY) / 3600;
	m = (int)(w - days * SCHEDULE_DAY) % 3600 / 60;
	for (;;) {
		if (days * SCHEDULE_DAY + h * 3600 + m * 60 < lower)
			return SCHEDULE_NONE;
		tz_civil_from_days(days, &y, &mo, &d);
		if (!(s->months & (1ULL << mo))) {
			days = tz_days_from_civil(y, mo, 1) - 1;
			h = 23;
			m = 59;
			continue;
		}
		if (schedule_day_matches(s, d, tz_weekday(days))) {
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
schedule_gap_fires(const struct schedule *s, const struct tz_seg *seg)
{
	if (!s->fixed_hour || seg->prev_off >= seg->off)
		return 0;
	return schedule_wall_next(s, seg->start + seg->prev_off - 1, seg->start + seg->off) !=
	       SCHEDULE_NONE;
}

/* Whether wall time w in seg already happened before seg began (clocks went back). */
static int
schedule_repeated(const struct schedule *s, const struct tz_seg *seg, int64_t w)
{
	return s->fixed_hour && seg->prev_off > seg->off && w < seg->start + seg->prev_off;
}

/* The first cron fire time after `after`, walking the zone's segments forwards. */
static int64_t
schedule_cron_next(const struct schedule *s, int64_t after)
{
	struct tz_seg seg;
	int64_t t = after, limit = after + SCHEDULE_NEXT_HORIZON, stop, w;

	while (t < limit) {
		tz_segment(s->zone, t + 1, &seg);
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
	struct tz_seg seg;
	int64_t t = at, floor = at - SCHEDULE_PREV_HORIZON, lower, w;

	while (t >= floor) {
		tz_segment(s->zone, t, &seg);
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

/* The first fire time strictly after `after`, or -1; the jitter offset applied. */
int64_t
schedule_next(const struct schedule *s, int64_t after)
{
	int64_t t = schedule_base_next(s, after - s->offset);
	return t == -1 ? -1 : t + s->offset;
}

/* The latest fire time at or before `at`, or -1; the jitter offset applied. */
int64_t
schedule_prev(const struct schedule *s, int64_t at)
{
	int64_t t = schedule_base_prev(s, at - s->offset);
	return t == -1 ? -1 : t + s->offset;
}

/* The first unshifted fire time strictly after `after`, or -1. */
static int64_t
schedule_base_next(const struct schedule *s, int64_t after)
{
	if (after < SCHEDULE_TIME_MIN || after > SCHEDULE_TIME_MAX)
		return -1;
	switch (s->kind) {
	case SCHEDULE_CONTINUOUS:
	case SCHEDULE_AFTER:
		return -1;
	case SCHEDULE_EVERY:
		return (tz_floordiv(after, s->every) + 1) * s->every;
	case SCHEDULE_CRON:
		break;
	}
	if (s->never)
		return -1;
	return schedule_cron_next(s, after);
}

/* The latest unshifted fire time at or before `at`, or -1 when none within 400 days. */
static int64_t
schedule_base_prev(const struct schedule *s, int64_t at)
{
	int64_t t;

	if (at < SCHEDULE_TIME_MIN || at > SCHEDULE_TIME_MAX)
		return -1;
	switch (s->kind) {
	case SCHEDULE_CONTINUOUS:
	case SCHEDULE_AFTER:
		return -1;
	case SCHEDULE_EVERY:
		t = tz_floordiv(at, s->every) * s->every;
		return at - t > SCHEDULE_PREV_HORIZON ? -1 : t;
	case SCHEDULE_CRON:
		break;
	}
	if (s->never)
		return -1;
	return schedule_cron_prev(s, at);
}
