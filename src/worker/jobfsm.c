/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobfsm.c: the code that decides a job's life, as one state machine.
 *
 * job.c (and the files split from it) feed it events as they happen: the session, the
 * job record, ticks, timers, the lease, the claim of a tick, the supervisor's news of a
 * run, pause, drain, run-now requests and stops. jobfsm_step moves the state and the
 * fields that only it writes, and returns the actions to carry out, in order: lease and
 * claim calls, runs to start or stop, timers, records, run-now results, log lines. It
 * decides how a run ended (its outcome) and what follows it (jobstate.c's decision);
 * the hook a record runs follows the outcome (jobfsm_hook). A (state, event) pair that
 * the table in jobfsmtab.c does not list changes nothing and is reported back to be logged.
 */

#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "jobfsm.h"
#include "jobfsmpriv.h"
#include "jobstate.h"

#define JOBFSM_RETRY_MS 5000ULL /* after an unexpected acquire failure */

static void jobfsm_start_run(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);

/* A job that has not heard of its session yet. */
void
jobfsm_init(struct jobfsm *m, const struct jobfsm_config *cfg)
{
	memset(m, 0, sizeof *m);
	m->state = JOB_IDLE;
	m->cfg = *cfg;
	m->tick = m->pending_tick = m->pending_gen = -1;
}

/* A reload kept the job: its configuration's new copy. */
void
jobfsm_configure(struct jobfsm *m, const struct jobfsm_config *cfg)
{
	m->cfg = *cfg;
}

/* Whether the job may go after work: registered, agreed, not stopping for good. */
int
jobfsm_active(const struct jobfsm *m)
{
	return m->ready && m->agreed && !m->stop_requested;
}

/* Add an action; its fields are filled by the caller. */
struct jobfsm_action *
jobfsm_act(struct jobfsm_actions *out, enum jobfsm_act act)
{
	static struct jobfsm_action spare;
	struct jobfsm_action *a;

	if (out->n == JOBFSM_MAX_ACTIONS) {
		out->overflow = 1;
		a = &spare;
	} else
		a = &out->a[out->n++];
	memset(a, 0, sizeof *a);
	a->act = act;
	a->tick = -1;
	return a;
}

/* The one place the state changes: the caller logs the move by name. */
void
jobfsm_enter(struct jobfsm *m, enum job_state next, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	if (m->state == next)
		return;
	a = jobfsm_act(out, JOBFSM_ENTER);
	a->from = m->state;
	a->to = next;
	m->state = next;
}

/* A log line. */
void
jobfsm_note(struct jobfsm_actions *out, enum jobfsm_note note, int64_t tick, int n)
{
	struct jobfsm_action *a = jobfsm_act(out, JOBFSM_NOTE);

	a->note = note;
	a->tick = tick;
	a->n = n;
}

/* Give the lease back. */
void
jobfsm_release(struct jobfsm *m, struct jobfsm_actions *out)
{
	jobfsm_act(out, JOBFSM_RELEASE);
	m->lease = JOBFSM_LEASE_IDLE;
}

/* Contend for the lease, giving up after ms (0: never). */
void
jobfsm_acquire(struct jobfsm *m, uint64_t ms, struct jobfsm_actions *out)
{
	jobfsm_act(out, JOBFSM_ACQUIRE)->ms = ms;
	m->lease = JOBFSM_LEASE_ACQUIRING;
}

/* Arm the timer. */
static struct jobfsm_action *
jobfsm_timer(struct jobfsm_actions *out, enum jobfsm_timer timer, int n, uint64_t ms)
{
	struct jobfsm_action *a = jobfsm_act(out, JOBFSM_TIMER_SET);

	a->timer = timer;
	a->n = n;
	a->ms = ms;
	return a;
}

/* Ask the supervisor to stop the run. */
void
jobfsm_stop_run(struct jobfsm_actions *out, int sig, enum jobfsm_why why)
{
	struct jobfsm_action *a = jobfsm_act(out, JOBFSM_STOP_RUN);

	a->sig = sig;
	a->why = why;
}

/* The run-now request taken cannot be carried out: it ends with result, for why. */
static void
jobfsm_manual_abort(struct jobfsm *m, const char *result, enum jobfsm_why why,
                    struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	if (m->manual == JOBFSM_MANUAL_NONE)
		return;
	a = jobfsm_act(out, JOBFSM_MANUAL_ABORT);
	a->result = result;
	a->why = why;
	m->manual = JOBFSM_MANUAL_NONE;
}

/* Whether a request was taken and acted on (not merely queued). */
static int
jobfsm_manual_taken(const struct jobfsm *m)
{
	return m->manual == JOBFSM_MANUAL_ACTIVE || m->manual == JOBFSM_MANUAL_RESTART;
}

/*
 * The machine lets go of the tick it holds, unrun: a generation whose claim is out
 * (CLAIMING), or either kind whose claim landed and whose run has not started (unrun: waiting
 * for the lease to be verified, or for the lease deadline to move on); a stop's hand-back may
 * be under way too. Dropped then, it would stay claimed by a run that never comes, answered by
 * no worker. ABANDON has jobchain.c (a generation) or jobrec.c (a tick: a tick's claim still
 * out is followed by jobrec_cancel_claim itself) follow it and give a landed claim back: a
 * versioned write of the state, which needs no lease, since nothing ran; a paused job's tick
 * is recorded paused in the same write (why PAUSED). The machine hears nothing of it and moves
 * on; the job is told done only once a generation's is over (job.c). Before any CANCEL_CLAIM.
 */
void
jobfsm_abandon(struct jobfsm *m, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	if (m->tick >= 0 &&
	    (m->unrun || (m->kind == JOBFSM_KIND_GEN && m->state == JOB_CLAIMING))) {
		a = jobfsm_tick_act(out, JOBFSM_ABANDON, m->tick, m->kind);
		a->n = m->unrun || m->handing_back;
		if (m->kind == JOBFSM_KIND_TICK && m->paused)
			a->why = JOBFSM_WHY_PAUSED;
		m->tick = -1; /* let go: jobchain.c or jobrec.c has it now */
	}
	m->unrun = m->handing_back = 0;
}

/* Stopped for good: let go of everything and tell the worker. */
static void
jobfsm_finish_stop(struct jobfsm *m, struct jobfsm_actions *out)
{
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	jobfsm_act(out, JOBFSM_TICK_DEL);
	jobfsm_act(out, JOBFSM_RUN_TIMER_DEL);
	jobfsm_abandon(m, out);
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	jobfsm_release(m, out);
	jobfsm_manual_abort(m, "stopped", JOBFSM_WHY_STOPPED, out);
	jobfsm_enter(m, JOB_DONE, out);
	jobfsm_act(out, JOBFSM_DONE);
}

/* A continuous job that is paused or drained waits, holding nothing; 1 if so. */
static int
jobfsm_hold(struct jobfsm *m, struct jobfsm_actions *out)
{
	if (m->cfg.scheduled || (!m->paused && !m->drained))
		return 0;
	jobfsm_enter(m, m->paused ? JOB_PAUSED : JOB_DRAINED, out);
	return 1;
}

/* Let the lease go; a scheduled job waits for its next tick, a continuous one holds. */
static void
jobfsm_let_go(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	jobfsm_release(m, out);
	if (m->cfg.scheduled)
		jobfsm_wait_tick(m, in, out);
	else
		jobfsm_hold(m, out);
}

/* The lease is gone or given up: go back to contending when the session allows. */
static void
jobfsm_after_loss(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	m->await_verify = 0;
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	jobfsm_abandon(m, out);
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out);
		return;
	}
	jobfsm_manual_abort(m, "killed", JOBFSM_WHY_LOST_EARLY, out);
	if (m->conflict_pending) {
		m->conflict_pending = 0;
		jobfsm_release(m, out);
		jobfsm_act(out, JOBFSM_TICK_DEL);
		jobfsm_enter(m, JOB_CONFLICT, out);
		return;
	}
	if (!m->ready || !m->agreed) {
		jobfsm_enter(m, JOB_IDLE, out);
		/* Registered again while the run was ending: the agreement is to be checked. */
		if (m->ready)
			jobfsm_act(out, JOBFSM_CHECK);
		return;
	}
	if (m->cfg.scheduled) {
		jobfsm_release(m, out);
		jobfsm_wait_tick(m, in, out);
		return;
	}
	if (m->lease == JOBFSM_LEASE_IDLE)
		jobfsm_contend(m, in, -1, JOBFSM_KIND_TICK, out);
}

