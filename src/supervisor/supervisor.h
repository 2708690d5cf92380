/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process. */
/* supervisor.h: the supervisor process's entry point. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

/* [worker] cgroups, as the supervisor takes it. */
enum supervisor_cgroups {
	SUPERVISOR_CGROUPS_AUTO,     /* a cgroup per run if cgroup v2 is usable, else groups */
	SUPERVISOR_CGROUPS_REQUIRED, /* a cgroup per run, or no job starts */
	SUPERVISOR_CGROUPS_OFF,      /* process groups only */
};

/* How main wants the supervisor to run. */
struct supervisor_opts {
	enum supervisor_cgroups cgroups;
	const char *cgroup_name; /* the worker's folder (cgroup_worker_name) */
};

/*
 * The supervisor's life, on the socket at fd (main forks it: svlink.c). Returns the exit
 * status.
 */
int supervisor_main(int fd, const struct supervisor_opts *);

#endif
