/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-valid-job.c: the second pass of config_load for the jobs: each [job NAME] resolved
 * into struct config_job over the worker's defaults (command, schedule, lease and lock, runs,
 * process, output), and the jobs checked against each other; each problem names its fix.
 */

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config-int.h"
#include "duration.h"
#include "layout.h"
#include "leasekeeper.h"
#include "proto.h"
#include "schedule.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_MAX_COMMAND_BYTES 32768
#define CONFIG_MIN_BACKOFF_MS    1000

/*
 * Read a back-off key (the first delay before a retry or restart, doubled each time) of at
 * least CONFIG_MIN_BACKOFF_MS: shorter ones make storms of runs and ZooKeeper writes.
 */
static void
config_get_backoff(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                   const char *what, const char *storm, uint64_t *out)
{
	uint64_t ms;
	char a[32];

	if (config_get_duration(ctx, sec, key, &ms) != 1)
		return;
	if (ms < CONFIG_MIN_BACKOFF_MS) {
		duration_format(ms, a, sizeof a);
		config_error_kv(ctx, sec, config_kv_find(sec, key),
		                "%s = %s is too short: with no pause %s; write at least %s = 1s "
		                "(the first %s delay, doubled after each failure)",
		                key, a, storm, key, what);
		return;
	}
	*out = ms;
}

/* Append one word to a NULL-terminated argv. */
static void
config_argv_add(char ***argv, size_t *n, const char *word, size_t len)
{
	*argv = xreallocarray(*argv, *n + 2, sizeof **argv);
	(*argv)[(*n)++] = xstrndup(word, len);
	(*argv)[*n] = NULL;
}

/*
 * Split a command on whitespace into a NULL-terminated argv. Single quotes keep everything
 * up to the next single quote; double quotes do too, except that \" and \\ stand for " and
 * \; outside quotes a backslash keeps the next character. Quoted and bare parts next to each
 * other make one word, and "" makes an empty word.
 */
static int
config_split_command(const char *text, char ***argv, char **cause)
{
	char **out = NULL, *word = xmalloc(strlen(text) + 1), *q;
	const char *p = text, *open;
	size_t n = 0, len;
	int in_word;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			break;
		len = 0;
		in_word = 0;
		while (*p != '\0' && !isspace((unsigned char)*p)) {
			in_word = 1;
			if (*p == '\'') {
				open = p++;
				while (*p != '\0' && *p != '\'')
					word[len++] = *p++;
				if (*p == '\0')
					goto unbalanced;
				p++;
			} else if (*p == '"') {
				open = p++;
				while (*p != '\0' && *p != '"') {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					word[len++] = *p++;
				}
				if (*p == '\0')
					goto unbalanced;
				p++;
			} else if (*p == '\\') {
				if (p[1] == '\0') {
					xasprintf(
					    cause,
					    "command ends with a lone backslash: remove it or "
					    "quote it as '\\\\'");
					goto fail;
				}
				word[len++] = p[1];
				p += 2;
			} else
				word[len++] = *p++;
		}
		if (in_word)
			config_argv_add(&out, &n, word, len);
	}
	free(word);
	if (n == 0) {
		*cause = xstrdup("command is empty: give the program to run and its arguments");
		config_free_argv(out);
		return -1;
	}
	if (*out[0] == '\0') {
		*cause = xstrdup("the program to run is an empty word (''): name the program, e.g. "
		                 "command = /usr/bin/backup --full");
		config_free_argv(out);
		return -1;
	}
	*argv = out;
	return 0;

unbalanced:
	q = utf8_quote_str(open);
	xasprintf(cause,
	          "unbalanced %c quote at %s: close it, or set shell = true to let "
	          "/bin/sh read the command",
	          *open, q);
	free(q);
fail:
	free(word);
	config_free_argv(out);
	return -1;
}

/* Free a NULL-terminated argv. */
void
config_free_argv(char **argv)
{
	char **p;

	if (argv == NULL)
		return;
	for (p = argv; *p != NULL; p++)
		free(*p);
	free(argv);
}

/*
 * A job's command, arguments and environment travel to the supervisor in one message of
 * at most 64 KiB, with leasekeeper's own variables and settings: keep them to 32 KiB.
 */
