/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobtick.c: a job's timers as events of its machine: the tick timer (and the rank that
 * says how long a backup waits), the back-off, retry, cool-down and standby timer, and
 * the claim and the read of a tick in the tick state.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "jobpriv.h"
#include "layout.h"
#include "tickstate.h"
#include "jobrec.h"
#include "runjournal.h"
#include "members.h"
#include "rank.h"
#include "schedule.h"

#define JOB_MAX_BACKOFF_MS 300000ULL /* no back-off or cool-down is longer */

/* base * 2^(n-1), capped, with +-20% jitter so that hosts do not move in lockstep. */
static uint64_t
job_backoff(uint64_t base, int n)
{
	uint64_t ms = base;
	double jitter;
	int i;

	for (i = 1; i < n && ms < JOB_MAX_BACKOFF_MS; i++)
		ms *= 2;
	if (ms > JOB_MAX_BACKOFF_MS)
		ms = JOB_MAX_BACKOFF_MS;
	jitter = 0.8 + 0.4 * ((double)random() / (double)RAND_MAX);
	return (uint64_t)((double)ms * jitter);
}

/* Arm the timer the machine asked for, with its delay and its log line. */
void
job_set_timer(struct job *job, const struct jobfsm_action *a)
{
	const struct config_job *cj = job->cfg;
	uint64_t delay = a->ms;

	switch (a->timer) {
	case JOBFSM_TIMER_ACQUIRE:
	case JOBFSM_TIMER_STANDBY:
		break;
	case JOBFSM_TIMER_RESTART:
		delay =
		    a->n > 0 ? job_backoff(cj->restart_backoff_ms, a->n) : cj->restart_backoff_ms;
		log_info("job %s: restarting in %llu ms", job->name, (unsigned long long)delay);
		break;
	case JOBFSM_TIMER_RETRY:
		delay = job_backoff(cj->retry_backoff_ms, a->n);
		log_info("job %s: retry %d of %d in %llu ms", job->name, a->n, cj->retries,
		         (unsigned long long)delay);
		break;
	case JOBFSM_TIMER_COOLDOWN:
		/* Each cool-down in a row doubles, up to the cap: a job that never works must
		 * not churn the cluster for ever. */
		delay = job_backoff(cj->restart_backoff_ms, a->n);
		log_warnx_limited(
		    &job->lim_cooldown,
		    "job %s: failed %d times in a row: giving the lease up for %llu ms "
		    "so that another host can take over",
		    job->name, a->in_a_row, (unsigned long long)delay);
		break;
	}
	job_timer(job->timer, delay);
}

/* The back-off, retry, cool-down or standby timer. */
void
job_timer_cb(int fd, short what, void *arg)
{
	struct job *job = arg;
	struct jobfsm_input in;

	(void)fd;
	(void)what;
	job_input(job, &in, JOBFSM_TIMER);
	job_feed(job, &in, NULL);
}

/* A backup's read of the tick: the machine steps in if it is still unclaimed. */
static void
job_peek_cb(enum jobrec_claim_result result, void *arg)
{
	struct job *job = arg;
	struct jobfsm_input in;
	int64_t tick = job->fsm.tick;
	int stopping = job->fsm.stop_requested; /* neither event ends a job otherwise */

	job_input(job, &in, JOBFSM_PEEKED);
	in.taken = result == JOBREC_TAKEN; /* unclaimed or unknown: the claim tells */
	job_feed(job, &in, NULL);
	if (in.taken && !stopping)
		job_await(job, tick); /* its claimer may give it back */
}

/* The claim of a tick: run it, or leave it to the worker that has it. */
static void
job_claim_cb(enum jobrec_claim_result result, void *arg)
{
	struct job *job = arg;
	struct jobfsm_input in;
	int64_t tick = job->fsm.tick;
	int stopping = job->fsm.stop_requested; /* neither event ends a job otherwise */

	job_input(job, &in, result == JOBREC_CLAIMED ? JOBFSM_CLAIMED : JOBFSM_CLAIM_LOST);
	in.taken = result == JOBREC_TAKEN;
	if (in.taken) /* another's (a claim of ours that may have landed keeps its entry) */
		runjournal_unclaim(job->cb->journal(job->cb_arg), job->name);
	job_feed(job, &in, NULL);
	if (in.taken && !stopping)
		job_await(job, tick); /* its claimer may give it back */
}

/* Claim tick in the tick state; catch_up: its skipped ticks are recorded so. */
void
job_claim(struct job *job, int64_t tick, int catch_up)
{
	if (catch_up)
		jobrec_skip_reason(job->rec, "catch_up");
	/* Journaled first: if main dies before the run begins, its next process gives it back. */
	runjournal_claim(job->cb->journal(job->cb_arg), job->name, tick);
	jobrec_claim(job->rec, tick, job->cfg->per_tick, job_main_config(job)->node_id,
	             job->cfg->sched, job->cfg->history, job_claim_cb, job);
}

/* Read tick's state once (a backup). */
void
job_peek(struct job *job, int64_t tick)
{
	jobrec_peek(job->rec, tick, job->cfg->per_tick, job_main_config(job)->node_id,
	            job->cfg->sched, 0, job_peek_cb, job);
}

/*
 * How long to wait before reading tick: 0 (contend at once) among the first per_tick in
 * rank, or with tick_claim = contend, or while the view of the workers is not kept yet.
 */
