/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/* jobfsm.h: one job's life in the main process, as one state machine. */
#ifndef JOBFSM_H
#define JOBFSM_H

#include <stdint.h>

#include "proto.h"

/*
 * How a run ended, in run records ("outcome") and in the metrics (label outcome): the one
 * list of outcomes, in the order of jobfsm_outcome_names in jobfsm.c.
 */
enum job_outcome {
	JOB_OUTCOME_OK,           /* exit status 0 */
	JOB_OUTCOME_FAILED,       /* another exit status, or a signal of its own */
	JOB_OUTCOME_TIMEOUT,      /* stopped at the job's timeout */
	JOB_OUTCOME_OOM,          /* the OOM killer ended it, in its cgroup */
	JOB_OUTCOME_KILLED,       /* killed because its lease could not be trusted: the lease
	                           * deadline, a lost lease, a new session, the supervisor died */
	JOB_OUTCOME_STOPPED,      /* stopped on purpose: shutdown, reload, a changed lease count */
	JOB_OUTCOME_START_FAILED, /* the command could not be started */
	JOB_OUTCOME_REPLACED,     /* stopped for the next tick (overlap = replace) */
	JOB_OUTCOMES
};

enum job_state {
	JOB_IDLE,       /* not contending: no session yet, or stopped */
	JOB_CONFLICT,   /* the cluster agreed on another number of leases */
	JOB_WAITING,    /* scheduled: waiting for the next tick */
	JOB_STANDBY,    /* scheduled: a backup for the tick, reading it after its delay */
	JOB_CONTENDING, /* waiting for a lease */
	JOB_CLAIMING,   /* scheduled: claiming the tick in <root>/jobs/<job>/state */
	JOB_STARTING,   /* the supervisor is starting the command */
	JOB_RUNNING,
	JOB_BACKOFF,  /* the command ended; restarting (continuous) or retrying (scheduled) */
	JOB_STOPPING, /* the command is being stopped */
	JOB_COOLDOWN, /* continuous: gave the lease up after repeated failures */
	JOB_DONE,     /* stopped for good (shutdown or removal) */
	JOB_PAUSED,   /* continuous: paused cluster-wide (`leasekeeper pause`), no lease */
	JOB_DRAINED,  /* continuous: this worker is drained (`leasekeeper drain`), no lease */
	JOB_STATES
};

/* What drives a job: each is fed by job.c (or a file split from it) as it happens. */
enum jobfsm_event {
	JOBFSM_READY,           /* registered in the current session */
	JOBFSM_SESSION_SUSPECT, /* the connection dropped: a held lease is unverified */
	JOBFSM_SESSION_GONE,    /* expired or a new session: not registered, not agreed */
	JOBFSM_SESSION_EXPIRED, /* after the lease heard of the expiry: let go what is left */
	JOBFSM_AGREED,          /* the cluster's lease count is ours; paused, stop: the pause */
	JOBFSM_CONFLICT,        /* the cluster's lease count is not ours */
	JOBFSM_TICK,            /* a tick (kind: or a generation) is due; delay_ms: rank's delay */
	JOBFSM_TIMER,           /* the back-off, retry, cool-down or standby timer */
	JOBFSM_PEEKED,          /* a backup read the tick; taken: someone has it */
	JOBFSM_LEASE_ACQUIRED,
	JOBFSM_LEASE_LOST,
	JOBFSM_LEASE_FAILED,   /* the acquire gave up; timed_out: at its timeout */
	JOBFSM_LEASE_VERIFIED, /* the lease is confirmed after a reconnect */
	JOBFSM_CLAIMED,        /* the claim of the tick ended; claim says how */
	JOBFSM_CLAIM_LOST,     /* the tick is someone else's, or the claim failed */
	JOBFSM_STARTED,        /* the supervisor started the run */
	JOBFSM_START_FAILED,   /* the supervisor could not start it */
	JOBFSM_EXITED,         /* the run ended: reason, ok (exit status 0), long_run */
	JOBFSM_RUN_TIMEOUT,    /* the run's timeout */
	JOBFSM_SUPERVISOR_DIED,
	JOBFSM_DRAIN, /* this worker is drained; stop: stop the runs */
	JOBFSM_UNDRAIN,
	JOBFSM_RUN_REQUEST, /* a run-now request was taken for the job */
	JOBFSM_STOP,        /* stop for good; wait: let the run finish */
	JOBFSM_HALT,        /* `leasekeeper stop` took the run: kill (at once), hold (paused) */
	JOBFSM_CATCH_UP,    /* catch_up = all: the missed ticks, oldest first (ticks, nticks) */
	JOBFSM_EVENTS
};

