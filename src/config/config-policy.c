/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that reads the configuration. */
/*
 * config-policy.c: what a scheduled job does with the ticks it could not run in time:
 * `catch_up` (latest, none, all), `catch_up_limit`, and `overlap` (queue, skip, replace);
 * each problem reported with its file, line and fix.
 */

#include <string.h>

#include "config-int.h"
#include "schedule.h"

#define CONFIG_MAX_CATCH_UP 100 /* catch_up_limit at most */

static const char *config_catch_up_names[] = {"latest", "none", "all"};
static const char *config_overlap_names[] = {"queue", "skip", "replace"};

/* The name of an overlap mode, for check and logs. */
const char *
config_overlap_name(enum config_overlap mode)
{
	return config_overlap_names[mode];
}

/* overlap: queue (the default), skip or replace; scheduled jobs with one lease only. */
static void
config_resolve_overlap(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job,
                       int continuous)
{
	const struct config_kv *kv = config_kv_find(sec, "overlap");
	size_t i;

	job->overlap = CONFIG_OVERLAP_QUEUE;
	if (kv == NULL)
		return;
	for (i = 0; i < 3 && strcmp(kv->value, config_overlap_names[i]) != 0; i++)
		;
	if (i == 3) {
		config_error_kv(ctx, sec, kv,
		                "bad overlap %s: write queue (a tick waits for the run before it, "
		                "the default), skip (it is recorded missed) or replace (the run "
		                "before it is stopped)",
		                config_q(ctx, kv->value));
		return;
	}
	job->overlap = (enum config_overlap)i;
	if (continuous)
		config_error_kv(ctx, sec, kv,
		                "overlap applies only to scheduled jobs (cron or @every) and job "
		                "\"%s\" is @continuous: remove it",
		                sec->name);
	else if (job->overlap != CONFIG_OVERLAP_QUEUE && job->leases != 1)
		config_error_kv(ctx, sec, kv,
		                "overlap = %s needs leases = 1 (with more leases a tick finds a "
		                "free one): remove overlap, or set leases = 1",
		                kv->value);
}

/* The name of a catch_up mode, for check and logs. */
const char *
config_catch_up_name(enum config_catch_up mode)
{
	return config_catch_up_names[mode];
}

/* catch_up and catch_up_limit of a job whose schedule is known (ok_sched). */
void
config_resolve_policy(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job,
                      int ok_sched)
{
	const struct config_kv *kv = config_kv_find(sec, "catch_up");
	const struct config_kv *lim = config_kv_find(sec, "catch_up_limit");
	int continuous = ok_sched && schedule_kind(job->sched) == SCHEDULE_CONTINUOUS;
	size_t i;

	config_resolve_overlap(ctx, sec, job, continuous);
	job->catch_up = CONFIG_CATCH_UP_LATEST;
	job->catch_up_limit = 10;
	if (kv != NULL) {
		for (i = 0; i < 3 && strcmp(kv->value, config_catch_up_names[i]) != 0; i++)
			;
		if (i == 3)
			config_error_kv(
			    ctx, sec, kv,
			    "bad catch_up %s: write latest (the newest missed tick, "
			    "the default), none, or all (every missed tick, oldest first, "
			    "up to catch_up_limit)",
			    config_q(ctx, kv->value));
		else
			job->catch_up = (enum config_catch_up)i;
		if (continuous)
			config_error_kv(
			    ctx, sec, kv,
			    "catch_up applies only to scheduled jobs (cron or @every) and "
			    "job \"%s\" is @continuous: remove it",
			    sec->name);
	}
	if (lim == NULL)
		return;
	config_get_int(ctx, sec, "catch_up_limit", 1, CONFIG_MAX_CATCH_UP, NULL, NULL,
	               &job->catch_up_limit);
	if (job->catch_up != CONFIG_CATCH_UP_ALL)
		config_error_kv(ctx, sec, lim,
		                "catch_up_limit applies only with catch_up = all: set catch_up = "
		                "all, or remove catch_up_limit");
}
