/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobfsmtick.c: the job machine's ticks, of two kinds (enum jobfsm_kind): a time of the
 * job's schedule and a chain generation (after = JOB). A tick due while the job is busy is
 * held in the pending slot of its kind, so that a tick and a generation due together are
 * both run (or recorded missed or paused, each where its kind is claimed), the older first.
 * overlap applies between runs of one kind: skip lets a scheduled tick go while any run holds
 * the lease, replace stops only a scheduled (or run-now) run, and a generation always waits
 * (queue) for the run under way, up to its start_deadline.
 */

#include <signal.h>

#include "jobfsmpriv.h"

/* An action about a tick of a kind. */
struct jobfsm_action *
jobfsm_tick_act(struct jobfsm_actions *out, enum jobfsm_act act, int64_t tick,
                enum jobfsm_kind kind)
{
	struct jobfsm_action *a = jobfsm_act(out, act);

	a->tick = tick;
	a->kind = kind;
	return a;
}

/* Hold a tick due while the job is busy: the newest of its kind. */
static void
jobfsm_pend(struct jobfsm *m, int64_t tick, enum jobfsm_kind kind)
{
	if (kind == JOBFSM_KIND_GEN)
		m->pending_gen = tick;
	else
		m->pending_tick = tick;
}

/*
 * Take the pending tick to handle now, the older of the two kinds (a generation first at the
 * same second); the other stays pending, for after it. -1: none.
 */
static int64_t
jobfsm_unpend(struct jobfsm *m, enum jobfsm_kind *kind)
{
	int64_t t;

	if (m->pending_gen >= 0 && (m->pending_tick < 0 || m->pending_gen <= m->pending_tick)) {
		t = m->pending_gen;
		m->pending_gen = -1;
		*kind = JOBFSM_KIND_GEN;
		return t;
	}
	t = m->pending_tick;
	m->pending_tick = -1;
	*kind = JOBFSM_KIND_TICK;
	return t;
}

/*
 * Between ticks. A tick or a generation that came due during the run just ended is contended
 * for now, the older first (the claim tells whether another worker ran it; past its deadline
 * it is recorded missed); the other kind's waits for that one's end. Then a request taken
 * meanwhile is acted on, or new ones looked for.
 */
void
jobfsm_wait_tick(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	enum jobfsm_kind kind;
	int64_t pending = jobfsm_unpend(m, &kind);

	jobfsm_abandon(m, out); /* a generation claimed, not run (paused, drained): given back */
	m->tick = -1;
	m->kind = JOBFSM_KIND_TICK;
	m->catching = m->catch_claim = 0;
	jobfsm_enter(m, JOB_WAITING, out);
	jobfsm_act(out, JOBFSM_TICK_ARM_IF_IDLE);
	if (!jobfsm_active(m))
		m->pending_tick = m->pending_gen = -1; /* the next agreement starts afresh */
	if (pending >= 0 && jobfsm_active(m))
		jobfsm_contend(m, in, pending, kind, out);
	if (m->paused || m->drained)
		m->ncatch = 0; /* held: the next claim records them missed */
	if (m->state == JOB_WAITING && m->ncatch > 0)
		jobfsm_catch_next(m, in, out);
	if (m->state == JOB_WAITING && m->manual == JOBFSM_MANUAL_QUEUED)
		jobfsm_manual_go(m, in, out);
	else if (m->state == JOB_WAITING)
		jobfsm_act(out, JOBFSM_RUNREQ_CHECK);
}

/* A tick is due: contend, or wait the rank's delay in STANDBY (a generation has none). */
static void
jobfsm_tick_due(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	m->catching = m->catch_claim = 0;
	if (in->delay_ms == 0 || in->kind == JOBFSM_KIND_GEN) {
		jobfsm_contend(m, in, in->tick, in->kind, out);
		return;
	}
	m->tick = in->tick;
	m->kind = JOBFSM_KIND_TICK;
	jobfsm_enter(m, JOB_STANDBY, out);
	a = jobfsm_act(out, JOBFSM_TIMER_SET);
	a->timer = JOBFSM_TIMER_STANDBY;
	a->ms = in->delay_ms;
}