/* What job.c must do, in the order given. */
enum jobfsm_act {
	JOBFSM_ENTER,        /* the state moved from a.from to a.to: log it */
	JOBFSM_ACQUIRE,      /* contend for the lease, giving up after a.ms (0: never) */
	JOBFSM_RETIME,       /* while contending: give up a.ms from now instead */
	JOBFSM_RELEASE,      /* give the lease back (or stop contending) */
	JOBFSM_CLAIM,        /* claim a.tick in the tick state */
	JOBFSM_PEEK,         /* read a.tick's state once (a backup) */
	JOBFSM_CANCEL_CLAIM, /* forget a claim or a read under way */
	JOBFSM_CHECK,        /* read the job record: agreement and pause */
	JOBFSM_RUNREQ_START, /* list run-now requests in this session */
	JOBFSM_RUNREQ_CHECK, /* look for run-now requests if the job could take one */
	JOBFSM_REFUSE_REQ,   /* the request just taken cannot be had: report it "busy" */
	JOBFSM_START_RUN,    /* ask the supervisor to start the command (a.tick) */
	JOBFSM_STOP_RUN,     /* ask the supervisor to stop the run with a.sig (a.why) */
	JOBFSM_TIMER_SET,    /* arm the timer: a.timer, a.n, a.ms */
	JOBFSM_TIMER_DEL,
	JOBFSM_TICK_ARM,         /* arm the tick timer for the next tick */
	JOBFSM_TICK_ARM_IF_IDLE, /* ... unless it is armed */
	JOBFSM_TICK_DEL,
	JOBFSM_RUN_TIMER_SET, /* the run's timeout, if it has one */
	JOBFSM_RUN_TIMER_DEL,
	JOBFSM_RECORD,        /* the run ended with a.outcome: count, record (a.manual...) */
	JOBFSM_RECORD_MISSED, /* record a.tick as missed */
	JOBFSM_RECORD_PAUSED, /* record a.tick as paused */
	JOBFSM_HAND_BACK,     /* give a.tick back: its start failed for a reason of this host;
	                       * of a generation: claimed as the job stopped (CLAIM_LOST ends it) */
	JOBFSM_ABANDON,       /* let a.tick go unrun (a.n: 1 its claim landed, 0 its claim is
	                       * out: a generation only): follow the claim to its answer, give a
	                       * landed one back (no lease needed; a tick with a.why PAUSED is
	                       * recorded paused too); the machine hears nothing of it */
	JOBFSM_MANUAL_ABORT,  /* the taken run-now request ends: a.result, a.why */
	JOBFSM_MANUAL_DONE,   /* a continuous job's request ends: the copy restarted */
	JOBFSM_NOTE,          /* a log line: a.note */
	JOBFSM_DONE,          /* stopped for good: tell the worker */
};

/* What a timer armed with JOBFSM_TIMER_SET waits for. */
enum jobfsm_timer {
	JOBFSM_TIMER_ACQUIRE,  /* a retry after an unexpected acquire failure */
	JOBFSM_TIMER_RESTART,  /* continuous: restart after a run (n: failures, 0: no back-off) */
	JOBFSM_TIMER_RETRY,    /* scheduled: retry n of the tick */
	JOBFSM_TIMER_COOLDOWN, /* continuous: contend again after n failures in a row */
	JOBFSM_TIMER_STANDBY,  /* scheduled: read the tick after ms */
};