/* Contend for the lease (for tick, if scheduled), unless paused, drained or too late. */
void
jobfsm_contend(struct jobfsm *m, const struct jobfsm_input *in, int64_t tick, enum jobfsm_kind kind,
               struct jobfsm_actions *out)
{
	uint64_t timeout = 0;

	if (!jobfsm_active(m))
		return;
	if (m->lease != JOBFSM_LEASE_IDLE)
		jobfsm_release(m, out);
	if (tick >= 0 && (m->paused || m->drained)) {
		/* Paused: the tick is recorded as such, once; drained: it is the others'. */
		if (m->paused)
			jobfsm_tick_act(out, JOBFSM_RECORD_PAUSED, tick, kind);
		jobfsm_wait_tick(m, in, out);
		return;
	}
	if (jobfsm_hold(m, out))
		return;
	m->tick = tick;
	m->kind = kind;
	if (tick >= 0 && !m->catching && kind == JOBFSM_KIND_TICK)
		jobfsm_catch_drop(m, tick); /* claims only move forward */
	if (tick >= 0) {
		/* A catch-up tick's start_deadline counts from when it could first run. */
		uint64_t until =
		    (m->catching ? in->now_ms : (uint64_t)tick * 1000) + m->cfg.start_deadline_ms;

		if (in->now_ms >= until) {
			jobfsm_tick_act(out, JOBFSM_RECORD_MISSED, tick, kind);
			jobfsm_wait_tick(m, in, out);
			return;
		}
		timeout = until - in->now_ms;
		m->attempt = 0;
	}
	jobfsm_enter(m, JOB_CONTENDING, out);
	jobfsm_acquire(m, timeout, out);
}

