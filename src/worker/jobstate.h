/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* jobstate.h: what a job does when a run ends, decided without processes or ZooKeeper. */
#ifndef JOBSTATE_H
#define JOBSTATE_H

/* What the job knows when a run ends (or could not start). */
struct jobstate_end {
	int scheduled;      /* runs at ticks, not continuously */
	int start_failed;   /* the supervisor could not start the command */
	int ok;             /* exit status 0, and no timeout */
	int long_run;       /* ran long enough to reset the failure count */
	int untrusted;      /* killed at the lease deadline or the end of the session */
	int stop_requested; /* stopping for good */
	int pending;        /* the lease went, or the lease count changed, during the run */
	int lease_idle;     /* the lease is no longer held */
	int lease_held;     /* the lease is held and verified */
	int held_back;      /* paused or drained: no restart, no retry */
	int manual_restart; /* continuous: the copy was stopped to restart it (run-now) */
	int halted;         /* stopped by `leasekeeper stop`: not a failure, no retry */
	int max_failures;   /* continuous: failures in a row before a cool-down */
	int retries;        /* scheduled: retries of a tick */
};

/* The counters the decision reads and moves. */
struct jobstate_counts {
	int failures;  /* consecutive */
	int cooldowns; /* consecutive cool-downs */
	int attempt;   /* scheduled: retries of this tick so far */
};

/* What to do, and the state it leads to. */
enum jobstate_action {
	JOBSTATE_FINISH,      /* stopped for good: DONE */
	JOBSTATE_AFTER_LOSS,  /* carry out the loss or the conflict: CONTENDING, IDLE, ... */
	JOBSTATE_RUN_AGAIN,   /* start again at once under the lease held: STARTING */
	JOBSTATE_RESTART,     /* continuous: restart after a back-off: BACKOFF */
	JOBSTATE_COOLDOWN,    /* continuous: give the lease up for a while: COOLDOWN */
	JOBSTATE_RETRY,       /* scheduled: retry the tick after a back-off: BACKOFF */
	JOBSTATE_NEXT_TICK,   /* scheduled: release, wait for the next tick: WAITING */
	JOBSTATE_HOLD,        /* paused or drained: release; WAITING, PAUSED or DRAINED */
	JOBSTATE_RESTART_NOW, /* run-now of a continuous job: the new copy starts: STARTING */
};

struct jobstate_decision {
	enum jobstate_action action;
	int failed;    /* the run counts as failed (the back-off grows) */
	int counted;   /* the run moved the failure counters (not a stop, loss or kill) */
	int in_a_row;  /* JOBSTATE_COOLDOWN: the failures in a row that led to it */
	int abandoned; /* the restart asked for (manual_restart) does not happen here */
};

struct jobstate_decision jobstate_run_ended(const struct jobstate_end *, struct jobstate_counts *);
const char *jobstate_action_name(enum jobstate_action);

#endif
