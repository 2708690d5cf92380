/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* lease.h: what a job holds: a mutex (1 lease) or a semaphore lease (N), with a timeout. */
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

struct lease_cb {
	void (*acquired)(struct lease *, void *arg);
	void (*lost)(struct lease *, const char *why, void *arg);
	void (*failed)(struct lease *, const char *why, void *arg); /* includes the timeout */
	void (*verified)(struct lease *, void *arg);
};

struct lease *lease_new(struct event_base *, struct zk *, const char *path, int leases,
                        const char *data, const struct lease_cb *, void *arg);
void lease_acquire(struct lease *, uint64_t timeout_ms);
void lease_retime(struct lease *, uint64_t timeout_ms);
int lease_timed_out(const struct lease *);
void lease_release(struct lease *);
void lease_free(struct lease *);
void lease_session(struct lease *, enum zk_event);

enum lease_state lease_state(const struct lease *);
const char *lease_state_name(enum lease_state);
int64_t lease_fence(const struct lease *);
const char *lease_path(const struct lease *);
char *lease_data(const char *node_id, const char *job, uint64_t since_ms);
void lease_set_data(struct lease *, const char *data);

#endif
