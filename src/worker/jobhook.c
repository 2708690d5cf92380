/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobhook.c: a job's hooks (on_success, on_failure, on_missed): run through the supervisor,
 * one at a time per job, after a record this worker made, as its outcome asks (jobfsm_hook).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "svlink.h"
#include "xmalloc.h"
#include "znode.h"

/* Start the first hook waiting, if any: one hook of a job at a time, in order. */
static void
job_hook_next(struct job *job)
{
	struct proto_spec spec;

	if (job->nhookq == 0)
		return;
	job->hook_key = job->hookq[0].key;
	spec = job->hookq[0].spec;
	memmove(&job->hookq[0], &job->hookq[1], (size_t)(job->nhookq - 1) * sizeof job->hookq[0]);
	job->nhookq--;
	job->hook_start_ns = clock_now_ns();
	job->hook_run = job->cb->next_run(job->cb_arg);
	/* A refusal comes back at once (job_start_failed), and starts the next. */
	svlink_job_start(job_supervisor(job), job->hook_run, zk_epoch(job->zk), &spec);
	proto_spec_free(&spec);
}

/*
 * A record this worker made is written (or will not be): run the hook its outcome asks
 * for, through the supervisor as a run outside any lease, as the job's user, with the
 * record's facts in LEASEKEEPER_* and the run record's number once it has one. One hook
 * of a job at a time: others wait their turn, up to JOB_MAX_HOOKS_QUEUED (more are dropped
 * and counted).
 */
void
job_recorded_cb(struct jobrec *jr, json_t *rec, const char *created, void *arg)
{
	struct job *job = arg;
	const struct config_job *cj = job->cfg;
	const char *outcome = json_string_value(json_object_get(rec, "outcome")), *cmd, *key;
	char *argv[4], *facts[12];
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;
	json_t *v;
	int64_t seq;
	size_t n = 0, i;

	(void)jr;
	/*
	 * By the outcome, not the reason: a run-now's reason is "manual" whatever its end, and a
	 * paused tick is no failure. A stopped run and a paused tick run no hook.
	 */
	switch (jobfsm_hook(outcome)) {
	case JOBFSM_HOOK_NONE:
		return;
	case JOBFSM_HOOK_SUCCESS:
		key = "on_success", cmd = cj->hooks.on_success;
		break;
	case JOBFSM_HOOK_MISSED:
		key = "on_missed", cmd = cj->hooks.on_missed;
		break;
	default: /* failed, timeout, oom, killed, start_failed */
		key = "on_failure", cmd = cj->hooks.on_failure;
		break;
	}
	if (cmd == NULL)
		return;
	if (job->hook_run != 0 && job->nhookq == JOB_MAX_HOOKS_QUEUED) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: %s not run: %d hooks of the job are waiting already",
		                  job->name, key, JOB_MAX_HOOKS_QUEUED);
		return;
	}
	xasprintf(&facts[n++], "LEASEKEEPER_HOOK=%s", key);
	xasprintf(&facts[n++], "LEASEKEEPER_OUTCOME=%s", outcome);
	if (json_is_integer(v = json_object_get(rec, "status")))
		xasprintf(&facts[n++], "LEASEKEEPER_EXIT_STATUS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "signal")))
		xasprintf(&facts[n++], "LEASEKEEPER_SIGNAL=%lld", (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "duration_ms")))
		xasprintf(&facts[n++], "LEASEKEEPER_DURATION_MS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "fence")))
		xasprintf(&facts[n++], "LEASEKEEPER_FENCE=%lld", (long long)json_integer_value(v));
	/* The run's one id, as its log lines and record have it; the record's name apart. */
	if (json_is_string(v = json_object_get(rec, "run_id")))
		xasprintf(&facts[n++], "LEASEKEEPER_RUN_ID=%s", json_string_value(v));
	if (created != NULL && znode_sequence(znode_basename(created), "run-", &seq) == 0)
		xasprintf(&facts[n++], "LEASEKEEPER_RUN_RECORD=%lld", (long long)seq);
	xasprintf(&facts[n++], "LEASEKEEPER_LOG=%s", cj->log_file);
	facts[n] = NULL;
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)cmd;
	argv[3] = NULL;
	v = json_object_get(rec, "tick");
	rs = job_runspec(job, argv);
	rs.tick = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
	rs.hook_ms = cj->hooks.timeout_ms;
	rs.facts = facts;
	runspec_build(&rs, &spec);
	for (i = 0; i < n; i++)
		free(facts[i]);
	log_info("job %s: %s its %s (%s %s)", job->name,
	         job->hook_run != 0 ? "queueing" : "running", key, outcome,
	         created != NULL ? znode_basename(created) : "not recorded");
	job->hookq[job->nhookq].key = key;
	job->hookq[job->nhookq++].spec = spec;
	if (job->hook_run == 0)
		job_hook_next(job);
}

/* A hook ended (or could not start): logged, and counted when it failed. */
void
job_hook_end(struct job *job, int failed, const char *how)
{
	uint64_t ms = (clock_now_ns() - job->hook_start_ns) / CLOCK_NS_PER_MS;

	job->hook_run = 0;
	if (failed) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: its %s failed after %llu ms: %s (not "
		                  "retried)",
		                  job->name, job->hook_key, (unsigned long long)ms, how);
	} else
		log_info("job %s: its %s ended after %llu ms", job->name, job->hook_key,
		         (unsigned long long)ms);
	job_hook_next(job);
}