static void
config_check_size(struct config_ctx *ctx, const struct config_sec *sec,
                  const struct config_job *job)
{
	size_t i, total = 0;

	for (i = 0; job->argv != NULL && job->argv[i] != NULL; i++)
		total += strlen(job->argv[i]) + 2;
	for (i = 0; i < job->nenv; i++)
		total += strlen(job->env[i]) + 2;
	if (total > CONFIG_MAX_COMMAND_BYTES)
		config_error_kv(ctx, sec, config_kv_find(sec, "command"),
		                "the command and env of job \"%s\" take %zu bytes; the most is %d: "
		                "move long data into a file that the command reads",
		                job->name, total, CONFIG_MAX_COMMAND_BYTES);
}

/* Check and collect the env lines of a job. */
static void
config_resolve_env(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv;
	const char *eq;
	size_t i, j, klen;

	job->env = xcalloc(1, sizeof *job->env);
	for (i = 0; i < sec->nkv; i++) {
		kv = &sec->kv[i];
		if (strcmp(kv->key, "env") != 0)
			continue;
		if ((eq = strchr(kv->value, '=')) == NULL) {
			config_error_kv(ctx, sec, kv,
			                "bad env %s: write env = KEY=VALUE, e.g. env = "
			                "PATH=/usr/bin:/bin",
			                config_q(ctx, kv->value));
			continue;
		}
		klen = (size_t)(eq - kv->value);
		if (!config_valid_identifier(kv->value, klen)) {
			config_error_kv(ctx, sec, kv,
			                "bad env name \"%.*s\": use letters, digits and '_', not "
			                "starting with a digit, e.g. env = MY_VAR=1",
			                (int)klen, kv->value);
			continue;
		}
		if (strncmp(kv->value, "LEASEKEEPER_", 12) == 0) {
			config_error_kv(
			    ctx, sec, kv,
			    "env %.*s uses the reserved prefix LEASEKEEPER_ (leasekeeper "
			    "sets those itself): rename it",
			    (int)klen, kv->value);
			continue;
		}
		for (j = 0; j < job->nenv; j++) {
			if (strncmp(job->env[j], kv->value, klen + 1) == 0)
				break;
		}
		if (j != job->nenv) {
			config_error_kv(ctx, sec, kv, "env %.*s is set twice in [job %s]: keep one",
			                (int)klen, kv->value, job->name);
			continue;
		}
		job->env = xreallocarray(job->env, job->nenv + 2, sizeof *job->env);
		job->env[job->nenv++] = xstrdup(kv->value);
		job->env[job->nenv] = NULL;
	}
}

/* Check and resolve user, group and whether the job would run as root. */
static void
config_resolve_user(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec,
                    struct config_job *job)
{
	const struct config_kv *kv_u = config_kv_find(sec, "user");
	const struct config_kv *kv_g = config_kv_find(sec, "group");
	struct passwd *pw;
	struct group *gr;
	int root = -1;

	job->uid = (uid_t)-1;
	job->gid = (gid_t)-1;
	if (kv_u != NULL) {
		job->user = xstrdup(kv_u->value);
		if ((pw = getpwnam(kv_u->value)) == NULL)
			config_error_kv(ctx, sec, kv_u,
			                "unknown user %s: create the account or fix the name",
			                config_q(ctx, kv_u->value));
		else {
			job->uid = pw->pw_uid;
			job->gid = pw->pw_gid;
			root = pw->pw_uid == 0;
			if (geteuid() != 0 && pw->pw_uid != geteuid())
				config_error_kv(
				    ctx, sec, kv_u,
				    "user = %s needs a worker running as root (this one "
				    "runs as uid %ld): run the worker as root, or remove "
				    "user to run the job as the worker's own user",
				    kv_u->value, (long)geteuid());
		}
	} else
		root = geteuid() == 0;
	if (kv_g != NULL) {
		job->group = xstrdup(kv_g->value);
		if ((gr = getgrnam(kv_g->value)) == NULL)
			config_error_kv(ctx, sec, kv_g,
			                "unknown group %s: create the group or fix the name",
			                config_q(ctx, kv_g->value));
		else
			job->gid = gr->gr_gid;
	}
	if (root == 1 && !cfg->allow_root_jobs)
		config_error_kv(
		    ctx, sec, kv_u,
		    "job \"%s\" would run as root%s: set user = NAME in [job %s] to run "
		    "it as an unprivileged user, or set allow_root_jobs = true in "
		    "[worker] if it really must run as root",
		    job->name, kv_u != NULL ? "" : " (no user is set and the worker runs as root)",
		    job->name);
}

