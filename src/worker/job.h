/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* job.h: one configured job's life in the main process. */
#ifndef JOB_H
#define JOB_H

#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "jobfsm.h"
#include "jobrec.h"
#include "proto.h"
#include "zk.h"

struct config;
struct config_job;
struct event_base;
struct job;
struct members;
struct svlink;

/*
 * What a job needs from its owner (the worker), asked for when needed because it
 * changes: the configuration at each reload, the supervisor when one dies.
 */
struct job_cb {
	const struct config *(*config)(void *arg);
	struct svlink *(*supervisor)(void *arg);
	uint32_t (*next_run)(void *arg);             /* a fresh run id, unique among the jobs */
	void (*done)(struct job *, void *arg);       /* the job finished stopping */
	const struct members *(*members)(void *arg); /* the live workers, to rank ticks */
	struct jobhealth *(*health)(void *arg);      /* the worker's health (jobhealth.c) */
	void (*health_changed)(void *arg);           /* it became unhealthy, or healthy again */
	/* (may be NULL) whether no live worker could run job all through [from_ms, to_ms] */
	int (*nobody)(void *arg, const char *job, uint64_t from_ms, uint64_t to_ms);
	struct runjournal *(*journal)(void *arg); /* the open runs' journal (runjournal.c) */
};

/* Why a lease this worker held ended (the metric's label cause). */
enum job_lease_end {
	JOB_LEASE_DEADLINE, /* the lease deadline passed: the supervisor killed the run */
	JOB_LEASE_EXPIRY,   /* the session expired */
	JOB_LEASE_DELETED,  /* its node vanished or changed hands under us */
	JOB_LEASE_RELEASED, /* given back: the tick done, a cool-down, a stop, a conflict */
	JOB_LEASE_ENDS
};

/* The run duration histogram's upper bounds, in seconds (+Inf follows). */
#define JOB_DURATION_BUCKETS 14

/* A job's counters and lease, for the status and the metrics. */
struct job_stats {
	int lease_held;
	uint64_t runs;
	uint64_t failures; /* in total */
	int64_t corrupt_states;
	uint64_t cpu_usec; /* CPU time of every run here that has ended, where it was known */
	uint64_t ooms;     /* runs here that ended by the OOM killer */
	int64_t last_peak; /* bytes: the peak memory of the last run; -1: not known */
	uint64_t outcomes[JOB_OUTCOMES];           /* runs here that ended so */
	uint64_t lease_ends[JOB_LEASE_ENDS];       /* leases held here that ended so */
	uint64_t acquisitions;                     /* leases acquired here */
	uint64_t missed_ticks[JOBREC_MISSED_WHYS]; /* ticks this worker recorded missed, by why */
	uint64_t paused_ticks;                     /* ticks skipped because the job was paused */
	uint64_t last_end_ms;        /* wall clock: the last run here ended; 0: none */
	uint64_t last_ok_ms;         /* wall clock: the last ok run here ended; 0: none */
	int64_t interval_s;          /* between the next two ticks; -1: continuous */
	const double *bucket_bounds; /* JOB_DURATION_BUCKETS, seconds */
	uint64_t buckets[JOB_DURATION_BUCKETS]; /* runs that ended within each bound (cumulative) */
	uint64_t durations;                     /* runs that ended (the histogram's count) */
	double duration_sum;                    /* seconds */
	uint64_t hook_failures;                 /* hooks that failed, timed out or were not run */
};

struct job *job_new(struct event_base *, struct zk *, const struct config_job *,
                    const struct job_cb *, void *arg);
void job_free(struct job *);
void job_ready(struct job *);
void job_session(struct job *, enum zk_event);
void job_stop(struct job *, int wait);
void job_update(struct job *, const struct config_job *);
void job_started(struct job *, uint32_t run, pid_t pid);
void job_start_failed(struct job *, uint32_t run, const char *why);
void job_exited(struct job *, uint32_t run, int status, enum proto_exit_reason,
                const struct proto_usage *);
void job_supervisor_died(struct job *, uint64_t died_ms);
struct svlink;
void job_supervisor_gone(struct job *, const struct svlink *);
void job_run_outlived(struct job *, uint32_t run, uint64_t gone_ms);
int job_owns_run(const struct job *, uint32_t run);
const char *job_run_id(const struct job *, uint32_t run);
uint64_t job_ends(const struct job *);
const char *job_last_outcome(const struct job *);
int job_stopping(const struct job *);
void job_drain(struct job *, int drained, int stop_runs);
struct runjournal_left;
void job_settle_run(struct job *, struct runjournal_left *);
void job_disown_claim(struct job *, struct runjournal_left *);
void job_disown_chain(struct job *, struct runjournal_left *);
int job_holds_lease(const struct job *);

const char *job_name(const struct job *);
const struct config_job *job_config(const struct job *);
enum job_state job_state(const struct job *);
void job_stats(const struct job *, struct job_stats *);
json_t *job_status_json(const struct job *);
const char *job_lease_end_name(enum job_lease_end);

#endif