/* Agreed and registered: start doing the job (and catch a tick up, if one is due). */
static void
jobfsm_go(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (!jobfsm_active(m))
		return;
	if (m->state != JOB_IDLE && m->state != JOB_CONFLICT)
		return;
	if (!m->cfg.scheduled) {
		jobfsm_contend(m, in, -1, JOBFSM_KIND_TICK, out);
		return;
	}
	if (in->catch_up >= 0 && !m->paused && !m->drained)
		m->pending_tick = -1; /* the newer tick catch_up names goes for it */
	jobfsm_wait_tick(m, in, out);
	if (m->paused || m->drained || in->catch_up < 0)
		return;
	if (m->state != JOB_WAITING) {
		m->pending_tick = in->catch_up; /* a generation went first: the tick after it */
		return;
	}
	jobfsm_note(out, JOBFSM_NOTE_CATCH_UP, in->catch_up, 0);
	jobfsm_contend(m, in, in->catch_up, JOBFSM_KIND_TICK, out);
	m->catch_claim = m->tick == in->catch_up;
}

/* Not paused or drained any more: a continuous job held back contends again. */
static void
jobfsm_unhold(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (m->paused || m->drained)
		return;
	if (m->state == JOB_PAUSED || m->state == JOB_DRAINED) {
		jobfsm_enter(m, JOB_IDLE, out);
		if (m->ready && !m->agreed)
			jobfsm_act(out, JOBFSM_CHECK);
		else
			jobfsm_go(m, in, out);
	}
}

/*
 * Paused or drained now: give up a lease being waited for, a restart or a retry; stop a
 * run if stop (SIGTERM, then SIGKILL after kill_grace, like any stop), else let it end.
 */
static void
jobfsm_hold_now(struct jobfsm *m, const struct jobfsm_input *in, int stop,
                struct jobfsm_actions *out)
{
	int64_t tick = m->tick;
	enum jobfsm_kind kind = m->kind;

	switch (m->state) {
	case JOB_CONTENDING:
	case JOB_BACKOFF:
	case JOB_COOLDOWN:
		/*
		 * A manual run of a scheduled job taken before the pause goes on, as start_run
		 * lets it; anything else lets go, and a request waiting on it ends: a request
		 * left set would make the next tick's lease start a run without a claim.
		 */
		if (!m->drained && m->cfg.scheduled && jobfsm_manual_taken(m))
			break;
		jobfsm_act(out, JOBFSM_TIMER_DEL);
		m->await_verify = 0;
		jobfsm_release(m, out);
		jobfsm_manual_abort(m, "stopped",
		                    m->drained ? JOBFSM_WHY_DRAINED_EARLY : JOBFSM_WHY_PAUSED_EARLY,
		                    out);
		if (m->cfg.scheduled) {
			/*
			 * Paused, nobody runs the tick in hand: recorded paused, once (drained:
			 * others'); a tick whose claim landed is given back so (jobfsm_abandon).
			 */
			if (m->paused && tick >= 0 && !(m->unrun && kind == JOBFSM_KIND_TICK))
				jobfsm_tick_act(out, JOBFSM_RECORD_PAUSED, tick, kind);
			jobfsm_wait_tick(m, in, out);
		} else
			jobfsm_hold(m, out);
		break;
	case JOB_STARTING:
	case JOB_RUNNING:
		if (stop && m->busy) {
			jobfsm_stop_run(out, SIGTERM,
			                m->drained ? JOBFSM_WHY_DRAINED : JOBFSM_WHY_PAUSED);
			jobfsm_enter(m, JOB_STOPPING, out);
		}
		break;
	default:
		/* IDLE: not contending yet; contend holds it back when it would. */
		break;
	}
}