static uint64_t
job_rank_delay(struct job *job, int64_t tick)
{
	const struct config *cfg = job_main_config(job);
	const struct members *ms = job->cb->members(job->cb_arg);
	const char **nodes;
	size_t n, pos;
	uint64_t delay;
	enum job_rank_as as = job_health_rank(job, job_now_ms(job));

	if (cfg->tick_claim == CONFIG_TICK_CONTEND || ms == NULL || !members_ready(ms) ||
	    as == JOB_RANK_TRIAL)
		return 0;
	nodes = members_carrying(ms, job->name, &n);
	pos = rank_position(job->name, rank_seq(job->cfg->sched, tick), cfg->node_id, nodes, n);
	if (as == JOB_RANK_LAST) { /* unhealthy: after every healthy worker */
		for (pos = 0; n > 0; n--)
			pos += strcmp(nodes[n - 1], cfg->node_id) != 0;
	}
	free(nodes);
	delay = rank_delay_ms(pos, job->cfg->per_tick,
	                      rank_step_ms(job->cfg->sched, tick, job->cfg->start_deadline_ms));
	if (delay > 0)
		log_debug("job %s: tick %lld: rank %zu of %zu: reading it in %llu ms", job->name,
		          (long long)tick, pos + 1, n, (unsigned long long)delay);
	return delay;
}

/* A tick is due. */
void
job_tick_cb(int fd, short what, void *arg)
{
	struct job *job = arg;
	const struct jobfsm *m = &job->fsm;
	int64_t tick = job->next_tick;
	uint64_t now = job_now_ms(job);
	struct jobfsm_input in;

	(void)fd;
	(void)what;
	if (now + 5 < (uint64_t)tick * 1000) {
		/* Early (the wall clock moved): wait for the rest. */
		job_timer(job->tick_timer, (uint64_t)tick * 1000 - now);
		return;
	}
	job_input(job, &in, JOBFSM_TICK);
	in.tick = tick;
	if (jobfsm_active(m) && (m->state == JOB_WAITING || m->state == JOB_STANDBY) &&
	    job->retick != tick)
		in.delay_ms = job_rank_delay(job, tick);
	job->retick = -1; /* a tick given back: contend for it now */
	job_feed(job, &in, NULL);
}

/* Arm the tick timer for the first fire time after now, and after the current one. */
void
job_arm_tick(struct job *job)
{
	uint64_t now = job_now_ms(job);
	int64_t after = (int64_t)(now / 1000), next;

	if (job->next_tick > after)
		after = job->next_tick;
	next = schedule_next(job->cfg->sched, after);
	evtimer_del(job->tick_timer);
	job->next_tick = next;
	if (next < 0) {
		log_warnx("job %s: its schedule \"%s\" never fires", job->name, job->cfg->schedule);
		return;
	}
	job_timer(job->tick_timer, (uint64_t)next * 1000 > now ? (uint64_t)next * 1000 - now : 0);
}

/* Arm the tick timer unless it is armed. */
void
job_arm_tick_if_idle(struct job *job)
{
	if (!evtimer_pending(job->tick_timer, NULL))
		job_arm_tick(job);
}

/*
 * Catch-up: the latest tick still within its start deadline (-1: none, continuous,
 * catch_up = none, or a tick due before the job's record was created: a new job).
 */
int64_t
job_catch_up(const struct job *job)
{
	uint64_t now = job_now_ms(job);
	int64_t prev;

	if (!job_scheduled(job) || job->cfg->catch_up == CONFIG_CATCH_UP_NONE)
		return -1;
	prev = schedule_prev(job->cfg->sched, (int64_t)(now / 1000));
	/* A new job starts with its next tick: none due before the cluster knew it. */
	if (prev >= 0 && prev * 1000 < jobrec_created_ms(job->rec))
		return -1;
	if (prev >= 0 && now < (uint64_t)prev * 1000 + job->cfg->start_deadline_ms)
		return prev;
	return -1;
}

/*
 * catch_up = all: the tick state as read. The ticks after the last one claimed (or marked
 * missed), up to now, the newest catch_up_limit of them, go to the machine oldest first. A
 * job with no tick state yet (new) catches nothing up.
 */
static void
job_catch_up_cb(const struct zk_reply *reply, void *arg)
{
	struct job *job = arg;
	const struct config_job *cj = job->cfg;
	int64_t ticks[JOBFSM_MAX_CATCH_UP], x = (int64_t)(clock_wall_ms() / 1000);
	struct tickstate st;
	struct jobfsm_input in;
	int n = 0, steps = 0, i;

	if (reply->rc != ZOK)
		return;
	tickstate_parse(reply->value, (size_t)reply->value_len, &st);
	while (st.tick >= 0 && n < cj->catch_up_limit && n < JOBFSM_MAX_CATCH_UP &&
	       steps++ < cj->catch_up_limit + TICKSTATE_MAX_LIST) {
		x = schedule_prev(cj->sched, x);
		if (x < 0 || x <= st.tick)
			break;
		if (tickstate_mark_missed(&st, x)) /* not marked missed already: to run */
			ticks[n++] = x;
		x--;
	}
	tickstate_free(&st);
	if (n == 0)
		return;
	for (i = 0; i < n / 2; i++) {
		int64_t t = ticks[i];

		ticks[i] = ticks[n - 1 - i];
		ticks[n - 1 - i] = t;
	}
	log_info("job %s: catch_up = all: %d missed tick(s) to run, oldest first", job->name, n);
	job_input(job, &in, JOBFSM_CATCH_UP);
	in.ticks = ticks;
	in.nticks = n;
	job_feed(job, &in, NULL);
}

/* catch_up = all: read the tick state, to run what was missed (job_catch_up_cb). */
void
job_catch_up_read(struct job *job)
{
	char *path = layout_job_state(job_main_config(job)->root, job->name);

	zk_get(job->zk, path, NULL, job_catch_up_cb, job);
	free(path);
}