/*
 * A scheduled tick came due while this worker's run holds the lease: overlap = skip records
 * it missed (reason overlap) at once, whatever the run; overlap = replace stops a run of the
 * same kind (a scheduled tick's or a run-now's, outcome replaced) and runs the tick after it,
 * and lets a chained run end (the tick waits, as with queue). 0: the tick waits.
 */
static int
jobfsm_overlap(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	struct jobfsm_action *a;

	switch (m->cfg.overlap) {
	case JOBFSM_OVERLAP_SKIP:
		a = jobfsm_tick_act(out, JOBFSM_RECORD_MISSED, in->tick, JOBFSM_KIND_TICK);
		a->n = JOBFSM_MISSED_OVERLAP;
		return 1;
	case JOBFSM_OVERLAP_REPLACE:
		if (m->tick >= 0 && m->kind == JOBFSM_KIND_GEN)
			return 0; /* a chained run is not a scheduled one's to replace */
		m->pending_tick = in->tick;
		if (m->replacing || m->state == JOB_STOPPING)
			return 1; /* on its way out already */
		m->replacing = 1;
		jobfsm_stop_run(out, SIGTERM, JOBFSM_WHY_REPLACED);
		jobfsm_enter(m, JOB_STOPPING, out);
		return 1;
	default:
		return 0;
	}
}

/* A tick (or a generation: in->kind) is due. */
void
jobfsm_tick(struct jobfsm *m, const struct jobfsm_input *in, struct jobfsm_actions *out)
{
	int gen = in->kind == JOBFSM_KIND_GEN;

	jobfsm_tick_act(out, JOBFSM_TICK_ARM, -1, in->kind);
	if (!jobfsm_active(m) || (!gen && jobfsm_catch_queue(m, in->tick)))
		return;
	switch (m->state) {
	case JOB_WAITING:
		jobfsm_tick_due(m, in, out);
		break;
	case JOB_STANDBY:
		if (gen) {
			jobfsm_pend(m, in->tick, in->kind); /* after the scheduled tick's read */
			break;
		}
		/* A backup for an older tick: the newest due tick is what counts now. */
		jobfsm_act(out, JOBFSM_TIMER_DEL);
		jobfsm_act(out, JOBFSM_CANCEL_CLAIM);
		jobfsm_tick_due(m, in, out);
		break;
	case JOB_CONTENDING:
		if (m->manual != JOBFSM_MANUAL_NONE || gen || m->kind == JOBFSM_KIND_GEN) {
			/* After the manual run, or the other kind's, as after any run. */
			jobfsm_pend(m, in->tick, in->kind);
			break;
		}
		/*
		 * Still waiting for a lease for an older tick: the newest due tick is what counts
		 * now (claims only move forward). Keep the place in the queue; only the target
		 * and its deadline change. The older tick is lost to the wait: recorded missed now
		 * (unless another worker claimed it), not at a claim that may come much later, or
		 * never, and could name only so many ticks.
		 */
		if (m->tick >= 0 && m->tick < in->tick)
			jobfsm_tick_act(out, JOBFSM_RECORD_MISSED, m->tick, JOBFSM_KIND_TICK)->n =
			    JOBFSM_MISSED_WAIT;
		m->tick = in->tick;
		m->attempt = 0;
		m->catch_claim = 0;
		jobfsm_act(out, JOBFSM_RETIME)->ms = m->cfg.start_deadline_ms;
		break;
	default:
		/* Busy with a run: the tick is for the others, or for us right after. */
		if (gen || !(m->busy && jobfsm_overlap(m, in, out)))
			jobfsm_pend(m, in->tick, in->kind);
		break;
	}
}
