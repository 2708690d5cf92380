/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* endpoints.h: the worker's HTTP endpoints (/status, /metrics, /health, /readyz, /livez). */
#ifndef ENDPOINTS_H
#define ENDPOINTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "zk.h"

struct event_base;
struct evbuffer;
struct evhttp_request;
struct http;
struct endpoints;
struct job;

/* The worker's own counters, for /metrics. */
struct endpoints_worker_stats {
	uint64_t session_expiries;   /* sessions that expired under us */
	uint64_t session_reconnects; /* the same session back after a disconnect */
	uint64_t start_ms;           /* wall clock: the worker started */
	struct zk_heartbeat_stats heartbeat;
	int clock_known;         /* the clock offset is estimated: */
	int64_t clock_offset_ms; /* this host's clock minus ZooKeeper's */
	int64_t clock_error_ms;  /* within this much */
	int unhealthy;           /* starts fail for reasons of this host (jobhealth.c) */
	uint64_t start_failures_host, start_failures_job; /* starts that failed, by whose fault */
};

/*
 * What a reply written in slices (/metrics, /status) walks over many turns of the loop: the
 * jobs and the configuration's job names as they were when it began, none of them freed
 * before the owner is told the reply is done with them (endpoints_cb.release).
 */
struct endpoints_view {
	const struct job **jobs; /* not done yet, in order */
	size_t njobs;
	const char **placed; /* the configuration's jobs, for leasekeeper_job_runnable_workers */
	size_t nplaced;
};

/* What the endpoint reads from its owner (the worker), at each request. */
struct endpoints_cb {
	json_t *(*status)(void *arg); /* GET /status but its jobs, the caller's reference */
	int (*ready)(void *arg);      /* registered with a connected session: /health */
	/* /readyz: NULL when ready (registered, connected, not draining), else why not */
	const char *(*not_ready)(void *arg);
	void (*stats)(void *arg, struct endpoints_worker_stats *);
	enum zk_state (*session)(void *arg);
	uint64_t (*deadline_in_ms)(void *arg); /* before jobs are killed if no answer arrives */
	uint64_t (*deadline_low_ms)(
	    void *arg); /* the least of it before an answer, or UINT64_MAX */
	/* Fill the view; what it points to stays until release(view). */
	void (*hold)(void *arg, struct endpoints_view *);
	void (*release)(void *arg, struct endpoints_view *);
	/* how runs are contained: "cgroup", "process-group", "none" or "unknown" */
	const char *(*containment)(void *arg);
	int (*drained)(void *arg); /* `leasekeeper drain`: takes no new lease */
	/* The live workers that can run a job of the configuration (-1: not known yet). */
	int (*runnable)(void *arg, const char *job);
	/* GET /runs/...: a run's output for its followers (`logs --follow`) */
	void (*output)(void *arg, struct http *, struct evhttp_request *);
};

struct endpoints *endpoints_start(struct event_base *, const char *listen,
                                  const struct endpoints_cb *, void *arg, int retry);
void endpoints_free(struct endpoints *);

#endif
