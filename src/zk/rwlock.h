/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* rwlock.h: one side (read or write) of Curator's InterProcessReadWriteLock, asynchronous. */
#ifndef RWLOCK_H
#define RWLOCK_H

#include <stdint.h>

#include "zk.h"

struct rwlock;

/* What the owner hears; arg is the one given to rwlock_new. */
struct rwlock_cb {
	void (*acquired)(void *arg);
	void (*lost)(const char *why, void *arg);   /* held, and not any more */
	void (*failed)(const char *why, void *arg); /* gave up acquiring */
	void (*verified)(void *arg);                /* held, confirmed after a reconnect */
};

struct rwlock *rwlock_new(struct zk *, const char *dir, int writer, const char *data,
                          const struct rwlock_cb *, void *arg);
void rwlock_acquire(struct rwlock *);
void rwlock_release(struct rwlock *);
void rwlock_free(struct rwlock *);
void rwlock_session(struct rwlock *, enum zk_event);
void rwlock_set_data(struct rwlock *, const char *data);
void rwlock_write_held(struct rwlock *, const char *data);

int64_t rwlock_czxid(const struct rwlock *);
uint64_t rwlock_shortcuts(const struct rwlock *);

#endif
