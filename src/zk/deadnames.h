/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* deadnames.h: the paths this session deleted, with the delete acknowledged (bounded). */
#ifndef DEADNAMES_H
#define DEADNAMES_H

#include <stddef.h>

/* How many acknowledged deletes are remembered: the oldest is forgotten first. */
#define DEADNAMES_MAX 1024

struct deadnames {
	char *paths[DEADNAMES_MAX];
	unsigned char warned[DEADNAMES_MAX]; /* its return was reported */
	size_t next;                         /* the slot written next (the oldest when full) */
};

void deadnames_add(struct deadnames *, const char *path);
int deadnames_find(const struct deadnames *, const char *path);
int deadnames_warn_once(struct deadnames *, int index);
void deadnames_clear(struct deadnames *);

#endif
