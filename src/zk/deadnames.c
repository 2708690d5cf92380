/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * deadnames.c: the paths of the nodes this session deleted, each delete acknowledged by the
 * server (ZOK or ZNONODE), the last DEADNAMES_MAX of them. A lock node carries its owner's
 * fresh uuid, so no one creates that name again: when a listing shows it, ZooKeeper lost the
 * acknowledged delete (a "ghost", see docs/safety.md).
 */

#include <stdlib.h>
#include <string.h>

#include "deadnames.h"
#include "xmalloc.h"

/* Remember path (once), forgetting the oldest path when full. */
void
deadnames_add(struct deadnames *d, const char *path)
{
	if (deadnames_find(d, path) >= 0)
		return;
	free(d->paths[d->next]);
	d->paths[d->next] = xstrdup(path);
	d->warned[d->next] = 0;
	d->next = (d->next + 1) % DEADNAMES_MAX;
}

/* The slot of path, or -1. */
int
deadnames_find(const struct deadnames *d, const char *path)
{
	int i;

	for (i = 0; i < DEADNAMES_MAX; i++) {
		if (d->paths[i] != NULL && strcmp(d->paths[i], path) == 0)
			return i;
	}
	return -1;
}

/* 1 the first time it is asked for this slot's path, then 0: a ghost is reported once. */
int
deadnames_warn_once(struct deadnames *d, int index)
{
	if (index < 0 || index >= DEADNAMES_MAX || d->warned[index])
		return 0;
	d->warned[index] = 1;
	return 1;
}

/* Forget everything (the session that deleted them is over). */
void
deadnames_clear(struct deadnames *d)
{
	size_t i;

	for (i = 0; i < DEADNAMES_MAX; i++) {
		free(d->paths[i]);
		d->paths[i] = NULL;
		d->warned[i] = 0;
	}
	d->next = 0;
}