/* Start the command under the lease held; or hold back, wait for it, or let it go. */
static void
jobfsm_start_run(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out);
		return;
	}
	/*
	 * A restart or a retry after a pause or a drain; a tick claimed before it still runs,
	 * and so does a manual run of a paused scheduled job (run-now --force).
	 */
	if (m->state != JOB_CLAIMING && (m->paused || m->drained) &&
	    !(m->cfg.scheduled && jobfsm_manual_taken(m) && !m->drained)) {
		jobfsm_manual_abort(m, "stopped", JOBFSM_WHY_HELD, out);
		jobfsm_let_go(m, in, out);
		return;
	}
	if (m->lease == JOBFSM_LEASE_UNVERIFIED) {
		m->await_verify = 1;
		jobfsm_enter(m, JOB_BACKOFF, out);
		return;
	}
	if (m->lease != JOBFSM_LEASE_HELD) {
		jobfsm_after_loss(m, in, out);
		return;
	}
	if (in->deadline_near) {
		/*
		 * Woken past the deadline (main was stopped): no start the supervisor would
		 * refuse, and no record of it. The deadline moves on when the session answers;
		 * its end, if it ended, reaches the lease before the timer.
		 */
		jobfsm_note(out, JOBFSM_NOTE_DEADLINE, m->tick, 0);
		jobfsm_enter(m, JOB_BACKOFF, out);
		jobfsm_timer(out, JOBFSM_TIMER_RESTART, 0, 0);
		return;
	}
	m->busy = 1;
	m->timed_out = 0;
	m->unrun = 0; /* answered by this run's record */
	jobfsm_enter(m, JOB_STARTING, out);
	jobfsm_tick_act(out, JOBFSM_START_RUN, m->tick, m->kind);
}

/* Act on the run-now request taken: contend for a lease and run, or restart the copy. */
void
jobfsm_manual_go(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	(void)in;
	jobfsm_note(out, JOBFSM_NOTE_MANUAL_GO, -1, 0);
	if (!m->cfg.scheduled) {
		m->manual = JOBFSM_MANUAL_RESTART;
		jobfsm_stop_run(out, SIGTERM, JOBFSM_WHY_MANUAL);
		jobfsm_enter(m, JOB_STOPPING, out);
		return;
	}
	m->manual = JOBFSM_MANUAL_ACTIVE;
	m->tick = -1;
	m->kind = JOBFSM_KIND_TICK;
	m->attempt = 0;
	jobfsm_enter(m, JOB_CONTENDING, out);
	jobfsm_acquire(m, m->manual_ms, out);
}

/* How a run ended: untrusted first, then the OOM killer, the timeout, a stop, the status. */
static enum job_outcome
jobfsm_outcome(const struct jobfsm *m, const struct jobfsm_input *in, int ok)
{
	if (in->reason == PROTO_EXIT_DEADLINE || in->reason == PROTO_EXIT_EPOCH || m->lost_pending)
		return JOB_OUTCOME_KILLED;
	if (in->reason == PROTO_EXIT_OOM)
		return JOB_OUTCOME_OOM;
	if (m->timed_out)
		return JOB_OUTCOME_TIMEOUT;
	if (m->replacing)
		return JOB_OUTCOME_REPLACED;
	if (m->stop_requested || m->conflict_pending || m->halted ||
	    in->reason == PROTO_EXIT_STOPPED)
		return JOB_OUTCOME_STOPPED;
	return ok ? JOB_OUTCOME_OK : JOB_OUTCOME_FAILED;
}

/* The run's one record: its outcome, and the request's result if it was a run-now's. */
void
jobfsm_record(struct jobfsm *m, enum job_outcome outcome, int untrusted, struct jobfsm_actions *out)
{
	struct jobfsm_action *a = jobfsm_act(out, JOBFSM_RECORD);

	m->busy = 0;
	/* Failures are the runs that failed by themselves, not stops and kills (metrics.md). */
	if (outcome == JOB_OUTCOME_FAILED || outcome == JOB_OUTCOME_TIMEOUT ||
	    outcome == JOB_OUTCOME_OOM || outcome == JOB_OUTCOME_START_FAILED)
		m->failures_total++;
	a->outcome = outcome;
	a->untrusted = untrusted;
	a->tick = m->tick;
	a->kind = m->kind;
	if (!jobfsm_manual_taken(m))
		return;
	/* A run-now: the run asked for ("manual"), or the copy it restarts. */
	a->manual = 1;
	if (m->cfg.scheduled) {
		a->manual_result = 1;
		m->manual_ended = 1;
		m->manual = JOBFSM_MANUAL_NONE;
	}
}