/* Report a key set on a job of the wrong kind. */
static void
config_misplaced(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                 int continuous)
{
	const struct config_kv *kv = config_kv_find(sec, key);

	if (kv == NULL)
		return;
	if (continuous)
		config_error_kv(ctx, sec, kv,
		                "%s applies only to scheduled jobs (cron or @every) and job \"%s\" "
		                "is @continuous: remove it (an @continuous job uses max_failures "
		                "and restart_backoff)",
		                key, sec->name);
	else
		config_error_kv(ctx, sec, kv,
		                "%s applies only to @continuous jobs and job \"%s\" runs on a "
		                "schedule: remove it (a scheduled job uses retries and "
		                "retry_backoff)",
		                key, sec->name);
}

/* A job's command and shell: the argv the supervisor executes. */
static void
config_resolve_job_command(struct config_ctx *ctx, const struct config_sec *sec,
                           struct config_job *job)
{
	const struct config_kv *kv;
	char *cause;

	job->shell = 1;
	config_get_bool(ctx, sec, "shell", &job->shell);
	if ((kv = config_kv_find(sec, "command")) == NULL && sec->refused == 0)
		config_error_kv(ctx, sec, NULL,
		                "job \"%s\" has no command: add command = ... to [job %s], e.g. "
		                "command = echo hello",
		                job->name, job->name);
	else if (kv != NULL) {
		job->command = xstrdup(kv->value);
		if (!job->shell) {
			if (config_split_command(job->command, &job->argv, &cause) != 0) {
				config_error_kv(ctx, sec, kv, "%s", cause);
				free(cause);
			}
		} else {
			job->argv = xcalloc(4, sizeof *job->argv);
			job->argv[0] = xstrdup("/bin/sh");
			job->argv[1] = xstrdup("-c");
			job->argv[2] = xstrdup(job->command);
		}
	}
}

/* A job's timezone and schedule: 1 if the schedule is good (job->sched set), else 0. */
static int
config_resolve_job_schedule(struct config_ctx *ctx, const struct config *cfg,
                            const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv;
	char *cause;

	if ((kv = config_kv_find(sec, "timezone")) != NULL) {
		job->timezone = xstrdup(kv->value);
		if (config_check_zone(ctx, sec, kv) == 0)
			job->zone = xstrdup(kv->value);
	} else if (cfg->timezone != NULL)
		job->zone = xstrdup(cfg->timezone);
	kv = config_kv_find(sec, "schedule");
	/* With after, a cron or @every schedule adds its ticks (docs/workflows.md). */
	if (config_kv_find(sec, "after") != NULL && kv != NULL &&
	    strncasecmp(kv->value + strspn(kv->value, " \t"), "@continuous", 11) == 0) {
		config_error_kv(ctx, sec, kv,
		                "a job with after runs once per parent run, or on a cron or @every "
		                "schedule as well, never @continuous: remove schedule (or after)");
		kv = NULL;
	} else if (kv != NULL &&
	           strncasecmp(kv->value + strspn(kv->value, " \t"), "@after", 6) == 0) {
		config_error_kv(ctx, sec, kv,
		                "schedule @after is what after = JOB sets: write after = JOB "
		                "instead of a schedule");
		kv = NULL;
	}
	job->schedule = xstrdup(kv != NULL                             ? kv->value
	                        : config_kv_find(sec, "after") != NULL ? "@after"
	                                                               : "@continuous");
	/* a bad zone is reported once, at its own line; job->zone is then NULL */
	if (schedule_parse_job(job->schedule, job->zone, job->name, &job->sched, &cause) != 0) {
		config_error_kv(ctx, sec, kv, "schedule: %s", cause);
		free(cause);
		job->sched = NULL;
		return 0;
	}
	if (schedule_never(job->sched))
		config_error_kv(ctx, sec, kv,
		                "schedule \"%s\" can never fire: no month it names has the "
		                "days of month it names (such as 30 February or 31 April); fix "
		                "the day or the month (for the last day of a month, run on "
		                "28-31 and test the date in the command)",
		                schedule_text(job->sched));
	return 1;
}

/*
 * A job's lease and lock: leases, lock or lock_path, per_tick, jitter (on a good schedule,
 * ok_sched), where it may run, and start_deadline.
 */
