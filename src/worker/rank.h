/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* rank.h: which workers run a tick first: the ranking of the live workers that carry a job. */
#ifndef RANK_H
#define RANK_H

#include <stddef.h>
#include <stdint.h>

#define RANK_MAX_JOBS    65536   /* job names read from one registration; the rest ignored */
#define RANK_MAX_SIZE    1048576 /* bytes of a registration parsed (ZooKeeper's default node cap) */
#define RANK_MAX_NAME    512     /* bytes of a job or node name read; longer ones ignored */
#define RANK_STEPS       3       /* backups read the tick at 1, 2, then 3 steps after it */
#define RANK_STEP_MS     500     /* one step, at most ... */
#define RANK_MIN_STEP_MS 50      /* ... and at least */

struct schedule;

/* What a worker's registration says of it, bounded: the jobs it carries, and drained. */
struct rank_member {
	char **jobs; /* sorted, distinct */
	size_t njobs;
	int drained;
	int unhealthy; /* its starts fail for reasons of its host: ranked out (jobhealth.c) */
	int partial;   /* not all of it was read: not a registration, or names dropped or cut */
};

int rank_parse_member(const char *data, size_t len, struct rank_member *);
void rank_member_free(struct rank_member *);
int rank_member_has(const struct rank_member *, const char *job);

int64_t rank_seq(const struct schedule *, int64_t tick);
size_t rank_position(const char *job, int64_t seq, const char *self, const char *const *nodes,
                     size_t n);
uint64_t rank_step_ms(const struct schedule *, int64_t tick, uint64_t start_deadline_ms);
uint64_t rank_delay_ms(size_t position, int per_tick, uint64_t step_ms);

#endif
