/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * job.c: one configured job's life in the main process: the effects of its machine.
 *
 * A job first checks that the cluster agrees on its number of leases (jobrec.c), then:
 *
 * @continuous: contend for a lease and run the command while holding it; when the
 * command ends, start it again after a back-off that doubles with each consecutive
 * failure; after max_failures consecutive failures give the lease up so that another
 * host takes over, and contend again after a cool-down.
 *
 * cron and @every: at each tick, rank the live workers that carry the job (rank.c); the
 * first per_tick in rank contend for a lease within start_deadline, claim the tick in
 * <root>/jobs/<job>/state, run, retry on failure, record the run, release; the others
 * (STANDBY) wait a delay that grows with their rank, read the state once, and contend
 * only if the tick is still unclaimed ([worker] tick_claim = contend: all contend). A
 * tick nobody starts in time is recorded as missed; at start-up the most recent tick
 * still inside start_deadline is contended for (catch-up after an outage), and the
 * claim keeps it from running twice.
 *
 * A job paused cluster-wide (its record says "paused", `leasekeeper pause`) or on a drained
 * worker (`leasekeeper drain`) takes no new lease. Paused, its ticks are recorded as
 * "paused" (once, by whoever marks them first) and its runs go on to their end, unless the
 * pause says stop_running; drained, its ticks are left to the other workers, a continuous
 * run is stopped at once (the hand-over of a graceful stop) and a scheduled one only at the
 * drain's deadline.
 *
 * A run-now request (runreq.c) taken by this worker runs the command once more, under a lease
 * like a tick's (contended for within the request's timeout) but with no tick to claim, no
 * retry, recorded with the reason "manual"; for a continuous job it is taken by a worker
 * whose copy runs, and restarts it at once (the old copy stopped as any stop).
 *
 * Whatever the schedule, the command runs only while the lease is held: when the lease
 * is lost the run is killed at once (the supervisor has usually done so already, at the
 * lease deadline); after a disconnect a run is restarted only once the lease has been
 * verified.
 *
 * All of that is decided by the machine in jobfsm.c (docs/job-machine.md). This file and
 * the ones split from it (jobtick.c, jobrun.c, jobhook.c, jobmanual.c, jobstats.c) turn
 * what happens into its events (job_feed) and carry out the actions it returns.
 */

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "control.h"
#include "config.h"
#include "joblocks.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "jobstate.h"
#include "lease.h"
#include "runreq.h"
#include "stopreq.h"
#include "schedule.h"
#include "svlink.h"
#include "xmalloc.h"

/* A start is not asked for this close to the supervisor's refusal (its kill grace). */
#define JOB_START_MARGIN_MS 100ULL

/* The worker's configuration (replaced at each reload). */
const struct config *
job_main_config(const struct job *job)
{
	return job->cb->config(job->cb_arg);
}

/* The supervisor (replaced when one dies). */
struct svlink *
job_supervisor(const struct job *job)
{
	return job->cb->supervisor(job->cb_arg);
}

/* Whether the job runs at ticks (as opposed to continuously). */
int
job_scheduled(const struct job *job)
{
	return schedule_kind(job->cfg->sched) != SCHEDULE_CONTINUOUS;
}

/* Whether the job has ticks of a schedule (cron, @every), with or without after. */
int
job_has_schedule(const struct job *job)
{
	enum schedule_kind k = schedule_kind(job->cfg->sched);

	return k != SCHEDULE_CONTINUOUS && k != SCHEDULE_AFTER;
}

/* Arm a timer for ms from now. */
void
job_timer(struct event *ev, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(ev, &tv);
}

/* The machine's view of the configuration. */
static struct jobfsm_config
job_fsm_config(const struct config_job *cj)
{
	return (struct jobfsm_config){
	    .scheduled = schedule_kind(cj->sched) != SCHEDULE_CONTINUOUS,
	    .max_failures = cj->max_failures,
	    .retries = cj->retries,
	    .start_deadline_ms = cj->start_deadline_ms,
	    .overlap = (enum jobfsm_overlap)cj->overlap, /* the same order */
	};
}

