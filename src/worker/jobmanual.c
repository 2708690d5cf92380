/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobmanual.c: run-now requests (runreq.c) as events of a job's machine: whether the job
 * can take one, the one it took (who asked, its name, its parameters), the environment its
 * run gets, and the result it reports.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jobpriv.h"
#include "paramrec.h"
#include "runreq.h"
#include "utf8.h"
#include "xmalloc.h"

/* Report how the run-now request taken ended (result stolen) and forget it. */
void
job_manual_end(struct job *job, json_t *result)
{
	if (job->manual_req == NULL) {
		json_decref(result);
		return;
	}
	runreq_finish(job->req, result);
	free(job->manual_req);
	free(job->manual_by);
	job->manual_req = job->manual_by = NULL;
	job_free_env(job->manual_env);
	job->manual_env = NULL;
	if (job->manual_params != NULL)
		json_decref(job->manual_params);
	job->manual_params = NULL;
}

/* The run-now request taken cannot be carried out: report why (outcome and error). */
void
job_manual_abort(struct job *job, const char *outcome, const char *why)
{
	if (job->manual_req == NULL)
		return;
	log_warnx("job %s: run-now request %s: %s", job->name, job->manual_req, why);
	job_manual_end(job, json_pack("{s:s, s:s, s:s}", "outcome", outcome, "node",
	                              job_main_config(job)->node_id, "error", why));
}

/* run-now of a continuous job: done once a new copy runs. */
void
job_manual_restarted(struct job *job)
{
	job_manual_end(job, json_pack("{s:s, s:s, s:I, s:i}", "outcome", "restarted", "node",
	                              job_main_config(job)->node_id, "fence",
	                              (json_int_t)job->run_fence, "pid", (int)job->pid));
}

/* Whether the job could act on a run-now request now (jobfsm_can_take). */
int
job_can_take_cb(void *arg)
{
	struct job *job = arg;

	return jobfsm_can_take(&job->fsm);
}

/*
 * A run-now request claimed for us: the machine acts on it now, or (a tick came meanwhile)
 * once the job is free again (a continuous copy that starts meanwhile is the restart).
 */
void
job_take_cb(struct runreq *rr, const char *name, const char *by, int64_t timeout_ms, void *arg)
{
	struct job *job = arg;
	char *who = utf8_quote_str(by);
	struct jobfsm_input in;

	const json_t *data = runreq_taken_data(rr);
	char **env, why[160];
	json_t *values;

	log_info("job %s: run-now request %s by %s taken", job->name, name, who);
	free(who);
	if (!paramrec_resolve(data != NULL ? json_object_get(data, "params") : NULL,
	                      job->cfg->params, &env, &values, why, sizeof why)) {
		/* Refused before the machine hears of it: nothing runs. */
		log_warnx("job %s: run-now request %s refused: %s", job->name, name, why);
		runreq_finish(rr, json_pack("{s:s, s:s, s:s}", "outcome", "refused", "node",
		                            job_main_config(job)->node_id, "error", why));
		return;
	}
	if (job->fsm.manual == JOBFSM_MANUAL_NONE && !job->fsm.stop_requested) {
		job->manual_req = xstrdup(name);
		job->manual_by = xstrdup(by);
		job->manual_env = env;
		job->manual_params = values;
	} else {
		job_free_env(env);
		json_decref(values);
	}
	job_input(job, &in, JOBFSM_RUN_REQUEST);
	in.manual_ms = (uint64_t)timeout_ms;
	job_feed(job, &in, NULL);
}

/* Free a NULL-terminated list of strings. */
void
job_free_env(char **env)
{
	size_t i;

	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/*
 * The environment of the run about to start (rs): the job's env, then its parameters as
 * LEASEKEEPER_PARAM_NAME: the request's for the run it asked for, else the defaults. Returns
 * the list made, for job_free_env once the spec is built.
 */
char **
job_params_env(struct job *job, struct runspec *rs)
{
	const struct config_job *cj = job->cfg;
	char **params = NULL, **env, why[160];
	int mine = job->manual_req != NULL && (job->fsm.manual == JOBFSM_MANUAL_ACTIVE ||
	                                       job->fsm.manual == JOBFSM_MANUAL_RESTART);
	json_t *values = NULL;
	size_t n = 0, i;

	if (cj->params == NULL)
		return NULL;
	if (!mine && paramrec_resolve(NULL, cj->params, &params, &values, why, sizeof why))
		json_decref(values);
	for (i = 0; mine ? job->manual_env[i] != NULL : params != NULL && params[i] != NULL; i++)
		n++;
	env = xcalloc(cj->nenv + n + 1, sizeof *env);
	for (i = 0; i < cj->nenv; i++)
		env[i] = xstrdup(cj->env[i]);
	for (i = 0; i < n; i++)
		env[cj->nenv + i] = xstrdup(mine ? job->manual_env[i] : params[i]);
	job_free_env(params);
	rs->env = env;
	rs->nenv = cj->nenv + n;
	return env;
}
