/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* config-equal.c: whether a job is unchanged by a reload, so that it keeps its lease. */

#include <string.h>

#include "config.h"
#include "schedule.h"

/* Whether two strings, either of which may be NULL, are equal. */
static int
config_str_equal(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Whether two NULL-terminated string arrays are equal. */
static int
config_argv_equal(char *const *a, char *const *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	for (; *a != NULL && *b != NULL; a++, b++) {
		if (strcmp(*a, *b) != 0)
			return 0;
	}
	return *a == NULL && *b == NULL;
}

/*
 * Whether two jobs would run the same way, so that a reload may keep the job and its lease.
 * Where a job was written (file, line) does not count.
 */
int
config_job_equal(const struct config_job *a, const struct config_job *b)
{
	if (!config_str_equal(a->name, b->name) || !config_str_equal(a->command, b->command) ||
	    a->shell != b->shell || !config_argv_equal(a->argv, b->argv))
		return 0;
	if (a->sched == NULL || b->sched == NULL) {
		if (a->sched != b->sched || !config_str_equal(a->schedule, b->schedule))
			return 0;
	} else if (schedule_kind(a->sched) != schedule_kind(b->sched) ||
	           strcmp(schedule_text(a->sched), schedule_text(b->sched)) != 0)
		return 0;
	if (!config_str_equal(a->timezone, b->timezone) || !config_str_equal(a->zone, b->zone))
		return 0;
	if (a->leases != b->leases || !config_str_equal(a->lock, b->lock) ||
	    !config_str_equal(a->lock_path, b->lock_path) ||
	    !config_str_equal(a->lock_znode, b->lock_znode) || !config_locks_equal(a, b) ||
	    a->per_tick != b->per_tick || a->start_deadline_ms != b->start_deadline_ms ||
	    a->jitter_ms != b->jitter_ms)
		return 0;
	if (a->timeout_ms != b->timeout_ms || a->retries != b->retries ||
	    a->retry_backoff_ms != b->retry_backoff_ms || a->max_failures != b->max_failures ||
	    a->restart_backoff_ms != b->restart_backoff_ms ||
	    a->kill_grace_ms != b->kill_grace_ms || a->catch_up != b->catch_up ||
	    a->catch_up_limit != b->catch_up_limit)
		return 0;
	if (!config_str_equal(a->user, b->user) || !config_str_equal(a->group, b->group) ||
	    a->uid != b->uid || a->gid != b->gid || a->umask != b->umask ||
	    !config_str_equal(a->workdir, b->workdir) || a->nenv != b->nenv ||
	    !config_argv_equal(a->env, b->env) || !config_argv_equal(a->pass_env, b->pass_env) ||
	    !config_argv_equal(a->params, b->params) || !config_argv_equal(a->after, b->after))
		return 0;
	if (memcmp(&a->limits, &b->limits, sizeof a->limits) != 0)
		return 0;
	return config_str_equal(a->log_file, b->log_file) && a->log_max_bytes == b->log_max_bytes &&
	       a->history == b->history && a->record_output == b->record_output &&
	       config_str_equal(a->hooks.on_failure, b->hooks.on_failure) &&
	       config_str_equal(a->hooks.on_success, b->hooks.on_success) &&
	       config_str_equal(a->hooks.on_missed, b->hooks.on_missed) &&
	       a->hooks.timeout_ms == b->hooks.timeout_ms && a->on_shutdown == b->on_shutdown;
}
