/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process (pure: no ZooKeeper calls). */
/* rworder.h: Curator's read-write lock queue: node order, who holds, whom to watch. */
#ifndef RWORDER_H
#define RWORDER_H

#include <stddef.h>
#include <stdint.h>

/* Curator's two lock names; the same length, which its sorting relies on. */
#define RWORDER_READ  "__READ__"
#define RWORDER_WRITE "__WRIT__"

/* A contender's place in a sorted listing. */
struct rworder_place {
	int index;    /* our index, -1 when our node is not in the listing */
	int holds;    /* we hold the lock */
	int watch;    /* index of the node to watch when we do not hold, else -1 */
	int shortcut; /* the watched node deleted means we hold, without listing again */
	int ok;       /* every name parsed, none wrapped or near the wrap */
	int wrapped;  /* a negative (wrapped) sequence was seen */
};

int rworder_is_writer(const char *name);
void rworder_sort(char **names, size_t n);
void rworder_place(char *const *sorted, int n, const char *own, int writer,
                   struct rworder_place *out);

#endif
