/* Runs in: the main process. */
/* job.h: one configured job's life in the main process. */
#ifndef JOB_H
#define JOB_H

#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "proto.h"
#include "zk.h"

struct config;
struct config_job;
struct event_base;
struct job;
struct svlink;

/*
 * What a job needs from its owner (the worker), asked for when needed because it
 * changes: the configuration at each reload, the supervisor when one dies.
 */
struct job_cb {
	const struct config *(*config)(void *arg);
	struct svlink *(*supervisor)(void *arg);
	uint32_t (*next_run)(void *arg);       /* a fresh run id, unique among the jobs */
	void (*done)(struct job *, void *arg); /* the job finished stopping */
};

/* A job's counters and lease, for the status and the metrics. */
struct job_stats {
	int lease_held;
	uint64_t runs;
	uint64_t failures; /* in total */
	int64_t corrupt_states;
	uint64_t cpu_usec;      /* CPU time of every run here that has ended, where it was known */
	uint64_t ooms;          /* runs here that ended by the OOM killer */
	int64_t last_peak;      /* bytes: the peak memory of the last run; -1: not known */
	uint64_t hook_failures; /* hooks that failed, timed out or were not run */
};

enum job_state {
	JOB_IDLE,       /* not contending: no session yet, or stopped */
	JOB_CONFLICT,   /* the cluster agreed on another number of leases */
	JOB_WAITING,    /* scheduled: waiting for the next tick */
	JOB_CONTENDING, /* waiting for a lease */
	JOB_CLAIMING,   /* scheduled: claiming the tick in <root>/jobs/<job>/state */
	JOB_STARTING,   /* the supervisor is starting the command */
	JOB_RUNNING,
	JOB_BACKOFF,  /* the command ended; restarting (continuous) or retrying (scheduled) */
	JOB_STOPPING, /* the command is being stopped */
	JOB_COOLDOWN, /* continuous: gave the lease up after repeated failures */
	JOB_DONE,     /* stopped for good (shutdown or removal) */
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
void job_supervisor_died(struct job *);
int job_owns_run(const struct job *, uint32_t run);
int job_stopping(const struct job *);

const char *job_name(const struct job *);
const struct config_job *job_config(const struct job *);
enum job_state job_state(const struct job *);
void job_stats(const struct job *, struct job_stats *);
json_t *job_status_json(const struct job *);

#endif