static void
config_resolve_job_lease(struct config_ctx *ctx, const struct config *cfg,
                         const struct config_sec *sec, struct config_job *job, int ok_sched)
{
	const struct config_kv *kv, *kv2;
	int ok_leases, ok_tick;
	char *cause;

	job->leases = 1;
	ok_leases = config_get_int(
	    ctx, sec, "leases", 1, LK_MAX_LEASES,
	    " (1 is a mutex, more is a semaphore with that many leases)",
	    ", the same limit as in set-leases, exec and the job record in ZooKeeper: lower it",
	    &job->leases);
	kv = config_kv_find(sec, "lock");
	kv2 = config_kv_find(sec, "lock_path");
	if (kv != NULL) {
		if (!znode_valid_name(kv->value, &cause)) {
			config_error_kv(ctx, sec, kv, "bad lock %s", cause);
			free(cause);
		}
		job->lock = xstrdup(kv->value);
	} else
		job->lock = xstrdup(job->name);
	if (kv2 != NULL) {
		if (!znode_valid_path(kv2->value, &cause)) {
			config_error_kv(ctx, sec, kv2, "bad lock_path %s", cause);
			free(cause);
		}
		job->lock_path = xstrdup(kv2->value);
		if (kv != NULL)
			config_error_kv(
			    ctx, sec, kv2,
			    "both lock (line %d) and lock_path are set: keep one (lock "
			    "names a lock under %s, lock_path is a full ZooKeeper path)",
			    kv->line, cfg->root);
		job->lock_znode = xstrdup(kv2->value);
	} else
		job->lock_znode = layout_lock_path(cfg->root, job->lock, NULL, job->leases);
	config_resolve_job_locks(ctx, cfg, sec, job);
	job->per_tick = 1;
	ok_tick =
	    config_get_int(ctx, sec, "per_tick", 1, LK_MAX_LEASES, NULL, NULL, &job->per_tick);
	if (ok_tick == 1 && ok_leases >= 0 && job->per_tick > job->leases)
		config_error_kv(ctx, sec, config_kv_find(sec, "per_tick"),
		                "per_tick = %d is more than leases = %d, so a tick could never be "
		                "run: lower per_tick or raise leases",
		                job->per_tick, job->leases);
	if (config_get_duration(ctx, sec, "jitter", &job->jitter_ms) == 1 && ok_sched &&
	    schedule_set_jitter(job->sched, job->jitter_ms, &cause) != 0) {
		config_error_kv(ctx, sec, config_kv_find(sec, "jitter"), "%s", cause);
		free(cause);
	}
	config_resolve_constraint(ctx, sec, job);
	job->start_deadline_ms = 60000;
	if (config_get_duration(ctx, sec, "start_deadline", &job->start_deadline_ms) == 1 &&
	    job->start_deadline_ms == 0)
		config_error_kv(
		    ctx, sec, config_kv_find(sec, "start_deadline"),
		    "start_deadline must be more than 0: it is how long a tick may wait "
		    "for a lease before it counts as missed, e.g. 1m");
}

/*
 * A job's runs, retries and restarts: timeout, retries and restarts with their back-offs,
 * kill_grace; on a good schedule (ok_sched), the keys of the other kind of job are refused.
 */
static void
config_resolve_job_runs(struct config_ctx *ctx, const struct config *cfg,
                        const struct config_sec *sec, struct config_job *job, int ok_sched)
{
	const struct config_kv *kv;
	char a[32], b[32];

	if ((kv = config_kv_find(sec, "timeout")) != NULL && strcmp(kv->value, "0") != 0 &&
	    strcmp(kv->value, "none") != 0)
		config_get_duration(ctx, sec, "timeout", &job->timeout_ms);
	config_get_int(ctx, sec, "retries", 0, INT_MAX, NULL, NULL, &job->retries);
	job->retry_backoff_ms = 10000;
	config_get_backoff(ctx, sec, "retry_backoff", "retry",
	                   "a failed run is tried again at once, and again",
	                   &job->retry_backoff_ms);
	job->max_failures = 5;
	config_get_int(ctx, sec, "max_failures", 1, INT_MAX, NULL, NULL, &job->max_failures);
	job->restart_backoff_ms = 1000;
	config_get_backoff(ctx, sec, "restart_backoff", "restart",
	                   "a failing job is restarted, and its lease handed over, thousands of "
	                   "times a minute",
	                   &job->restart_backoff_ms);
	job->kill_grace_ms = cfg->kill_grace_ms;
	if (config_get_duration(ctx, sec, "kill_grace", &job->kill_grace_ms) == 1) {
		kv = config_kv_find(sec, "kill_grace");
		if (job->kill_grace_ms == 0)
			config_error_kv(
			    ctx, sec, kv,
			    "kill_grace must be more than 0: the job needs time between "
			    "SIGTERM and SIGKILL to stop cleanly, e.g. 2s");
		else if (cfg->safety_margin_ms + job->kill_grace_ms > cfg->session_timeout_ms / 2) {
			duration_format(job->kill_grace_ms, a, sizeof a);
			duration_format(cfg->session_timeout_ms / 2 - cfg->safety_margin_ms, b,
			                sizeof b);
			config_error_kv(
			    ctx, sec, kv,
			    "kill_grace (%s) is too long for this session: at most %s "
			    "(session_timeout/2 - safety_margin). At the lease deadline the "
			    "job gets SIGTERM kill_grace early, and the heartbeat runs every "
			    "session_timeout/3, so a longer grace would stop the job after "
			    "one late heartbeat; lower kill_grace or raise session_timeout",
			    a, b);
		}
	}
	if (ok_sched && schedule_kind(job->sched) == SCHEDULE_CONTINUOUS) {
		config_misplaced(ctx, sec, "per_tick", 1);
		config_misplaced(ctx, sec, "retries", 1);
		config_misplaced(ctx, sec, "retry_backoff", 1);
		config_misplaced(ctx, sec, "start_deadline", 1);
	} else if (ok_sched) {
		config_misplaced(ctx, sec, "max_failures", 0);
		config_misplaced(ctx, sec, "restart_backoff", 0);
	}
}

