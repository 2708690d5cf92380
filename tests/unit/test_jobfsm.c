/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jobfsm.c: the job machine (jobfsm.c) walked through every sequence of events to a
 * bounded depth, and through seeded random longer ones, against a model of what is around
 * it (the lease, the supervisor, the claims, the timers, run-now requests), checking the
 * invariants of docs/job-machine.md after each step.
 */

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "jobfsm.h"

#define MAX_PATH 512

/* What the model outside the machine knows. */
enum run { RUN_NONE, RUN_STARTING, RUN_RUNNING };

struct env {
	struct jobfsm m;
	enum jobfsm_lease lease; /* the lease as lease.c has it */
	int connected;
	int registered;
	enum run run;
	int stop_sent;
	int claim, peek, timer, run_timer, list;
	int64_t claimed_tick;          /* the tick whose claim landed last, -1 */
	enum jobfsm_kind claimed_kind; /* ... a scheduled tick or a chain generation */
	int64_t claim_tick;            /* the CLAIM under way: its tick */
	enum jobfsm_kind claim_kind;   /* ... and kind */
	enum jobfsm_kind run_kind;     /* the run started last: its kind */
	int64_t run_tick;              /* ... and tick */
	int64_t last_gen;              /* the newest generation a CLAIM asked for, -1 */
	int open_run;                  /* a run started whose record is not written */
	int req_open;                  /* a run-now request taken and not ended */
	int halt_open;      /* a stop request (`leasekeeper stop`) took the run under way */
	int64_t last_claim; /* the newest tick a CLAIM asked for, -1 */
	int64_t catch[3];   /* CATCH_UP: the missed ticks given */
	int done;
	int late;   /* main woke past the lease deadline: it stays past until the session answers */
	int handed; /* a HAND_BACK in the step under way */
	int backing; /* a generation claimed as the job stopped is being given back */
	/*
	 * A generation whose claim was sent and is not answered for yet: OWED_OUT, its claim
	 * under way; OWED_LANDED, it landed and its run has not started; OWED_BACK, a stop's
	 * hand-back is under way. Answered: its run starts, the claim is lost, the hand-back
	 * ends, or the machine lets it go with ABANDON (jobchain.c follows the claim to its
	 * answer and gives a landed one back). Never dropped otherwise.
	 */
	int owed;
	int64_t owed_tick;
	/*
	 * A scheduled tick whose claim landed (runners = [us]) and whose run has not started:
	 * answered by its run, or let go with ABANDON (jobrec.c gives it back), never dropped
	 * (else it stays claimed, neither run nor recorded missed). -1: none.
	 */
	int64_t tick_owed;
	uint64_t now_ms;
};

enum { OWED_NONE, OWED_OUT, OWED_LANDED, OWED_BACK };

/* EXITED's b: the supervisor killed the run at the deadline while main was stopped. */
#define WOKE_LATE 0x100

/* One input the model can feed: an event and its facts. */
struct input {
	const char *name;
	enum jobfsm_event event;
	int a, b; /* the facts, by event */
};

static const struct input inputs[] = {
    {"READY", JOBFSM_READY, 0, 0},
    {"DISCONNECT", JOBFSM_SESSION_SUSPECT, 0, 0},
    {"RECONNECT", JOBFSM_LEASE_VERIFIED, 0, 0},
    {"EXPIRE", JOBFSM_SESSION_EXPIRED, 0, 0},
    {"AGREED", JOBFSM_AGREED, 0, 0},
    {"AGREED(paused)", JOBFSM_AGREED, 1, 0},
    {"AGREED(paused,stop)", JOBFSM_AGREED, 1, 1},
    {"CONFLICT", JOBFSM_CONFLICT, 0, 0},
    {"TICK", JOBFSM_TICK, 0, 0},
    {"TICK(backup)", JOBFSM_TICK, 1, 0},
    {"TICK(gen)", JOBFSM_TICK, 2, 0},
    {"TIMER", JOBFSM_TIMER, 0, 0},
    {"PEEKED(free)", JOBFSM_PEEKED, 0, 0},
    {"PEEKED(taken)", JOBFSM_PEEKED, 1, 0},
    {"LEASE_ACQUIRED", JOBFSM_LEASE_ACQUIRED, 0, 0},
    {"LEASE_LOST", JOBFSM_LEASE_LOST, 0, 0},
    {"LEASE_FAILED(timeout)", JOBFSM_LEASE_FAILED, 1, 0},
    {"LEASE_FAILED", JOBFSM_LEASE_FAILED, 0, 0},
    {"CLAIMED", JOBFSM_CLAIMED, 0, 0},
    {"CLAIM_LOST", JOBFSM_CLAIM_LOST, 1, 0},
    {"STARTED", JOBFSM_STARTED, 0, 0},
    {"START_FAILED", JOBFSM_START_FAILED, 0, 0},
    {"START_FAILED(host)", JOBFSM_START_FAILED, 1, 0},
    {"EXITED(ok)", JOBFSM_EXITED, 1, PROTO_EXIT_NORMAL},
    {"EXITED(failed)", JOBFSM_EXITED, 0, PROTO_EXIT_NORMAL},
    {"EXITED(deadline)", JOBFSM_EXITED, 0, PROTO_EXIT_DEADLINE},
    {"EXITED(deadline,woke late)", JOBFSM_EXITED, 0, PROTO_EXIT_DEADLINE | WOKE_LATE},
    {"EXITED(stopped)", JOBFSM_EXITED, 0, PROTO_EXIT_STOPPED},
    {"RUN_TIMEOUT", JOBFSM_RUN_TIMEOUT, 0, 0},
    {"SUPERVISOR_DIED", JOBFSM_SUPERVISOR_DIED, 0, 0},
    {"DRAIN", JOBFSM_DRAIN, 0, 0},
    {"DRAIN(stop)", JOBFSM_DRAIN, 1, 0},
    {"UNDRAIN", JOBFSM_UNDRAIN, 0, 0},
    {"RUN_REQUEST", JOBFSM_RUN_REQUEST, 0, 0},
    {"STOP", JOBFSM_STOP, 0, 0},
    {"STOP(wait)", JOBFSM_STOP, 1, 0},
    {"HALT", JOBFSM_HALT, 0, 0},
    {"HALT(kill,hold)", JOBFSM_HALT, 1, 1},
    {"CATCH_UP", JOBFSM_CATCH_UP, 0, 0},
};
#define NINPUTS ((int)(sizeof inputs / sizeof inputs[0]))

