/* Runs in: the main process. */
/* http.h: the worker's HTTP status endpoint, on a bounded listener `web` shares. */
#ifndef HTTP_H
#define HTTP_H

#include <stdint.h>

#include <jansson.h>

#include "zk.h"

struct event_base;
struct evbuffer;
struct evhttp_request;
struct http;
struct job;

/* The worker's own counters, for /metrics. */
struct http_worker_stats {
	uint64_t session_expiries;   /* sessions that expired under us */
	uint64_t session_reconnects; /* the same session back after a disconnect */
	uint64_t start_ms;           /* wall clock: the worker started */
	struct zk_heartbeat_stats heartbeat;
	int clock_known;         /* the clock offset is estimated: */
	int64_t clock_offset_ms; /* this host's clock minus ZooKeeper's */
	int64_t clock_error_ms;  /* within this much */
};

/* What the endpoint reads from its owner (the worker), at each request. */
struct http_cb {
	json_t *(*status)(void *arg); /* GET /status, the caller's reference */
	int (*ready)(void *arg);      /* registered with a connected session: /health */
	/* /readyz: NULL when ready (registered, connected, not draining), else why not */
	const char *(*not_ready)(void *arg);
	void (*stats)(void *arg, struct http_worker_stats *);
	enum zk_state (*session)(void *arg);
	uint64_t (*deadline_in_ms)(void *arg); /* before jobs are killed if no answer arrives */
	uint64_t (*deadline_low_ms)(
	    void *arg); /* the least of it before an answer, or UINT64_MAX */
	/* Call fn for each job, in order. */
	void (*jobs)(void *arg, void (*fn)(const struct job *, void *fnarg), void *fnarg);
	/* how runs are contained: "cgroup", "process-group", "none" or "unknown" */
	const char *(*containment)(void *arg);
	int (*drained)(void *arg); /* `leasekeeper drain`: takes no new lease */
	/* Call fn for each job of the configuration with the live workers that can run it
	 * (-1: not known yet). */
	void (*placement)(void *arg, void (*fn)(const char *job, int workers, void *fnarg),
	                  void *fnarg);
};

struct http *http_start(struct event_base *, const char *listen, const struct http_cb *, void *arg);
struct http *http_listen(struct event_base *, const char *listen);
void http_route(struct http *, const char *path, void (*)(struct evhttp_request *, void *), void *);
void http_respond(struct http *, struct evhttp_request *, int code, const char *reason,
                  struct evbuffer *);
void http_free(struct http *);

#endif