/* How a job's process is made: user, group, umask, workdir, environment and limits. */
static void
config_resolve_job_process(struct config_ctx *ctx, const struct config *cfg,
                           const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv;
	char *end;
	long mask;
	size_t n;

	config_resolve_user(ctx, cfg, sec, job);
	job->umask = -1;
	if ((kv = config_kv_find(sec, "umask")) != NULL) {
		errno = 0;
		mask = strtol(kv->value, &end, 8);
		if (strspn(kv->value, "01234567") != strlen(kv->value) || *end != '\0' ||
		    errno != 0 || mask > 0777)
			config_error_kv(ctx, sec, kv,
			                "bad umask %s: write an octal mode from 0 to 0777, e.g. "
			                "umask = 022",
			                config_q(ctx, kv->value));
		else
			job->umask = (int)mask;
	}
	if ((kv = config_kv_find(sec, "workdir")) != NULL) {
		if (kv->value[0] != '/')
			config_error_kv(ctx, sec, kv,
			                "workdir %s is not absolute: write a full path, e.g. "
			                "workdir = /srv/app",
			                config_q(ctx, kv->value));
		job->workdir = xstrdup(kv->value);
	}
	config_resolve_env(ctx, sec, job);
	if ((kv = config_kv_find(sec, "pass_env")) != NULL)
		config_resolve_pass_env(ctx, sec, kv, &job->pass_env);
	else {
		for (n = 0; cfg->pass_env != NULL && cfg->pass_env[n] != NULL; n++)
			;
		job->pass_env = xcalloc(n + 1, sizeof *job->pass_env);
		while (n-- > 0)
			job->pass_env[n] = xstrdup(cfg->pass_env[n]);
	}
	config_resolve_params(ctx, sec, job);
	config_resolve_after(ctx, sec, job);
	config_check_size(ctx, sec, job);
	config_get_limits(ctx, sec, &cfg->limits, cfg->cgroups, &job->limits);
}

/* A job's output and records: log_file, log_max, history, hooks, record_output, on_shutdown. */
static void
config_resolve_job_output(struct config_ctx *ctx, const struct config *cfg,
                          const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv;
	char *cause;

	if ((kv = config_kv_find(sec, "log_file")) != NULL) {
		if (kv->value[0] != '/')
			config_error_kv(ctx, sec, kv,
			                "log_file %s is not absolute: write a full path, or leave "
			                "it out for %s/jobs/%s.log",
			                config_q(ctx, kv->value), cfg->state_dir, job->name);
		job->log_file = xstrdup(kv->value);
	} else
		xasprintf(&job->log_file, "%s/jobs/%s.log", cfg->state_dir, job->name);
	config_perm_log(ctx, sec, kv, job->log_file);
	job->log_max_bytes = 10 * 1024 * 1024;
	if ((kv = config_kv_find(sec, "log_max")) != NULL) {
		if (config_parse_size(kv->value, &job->log_max_bytes, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "log_max: %s", cause);
			free(cause);
		} else if (job->log_max_bytes == 0)
			config_error_kv(ctx, sec, kv,
			                "log_max must be more than 0: it caps the log before it is "
			                "rotated, e.g. log_max = 10M");
	}
	job->history = 20;
	config_get_int(ctx, sec, "history", 0, INT_MAX, NULL, NULL, &job->history);
	config_get_hooks(ctx, sec, &cfg->hooks, &job->hooks);
	job->record_output = CONFIG_DEFAULT_RECORD_OUTPUT;
	if ((kv = config_kv_find(sec, "record_output")) != NULL) {
		if (config_parse_size(kv->value, &job->record_output, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "record_output: %s", cause);
			free(cause);
		} else if (job->record_output > PROTO_MAX_TAIL)
			config_error_kv(ctx, sec, kv,
			                "record_output %s is more than %dK: run records stay small "
			                "in ZooKeeper; the whole output is in log_file. Write at "
			                "most record_output = %dK, or 0 to keep none",
			                config_q(ctx, kv->value), PROTO_MAX_TAIL / 1024,
			                PROTO_MAX_TAIL / 1024);
	}
	job->on_shutdown = cfg->on_shutdown;
	config_get_on_shutdown(ctx, sec, &job->on_shutdown);
}