static const char *path[MAX_PATH];
static int depth;
static uint64_t steps;

/* Fail with the sequence that led here. */
static void violation(const struct env *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
violation(const struct env *e, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	int i;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "INVARIANT BROKEN (%s job): %s\n  after:",
	        e->m.cfg.scheduled ? "scheduled" : "continuous", msg);
	for (i = 0; i < depth; i++)
		fprintf(stderr, " %s", path[i]);
	fprintf(stderr, "\n  state %s, manual %d, lease %d, run %d\n",
	        jobfsm_state_name(e->m.state), (int)e->m.manual, (int)e->lease, (int)e->run);
	fail_msg("%s", msg);
}

/* Whether the model can bring input now. */
static int
enabled(const struct env *e, const struct input *in)
{
	if (e->done && in->event != JOBFSM_STOP)
		return 0;
	switch (in->event) {
	case JOBFSM_READY:
		return !e->registered;
	case JOBFSM_SESSION_SUSPECT:
		return e->connected;
	case JOBFSM_LEASE_VERIFIED:
		return !e->connected;
	case JOBFSM_SESSION_EXPIRED:
		return 1;
	case JOBFSM_AGREED:
	case JOBFSM_CONFLICT:
		return e->registered;
	case JOBFSM_TICK:
		return e->m.cfg.scheduled;
	case JOBFSM_TIMER:
		return e->timer;
	case JOBFSM_PEEKED:
		return e->peek;
	case JOBFSM_LEASE_ACQUIRED:
		return e->lease == JOBFSM_LEASE_ACQUIRING && e->connected;
	case JOBFSM_LEASE_LOST:
		return e->lease == JOBFSM_LEASE_HELD || e->lease == JOBFSM_LEASE_UNVERIFIED;
	case JOBFSM_LEASE_FAILED:
		return e->lease == JOBFSM_LEASE_ACQUIRING;
	case JOBFSM_CLAIMED:
	case JOBFSM_CLAIM_LOST:
		return e->claim;
	case JOBFSM_STARTED:
	case JOBFSM_START_FAILED:
		return e->run == RUN_STARTING;
	case JOBFSM_EXITED:
		return e->run == RUN_RUNNING && (in->b != PROTO_EXIT_STOPPED || e->stop_sent);
	case JOBFSM_RUN_TIMEOUT:
		return e->run_timer && e->run != RUN_NONE;
	case JOBFSM_RUN_REQUEST:
		return e->list;
	case JOBFSM_HALT:
		return e->run != RUN_NONE; /* stopreq.c takes a request only for a run under way */
	case JOBFSM_CATCH_UP:
		/* The state read finds ticks after the last claim, at or before now. */
		return e->m.cfg.scheduled && e->registered &&
		       (int64_t)(e->now_ms / 1000) > e->last_claim;
	case JOBFSM_SUPERVISOR_DIED:
	case JOBFSM_DRAIN:
	case JOBFSM_UNDRAIN:
	case JOBFSM_STOP:
		return 1;
	default:
		return 0;
	}
}

/* Which hook an outcome must run. */
static enum jobfsm_hook
expected_hook(enum job_outcome o)
{
	return o == JOB_OUTCOME_OK                                     ? JOBFSM_HOOK_SUCCESS
	       : o == JOB_OUTCOME_STOPPED || o == JOB_OUTCOME_REPLACED ? JOBFSM_HOOK_NONE
	                                                               : JOBFSM_HOOK_FAILURE;
}

