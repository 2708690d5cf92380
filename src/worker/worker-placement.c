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

/*
 * Every WORKER_PLACEMENT_MS: warn once of each job of our configuration that no live worker
 * can run (its constraint matches no live worker's labels, or those that match are drained),
 * and say when one can again.
 */
void
worker_placement_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	json_t *now = json_object();
	char why[CONFIG_TERM_MAX];
	const char *name;
	size_t i;
	int n;

	(void)fd;
	(void)what;
	if (w->state != WORKER_READY || zk_state(w->zk) != ZK_STATE_CONNECTED)
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
		if (config_job_matches(w->cfg->jobs_list[i], w->cfg->labels, why, sizeof why))
			log_warnx(
			    "job %s: no live worker can run it: every worker that carries it is "
			    "drained (see leasekeeper status)",
			    name);
		else
			log_warnx(
			    "job %s: no live worker can run it: no worker that is not drained "
			    "matches its constraint (%s fails here; see leasekeeper status)",
			    name, why);
	}
	json_decref(w->unrunnable);
	w->unrunnable = now;
	return;
keep:
	json_decref(now);
}
