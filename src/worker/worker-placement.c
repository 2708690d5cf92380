/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-placement.c: jobs of our configuration that no live worker can run, found and warned of. */

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
#include "runspec.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker.h"
#include "worker-int.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

/*
 * The live workers that can run a job of our configuration: those whose registration lists
 * it (its constraint matches their labels) and that are not drained, this one included once
 * its own node is read back; -1 until the view of the workers is listed in this session.
 */
static int
worker_placement_runnable(const struct worker *w, const char *job)
{
	const char **nodes;
	size_t n;

	if (w->members == NULL || !members_ready(w->members))
		return -1;
	nodes = members_carrying(w->members, job, &n);
	free(nodes);
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* For /metrics: worker_placement_runnable() of a job of our configuration. */
int
worker_placement_runnable_cb(void *arg, const char *job)
{
	return worker_placement_runnable(arg, job);
}

/* Warn that job (our configuration's i-th) has no live worker to run it, and why. */
static void
worker_placement_warn(const struct worker *w, size_t i)
{
	const struct config_job *cj = w->cfg->jobs_list[i];
	char why[CONFIG_TERM_MAX];

	if (config_job_matches(cj, w->cfg->labels, why, sizeof why))
		log_warnx("job %s: no live worker can run it: every worker that carries it is "
		          "drained (see leasekeeper status)",
		          cj->name);
	else
		log_warnx("job %s: no live worker can run it: no worker that is not drained "
		          "matches its constraint (%s fails here; see leasekeeper status)",
		          cj->name, why);
}

/*
 * Every WORKER_PLACEMENT_MS: warn once of each job of our configuration that no live worker
 * can run (its constraint matches no live worker's labels, or those that match are drained),
 * and say when one can again. Nothing is said while the view of the workers is incomplete
 * (at start-up, before every registration is read: each job would seem to have none); past
 * WORKER_PLACEMENT_LINES jobs found at once, the rest is one line with their count.
 */
void
worker_placement_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	json_t *now = json_object();
	const char *name, *first = NULL;
	size_t i, more = 0, lines = 0;
	int n;

	(void)fd;
	(void)what;
	if (w->state != WORKER_READY || zk_state(w->zk) != ZK_STATE_CONNECTED ||
	    w->members == NULL || !members_settled(w->members, 0))
		goto keep; /* what we would count is not known now */
	for (i = 0; i < w->cfg->njobs; i++) {
		name = w->cfg->jobs_list[i]->name;
		if ((n = worker_placement_runnable(w, name)) < 0)
			goto keep;
		if (n > 0) {
			if (json_object_get(w->unrunnable, name) != NULL)
				log_info("job %s: %d live worker%s can run it again", name, n,
				         n == 1 ? "" : "s");
			continue;
		}
		json_object_set_new(now, name, json_true());
		if (json_object_get(w->unrunnable, name) != NULL)
			continue;
		if (lines++ < WORKER_PLACEMENT_LINES)
			worker_placement_warn(w, i);
		else if (more++ == 0)
			first = name;
	}
	if (more > 0)
		log_warnx(
		    "%zu more job%s (%s%s): no live worker can run %s (see leasekeeper status)",
		    more, more == 1 ? "" : "s", first, more == 1 ? "" : ", ...",
		    more == 1 ? "it" : "them");
	json_decref(w->unrunnable);
	w->unrunnable = now;
	return;
keep:
	json_decref(now);
}

/*
 * Who can run each job, seen here, for the reason of the ticks a claim of ours skips
 * (docs/outcomes.md, no_worker): w->nobody holds, for each job of our configuration, the last
 * span of time (the cluster's clock) through which this worker, registered and connected
 * with a complete view of <root>/workers, saw no live worker that is not drained carry the
 * job, healthy or not: [from, until], until 0 while it lasts. A span opens when the view is
 * looked at (after the change), and closes at the first change not looked at yet, so that
 * either way it is shorter than the truth, never longer.
 */
void
worker_placement_observe_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	json_t *next = json_object(), *old;
	uint64_t now = zk_cluster_now_ms(w->zk), changed = w->observe_change_ms;
	int known = w->state == WORKER_READY && zk_state(w->zk) == ZK_STATE_CONNECTED &&
	            w->members != NULL && members_settled(w->members, 1);
	const char *name;
	size_t i;
	json_int_t from;

	(void)fd;
	(void)what;
	w->observe_change_ms = 0;
	if (changed == 0 || changed > now)
		changed = now;
	if (!known) { /* the spans that last end; nothing else to look at (cheap) */
		json_decref(next);
		json_object_foreach(w->nobody, name, old) {
			if (json_integer_value(json_array_get(old, 1)) == 0)
				json_array_set_new(old, 1, json_integer((json_int_t)changed));
		}
		return;
	}
	for (i = 0; i < w->cfg->njobs; i++) {
		name = w->cfg->jobs_list[i]->name;
		old = json_object_get(w->nobody, name);
		from = old != NULL ? json_integer_value(json_array_get(old, 0)) : 0;
		if (members_carriers(w->members, name) == 0) {
			if (old == NULL || json_integer_value(json_array_get(old, 1)) != 0)
				from = (json_int_t)now; /* a new span */
			json_object_set_new(next, name, json_pack("[I, I]", from, (json_int_t)0));
		} else if (old != NULL && json_integer_value(json_array_get(old, 1)) == 0)
			json_object_set_new(next, name,
			                    json_pack("[I, I]", from, (json_int_t)changed));
		else if (old != NULL)
			json_object_set(next, name, old);
	}
	json_decref(w->nobody);
	w->nobody = next;
}

/* The view of the workers, the session or the registration changed: look again soon. */
void
worker_placement_changed_cb(void *arg)
{
	struct worker *w = arg;
	struct timeval tv = {0, WORKER_OBSERVE_MS * 1000};

	if (w->observe_timer == NULL)
		return;
	if (w->observe_change_ms == 0)
		w->observe_change_ms = zk_cluster_now_ms(w->zk);
	if (!evtimer_pending(w->observe_timer, NULL))
		evtimer_add(w->observe_timer, &tv);
}

/*
 * Whether this worker saw no live worker able to run job (w->nobody) through the whole of
 * [from_ms, to_ms] (the cluster's clock).
 */
int
worker_placement_nobody(const struct worker *w, const char *job, uint64_t from_ms, uint64_t to_ms)
{
	json_t *span = json_object_get(w->nobody, job);
	json_int_t from, until;

	if (span == NULL)
		return 0;
	from = json_integer_value(json_array_get(span, 0));
	until = json_integer_value(json_array_get(span, 1));
	if (from <= 0 || (uint64_t)from > from_ms)
		return 0;
	if (until == 0) /* it lasts: up to now, or to a change not looked at yet */
		return to_ms <= (w->observe_change_ms != 0 ? w->observe_change_ms
		                                           : zk_cluster_now_ms(w->zk));
	return to_ms <= (uint64_t)until;
}
