/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main, and the tools that read or write the cluster). */
/*
 * layout.c: the ZooKeeper layout, the one place that knows it:
 *
 *   <root>/jobs/<job>              the agreed lease count and the lock's path
 *   <root>/jobs/<job>/state        the claimed tick
 *   <root>/jobs/<job>/chain        a chained job's claims of its parents' runs
 *   <root>/jobs/<job>/runs/run-N   one record per run
 *   <root>/jobs/<job>/requests/req-N  one `run-now` request each
 *   <root>/workers/<node_id>       an ephemeral node per worker
 *   <root>/jobs/<job>/hooks/run-N  ephemeral: a running hook's record, for its token
 *   <root>/roles                   who the workers are (operator identity)
 *   <root>/drain/<node_id>         a persistent node per drained worker
 *   <root>/mutex/<lock>            a job with one lease (a Curator mutex)
 *   <root>/semaphore/<lock>        a job with more (a Curator semaphore), which keeps
 *     .../locks                    the mutex that guards its leases and
 *     .../leases                   one node per lease held
 *
 * A job's lock_path, when set, replaces <root>/{mutex,semaphore}/<lock>.
 */

#include <stdlib.h>

#include "layout.h"
#include "xmalloc.h"
#include "znode.h"

/* <dir>/<a>/<b>. */
static char *
layout_join2(const char *dir, const char *a, const char *b)
{
	char *mid = znode_join(dir, a), *path = znode_join(mid, b);

	free(mid);
	return path;
}

/* <root>/jobs. */
char *
layout_jobs(const char *root)
{
	return znode_join(root, "jobs");
}

/* <root>/jobs/<job>: the job record. */
char *
layout_job_record(const char *root, const char *job)
{
	return layout_join2(root, "jobs", job);
}

/* A child of <root>/jobs/<job>. */
static char *
layout_job_child(const char *root, const char *job, const char *child)
{
	char *jobs = layout_jobs(root), *path = layout_join2(jobs, job, child);

	free(jobs);
	return path;
}

/* <root>/jobs/<job>/chain: a chained job's claims of its parents' runs (chainrec.c). */
char *
layout_job_chain(const char *root, const char *job)
{
	return layout_job_child(root, job, "chain");
}

/* <root>/jobs/<job>/state: the claimed tick. */
char *
layout_job_state(const char *root, const char *job)
{
	return layout_job_child(root, job, "state");
}

/* <root>/jobs/<job>/runs: the run records. */
char *
layout_job_runs(const char *root, const char *job)
{
	return layout_job_child(root, job, "runs");
}

/* <root>/jobs/<job>/running: the runs in progress, one ephemeral node each (jobrunning.c). */
char *
layout_job_running(const char *root, const char *job)
{
	return layout_job_child(root, job, "running");
}

/* <root>/jobs/<job>/requests: the run-now requests. */
char *
layout_job_requests(const char *root, const char *job)
{
	return layout_job_child(root, job, "requests");
}

/* <root>/jobs/<job>/hooks: a running hook's copy of its run record, for its token. */
char *
layout_job_hooks(const char *root, const char *job)
{
	return layout_job_child(root, job, "hooks");
}

/* <root>/jobs/<job>/stops: its stop requests (`leasekeeper stop`). */
char *
layout_job_stops(const char *root, const char *job)
{
	return layout_job_child(root, job, "stops");
}

/* <root>/workers. */
char *
layout_workers(const char *root)
{
	return znode_join(root, "workers");
}

/* <root>/workers/<node_id>. */
char *
layout_worker(const char *root, const char *node_id)
{
	return layout_join2(root, "workers", node_id);
}

/* <root>/roles: the workers' digest id (and the reader's), for records operators create. */
char *
layout_roles(const char *root)
{
	return znode_join(root, "roles");
}

/* <root>/drain: one persistent node per drained worker. */
char *
layout_drains(const char *root)
{
	return znode_join(root, "drain");
}

/* <root>/drain/<node_id>: the worker is drained while it exists. */
char *
layout_drain(const char *root, const char *node_id)
{
	return layout_join2(root, "drain", node_id);
}

/* The folder, under the root, of the locks with this many leases. */
static const char *
layout_lock_folder(int leases)
{
	return leases == 1 ? "mutex" : "semaphore";
}

/* <root>/mutex or <root>/semaphore. */
char *
layout_lock_dir(const char *root, int leases)
{
	return znode_join(root, layout_lock_folder(leases));
}

/* Where a lock lives: lock_path if set, else <lock> in the folder for its lease count. */
char *
layout_lock_path(const char *root, const char *lock, const char *lock_path, int leases)
{
	if (lock_path != NULL)
		return xstrdup(lock_path);
	return layout_join2(root, layout_lock_folder(leases), lock);
}

/* <lock_path>/leases: a semaphore's lease nodes. */
char *
layout_semaphore_leases(const char *lock_path)
{
	return znode_join(lock_path, "leases");
}

/* <lock_path>/locks: the mutex that guards a semaphore's leases. */
char *
layout_semaphore_locks(const char *lock_path)
{
	return znode_join(lock_path, "locks");
}