/* Carry out what jobstate.c decided after a run. */
static void
jobfsm_after_run(struct jobfsm *m, const struct jobfsm_input *in, const struct jobstate_decision *d,
                 struct jobfsm_actions *out)
{
	switch (d->action) {
	case JOBSTATE_RESTART_NOW:
		jobfsm_start_run(m, in, out);
		break;
	case JOBSTATE_HOLD:
		/* A request whose copy is not running yet ends here: nothing will start it. */
		jobfsm_manual_abort(m, "stopped", JOBFSM_WHY_HELD, out);
		jobfsm_let_go(m, in, out);
		break;
	case JOBSTATE_FINISH:
		jobfsm_finish_stop(m, out);
		break;
	case JOBSTATE_AFTER_LOSS:
		m->lost_pending = 0;
		jobfsm_after_loss(m, in, out);
		break;
	case JOBSTATE_RUN_AGAIN:
		jobfsm_start_run(m, in, out);
		break;
	case JOBSTATE_COOLDOWN:
		jobfsm_release(m, out);
		jobfsm_enter(m, JOB_COOLDOWN, out);
		jobfsm_timer(out, JOBFSM_TIMER_COOLDOWN, m->cfg.max_failures + m->cooldowns, 0)
		    ->in_a_row = d->in_a_row;
		break;
	case JOBSTATE_RESTART:
		jobfsm_enter(m, JOB_BACKOFF, out);
		jobfsm_timer(out, JOBFSM_TIMER_RESTART, d->failed ? m->failures : 0, 0);
		break;
	case JOBSTATE_RETRY:
		jobfsm_enter(m, JOB_BACKOFF, out);
		jobfsm_timer(out, JOBFSM_TIMER_RETRY, m->attempt, 0);
		break;
	case JOBSTATE_NEXT_TICK:
		jobfsm_release(m, out);
		jobfsm_wait_tick(m, in, out);
		break;
	}
}

/* A run ended (or could not start): decide what follows (jobstate.c) and do it. */
void
jobfsm_run_end(struct jobfsm *m, const struct jobfsm_input *in, struct jobstate_end *e,
               struct jobfsm_actions *out)
{
	struct jobstate_counts c = {m->failures, m->cooldowns, m->attempt};
	struct jobstate_decision d;
	int manual = m->manual_ended;

	m->manual_ended = 0;
	e->scheduled = m->cfg.scheduled;
	e->stop_requested = m->stop_requested;
	e->pending = m->lost_pending || m->conflict_pending;
	e->lease_idle = m->lease == JOBFSM_LEASE_IDLE;
	e->lease_held = m->lease == JOBFSM_LEASE_HELD;
	e->held_back = m->paused || m->drained;
	e->manual_restart = m->manual == JOBFSM_MANUAL_RESTART;
	e->halted = m->halted || m->replacing;
	m->halted = m->replacing = 0;
	e->max_failures = m->cfg.max_failures;
	e->retries = manual ? 0 : m->cfg.retries; /* a manual run is tried once */
	d = jobstate_run_ended(e, &c);
	if (e->manual_restart)
		m->manual = JOBFSM_MANUAL_ACTIVE;
	if (d.abandoned)
		jobfsm_manual_abort(m, "stopped", JOBFSM_WHY_NOT_AGAIN, out);
	m->failures = c.failures;
	m->cooldowns = c.cooldowns;
	m->attempt = c.attempt;
	jobfsm_note(out, JOBFSM_NOTE_AFTER_RUN, -1, (int)d.action);
	jobfsm_after_run(m, in, &d, out);
}

/* The run ended: its outcome, its record, and what follows. */
static void
jobfsm_exited(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	int ok = in->ok && !m->timed_out && in->reason != PROTO_EXIT_OOM;
	struct jobstate_end e;

	if (!m->busy)
		return;
	memset(&e, 0, sizeof e);
	jobfsm_act(out, JOBFSM_RUN_TIMER_DEL);
	jobfsm_record(m, jobfsm_outcome(m, in, ok), in->reason == PROTO_EXIT_DEADLINE, out);
	e.ok = ok;
	e.long_run = in->long_run;
	e.untrusted = in->reason == PROTO_EXIT_DEADLINE || in->reason == PROTO_EXIT_EPOCH;
	jobfsm_run_end(m, in, &e, out);
}

