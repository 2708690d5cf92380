/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config.c: the worker file and its job files, loaded in two passes, and freed.
 *
 * The first pass (config-read.c) reads every file into sections of raw key = value lines,
 * each with its line number; the second (config-valid.c) resolves defaults and checks
 * values and how they combine. Every problem becomes one "file:line: message" that names
 * the fix, and loading goes on after each, so that `leasekeeper check` shows them all at
 * once. config-print.c prints a loaded configuration for `check`; config-equal.c compares
 * jobs across a reload.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "log.h"
#include "schedule.h"
#include "xmalloc.h"

/* The name of an on_shutdown value, as written in the config. */
const char *
config_on_shutdown_name(enum config_on_shutdown how)
{
	return how == CONFIG_SHUTDOWN_WAIT ? "wait" : "terminate";
}

/* The name of a tick_claim value, as written in the config. */
const char *
config_tick_claim_name(enum config_tick_claim how)
{
	return how == CONFIG_TICK_CONTEND ? "contend" : "ranked";
}

/* The name of a cgroups value, as written in the config. */
const char *
config_cgroups_name(enum config_cgroups how)
{
	return how == CONFIG_CGROUPS_REQUIRED ? "required"
	       : how == CONFIG_CGROUPS_OFF    ? "off"
	                                      : "auto";
}

/* The limit keys, and the cgroup v2 controller each needs. */
const char *const config_limit_keys[CONFIG_LIMIT_KEYS] = {"memory_max", "memory_high", "cpu_max",
                                                          "tasks_max", "io_weight"};
const char *const config_limit_controllers[CONFIG_LIMIT_KEYS] = {"memory", "memory", "cpu", "pids",
                                                                 "io"};

/* The value of limit key i (config_limit_keys order). */
uint64_t
config_limit_value(const struct config_limits *l, int i)
{
	switch (i) {
	case 0:
		return l->memory_max;
	case 1:
		return l->memory_high;
	case 2:
		return l->cpu_max;
	case 3:
		return l->tasks_max;
	case 4:
		return l->io_weight;
	}
	return 0;
}

