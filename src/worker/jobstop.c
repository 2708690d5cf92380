/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobstop.c: stop requests (stopreq.c, `leasekeeper stop`) as events of a job's machine:
 * which run is under way here, the request taken (HALT), and the result it reports once the
 * run's record is written.
 */

#include <sys/wait.h>

#include <stdlib.h>

#include "config.h"
#include "jobpriv.h"
#include "stopreq.h"
#include "utf8.h"
#include "xmalloc.h"

/* The fencing token of the run under way here, or -1 (stopreq_cb.running). */
int64_t
job_running_cb(void *arg)
{
	struct job *job = arg;

	return job->fsm.busy && job->run != 0 ? job->run_fence : -1;
}

/* A stop request claimed for our run: stop it (SIGTERM, or SIGKILL with "kill"). */
void
job_halt_cb(struct stopreq *sr, const char *name, const struct stoprec *s, void *arg)
{
	struct job *job = arg;
	char *who = utf8_quote_str(s->req.by);
	struct jobfsm_input in;

	if (!job->fsm.busy) {
		log_info("job %s: stop request %s by %s: the run ended before it came", job->name,
		         name, who);
		free(who);
		stopreq_finish(sr, json_pack("{s:s, s:s, s:s}", "outcome", "ended", "node",
		                             job_main_config(job)->node_id, "error",
		                             "the run ended before the stop reached it"));
		return;
	}
	log_info("job %s: stop request %s by %s: stopping the run (fence %lld)%s%s", job->name,
	         name, who, (long long)job->run_fence, s->kill ? ", SIGKILL at once" : "",
	         s->no_restart ? ", no restart until resume" : "");
	if (job->halt_by == NULL)
		job->halt_by = xstrdup(s->req.by);
	free(who);
	job_input(job, &in, JOBFSM_HALT);
	in.kill = s->kill;
	in.hold = s->no_restart;
	job_feed(job, &in, NULL);
}

/* The run's record was written (outcome, and the ctx of its end): answer the stop requests. */
void
job_halt_recorded(struct job *job, const struct jobfsm_action *a, enum jobfsm_event event,
                  const struct job_ctx *ctx)
{
	json_t *res;

	free(job->halt_by);
	job->halt_by = NULL;
	if (!stopreq_pending(job->stops))
		return;
	res = json_pack("{s:s, s:s, s:I}", "outcome", job_outcome_name(a->outcome), "node",
	                job_main_config(job)->node_id, "fence", (json_int_t)job->run_fence);
	if (event == JOBFSM_EXITED && ctx != NULL && WIFEXITED(ctx->status))
		json_object_set_new(res, "exit_status", json_integer(WEXITSTATUS(ctx->status)));
	else if (event == JOBFSM_EXITED && ctx != NULL && WIFSIGNALED(ctx->status))
		json_object_set_new(res, "signal", json_integer(WTERMSIG(ctx->status)));
	stopreq_finish(job->stops, res);
}