/* Carry out one action in the model, checking what it may do. */
static void
apply(struct env *e, const struct jobfsm_action *a, enum job_state *seen)
{
	struct jobfsm *m = &e->m;

	switch (a->act) {
	case JOBFSM_ENTER:
		if (a->from != *seen)
			violation(e, "ENTER from %s, but the state was %s",
			          jobfsm_state_name(a->from), jobfsm_state_name(*seen));
		*seen = a->to;
		break;
	case JOBFSM_ACQUIRE:
		if (e->lease != JOBFSM_LEASE_IDLE)
			violation(e,
			          "ACQUIRE while the lease is not idle (lease_acquire is fatal)");
		if (m->drained)
			violation(e, "a drained job takes a new lease");
		if (m->paused && m->manual != JOBFSM_MANUAL_ACTIVE)
			violation(e, "a paused job takes a new lease, not for a run-now request");
		e->lease = JOBFSM_LEASE_ACQUIRING;
		break;
	case JOBFSM_RELEASE:
		e->lease = JOBFSM_LEASE_IDLE;
		break;
	case JOBFSM_CLAIM:
		if (e->lease != JOBFSM_LEASE_HELD)
			violation(e, "CLAIM without the lease");
		/* Each kind's claims move forward: ticks in the tick state, generations apart. */
		if (a->tick < (a->kind == JOBFSM_KIND_GEN ? e->last_gen : e->last_claim))
			violation(
			    e, "a claim of %s %lld after one of %lld (claims only move forward)",
			    a->kind == JOBFSM_KIND_GEN ? "generation" : "tick", (long long)a->tick,
			    (long long)(a->kind == JOBFSM_KIND_GEN ? e->last_gen : e->last_claim));
		if (a->kind == JOBFSM_KIND_GEN && e->owed != OWED_NONE)
			violation(
			    e,
			    "generation %lld claimed while %lld is owed (neither run nor let go)",
			    (long long)a->tick, (long long)e->owed_tick);
		if (a->kind == JOBFSM_KIND_GEN) {
			e->last_gen = a->tick;
			e->owed = OWED_OUT;
			e->owed_tick = a->tick;
		} else
			e->last_claim = a->tick;
		e->claim_tick = a->tick;
		e->claim_kind = a->kind;
		e->claim = 1;
		break;
	case JOBFSM_PEEK:
		e->peek = 1;
		break;
	case JOBFSM_CANCEL_CLAIM:
		if (e->owed != OWED_NONE)
			violation(e,
			          "CANCEL_CLAIM drops generation %lld (claim state %d), not let go "
			          "first (ABANDON): its claim may land, and no one runs it",
			          (long long)e->owed_tick, e->owed);
		e->claim = e->peek = e->backing = 0;
		break;
	case JOBFSM_ABANDON:
		if (a->kind == JOBFSM_KIND_TICK) {
			if (e->tick_owed < 0 || a->tick != e->tick_owed || a->n != 1 ||
			    (a->why == JOBFSM_WHY_PAUSED) != (m->paused != 0))
				violation(e,
				          "ABANDON of tick %lld (landed %d), but tick %lld is owed",
				          (long long)a->tick, a->n, (long long)e->tick_owed);
			e->tick_owed = -1;
			break;
		}
		if (e->owed == OWED_NONE || a->tick != e->owed_tick ||
		    a->n != (e->owed != OWED_OUT))
			violation(e,
			          "ABANDON of %lld (landed %d), but generation %lld is owed (%d)",
			          (long long)a->tick, a->n, (long long)e->owed_tick, e->owed);
		e->owed = OWED_NONE;
		e->claim = e->backing = 0; /* followed by jobchain.c: the machine hears nothing */
		break;
	case JOBFSM_START_RUN:
		if (e->run != RUN_NONE || e->open_run)
			violation(e, "two runs of the job at once");
		if (e->lease != JOBFSM_LEASE_HELD)
			violation(e, "a run starts without a held lease");
		if (e->late)
			violation(e, "a run starts while the lease deadline is past");
		if (m->cfg.scheduled && a->tick >= 0 &&
		    (a->tick != e->claimed_tick || a->kind != e->claimed_kind))
			violation(e, "the run of %s %lld starts unclaimed",
			          a->kind == JOBFSM_KIND_GEN ? "generation" : "tick",
			          (long long)a->tick);
		e->run_kind = a->kind;
		e->run_tick = a->tick;
		if (a->kind == JOBFSM_KIND_TICK && a->tick >= 0 && a->tick == e->tick_owed)
			e->tick_owed = -1; /* answered by the run's record */
		if (e->tick_owed >= 0)
			violation(e, "a run of %lld while tick %lld is owed", (long long)a->tick,
			          (long long)e->tick_owed);
		if (a->kind == JOBFSM_KIND_GEN && a->tick >= 0 && e->owed != OWED_NONE) {
			if (e->owed != OWED_LANDED || a->tick != e->owed_tick)
				violation(e, "a run of generation %lld while %lld is owed (%d)",
				          (long long)a->tick, (long long)e->owed_tick, e->owed);
			e->owed = OWED_NONE; /* answered by the run's record */
		}
		if (m->cfg.scheduled && a->tick < 0 && m->manual != JOBFSM_MANUAL_ACTIVE)
			violation(e, "a run with no tick and no run-now request");
		e->run = RUN_STARTING;
		e->open_run = 1;
		e->stop_sent = 0;
		e->run_timer = 0;
		break;
	case JOBFSM_STOP_RUN:
		if (e->run == RUN_NONE)
			violation(e, "STOP_RUN with no run");
		e->stop_sent = 1;
		break;
	case JOBFSM_TIMER_SET:
		e->timer = 1;
		break;
	case JOBFSM_TIMER_DEL:
		e->timer = 0;
		break;
	case JOBFSM_RUN_TIMER_SET:
		e->run_timer = 1;
		break;
	case JOBFSM_RUN_TIMER_DEL:
		e->run_timer = 0;
		break;
	case JOBFSM_RECORD:
		if (!e->open_run)
			violation(e, "a record for no run, or a second one");
		e->open_run = 0;
		if (a->tick != e->run_tick || (a->tick >= 0 && a->kind != e->run_kind))
			violation(e, "the record of the run of %lld (kind %d) says %lld (kind %d)",
			          (long long)e->run_tick, (int)e->run_kind, (long long)a->tick,
			          (int)a->kind);
		if (a->outcome == JOB_OUTCOME_REPLACED && m->cfg.overlap != JOBFSM_OVERLAP_REPLACE)
			violation(e, "a run replaced without overlap = replace");
		if (a->outcome == JOB_OUTCOME_REPLACED && a->kind == JOBFSM_KIND_GEN)
			violation(e, "a chained run replaced");
		if (jobfsm_hook(job_outcome_name(a->outcome)) != expected_hook(a->outcome))
			violation(e, "the hook does not follow the outcome %s",
			          job_outcome_name(a->outcome));
		if (e->halt_open && a->outcome != JOB_OUTCOME_STOPPED &&
		    a->outcome != JOB_OUTCOME_KILLED && a->outcome != JOB_OUTCOME_TIMEOUT &&
		    a->outcome != JOB_OUTCOME_OOM && a->outcome != JOB_OUTCOME_START_FAILED &&
		    a->outcome != JOB_OUTCOME_REPLACED)
			violation(e, "a run taken by a stop request records %s",
			          job_outcome_name(a->outcome));
		e->halt_open = 0;
		if (a->manual_result) {
			if (!e->req_open)
				violation(e, "a run-now result for no request");
			e->req_open = 0;
		}
		break;
	case JOBFSM_RECORD_MISSED:
		if (jobfsm_hook("missed") != JOBFSM_HOOK_MISSED)
			violation(e, "a missed tick does not run on_missed");
		break;
	case JOBFSM_RECORD_PAUSED:
		if (jobfsm_hook("paused") != JOBFSM_HOOK_NONE)
			violation(e, "a paused tick runs a hook");
		break;
	case JOBFSM_HAND_BACK:
		if (a->kind == JOBFSM_KIND_GEN) {
			/* Claimed as the job stopped for good: given back under its lease. */
			if (!m->stop_requested || a->tick < 0 || a->tick != e->claimed_tick ||
			    e->claimed_kind != JOBFSM_KIND_GEN ||
			    (e->lease != JOBFSM_LEASE_HELD && e->lease != JOBFSM_LEASE_UNVERIFIED))
				violation(
				    e,
				    "HAND_BACK of generation %lld, not the one claimed (%lld) "
				    "as the job stops, under its lease",
				    (long long)a->tick, (long long)e->claimed_tick);
			e->claim = 1; /* its end comes as a claim's */
			e->claim_tick = a->tick;
			e->claim_kind = a->kind;
			e->backing = 1;
			if (e->owed != OWED_LANDED || a->tick != e->owed_tick)
				violation(e, "HAND_BACK of generation %lld, not the one landed",
				          (long long)a->tick);
			e->owed = OWED_BACK;
			break;
		}
		if (!m->cfg.scheduled || a->tick < 0 || a->tick != e->claimed_tick ||
		    a->kind != JOBFSM_KIND_TICK || e->claimed_kind != JOBFSM_KIND_TICK)
			violation(e, "HAND_BACK of tick %lld, not the tick claimed (%lld)",
			          (long long)a->tick, (long long)e->claimed_tick);
		e->handed = 1;
		break;
	case JOBFSM_MANUAL_ABORT:
	case JOBFSM_MANUAL_DONE:
		if (!e->req_open)
			violation(e, "%s for no request", jobfsm_act_name(a->act));
		e->req_open = 0;
		break;
	case JOBFSM_DONE:
		if (e->tick_owed >= 0)
			violation(e, "done, tick %lld owed: neither run nor let go",
			          (long long)e->tick_owed);
		if (e->owed != OWED_NONE)
			violation(e, "done, generation %lld owed (%d): neither run nor let go",
			          (long long)e->owed_tick, e->owed);
		e->done = 1;
		e->backing = 0;
		break;
	default:
		break;
	}
}

