/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-http.c: what the worker shows on its HTTP endpoint (/status, /health, /readyz, /metrics, /runs). */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "aclcheck.h"
#include "ctlrec.h"
#include "cgroup.h"
#include "clock.h"
#include "compat.h"
#include "config.h"
#include "endpoints.h"
#include "job.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "members.h"
#include "nodedata.h"
#include "runout.h"
#include "runspec.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker.h"
#include "worker-int.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

/* Whether the worker is drained, for /status and /metrics. */
static int
worker_http_drained_cb(void *arg)
{
	struct worker *w = arg;

	return w->drained;
}

/* Registered with a connected session: what /health reports. */
static int
worker_http_ready_cb(void *arg)
{
	struct worker *w = arg;

	return w->state == WORKER_READY && zk_state(w->zk) == ZK_STATE_CONNECTED;
}

/*
 * Why the worker is not ready (/readyz), or NULL: registered with a connected session and
 * not draining. i13ctl's drained flag belongs here: a drained worker answers "draining".
 */
static const char *
worker_http_not_ready_cb(void *arg)
{
	static char why[JOBHEALTH_MAX_REASON + 100];
	struct worker *w = arg;

	if (w->state == WORKER_STOPPING)
		return "stopping";
	if (zk_state(w->zk) != ZK_STATE_CONNECTED)
		return "not connected to ZooKeeper";
	if (w->state != WORKER_READY)
		return w->state == WORKER_DUPLICATE
		           ? "not registered: another session holds the node id"
		           : "not registered yet";
	if (w->drained)
		return "drained (leasekeeper undrain)";
	if (w->health.unhealthy) {
		snprintf(
		    why, sizeof why,
		    "unhealthy: %d starts failed in a row for reasons of this host, the last: %s",
		    w->health.in_a_row, w->health.reason);
		return why;
	}
	return NULL;
}

/* The worker's own counters, for /metrics. */
static void
worker_http_stats_cb(void *arg, struct endpoints_worker_stats *st)
{
	struct worker *w = arg;

	st->session_expiries = w->session_expiries;
	st->session_reconnects = w->session_reconnects;
	st->start_ms = w->started_ms;
	zk_heartbeat_stats(w->zk, &st->heartbeat);
	st->clock_known = zk_clock_offset(w->zk, &st->clock_offset_ms, &st->clock_error_ms) == 0;
	st->unhealthy = w->health.unhealthy;
	st->start_failures_host = w->health.host_failures;
	st->start_failures_job = w->health.job_failures;
}

static enum zk_state
worker_http_session_cb(void *arg)
{
	struct worker *w = arg;

	return zk_state(w->zk);
}

/* Time left before the supervisor kills the jobs if no answer arrives. */
static uint64_t
worker_http_deadline_in_ms_cb(void *arg)
{
	struct worker *w = arg;
	uint64_t deadline = zk_deadline_ns(w->zk), now = clock_now_ns();

	return deadline > now ? (deadline - now) / CLOCK_NS_PER_MS : 0;
}

/* The least time left before the lease deadline when an answer moved it, since start. */
static uint64_t
worker_http_deadline_low_ms_cb(void *arg)
{
	struct worker *w = arg;

	if (w->deadline_low_ns == UINT64_MAX)
		return UINT64_MAX;
	return w->deadline_low_ns / CLOCK_NS_PER_MS;
}

/*
 * A sliced reply's view: the jobs not yet done and the configuration's job names. Neither a
 * job nor a configuration is freed while any view is held (worker_reload_reap_cb waits).
 */
static void
worker_http_hold_cb(void *arg, struct endpoints_view *v)
{
	struct worker *w = arg;
	struct worker_job *wj;
	size_t i;

	v->jobs = xcalloc(w->njobs_live + 1, sizeof *v->jobs);
	v->njobs = 0;
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (wj->done)
			continue;
		if (v->njobs == w->njobs_live) /* not reached: njobs_live counts these */
			break;
		v->jobs[v->njobs++] = wj->job;
	}
	v->placed = xcalloc(w->cfg->njobs + 1, sizeof *v->placed);
	for (i = 0; i < w->cfg->njobs; i++)
		v->placed[i] = w->cfg->jobs_list[i]->name;
	v->nplaced = w->cfg->njobs;
	w->http_holds++;
}

/* A sliced reply is done with its view: what waited to be freed may be. */
static void
worker_http_release_cb(void *arg, struct endpoints_view *v)
{
	struct worker *w = arg;

	free(v->jobs);
	free(v->placed);
	v->jobs = NULL;
	v->placed = NULL;
	if (--w->http_holds == 0)
		event_active(w->reap, EV_TIMEOUT, 0);
}

/* The worker's view of itself, for the HTTP status. */
static json_t *
worker_http_status_cb(void *arg)
{
	struct worker *w = arg;
	char session[24], start[40];
	json_t *o;

	/* As the logs print it: a 64-bit number is not safe in JSON (2^53). */
	snprintf(session, sizeof session, "0x%llx", (unsigned long long)zk_session_id(w->zk));
	clock_iso8601(w->started_ms, start, sizeof start);
	o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I, s:b}", "node",
	              w->cfg->node_id, "version", LEASEKEEPER_VERSION, "start", start, "state",
	              worker_state_name(w->state), "ready", worker_http_not_ready_cb(w) == NULL,
	              "containment", worker_containment_cb(w), "session_state",
	              zk_state_name(zk_state(w->zk)), "session_id", session, "session_timeout_ms",
	              (json_int_t)zk_timeout_ms(w->zk), "lease_deadline_in_ms",
	              (json_int_t)worker_http_deadline_in_ms_cb(w), "drained", w->drained);
	worker_health_node(w, o); /* unhealthy, and why, as our node says */
	return o;
}

/* GET /runs/<run id>/output: a run's output, for `logs --follow` (runout.c). */
static void
worker_http_output_cb(void *arg, struct http *h, struct evhttp_request *req)
{
	struct worker *w = arg;

	runout_serve(w->runout, h, req);
}

/* A run started (job's, not a hook): followers may read its output if it is kept. */
void
worker_http_run_started(struct worker *w, const struct job *job, uint32_t run)
{
	const struct config_job *cj = job_config(job);
	const char *id = job_run_id(job, run);

	if (id != NULL && w->http_listen != NULL) /* no listener: no follower */
		runout_start(w->runout, run, job_name(job), id,
		             cj->record_output > 0 && cj->log_file != NULL);
}

/* A run ended: its outcome, if the job counted an end since ends (else it is not known). */
void
worker_http_run_ended(struct worker *w, const struct job *job, uint32_t run, uint64_t ends)
{
	const char *outcome = job_last_outcome(job);

	runout_end(w->runout, run, job_ends(job) != ends && outcome != NULL ? outcome : "unknown");
}

/* What the HTTP endpoint reads from the worker. */
const struct endpoints_cb worker_http_table = {
    worker_http_status_cb,          worker_http_ready_cb,   worker_http_not_ready_cb,
    worker_http_stats_cb,           worker_http_session_cb, worker_http_deadline_in_ms_cb,
    worker_http_deadline_low_ms_cb, worker_http_hold_cb,    worker_http_release_cb,
    worker_containment_cb,          worker_http_drained_cb, worker_placement_runnable_cb,
    worker_http_output_cb};
