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

/* End the span of spans (a job's, newest last) that lasts, at until. */
static void
worker_placement_end(json_t *spans, uint64_t until)
{
	json_t *last = json_array_get(spans, json_array_size(spans) - 1);

	if (last != NULL && json_integer_value(json_array_get(last, 1)) == 0)
		json_array_set_new(last, 1, json_integer((json_int_t)until));
}

/*
 * Who can run each job, seen here, for the reason of the ticks a claim of ours skips
 * (docs/outcomes.md, no_worker): w->nobody holds, for each job of our configuration, the last
 * WORKER_PLACEMENT_SPANS spans of time (the cluster's clock) through which this worker,
 * registered and connected with a complete view of <root>/workers, saw no live worker that
 * is not drained carry the job, healthy or not: [[from, until], ...], until 0 while it
 * lasts. A span opens when the view is looked at (after the change), and ends at the first
 * change not looked at yet, or when the view was last known fresh before a disconnection:
 * either way it is shorter than the truth, never longer.
 */
void
worker_placement_observe_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	json_t *next, *spans, *last;
	uint64_t now = zk_cluster_now_ms(w->zk), changed = w->observe_change_ms;
	int known = w->state == WORKER_READY && zk_state(w->zk) == ZK_STATE_CONNECTED &&
	            w->members != NULL && members_settled(w->members, 1);
	const char *name;
	size_t i;

	(void)fd;
	(void)what;
	w->observe_change_ms = 0;
	if (changed == 0 || changed > now)
		changed = now;
	if (!known || w->observe_cut) { /* the spans that last end (cheap: O(jobs seen)) */
		json_object_foreach(w->nobody, name, spans)
			worker_placement_end(spans, changed);
	}
	w->observe_cut = 0;
	if (!known)
		return;
	next = json_object();
	for (i = 0; i < w->cfg->njobs; i++) {
		name = w->cfg->jobs_list[i]->name;
		spans = json_object_get(w->nobody, name);
		if (members_carriers(w->members, name) > 0) {
			if (spans != NULL)
				worker_placement_end(spans, changed);
		} else {
			if (spans == NULL)
				spans = json_array();
			else
				json_incref(spans);
			last = json_array_get(spans, json_array_size(spans) - 1);
			if (last == NULL || json_integer_value(json_array_get(last, 1)) != 0)
				json_array_append_new(spans,
				                      json_pack("[I, I]", (json_int_t)now,
				                                (json_int_t)0)); /* a new span */
			if (json_array_size(spans) > WORKER_PLACEMENT_SPANS)
				json_array_remove(spans, 0);
			json_object_set_new(next, name, spans);
			continue;
		}
		if (spans != NULL)
			json_object_set(next, name, spans);
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
	uint64_t at = zk_cluster_now_ms(w->zk), fresh, timeout, boot;

	if (w->observe_timer == NULL)
		return;
	if (zk_state(w->zk) != ZK_STATE_CONNECTED) {
		/*
		 * Cut off: the view was last known fresh when the newest request answered was
		 * sent (the lease deadline less the session timeout is no later); not known: 1,
		 * which ends every span before any tick.
		 */
		timeout = (uint64_t)zk_timeout_ms(w->zk) * CLOCK_NS_PER_MS;
		fresh = zk_deadline_ns(w->zk);
		boot = clock_now_ns();
		fresh = fresh > timeout ? fresh - timeout : 0;
		at = fresh > 0 && fresh <= boot && at > (boot - fresh) / CLOCK_NS_PER_MS
		         ? at - (boot - fresh) / CLOCK_NS_PER_MS
		         : 1;
		w->observe_cut = 1; /* a span ends here even if connected again by the look */
	}
	if (w->observe_change_ms == 0 || at < w->observe_change_ms)
		w->observe_change_ms = at;
	if (!evtimer_pending(w->observe_timer, NULL))
		evtimer_add(w->observe_timer, &tv);
}

/*
 * Whether this worker saw no live worker able to run job (w->nobody) through the whole of
 * [from_ms, to_ms] (the cluster's clock), within one span.
 */
int
worker_placement_nobody(const struct worker *w, const char *job, uint64_t from_ms, uint64_t to_ms)
{
	json_t *span;
	json_int_t from, until;
	size_t i;

	json_array_foreach(json_object_get(w->nobody, job), i, span) {
		from = json_integer_value(json_array_get(span, 0));
		until = json_integer_value(json_array_get(span, 1));
		if (from <= 0 || (uint64_t)from > from_ms)
			continue;
		if (until == 0) /* it lasts: up to now, or to a change not looked at yet */
			until = (json_int_t)(w->observe_change_ms != 0 ? w->observe_change_ms
			                                               : zk_cluster_now_ms(w->zk));
		if (to_ms <= (uint64_t)until)
			return 1;
	}
	return 0;
}
