/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process (pure logic: no process or event calls). */
/* svrun.h: one job run's life in the supervisor, as a state machine. */
#ifndef SVRUN_H
#define SVRUN_H

#include <stdint.h>

#include "proto.h"

/* Where a run is. "Leader" is the job's first process; "group" its process group. */
enum svrun_state {
	SVRUN_STARTING,     /* forked; exec not confirmed yet; no signal sent */
	SVRUN_RUNNING,      /* exec'd; no signal sent */
	SVRUN_TERM_SENT,    /* leader alive; first signal sent; SIGKILL at kill_at or deadline */
	SVRUN_KILLED,       /* leader alive; SIGKILL sent */
	SVRUN_LEFTOVERS,    /* leader reaped, group not empty; SIGTERM sent, SIGKILL at kill_at */
	SVRUN_DRAINING,     /* leader reaped, group not empty; SIGKILL sent */
	SVRUN_START_FAILED, /* exec failed: the child exits 127 on its own, main was told */
	SVRUN_DONE,         /* leader reaped and group empty (or failed start reaped): free it */
};

/* What drives a run. */
enum svrun_event {
	SVRUN_EXEC_OK,       /* the child exec'd its command */
	SVRUN_EXEC_FAILED,   /* the child could not exec */
	SVRUN_STOP,          /* main asked: first signal sig, SIGKILL at kill_at (0: never) */
	SVRUN_EPOCH_END,     /* the run's session epoch is over */
	SVRUN_MAIN_GONE,     /* main went away */
	SVRUN_TIMER,         /* time passed: deadline and grace checks at now */
	SVRUN_LEADER_EXITED, /* the leader is reaped; group_alive says if its group is empty */
};

/* Why a signal is sent, so that the caller logs it as it should. */
enum svrun_why {
	SVRUN_WHY_STOP,
	SVRUN_WHY_EPOCH,
	SVRUN_WHY_MAIN_GONE,
	SVRUN_WHY_DEADLINE_NEAR,
	SVRUN_WHY_DEADLINE_PASSED,
	SVRUN_WHY_GRACE_OVER,
	SVRUN_WHY_LEFTOVERS,
};

struct svrun {
	enum svrun_state state;
	const char *name; /* for logs */
	uint64_t grace_ns;
	uint64_t kill_at; /* 0: no SIGKILL scheduled but the deadline's */
	enum proto_exit_reason reason;
};

struct svrun_input {
	enum svrun_event event;
	uint64_t now;
	uint64_t deadline; /* of the run's epoch; 0 if unknown or over */
	int sig;           /* SVRUN_STOP */
	uint64_t kill_at;  /* SVRUN_STOP */
	int group_alive;   /* SVRUN_LEADER_EXITED */
};

/* What the caller must do, in this order: signals, then messages. */
struct svrun_actions {
	int nsig;
	int sig[2];
	enum svrun_why why[2];
	int send_started;
	int send_start_failed;
	int send_exited; /* and free the run */
	uint64_t wake;   /* SVRUN_TIMER: when to check again; 0 never */
};

void svrun_init(struct svrun *, const char *name, uint64_t grace_ns);
void svrun_step(struct svrun *, const struct svrun_input *, struct svrun_actions *);
int svrun_leader_alive(const struct svrun *);
const char *svrun_state_name(enum svrun_state);
const char *svrun_event_name(enum svrun_event);

#endif
