/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* safepath.h: directories opened by root without following a path someone else controls. */
#ifndef SAFEPATH_H
#define SAFEPATH_H

#include <sys/stat.h>

#include <stddef.h>

/* safepath_open_dir's flags. */
#define SAFEPATH_CREATE   0x1 /* create missing directories (mode 0750) */
#define SAFEPATH_CHECK    0x2 /* refuse a directory someone but root can write */
#define SAFEPATH_EXISTING 0x4 /* stop at the first missing directory: open its parent */

/* Where safepath_walk stopped, and why. */
struct safepath_fault {
	size_t len;      /* the directory at fault: this many bytes of the path ("/": 1) */
	const char *why; /* what is wrong with it */
	const char *fix; /* the command that fixes it (SAFEPATH_CHECK's faults), or NULL */
	struct stat st;  /* its status (SAFEPATH_CHECK's faults) */
};

int safepath_walk(const char *path, int flags, struct safepath_fault *);
int safepath_open_dir(const char *path, int flags, char **cause);

#endif