/*
 * Now by the cluster's clock (this host's, corrected by the offset to the ZooKeeper servers
 * that the session measures): ticks come due, and start deadlines pass, by it, so that a
 * host whose clock is ahead neither claims a tick early nor calls one missed too soon.
 */
uint64_t
job_now_ms(const struct job *job)
{
	return zk_cluster_now_ms(job->zk);
}

/* An input for event, with the facts every event carries. */
void
job_input(struct job *job, struct jobfsm_input *in, enum jobfsm_event event)
{
	uint64_t deadline = job->zk != NULL ? zk_deadline_ns(job->zk) : 0;

	memset(in, 0, sizeof *in);
	in->event = event;
	in->now_ms = job_now_ms(job);
	in->tick = -1;
	in->catch_up = -1;
	/* As the supervisor refuses a start (its grace), with a margin for the message. */
	in->deadline_near =
	    deadline == 0 ||
	    clock_now_ns() + (job->cfg->kill_grace_ms + JOB_START_MARGIN_MS) * CLOCK_NS_PER_MS >=
	        deadline;
}

/* Feed the machine an event that needs nothing more. */
static void
job_event(struct job *job, enum jobfsm_event event)
{
	struct jobfsm_input in;

	job_input(job, &in, event);
	job_feed(job, &in, NULL);
}

/* Give the lease back, counting it as released if it was held. */
static void
job_release(struct job *job)
{
	enum lease_state ls = lease_state(job->lease);

	if (ls == LEASE_HELD || ls == LEASE_UNVERIFIED)
		job->lease_ends[JOB_LEASE_RELEASED]++;
	lease_release(job->lease);
}

/* Contend for the lease, giving up after ms (0: never). */
static void
job_acquire(struct job *job, uint64_t ms)
{
	char *data = lease_data(job_main_config(job)->node_id, job->name, clock_wall_ms());

	lease_set_data(job->lease, data);
	free(data);
	lease_acquire(job->lease, ms);
}

/* A log line the machine asked for. */
static void
job_note(struct job *job, const struct jobfsm_action *a, const struct job_ctx *ctx)
{
	char when[40];

	if (a->tick >= 0)
		clock_iso8601((uint64_t)a->tick * 1000, when, sizeof when);
	switch (a->note) {
	case JOBFSM_NOTE_CATCH_UP:
		if (a->n) /* catch_up = all */
			log_info("job %s: catching up the tick of %s (catch_up = all)", job->name,
			         when);
		else
			log_info("job %s: catching up the tick of %s, still inside its "
			         "start_deadline, unless another worker has run it",
			         job->name, when);
		break;
	case JOBFSM_NOTE_MANUAL_RUN:
		log_info("job %s: running it at the request of %s (%s)", job->name, job->manual_by,
		         job->manual_req);
		break;
	case JOBFSM_NOTE_MANUAL_GO:
		log_info("job %s: run-now request %s: %s", job->name, job->manual_req,
		         job_scheduled(job) ? "contending for a lease"
		                            : "restarting the running copy");
		break;
	case JOBFSM_NOTE_TICK_RUN:
		if (a->n) /* a generation: its parents' runs, the last recorded at its time */
			log_info("job %s: running after its parents' run(s) recorded at %s",
			         job->name, when);
		else
			log_info("job %s: running the tick of %s", job->name, when);
		break;
	case JOBFSM_NOTE_TICK_GONE:
		log_debug("job %s: the tick of %s %s", job->name, when,
		          a->n ? "is already run or missed" : "could not be claimed");
		break;
	case JOBFSM_NOTE_STEP_IN:
		log_debug("job %s: tick %lld still unclaimed: stepping in", job->name,
		          (long long)a->tick);
		break;
	case JOBFSM_NOTE_ACQ_FAILED:
		log_warnx_limited(&job->lim_acquire, "job %s: could not acquire a lease: %s",
		                  job->name, ctx != NULL && ctx->why != NULL ? ctx->why : "?");
		break;
	case JOBFSM_NOTE_TICK_FAILED:
		log_debug("job %s: tick %lld: %s", job->name, (long long)a->tick,
		          ctx != NULL && ctx->why != NULL ? ctx->why : "?");
		break;
	case JOBFSM_NOTE_WAIT_RUN:
		log_info("job %s: waiting for the run to finish (on_shutdown = wait)", job->name);
		break;
	case JOBFSM_NOTE_DEADLINE:
		log_info("job %s: the lease deadline is too close to start a run: waiting for the "
		         "session to answer",
		         job->name);
		break;
	case JOBFSM_NOTE_AFTER_RUN:
		log_debug("job %s: after the run: %s", job->name,
		          jobstate_action_name((enum jobstate_action)a->n));
		break;
	}
}