/* Why a run is stopped, or a request ended: a sentence for the log or the result. */
enum jobfsm_why {
	JOBFSM_WHY_NONE,
	JOBFSM_WHY_STOP,          /* shutdown or reload */
	JOBFSM_WHY_LOST,          /* the lease was lost */
	JOBFSM_WHY_CONFLICT,      /* the cluster agreed on another lease count */
	JOBFSM_WHY_TIMEOUT,       /* the job's timeout */
	JOBFSM_WHY_PAUSED,        /* paused, stop_running */
	JOBFSM_WHY_DRAINED,       /* the worker is drained */
	JOBFSM_WHY_MANUAL,        /* a run-now restarts the copy */
	JOBFSM_WHY_STOPPED,       /* the job was stopped here before its request ran */
	JOBFSM_WHY_LOST_EARLY,    /* the lease went before the request's run started */
	JOBFSM_WHY_HELD,          /* paused or drained: the request does not run */
	JOBFSM_WHY_PAUSED_EARLY,  /* paused before the request's run started */
	JOBFSM_WHY_DRAINED_EARLY, /* drained before the request's run started */
	JOBFSM_WHY_NOT_AGAIN,     /* the copy stopped but does not start again here */
	JOBFSM_WHY_NO_LEASE,      /* the acquire failed: the event's own reason */
	JOBFSM_WHY_EXPIRED,       /* the session expired before the request's run started */
	JOBFSM_WHY_SV_DIED,       /* the supervisor died */
	JOBFSM_WHY_HALT,          /* `leasekeeper stop` asked for it */
	JOBFSM_WHY_REPLACED,      /* overlap = replace: the next tick is due */
};

/* A log line the machine asks for (the caller words it). */
enum jobfsm_note {
	JOBFSM_NOTE_CATCH_UP,    /* catching up tick a.tick (a.n: from catch_up = all's queue) */
	JOBFSM_NOTE_MANUAL_RUN,  /* running it at the request */
	JOBFSM_NOTE_MANUAL_GO,   /* the request: contending, or restarting the copy */
	JOBFSM_NOTE_TICK_RUN,    /* running the tick claimed (a.n: a chain generation) */
	JOBFSM_NOTE_TICK_GONE,   /* the tick is someone else's (a.n: taken) */
	JOBFSM_NOTE_STEP_IN,     /* a backup steps in: the tick is unclaimed */
	JOBFSM_NOTE_ACQ_FAILED,  /* could not acquire a lease (the event's reason) */
	JOBFSM_NOTE_TICK_FAILED, /* the tick's lease did not come in time */
	JOBFSM_NOTE_WAIT_RUN,    /* stopping: waiting for the run (on_shutdown = wait) */
	JOBFSM_NOTE_AFTER_RUN,   /* what follows a run: a.n is the jobstate action */
	JOBFSM_NOTE_DEADLINE,    /* the lease deadline is too close to start: waiting */
};

/* Which hook a record's outcome runs. */
enum jobfsm_hook {
	JOBFSM_HOOK_NONE,
	JOBFSM_HOOK_SUCCESS,
	JOBFSM_HOOK_FAILURE,
	JOBFSM_HOOK_MISSED,
};

/*
 * What a tick the machine holds is (docs/workflows.md, "A schedule and after"): a time of
 * the job's schedule, claimed in <root>/jobs/<job>/state, or a chain generation (after =
 * JOB: the parents' runs one chained run answers, its time when the last of them was
 * recorded), claimed in <root>/jobs/<job>/chain. A job with both holds either.
 */
enum jobfsm_kind {
	JOBFSM_KIND_TICK, /* a scheduled tick (and a run-now run: no tick) */
	JOBFSM_KIND_GEN,  /* a chain generation */
};

