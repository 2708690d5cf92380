/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that reads the configuration. */
/*
 * config-after.c: a chained job's `after` (`after = build`, `build:any`, `build:failed`, or
 * several parents for a join): each item checked, then every job's parents checked against
 * the jobs configured (unknown parents, cycles), each problem with its file, line and fix.
 */

#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "schedule.h"
#include "xmalloc.h"

#define CONFIG_MAX_AFTER 16 /* parents of one job, at most */

/* The outcome a parent's run must have for the child: "" (ok), ":any" or ":failed". */
static int
config_after_mode_ok(const char *mode)
{
	return strcmp(mode, "ok") == 0 || strcmp(mode, "any") == 0 || strcmp(mode, "failed") == 0;
}

/* Check one item (JOB or JOB:MODE, trimmed) and add it to *list (n items) as written. */
static void
config_after_item(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv,
                  const char *item, char ***list, size_t *n)
{
	const char *colon = strchr(item, ':');
	size_t nlen = colon != NULL ? (size_t)(colon - item) : strlen(item), i;
	char *name = xstrndup(item, nlen), *why = NULL;

	if (!config_valid_name(name, "job name", &why))
		config_error_kv(ctx, sec, kv, "after: %s: name a job, e.g. after = build", why);
	else if (colon != NULL && !config_after_mode_ok(colon + 1))
		config_error_kv(ctx, sec, kv,
		                "after: bad outcome %s: write %s (after its ok runs), %s:any "
		                "(after every run) or %s:failed (after its failed runs)",
		                config_q(ctx, colon + 1), name, name, name);
	else if (strcmp(name, sec->name) == 0)
		config_error_kv(ctx, sec, kv,
		                "after names the job itself: a job cannot run after its own runs; "
		                "remove \"%s\" from after",
		                name);
	else {
		for (i = 0; i < *n; i++)
			if (strncmp((*list)[i], name, nlen) == 0 &&
			    ((*list)[i][nlen] == '\0' || (*list)[i][nlen] == ':'))
				break;
		if (i < *n)
			config_error_kv(ctx, sec, kv, "after names job \"%s\" twice: keep one",
			                name);
		else if (*n == CONFIG_MAX_AFTER)
			config_error_kv(ctx, sec, kv,
			                "after names more than %d jobs: keep %d, or chain them",
			                CONFIG_MAX_AFTER, CONFIG_MAX_AFTER);
		else {
			*list = xreallocarray(*list, *n + 2, sizeof **list);
			(*list)[*n] = colon != NULL && strcmp(colon + 1, "ok") == 0 ? xstrdup(name)
			                                                            : xstrdup(item);
			(*list)[++*n] = NULL;
		}
	}
	free(why);
	free(name);
}

/* The job's after: "JOB" or "JOB:any" / "JOB:failed" in job->after, NULL terminated. */
void
config_resolve_after(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv = config_kv_find(sec, "after");
	const char *p = kv != NULL ? kv->value : NULL;
	char **list, *item;
	size_t n = 0;

	if (kv == NULL)
		return;
	list = xcalloc(1, sizeof *list);
	while ((item = config_list_next(&p)) != NULL) {
		if (*item == '\0')
			config_error_kv(ctx, sec, kv,
			                "after has an empty item: write job names separated by "
			                "commas, e.g. after = build, test:any");
		else
			config_after_item(ctx, sec, kv, item, &list, &n);
		free(item);
	}
	if (n == 0) {
		free(list);
		list = NULL;
	}
	job->after = list;
}

/* The length of a parent's name in an after item ("build:any" -> 5). */
static size_t
config_after_name_len(const char *item)
{
	return strcspn(item, ":");
}

/* The index of the job a parent item names, or -1. */
static long
config_after_find(const struct config *cfg, const char *item)
{
	size_t i, len = config_after_name_len(item);

	for (i = 0; i < cfg->njobs; i++)
		if (strlen(cfg->jobs_list[i]->name) == len &&
		    strncmp(cfg->jobs_list[i]->name, item, len) == 0)
			return (long)i;
	return -1;
}

/*
 * Depth-first search from job i (colour: 0 unseen, 1 on the path, 2 done): the index of the
 * job whose after closes a cycle, or -1.
 */
static long
config_after_cycle(const struct config *cfg, size_t i, char *colour)
{
	char **p;
	long j, k;

	colour[i] = 1;
	for (p = cfg->jobs_list[i]->after; p != NULL && *p != NULL; p++) {
		j = config_after_find(cfg, *p);
		if (j < 0 || colour[j] == 2)
			continue;
		if (colour[j] == 1)
			return (long)i;
		if ((k = config_after_cycle(cfg, (size_t)j, colour)) >= 0)
			return k;
	}
	colour[i] = 2;
	return -1;
}

/*
 * The keys of scheduled ticks, which a job with after alone has none of: errors, not ignored.
 * A job with a cron or @every schedule as well has them for its ticks, but no per_tick.
 */
static void
config_after_misplaced(struct config_ctx *ctx, const struct config_sec *sec,
                       const struct config_job *job)
{
	static const char *keys[] = {"catch_up", "catch_up_limit", "overlap"};
	const struct config_kv *kv;
	size_t k;

	if (job->per_tick > 1)
		config_error_kv(ctx, sec, config_kv_find(sec, "per_tick"),
		                "per_tick applies to scheduled ticks of a job without after: a "
		                "job with after runs each tick and each parent run once, on one "
		                "worker; remove per_tick");
	if (job->sched != NULL && schedule_kind(job->sched) != SCHEDULE_AFTER)
		return;
	for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if ((kv = config_kv_find(sec, keys[k])) != NULL)
			config_error_kv(ctx, sec, kv,
			                "%s applies to scheduled ticks: a job with after answers "
			                "each parent run once, oldest first, within its "
			                "start_deadline; remove %s",
			                keys[k], keys[k]);
}

/*
 * Every parent must be a job of the configuration, and no chain may come back to where it
 * started (a -> b -> a would never start, or run for ever).
 */
void
config_check_after(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs)
{
	char *colour = xcalloc(cfg->njobs + 1, 1), **p;
	size_t i;
	long k;

	for (i = 0; i < cfg->njobs; i++) {
		if (cfg->jobs_list[i]->after != NULL)
			config_after_misplaced(ctx, secs[i], cfg->jobs_list[i]);
		for (p = cfg->jobs_list[i]->after; p != NULL && *p != NULL; p++)
			if (config_after_find(cfg, *p) < 0)
				config_error_kv(ctx, secs[i], config_kv_find(secs[i], "after"),
				                "after names job \"%.*s\", which no job file "
				                "defines: fix the name, or add [job %.*s]",
				                (int)config_after_name_len(*p), *p,
				                (int)config_after_name_len(*p), *p);
	}
	for (i = 0; i < cfg->njobs; i++) {
		if (colour[i] != 0 || cfg->jobs_list[i]->after == NULL)
			continue;
		if ((k = config_after_cycle(cfg, i, colour)) >= 0) {
			config_error_kv(
			    ctx, secs[k], config_kv_find(secs[k], "after"),
			    "after makes a cycle through job \"%s\" (it would run after "
			    "itself through its parents): remove one of the after links "
			    "of the cycle",
			    cfg->jobs_list[k]->name);
			memset(colour, 2, cfg->njobs); /* one cycle is reported once */
		}
	}
	free(colour);
}
