/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* runjournal.h: the runs this worker process started whose record has not landed yet. */
#ifndef RUNJOURNAL_H
#define RUNJOURNAL_H

#include <stdint.h>

#include <jansson.h>

#define RUNJOURNAL_DIR      "open-runs" /* under state_dir */
#define RUNJOURNAL_MAX_SIZE 262144      /* bytes of an entry read; larger is dropped */
#define RUNJOURNAL_MAX_LEFT 4096        /* entries of earlier processes read at start, at most */

struct runjournal;

/* An entry an earlier process of this worker left: its run to settle (runjournal_left). */
struct runjournal_left {
	struct runjournal *rj;
	char *run_id;
	char *job;
	int64_t tick;      /* -1: none */
	int64_t fence;     /* -1: not known */
	uint64_t asked_ms; /* when that process asked its supervisor to start the run */
	json_t *record;    /* the record it sent, or NULL: it died before the run's end */
	json_t *after;     /* a chained run's parent runs (its record's "after"), or NULL */
	int settling;      /* handed to the job's records; its answer not come yet */
	int claim;         /* a claim's entry (its tick), not a run's */
	int chain;         /* ... a chained job's claim of a generation (tick: its time) */
	json_t *claimed;   /* ... and then {"gen": [...], "before": "..."} as written */
};

struct runjournal *runjournal_open(const char *state_dir, const char *node);
void runjournal_free(struct runjournal *);
void runjournal_load(struct runjournal *);
void runjournal_claim(struct runjournal *, const char *job, int64_t tick);
void runjournal_unclaim(struct runjournal *, const char *job);
void runjournal_chain_claim(struct runjournal *, const char *job, int64_t tick, json_t *gen,
                            const char *before);
void runjournal_chain_unclaim(struct runjournal *, const char *job);
void runjournal_begin(struct runjournal *, const char *job, const char *run_id, int64_t tick,
                      int64_t fence, const json_t *after);
void runjournal_record(struct runjournal *, const char *job, const char *run_id,
                       const json_t *record);
void runjournal_end(struct runjournal *, const char *run_id);
struct runjournal_left *runjournal_left(struct runjournal *, int i);
void runjournal_settled(struct runjournal *, struct runjournal_left *);

#endif