/* The supervisor died: the run died with it; the lease can no longer be trusted. */
static void
jobfsm_supervisor_died(struct jobfsm *m, struct jobfsm_actions *out)
{
	if (m->busy) {
		jobfsm_act(out, JOBFSM_RUN_TIMER_DEL);
		jobfsm_record(m, JOB_OUTCOME_KILLED, 0, out);
	}
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	jobfsm_abandon(m, out);
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	m->lost_pending = m->conflict_pending = m->await_verify = 0;
	m->manual_ended = m->halted = m->replacing = 0;
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out);
		return;
	}
	jobfsm_release(m, out);
	jobfsm_manual_abort(m, "killed", JOBFSM_WHY_SV_DIED, out);
	m->tick = -1;
	jobfsm_act(out, JOBFSM_TICK_DEL);
	jobfsm_enter(m, JOB_IDLE, out);
}

/* The back-off, retry, cool-down or standby timer. */
static void
jobfsm_timer_fired(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	switch (m->state) {
	case JOB_BACKOFF:
		if (m->lease != JOBFSM_LEASE_IDLE)
			jobfsm_start_run(m, in, out); /* restart, or retry, under the lease held */
		else if (m->cfg.scheduled)
			jobfsm_wait_tick(m, in, out); /* the lease went: this tick is over for us */
		else
			jobfsm_contend(m, in, -1, JOBFSM_KIND_TICK, out);
		break;
	case JOB_COOLDOWN:
		jobfsm_contend(m, in, -1, JOBFSM_KIND_TICK, out);
		break;
	case JOB_STANDBY:
		jobfsm_act(out, JOBFSM_PEEK)->tick = m->tick;
		break;
	default:
		break;
	}
}

/* The lease is ours: claim the tick, or run. */
static void
jobfsm_lease_acquired(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	m->lease = JOBFSM_LEASE_HELD;
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out);
		return;
	}
	if (m->cfg.scheduled && m->manual != JOBFSM_MANUAL_NONE && m->tick < 0) {
		jobfsm_note(out, JOBFSM_NOTE_MANUAL_RUN, -1, 0);
		jobfsm_start_run(m, in, out); /* no tick to claim */
		return;
	}
	if (m->cfg.scheduled) {
		jobfsm_enter(m, JOB_CLAIMING, out);
		a = jobfsm_tick_act(out, JOBFSM_CLAIM, m->tick, m->kind);
		a->n = m->catching || m->catch_claim; /* its skipped ticks: reason catch_up */
		return;
	}
	jobfsm_start_run(m, in, out);
}

/* The acquire gave up. */
static void
jobfsm_lease_failed(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	m->lease = JOBFSM_LEASE_IDLE;
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out);
		return;
	}
	if (m->manual != JOBFSM_MANUAL_NONE) {
		jobfsm_manual_abort(m, "no_lease", JOBFSM_WHY_NO_LEASE, out);
		m->tick = -1;
		if (m->ready)
			jobfsm_wait_tick(m, in, out);
		else
			jobfsm_enter(m, JOB_IDLE, out);
		return;
	}
	if (m->cfg.scheduled && m->tick >= 0 && in->timed_out) {
		jobfsm_note(out, JOBFSM_NOTE_TICK_FAILED, m->tick, 0);
		a = jobfsm_tick_act(out, JOBFSM_RECORD_MISSED, m->tick, m->kind);
		a->n = JOBFSM_MISSED_LEASE;
		jobfsm_wait_tick(m, in, out);
		return;
	}
	jobfsm_note(out, JOBFSM_NOTE_ACQ_FAILED, -1, 0);
	m->tick = -1;
	if (!m->ready) {
		jobfsm_enter(m, JOB_IDLE, out);
		return;
	}
	if (m->cfg.scheduled) {
		jobfsm_wait_tick(m, in, out);
		return;
	}
	jobfsm_enter(m, JOB_BACKOFF, out);
	jobfsm_timer(out, JOBFSM_TIMER_ACQUIRE, 0, JOBFSM_RETRY_MS);
}

/* The lease went: kill the run (it must not outlive the lease), or go back to contending. */
static void
jobfsm_lease_lost(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	m->lease = JOBFSM_LEASE_IDLE;
	m->await_verify = 0;
	if (m->busy) {
		jobfsm_stop_run(out, SIGKILL, JOBFSM_WHY_LOST);
		m->lost_pending = 1;
		jobfsm_enter(m, JOB_STOPPING, out);
		return;
	}
	jobfsm_after_loss(m, in, out);
}

/*
 * Stopping for good while a generation's claim was under way (jobfsm_stop waits for its
 * answer): a claim that landed is given back (HAND_BACK), still under the lease, and the stop
 * waits for that to end as well (its end comes as a claim event), so that the parents' runs
 * go to a worker that carries the job, or are recorded missed, never lost; then done.
 */
