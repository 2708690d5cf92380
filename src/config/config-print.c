/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* config-print.c: a loaded configuration printed for `leasekeeper check`. */

#include <sys/stat.h>

#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "duration.h"
#include "leasekeeper.h"
#include "schedule.h"

/* The PATH a job starts with: its env line, else the caller's if passed, else the default. */
static const char *
config_job_path(const struct config_job *job)
{
	char **e;

	for (e = job->env; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, "PATH=", 5) == 0)
			return *e + 5;
	}
	if (config_pass_env_match(job->pass_env, "PATH", 4) && getenv("PATH") != NULL)
		return getenv("PATH");
	return LK_JOB_PATH;
}

/* The program a job without a shell runs, searched as execvp would in the job's PATH. */
const char *
config_job_program(const struct config_job *job, char *buf, size_t size)
{
	const char *p, *end, *prog;
	struct stat st;
	int n;

	if (job->argv == NULL || job->argv[0] == NULL)
		return NULL;
	prog = job->argv[0];
	if (strchr(prog, '/') != NULL) {
		n = snprintf(buf, size, "%s", prog);
		return n >= 0 && (size_t)n < size ? buf : NULL;
	}
	for (p = config_job_path(job);; p = end + 1) {
		end = strchrnul(p, ':');
		/* an empty element is the working directory, as execvp reads it */
		n = snprintf(buf, size, "%.*s/%s", (int)(end - p), end == p ? "." : p, prog);
		if (n >= 0 && (size_t)n < size && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return buf;
		if (*end == '\0')
			return NULL;
	}
}

/* Print a NULL-terminated list of names on one line, after the label. */
static void
config_print_names(const char *label, char *const *names, FILE *f)
{
	if (names == NULL || *names == NULL)
		return;
	fprintf(f, "  %-16s ", label);
	for (; *names != NULL; names++)
		fprintf(f, "%s%s", *names, names[1] != NULL ? " " : "\n");
}

/* Print a word of an argv, quoted when the shell would need it. */
static void
config_print_word(const char *word, FILE *f)
{
	const char *p;

	if (*word != '\0' && strpbrk(word, " \t\n'\"\\$`*?[]{}()<>|&;#~") == NULL) {
		fputs(word, f);
		return;
	}
	fputc('\'', f);
	for (p = word; *p != '\0'; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

/* Print a size the way it would be written: 10M, 512K, 1000. */
static void
config_print_size(uint64_t bytes, FILE *f)
{
	if (bytes != 0 && bytes % (1024 * 1024 * 1024) == 0)
		fprintf(f, "%lluG", (unsigned long long)(bytes >> 30));
	else if (bytes != 0 && bytes % (1024 * 1024) == 0)
		fprintf(f, "%lluM", (unsigned long long)(bytes >> 20));
	else if (bytes != 0 && bytes % 1024 == 0)
		fprintf(f, "%lluK", (unsigned long long)(bytes >> 10));
	else
		fprintf(f, "%llu", (unsigned long long)bytes);
}

/* The limits a run gets ("none" without any), as written in the config. */
static void
config_print_limits(const struct config_limits *l, FILE *f)
{
	char v[32];
	int i, n = 0;

	fprintf(f, "  limits           ");
	for (i = 0; i < CONFIG_LIMIT_KEYS; i++) {
		if (config_limit_value(l, i) == 0)
			continue;
		fprintf(f, "%s%s %s", n++ > 0 ? ", " : "", config_limit_keys[i],
		        config_limit_format(i, config_limit_value(l, i), v, sizeof v));
	}
	fprintf(f, "%s\n", n == 0 ? "none" : "");
}

/* What a job's lease means: a mutex, a semaphore, a side of a read-write lock, or several. */
static void
config_print_leases(FILE *f, const struct config_job *job)
{
	if (job->nlocks > 1)
		fprintf(f, "  leases           %zu locks (below), all held for each run or none\n",
		        job->nlocks);
	else if (job->locks[0].kind == CONFIG_LOCK_READ)
		fprintf(f, "  leases           1: the read side of a read-write lock, runs beside "
		           "other readers, never beside a writer\n");
	else if (job->locks[0].kind == CONFIG_LOCK_WRITE)
		fprintf(f, "  leases           1: the write side of a read-write lock, at most one "
		           "host runs it, and no reader beside it\n");
	else if (job->leases == 1)
		fprintf(f, "  leases           1: mutex, at most one host runs it\n");
	else
		fprintf(f, "  leases           %d: semaphore, at most %d hosts run it at once\n",
		        job->leases, job->leases);
}

/* A job's schedule, where it runs and its lock, for `check`. */
static void
config_print_job_lease(const struct config *cfg, const struct config_job *job, FILE *f)
{
	char d1[32], why[CONFIG_TERM_MAX], *text;
	size_t i;
	int continuous = job->sched != NULL && schedule_kind(job->sched) == SCHEDULE_CONTINUOUS;

	fprintf(f, "\njob %s (%s:%d)\n", job->name, job->file, job->line);
	fprintf(f, "  schedule         %s",
	        job->sched != NULL ? schedule_text(job->sched) : job->schedule);
	if (job->sched != NULL &&
	    strcmp(schedule_resolved(job->sched), schedule_text(job->sched)) != 0)
		fprintf(f, " = %s", schedule_resolved(job->sched));
	if (job->sched != NULL && schedule_kind(job->sched) == SCHEDULE_CRON)
		fprintf(f, " (time zone %s)", job->zone != NULL ? job->zone : "local");
	fputc('\n', f);
	if (job->jitter_ms > 0 && job->sched != NULL) {
		duration_format(job->jitter_ms, d1, sizeof d1);
		fprintf(f, "  jitter           %s: every tick %llds after the schedule\n", d1,
		        (long long)schedule_offset(job->sched));
	}
	text = config_constraint_text(job);
	if (config_job_matches(job, cfg->labels, why, sizeof why))
		fprintf(f, "  runs here        yes%s%s\n", *text != '\0' ? ": constraint " : "",
		        text);
	else
		fprintf(f,
		        "  runs here        no: constraint %s, and %s does not hold for this "
		        "worker's labels\n",
		        text, why);
	free(text);
	config_print_leases(f, job);
	fprintf(f, "  lock             %s%s\n", job->lock_znode,
	        job->lock_path != NULL ? " (lock_path)" : "");
	for (i = 0; job->nlocks > 1 && i < job->nlocks; i++)
		if (job->locks[i].kind == CONFIG_LOCK_SEMAPHORE)
			fprintf(f, "  %-16s %s (semaphore of %d)\n", i == 0 ? "locks" : "",
			        job->locks[i].znode, job->locks[i].leases);
		else
			fprintf(f, "  %-16s %s (%s)\n", i == 0 ? "locks" : "", job->locks[i].znode,
			        config_lock_kind_name(job->locks[i].kind));
	if (!continuous) {
		duration_format(job->start_deadline_ms, d1, sizeof d1);
		fprintf(f, "  per tick         %d host%s, must start within %s\n", job->per_tick,
		        job->per_tick == 1 ? "" : "s", d1);
	}
}

/* The workdir of a job with a user and no workdir: its home, or / when the home is no folder. */
static void
config_print_home(const char *user, FILE *f)
{
	struct passwd *pw = getpwnam(user);
	struct stat st;

	if (pw == NULL || pw->pw_dir == NULL)
		fprintf(f, "  workdir          the home directory of %s\n", user);
	else if (stat(pw->pw_dir, &st) == 0 && S_ISDIR(st.st_mode))
		fprintf(f, "  workdir          %s (the home directory of %s)\n", pw->pw_dir, user);
	else
		fprintf(
		    f,
		    "  workdir          / (the home directory of %s, %s, is not a folder here)\n",
		    user, pw->pw_dir);
}

/* Print one resolved job. */
static void
config_print_job(const struct config *cfg, const struct config_job *job, FILE *f)
{
	char d1[32], d2[32], prog[PATH_MAX];
	struct passwd *pw;
	char **p;
	int continuous = job->sched != NULL && schedule_kind(job->sched) == SCHEDULE_CONTINUOUS;
	/* ticks of a schedule (cron, @every): a job with after alone has none */
	int ticks =
	    !continuous && job->sched != NULL && schedule_kind(job->sched) != SCHEDULE_AFTER;

	config_print_job_lease(cfg, job, f);
	fprintf(f, "  command          ");
	for (p = job->argv; p != NULL && *p != NULL; p++) {
		if (p != job->argv)
			fputc(' ', f);
		config_print_word(*p, f);
	}
	fputc('\n', f);
	if (!job->shell && job->argv != NULL && job->argv[0] != NULL &&
	    strchr(job->argv[0], '/') == NULL) {
		if (config_job_program(job, prog, sizeof prog) != NULL)
			fprintf(f, "  program          %s\n", prog);
		else
			fprintf(f, "  program          %s is not in the job's PATH (%s)\n",
			        job->argv[0], config_job_path(job));
	}
	if (job->user != NULL)
		fprintf(f, "  run as           %s", job->user);
	else if ((pw = getpwuid(geteuid())) != NULL)
		fprintf(f, "  run as           %s (the worker's user)", pw->pw_name);
	else
		fprintf(f, "  run as           uid %ld (the worker's user)", (long)geteuid());
	if (job->group != NULL)
		fprintf(f, ", group %s", job->group);
	if (job->umask != -1)
		fprintf(f, ", umask %03o", (unsigned)job->umask);
	fputc('\n', f);
	if (job->workdir != NULL)
		fprintf(f, "  workdir          %s\n", job->workdir);
	else if (job->user != NULL)
		config_print_home(job->user, f);
	else
		fprintf(f, "  workdir          %s\n", cfg->state_dir);
	for (p = job->env; p != NULL && *p != NULL; p++)
		fprintf(f, "  env              %s\n", *p);
	config_print_names("pass_env", job->pass_env, f);
	if (job->params != NULL)
		config_print_names("params", job->params, f);
	if (job->after != NULL)
		config_print_names("after", job->after, f);
	if (job->timeout_ms == 0)
		fprintf(f, "  timeout          none\n");
	else {
		duration_format(job->timeout_ms, d1, sizeof d1);
		fprintf(f, "  timeout          %s\n", d1);
	}
	if (continuous) {
		duration_format(job->restart_backoff_ms, d1, sizeof d1);
		fprintf(f,
		        "  restarts         back-off from %s; hand the lease over after %d "
		        "failures in a row\n",
		        d1, job->max_failures);
	} else {
		duration_format(job->retry_backoff_ms, d1, sizeof d1);
		fprintf(f, "  retries          %d, back-off from %s\n", job->retries, d1);
		if (ticks && job->catch_up == CONFIG_CATCH_UP_ALL)
			fprintf(f, "  catch_up         all, at most %d\n", job->catch_up_limit);
		else if (ticks)
			fprintf(f, "  catch_up         %s\n", config_catch_up_name(job->catch_up));
		/* Between a chained run and a scheduled one: docs/workflows.md. */
		if (ticks)
			fprintf(f, "  overlap          %s%s\n", config_overlap_name(job->overlap),
			        job->after != NULL ? " (of ticks; a parent run's waits)" : "");
	}
	duration_format(job->kill_grace_ms, d2, sizeof d2);
	fprintf(f, "  kill_grace       %s\n", d2);
	config_print_limits(&job->limits, f);
	fprintf(f, "  log              %s, up to ", job->log_file);
	config_print_size(job->log_max_bytes, f);
	fprintf(f, "\n  history          %d runs, ", job->history);
	if (job->record_output == 0)
		fprintf(f, "no output kept\n");
	else {
		fprintf(f, "each with the output's last ");
		config_print_size(job->record_output, f);
		fprintf(f, "\n");
	}
	fprintf(f, "  on_shutdown      %s\n", config_on_shutdown_name(job->on_shutdown));
	if (job->hooks.on_failure != NULL || job->hooks.on_success != NULL ||
	    job->hooks.on_missed != NULL) {
		duration_format(job->hooks.timeout_ms, d1, sizeof d1);
		fprintf(f, "  hooks            killed after %s\n", d1);
		if (job->hooks.on_failure != NULL)
			fprintf(f, "    on_failure     %s\n", job->hooks.on_failure);
		if (job->hooks.on_success != NULL)
			fprintf(f, "    on_success     %s\n", job->hooks.on_success);
		if (job->hooks.on_missed != NULL)
			fprintf(f, "    on_missed      %s\n", job->hooks.on_missed);
	}
}

/* Print the worker settings and every resolved job, for `leasekeeper check`. */
void
config_print(const struct config *cfg, FILE *f)
{
	char d1[32], d2[32], d3[32];
	const char *colon;
	size_t i;

	duration_format(cfg->session_timeout_ms, d1, sizeof d1);
	fprintf(f, "worker %s (%s)\n", cfg->node_id, cfg->file);
	fprintf(f, "  zookeeper        %s\n", cfg->hosts);
	fprintf(f, "  root             %s\n", cfg->root);
	fprintf(f, "  session_timeout  %s\n", d1);
	if (cfg->auth != NULL) {
		colon = strchr(cfg->auth, ':');
		fprintf(f, "  auth             digest as %.*s%s%s\n",
		        (int)(colon != NULL ? colon - cfg->auth : (ptrdiff_t)strlen(cfg->auth)),
		        cfg->auth, cfg->auth_file != NULL ? ", from " : "",
		        cfg->auth_file != NULL ? cfg->auth_file : "");
	} else
		fprintf(f, "  auth             none: every node is open to every client\n");
	if (cfg->require_acl)
		fprintf(f, "  require_acl      true\n");
	if (cfg->reader != NULL)
		fprintf(f, "  reader           digest:%s may read every node this worker creates\n",
		        cfg->reader);
	if (cfg->operator_id != NULL)
		fprintf(f,
		        "  operator         digest:%s may write control records (requests, "
		        "pauses, drains, stops, leases) and read every node\n",
		        cfg->operator_id);
	fprintf(f, "  jobs             %s (%zu file%s, %zu job%s)\n", cfg->jobs, cfg->njob_files,
	        cfg->njob_files == 1 ? "" : "s", cfg->njobs, cfg->njobs == 1 ? "" : "s");
	fprintf(f, "  state_dir        %s\n", cfg->state_dir);
	fprintf(f, "  allow_root_jobs  %s\n", cfg->allow_root_jobs ? "true" : "false");
	if (cfg->allow_no_jobs)
		fprintf(f, "  allow_no_jobs    true\n");
	if (cfg->allow_open_control)
		fprintf(f,
		        "  control          honoured without credentials (allow_open_control)\n");
	else if (cfg->auth == NULL)
		fprintf(f, "  control          run requests, pauses and drains ignored: no "
		           "credentials (see allow_open_control)\n");
	if (cfg->auth == NULL)
		fprintf(f, "  output           %s\n",
		        cfg->allow_open_output ? "recorded in run records without credentials "
		                                 "(allow_open_output): anyone may read it"
		                               : "not recorded in run records: no credentials (see "
		                                 "allow_open_output)");
	fprintf(f, "  on_shutdown      %s\n", config_on_shutdown_name(cfg->on_shutdown));
	if (cfg->tick_claim != CONFIG_TICK_RANKED)
		fprintf(f, "  tick_claim       %s\n", config_tick_claim_name(cfg->tick_claim));
	if (cfg->unhealthy_after > 0) {
		duration_format(cfg->unhealthy_probe_ms, d2, sizeof d2);
		fprintf(
		    f,
		    "  unhealthy        after %d host start failures in a row; a trial every %s\n",
		    cfg->unhealthy_after, d2);
	} else
		fprintf(f, "  unhealthy        never (unhealthy_after = 0)\n");
	fprintf(f, "  cgroups          %s\n", config_cgroups_name(cfg->cgroups));
	config_print_limits(&cfg->limits, f);
	fprintf(f, "  timezone         %s\n", cfg->timezone != NULL ? cfg->timezone : "local");
	config_print_names("pass_env", cfg->pass_env, f);
	config_print_names("labels", cfg->labels, f);
	duration_format(cfg->safety_margin_ms, d2, sizeof d2);
	duration_format(cfg->kill_grace_ms, d3, sizeof d3);
	fprintf(f, "  safety           safety_margin %s, kill_grace %s\n", d2, d3);
	fprintf(f, "  http             %s\n", cfg->http_listen != NULL ? cfg->http_listen : "off");
	for (i = 0; i < cfg->njobs; i++)
		config_print_job(cfg, cfg->jobs_list[i], f);
}
