/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/* cgroup.h: cgroup v2 containment: the worker's subtree, one cgroup per run. */
#ifndef CGROUP_H
#define CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/* The leaf main and the supervisor live in, under the worker's own cgroup folder. */
#define CGROUP_DAEMON_LEAF "daemon"

/*
 * The cgroup folder the worker's own folder goes under: the cgroup v2 mount (the first
 * cgroup2 file system in mountinfo, the text of /proc/self/mountinfo) joined with the cgroup
 * the worker was started in (the "0::" line of proc_cgroup, the text of /proc/PID/cgroup;
 * when that is already name's daemon leaf, as for a supervisor started again by the same
 * main, the leaf's grandparent). Caller frees; NULL with *cause (caller frees) when there
 * is no cgroup v2 mount or no "0::" line. Either text may be NULL (unreadable).
 */
char *cgroup_locate(const char *mountinfo, const char *proc_cgroup, const char *name, char **cause);

/* The name of a worker's folder: "leasekeeper-<node_id>-<hash of the state dir>". */
char *cgroup_worker_name(const char *node_id, const char *state_dir);

/* Write text to a file of the cgroup at dirfd. 0, or -1 with errno. */
int cgroup_write(int dirfd, const char *file, const char *text);

/* Whether the cgroup at dirfd has a process in it or below: 1, 0, or -1 with errno. */
int cgroup_populated(int dirfd);

/* Send sig to every process of the cgroup at dirfd. The number signalled, or -1. */
int cgroup_signal(int dirfd, int sig);

/*
 * SIGKILL every process of the cgroup at dirfd and below, at once (cgroup.kill), or one
 * by one where the kernel has no cgroup.kill (before 5.14). 0, or -1 with errno.
 */
int cgroup_kill(int dirfd);

/*
 * Whether a pid other than those in `mine`, and other than a child of the last of them
 * (main), is in the cgroup at dirfd: that pid, or 0.
 */
pid_t cgroup_foreign_pid(int dirfd, const pid_t *mine, size_t nmine);

/* Remove the (empty) cgroup name under parentfd and every cgroup below it. 0, or -1. */
int cgroup_remove(int parentfd, const char *name);

/*
 * The worker's folder, <mount><the cgroup it started in>/name, with main and the
 * supervisor moved into its leaf CGROUP_DAEMON_LEAF: its descriptor and *dir, or -1 with
 * *cause (caller frees both) and *usable (the host's cgroup v2 is usable: the failure must
 * not make runs fall back to process groups). Made again if it vanishes meanwhile.
 */
int cgroup_setup(const char *name, char **dir, char **cause, int *usable);

/*
 * Kill, wait for and remove the run cgroups a previous incarnation left. How many. For
 * each that held processes and is named run-N, gone(N, arg) once they are all gone.
 */
int cgroup_clean_stale(int dirfd, const char *dir, void (*gone)(unsigned run, void *arg),
                       void *arg);

/* fork(), or clone3() straight into the cgroup cgfd (-1: none); *joined: it is in it. */
pid_t cgroup_spawn(int cgfd, int *joined);

/*
 * Whether runs could get cgroups under name: 0 with *where and *controllers (the enum
 * proto_controller bits delegated to the worker's cgroup), or -1 with *cause.
 */
int cgroup_probe(const char *name, char **where, unsigned *controllers, char **cause);

/*
 * Enable the controllers runs' limits need (memory, cpu, pids, io) for the cgroups below
 * the folder at dirfd: in its parent's cgroup.subtree_control (the cgroup the worker started
 * in, delegated to it) where that has them, then in its own. Each is tried alone; one the
 * host does not delegate is left out. The enum proto_controller bits of those enabled.
 */
unsigned cgroup_enable_controllers(int dirfd);

/* The enum proto_controller bits named in a cgroup.controllers text. */
unsigned cgroup_controller_bits(const char *text);

/*
 * Write a run's limits into its cgroup at dirfd before the run starts: memory.max (with
 * memory.oom.group, so that the OOM killer ends the run as a whole), memory.high, cpu.max,
 * pids.max, io.weight. A limit whose file is missing (its controller is not enabled) is
 * left out and its controller's bit set in *skipped. 0, or -1 with *cause (caller frees).
 */
int cgroup_set_limits(int dirfd, const struct proto_limits *, unsigned *skipped, char **cause);

/*
 * What the run in the cgroup at dirfd used (read once it is empty, before it is removed):
 * CPU time from cpu.stat (there without any controller), peak memory from memory.peak
 * (with the memory controller, Linux 5.19), and how many processes the OOM killer killed
 * in it (memory.events oom_kill). Unknown values are -1 (*oom_kills 0).
 */
void cgroup_usage(int dirfd, struct proto_usage *, int64_t *oom_kills);

/*
 * Leave the worker's folder at a clean end, and remove it if no run is left in it; when
 * main is gone (a newer worker may be setting the folder up), leave it be.
 */
void cgroup_teardown(int dirfd, const char *name, pid_t main_pid);

#endif
