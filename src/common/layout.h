/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main, and the tools that read or write the cluster). */
/* layout.h: every ZooKeeper path under the root, built in one place (caller frees each). */
#ifndef LAYOUT_H
#define LAYOUT_H

char *layout_jobs(const char *root);
char *layout_job_record(const char *root, const char *job);
char *layout_job_state(const char *root, const char *job);
char *layout_job_chain(const char *root, const char *job);
char *layout_job_runs(const char *root, const char *job);
char *layout_job_running(const char *root, const char *job);
char *layout_job_requests(const char *root, const char *job);
char *layout_job_stops(const char *root, const char *job);
char *layout_job_hooks(const char *root, const char *job);
char *layout_workers(const char *root);
char *layout_worker(const char *root, const char *node_id);
char *layout_roles(const char *root);
char *layout_drains(const char *root);
char *layout_drain(const char *root, const char *node_id);
char *layout_lock_dir(const char *root, int leases);
char *layout_lock_path(const char *root, const char *lock, const char *lock_path, int leases);
char *layout_semaphore_leases(const char *lock_path);
char *layout_semaphore_locks(const char *lock_path);

#endif