/* Resolve one [job NAME] section; NULL (with errors reported) when it cannot be built. */
struct config_job *
config_resolve_job(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec)
{
	struct config_job *job = xcalloc(1, sizeof *job);
	int ok_sched;

	job->name = xstrdup(sec->name);
	job->file = xstrdup(ctx->files[sec->file]);
	job->line = sec->line;
	config_resolve_job_command(ctx, sec, job);
	ok_sched = config_resolve_job_schedule(ctx, cfg, sec, job);
	config_resolve_job_lease(ctx, cfg, sec, job, ok_sched);
	config_resolve_job_runs(ctx, cfg, sec, job, ok_sched);
	config_resolve_policy(ctx, sec, job, ok_sched);
	config_resolve_job_process(ctx, cfg, sec, job);
	config_resolve_job_output(ctx, cfg, sec, job);
	return job;
}

/* Jobs share a lock: both by lock_path, or both by lock (a lock_path never equals a lock). */
static int
config_lock_key_cmp(const struct config_job *a, const struct config_job *b)
{
	if ((a->lock_path != NULL) != (b->lock_path != NULL))
		return a->lock_path != NULL ? 1 : -1;
	return a->lock_path != NULL ? strcmp(a->lock_path, b->lock_path) : strcmp(a->lock, b->lock);
}

static const struct config *config_lock_sort; /* qsort has no context argument */

/* qsort: by lock, then by the order of the files. */
static int
config_lock_cmp_cb(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = config_lock_key_cmp(config_lock_sort->jobs_list[i], config_lock_sort->jobs_list[j]);

	return c != 0 ? c : (i > j) - (i < j);
}

/* Jobs that share a lock must agree on the number of leases. */
void
config_check_locks(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs)
{
	struct config_job *a, *b;
	size_t *order, i, j, k, end;

	/* By lock, then by order in the files: O(n log n), not a pass over every pair. */
	order = xcalloc(cfg->njobs + 1, sizeof *order);
	for (i = 0; i < cfg->njobs; i++)
		order[i] = i;
	config_lock_sort = cfg;
	qsort(order, cfg->njobs, sizeof *order, config_lock_cmp_cb);
	config_lock_sort = NULL;
	for (k = 0; k < cfg->njobs; k = end) {
		for (end = k + 1;
		     end < cfg->njobs &&
		     config_lock_key_cmp(cfg->jobs_list[order[k]], cfg->jobs_list[order[end]]) == 0;
		     end++)
			;
		/* Each job of a lock against the first earlier one with other leases. */
		for (j = k + 1; j < end; j++) {
			b = cfg->jobs_list[order[j]];
			for (i = k; i < j; i++) {
				a = cfg->jobs_list[order[i]];
				if (a->leases == b->leases)
					continue;
				config_error_kv(
				    ctx, secs[order[j]], config_kv_find(secs[order[j]], "leases"),
				    "job \"%s\" shares %s \"%s\" with job \"%s\" (%s:%d) but has "
				    "leases = %d where \"%s\" has leases = %d: jobs that share a "
				    "lock must agree on leases, so set the same number or give "
				    "one of them its own lock",
				    b->name, b->lock_path != NULL ? "lock_path" : "lock",
				    b->lock_path != NULL ? b->lock_path : b->lock, a->name, a->file,
				    a->line, b->leases, a->name, a->leases);
				break;
			}
		}
	}
	free(order);
}