/* One action, and what it needs. */
struct jobfsm_action {
	enum jobfsm_act act;
	enum job_state from, to;  /* JOBFSM_ENTER */
	int64_t tick;             /* CLAIM, PEEK, START_RUN, RECORD_*, NOTE */
	enum jobfsm_kind kind;    /* CLAIM, START_RUN, RECORD*, HAND_BACK, ABANDON, TICK_ARM */
	uint64_t ms;              /* ACQUIRE, RETIME, TIMER_SET */
	int n;                    /* TIMER_SET: the back-off's exponent; NOTE; RECORD_MISSED:
	                           * JOBFSM_MISSED_*; CLAIM: 1 for a catch-up */
	int in_a_row;             /* TIMER_SET, COOLDOWN: the failures that led to it */
	int sig;                  /* STOP_RUN */
	enum jobfsm_why why;      /* STOP_RUN, MANUAL_ABORT; ABANDON of a tick: PAUSED */
	enum jobfsm_timer timer;  /* TIMER_SET */
	enum jobfsm_note note;    /* NOTE */
	enum job_outcome outcome; /* RECORD */
	int manual;               /* RECORD: the run was asked for by the request taken */
	int manual_result;        /* RECORD: and the record is its result (scheduled) */
	int untrusted;            /* RECORD: killed at the lease deadline */
	const char *result;       /* MANUAL_ABORT: the outcome the request reports */
};

/* RECORD_MISSED's n: why the machine lets the tick go. */
#define JOBFSM_MISSED_LATE    0 /* its start_deadline passed before it could contend */
#define JOBFSM_MISSED_OVERLAP 1 /* overlap = skip */
#define JOBFSM_MISSED_LEASE   2 /* the lease did not come by the start_deadline */
#define JOBFSM_MISSED_WAIT    3 /* a newer tick came due while waiting for the lease */

#define JOBFSM_MAX_ACTIONS 48

struct jobfsm_actions {
	int n;
	int overflow; /* more than JOBFSM_MAX_ACTIONS: a bug */
	int illegal;  /* the (state, event) pair is not a legal one: nothing was done */
	struct jobfsm_action a[JOBFSM_MAX_ACTIONS];
};

/* The run-now request the job took, if any. */
enum jobfsm_manual {
	JOBFSM_MANUAL_NONE,
	JOBFSM_MANUAL_QUEUED,  /* taken while busy: acted on once the job is free */
	JOBFSM_MANUAL_ACTIVE,  /* acted on: contending for its lease, or its run runs */
	JOBFSM_MANUAL_RESTART, /* continuous: the copy is stopped to restart it */
};

/* The lease as the machine knows it: moved by its own actions and by lease events. */
enum jobfsm_lease {
	JOBFSM_LEASE_IDLE,
	JOBFSM_LEASE_ACQUIRING,
	JOBFSM_LEASE_HELD,
	JOBFSM_LEASE_UNVERIFIED,
};

/* What a scheduled job does with a tick due while its run holds the lease (overlap). */
enum jobfsm_overlap {
	JOBFSM_OVERLAP_QUEUE,   /* the tick waits for the lease, up to start_deadline */
	JOBFSM_OVERLAP_SKIP,    /* the tick is recorded missed (reason overlap) at once */
	JOBFSM_OVERLAP_REPLACE, /* the run is stopped (outcome replaced); the tick runs */
};

/* The job's configuration as the machine reads it. */
struct jobfsm_config {
	int scheduled;              /* runs at ticks, not continuously */
	int max_failures;           /* continuous: failures in a row before a cool-down */
	int retries;                /* scheduled: retries of a tick */
	uint64_t start_deadline_ms; /* scheduled: a tick starts within this or is missed */
	enum jobfsm_overlap overlap;
};

#define JOBFSM_MAX_CATCH_UP 100 /* catch_up = all: ticks queued at most */

