/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobfsmctl.c: the job machine's steps for the controls and policies outside a run's own
 * life: a run-now request taken, a stop request (`leasekeeper stop`) that this worker took
 * because the run is its own, catch_up = all's queue of missed ticks, and a start that
 * failed (given back when the failure is this host's).
 */

#include <signal.h>
#include <string.h>

#include "jobfsmpriv.h"
#include "jobstate.h"

/*
 * The supervisor could not start the run. When it failed for a reason of this host
 * (in->host: docs/safety.md, "A host that cannot start jobs") and the run was a scheduled
 * tick's, claimed here, the tick is given back (HAND_BACK: the next worker in rank runs it)
 * instead of retried here, and the lease goes; else the run ends as any run (a retry, a
 * restart, a cool-down).
 */
void
jobfsm_start_failed(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	struct jobstate_end e;
	int64_t tick = m->tick;

	if (!m->busy)
		return;
	if (in->host && m->cfg.scheduled && tick >= 0 && m->kind == JOBFSM_KIND_TICK &&
	    m->state == JOB_STARTING && !m->catching && m->manual != JOBFSM_MANUAL_ACTIVE &&
	    m->manual != JOBFSM_MANUAL_RESTART) {
		jobfsm_record(m, JOB_OUTCOME_START_FAILED, 0, out);
		jobfsm_act(out, JOBFSM_HAND_BACK)->tick = tick;
		m->attempt = 0;
		jobfsm_release(m, out);
		jobfsm_wait_tick(m, in, out);
		return;
	}
	memset(&e, 0, sizeof e);
	e.start_failed = 1;
	jobfsm_record(m, JOB_OUTCOME_START_FAILED, 0, out);
	jobfsm_run_end(m, in, &e, out);
}

/*
 * `leasekeeper stop` took the run under way: SIGTERM, then SIGKILL after kill_grace (kill:
 * SIGKILL at once). The run's record says "stopped"; what follows is jobstate.c's (no retry,
 * the next tick; a continuous copy restarts after restart_backoff). hold: the command paused
 * the job in its record before asking (--no-restart), so the machine knows it already.
 */
void
jobfsm_halt(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (!m->busy)
		return; /* the run ended meanwhile: its record is the answer */
	if (in->hold)
		m->paused = 1;
	m->halted = 1;
	jobfsm_stop_run(out, in->kill ? SIGKILL : SIGTERM, JOBFSM_WHY_HALT);
	jobfsm_enter(m, JOB_STOPPING, out);
}

/* A run-now request was taken for the job: act on it now, or once the job is free. */
void
jobfsm_run_request(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	if (m->manual != JOBFSM_MANUAL_NONE || m->stop_requested) {
		/* can_take said no: the request must not hang. */
		jobfsm_act(out, JOBFSM_REFUSE_REQ);
		return;
	}
	m->manual = JOBFSM_MANUAL_QUEUED;
	m->manual_ms = in->manual_ms;
	if (m->cfg.scheduled ? m->state == JOB_WAITING : m->state == JOB_RUNNING && m->busy)
		jobfsm_manual_go(m, in, out);
}

/* The supervisor started the run. */
void
jobfsm_started(struct jobfsm *m, struct jobfsm_actions *out)
{
	if (!m->busy)
		return;
	if (m->state == JOB_STARTING)
		jobfsm_enter(m, JOB_RUNNING, out);
	jobfsm_act(out, JOBFSM_RUN_TIMER_SET);
	if (!m->cfg.scheduled) {
		/* run-now of a continuous job: done once a new copy runs. */
		if (m->manual != JOBFSM_MANUAL_NONE)
			jobfsm_act(out, JOBFSM_MANUAL_DONE);
		m->manual = JOBFSM_MANUAL_NONE;
		jobfsm_act(out, JOBFSM_RUNREQ_CHECK);
	}
}

/*
 * catch_up = all: the missed ticks read from the tick state (in->ticks, oldest first) are
 * queued and contended for one at a time, oldest first, each with start_deadline counted
 * from when it could first run. The claim keeps each exactly once across the cluster.
 */
void
jobfsm_catch_up(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	int i;

	m->ncatch = 0;
	if (!m->cfg.scheduled || !jobfsm_active(m) || m->paused || m->drained)
		return;
	for (i = 0; i < in->nticks && m->ncatch < JOBFSM_MAX_CATCH_UP; i++)
		if (in->ticks[i] > m->tick)
			m->catchq[m->ncatch++] = in->ticks[i];
	if (m->state == JOB_WAITING && m->ncatch > 0)
		jobfsm_catch_next(m, in, out);
}

/* Contend for the oldest queued catch-up tick. */
void
jobfsm_catch_next(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	int64_t tick = m->catchq[0];

	memmove(m->catchq, m->catchq + 1, (size_t)--m->ncatch * sizeof m->catchq[0]);
	jobfsm_note(out, JOBFSM_NOTE_CATCH_UP, tick, 1);
	m->catching = 1;
	jobfsm_contend(m, in, tick, JOBFSM_KIND_TICK, out);
}

/* A tick came due while catching up: it goes after the queue (1), in order; 0: not catching. */
int
jobfsm_catch_queue(struct jobfsm *m, int64_t tick)
{
	if (!m->catching && m->ncatch == 0)
		return 0;
	if (m->ncatch == JOBFSM_MAX_CATCH_UP) /* the oldest goes: a later claim records it missed */
		memmove(m->catchq, m->catchq + 1, (size_t)--m->ncatch * sizeof m->catchq[0]);
	m->catchq[m->ncatch++] = tick;
	return 1;
}

/* A newer tick is contended for: queued ticks up to it are past (the claim records them). */
void
jobfsm_catch_drop(struct jobfsm *m, int64_t tick)
{
	int i, n = 0;

	for (i = 0; i < m->ncatch; i++)
		if (m->catchq[i] > tick)
			m->catchq[n++] = m->catchq[i];
	m->ncatch = n;
}