/* A limit's value as written in the config: "512M", "150%", "64", or "max" for none. */
const char *
config_limit_format(int i, uint64_t v, char *buf, size_t size)
{
	if (v == 0)
		snprintf(buf, size, "max");
	else if (i == 2)
		snprintf(buf, size, "%llu%%", (unsigned long long)v);
	else if (i >= 2)
		snprintf(buf, size, "%llu", (unsigned long long)v);
	else if (v % (1024ULL * 1024 * 1024) == 0)
		snprintf(buf, size, "%lluG", (unsigned long long)(v >> 30));
	else if (v % (1024ULL * 1024) == 0)
		snprintf(buf, size, "%lluM", (unsigned long long)(v >> 20));
	else if (v % 1024 == 0)
		snprintf(buf, size, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

/* The warning `run` and `check` give about a cluster without credentials, or NULL. */
const char *
config_auth_warning(const struct config *cfg)
{
	if (cfg->auth != NULL)
		return NULL;
	return "no [zookeeper] auth or auth_file: any client of the ensemble can delete this "
	       "worker's lock nodes and change its job records; see docs/security.md";
}

/* Free a job's or the worker's hook commands. */
static void
config_hooks_free(struct config_hooks *h)
{
	free(h->on_failure);
	free(h->on_success);
	free(h->on_missed);
}

/* Free one job. */
static void
config_job_free(struct config_job *job)
{
	if (job == NULL)
		return;
	free(job->name);
	free(job->file);
	free(job->command);
	config_free_argv(job->argv);
	free(job->schedule);
	schedule_free(job->sched);
	free(job->timezone);
	free(job->zone);
	free(job->lock);
	free(job->lock_path);
	free(job->lock_znode);
	config_free_locks(job);
	free(job->user);
	free(job->group);
	free(job->workdir);
	config_free_argv(job->env);
	config_free_argv(job->pass_env);
	config_free_argv(job->params);
	config_free_argv(job->after);
	config_free_constraint(job);
	free(job->log_file);
	config_hooks_free(&job->hooks);
	free(job);
}

/*
 * Load the worker file and every job file it names. Returns 0 with *out set, or -1 with
 * every problem in errors (each "file:line: message") and *out NULL.
 */
int
config_load(const char *file, struct config **out, struct config_errors *errors)
{
	return config_load_opts(file, out, errors, 0);
}

#define CONFIG_LOADER_LINES 256 /* lines of a job file read per step */
#define CONFIG_LOADER_FREE  256 /* sections freed per step, once the checks are done */

/*
 * A load in steps, so that a reload can yield to its loop between them: the worker file (and
 * the list of job files), then CONFIG_LOADER_LINES lines of a job file per step, then one
 * job resolved per step, then the checks across jobs (two steps), then the sections read
 * freed a few per step. The problems found are those of a load in one go.
 */
struct config_loader {
	struct config_ctx ctx;
	struct config *cfg;
	struct config_sec **kept;
	const struct config_kv *kv; /* [worker] jobs */
	char *dir;
	unsigned flags;
	size_t nerrs; /* before the job files were looked for */
	size_t i;
	enum {
		CONFIG_STEP_WORKER,
		CONFIG_STEP_FILES,
		CONFIG_STEP_JOBS,
		CONFIG_STEP_LOCKS,
		CONFIG_STEP_CHECKS,
		CONFIG_STEP_FREE,
		CONFIG_STEP_DONE
	} step;
};

/* Begin loading file (and the job files it names), nothing read yet. */
struct config_loader *
config_loader_new(const char *file, unsigned flags)
{
	struct config_loader *l = xcalloc(1, sizeof *l);

	l->cfg = xcalloc(1, sizeof *l->cfg);
	l->flags = flags;
	l->cfg->file = xstrdup(file);
	l->dir = config_dirname(file);
	config_add_file(&l->ctx, file);
	return l;
}

/* The worker file, and the job files it names found. */
static void
config_loader_worker(struct config_loader *l)
{
	char *path = config_absolute(l->dir);

	l->step = CONFIG_STEP_DONE;
	if (path == NULL) {
		config_error(
		    &l->ctx, 0, 0,
		    "cannot resolve the relative path: the working directory is gone (%s); "
		    "give the configuration file as an absolute path",
		    strerror(errno));
		return;
	}
	l->cfg->dir = config_clean_path(path);
	free(path);
	if (config_read_file(&l->ctx, 0, 1) != 0)
		return;
	config_resolve_worker(&l->ctx, l->cfg);
	l->kv = config_kv_find(l->ctx.worker[CONFIG_WORKER], "jobs");
	l->nerrs = l->ctx.nerrs;
	config_find_job_files(&l->ctx, l->cfg, l->kv, l->dir);
	l->step = CONFIG_STEP_FILES;
}

/* One job of the sections read: resolved, and kept unless it is discarded. */
static void
config_loader_job(struct config_loader *l)
{
	struct config *cfg = l->cfg;
	struct config_job *job = config_resolve_job(&l->ctx, cfg, l->ctx.secs[l->i]);

	if (l->ctx.secs[l->i]->discard) {
		config_job_free(job);
		return;
	}
	cfg->jobs_list = xreallocarray(cfg->jobs_list, cfg->njobs + 1, sizeof *cfg->jobs_list);
	l->kept[cfg->njobs] = l->ctx.secs[l->i];
	cfg->jobs_list[cfg->njobs++] = job;
}

/* One step of a load (a file read, or a job resolved); 1 once the load is over. */
int
config_loader_step(struct config_loader *l)
{
	size_t i;

	switch (l->step) {
	case CONFIG_STEP_WORKER:
		config_loader_worker(l);
		return 0;
	case CONFIG_STEP_FILES:
		if (l->ctx.f != NULL) { /* a file being read */
			if (config_read_some(&l->ctx, CONFIG_LOADER_LINES))
				l->i++;
			return 0;
		}
		if (l->i < l->cfg->njob_files) {
			if (config_read_open(
			        &l->ctx, config_add_file(&l->ctx, l->cfg->job_files[l->i]), 0) != 0)
				l->i++;
			return 0;
		}
		if (l->ctx.nsecs == 0 && !l->cfg->allow_no_jobs && l->ctx.nerrs == l->nerrs &&
		    !(l->flags & CONFIG_LOAD_ALLOW_NO_JOBS))
			config_no_jobs(&l->ctx, l->cfg, l->kv);
		l->kept = xcalloc(l->ctx.nsecs + 1, sizeof *l->kept);
		l->i = 0;
		l->step = CONFIG_STEP_JOBS;
		return 0;
	case CONFIG_STEP_JOBS:
		if (l->i < l->ctx.nsecs) {
			config_loader_job(l);
			l->i++;
			return 0;
		}
		l->step = CONFIG_STEP_LOCKS;
		return 0;
	case CONFIG_STEP_LOCKS:
		config_check_locks(&l->ctx, l->cfg, l->kept);
		l->step = CONFIG_STEP_CHECKS;
		return 0;
	case CONFIG_STEP_CHECKS:
		config_check_lock_kinds(&l->ctx, l->cfg, l->kept);
		config_check_after(&l->ctx, l->cfg, l->kept);
		/* Output is a secret: without credentials run records are anyone's to read. */
		if (l->cfg->auth == NULL && !l->cfg->allow_open_output) {
			for (i = 0; i < l->cfg->njobs; i++)
				l->cfg->jobs_list[i]->record_output = 0;
		}
		l->step = CONFIG_STEP_FREE;
		l->i = 0;
		return 0;
	case CONFIG_STEP_FREE: /* the sections read, no longer needed: a few per step */
		for (i = 0; i < CONFIG_LOADER_FREE && l->i < l->ctx.nsecs; i++, l->i++) {
			config_sec_free(l->ctx.secs[l->i]);
			l->ctx.secs[l->i] = NULL;
		}
		if (l->i < l->ctx.nsecs)
			return 0;
		l->step = CONFIG_STEP_DONE;
		return 1;
	case CONFIG_STEP_DONE:
		break;
	}
	return 1;
}

/*
 * End a load (over or not): 0 with *out set, or -1 with every problem in errors (each
 * "file:line: message") and *out NULL; l is freed. A load cut short (out NULL) is dropped.
 */
int
config_loader_finish(struct config_loader *l, struct config **out, struct config_errors *errors)
{
	struct config_errors none = {NULL, 0};
	int ok;

	if (errors == NULL)
		errors = &none;
	errors->lines = NULL;
	errors->n = 0;
	if (l->ctx.f != NULL) /* cut short in a file */
		fclose(l->ctx.f);
	config_ctx_finish(&l->ctx, errors);
	ok = errors->n == 0 && l->step == CONFIG_STEP_DONE && out != NULL;
	if (out != NULL)
		*out = ok ? l->cfg : NULL;
	if (!ok)
		config_free(l->cfg);
	config_errors_free(&none);
	free(l->kept);
	free(l->dir);
	free(l);
	return ok ? 0 : -1;
}

/* config_load, with flags: CONFIG_LOAD_ALLOW_NO_JOBS for a command that runs no job of the
 * configuration (exec, status, the controls): a file with [zookeeper] alone is enough. */
int
config_load_opts(const char *file, struct config **out, struct config_errors *errors,
                 unsigned flags)
{
	struct config_loader *l = config_loader_new(file, flags);

	while (!config_loader_step(l))
		;
	return config_loader_finish(l, out, errors);
}

/*
 * Free at most n of a configuration's jobs, from the last (a configuration a reload replaced
 * is freed a slice at a time); 1 once none is left. The configuration keeps its other parts
 * for config_free, and must not be used for its jobs any more.
 */
int
config_free_jobs(struct config *cfg, size_t n)
{
	for (; n > 0 && cfg->njobs > 0; n--)
		config_job_free(cfg->jobs_list[--cfg->njobs]);
	return cfg->njobs == 0;
}

/* Free a configuration and its jobs. */
void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	config_free_jobs(cfg, SIZE_MAX);
	for (i = 0; i < cfg->njobs; i++)
		config_job_free(cfg->jobs_list[i]);
	free(cfg->jobs_list);
	for (i = 0; i < cfg->njob_files; i++)
		free(cfg->job_files[i]);
	free(cfg->job_files);
	free(cfg->file);
	free(cfg->dir);
	free(cfg->hosts);
	free(cfg->root);
	if (cfg->auth != NULL)
		explicit_bzero(cfg->auth, strlen(cfg->auth));
	free(cfg->auth);
	free(cfg->auth_file);
	free(cfg->reader);
	free(cfg->operator_id);
	free(cfg->node_id);
	free(cfg->jobs);
	free(cfg->state_dir);
	config_hooks_free(&cfg->hooks);
	free(cfg->timezone);
	config_free_argv(cfg->pass_env);
	config_free_argv(cfg->labels);
	free(cfg->http_listen);
	free(cfg);
}

/* Load a configuration for a command, printing every error on stderr; NULL if there were any. */
struct config *
config_load_print(const char *file)
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

/* Free the problems config_load reported. */
void
config_errors_free(struct config_errors *errors)
{
	size_t i;

	for (i = 0; i < errors->n; i++)
		free(errors->lines[i]);
	free(errors->lines);
	errors->lines = NULL;
	errors->n = 0;
}

/* The job called name, or NULL. */
struct config_job *
config_find_job(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->njobs; i++) {
		if (strcmp(cfg->jobs_list[i]->name, name) == 0)
			return cfg->jobs_list[i];
	}
	return NULL;
}
