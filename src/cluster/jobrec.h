/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* jobrec.h: a job's records in ZooKeeper: the agreed lease count, tick claims, runs. */
#ifndef JOBREC_H
#define JOBREC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "zk.h"

#define JOBREC_MAX_SIZE  65536 /* bytes of a job record parsed; a larger one is corrupt */
#define JOBREC_MAX_LOCKS 64    /* entries of a record's "locks"; more is corrupt */

struct jobrec;

enum jobrec_claim_result {
	JOBREC_CLAIMED, /* ours to run */
	JOBREC_TAKEN,   /* already claimed by enough workers (or by us) */
	JOBREC_ERROR,   /* could not tell (connection lost, session gone) */
	JOBREC_FREE,    /* jobrec_peek: not claimed by enough workers yet */
};

struct jobrec_cb {
	void (*agreed)(struct jobrec *, void *arg);
	void (*conflict)(struct jobrec *, int cluster_leases, void *arg);
	/*
	 * (may be NULL) a record this worker made, of a run or a missed tick, is written:
	 * created is its path, or NULL when it was not (history 0, the write limit, an error)
	 */
	void (*recorded)(struct jobrec *, json_t *record, const char *created, void *arg);
	/*
	 * (may be NULL) a tick a claim of ours skipped is about to be recorded missed for why
	 * (superseded or catch_up): 1 if this worker saw that no live worker could run it
	 * (recorded no_worker instead)
	 */
	int (*no_worker)(struct jobrec *, int64_t tick, void *arg);
};

typedef void (*jobrec_claim_cb)(enum jobrec_claim_result, void *arg);

/*
 * Why a tick was missed: a record's "missed_reason" and the label reason of
 * leasekeeper_job_missed_ticks_total (docs/outcomes.md), a fixed set, in the order of
 * jobrec_missed_names in jobrec-missed.c.
 */
enum jobrec_missed_why {
	JOBREC_MISSED_SUPERSEDED,  /* a later tick was claimed first: claims only move forward */
	JOBREC_MISSED_DEADLINE,    /* its start_deadline passed before it could be contended for */
	JOBREC_MISSED_LEASE_HELD,  /* the lease stayed held by others until its start_deadline */
	JOBREC_MISSED_LOCKS,       /* a lease of several locks: not all came in time */
	JOBREC_MISSED_UNREACHABLE, /* the cluster could not be reached until its start_deadline */
	JOBREC_MISSED_UNHEALTHY,   /* its start failed here and no healthy worker was left */
	JOBREC_MISSED_NO_WORKER,   /* no live undrained worker carried it, from due to deadline */
	JOBREC_MISSED_OVERLAP,     /* the run before it went on (overlap = skip) */
	JOBREC_MISSED_CATCH_UP,    /* not run late: catch_up */
	JOBREC_MISSED_WHYS
};

struct jobrec *jobrec_new(struct zk *, const char *root, const char *job, int leases,
                          const char *lock_path, const char *locks, const struct jobrec_cb *,
                          void *arg);
void jobrec_free(struct jobrec *);
void jobrec_check(struct jobrec *);
void jobrec_session(struct jobrec *, enum zk_event);
int jobrec_cluster_leases(const struct jobrec *);
int jobrec_locks_conflict(const struct jobrec *);
void jobrec_retire(struct jobrec *);
int jobrec_refused_format(const struct jobrec *);
int64_t jobrec_corrupt_states(const struct jobrec *);
int64_t jobrec_created_ms(const struct jobrec *);
uint64_t jobrec_missed_ticks(const struct jobrec *, enum jobrec_missed_why);
const char *jobrec_missed_name(enum jobrec_missed_why);
const char *jobrec_missed_legacy(enum jobrec_missed_why);
json_t *jobrec_missed_record(int64_t tick, const char *node, int paused, enum jobrec_missed_why);
void jobrec_missed_said(const char *job, int64_t tick, int paused, enum jobrec_missed_why);

struct schedule;
void jobrec_claim(struct jobrec *, int64_t tick, int per_tick, const char *node,
                  const struct schedule *, int history, jobrec_claim_cb, void *arg);
void jobrec_peek(struct jobrec *, int64_t tick, int per_tick, const char *node,
                 const struct schedule *, int await, jobrec_claim_cb, void *arg);
void jobrec_cancel_claim(struct jobrec *);
void jobrec_schedule(struct jobrec *, const struct schedule *);
void jobrec_skip_reason(struct jobrec *, const char *reason);
void jobrec_missed_why(struct jobrec *, int64_t tick, const char *node, int history,
                       enum jobrec_missed_why);
void jobrec_hand_back(struct jobrec *, int64_t tick, const char *node, int history, int missed);
void jobrec_give_back(struct jobrec *, int64_t tick, int per_tick, const char *node, int history,
                      int paused);
void jobrec_paused_tick(struct jobrec *, int64_t tick, const char *node, int history);
int jobrec_paused(const struct jobrec *, int *stop_running);
void jobrec_record_run(struct jobrec *, json_t *record, int history);
void jobrec_record_not_run(struct jobrec *, json_t *record, int history);
/* jobrec-settle.c: the record of a run a dead worker process left unrecorded */
typedef void (*jobrec_settle_cb)(const char *path, void *arg);
void jobrec_settle(struct jobrec *, const char *run_id, json_t *record, int history,
                   jobrec_settle_cb, void *arg);
void jobrec_disown(struct jobrec *, const char *node, int64_t tick, jobrec_settle_cb, void *arg);

/* jobrec-runs.c: the oldest records trimmed; whether a record whose answer was lost landed */
void jobrec_runs_trim(struct zk *, const char *runs_path, const struct zk_reply *, int history);
struct jobrec_runs_find;
typedef void (*jobrec_runs_find_cb)(int rc, const char *found, void *arg);
struct jobrec_runs_find *jobrec_runs_find_start(struct zk *, const char *runs_path,
                                                const char *data, size_t len, int max,
                                                jobrec_runs_find_cb, void *arg);
struct jobrec_runs_find *jobrec_runs_find_run(struct zk *, const char *runs_path,
                                              const char *run_id, int max, jobrec_runs_find_cb,
                                              void *arg);
void jobrec_runs_find_free(struct jobrec_runs_find *);

int jobrec_parse_leases(const char *data, int len);
int jobrec_has_lock(const char *data, int len);
char *jobrec_locks_canon(const json_t *locks);
int jobrec_locks_agree(const char *data, int len, const char *ours, char **theirs);
struct config_job;
char *jobrec_config_locks(const struct config_job *);
int jobrec_locks_check(const char *path, const char *data, int len, const char *ours, char **said);

/* A count of events in a window of time, for the write limits (jobrec-data.c). */
#define JOBREC_WINDOW_NS (60 * 1000000000ULL)
struct jobrec_window {
	uint64_t start_ns;
	int count;
	int dropped;
};
int jobrec_window_take(struct jobrec_window *, int max);

#endif
