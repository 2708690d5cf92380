/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/*
 * procstat.c: the fields of /proc/PID/stat that the worker needs (state, parent, process
 * group). The command name in parentheses may hold anything, spaces and parentheses
 * included, so the fields are read from after its last ')'.
 */

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

/* Fill ps from /proc/pid/stat: 0, or -1 if the process is gone or the file unreadable. */
int
procstat_read(pid_t pid, struct procstat *ps)
{
	char path[64], buf[512], *p;
	long ppid, pgrp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %ld %ld", &ps->state, &ppid, &pgrp) != 3)
		return -1;
	ps->ppid = (pid_t)ppid;
	ps->pgrp = (pid_t)pgrp;
	return 0;
}