/*
 * Why the machine let a tick go (RECORD_MISSED's n), as recorded: the lease did not come by
 * the start_deadline because the cluster was out of reach, because a lease of several locks
 * did not get them all, or because others held it; an overlap; or too late to contend.
 */
static enum jobrec_missed_why
job_missed_why(const struct job *job, int n)
{
	if (n == JOBFSM_MISSED_OVERLAP)
		return JOBREC_MISSED_OVERLAP;
	if (n != JOBFSM_MISSED_LEASE && n != JOBFSM_MISSED_WAIT)
		return JOBREC_MISSED_DEADLINE;
	if (zk_state(job->zk) != ZK_STATE_CONNECTED)
		return JOBREC_MISSED_UNREACHABLE;
	return lease_count(job->lease) > 1 ? JOBREC_MISSED_LOCKS : JOBREC_MISSED_LEASE_HELD;
}

/* Carry out the actions of the lease, the record and the requests. */
static int
job_do_cluster(struct job *job, const struct jobfsm_action *a, const struct job_ctx *ctx)
{
	const struct config *cfg = job_main_config(job);

	switch (a->act) {
	case JOBFSM_ACQUIRE:
		job_acquire(job, a->ms);
		break;
	case JOBFSM_RETIME:
		lease_retime(job->lease, a->ms);
		break;
	case JOBFSM_RELEASE:
		job_release(job);
		break;
	case JOBFSM_CLAIM:
		if (a->kind == JOBFSM_KIND_GEN && job->chain != NULL)
			job_chain_claim(job->chain, "run");
		else
			job_claim(job, a->tick, a->n);
		break;
	case JOBFSM_PEEK:
		job_peek(job, a->tick);
		break;
	case JOBFSM_CANCEL_CLAIM:
		jobrec_cancel_claim(job->rec);
		if (job->chain != NULL)
			job_chain_cancel(job->chain);
		break;
	case JOBFSM_CHECK:
		jobrec_check(job->rec);
		break;
	case JOBFSM_RUNREQ_START:
		runreq_start(job->req, cfg->node_id);
		stopreq_start(job->stops, cfg->node_id);
		break;
	case JOBFSM_RUNREQ_CHECK:
		runreq_check(job->req);
		break;
	case JOBFSM_REFUSE_REQ:
		/* Cannot happen (can_take said no), but must not leave the request hanging. */
		runreq_finish(job->req,
		              json_pack("{s:s, s:s}", "outcome", "lost", "error", "busy"));
		break;
	case JOBFSM_RECORD_MISSED:
		if (a->kind == JOBFSM_KIND_GEN) {
			if (job->chain != NULL)
				job_chain_claim(job->chain, "missed");
			break;
		}
		/*
		 * A tick a newer one replaced in the wait for the lease: recorded now only if the
		 * wait is behind others who hold it; a wait on a cluster out of reach, or slow to
		 * answer, is left to the claim that ends it (superseded), as the truth is then.
		 */
		if (a->n == JOBFSM_MISSED_WAIT &&
		    (zk_state(job->zk) != ZK_STATE_CONNECTED || !lease_waiting(job->lease)))
			break;
		jobrec_missed_why(job->rec, a->tick, cfg->node_id, job->cfg->history,
		                  job_missed_why(job, a->n));
		break;
	case JOBFSM_RECORD_PAUSED:
		job->paused_ticks++;
		if (a->kind == JOBFSM_KIND_GEN) {
			if (job->chain != NULL)
				job_chain_claim(job->chain, "paused");
		} else
			jobrec_paused_tick(job->rec, a->tick, cfg->node_id, job->cfg->history);
		break;
	case JOBFSM_MANUAL_ABORT:
		job_manual_abort(job, a->result,
		                 a->why == JOBFSM_WHY_NO_LEASE && ctx != NULL && ctx->why != NULL
		                     ? ctx->why
		                     : jobfsm_why_text(a->why));
		break;
	case JOBFSM_MANUAL_DONE:
		job_manual_restarted(job);
		break;
	case JOBFSM_HAND_BACK:
		if (a->kind == JOBFSM_KIND_TICK)
			job_hand_back(job, a->tick);
		else if (job->chain != NULL)
			job_chain_give_back(job->chain); /* claimed as the job stopped for good */
		break;
	case JOBFSM_ABANDON:
		if (a->kind == JOBFSM_KIND_TICK)
			job_tick_abandon(job, a->tick, a->why == JOBFSM_WHY_PAUSED);
		else if (job->chain != NULL)
			job_chain_abandon(job->chain, a->n);
		break;
	default:
		return 0;
	}
	return 1;
}

