/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobhand.c: a tick whose start failed for a reason of this host is given back so that the
 * next worker in rank runs it, and so is one the job let go unrun after its claim landed; the
 * backups that found it taken wait (a watch) for it to be given back and step in; and each
 * start's success or failure is counted into the worker's health (jobhealth.c), which ranks
 * an unhealthy worker last (docs/safety.md).
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "jobhealth.h"
#include "jobpriv.h"
#include "members.h"
#include "schedule.h"

/* The worker's health, NULL if its owner keeps none. */
static struct jobhealth *
job_health(struct job *job)
{
	return job->cb->health != NULL ? job->cb->health(job->cb_arg) : NULL;
}

/* A start failed for why: counted; 1 if for a reason of this host (jobhealth.c). */
int
job_health_failed(struct job *job, const char *why)
{
	struct jobhealth *h = job_health(job);
	int host = jobhealth_host_failure(why);

	if (h == NULL)
		return host;
	if (jobhealth_failed(h, why, clock_wall_ms())) {
		log_warnx("worker unhealthy: %d starts failed in a row for reasons of this host, "
		          "the last of job %s: %s; leaving the ranking of ticks, a trial start "
		          "every %llu s",
		          h->in_a_row, job->name, why != NULL ? why : "?",
		          (unsigned long long)(h->probe_ms / 1000));
		job->cb->health_changed(job->cb_arg);
	}
	return host;
}

/* A start worked: the worker is healthy, if it was not. */
void
job_health_started(struct job *job)
{
	struct jobhealth *h = job_health(job);

	if (h != NULL && jobhealth_started(h)) {
		log_info("worker healthy again: job %s started", job->name);
		job->cb->health_changed(job->cb_arg);
	}
}

/*
 * Where an unhealthy worker ranks itself for a tick: last, after every healthy worker (the
 * others leave it out), or, at most once per unhealthy_probe, first: a trial start that
 * contends at once (JOB_RANK_TRIAL). JOB_RANK_NORMAL while healthy.
 */
enum job_rank_as
job_health_rank(struct job *job, uint64_t now_ms)
{
	struct jobhealth *h = job_health(job);

	if (h == NULL || !h->unhealthy)
		return JOB_RANK_NORMAL;
	if (jobhealth_trial(h, now_ms)) {
		log_info("job %s: unhealthy worker: contending for this tick as a trial start",
		         job->name);
		return JOB_RANK_TRIAL;
	}
	return JOB_RANK_LAST;
}

/*
 * A tick a claim of ours skipped (jobrec.c): whether this worker saw no live worker able to
 * run the job from the tick's time to its start_deadline, or to now if that is sooner (the
 * worker's own view, worker-placement.c; docs/outcomes.md, no_worker).
 */
int
job_no_worker_cb(struct jobrec *jr, int64_t tick, void *arg)
{
	struct job *job = arg;
	uint64_t from = (uint64_t)tick * 1000, to = from + job->cfg->start_deadline_ms;
	uint64_t now = job_now_ms(job);

	(void)jr;
	if (tick < 0 || job->cb->nobody == NULL)
		return 0;
	return job->cb->nobody(job->cb_arg, job->name, from, to < now ? to : now);
}

/* Whether another live worker that is neither drained nor unhealthy carries the job. */
static int
job_healthy_peer(struct job *job)
{
	const struct members *ms = job->cb->members(job->cb_arg);
	const char *self = job_main_config(job)->node_id;
	const char **nodes;
	size_t n, i;
	int found = 0;

	if (ms == NULL || !members_ready(ms))
		return 1; /* not known: give it back, the next claim tells */
	nodes = members_carrying(ms, job->name, &n);
	for (i = 0; i < n && !found; i++)
		found = strcmp(nodes[i], self) != 0;
	free(nodes);
	return found;
}

/* HAND_BACK: give tick back; with no healthy peer left, it is recorded missed (unhealthy). */
void
job_hand_back(struct job *job, int64_t tick)
{
	char when[40];
	int peer = job_healthy_peer(job);

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	log_warnx("job %s: the tick of %s could not start here for a reason of this host: %s",
	          job->name, when,
	          peer ? "given back to the next worker in rank"
	               : "no healthy worker left to run it");
	/* Its claim's journal entry stays: if main dies before this lands, the next gives it back. */
	jobrec_hand_back(job->rec, tick, job_main_config(job)->node_id, job->cfg->history, !peer);
}

/*
 * ABANDON of a tick: its claim landed, and the job lets it go before its run started (the
 * lease lost while the run waited for it to be verified, the supervisor died, a conflict, a
 * pause, a drain, a stop). Given back with no lease (nothing ran), so that another worker
 * runs it within its start_deadline, or it is recorded missed; paused: recorded paused.
 */
void
job_tick_abandon(struct job *job, int64_t tick, int paused)
{
	char when[40];

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	log_info("job %s: let go of the tick of %s, claimed here, before its run started: %s",
	         job->name, when,
	         paused ? "recorded paused" : "given back to the workers that carry the job");
	if (paused)
		job->paused_ticks++;
	/* Its claim's journal entry stays: if main dies before this lands, the next gives it back. */
	jobrec_give_back(job->rec, tick, job->cfg->per_tick, job_main_config(job)->node_id,
	                 job->cfg->history, paused);
}

/*
 * An awaited tick was given back: run it now, as if due, if it is still the newest tick due
 * and the job waits for the next one (the tick timer fires at once with it).
 */
static void
job_await_cb(enum jobrec_claim_result result, void *arg)
{
	struct job *job = arg;
	int64_t tick = job->await_tick;

	if (result != JOBREC_FREE || tick < 0 || job->fsm.state != JOB_WAITING ||
	    job->next_tick != schedule_next(job->cfg->sched, tick))
		return;
	log_info("job %s: tick %lld was given back by the worker that claimed it: stepping in",
	         job->name, (long long)tick);
	job->retick = tick;
	job->next_tick = tick;
	job_timer(job->tick_timer, 0);
}

/* The tick was found taken (a read or a claim): wait for it to be given back. */
void
job_await(struct job *job, int64_t tick)
{
	if (tick < 0 || job->fsm.state != JOB_WAITING)
		return;
	job->await_tick = tick;
	jobrec_peek(job->rec, tick, job->cfg->per_tick, job_main_config(job)->node_id,
	            job->cfg->sched, 1, job_await_cb, job);
}
