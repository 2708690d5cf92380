/* Runs in: the main process. */
/* main.c: the command line: run, check, next, status, exec, set-leases, logs, pause, resume,
 * drain, undrain, forget, web. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "leasekeeper.h"
#include "cgroup.h"
#include "runspec.h"
#include "config.h"
#include "control.h"
#include "runnow.h"
#include "exec.h"
#include "log.h"
#include "schedule.h"
#include "web.h"
#include "worker.h"
#include "xmalloc.h"

#define MAIN_DEFAULT_CONFIG LEASEKEEPER_DEFAULT_CONFIG
#define MAIN_NEXT_MAX       10000 /* next -n: a bound on the output, a week of a minutely job */

static const char *main_usage_text =
    "usage: leasekeeper COMMAND [OPTIONS]\n"
    "\n"
    "  run    -c FILE [-v]                     run the worker (foreground)\n"
    "  check  -c FILE                          validate the configuration, print the jobs\n"
    "  next   -c FILE JOB [-n K]               the next K fire times of a job\n"
    "  status [-c FILE | --zk HOSTS] [--json]  the cluster as ZooKeeper sees it\n"
    "  exec   [-c FILE | --zk HOSTS] [--leases N] [--timeout DUR] [--lock-path PATH]\n"
    "         NAME -- CMD [ARGS...]            run one command under a lease\n"
    "  set-leases [-c FILE | --zk HOSTS] JOB N change the cluster's lease count of a job\n"
    "  pause  [-c FILE | --zk HOSTS] [--stop-running] JOB   pause a job cluster-wide\n"
    "  resume [-c FILE | --zk HOSTS] JOB       resume a paused job\n"
    "  drain  [-c FILE | --zk HOSTS] [--wait] [--deadline DUR] [NODE]\n"
    "                                          a worker takes no new lease\n"
    "  undrain [-c FILE | --zk HOSTS] [NODE]   a drained worker takes leases again\n"
    "  forget [-c FILE | --zk HOSTS] [--force] JOB   delete the records of a gone job\n"
    "  web    [-c FILE | --zk HOSTS] [--listen HOST:PORT]\n"
    "                                          serve the read-only dashboard of the cluster\n"
    "  logs   [-c FILE | --zk HOSTS] [--json] JOB [--run ID | --last N]\n"
    "                                          the output's end of a job's recent runs\n"
    "  run-now [-c FILE | --zk HOSTS] [--wait] [--timeout DUR] [--force] JOB\n"
    "                                          one run of a job now, on one worker\n"
    "  version                                 print the version\n"
    "\n"
    "FILE defaults to " MAIN_DEFAULT_CONFIG ". See leasekeeper(1).\n";

/* Print usage and return the usage exit status. */
static int
main_usage(FILE *f)
{
	fputs(main_usage_text, f);
	return f == stdout ? 0 : EXIT_USAGE;
}

/* Load a configuration, printing every error; NULL if there were any. */
static struct config *
main_load(const char *file)
{
	struct config_errors errors = {NULL, 0};
	struct config *cfg = NULL;
	size_t i;

	if (config_load(file, &cfg, &errors) != 0) {
		for (i = 0; i < errors.n; i++)
			fprintf(stderr, "%s%s\n", log_prefix(LOG_LEVEL_FATAL), errors.lines[i]);
		fprintf(stderr, "%s%zu error%s in the configuration\n", log_prefix(LOG_LEVEL_FATAL),
		        errors.n, errors.n == 1 ? "" : "s");
		config_errors_free(&errors);
		return NULL;
	}
	config_errors_free(&errors);
	return cfg;
}

/*
 * The options of `run` and `check`: -c FILE, -h, and -v when verbose is not NULL. Returns -1
 * to go on, else the status to exit with.
 */
static int
main_config_opts(int argc, char **argv, const char **file, int *verbose)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"verbose", no_argument, NULL, 'v'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, verbose != NULL ? "c:vh" : "c:h", longopts, NULL)) !=
	       -1) {
		if (ch == 'c')
			*file = optarg;
		else if (ch == 'v' && verbose != NULL)
			(*verbose)++;
		else if (ch == 'v') {
			fprintf(stderr, "%s: unrecognized option '%s'\n", argv[0],
			        argv[optind - 1]);
			return main_usage(stderr);
		} else
			return main_usage(ch == 'h' ? stdout : stderr);
	}
	if (optind != argc) {
		fprintf(stderr, "leasekeeper: unexpected argument \"%s\"\n", argv[optind]);
		return main_usage(stderr);
	}
	return -1;
}

/* `run`: the daemon. */
static int
main_run(int argc, char **argv)
{
	const char *file = MAIN_DEFAULT_CONFIG;
	struct config *cfg;
	int verbose = 0, rc;

	if ((rc = main_config_opts(argc, argv, &file, &verbose)) >= 0)
		return rc;
	log_init(verbose, "main");
	if ((cfg = main_load(file)) == NULL)
		return EXIT_CONFIG;
	rc = worker_run(file, cfg);
	config_free(cfg);
	return rc;
}

/* runspec_unenforced: say that a job's limit is not enforced on this host. */
static void
main_check_unenforced_cb(const struct config_job *cj, const char *key, const char *value,
                         const char *controller, void *arg)
{
	const struct config *cfg = arg;
	int required = cfg->cgroups == CONFIG_CGROUPS_REQUIRED;

	fprintf(stderr,
	        "%s:%d: %s: job %s: %s = %s %s on this host: the %s controller is not delegated "
	        "to the worker's cgroup; delegate it (under systemd: Delegate=yes, see "
	        "docs/safety.md)%s\n",
	        cj->file, cj->line, required ? "error" : "warning", cj->name, key, value,
	        required ? "cannot be enforced" : "is not enforced", controller,
	        required
	            ? " or remove the limit (cgroups = required runs no job without its limits)"
	            : ", or remove the limit");
}

