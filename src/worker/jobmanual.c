/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobmanual.c: run-now requests (runreq.c) as events of a job's machine: whether the job
 * can take one, the one it took (who asked, its name), and the result it reports.
 */

#include <stdlib.h>

#include "config.h"
#include "jobpriv.h"
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

	(void)rr;
	log_info("job %s: run-now request %s by %s taken", job->name, name, who);
	free(who);
	if (job->fsm.manual == JOBFSM_MANUAL_NONE && !job->fsm.stop_requested) {
		job->manual_req = xstrdup(name);
		job->manual_by = xstrdup(by);
	}
	job_input(job, &in, JOBFSM_RUN_REQUEST);
	in.manual_ms = (uint64_t)timeout_ms;
	job_feed(job, &in, NULL);
}
