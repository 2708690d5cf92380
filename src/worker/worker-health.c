/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * worker-health.c: the worker's health (jobhealth.c) as its jobs count it: configured from
 * [worker] unhealthy_after and unhealthy_probe, shown in our node (so that the others rank
 * us out), in /readyz, /status and /metrics.
 */

#include "clock.h"
#include "config.h"
#include "worker-int.h"

/* The health the jobs count into. */
struct jobhealth *
worker_job_health_cb(void *arg)
{
	return &((struct worker_job *)arg)->w->health;
}

/* The worker became unhealthy, or healthy again: our node says so. */
void
worker_job_health_changed_cb(void *arg)
{
	worker_node_update(((struct worker_job *)arg)->w);
}

/* The configuration (at start and at each reload): unhealthy_after 0 makes it healthy. */
void
worker_health_configure(struct worker *w)
{
	struct jobhealth *h = &w->health;

	h->threshold = w->cfg->unhealthy_after;
	h->probe_ms = w->cfg->unhealthy_probe_ms;
	if (h->threshold == 0 && jobhealth_started(h))
		worker_node_update(w);
}

/* Our node's fields: "unhealthy" and why, since when (nothing while healthy). */
void
worker_health_node(const struct worker *w, json_t *o)
{
	char since[40];

	if (!w->health.unhealthy)
		return;
	clock_iso8601(w->health.since_ms, since, sizeof since);
	json_object_set_new(o, "unhealthy", json_true());
	json_object_set_new(o, "unhealthy_reason", json_string(w->health.reason));
	json_object_set_new(o, "unhealthy_since", json_string(since));
}
