/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* schedule.h: when a job runs: @continuous, cron expressions and @every intervals. */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* SCHEDULE_AFTER: a chained job (`after = JOB`), run after its parents' runs, never at a tick. */
enum schedule_kind { SCHEDULE_CONTINUOUS, SCHEDULE_CRON, SCHEDULE_EVERY, SCHEDULE_AFTER };

struct schedule;

/*
 * Parse "@continuous", a 5-field cron expression, an alias (@yearly @annually @monthly
 * @weekly @daily @midnight @hourly) or "@every DURATION" evaluated in time zone tz
 * (an IANA name; NULL: the process's local zone; tz_load in tz.h says where each is found).
 * On error returns -1 and sets *cause to a message that names the fix (caller frees).
 */
int schedule_parse(const char *spec, const char *tz, struct schedule **out, char **cause);
/*
 * Parse a job's schedule: as schedule_parse, and Jenkins' H in cron fields ("H", "H(0-29)",
 * "H/15", "H(0-29)/10") resolves to values derived from the job's name (docs/schedules.md
 * gives the hash), the same on every worker.
 */
int schedule_parse_job(const char *spec, const char *tz, const char *name, struct schedule **out,
                       char **cause);
/*
 * Shift every tick by a per-job offset in [0, jitter_ms) (whole seconds, from the job's
 * name); 0: none. On error (continuous, not whole seconds, longer than the @every interval
 * or a day) returns -1 and sets *cause to a message that names the fix.
 */
int schedule_set_jitter(struct schedule *, uint64_t jitter_ms, char **cause);
/* The jitter offset in seconds. */
int64_t schedule_offset(const struct schedule *);
/* The cron fields with H resolved ("17 3 * * *"); schedule_text when there is no H. */
const char *schedule_resolved(const struct schedule *);
void schedule_free(struct schedule *);
enum schedule_kind schedule_kind(const struct schedule *);

/*
 * The first fire time strictly after `after` (Unix seconds), or -1 when none exists
 * (e.g. "0 0 30 2 *") or for @continuous.
 */
int64_t schedule_next(const struct schedule *, int64_t after);

/* Whether a cron schedule can never fire (its day-of-month never falls in its months). */
int schedule_never(const struct schedule *);

/* The latest fire time at or before `at`, or -1 when none within the past 400 days. */
int64_t schedule_prev(const struct schedule *, int64_t at);

/* A canonical text of the schedule, for logs and `check`. */
const char *schedule_text(const struct schedule *);

#endif
