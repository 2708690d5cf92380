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

/* config_load, with flags: CONFIG_LOAD_ALLOW_NO_JOBS for a command that runs no job of the
 * configuration (exec, status, the controls): a file with [zookeeper] alone is enough. */
int
config_load_opts(const char *file, struct config **out, struct config_errors *errors,
                 unsigned flags)
{
	struct config_ctx ctx;
	struct config *cfg = xcalloc(1, sizeof *cfg);
	struct config_sec **kept = NULL;
	struct config_job *job;
	struct config_kv *kv;
	char *dir, *path;
	size_t i, nerrs;

	memset(&ctx, 0, sizeof ctx);
	errors->lines = NULL;
	errors->n = 0;
	*out = NULL;

	cfg->file = xstrdup(file);
	dir = config_dirname(file);
	path = config_absolute(dir);
	config_add_file(&ctx, file);
	if (path == NULL) {
		config_error(
		    &ctx, 0, 0,
		    "cannot resolve the relative path: the working directory is gone (%s); "
		    "give the configuration file as an absolute path",
		    strerror(errno));
		free(path);
		goto done;
	}
	cfg->dir = config_clean_path(path);
	free(path);
	if (config_read_file(&ctx, 0, 1) != 0)
		goto done;
	config_resolve_worker(&ctx, cfg);
	kv = config_kv_find(ctx.worker[CONFIG_WORKER], "jobs");
	nerrs = ctx.nerrs;
	config_find_job_files(&ctx, cfg, kv, dir);
	for (i = 0; i < cfg->njob_files; i++)
		config_read_file(&ctx, config_add_file(&ctx, cfg->job_files[i]), 0);
	if (ctx.nsecs == 0 && !cfg->allow_no_jobs && ctx.nerrs == nerrs &&
	    !(flags & CONFIG_LOAD_ALLOW_NO_JOBS))
		config_no_jobs(&ctx, cfg, kv);

	kept = xcalloc(ctx.nsecs, sizeof *kept);
	for (i = 0; i < ctx.nsecs; i++) {
		job = config_resolve_job(&ctx, cfg, ctx.secs[i]);
		if (ctx.secs[i]->discard) {
			config_job_free(job);
			continue;
		}
		cfg->jobs_list =
		    xreallocarray(cfg->jobs_list, cfg->njobs + 1, sizeof *cfg->jobs_list);
		kept[cfg->njobs] = ctx.secs[i];
		cfg->jobs_list[cfg->njobs++] = job;
	}
	config_check_locks(&ctx, cfg, kept);
	config_check_lock_kinds(&ctx, cfg, kept);
	config_check_after(&ctx, cfg, kept);
	/* Output is a secret: without credentials run records are anyone's to read. */
	if (cfg->auth == NULL && !cfg->allow_open_output) {
		for (i = 0; i < cfg->njobs; i++)
			cfg->jobs_list[i]->record_output = 0;
	}

done:
	config_ctx_finish(&ctx, errors);
	free(kept);
	free(dir);
	if (errors->n != 0) {
		config_free(cfg);
		return -1;
	}
	*out = cfg;
	return 0;
}

/* Free a configuration and its jobs. */
void
config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
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
