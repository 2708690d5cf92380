/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker and any process that talks to the cluster (with jobrec.c). */
/* jobrec-int.h: the job record's state, private to jobrec.c. */
#ifndef JOBREC_INT_H
#define JOBREC_INT_H

#include <jansson.h>
#include <stdint.h>
#include <sys/queue.h>

#include "format.h"
#include "jobrec.h"

struct schedule;
struct tickstate;
struct zk_reply;

enum jobrec_task_kind {
	JOBREC_TASK_CLAIM,
	JOBREC_TASK_MISSED,
	JOBREC_TASK_RUN,
	JOBREC_TASK_DISOWN
};

#define JOBREC_MAX_REWRITES 5   /* writes of the job record in reaction to it, per window */
#define JOBREC_MAX_RUNS     30  /* run records written per window; the rest are counted */
#define JOBREC_MAX_MISSED   600 /* missed and paused records per window (10 a second) */
#define JOBREC_MAX_RACES    10  /* versioned writes of the state lost in a row, at most */

/* One multi-step operation on the records, with the context its replies need. */
struct jobrec_task {
	struct jobrec *jr;
	enum jobrec_task_kind kind;
	int64_t tick;
	int per_tick;
	char *node;
	int peek;      /* claim: only read whether the tick is claimed; write nothing */
	int await;     /* peek: wait (a watch) until the tick is given back; say only FREE */
	int hand;      /* missed: give the tick back instead (tickstate_hand_back) */
	int give;      /* ... without joining "handed" (tickstate_give_back) */
	int abandoned; /* claim: let go by the job after its write was sent (no callback) */
	int handed;    /* ... what it did: 1 given back, 2 and marked missed, 0 nothing */
	int maybe_set; /* a claim write, or a run record, was sent and may have landed */
	int races;     /* versioned writes lost to another writer */
	int waiting;   /* waiting for a reconnect to go on */
	int rec_sent;  /* missed: the mark and its record were sent in one write, answer lost */
	int settling;  /* run: a dead worker's run, its record looked for by run_id first */
	char *run_id;  /* ... that run */
	jobrec_settle_cb settle_cb; /* ... told the end (with arg) instead of cb.recorded */
	jobrec_claim_cb cb;
	void *arg;
	json_t *record;
	char *data;                    /* run, missed: the record as sent */
	struct jobrec_runs_find *find; /* run, missed: looking for it after a lost answer */
	int history;
	int paused;                   /* missed: a paused job's tick, not a missed one */
	enum jobrec_missed_why why;   /* missed: why; claim: why its skipped ticks are missed */
	const struct schedule *sched; /* claim: to name the ticks skipped since the last claim */
	json_t *skipped;              /* claim: ticks found skipped, recorded with the claim */
	json_t *skip_recs; /* ... [why, record or null (not admitted)] for each, as sent */
	int recs_multi;    /* ... sent in the claim's transaction */
	int recs_apart;    /* ... that transaction failed: the records are written after it */
	TAILQ_ENTRY(jobrec_task) entry;
};

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

/* jobrec.c */
struct jobrec_task *jobrec_task_new(struct jobrec *, enum jobrec_task_kind, int64_t tick,
                                    const char *node);
void jobrec_task_free(struct jobrec_task *);
int jobrec_unknown(const struct jobrec_task *, int rc);
int jobrec_away(int rc);
void jobrec_recorded(struct jobrec *, json_t *record, const char *created);
void jobrec_record_missed(struct jobrec *, int64_t tick, const char *node, int history, int paused,
                          enum jobrec_missed_why);
int jobrec_record_admit(struct jobrec *, json_t *record, int history, struct jobrec_window *,
                        int max);
int jobrec_state_version(const struct zk_reply *read);
void jobrec_write_state(struct jobrec_task *, const struct zk_reply *read, struct tickstate *,
                        void (*cb)(const struct zk_reply *, void *));
void jobrec_trim_cb(const struct zk_reply *, void *);
void jobrec_make_runs(struct jobrec *);

void jobrec_run_step(struct jobrec_task *);

/* jobrec-settle.c */
void jobrec_settle_search(struct jobrec_task *);
void jobrec_disown_step(struct jobrec_task *);

/* jobrec-mark.c */
void jobrec_missed_step(struct jobrec_task *);

/* jobrec-state.c */
void jobrec_state_warn(struct jobrec *, const struct tickstate *);
int jobrec_read_state(struct jobrec *, const struct zk_reply *, struct tickstate *);

#endif
