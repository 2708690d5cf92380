/* Runs in: the main process. */
/* mutex.h: Curator's InterProcessMutex protocol, asynchronous. */
#ifndef MUTEX_H
#define MUTEX_H

#include <stdint.h>

#include "zk.h"

struct mutex;

enum mutex_state {
	MUTEX_IDLE,
	MUTEX_CREATING,  /* our node is being created */
	MUTEX_LISTING,   /* listing the folder to find our place */
	MUTEX_WAITING,   /* watching our predecessor */
	MUTEX_HELD,      /* we are at the head */
	MUTEX_VERIFYING, /* held, checking our node after a reconnect */
};

struct mutex_cb {
	void (*acquired)(struct mutex *, void *arg);
	void (*lost)(struct mutex *, const char *why, void *arg);   /* held, and not any more */
	void (*failed)(struct mutex *, const char *why, void *arg); /* gave up acquiring */
	void (*verified)(struct mutex *, void *arg); /* held, confirmed after a reconnect */
};

struct mutex *mutex_new(struct zk *, const char *dir, const char *data, const struct mutex_cb *,
                        void *arg);
void mutex_acquire(struct mutex *);
void mutex_release(struct mutex *);
void mutex_free(struct mutex *);
void mutex_session(struct mutex *, enum zk_event);
void mutex_set_data(struct mutex *, const char *data);

enum mutex_state mutex_state(const struct mutex *);
const char *mutex_state_name(enum mutex_state);
int64_t mutex_czxid(const struct mutex *);
uint64_t mutex_shortcuts(const struct mutex *);

#endif