static void
jobfsm_claim_stopping(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (in->event == JOBFSM_CLAIMED && !m->handing_back) {
		m->handing_back = 1;
		jobfsm_tick_act(out, JOBFSM_HAND_BACK, m->tick, m->kind);
		return;
	}
	m->handing_back = 0;
	m->tick = -1; /* the claim is over: given back, recorded missed, or it did not land */
	jobfsm_finish_stop(m, out);
}

/* The claim of the tick ended. */
static void
jobfsm_claim_ended(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (m->state != JOB_CLAIMING)
		return;
	if (m->stop_requested) {
		jobfsm_claim_stopping(m, in, out);
		return;
	}
	if (in->event == JOBFSM_CLAIMED) {
		jobfsm_note(out, JOBFSM_NOTE_TICK_RUN, m->tick, m->kind == JOBFSM_KIND_GEN);
		m->unrun = 1;
		jobfsm_start_run(m, in, out);
		return;
	}
	jobfsm_note(out, JOBFSM_NOTE_TICK_GONE, m->tick, in->taken);
	m->tick = -1; /* not ours: nothing to give back */
	jobfsm_release(m, out);
	if (m->ready)
		jobfsm_wait_tick(m, in, out);
	else
		jobfsm_enter(m, JOB_IDLE, out);
}

/* The record as read: the cluster agrees on our lease count; follow its pause. */
static void
jobfsm_agreed(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	m->agreed = 1;
	if (in->paused != m->paused || (in->paused && in->stop)) {
		m->paused = in->paused;
		if (m->paused)
			jobfsm_hold_now(m, in, in->stop, out);
		else
			jobfsm_unhold(m, in, out);
	}
	jobfsm_go(m, in, out);
}

/* The cluster's lease count is not ours: stop contending until that changes. */
static void
jobfsm_conflict(struct jobfsm *m, struct jobfsm_actions *out)
{
	m->agreed = 0;
	m->await_verify = 0;
	if (m->stop_requested && m->state == JOB_CLAIMING)
		return; /* a generation's claim, or its hand-back, ends the stop (jobfsm_stop) */
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	if (m->busy) {
		m->conflict_pending = 1;
		jobfsm_stop_run(out, SIGTERM, JOBFSM_WHY_CONFLICT);
		jobfsm_enter(m, JOB_STOPPING, out);
		return;
	}
	jobfsm_abandon(m, out);
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	jobfsm_release(m, out);
	jobfsm_manual_abort(m, "no_lease", JOBFSM_WHY_CONFLICT, out);
	jobfsm_act(out, JOBFSM_TICK_DEL);
	jobfsm_enter(m, JOB_CONFLICT, out);
}

/* The session expired: nothing that is not running survives it; start over later. */
static void
jobfsm_expired(struct jobfsm *m, struct jobfsm_actions *out)
{
	if (m->busy || m->state == JOB_DONE || m->state == JOB_CONFLICT || m->state == JOB_STOPPING)
		return;
	if (m->stop_requested) {
		jobfsm_finish_stop(m, out); /* it waited for a generation's claim, which is over */
		return;
	}
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	jobfsm_act(out, JOBFSM_TICK_DEL);
	jobfsm_abandon(m, out);
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	jobfsm_release(m, out);
	jobfsm_manual_abort(m, "no_lease", JOBFSM_WHY_EXPIRED, out);
	m->tick = -1;
	m->await_verify = 0;
	jobfsm_enter(m, JOB_IDLE, out);
}

/*
 * Stop for good: end the run (unless wait, then let it finish), release, and be done. A
 * generation's claim under way is not dropped: its write may land, and the parents' runs
 * would then be claimed by a job that never runs them, by no one else either. The stop waits
 * for its answer, holding the lease, and gives a landed claim back (jobfsm_claim_stopping).
 */
static void
jobfsm_stop(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (m->stop_requested && !in->wait && m->state == JOB_STOPPING)
		return;
	if (m->stop_requested && m->state == JOB_CLAIMING)
		return; /* waiting for the generation's claim, or its hand-back */
	m->stop_requested = 1;
	jobfsm_act(out, JOBFSM_TIMER_DEL);
	jobfsm_act(out, JOBFSM_TICK_DEL);
	if (m->state == JOB_CLAIMING && m->kind == JOBFSM_KIND_GEN && m->tick >= 0)
		return;
	jobfsm_abandon(m, out); /* a generation claimed, its run waiting for the lease */
	jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
	if (!m->busy) {
		if (m->state != JOB_DONE)
			jobfsm_finish_stop(m, out);
		return;
	}
	if (in->wait) {
		jobfsm_note(out, JOBFSM_NOTE_WAIT_RUN, -1, 0);
		return;
	}
	jobfsm_stop_run(out, SIGTERM, JOBFSM_WHY_STOP);
	jobfsm_enter(m, JOB_STOPPING, out);
}

