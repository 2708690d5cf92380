/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* members.h: the live workers and the jobs each carries, a watched view of <root>/workers. */
#ifndef MEMBERS_H
#define MEMBERS_H

#include <stddef.h>

#include "zk.h"

#define MEMBERS_MAX 4096 /* workers in the view at most; more are left out */

struct members;

struct members *members_new(struct zk *, const char *root);
void members_free(struct members *);
void members_start(struct members *);
void members_session(struct members *, enum zk_event);
int members_ready(const struct members *);
const char **members_carrying(const struct members *, const char *job, size_t *n);
void members_on_change(struct members *, void (*cb)(void *arg), void *arg);
int members_settled(const struct members *, int whole);
size_t members_carriers(const struct members *, const char *job);

#endif