/* The invariants that hold between events. */
static void
check(struct env *e)
{
	const struct jobfsm *m = &e->m;

	if (m->lease != e->lease)
		violation(e, "the machine thinks the lease is %d, it is %d", (int)m->lease,
		          (int)e->lease);
	if ((e->run != RUN_NONE) != (m->busy != 0))
		violation(e, "the machine thinks a run is%s under way", m->busy ? "" : " not");
	if (e->req_open != (m->manual != JOBFSM_MANUAL_NONE))
		violation(e, "a request %s", e->req_open ? "is forgotten" : "is made up");
	if (m->manual == JOBFSM_MANUAL_ACTIVE || m->manual == JOBFSM_MANUAL_RESTART) {
		/* A taken request is on its way to a run, or it has ended. */
		int going = e->run != RUN_NONE ||
		            (m->state == JOB_CONTENDING && e->lease == JOBFSM_LEASE_ACQUIRING) ||
		            (m->state == JOB_CLAIMING && e->claim) ||
		            ((m->state == JOB_BACKOFF || m->state == JOB_COOLDOWN) &&
		             (e->timer || m->await_verify));
		if (!going)
			violation(e, "a taken run-now request is stranded");
	}
	if (m->manual == JOBFSM_MANUAL_QUEUED &&
	    (m->state == JOB_WAITING || m->state == JOB_PAUSED || m->state == JOB_DRAINED ||
	     m->state == JOB_IDLE || m->state == JOB_CONFLICT || m->state == JOB_COOLDOWN))
		violation(e, "a queued run-now request waits where nothing will act on it");
	if (e->done && (e->lease != JOBFSM_LEASE_IDLE || e->req_open))
		violation(e, "stopped for good, still holding a lease or a request");
	if (e->run != RUN_NONE && e->lease == JOBFSM_LEASE_IDLE && !e->stop_sent)
		violation(e, "a run goes on without its lease, not being stopped");
}

/*
 * Whether a step that ended a run a stop request took (recorded "stopped") then retried the
 * tick or started a copy at once: the schedule goes on, a copy waits restart_backoff.
 */
static int
halted_end(const struct jobfsm_actions *out)
{
	int i, stopped = 0, bad = 0;

	for (i = 0; i < out->n; i++) {
		const struct jobfsm_action *a = &out->a[i];

		if (a->act == JOBFSM_RECORD)
			stopped = a->outcome == JOB_OUTCOME_STOPPED;
		else if (stopped && a->act == JOBFSM_START_RUN)
			bad = 1;
		else if (stopped && a->act == JOBFSM_TIMER_SET && a->timer == JOBFSM_TIMER_RETRY)
			bad = 1;
		else if (stopped && a->act == JOBFSM_TIMER_SET &&
		         a->timer == JOBFSM_TIMER_RESTART && a->n != 0)
			bad = 1;
	}
	return bad;
}

