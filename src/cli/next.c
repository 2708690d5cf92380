/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper next`). */
/* next.c: `leasekeeper next JOB`: the next fire times of a job, from the configuration alone. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "config.h"
#include "leasekeeper.h"
#include "usage.h"
#include "schedule.h"

#define NEXT_MAX 10000 /* next -n: a bound on the output, a week of a minutely job */

static const char next_usage[] =
    "usage: leasekeeper next [-c FILE] [-n K] [--json] JOB\n"
    "\n"
    "The next K fire times of a job (5 by default), in its time zone and in UTC, with what\n"
    "H and jitter resolved to. Reads the configuration only: no ZooKeeper.\n"
    "\n"
    "  -c, --config FILE  the worker's configuration (default " LEASEKEEPER_DEFAULT_CONFIG ")\n"
    "  -n, --count K      how many fire times, 1 to 10000\n"
    "  -j, --json         one JSON object\n"
    "  -h, --help         this help\n";

/* How many names a NULL-terminated list holds. */
static int
next_count(char *const *list)
{
	int n = 0;

	while (list != NULL && list[n] != NULL)
		n++;
	return n;
}

/* Which runs of a parent a child answers, by its after's suffix: "ok", "any", "failed". */
static const char *
next_when(const char *when)
{
	if (strcmp(when, "any") == 0)
		return ", whatever its outcome";
	if (strcmp(when, "failed") == 0)
		return " that ends other than ok";
	return " that ends ok";
}

/* A parent as after names it ("build", "test:any"): "run of build that ends ok". */
static void
next_parent_run(const char *spec)
{
	const char *colon = strchr(spec, ':');

	if (colon == NULL)
		printf("run of %s%s", spec, next_when("ok"));
	else
		printf("run of %.*s%s", (int)(colon - spec), spec, next_when(colon + 1));
}

/*
 * A chain: the parents a job runs after ("after": "build", "test:any"), and the jobs that
 * run after it ("children": "deploy", "alert:failed", as their after names it).
 */
static void
next_chain(const struct config_job *job, const struct config *cfg, json_t *out)
{
	json_t *parents = json_array(), *children = json_array();
	char *const *p;
	size_t i, len = strlen(job->name);

	for (p = job->after; p != NULL && *p != NULL; p++)
		json_array_append_new(parents, json_string(*p));
	for (i = 0; i < cfg->njobs; i++)
		for (p = cfg->jobs_list[i]->after; p != NULL && *p != NULL; p++)
			if (strncmp(*p, job->name, len) == 0 &&
			    ((*p)[len] == '\0' || (*p)[len] == ':')) {
				json_array_append_new(
				    children,
				    json_pack("{s:s, s:s, s:i}", "job", cfg->jobs_list[i]->name,
				              "when", (*p)[len] == ':' ? *p + len + 1 : "ok",
				              "parents", next_count(cfg->jobs_list[i]->after)));
				break;
			}
	json_object_set_new(out, "after", parents);
	json_object_set_new(out, "children", children);
}

/*
 * The next count fire times of job, and what H and jitter resolved to, as JSON:
 * {"job", "schedule", "resolved", "jitter_s" (null: none), "timezone", "continuous", "times": [{"local",
 * "utc", "epoch"}], "note"}.
 */
static json_t *
next_times(const struct config_job *job, const struct config *cfg, long count)
{
	json_t *out, *times = json_array();
	char local[64], utc[64];
	const char *tz;
	struct tm tm;
	time_t tt;
	int64_t t;
	long i;

	tz = job->timezone != NULL ? job->timezone : cfg->timezone;
	out = json_pack("{s:s, s:s, s:s, s:I, s:s?, s:b}", "job", job->name, "schedule",
	                job->schedule, "resolved", schedule_resolved(job->sched), "jitter_s",
	                (json_int_t)(job->jitter_ms > 0 ? schedule_offset(job->sched) : 0),
	                "timezone", tz, "continuous",
	                schedule_kind(job->sched) == SCHEDULE_CONTINUOUS);
	json_object_set_new(out, "times", times);
	if (job->jitter_ms == 0) /* no jitter at all, not an offset of 0 s */
		json_object_set_new(out, "jitter_s", json_null());
	json_object_set_new(out, "asked", json_integer(count));
	next_chain(job, cfg, out);
	if (schedule_kind(job->sched) == SCHEDULE_CONTINUOUS ||
	    schedule_kind(job->sched) == SCHEDULE_AFTER)
		return out;
	if (tz != NULL)
		setenv("TZ", tz, 1);
	tzset();
	t = (int64_t)time(NULL);
	for (i = 0; i < count; i++) {
		/* Times end with the year 9999: a rare schedule gets there first. */
		if ((t = schedule_next(job->sched, t)) < 0) {
			json_object_set_new(
			    out, "note",
			    json_string(
			        i == 0 ? "never fires"
			               : "fewer fire times than asked for: leasekeeper computes "
			                 "fire times up to the end of the year 9999"));
			break;
		}
		tt = (time_t)t;
		localtime_r(&tt, &tm);
		strftime(local, sizeof local, "%Y-%m-%d %H:%M:%S %Z", &tm);
		gmtime_r(&tt, &tm);
		strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_array_append_new(times, json_pack("{s:s, s:s, s:I}", "local", local, "utc",
		                                       utc, "epoch", (json_int_t)t));
	}
	return out;
}

/* next_times for people. */
static void
next_print(json_t *out)
{
	const char *job = json_string_value(json_object_get(out, "job"));
	const char *schedule = json_string_value(json_object_get(out, "schedule"));
	const char *resolved = json_string_value(json_object_get(out, "resolved"));
	json_t *times = json_object_get(out, "times"), *e;
	json_t *jitter = json_object_get(out, "jitter_s");
	size_t i;

	json_array_foreach(json_object_get(out, "children"), i, e) {
		const char *when = next_when(json_string_value(json_object_get(e, "when")));

		if (json_integer_value(json_object_get(e, "parents")) > 1)
			printf("%s: then %s runs, after a run of %s%s, once its other parents have "
			       "had theirs too (a join)\n",
			       job, json_string_value(json_object_get(e, "job")), job, when);
		else
			printf("%s: then %s runs, after each run of %s%s\n", job,
			       json_string_value(json_object_get(e, "job")), job, when);
	}
	if (json_is_true(json_object_get(out, "continuous"))) {
		printf("%s: @continuous: runs whenever this worker holds a lease\n", job);
		return;
	}
	if (json_array_size(json_object_get(out, "after")) > 0) {
		size_t n = json_array_size(json_object_get(out, "after"));

		printf("%s: runs after", job);
		json_array_foreach(json_object_get(out, "after"), i, e)
			printf("%s %s", i > 0 ? "," : "", json_string_value(e));
		if (n > 1)
			printf(" (a join: once each parent has had a new run since %s last ran: a ",
			       job);
		else
			printf(" (once per ");
		json_array_foreach(json_object_get(out, "after"), i, e) {
			printf("%s", i == 0 ? "" : (i + 1 == n ? "; and a " : "; a "));
			next_parent_run(json_string_value(e));
		}
		if (strcmp(schedule, "@after") == 0) {
			printf("%s), no schedule of its own\n",
			       n > 1 ? "; the newest of each" : "");
			return;
		}
		/* A schedule as well: its ticks run too, each once (docs/workflows.md). */
		printf("%s), and at each tick of its schedule %s:\n",
		       n > 1 ? "; the newest of each" : "", schedule);
	}
	/* H and jitter are per job: say what they resolved to, then the times they give. */
	if (strcmp(resolved, schedule) != 0)
		printf("%s: %s resolves to %s\n", job, schedule, resolved);
	if (json_is_integer(jitter))
		printf("%s: jitter: every tick %llds after the schedule\n", job,
		       (long long)json_integer_value(jitter));
	json_array_foreach(times, i, e) {
		printf("%s  (%s)\n", json_string_value(json_object_get(e, "local")),
		       json_string_value(json_object_get(e, "utc")));
	}
	if (json_array_size(times) == 0 && json_object_get(out, "note") != NULL)
		printf("%s: \"%s\" never fires\n", job, schedule);
	else if (json_object_get(out, "note") != NULL)
		fprintf(stderr,
		        "leasekeeper next: only %zu of the %lld fire times asked for: leasekeeper "
		        "computes fire times up to the end of the year 9999\n",
		        json_array_size(times),
		        (long long)json_integer_value(json_object_get(out, "asked")));
}

/* `next`: the next fire times of a job, in its time zone and in UTC. */
int
next_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *file = LEASEKEEPER_DEFAULT_CONFIG;
	struct config *cfg;
	struct config_job *job;
	char *end;
	int ch, as_json = 0;
	long count = 5;
	json_t *out;

	while ((ch = getopt_long(argc, argv, "c:n:jh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'n':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || count < 1 ||
			    count > NEXT_MAX) {
				fprintf(stderr,
				        "leasekeeper next: -n takes a number from 1 to %d, not "
				        "\"%s\"\n",
				        NEXT_MAX, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			as_json = 1;
			break;
		case 'h':
			fputs(next_usage, stdout);
			return 0;
		default:
			return usage_hint("next");
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper next: %s\n",
		        optind == argc ? "give the name of a job" : "give one job name only");
		return usage_hint("next");
	}
	if ((cfg = config_load_print(file)) == NULL)
		return EXIT_CONFIG;
	if ((job = config_find_job(cfg, argv[optind])) == NULL) {
		fprintf(stderr, "leasekeeper next: no job \"%s\" in %s\n", argv[optind], file);
		config_free(cfg);
		return 1;
	}
	out = next_times(job, cfg, count);
	if (as_json) {
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		putchar('\n');
	} else
		next_print(out);
	json_decref(out);
	config_free(cfg);
	return 0;
}