/* Carry out one action. */
static void
job_do(struct job *job, const struct jobfsm_action *a, enum jobfsm_event event,
       const struct job_ctx *ctx)
{
	if (job_do_cluster(job, a, ctx))
		return;
	switch (a->act) {
	case JOBFSM_ENTER:
		log_debug("job %s: %s -> %s (%s)", job->name, jobfsm_state_name(a->from),
		          jobfsm_state_name(a->to), jobfsm_event_name(event));
		break;
	case JOBFSM_START_RUN:
		job_start_run(job);
		break;
	case JOBFSM_STOP_RUN:
		job_stop_run(job, a);
		break;
	case JOBFSM_TIMER_SET:
		job_set_timer(job, a);
		break;
	case JOBFSM_TIMER_DEL:
		evtimer_del(job->timer);
		break;
	case JOBFSM_TICK_ARM:
	case JOBFSM_TICK_ARM_IF_IDLE:
		/* A chained job's generations are its parents' runs; its ticks, its schedule's. */
		if (job->chain != NULL &&
		    (a->act == JOBFSM_TICK_ARM_IF_IDLE || a->kind == JOBFSM_KIND_GEN))
			job_chain_poke(job->chain);
		if (!job_has_schedule(job) ||
		    (a->act == JOBFSM_TICK_ARM && a->kind != JOBFSM_KIND_TICK))
			break;
		if (a->act == JOBFSM_TICK_ARM)
			job_arm_tick(job);
		else
			job_arm_tick_if_idle(job);
		break;
	case JOBFSM_TICK_DEL:
		evtimer_del(job->tick_timer);
		break;
	case JOBFSM_RUN_TIMER_SET:
		if (job->cfg->timeout_ms > 0)
			job_timer(job->run_timer, job->cfg->timeout_ms);
		break;
	case JOBFSM_RUN_TIMER_DEL:
		evtimer_del(job->run_timer);
		break;
	case JOBFSM_RECORD:
		job_run_ended(job, a, event, ctx);
		job_halt_recorded(job, a, event, ctx);
		break;
	case JOBFSM_NOTE:
		job_note(job, a, ctx);
		break;
	case JOBFSM_DONE:
		log_info("job %s: stopped", job->name);
		if (job->chain != NULL && job_chain_following(job->chain)) {
			job->done_later = 1; /* a claim let go is followed first (jobchain.c) */
			break;
		}
		job->cb->done(job, job->cb_arg);
		break;
	default:
		break;
	}
}

/*
 * Feed the machine one event and carry out its actions, in order. A start that fails at
 * once feeds its own event from inside; the machine makes it the last action, so that
 * nothing of this step is left to do by then.
 */
