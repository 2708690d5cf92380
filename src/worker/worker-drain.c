/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-drain.c: `leasekeeper drain`: the worker watches <root>/drain and takes no new lease while drained. */

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
#include "control.h"
#include "endpoints.h"
#include "format.h"
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

/* Drained: the jobs that still hold a lease (or run, or wait for one). */
static int
worker_drain_held(struct worker *w)
{
	struct worker_job *wj;
	int n = 0;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done && job_holds_lease(wj->job))
			n++;
	}
	return n;
}

/* Drained: say in our node how many leases are still held, when that changes. */
void
worker_drain_poll_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct timeval tv = {0, WORKER_DRAIN_POLL_MS * 1000};
	int held;

	(void)fd;
	(void)what;
	if (!w->drained)
		return;
	held = worker_drain_held(w);
	if (held != w->drain_held) {
		w->drain_held = held;
		if (held == 0)
			log_info("drained: no lease held");
		worker_node_update(w);
	}
	evtimer_add(w->drain_poll, &tv);
}

/* The drain's deadline: stop the scheduled runs still going. */
void
worker_drain_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj, *next;

	(void)fd;
	(void)what;
	if (!w->drained)
		return;
	log_info("drain deadline: stopping the runs still going");
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_drain(wj->job, 1, 1);
	}
}

/* Drained (deadline_ms: scheduled runs stopped after it; -1: let them end), or not. */
static void
worker_drain_set(struct worker *w, int drained, int64_t deadline_ms)
{
	struct worker_job *wj, *next;
	struct timeval tv;

	if (drained == w->drained)
		return;
	w->drained = drained;
	log_info("%s: %s", drained ? "drained" : "undrained",
	         drained ? "taking no new lease, handing continuous jobs over"
	                 : "taking leases again");
	evtimer_del(w->drain_timer);
	evtimer_del(w->drain_poll);
	if (drained && deadline_ms >= 0) {
		tv.tv_sec = (time_t)(deadline_ms / 1000);
		tv.tv_usec = (suseconds_t)(deadline_ms % 1000) * 1000;
		evtimer_add(w->drain_timer, &tv);
	}
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_drain(wj->job, drained, 0);
	}
	w->drain_held = drained ? worker_drain_held(w) : 0;
	worker_node_update(w);
	if (drained)
		worker_drain_poll_cb(-1, 0, w);
}

/* Our drain node, read: drained, with its deadline. */
static void
worker_drain_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	static struct format_once once;

	if (reply->rc == ZOK && reply->value_len > 0)
		format_warn_once(&once, format_of_data(reply->value, (size_t)reply->value_len),
		                 "the drain node (draining with no deadline)");
	if (reply->rc == ZOK && control_allow(CONTROL_DRAIN, NULL, w->cfg->node_id))
		worker_drain_set(w, 1, ctlrec_drain_deadline_ms(reply->value, reply->value_len));
	else if (reply->rc == ZNONODE)
		worker_drain_set(w, 0, -1);
}

/* The drain folder's children: is our node id among them? */
static void
worker_drain_list_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	int i;

	if (reply->rc == ZNONODE) {
		w->drain_watching = 0; /* no watch was set */
		worker_drain_set(w, 0, -1);
		return;
	}
	if (reply->rc != ZOK) {
		w->drain_watching = 0; /* no watch was set */
		return;                /* a reconnect or the next registration reads it again */
	}
	for (i = 0; i < reply->nchildren; i++) {
		if (strcmp(reply->children[i], w->cfg->node_id) == 0) {
			if (!w->drained)
				zk_get(w->zk, w->drain_path, NULL, worker_drain_get_cb, w);
			return;
		}
	}
	worker_drain_set(w, 0, -1);
}

/* A drain node came or went. */
static void
worker_drain_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)type;
	(void)path;
	w->drain_watching = 0; /* it fired */
	if (w->state == WORKER_READY)
		worker_drain_watch(w);
}

/* Read the drain folder, and watch it. */
void
worker_drain_watch(struct worker *w)
{
	char *dir = layout_drains(w->cfg->root);

	/* One watch at a time: registering again in the same session reads, not re-watches. */
	zk_children(w->zk, dir, w->drain_watching ? NULL : worker_drain_watch_cb,
	            worker_drain_list_cb, w);
	w->drain_watching = 1;
	free(dir);
}
