/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobsettle.c: a run of this job that the worker's previous process started and left
 * without a record (it died first: runjournal.c) is recorded by this one, once registered.
 * With the record the dead process had sent, if it got that far; else as killed when its
 * main process died (kill_reason main_gone): the supervisor kills every run at once when main
 * is gone, before it has exec'd or not, so the start and end are not known and not written.
 */

#include <stdlib.h>

#include "clock.h"
#include "config.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "log.h"
#include "runjournal.h"

/* The run's record landed, was there already, or cannot be written (path NULL). */
static void
job_settled_cb(const char *path, void *arg)
{
	struct runjournal_left *l = arg;

	if (path == NULL)
		log_warnx("job %s: the run %s of this worker's previous process cannot be recorded",
		          l->job, l->run_id);
	runjournal_settled(l->rj, l);
}

/* The give-back of a claim l is done (or nothing was left to give back): its entry goes. */
static void
job_disowned_cb(const char *path, void *arg)
{
	struct runjournal_left *l = arg;

	(void)path;
	runjournal_settled(l->rj, l);
}

/* The record of a run l whose main process died before it knew the run's end. */
static json_t *
job_settle_record(const struct job *job, const struct runjournal_left *l)
{
	char tick[40], asked[40];
	json_t *o;

	clock_iso8601(l->asked_ms, asked, sizeof asked);
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "node", job_main_config(job)->node_id,
	              "run_id", l->run_id, "outcome", "killed", "reason", "aborted", "kill_reason",
	              "main_gone", "asked", asked, "error",
	              "this worker's main process died during the run, or before it started; the "
	              "supervisor killed what had started when main was gone; recorded by the "
	              "worker's next process");
	if (l->fence >= 0)
		json_object_set_new(o, "fence", json_integer(l->fence));
	if (l->after != NULL) /* a chained run: the parent runs it answered */
		json_object_set(o, "after", l->after);
	if (l->tick >= 0) {
		json_object_set_new(o, "tick", json_integer(l->tick));
		clock_iso8601((uint64_t)l->tick * 1000, tick, sizeof tick);
		json_object_set_new(o, "tick_time", json_string(tick));
	}
	return o;
}

/*
 * The worker's previous process is dead: the tick of this job it claimed and did not start
 * (its journal's claim entry l, with no run of the tick) is given back if it still holds it
 * (jobrec_disown).
 */
void
job_disown_claim(struct job *job, struct runjournal_left *l)
{
	l->settling = 1;
	jobrec_disown(job->rec, job_main_config(job)->node_id, l->tick, job_disowned_cb, l);
}

/*
 * The worker's previous process is dead: the generation of this chained job it claimed and
 * did not start (a chain claim entry l, with no run of it) is given back if it still holds
 * it (job_chain_disown); the entry goes once that is done, at once if it fits the job no
 * more.
 */
void
job_disown_chain(struct job *job, struct runjournal_left *l)
{
	l->settling = 1;
	if (job->chain != NULL && job_chain_disown(job->chain, l))
		return;
	log_warnx("job %s: a claim of a parent's run left by this worker's previous process "
	          "cannot be given back (the job's parents changed, or the entry is not whole): "
	          "dropped",
	          job->name);
	runjournal_settled(l->rj, l);
}

/* Record the run l of this job, which the worker's previous process left unrecorded. */
void
job_settle_run(struct job *job, struct runjournal_left *l)
{
	json_t *o = l->record != NULL ? json_deep_copy(l->record) : job_settle_record(job, l);

	if (l->record == NULL)
		log_warnx("job %s: run %s%s was left unrecorded by this worker's previous process, "
		          "which died: recording it as killed (main_gone)",
		          job->name, l->run_id, l->tick >= 0 ? " (a tick's)" : "");
	else
		log_info("job %s: recording run %s, whose record this worker's previous process "
		         "sent before it died, unless it landed",
		         job->name, l->run_id);
	l->settling = 1;
	jobrec_settle(job->rec, l->run_id, o, job->cfg->history, job_settled_cb, l);
}
