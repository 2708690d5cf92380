/* Runs in: a one-shot command (`leasekeeper next`). */
/* next.c: `leasekeeper next JOB`: the next fire times of a job, from the configuration alone. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "leasekeeper.h"
#include "usage.h"
#include "schedule.h"

#define NEXT_MAX 10000 /* next -n: a bound on the output, a week of a minutely job */

static const char next_usage[] =
    "usage: leasekeeper next [-c FILE] [-n K] JOB\n"
    "\n"
    "The next K fire times of a job (5 by default), in its time zone and in UTC, with what\n"
    "H and jitter resolved to. Reads the configuration only: no ZooKeeper.\n"
    "\n"
    "  -c, --config FILE  the worker's configuration (default " LEASEKEEPER_DEFAULT_CONFIG ")\n"
    "  -n, --count K      how many fire times, 1 to 10000\n"
    "  -h, --help         this help\n";

/* `next`: the next fire times of a job, in its time zone and in UTC. */
int
next_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *file = LEASEKEEPER_DEFAULT_CONFIG;
	struct config *cfg;
	struct config_job *job;
	char local[64], utc[64], *end;
	const char *tz;
	int ch, i;
	long count = 5;
	int64_t t;
	time_t tt;
	struct tm tm;

	while ((ch = getopt_long(argc, argv, "c:n:h", longopts, NULL)) != -1) {
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
	if (schedule_kind(job->sched) == SCHEDULE_CONTINUOUS) {
		printf("%s: @continuous: runs whenever this worker holds a lease\n", job->name);
		config_free(cfg);
		return 0;
	}
	/* H and jitter are per job: say what they resolved to, then the times they give. */
	if (strcmp(schedule_resolved(job->sched), schedule_text(job->sched)) != 0)
		printf("%s: %s resolves to %s\n", job->name, schedule_text(job->sched),
		       schedule_resolved(job->sched));
	if (job->jitter_ms > 0)
		printf("%s: jitter: every tick %llds after the schedule\n", job->name,
		       (long long)schedule_offset(job->sched));
	tz = job->timezone != NULL ? job->timezone : cfg->timezone;
	if (tz != NULL)
		setenv("TZ", tz, 1);
	tzset();
	t = (int64_t)time(NULL);
	for (i = 0; i < count; i++) {
		t = schedule_next(job->sched, t);
		if (t < 0) {
			/* Times end with the year 9999: a rare schedule gets there first. */
			if (i == 0)
				printf("%s: \"%s\" never fires\n", job->name, job->schedule);
			else
				fprintf(
				    stderr,
				    "leasekeeper next: only %d of the %ld fire times asked for: "
				    "leasekeeper computes fire times up to the end of the year "
				    "9999\n",
				    i, count);
			break;
		}
		tt = (time_t)t;
		localtime_r(&tt, &tm);
		strftime(local, sizeof local, "%Y-%m-%d %H:%M:%S %Z", &tm);
		gmtime_r(&tt, &tm);
		strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf("%s  (%s)\n", local, utc);
	}
	config_free(cfg);
	return 0;
}
