/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* jobpriv.h: what the files of a job's effects (job*.c) share; no one else includes it. */
#ifndef JOBPRIV_H
#define JOBPRIV_H

#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "job.h"
#include "jobfsm.h"
#include "log.h"
#include "proto.h"
#include "runspec.h"

struct event;
struct event_base;
struct job_chain;
struct jobrec;
struct lease;
struct runreq;
struct stopreq;
struct stoprec;

/* The longest run id: node (at most 100 bytes kept), boot, number (docs/design.md). */
#define JOB_RUN_ID_MAX 144

/* Hooks of one job waiting for the running one (misses come in bursts); more are dropped. */
#define JOB_MAX_HOOKS_QUEUED 8

/* A hook waiting for the one before it to end: its key and start spec. */
struct job_hook {
	const char *key;
	struct proto_spec spec;
	char *node;  /* with credentials: the ephemeral copy of its record the token reads */
	char *data;  /* ... its data (the record) */
	char *token; /* ... the digest id (lkhook:BASE64) of the hook's token, given READ */
};

/* What an event brings that the actions it leads to need (job_feed). */
struct job_ctx {
	const char *why;               /* LEASE_FAILED, START_FAILED: the reason given */
	int status;                    /* EXITED: the wait status */
	enum proto_exit_reason reason; /* EXITED */
	const struct proto_usage *u;   /* EXITED */
	uint64_t ran_ms;               /* EXITED */
	const char *fields;            /* EXITED: the run's log fields */
};

struct job {
	struct zk *zk;
	const struct job_cb *cb;
	void *cb_arg;
	const struct config_job *cfg;
	char *name;
	char *lock_path;
	struct jobfsm fsm; /* the job's life: jobfsm.c alone writes it */
	struct lease *lease;
	struct jobrec *rec;
	int conflict_said; /* the cluster's other lease count, as logged; 0: none since agreed */
	int expiring;      /* the session's expiry is being told to the lease */

	struct runreq *req;    /* the run-now requests */
	char *manual_req;      /* the run-now request taken, until it is reported */
	char *manual_by;       /* ... who asked */
	char **manual_env;     /* ... its LEASEKEEPER_PARAM_* (NULL terminated) */
	json_t *manual_params; /* ... and their values, for the record */

	struct stopreq *stops;   /* the stop requests (`leasekeeper stop`) */
	struct job_chain *chain; /* after = JOB: its parents' runs (jobchain.c); NULL */
	int done_later;          /* stopped: done once the chain's claims are followed */
	char *halt_by;           /* who stopped the run under way, for its record */

	uint32_t run;
	char run_id[JOB_RUN_ID_MAX]; /* the run's one name, fixed at its start (job_run_name) */
	char *running_path;          /* its node under <job>/running while it runs, or NULL */
	int running_dir;             /* <job>/running is known to exist */
	pid_t pid;
	uint64_t run_start_ns;
	uint64_t run_start_ms;
	uint64_t sv_died_ms;  /* wall: the supervisor seen gone, the end of its run; 0: none */
	uint64_t outlived_ms; /* wall: its processes outside the group gone (PROTO_STALE_GONE) */
	uint64_t run_died_ms; /* wall: its run died with the supervisor (job_supervisor_gone) */
	int64_t run_fence;
	uint64_t runs;
	uint64_t cpu_usec_total; /* of the runs that have ended, where their cgroup told */
	uint64_t ooms;
	int64_t last_cpu_usec, last_peak; /* of the last run; -1: not known */
	char *last_result;
	uint64_t outcomes[JOB_OUTCOMES];
	uint64_t lease_ends[JOB_LEASE_ENDS];
	uint64_t acquisitions;
	uint64_t paused_ticks; /* ticks this worker let go because the job was paused */
	uint64_t chain_missed; /* after = JOB: parent runs this worker recorded missed */
	uint64_t last_end_ms, last_ok_ms;
	uint64_t buckets[JOB_DURATION_BUCKETS];
	uint64_t durations;
	double duration_sum;
	int last_outcome;   /* enum job_outcome of the last run here; -1: none */
	int last_status;    /* its wait status; -1: none (it did not start, or no process) */
	int64_t next_tick;  /* scheduled: the next tick the timer waits for */
	int64_t retick;     /* a tick given back by another worker, due again now; -1: none */
	int64_t await_tick; /* the tick whose giving back we wait for (jobrec_peek's await) */

	struct event *timer;      /* back-off, retry, cool-down, standby */
	struct event *tick_timer; /* scheduled: the next tick */
	struct event *run_timer;  /* the run's timeout */