/*
 * Whether a step for a tick due during a run misses what overlap asks: skip records the tick
 * missed at once; replace signals the run (unless it is being stopped already).
 */
static int
overlap_missing(const struct env *e, const struct jobfsm_input *fi,
                const struct jobfsm_actions *out)
{
	int i;

	for (i = 0; i < out->n; i++) {
		if (e->m.cfg.overlap == JOBFSM_OVERLAP_SKIP &&
		    out->a[i].act == JOBFSM_RECORD_MISSED && out->a[i].tick == fi->tick)
			return 0;
		if (e->m.cfg.overlap == JOBFSM_OVERLAP_REPLACE &&
		    out->a[i].act == JOBFSM_STOP_RUN && out->a[i].sig == SIGTERM)
			return 0;
	}
	return e->m.cfg.overlap == JOBFSM_OVERLAP_SKIP || e->m.state != JOB_STOPPING;
}

/*
 * A start of a claimed tick that failed for a reason of this host gives the tick back in the
 * same step, and neither retries it here nor keeps the lease; nothing else gives one back.
 */
static void
hand_check(const struct env *e, const struct jobfsm_actions *out, int due)
{
	int i;

	if (e->handed && !due)
		violation(e, "a tick given back that no host failure asked for");
	if (!due)
		return;
	if (!e->handed)
		violation(e, "a host failure to start a claimed tick did not give it back");
	for (i = 0; i < out->n; i++) {
		if (out->a[i].act == JOBFSM_START_RUN ||
		    (out->a[i].act == JOBFSM_TIMER_SET && out->a[i].timer == JOBFSM_TIMER_RETRY))
			violation(e, "a tick given back is retried here");
	}
	if (e->lease != JOBFSM_LEASE_IDLE && e->lease != JOBFSM_LEASE_ACQUIRING)
		violation(e, "a tick given back, its lease kept");
}

/*
 * A stop for good while a generation's claim is under way with the lease held (claiming)
 * neither drops the claim nor ends: the claim may land. A claim that lands then is given
 * back, under the lease, and the job is done only once the hand-back ends (stopping: the stop
 * came before this step; backing: a hand-back was under way).
 */
static void
gen_stop_check(struct env *e, const struct jobfsm_actions *out, enum jobfsm_event event,
               int claiming, int stopping, int backing)
{
	int i, back = 0, done = 0, dropped = 0, run = 0;

	for (i = 0; i < out->n; i++) {
		back |= out->a[i].act == JOBFSM_HAND_BACK;
		done |= out->a[i].act == JOBFSM_DONE;
		dropped |= out->a[i].act == JOBFSM_CANCEL_CLAIM;
		run |= out->a[i].act == JOBFSM_START_RUN;
	}
	if (event == JOBFSM_STOP && claiming && (dropped || done))
		violation(e, "a stop dropped a generation's claim under way");
	if (event == JOBFSM_CLAIMED && claiming && stopping && (!back || done || run))
		violation(e, "a generation claimed as the job stopped was not given back");
	if ((event == JOBFSM_CLAIMED || event == JOBFSM_CLAIM_LOST) && backing && (back || !done))
		violation(e, "the end of a generation's hand-back did not end the stop");
}