/* Events that only the session or the record bring. */
static void
jobfsm_step_session(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	switch (in->event) {
	case JOBFSM_READY:
		if (m->stop_requested || m->state == JOB_DONE)
			break;
		m->ready = 1;
		jobfsm_act(out, JOBFSM_RUNREQ_START);
		if (m->state == JOB_IDLE || m->state == JOB_CONFLICT || m->state == JOB_PAUSED ||
		    m->state == JOB_DRAINED)
			jobfsm_act(out, JOBFSM_CHECK);
		break;
	case JOBFSM_SESSION_SUSPECT:
		if (m->lease == JOBFSM_LEASE_HELD)
			m->lease = JOBFSM_LEASE_UNVERIFIED;
		break;
	case JOBFSM_SESSION_GONE:
		m->ready = m->agreed = 0;
		break;
	case JOBFSM_SESSION_EXPIRED:
		jobfsm_expired(m, out);
		break;
	case JOBFSM_AGREED:
		jobfsm_agreed(m, in, out);
		break;
	case JOBFSM_CONFLICT:
		jobfsm_conflict(m, out);
		break;
	case JOBFSM_DRAIN:
	case JOBFSM_UNDRAIN:
		if (m->stop_requested || m->state == JOB_DONE)
			break;
		m->drained = in->event == JOBFSM_DRAIN;
		if (m->drained)
			jobfsm_hold_now(m, in, in->stop || !m->cfg.scheduled, out);
		else
			jobfsm_unhold(m, in, out);
		break;
	case JOBFSM_STOP:
		jobfsm_stop(m, in, out);
		break;
	default:
		break;
	}
}

/* Feed one event to the job; out says what to do about it, in order. */
void
jobfsm_step(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	memset(out, 0, offsetof(struct jobfsm_actions, a));
	if (!jobfsm_legal(m->state, in->event)) {
		out->illegal = 1;
		return;
	}
	switch (in->event) {
	case JOBFSM_TICK:
		jobfsm_tick(m, in, out);
		break;
	case JOBFSM_TIMER:
		jobfsm_timer_fired(m, in, out);
		break;
	case JOBFSM_PEEKED:
		if (m->state != JOB_STANDBY)
			break;
		if (in->taken)
			jobfsm_wait_tick(m, in, out);
		else {
			jobfsm_note(out, JOBFSM_NOTE_STEP_IN, m->tick, 0);
			jobfsm_contend(m, in, m->tick, JOBFSM_KIND_TICK, out);
		}
		break;
	case JOBFSM_LEASE_ACQUIRED:
		jobfsm_lease_acquired(m, in, out);
		break;
	case JOBFSM_LEASE_LOST:
		jobfsm_lease_lost(m, in, out);
		break;
	case JOBFSM_LEASE_FAILED:
		jobfsm_lease_failed(m, in, out);
		break;
	case JOBFSM_LEASE_VERIFIED:
		m->lease = JOBFSM_LEASE_HELD;
		if (m->await_verify && m->state == JOB_BACKOFF && !m->busy) {
			m->await_verify = 0;
			jobfsm_start_run(m, in, out);
		}
		break;
	case JOBFSM_CLAIMED:
	case JOBFSM_CLAIM_LOST:
		jobfsm_claim_ended(m, in, out);
		break;
	case JOBFSM_STARTED:
		jobfsm_started(m, out);
		break;
	case JOBFSM_START_FAILED:
		jobfsm_start_failed(m, in, out);
		break;
	case JOBFSM_EXITED:
		jobfsm_exited(m, in, out);
		break;
	case JOBFSM_RUN_TIMEOUT:
		if (m->busy) {
			m->timed_out = 1;
			jobfsm_stop_run(out, SIGTERM, JOBFSM_WHY_TIMEOUT);
		}
		break;
	case JOBFSM_SUPERVISOR_DIED:
		jobfsm_supervisor_died(m, out);
		break;
	case JOBFSM_RUN_REQUEST:
		jobfsm_run_request(m, in, out);
		break;
	case JOBFSM_HALT:
		jobfsm_halt(m, in, out);
		break;
	case JOBFSM_CATCH_UP:
		jobfsm_catch_up(m, in, out);
		break;
	default:
		jobfsm_step_session(m, in, out);
		break;
	}
}