/* `check`: the limits each job gets on this host, given the controllers runs get. */
static void
main_check_limits(const struct config *cfg, unsigned controllers)
{
	const struct config_job *cj;
	char value[32];
	uint64_t v;
	size_t j;
	int i, n;

	for (j = 0; j < cfg->njobs; j++) {
		cj = cfg->jobs_list[j];
		n = 0;
		for (i = 0; i < CONFIG_LIMIT_KEYS; i++) {
			if ((v = config_limit_value(&cj->limits, i)) == 0 ||
			    (runspec_controller_bit(config_limit_controllers[i]) & controllers) ==
			        0)
				continue;
			if (n++ == 0)
				printf("  enforced         job %s:", cj->name);
			printf("%s %s %s", n > 1 ? "," : "", config_limit_keys[i],
			       config_limit_format(i, v, value, sizeof value));
		}
		if (n > 0)
			printf("\n");
	}
}

/*
 * `check`: what containment this host gives runs, as `run` would set it up, and which
 * limits it enforces. -1 when cgroups = required cannot be met.
 */
static int
main_check_cgroups(const struct config *cfg)
{
	char *name, *where, *cause;
	unsigned controllers = 0;
	int rc = 0;

	if (cfg->cgroups == CONFIG_CGROUPS_OFF) {
		printf("  containment      process groups (cgroups = off)\n");
		return 0;
	}
	name = cgroup_worker_name(cfg->node_id, cfg->state_dir);
	if (cgroup_probe(name, &where, &controllers, &cause) == 0)
		printf("  containment      a cgroup per run under %s\n", where);
	else if (cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		printf("  containment      none: %s; with cgroups = required no job will run\n",
		       cause);
	else
		printf("  containment      process groups: %s\n", cause);
	if (where == NULL && cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		rc = -1;
	main_check_limits(cfg, controllers);
	if (runspec_unenforced(cfg, controllers, main_check_unenforced_cb, (void *)cfg) > 0 &&
	    cfg->cgroups == CONFIG_CGROUPS_REQUIRED)
		rc = -1;
	free(name);
	free(where);
	free(cause);
	return rc;
}

/* `check`: validate and print the resolved configuration. */
static int
main_check(int argc, char **argv)
{
	const char *file = MAIN_DEFAULT_CONFIG;
	struct config *cfg;
	int rc;

	if ((rc = main_config_opts(argc, argv, &file, NULL)) >= 0)
		return rc;
	if ((cfg = main_load(file)) == NULL)
		return 1;
	config_print(cfg, stdout);
	if (main_check_cgroups(cfg) != 0) {
		printf("configuration refused on this host: cgroups = required cannot be met (see "
		       "above)\n");
		config_free(cfg);
		return 1;
	}
	if (config_auth_warning(cfg) != NULL)
		fprintf(stderr, "leasekeeper check: warning: %s\n", config_auth_warning(cfg));
	printf("configuration OK\n");
	config_free(cfg);
	return 0;
}

/* `next`: the next fire times of a job, in its time zone and in UTC. */
static int
main_next(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *file = MAIN_DEFAULT_CONFIG;
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
			    count > MAIN_NEXT_MAX) {
				fprintf(stderr,
				        "leasekeeper next: -n takes a number from 1 to %d, not "
				        "\"%s\"\n",
				        MAIN_NEXT_MAX, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			return main_usage(stdout);
		default:
			return main_usage(stderr);
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper next: %s\n",
		        optind == argc ? "give the name of a job" : "give one job name only");
		return main_usage(stderr);
	}
	if ((cfg = main_load(file)) == NULL)
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

int
main(int argc, char **argv)
{
	static char name[64];
	const char *cmd;

	log_init(-1, "main");
	if (argc < 2)
		return main_usage(stderr);
	cmd = argv[1];
	argc--;
	argv++;
	/* getopt names the program in its messages: "leasekeeper check: invalid option". */
	snprintf(name, sizeof name, "leasekeeper %s", cmd);
	argv[0] = name;
	if (strcmp(cmd, "run") == 0)
		return main_run(argc, argv);
	if (strcmp(cmd, "check") == 0)
		return main_check(argc, argv);
	if (strcmp(cmd, "next") == 0)
		return main_next(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return admin_status(argc, argv);
	if (strcmp(cmd, "set-leases") == 0)
		return admin_set_leases(argc, argv);
	if (strcmp(cmd, "pause") == 0)
		return control_pause(argc, argv);
	if (strcmp(cmd, "resume") == 0)
		return control_resume(argc, argv);
	if (strcmp(cmd, "drain") == 0)
		return control_drain(argc, argv);
	if (strcmp(cmd, "undrain") == 0)
		return control_undrain(argc, argv);
	if (strcmp(cmd, "forget") == 0)
		return control_forget(argc, argv);
	if (strcmp(cmd, "logs") == 0)
		return admin_logs(argc, argv);
	if (strcmp(cmd, "run-now") == 0)
		return runnow_main(argc, argv);
	if (strcmp(cmd, "exec") == 0)
		return exec_main(argc, argv);
	if (strcmp(cmd, "web") == 0)
		return web_main(argc, argv);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("leasekeeper %s\n", LEASEKEEPER_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
		return main_usage(stdout);
	fprintf(stderr, "leasekeeper: unknown command \"%s\"\n", cmd);
	return main_usage(stderr);
}