/* Feed one event to the machine and apply its actions to the model. */
static void
feed(struct env *e, enum jobfsm_event event, const struct input *in)
{
	struct jobfsm_input fi;
	struct jobfsm_actions out;
	enum job_state seen = e->m.state;
	int i, had_run = e->run != RUN_NONE;
	uint64_t failures = e->m.failures_total, failed = 0;
	/* A tick due while a run goes on here, to be skipped or to replace it (not catching up). */
	int overlapping = e->run != RUN_NONE && e->m.cfg.overlap != JOBFSM_OVERLAP_QUEUE &&
	                  jobfsm_active(&e->m) && !e->m.catching && e->m.ncatch == 0 &&
	                  !(event == JOBFSM_TICK && in->a == 2);
	/* A generation due during a run: it waits, it neither stops the run nor is missed. */
	int gen_during = event == JOBFSM_TICK && in->a == 2 && e->run != RUN_NONE;
	/* replace replaces only a run of its kind: a chained run is waited for. */
	int chained_run = event == JOBFSM_TICK && e->run != RUN_NONE && e->run_tick >= 0 &&
	                  e->run_kind == JOBFSM_KIND_GEN;
	/* A run-now restart of the copy asked for a new copy at once: it is one. */
	int halting = e->halt_open && e->m.manual != JOBFSM_MANUAL_RESTART;
	int hand_due; /* a start of a claimed tick failed for a reason of this host */
	/* A generation's claim under way (not a hand-back), and the lease held for it. */
	int gen_claim = e->claim && e->claim_kind == JOBFSM_KIND_GEN && !e->backing &&
	                e->m.state == JOB_CLAIMING,
	    held = e->lease == JOBFSM_LEASE_HELD || e->lease == JOBFSM_LEASE_UNVERIFIED,
	    stopping = e->m.stop_requested, backing = e->backing;

	memset(&fi, 0, sizeof fi);
	fi.event = event;
	fi.now_ms = e->now_ms;
	fi.catch_up = -1;
	fi.manual_ms = 3000;
	fi.deadline_near = e->late;
	switch (event) {
	case JOBFSM_AGREED:
		fi.paused = in->a;
		fi.stop = in->b;
		break;
	case JOBFSM_TICK:
		fi.tick = (int64_t)(e->now_ms / 1000);
		fi.delay_ms = in->a == 1 ? 500 : 0;
		fi.kind = in->a == 2 ? JOBFSM_KIND_GEN : JOBFSM_KIND_TICK;
		break;
	case JOBFSM_PEEKED:
	case JOBFSM_CLAIM_LOST:
		fi.taken = in->a;
		break;
	case JOBFSM_LEASE_FAILED:
		fi.timed_out = in->a;
		break;
	case JOBFSM_START_FAILED:
		fi.host = in->a;
		break;
	case JOBFSM_EXITED:
		fi.ok = in->a;
		fi.reason = (enum proto_exit_reason)(in->b & ~WOKE_LATE);
		break;
	case JOBFSM_DRAIN:
		fi.stop = in->a;
		break;
	case JOBFSM_STOP:
		fi.wait = in->a;
		break;
	case JOBFSM_HALT:
		fi.kill = fi.hold = in->a;
		break;
	case JOBFSM_CATCH_UP:
		fi.ticks = e->catch;
		fi.nticks = 0;
		for (i = 2; i >= 0; i--)
			if ((int64_t)(e->now_ms / 1000) - i > e->last_claim)
				e->catch[fi.nticks++] = (int64_t)(e->now_ms / 1000) - i;
		break;
	default:
		break;
	}
	hand_due = event == JOBFSM_START_FAILED && in->a && e->m.cfg.scheduled &&
	           e->m.state == JOB_STARTING && e->m.tick >= 0 && !e->m.catching &&
	           e->m.kind == JOBFSM_KIND_TICK && e->m.manual != JOBFSM_MANUAL_ACTIVE &&
	           e->m.manual != JOBFSM_MANUAL_RESTART;
	e->handed = 0;
	jobfsm_step(&e->m, &fi, &out);
	steps++;
	if (out.illegal)
		violation(e, "%s is not legal in %s", jobfsm_event_name(event),
		          jobfsm_state_name(e->m.state));
	if (out.overflow)
		violation(e, "too many actions");
	for (i = 0; i < out.n; i++) {
		/* job.c relies on it: a start may fail at once, a stop may free the job. */
		if ((out.a[i].act == JOBFSM_START_RUN || out.a[i].act == JOBFSM_DONE) &&
		    i != out.n - 1)
			violation(e, "%s is not the last action", jobfsm_act_name(out.a[i].act));
		apply(e, &out.a[i], &seen);
	}
	if (seen != e->m.state)
		violation(e, "the ENTER actions do not end in the state");
	/* The failure counter counts the runs that failed by themselves, nothing else. */
	for (i = 0; i < out.n; i++)
		failed +=
		    out.a[i].act == JOBFSM_RECORD && (out.a[i].outcome == JOB_OUTCOME_FAILED ||
		                                      out.a[i].outcome == JOB_OUTCOME_TIMEOUT ||
		                                      out.a[i].outcome == JOB_OUTCOME_OOM ||
		                                      out.a[i].outcome == JOB_OUTCOME_START_FAILED);
	if (e->m.failures_total != failures + failed)
		violation(e, "failures_total moved by %lld for %llu failed runs",
		          (long long)(e->m.failures_total - failures), (unsigned long long)failed);
	if (had_run && e->run == RUN_NONE && e->open_run)
		violation(e, "a run ended without its record");
	hand_check(e, &out, hand_due);
	gen_stop_check(e, &out, event, gen_claim && held, stopping, backing);
	if (event == JOBFSM_TICK && overlapping &&
	    !(chained_run && e->m.cfg.overlap == JOBFSM_OVERLAP_REPLACE) &&
	    overlap_missing(e, &fi, &out))
		violation(e, "a tick due during a run was not handled as overlap = %s says",
		          e->m.cfg.overlap == JOBFSM_OVERLAP_SKIP ? "skip" : "replace");
	for (i = 0; i < out.n && (gen_during || (overlapping && chained_run &&
	                                         e->m.cfg.overlap == JOBFSM_OVERLAP_REPLACE));
	     i++)
		if (out.a[i].act == JOBFSM_STOP_RUN || out.a[i].act == JOBFSM_RECORD_MISSED)
			violation(e, "%s during a chained run: %s",
			          gen_during ? "a generation due" : "a tick due with replace",
			          jobfsm_act_name(out.a[i].act));
	if (event == JOBFSM_HALT) {
		int sent = 0;

		for (i = 0; i < out.n; i++)
			sent |= out.a[i].act == JOBFSM_STOP_RUN &&
			        out.a[i].sig == (in->a ? SIGKILL : SIGTERM);
		if (!sent)
			violation(e, "a stop request took the run and it was not signalled");
	}
	/* A tick owed is held by the machine until it is answered for (run or ABANDON). */
	if (e->tick_owed >= 0 && (e->m.tick != e->tick_owed || e->m.kind != JOBFSM_KIND_TICK))
		violation(e, "tick %lld claimed (landed) let go, neither run nor abandoned",
		          (long long)e->tick_owed);
	/* A generation owed is held by the machine until it is answered for. */
	if (e->owed != OWED_NONE && (e->m.tick != e->owed_tick || e->m.kind != JOBFSM_KIND_GEN))
		violation(e, "generation %lld (claim state %d) let go, neither run nor abandoned",
		          (long long)e->owed_tick, e->owed);
	if (halting && !e->halt_open && halted_end(&out))
		violation(e, "a run ended by a stop request is retried or restarted at once");
	if ((event == JOBFSM_LEASE_LOST) && e->run != RUN_NONE) {
		int killed = 0;

		for (i = 0; i < out.n; i++)
			killed |= out.a[i].act == JOBFSM_STOP_RUN && out.a[i].sig == SIGKILL;
		if (!killed)
			violation(e, "the lease went and the run was not killed");
	}
	if (e->list && !jobfsm_can_take(&e->m))
		e->list = 0;
	for (i = 0; i < out.n; i++)
		if ((out.a[i].act == JOBFSM_RUNREQ_CHECK || out.a[i].act == JOBFSM_RUNREQ_START) &&
		    jobfsm_can_take(&e->m))
			e->list = 1;
}

