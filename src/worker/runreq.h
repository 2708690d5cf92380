/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* runreq.h: a job's run-now requests, as a worker that carries the job takes them. */
#ifndef RUNREQ_H
#define RUNREQ_H

#include <stdint.h>

#include <jansson.h>

#include "zk.h"

struct runreq;

/* What the requests need from their job. */
struct runreq_cb {
	int (*can_take)(void *arg); /* whether the job could act on a request now */
	/* A request claimed for this worker: act on it, then call runreq_finish. */
	void (*take)(struct runreq *, const char *name, const char *by, int64_t timeout_ms,
	             void *arg);
};

struct runreq *runreq_new(struct zk *, const char *root, const char *job, const struct runreq_cb *,
                          void *arg);
void runreq_free(struct runreq *);
void runreq_start(struct runreq *, const char *node);
void runreq_session(struct runreq *, enum zk_event);
void runreq_check(struct runreq *);
void runreq_finish(struct runreq *, json_t *result);
void runreq_paused(struct runreq *, int paused);
const json_t *runreq_taken_data(const struct runreq *);

#endif
