/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* mutex.h: Curator's InterProcessMutex protocol, asynchronous. */
#ifndef MUTEX_H
#define MUTEX_H

#include <stdint.h>

#include "zk.h"

struct mutex;

/* What the owner hears; arg is the one given to mutex_new. */
struct mutex_cb {
	void (*acquired)(void *arg);
	void (*lost)(const char *why, void *arg);   /* held, and not any more */
	void (*failed)(const char *why, void *arg); /* gave up acquiring */
	void (*verified)(void *arg);                /* held, confirmed after a reconnect */
};

/* Which lock a contender takes: Curator's mutex, or a side of its read-write lock. */
enum mutex_side { MUTEX_EXCLUSIVE, MUTEX_READ, MUTEX_WRITE };

struct mutex *mutex_new_side(struct zk *, const char *dir, enum mutex_side, const char *data,
                             const struct mutex_cb *, void *arg);
struct mutex *mutex_new(struct zk *, const char *dir, const char *data, const struct mutex_cb *,
                        void *arg);
void mutex_acquire(struct mutex *);
void mutex_release(struct mutex *);
void mutex_free(struct mutex *);
void mutex_session(struct mutex *, enum zk_event);
void mutex_set_data(struct mutex *, const char *data);
void mutex_write_held(struct mutex *, const char *data);

int64_t mutex_czxid(const struct mutex *);
int mutex_waiting(const struct mutex *);
uint64_t mutex_shortcuts(const struct mutex *);

#endif