/* Bring one input: the model's side first, then the machine's. */
static void
bring(struct env *e, const struct input *in)
{
	switch (in->event) {
	case JOBFSM_READY:
		e->registered = 1;
		feed(e, JOBFSM_READY, in);
		break;
	case JOBFSM_SESSION_SUSPECT:
		e->connected = 0;
		if (e->lease == JOBFSM_LEASE_HELD)
			e->lease = JOBFSM_LEASE_UNVERIFIED;
		feed(e, JOBFSM_SESSION_SUSPECT, in);
		break;
	case JOBFSM_LEASE_VERIFIED: /* RECONNECT */
		e->connected = 1;
		e->late = 0; /* the session answered: the deadline moved on */
		if (e->lease == JOBFSM_LEASE_UNVERIFIED) {
			e->lease = JOBFSM_LEASE_HELD;
			feed(e, JOBFSM_LEASE_VERIFIED, in);
		}
		break;
	case JOBFSM_SESSION_EXPIRED:
		e->registered = 0;
		e->connected = 1;
		e->claim = e->peek = e->list = 0;
		feed(e, JOBFSM_SESSION_GONE, in);
		if (e->lease == JOBFSM_LEASE_HELD || e->lease == JOBFSM_LEASE_UNVERIFIED) {
			e->lease = JOBFSM_LEASE_IDLE;
			feed(e, JOBFSM_LEASE_LOST, in);
		} else if (e->lease == JOBFSM_LEASE_ACQUIRING) {
			e->lease = JOBFSM_LEASE_IDLE;
			feed(e, JOBFSM_LEASE_FAILED, in);
		}
		feed(e, JOBFSM_SESSION_EXPIRED, in);
		e->late = 0; /* a new session: no lease of the old one is left */
		break;
	case JOBFSM_TICK:
		e->now_ms += 1000;
		feed(e, JOBFSM_TICK, in);
		break;
	case JOBFSM_TIMER:
		e->timer = 0;
		e->now_ms += 100;
		feed(e, JOBFSM_TIMER, in);
		break;
	case JOBFSM_PEEKED:
		e->peek = 0;
		feed(e, JOBFSM_PEEKED, in);
		break;
	case JOBFSM_LEASE_ACQUIRED:
		e->lease = JOBFSM_LEASE_HELD;
		feed(e, in->event, in);
		break;
	case JOBFSM_LEASE_LOST:
	case JOBFSM_LEASE_FAILED:
		e->lease = JOBFSM_LEASE_IDLE;
		feed(e, in->event, in);
		break;
	case JOBFSM_CLAIMED:
	case JOBFSM_CLAIM_LOST:
		e->claim = 0;
		/* A generation's claim ends: landed, or not ours; a hand-back's end answers it. */
		if (e->claim_kind == JOBFSM_KIND_GEN && e->owed == OWED_OUT)
			e->owed = in->event == JOBFSM_CLAIMED ? OWED_LANDED : OWED_NONE;
		else if (e->claim_kind == JOBFSM_KIND_GEN && e->owed == OWED_BACK)
			e->owed = OWED_NONE;
		if (in->event == JOBFSM_CLAIMED) {
			e->claimed_tick = e->claim_tick;
			e->claimed_kind = e->claim_kind;
			if (e->claim_kind == JOBFSM_KIND_TICK && !e->m.stop_requested)
				e->tick_owed = e->claim_tick;
		}
		feed(e, in->event, in);
		break;
	case JOBFSM_STARTED:
		e->run = RUN_RUNNING;
		feed(e, in->event, in);
		break;
	case JOBFSM_START_FAILED:
	case JOBFSM_EXITED:
	case JOBFSM_SUPERVISOR_DIED:
		e->run = RUN_NONE;
		if (in->event == JOBFSM_EXITED && (in->b & WOKE_LATE))
			e->late = 1;
		feed(e, in->event, in);
		break;
	case JOBFSM_RUN_TIMEOUT:
		e->run_timer = 0;
		feed(e, in->event, in);
		break;
	case JOBFSM_RUN_REQUEST:
		e->list = 0;
		if (e->m.manual == JOBFSM_MANUAL_NONE && !e->m.stop_requested)
			e->req_open = 1;
		feed(e, in->event, in);
		break;
	case JOBFSM_HALT:
		e->halt_open = 1;
		feed(e, in->event, in);
		break;
	default:
		feed(e, in->event, in);
		break;
	}
	check(e);
}

/* A job just created: kind 0 continuous, 1 scheduled, 2 with overlap = skip, 3 replace. */
static void
env_init(struct env *e, int kind)
{
	static const enum jobfsm_overlap overlap[] = {JOBFSM_OVERLAP_QUEUE, JOBFSM_OVERLAP_QUEUE,
	                                              JOBFSM_OVERLAP_SKIP, JOBFSM_OVERLAP_REPLACE};
	struct jobfsm_config cfg = {kind != 0, 2, 1, 1500, overlap[kind]};

	memset(e, 0, sizeof *e);
	jobfsm_init(&e->m, &cfg);
	e->connected = 1;
	e->claimed_tick = -1;
	e->last_claim = -1;
	e->last_gen = -1;
	e->tick_owed = -1;
	e->now_ms = 1000000;
}