/* A job's life: every field is written by jobfsm_step alone. */
struct jobfsm {
	enum job_state state;
	struct jobfsm_config cfg;
	enum jobfsm_lease lease;
	enum jobfsm_manual manual;
	int ready;             /* registered in the current session */
	int agreed;            /* the cluster's lease count is ours */
	int stop_requested;    /* stopping for good */
	int lost_pending;      /* the lease went while running: contend again after the exit */
	int conflict_pending;  /* the count changed while running: stop contending after */
	int await_verify;      /* start once the lease is confirmed after a reconnect */
	int paused;            /* the record says paused: take no new lease */
	int drained;           /* this worker is drained: take no new lease */
	int busy;              /* a run is under way (started or starting) */
	int timed_out;         /* the run reached its timeout */
	int manual_ended;      /* the run that just ended was the request's */
	int halted;            /* the run is stopped by `leasekeeper stop` */
	int replacing;         /* the run is stopped for the next tick (overlap = replace) */
	int handing_back;      /* stopping: the generation claimed is being given back */
	int unrun;             /* the tick's claim landed and its run has not started */
	int64_t tick;          /* scheduled: the tick being handled, -1 if none */
	enum jobfsm_kind kind; /* ... what it is: a scheduled tick or a chain generation */
	int64_t pending_tick;  /* scheduled: the newest tick that came due during a run */
	int64_t pending_gen;   /* after: the newest generation that came due meanwhile */
	int attempt;           /* scheduled: retries of this tick so far */
	int failures;          /* consecutive */
	int cooldowns;         /* consecutive cool-downs */
	uint64_t manual_ms;    /* the request taken: how long its lease may take */
	uint64_t failures_total;
	int catching;    /* the tick handled is a catch-up one (catch_up = all) */
	int catch_claim; /* ... or catch_up = latest's: its claim's skipped ticks say catch_up */
	int ncatch;      /* catch_up = all: ticks queued */
	int64_t catchq[JOBFSM_MAX_CATCH_UP]; /* ... oldest first */
};

/* One event and the facts that come with it. */
struct jobfsm_input {
	enum jobfsm_event event;
	uint64_t now_ms;       /* wall clock */
	int64_t tick;          /* TICK: the tick due */
	enum jobfsm_kind kind; /* TICK: a scheduled tick, or a chain generation (no delay) */
	uint64_t delay_ms;     /* TICK: the rank's delay; 0: contend now */
	int64_t catch_up;      /* AGREED, UNDRAIN: the latest tick still in its deadline; -1 */
	uint64_t manual_ms;    /* RUN_REQUEST: its timeout */
	int paused, stop;      /* AGREED: the pause, and its stop_running; DRAIN: stop */
	int wait;              /* STOP: let the run finish */
	int kill, hold;        /* HALT: SIGKILL at once; the command paused the job first */
	const int64_t *ticks;  /* CATCH_UP: the missed ticks, oldest first */
	int nticks;
	int taken;                     /* PEEKED, CLAIM_LOST: someone has the tick */
	int timed_out;                 /* LEASE_FAILED: at its timeout */
	int ok;                        /* EXITED: exit status 0 */
	int long_run;                  /* EXITED: ran long enough to reset the failure count */
	enum proto_exit_reason reason; /* EXITED */
	int deadline_near; /* the lease deadline is past, or too close for a run to start */
	int host; /* START_FAILED: for a reason of this host, not the job's (jobhealth.c) */
};

void jobfsm_init(struct jobfsm *, const struct jobfsm_config *);
void jobfsm_configure(struct jobfsm *, const struct jobfsm_config *);
void jobfsm_step(struct jobfsm *, const struct jobfsm_input *, struct jobfsm_actions *);
int jobfsm_legal(enum job_state, enum jobfsm_event);
int jobfsm_active(const struct jobfsm *);
int jobfsm_can_take(const struct jobfsm *);
enum jobfsm_hook jobfsm_hook(const char *outcome);
const char *jobfsm_state_name(enum job_state);
const char *jobfsm_event_name(enum jobfsm_event);
const char *jobfsm_act_name(enum jobfsm_act);
const char *jobfsm_why_text(enum jobfsm_why);
const char *job_outcome_name(enum job_outcome);

#endif
