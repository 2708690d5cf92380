/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker and any process that talks to the cluster (with jobrec.c). */
/* jobrec-int.h: the job record's state, private to jobrec.c. */
#ifndef JOBREC_INT_H
#define JOBREC_INT_H

#include <stdint.h>
#include <sys/queue.h>

#include "format.h"
#include "jobrec.h"

struct jobrec_task;

struct jobrec {
	struct zk *zk;
	char *path;
	char *state_path;
	char *runs_path;
	int leases;
	char *lock_path;    /* recorded with the count, so that status can find the lock */
	char *locks;        /* our locks' canonical text (jobrec_locks_canon); NULL: not ours */
	int cluster;        /* the agreed count, 0 until known */
	int64_t created_ms; /* the record's ctime (the servers' clock), 0 until read */
	int paused;         /* the record says "paused" (`leasekeeper pause`) */
	int paused_stop;    /* ... with --stop-running */
	int skip_catch_up;  /* the next claim's skipped ticks: catch_up, not superseded */
	int checking;
	char *locks_said; /* the other locks the record names, as said; NULL: not other */
	int invalid_said; /* the record's invalid lease count was said (until a valid one) */
	int retired;      /* its job stops for good: it writes no agreement (jobrec_retire) */
	int newer;        /* the record's format, when this release cannot read it */
	int state_newer;  /* the tick state's format, likewise */
	struct format_once record_fmt; /* the record's refusal, logged once */
	struct format_once state_fmt;  /* the state's refusal, logged once */
	int recheck;                   /* check again after the reconnect */
	struct jobrec_window rewrites; /* writes of the record in reaction to what was read */
	struct jobrec_window runs;     /* run records written */
	struct jobrec_window missed_w; /* missed and paused records written */
	int64_t corrupt;               /* tick states found corrupt or claimed too far ahead */
	uint64_t missed[JOBREC_MISSED_WHYS]; /* ticks recorded as missed by us, by why */
	uint64_t warned_ns;                  /* the last warning about the state (rate limit) */
	int warned_dropped;                  /* warnings not logged since */
	struct jobrec_cb cb;
	void *arg;
	TAILQ_HEAD(, jobrec_task) tasks;
};

/* jobrec-state.c */
struct tickstate;
struct zk_reply;
void jobrec_state_warn(struct jobrec *, const struct tickstate *);
int jobrec_read_state(struct jobrec *, const struct zk_reply *, struct tickstate *);

#endif