/* Every sequence of up to left more inputs from e. */
static void
walk(const struct env *e, int left)
{
	int i;

	if (left == 0)
		return;
	for (i = 0; i < NINPUTS; i++) {
		struct env next;

		if (!enabled(e, &inputs[i]))
			continue;
		next = *e;
		path[depth++] = inputs[i].name;
		bring(&next, &inputs[i]);
		walk(&next, left - 1);
		depth--;
	}
}

/* The depth of the exhaustive walk: LK_JOBFSM_DEPTH, or what runs in a few seconds. */
static int
walk_depth(void)
{
	const char *s = getenv("LK_JOBFSM_DEPTH");

	return s != NULL ? atoi(s) : 7;
}

static void walk_from_agreed_to(int kind, int to);

/* Every sequence to the depth, from a job registered in its session and agreed. */
static void
walk_from_agreed(int kind)
{
	walk_from_agreed_to(kind, walk_depth());
}

/* Every sequence to depth to, from a new job (two shorter) and from an agreed one. */
static void
walk_from_agreed_to(int scheduled, int to)
{
	static const struct input ready = {"READY", JOBFSM_READY, 0, 0};
	static const struct input agreed = {"AGREED", JOBFSM_AGREED, 0, 0};
	struct env e;

	env_init(&e, scheduled);
	depth = 0;
	walk(&e, to - 2); /* from the start, shorter */
	env_init(&e, scheduled);
	path[depth++] = ready.name;
	bring(&e, &ready);
	path[depth++] = agreed.name;
	bring(&e, &agreed);
	walk(&e, to);
	depth = 0;
}

static void
test_every_sequence_scheduled(void **state)
{
	(void)state;
	steps = 0;
	walk_from_agreed(1);
	fprintf(stderr, "scheduled: %llu steps to depth %d\n", (unsigned long long)steps,
	        walk_depth());
}

/* overlap = skip and replace, one event shallower (the scheduled walk covers the rest). */
static void
test_every_sequence_overlap(void **state)
{
	(void)state;
	steps = 0;
	walk_from_agreed_to(2, walk_depth() - 1);
	walk_from_agreed_to(3, walk_depth() - 1);
	fprintf(stderr, "overlap skip and replace: %llu steps to depth %d\n",
	        (unsigned long long)steps, walk_depth() - 1);
}

static void
test_every_sequence_continuous(void **state)
{
	(void)state;
	steps = 0;
	walk_from_agreed(0);
	fprintf(stderr, "continuous: %llu steps to depth %d\n", (unsigned long long)steps,
	        walk_depth());
}

/* Seeded random sequences, longer: LK_JOBFSM_SEED replays one. */
static void
test_random_sequences(void **state)
{
	const char *s = getenv("LK_JOBFSM_SEED");
	unsigned seed = s != NULL ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL);
	int run, n, i, pick[NINPUTS], npick;

	(void)state;
	fprintf(stderr, "random sequences: seed %u (LK_JOBFSM_SEED=%u replays them)\n", seed, seed);
	srandom(seed);
	for (run = 0; run < 4000; run++) {
		struct env e;

		env_init(&e, run % 4);
		depth = 0;
		for (n = 0; n < 150 && depth < MAX_PATH; n++) {
			npick = 0;
			for (i = 0; i < NINPUTS; i++)
				if (enabled(&e, &inputs[i]))
					pick[npick++] = i;
			if (npick == 0)
				break;
			i = pick[random() % npick];
			path[depth++] = inputs[i].name;
			bring(&e, &inputs[i]);
		}
	}
	depth = 0;
}

/* Every state and event has a name; the table is what jobfsm_step obeys. */
static void
test_names_and_table(void **state)
{
	int s, ev;

	(void)state;
	for (s = 0; s < JOB_STATES; s++)
		assert_string_not_equal(jobfsm_state_name((enum job_state)s), "?");
	for (ev = 0; ev < JOBFSM_EVENTS; ev++)
		assert_string_not_equal(jobfsm_event_name((enum jobfsm_event)ev), "?");
	/* A run's news where no run can be: illegal, and nothing happens. */
	{
		struct jobfsm m;
		struct jobfsm_config cfg = {1, 2, 1, 1500, JOBFSM_OVERLAP_QUEUE};
		struct jobfsm_input in = {.event = JOBFSM_EXITED, .catch_up = -1};
		struct jobfsm_actions out;

		jobfsm_init(&m, &cfg);
		assert_false(jobfsm_legal(JOB_WAITING, JOBFSM_EXITED));
		m.state = JOB_WAITING;
		jobfsm_step(&m, &in, &out);
		assert_true(out.illegal);
		assert_int_equal(out.n, 0);
		assert_int_equal(m.state, JOB_WAITING);
	}
	assert_int_equal(jobfsm_hook("ok"), JOBFSM_HOOK_SUCCESS);
	assert_int_equal(jobfsm_hook("missed"), JOBFSM_HOOK_MISSED);
	assert_int_equal(jobfsm_hook("paused"), JOBFSM_HOOK_NONE);
	assert_int_equal(jobfsm_hook("stopped"), JOBFSM_HOOK_NONE);
	assert_int_equal(jobfsm_hook("killed"), JOBFSM_HOOK_FAILURE);
	assert_int_equal(jobfsm_hook("start_failed"), JOBFSM_HOOK_FAILURE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_and_table),
	    cmocka_unit_test(test_every_sequence_scheduled),
	    cmocka_unit_test(test_every_sequence_continuous),
	    cmocka_unit_test(test_every_sequence_overlap),
	    cmocka_unit_test(test_random_sequences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
