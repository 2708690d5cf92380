/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* stopreq.h: a job's stop requests (`leasekeeper stop`), as the worker that runs it takes them. */
#ifndef STOPREQ_H
#define STOPREQ_H

#include <stdint.h>

#include <jansson.h>

#include "stoprec.h"
#include "zk.h"

#define STOPREQ_MAX_TAKEN 8 /* requests for one run taken at once (a stop, then --kill) */

struct stopreq;

/* What the requests need from their job. */
struct stopreq_cb {
	int64_t (*running)(void *arg); /* the fence of the run under way here; -1: none */
	/* A request claimed for the run under way: stop it; stopreq_finish at its record. */
	void (*take)(struct stopreq *, const char *name, const struct stoprec *, void *arg);
};

struct stopreq *stopreq_new(struct zk *, const char *root, const char *job,
                            const struct stopreq_cb *, void *arg);
void stopreq_free(struct stopreq *);
void stopreq_start(struct stopreq *, const char *node);
void stopreq_session(struct stopreq *, enum zk_event);
int stopreq_pending(const struct stopreq *);
void stopreq_ran(struct stopreq *);
void stopreq_finish(struct stopreq *, json_t *result);

#endif
