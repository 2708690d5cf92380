/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* procstat.h: a process's state, parent and process group, from /proc/PID/stat. */
#ifndef PROCSTAT_H
#define PROCSTAT_H

#include <sys/types.h>

struct procstat {
	char state; /* R, S, D, Z (a zombie: dead, not reaped), X, ... */
	pid_t ppid;
	pid_t pgrp;
};

int procstat_read(pid_t pid, struct procstat *);

#endif
