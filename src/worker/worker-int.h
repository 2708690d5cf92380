/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-int.h: what the files of the worker (worker*.c) share; no one else includes it. */
#ifndef WORKER_INT_H
#define WORKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "compat.h"
#include "endpoints.h"
#include "jobhealth.h"
#include "proto.h"
#include "supervisor.h"
#include "zk.h"

struct aclcheck;
struct config;
struct config_job;
struct event;
struct event_base;
struct http;
struct job;
struct members;
struct svlink;
struct worker_fp;
struct worker_reload;

#define WORKER_SUPERVISOR_RESTARTS 5    /* at most this many ... */
#define WORKER_SUPERVISOR_WINDOW_S 60   /* ... within this many seconds */
#define WORKER_STOP_SLACK_MS       2000 /* beyond the longest kill_grace at shutdown */
#define WORKER_FLUSH_MS            2000 /* at most this long for the last writes to land */
#define WORKER_REREGISTER_MAX      5    /* registrations again after a deletion, at most ... */
#define WORKER_REREGISTER_WINDOW_S 60   /* ... within this many seconds; then wait */
#define WORKER_DRAIN_POLL_MS       250  /* drained: how often the leases still held are counted */
#define WORKER_STATUS_MS           1000 /* systemd's STATUS= is brought up to date this often */
#define WORKER_PLACEMENT_MS        5000 /* how often jobs no live worker can run are looked for */
#define WORKER_PLACEMENT_LINES     10   /* ... each warned of in a line of its own; the rest: one */
#define WORKER_PLACEMENT_SPANS     4    /* spans with no worker kept per job (worker-placement.c) */
#define WORKER_OBSERVE_MS          50 /* the view changed: who can run each job, this much later */
/*
 * Main's loop has three priorities: every event takes the middle one (1); a reload's slices,
 * its start and the reaping of what it replaced take the last (2), so they run only in a turn
 * of the loop where nothing else is ready: a request or a heartbeat that needs several turns
 * (read, answer, write) is not made to wait a slice at each.
 */
#define WORKER_PRIORITIES          3
#define WORKER_PRIORITY_BACKGROUND 2
#define WORKER_DEADLINE_PUSH_MS    50 /* the supervisor learns a deadline that moved this much */

enum worker_state {
	WORKER_CONNECTING,  /* no session yet */
	WORKER_REGISTERING, /* creating our node */
	WORKER_DUPLICATE,   /* another session holds our node id: waiting for it to go */
	WORKER_READY,       /* registered: jobs may contend */
	WORKER_STOPPING,    /* stopping jobs before closing the session */
};

struct worker_job {
	struct worker *w;
	struct job *job;
	struct config *cfg; /* the configuration its job_config() is part of */
	int done;
	/*
	 * A copy a reload changed: the new one (succ) is not made ready until the old one (its
	 * pred) is done, whatever locks each takes (worker_job_release).
	 */
	struct worker_job *pred, *succ;
	TAILQ_ENTRY(worker_job) entry;
};

/* A configuration replaced by a reload, kept while jobs it describes may still stop. */
struct worker_config {
	struct config *cfg;
	TAILQ_ENTRY(worker_config) entry;
};

/* Whose the node under our id is, by its data (worker_node_predecessor). */
#define WORKER_PRED_DEAD 1 /* a process of this host that is gone: our predecessor */
#define WORKER_PRED_SELF 2 /* this process: an earlier session of ours, brought back */

struct worker {
	char *config_file;
	struct config *cfg;
	struct config *initial_cfg; /* the caller's: freed by the caller */
	struct event_base *base;
	struct zk *zk;
	struct svlink *sv;
	struct endpoints *http;
	struct runout *runout;      /* runs' output for followers (/runs/ID/output) */
	struct members *members;    /* the live workers and their jobs, for ranking ticks */
	struct runjournal *journal; /* runs started whose record has not landed */
	int disowned; /* the previous process's claims were given back at registration */
	struct event *placement_timer;      /* jobs no live worker can run, looked for */
	json_t *unrunnable;                 /* {job: true}: those last found, warned of once */
	struct event *observe_timer;        /* the view changed: who can run each job, again */
	uint64_t observe_change_ms;         /* the first change not looked at yet; 0: none */
	int observe_cut;                    /* ... one of them a disconnection */
	json_t *nobody;                     /* {job: [[from, until], ...]}: seen carried by none */
	char *http_listen;                  /* what http listens on, NULL: off */
	const struct endpoints_cb *http_cb; /* to listen anew at a reload */
	enum worker_state state;
	char *path; /* <root>/workers/<node_id> */
	uint64_t started_ms;
	int notified_ready;
	struct supervisor_opts sv_opts; /* [worker] cgroups, for each supervisor */
	char *cgroup_name;
	int cgroup_said;     /* the containment was logged (once, at start-up) */
	int sv_died_pending; /* a dead supervisor's jobs wait for the new one's cleanup */
	uint64_t sv_died_ms; /* wall clock: when main saw the supervisor gone (its runs' end) */
	int exit_code;
	struct aclcheck *acl; /* the start-up check of the folders' ACLs, while it runs */
	int acl_done;         /* checked (or nothing to check: no credentials) */
	uint32_t next_run;
	int drained;               /* <root>/drain/<node_id> exists */
	int drain_watching;        /* a watch on <root>/drain is set in this session */
	int drain_held;            /* drained: jobs holding a lease, as our node last said */
	char *drain_path;          /* <root>/drain/<node_id> */
	struct event *drain_timer; /* drained: the deadline of scheduled runs */
	struct event *drain_poll;  /* drained: count the leases still held */

