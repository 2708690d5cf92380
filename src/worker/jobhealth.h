/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/* jobhealth.h: whether a failed start is this host's fault, and the worker's health. */
#ifndef JOBHEALTH_H
#define JOBHEALTH_H

#include <stdint.h>

#define JOBHEALTH_MAX_REASON 200 /* bytes of the last failure kept (node data, /readyz) */

/* The worker's health: starts that failed for reasons of this host, in a row. */
struct jobhealth {
	int threshold;          /* [worker] unhealthy_after: failures in a row; 0: never */
	uint64_t probe_ms;      /* [worker] unhealthy_probe: a trial start at most this often */
	int in_a_row;           /* host failures since the last start that worked */
	int unhealthy;          /* threshold reached, no start has worked since */
	uint64_t since_ms;      /* unhealthy since (wall clock) */
	uint64_t probe_at_ms;   /* unhealthy: the next trial start may be taken from then */
	uint64_t host_failures; /* in total, for the metric */
	uint64_t job_failures;  /* in total: starts that failed for the job's own reason */
	char reason[JOBHEALTH_MAX_REASON]; /* the last host failure */
};

int jobhealth_host_failure(const char *why);
int jobhealth_failed(struct jobhealth *, const char *why, uint64_t now_ms);
int jobhealth_started(struct jobhealth *);
int jobhealth_trial(struct jobhealth *, uint64_t now_ms);

#endif
