/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* semaphore.h: Curator's InterProcessSemaphoreV2 protocol, asynchronous. */
#ifndef SEMAPHORE_H
#define SEMAPHORE_H

#include <stdint.h>

#include "zk.h"

struct semaphore;

/* What the owner hears; arg is the one given to semaphore_new. */
struct semaphore_cb {
	void (*acquired)(void *arg);
	void (*lost)(const char *why, void *arg);
	void (*failed)(const char *why, void *arg);
	void (*verified)(void *arg);
};

struct semaphore *semaphore_new(struct zk *, const char *path, int leases, const char *data,
                                const struct semaphore_cb *, void *arg);
void semaphore_acquire(struct semaphore *);
void semaphore_release(struct semaphore *);
void semaphore_free(struct semaphore *);
void semaphore_session(struct semaphore *, enum zk_event);
void semaphore_set_data(struct semaphore *, const char *data);
void semaphore_write_held(struct semaphore *, const char *data);

int64_t semaphore_czxid(const struct semaphore *);
int semaphore_waiting(const struct semaphore *);

#endif
