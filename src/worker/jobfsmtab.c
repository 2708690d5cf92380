/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobfsmtab.c: the job machine's table of legal (state, event) pairs, its names for logs,
 * and the two questions asked of it from outside a step: which hook a record's outcome
 * runs, and whether the job could take a run-now request now.
 */

#include <stdint.h>
#include <string.h>

#include "jobfsm.h"

#define E(ev)   (1u << JOBFSM_##ev)
#define ALWAYS  (E(READY) | E(SESSION_SUSPECT) | E(SESSION_GONE) | E(SESSION_EXPIRED))
#define RECORDS (E(AGREED) | E(CONFLICT) | E(DRAIN) | E(UNDRAIN) | E(STOP))
#define TIMERS  (E(TICK) | E(TIMER) | E(PEEKED) | E(CLAIMED) | E(CLAIM_LOST))
#define LEASES  (E(LEASE_ACQUIRED) | E(LEASE_LOST) | E(LEASE_FAILED) | E(LEASE_VERIFIED))
#define RUNS    (E(STARTED) | E(START_FAILED) | E(EXITED) | E(RUN_TIMEOUT))
#define EVERYWHERE                                                                                 \
	(ALWAYS | RECORDS | TIMERS | E(SUPERVISOR_DIED) | E(RUN_REQUEST) | E(HALT) | E(CATCH_UP))

/*
 * The legal (state, event) pairs. Every state hears the session, the record, the tick
 * timer, stale timer and claim callbacks (ignored unless they are for the state), the
 * supervisor's death, run-now requests and stop requests. Lease events come only where a lease is asked
 * for or held; news of a run only where a run may be under way.
 */
static const uint32_t jobfsm_table[JOB_STATES] = {
    [JOB_IDLE] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_FAILED) | E(LEASE_VERIFIED),
    [JOB_CONFLICT] = EVERYWHERE | LEASES | RUNS,
    [JOB_WAITING] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED),
    [JOB_STANDBY] = EVERYWHERE,
    [JOB_CONTENDING] = EVERYWHERE | LEASES,
    [JOB_CLAIMING] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED),
    [JOB_STARTING] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED) | RUNS,
    [JOB_RUNNING] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED) | RUNS,
    [JOB_BACKOFF] = EVERYWHERE | LEASES,
    [JOB_STOPPING] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED) | RUNS,
    [JOB_COOLDOWN] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED),
    [JOB_DONE] = EVERYWHERE | LEASES | RUNS,
    [JOB_PAUSED] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED),
    [JOB_DRAINED] = EVERYWHERE | E(LEASE_LOST) | E(LEASE_VERIFIED),
};

static const char *jobfsm_state_names[] = {
    "IDLE",    "CONFLICT", "WAITING",  "STANDBY",  "CONTENDING", "CLAIMING", "STARTING",
    "RUNNING", "BACKOFF",  "STOPPING", "COOLDOWN", "DONE",       "PAUSED",   "DRAINED",
};

static const char *jobfsm_event_names[] = {
    "READY",          "SESSION_SUSPECT", "SESSION_GONE", "SESSION_EXPIRED",
    "AGREED",         "CONFLICT",        "TICK",         "TIMER",
    "PEEKED",         "LEASE_ACQUIRED",  "LEASE_LOST",   "LEASE_FAILED",
    "LEASE_VERIFIED", "CLAIMED",         "CLAIM_LOST",   "STARTED",
    "START_FAILED",   "EXITED",          "RUN_TIMEOUT",  "SUPERVISOR_DIED",
    "DRAIN",          "UNDRAIN",         "RUN_REQUEST",  "STOP",
    "HALT",           "CATCH_UP",
};

/* clang-format off */
static const char *jobfsm_act_names[] = {
    "ENTER", "ACQUIRE", "RETIME", "RELEASE", "CLAIM", "PEEK", "CANCEL_CLAIM", "CHECK",
    "RUNREQ_START", "RUNREQ_CHECK", "REFUSE_REQ", "START_RUN", "STOP_RUN", "TIMER_SET",
    "TIMER_DEL", "TICK_ARM", "TICK_ARM_IF_IDLE", "TICK_DEL", "RUN_TIMER_SET",
    "RUN_TIMER_DEL", "RECORD", "RECORD_MISSED", "RECORD_PAUSED", "HAND_BACK", "ABANDON",
    "MANUAL_ABORT", "MANUAL_DONE", "NOTE", "DONE",
};
/* clang-format on */

static const char *jobfsm_why_texts[] = {
    "",
    "the job is stopped",
    "the lease was lost",
    "the cluster agreed on another lease count",
    "the job's timeout",
    "paused, stop_running",
    "the worker is drained",
    "a run-now request restarts it",
    "the job was stopped on this worker (a shutdown or a reload)",
    "the lease was lost before the run started",
    "the job was paused or the worker drained",
    "the job was paused before the run started",
    "the worker was drained before the run started",
    "the copy was stopped but is not started again here",
    "no lease",
    "the session expired before the run started",
    "the supervisor died",
    "`leasekeeper stop` asked for it",
    "the next tick is due (overlap = replace)",
};

static const char *jobfsm_outcome_names[] = {
    "ok", "failed", "timeout", "oom", "killed", "stopped", "start_failed", "replaced",
};

/* The name of a state, for logs and the status. */
const char *
jobfsm_state_name(enum job_state state)
{
	return state < JOB_STATES ? jobfsm_state_names[state] : "?";
}

/* The name of an event, for logs. */
const char *
jobfsm_event_name(enum jobfsm_event event)
{
	return event < JOBFSM_EVENTS ? jobfsm_event_names[event] : "?";
}

/* The name of an action, for logs and tests. */
const char *
jobfsm_act_name(enum jobfsm_act act)
{
	return jobfsm_act_names[act];
}

/* Why a run is stopped or a request ended, in words. */
const char *
jobfsm_why_text(enum jobfsm_why why)
{
	return jobfsm_why_texts[why];
}

/* An outcome's name, as records and metrics spell it. */
const char *
job_outcome_name(enum job_outcome outcome)
{
	return jobfsm_outcome_names[outcome];
}

/* Whether event is legal in state. */
int
jobfsm_legal(enum job_state state, enum jobfsm_event event)
{
	return state < JOB_STATES && event < JOBFSM_EVENTS &&
	       (jobfsm_table[state] & (1u << event)) != 0;
}

/*
 * The hook a record's outcome runs: on_success after ok, on_missed after a missed tick,
 * none after a stop or a paused tick, on_failure after anything else (failed, timeout,
 * oom, killed, start_failed).
 */
enum jobfsm_hook
jobfsm_hook(const char *outcome)
{
	if (outcome == NULL || strcmp(outcome, "stopped") == 0 || strcmp(outcome, "paused") == 0 ||
	    strcmp(outcome, "replaced") == 0)
		return JOBFSM_HOOK_NONE;
	if (strcmp(outcome, "ok") == 0)
		return JOBFSM_HOOK_SUCCESS;
	if (strcmp(outcome, "missed") == 0)
		return JOBFSM_HOOK_MISSED;
	return JOBFSM_HOOK_FAILURE;
}

/*
 * Whether the job could act on a run-now request now: a scheduled job between ticks, or a
 * continuous one whose copy runs here; never on a drained worker.
 */
int
jobfsm_can_take(const struct jobfsm *m)
{
	if (!jobfsm_active(m) || m->drained || m->manual != JOBFSM_MANUAL_NONE)
		return 0;
	if (m->cfg.scheduled)
		return m->state == JOB_WAITING;
	return m->state == JOB_RUNNING && m->lease == JOBFSM_LEASE_HELD;
}
