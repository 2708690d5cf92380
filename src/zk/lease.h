/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* lease.h: what a job holds: one or several locks, all or none, with a timeout. */
#ifndef LEASE_H
#define LEASE_H

#include <stdint.h>

#include "zk.h"

struct event_base;
struct lease;

enum lease_state {
	LEASE_IDLE,
	LEASE_ACQUIRING,
	LEASE_HELD,       /* held, and confirmed since the last disconnect */
	LEASE_UNVERIFIED, /* held, but the connection dropped since: not confirmed yet */
};

/* What one lock of a lease is. */
enum lease_kind {
	LEASE_MUTEX,     /* Curator's InterProcessMutex */
	LEASE_SEMAPHORE, /* a lease of Curator's InterProcessSemaphoreV2 */
	LEASE_READ,      /* the read side of Curator's InterProcessReadWriteLock */
	LEASE_WRITE,     /* its write side */
};

/* One lock of a lease, as asked for. */
struct lease_spec {
	const char *path;
	enum lease_kind kind;
	int leases; /* LEASE_SEMAPHORE: how many */
};

struct lease_cb {
	void (*acquired)(struct lease *, void *arg);
	void (*lost)(struct lease *, const char *why, void *arg);
	void (*failed)(struct lease *, const char *why, void *arg); /* includes the timeout */
	void (*verified)(struct lease *, void *arg);
};

struct lease *lease_new(struct event_base *, struct zk *, const char *path, int leases,
                        const char *data, const struct lease_cb *, void *arg);
struct lease *lease_new_set(struct event_base *, struct zk *, const struct lease_spec *, int n,
                            const char *data, const struct lease_cb *, void *arg);
void lease_acquire(struct lease *, uint64_t timeout_ms);
void lease_retime(struct lease *, uint64_t timeout_ms);
int lease_timed_out(const struct lease *);
int lease_waiting(const struct lease *);
void lease_release(struct lease *);
void lease_free(struct lease *);
void lease_session(struct lease *, enum zk_event);

enum lease_state lease_state(const struct lease *);
const char *lease_state_name(enum lease_state);
int64_t lease_fence(const struct lease *);
const char *lease_path(const struct lease *);
const char *lease_fences(const struct lease *);
int lease_count(const struct lease *);
const char *lease_lock_path(const struct lease *, int i);
enum lease_kind lease_lock_kind(const struct lease *, int i);
int64_t lease_lock_fence(const struct lease *, int i);
const char *lease_kind_name(enum lease_kind);
char *lease_data(const char *node_id, const char *job, uint64_t since_ms);
void lease_set_data(struct lease *, const char *data);

#endif