void
job_feed(struct job *job, const struct jobfsm_input *in, const struct job_ctx *ctx)
{
	struct jobfsm_actions out;
	int i;

	jobfsm_step(&job->fsm, in, &out);
	if (out.illegal) {
		log_warnx("job %s: event %s in state %s is not a legal transition: ignored",
		          job->name, jobfsm_event_name(in->event),
		          jobfsm_state_name(job->fsm.state));
		return;
	}
	if (out.overflow)
		log_warnx("job %s: event %s: too many actions", job->name,
		          jobfsm_event_name(in->event));
	for (i = 0; i < out.n; i++)
		job_do(job, &out.a[i], in->event, ctx);
	/* The machine's view of the lease is the lease's (the model test checks the machine). */
	if ((int)job->fsm.lease != (int)lease_state(job->lease))
		log_warnx("job %s: after %s the machine holds the lease %s, the lease says %s",
		          job->name, jobfsm_event_name(in->event),
		          lease_state_name((enum lease_state)job->fsm.lease),
		          lease_state_name(lease_state(job->lease)));
}

/* Lease callbacks: counted and logged here, decided by the machine. */
static void
job_lease_acquired_cb(struct lease *l, void *arg)
{
	struct job *job = arg;

	job->acquisitions++;
	if (job_scheduled(job))
		log_debug("job %s: lease acquired on %s (fence %lld)", job->name, lease_path(l),
		          (long long)lease_fence(l));
	else
		log_info("job %s: lease acquired on %s (fence %lld)", job->name, lease_path(l),
		         (long long)lease_fence(l));
	job_event(job, JOBFSM_LEASE_ACQUIRED);
}

static void
job_lease_lost_cb(struct lease *l, const char *why, void *arg)
{
	struct job *job = arg;

	(void)l;
	job->lease_ends[job->expiring ? JOB_LEASE_EXPIRY : JOB_LEASE_DELETED]++;
	log_warnx_limited(&job->lim_lost, "job %s: lease lost: %s", job->name, why);
	job_event(job, JOBFSM_LEASE_LOST);
}

static void
job_lease_failed_cb(struct lease *l, const char *why, void *arg)
{
	struct job *job = arg;
	struct job_ctx ctx = {.why = why};
	struct jobfsm_input in;

	job_input(job, &in, JOBFSM_LEASE_FAILED);
	in.timed_out = lease_timed_out(l);
	job_feed(job, &in, &ctx);
}

static void
job_lease_verified_cb(struct lease *l, void *arg)
{
	struct job *job = arg;

	(void)l;
	log_info("job %s: lease verified after the reconnect", job->name);
	job_event(job, JOBFSM_LEASE_VERIFIED);
}

/* The cluster's lease count is ours; the record's pause is followed. */
static void
job_agreed_cb(struct jobrec *jr, void *arg)
{
	struct job *job = arg;
	struct jobfsm_input in;
	/* A pause counts only where control records are honoured (control.c). */
	int stop,
	    paused = jobrec_paused(jr, &stop) && control_allow(CONTROL_PAUSE, job->name, "paused");
	int all = job->cfg->catch_up == CONFIG_CATCH_UP_ALL;
	int starting = job->fsm.state == JOB_IDLE || job->fsm.state == JOB_CONFLICT;

	if (job->fsm.state == JOB_CONFLICT)
		log_info("job %s: the cluster now agrees on %d lease(s)", job->name,
		         job->cfg->leases);
	job->conflict_said = 0;
	if (paused != job->fsm.paused)
		log_info("job %s: %s cluster-wide", job->name, paused ? "paused" : "resumed");
	runreq_paused(job->req, paused);
	job_input(job, &in, JOBFSM_AGREED);
	in.paused = paused;
	in.stop = stop;
	in.catch_up = all ? -1 : job_catch_up(job);
	job_feed(job, &in, NULL);
	if (all && starting && job->fsm.state == JOB_WAITING)
		job_catch_up_read(job); /* catch_up = all: what was missed, from the tick state */
}

/*
 * The cluster's lease count is not ours: stop contending until that changes. Said once for
 * each count (every read of the record tells it again), and again after it cleared.
 */