	uint32_t hook_run;    /* the hook running (on_failure, ...), 0: none */
	struct job_hook hook; /* the hook starting or running (its node made first) */
	int hook_busy;        /* a hook is starting or running */
	struct job_hook hookq[JOB_MAX_HOOKS_QUEUED]; /* the hooks waiting for it, in order */
	int nhookq;
	const char *hook_key;   /* its key, for logs */
	uint64_t hook_failures; /* hooks that failed, timed out, or were not run */
	uint64_t hook_start_ns;

	/* A job that keeps failing the same way warns once, then counts (see log.h). */
	struct log_limit lim_lost, lim_acquire, lim_cooldown, lim_start, lim_hook;
};

/* job.c */
const struct config *job_main_config(const struct job *);
struct svlink *job_supervisor(const struct job *);
int job_scheduled(const struct job *);
int job_has_schedule(const struct job *);
void job_timer(struct event *, uint64_t ms);
void job_input(struct job *, struct jobfsm_input *, enum jobfsm_event);
uint64_t job_now_ms(const struct job *);
void job_feed(struct job *, const struct jobfsm_input *, const struct job_ctx *);

/* jobtick.c */
void job_arm_tick(struct job *);
void job_arm_tick_if_idle(struct job *);
int64_t job_catch_up(const struct job *);
void job_catch_up_read(struct job *);
void job_tick_cb(int, short, void *);
void job_timer_cb(int, short, void *);
void job_claim(struct job *, int64_t tick, int catch_up);
void job_peek(struct job *, int64_t tick);

/* jobhand.c */
int job_health_failed(struct job *, const char *why);
void job_health_started(struct job *);
enum job_rank_as { JOB_RANK_NORMAL, JOB_RANK_LAST, JOB_RANK_TRIAL };
enum job_rank_as job_health_rank(struct job *, uint64_t now_ms);
void job_hand_back(struct job *, int64_t tick);
void job_tick_abandon(struct job *, int64_t tick, int paused);
void job_await(struct job *, int64_t tick);
void job_set_timer(struct job *, const struct jobfsm_action *);

/* jobrun.c */
struct runspec job_runspec(const struct job *, char *const *argv);
void job_start_run(struct job *);
void job_stop_run(struct job *, const struct jobfsm_action *);
void job_run_ended(struct job *, const struct jobfsm_action *, enum jobfsm_event,
                   const struct job_ctx *);
void job_run_timer_cb(int, short, void *);

/* jobrunning.c */
void job_running_add(struct job *);
void job_running_del(struct job *);

/* jobhand.c */
int job_no_worker_cb(struct jobrec *, int64_t tick, void *arg);

/* jobhook.c */
void job_recorded_cb(struct jobrec *, json_t *rec, const char *created, void *arg);
void job_hook_end(struct job *, int failed, const char *how);
void job_hook_free(struct job_hook *);

/* jobmanual.c */
int job_can_take_cb(void *arg);
void job_take_cb(struct runreq *, const char *name, const char *by, int64_t timeout_ms, void *arg);
void job_manual_end(struct job *, json_t *result);
void job_manual_abort(struct job *, const char *outcome, const char *why);
void job_manual_restarted(struct job *);
void job_free_env(char **env);
char **job_params_env(struct job *, struct runspec *);

/* jobstop.c */
int64_t job_running_cb(void *arg);
void job_halt_cb(struct stopreq *, const char *name, const struct stoprec *, void *arg);
void job_halt_recorded(struct job *, const struct jobfsm_action *, enum jobfsm_event,
                       const struct job_ctx *);

/* jobchain.c */
struct job_chain *job_chain_new(struct job *, struct event_base *);
void job_chain_free(struct job_chain *);
void job_chain_ready(struct job_chain *);
void job_chain_session(struct job_chain *, enum zk_event);
void job_chain_poke(struct job_chain *);
void job_chain_claim(struct job_chain *, const char *how);
void job_chain_cancel(struct job_chain *);
void job_chain_give_back(struct job_chain *);
void job_chain_abandon(struct job_chain *, int landed);
int job_chain_following(const struct job_chain *);
int job_chain_disown(struct job_chain *, struct runjournal_left *);
char **job_chain_env(struct job *, struct runspec *, char **env);
void job_chain_record(const struct job *, json_t *record, int64_t tick, enum jobfsm_kind);
json_t *job_chain_json(const struct job *);

/* jobstats.c */
void job_count_end(struct job *, enum job_outcome, int ran);
void job_set_result(struct job *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
