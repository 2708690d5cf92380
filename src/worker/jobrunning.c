/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobrunning.c: a run in progress, visible from any host. When the supervisor says the run
 * started, the worker creates <root>/jobs/<job>/running/<run id>, ephemeral, with the run's
 * facts ({"run_id", "node", "pid", "since", "fence", "tick_time"?, and "locks": [{"path", "mode",
 * "fence"}] when the job holds several}); when the run ended it
 * deletes it. Ephemeral: a session that ends takes it along, as it takes the lease. status
 * and the dashboard list these nodes (view.c). Two writes a run, not awaited.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "format.h"
#include "joblocks.h"
#include "jobpriv.h"
#include "layout.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

/* The running folder's create answered: it exists now (or did). */
static void
job_running_dir_cb(const struct zk_reply *reply, void *arg)
{
	struct job *job = arg;

	if (reply->rc == ZOK || reply->rc == ZNODEEXISTS)
		job->running_dir = 1;
}

/* The run started: say so in <root>/jobs/<job>/running/<run id>. */
void
job_running_add(struct job *job)
{
	const struct config *cfg = job_main_config(job);
	char since[40], tick[40], *dir, *data;
	json_t *o;

	free(job->running_path);
	job->running_path = NULL;
	if (job->zk == NULL)
		return;
	dir = layout_job_running(cfg->root, job->name);
	if (!job->running_dir) /* once per job: it stays (a persistent folder) */
		zk_create_node(job->zk, dir, NULL, -1, ZOO_PERSISTENT, job_running_dir_cb, job);
	job->running_path = znode_join(dir, job->run_id);
	free(dir);
	clock_iso8601(job->run_start_ms, since, sizeof since);
	o = json_pack("{s:s, s:s, s:I, s:s, s:I}", "run_id", job->run_id, "node", cfg->node_id,
	              "pid", (json_int_t)job->pid, "since", since, "fence",
	              (json_int_t)job->run_fence);
	if (job->fsm.tick >= 0) {
		clock_iso8601((uint64_t)job->fsm.tick * 1000, tick, sizeof tick);
		json_object_set_new(o, "tick_time", json_string(tick));
	}
	if (job->lease != NULL && lease_count(job->lease) > 1)
		json_object_set_new(o, "locks", joblocks_json(job->lease)); /* one fence each */
	format_stamp(o); /* "v": its format version, as every node we write */
	data = json_dumps(o, JSON_COMPACT);
	zk_create_node(job->zk, job->running_path, data, (int)strlen(data), ZOO_EPHEMERAL, NULL,
	               NULL);
	free(data);
	json_decref(o);
}

/* The run ended: its node goes (if the session went first, it went with it). */
void
job_running_del(struct job *job)
{
	if (job->running_path == NULL)
		return;
	if (job->zk != NULL)
		zk_delete(job->zk, job->running_path, -1, NULL, NULL);
	free(job->running_path);
	job->running_path = NULL;
}