static void
job_conflict_cb(struct jobrec *jr, int cluster, void *arg)
{
	struct job *job = arg;

	(void)jr;
	if (cluster > 0 && cluster != job->conflict_said)
		log_warnx(
		    "job %s: the cluster agreed on %d lease(s) but this worker is configured "
		    "with %d: not contending (set leases = %d in the job, or run `leasekeeper "
		    "set-leases %s %d` to change the cluster's count on purpose)",
		    job->name, cluster, job->cfg->leases, cluster, job->name, job->cfg->leases);
	job->conflict_said = cluster > 0 ? cluster : 0;
	/* cluster < 0: the record is corrupt, or names other locks; jobrec.c said so and why. */
	job_event(job, JOBFSM_CONFLICT);
}

/* A job of the worker, idle until job_ready; cb tells it what it needs from the worker. */
struct job *
job_new(struct event_base *base, struct zk *zk, const struct config_job *cj,
        const struct job_cb *cb, void *arg)
{
	static const struct lease_cb lcb = {job_lease_acquired_cb, job_lease_lost_cb,
	                                    job_lease_failed_cb, job_lease_verified_cb};
	static const struct jobrec_cb rcb = {job_agreed_cb, job_conflict_cb, job_recorded_cb,
	                                     job_no_worker_cb};
	static const struct runreq_cb qcb = {job_can_take_cb, job_take_cb};
	static const struct stopreq_cb scb = {job_running_cb, job_halt_cb};
	const struct config *cfg = cb->config(arg);
	struct job *job = xcalloc(1, sizeof *job);
	struct jobfsm_config fc = job_fsm_config(cj);
	char *data, *locks;

	job->lim_lost.burst = 5; /* each one matters; only a storm is counted */
	job->zk = zk;
	job->cb = cb;
	job->cb_arg = arg;
	job->cfg = cj;
	job->name = xstrdup(cj->name);
	jobfsm_init(&job->fsm, &fc);
	job->next_tick = -1;
	job->retick = job->await_tick = -1;
	job->last_cpu_usec = job->last_peak = -1;
	job->last_outcome = job->last_status = -1;
	job->lock_path = xstrdup(cj->lock_znode);
	data = lease_data(cfg->node_id, cj->name, clock_wall_ms());
	job->lease = joblocks_lease(base, zk, cj, data, &lcb, job);
	free(data);
	locks = jobrec_config_locks(cj);
	job->rec =
	    jobrec_new(zk, cfg->root, cj->name, cj->leases, job->lock_path, locks, &rcb, job);
	free(locks);
	job->req = runreq_new(zk, cfg->root, cj->name, &qcb, job);
	job->stops = stopreq_new(zk, cfg->root, cj->name, &scb, job);
	job->timer = evtimer_new(base, job_timer_cb, job);
	job->tick_timer = evtimer_new(base, job_tick_cb, job);
	job->run_timer = evtimer_new(base, job_run_timer_cb, job);
	job->chain = job_chain_new(job, base);
	return job;
}

/* Free the job; its lease nodes are deleted (or go with the session). */
void
job_free(struct job *job)
{
	if (job == NULL)
		return;
	job_running_del(job);
	job_chain_free(job->chain);
	if (job->zk != NULL)
		zk_cancel(job->zk, job); /* the running folder's create; a read of the tick state
	                            * under way (catch_up = all) */
	lease_free(job->lease);
	jobrec_free(job->rec);
	runreq_free(job->req);
	stopreq_free(job->stops);
	free(job->halt_by);
	free(job->manual_req);
	free(job->manual_by);
	job_free_env(job->manual_env);
	if (job->manual_params != NULL)
		json_decref(job->manual_params);
	event_free(job->timer);
	event_free(job->tick_timer);
	event_free(job->run_timer);
	log_limit_flush(&job->lim_lost);
	log_limit_flush(&job->lim_acquire);
	log_limit_flush(&job->lim_cooldown);
	log_limit_flush(&job->lim_start);
	log_limit_flush(&job->lim_hook);
	while (job->nhookq > 0)
		job_hook_free(&job->hookq[--job->nhookq]);
	if (job->hook.node != NULL && job->zk != NULL)         /* the token dies with the job */
		zk_delete_guaranteed(job->zk, job->hook.node); /* retried past a reconnect */
	job_hook_free(&job->hook);
	free(job->lock_path);
	free(job->last_result);
	free(job->name);
	free(job);
}