	struct event *signals[5];
	struct event *dup_timer;
	uint64_t dup_since_ns;   /* a duplicate node id: connected since (the wait counts) */
	int dup_wait_ms;         /* ... how long connected before it is another live worker */
	int dup_retry_ms;        /* ... the back-off while it cannot be judged */
	int dup_predecessor;     /* ... its data names a process of this host that is gone
	                            (WORKER_PRED_DEAD), or this one (WORKER_PRED_SELF) */
	int dup_said;            /* ... the wait was logged */
	struct event *reg_timer; /* registering again, once the rate limit allows */
	uint64_t rereg_start_ns; /* the window of WORKER_REREGISTER_MAX */
	int rereg_count;
	struct event *stop_timer;
	struct event *sv_timer;
	struct event *reap;
	struct event *flush_timer;
	uint64_t flush_until;
	uint64_t sv_restarts[WORKER_SUPERVISOR_RESTARTS];
	int sv_restart_count;
	uint64_t deadline_ns;         /* the lease deadline before the last answer moved it */
	uint64_t sv_deadline_ns;      /* the deadline the supervisor was last told */
	uint64_t sv_epoch;            /* of that session */
	uint64_t deadline_low_ns;     /* the least time left then, since start; UINT64_MAX: none */
	uint64_t session_expiries;    /* for /metrics */
	uint64_t session_reconnects;  /* the same session back after a disconnect */
	struct event *watchdog_timer; /* WATCHDOG=1 at half of WATCHDOG_USEC; NULL: none */
	struct event *status_timer;   /* STATUS= when it changed; NULL: systemd does not listen */
	char status_sent[256];        /* the last STATUS= sent */

	struct worker_reload *reload; /* a reload being applied, in slices */
	int reload_pending;           /* a SIGHUP came while it ran: one more follows */
	struct event *reload_ev;      /* its next slice */
	struct event *reload_next;    /* the pending one starts */
	struct worker_fp *reload_fp;  /* the files the configuration was last read from */
	uint64_t reload_ns;           /* the last reload's own time (its slices, not the waits) */
	struct event *clock_timer;    /* our node rewritten now and then: a clock sample */
	struct jobhealth health;      /* starts that failed for reasons of this host */
	int http_holds;               /* sliced HTTP replies walking the jobs: none is freed */

	TAILQ_HEAD(, worker_job) jobs;
	size_t njobs_live; /* jobs not done yet */
	TAILQ_HEAD(, worker_config) retired;
};

/* worker.c */
const char *worker_state_name(enum worker_state);
void worker_set_state(struct worker *w, enum worker_state state);
const char *worker_containment_cb(void *arg);
int worker_carries(const struct config *cfg, const struct config_job *cj, char *why, size_t size);
void worker_log_excluded(const struct config *cfg);
int worker_sv_ready(struct worker *w);
int worker_check_limits(struct worker *w, const struct config *cfg);
void worker_sv_hello_cb(enum proto_containment mode, unsigned controllers, const char *note,
                        void *arg);
void worker_finish(struct worker *w);
int worker_job_hold(struct worker_job *old, struct worker_job *nw);
struct worker_job *worker_job_add(struct worker *w, const struct config_job *cj,
                                  struct config *cfg);

/* worker-notify.c */
void worker_notify(const char *message);
void worker_notify_status(struct worker *w, const char *what);
void worker_notify_start(struct worker *w);

/* worker-node.c */
void worker_node_reg_timer_cb(int fd, short what, void *arg);
void worker_node_dup_watch_cb(int type, const char *path, void *arg);
void worker_node_dup_get_cb(const struct zk_reply *reply, void *arg);
void worker_node_dup_timer_cb(int fd, short what, void *arg);
void worker_node_dup_reconnected(struct worker *w);
void worker_node_register(struct worker *w);
void worker_node_update(struct worker *w);
void worker_node_clock_cb(int fd, short what, void *arg);

/* worker-reload.c */
void worker_reload_request(struct worker *w);
void worker_reload_abort(struct worker *w);
void worker_reload_init(struct worker *w);
void worker_reload_fini(struct worker *w);
void worker_reload_free_jobs(struct worker *w, int all);
void worker_reload_reap_cb(int fd, short what, void *arg);

/* worker-drain.c */
void worker_drain_poll_cb(int fd, short what, void *arg);
void worker_drain_timer_cb(int fd, short what, void *arg);
void worker_drain_watch(struct worker *w);

/* worker-http.c */
extern const struct endpoints_cb worker_http_table;
void worker_http_run_started(struct worker *, const struct job *, uint32_t run);
void worker_http_run_ended(struct worker *, const struct job *, uint32_t run, uint64_t ends);

/* worker-health.c */
struct jobhealth *worker_job_health_cb(void *arg);
void worker_job_health_changed_cb(void *arg);
void worker_health_configure(struct worker *w);
void worker_health_node(const struct worker *w, json_t *o);

/* worker-placement.c */
int worker_placement_runnable_cb(void *arg, const char *job);
void worker_placement_timer_cb(int fd, short what, void *arg);
void worker_placement_observe_cb(int fd, short what, void *arg);
void worker_placement_changed_cb(void *arg);
int worker_placement_nobody(const struct worker *, const char *job, uint64_t from_ms,
                            uint64_t to_ms);

#endif