/* The worker is registered in a session: check the agreement, then contend. */
void
job_ready(struct job *job)
{
	job_event(job, JOBFSM_READY);
	if (job->chain != NULL)
		job_chain_ready(job->chain);
}

/* Session events, forwarded by the worker: to the machine, the lease and the records. */
void
job_session(struct job *job, enum zk_event event)
{
	if (event == ZK_EVENT_EXPIRED || event == ZK_EVENT_SESSION_NEW)
		job_event(job, JOBFSM_SESSION_GONE);
	job->expiring = event == ZK_EVENT_EXPIRED;
	lease_session(job->lease, event);
	job->expiring = 0;
	if (event == ZK_EVENT_DISCONNECTED)
		job_event(job, JOBFSM_SESSION_SUSPECT);
	jobrec_session(job->rec, event);
	runreq_session(job->req, event);
	stopreq_session(job->stops, event);
	if (job->chain != NULL)
		job_chain_session(job->chain, event);
	if (event == ZK_EVENT_EXPIRED)
		job_event(job, JOBFSM_SESSION_EXPIRED); /* nothing survives it but a run */
}

/* Stop: end the run (unless wait, then let it finish), release, and report done. */
void
job_stop(struct job *job, int wait)
{
	struct jobfsm_input in;

	job_input(job, &in, JOBFSM_STOP);
	in.wait = wait;
	jobrec_retire(job->rec);
	job_feed(job, &in, NULL);
}

/* A reload found the job unchanged: adopt the new configuration's copy. */
void
job_update(struct job *job, const struct config_job *cj)
{
	struct jobfsm_config fc = job_fsm_config(cj);

	job->cfg = cj;
	/* The old configuration is freed after this: nothing may keep pointers into it. */
	jobrec_schedule(job->rec, cj->sched);
	jobfsm_configure(&job->fsm, &fc);
}

/*
 * The worker is drained (or not any more): take no new lease; stop a continuous run at
 * once (a hand-over), a scheduled one only if stop_runs (the drain's deadline).
 */
void
job_drain(struct job *job, int drained, int stop_runs)
{
	struct jobfsm_input in;

	job_input(job, &in, drained ? JOBFSM_DRAIN : JOBFSM_UNDRAIN);
	in.stop = stop_runs;
	in.catch_up = job_catch_up(job);
	job_feed(job, &in, NULL);
}

/* Whether the job holds a lease, or waits for one, or runs. */
int
job_holds_lease(const struct job *job)
{
	return job->run != 0 || lease_state(job->lease) != LEASE_IDLE;
}

/* Whether the job was told to stop (for good). */
int
job_stopping(const struct job *job)
{
	return job->fsm.stop_requested;
}

/* Whether run is this job's current run. */
int
job_owns_run(const struct job *job, uint32_t run)
{
	return run != 0 && (job->run == run || job->hook_run == run);
}

/* The id of run if it is the job's run under way (not a hook), else NULL. */
const char *
job_run_id(const struct job *job, uint32_t run)
{
	return run != 0 && job->run == run ? job->run_id : NULL;
}

/* Runs of the job that ended here, whatever their outcome (for the last one's outcome). */
uint64_t
job_ends(const struct job *job)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < JOB_OUTCOMES; i++)
		n += job->outcomes[i];
	return n;
}

/* The outcome of the job's last run here (docs/outcomes.md), or NULL: none yet. */
const char *
job_last_outcome(const struct job *job)
{
	return job->last_outcome >= 0 ? job_outcome_name((enum job_outcome)job->last_outcome)
	                              : NULL;
}

/* The job's name. */
const char *
job_name(const struct job *job)
{
	return job->name;
}

/* The job's configuration. */
const struct config_job *
job_config(const struct job *job)
{
	return job->cfg;
}

/* The job's state. */
enum job_state
job_state(const struct job *job)
{
	return job->fsm.state;
}
