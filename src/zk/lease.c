/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* lease.c: what a job holds: a mutex (1 lease) or a semaphore lease (N), with a timeout. */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "duration.h"
#include "lease.h"
#include "log.h"
#include "mutex.h"
#include "semaphore.h"
#include "xmalloc.h"

#define LEASE_HELD_SINCE_MS 1000 /* a wait in the queue shorter than this is not written */

struct lease {
	struct zk *zk;
	char *path;
	int leases;
	struct mutex *mutex;         /* leases == 1 */
	struct semaphore *semaphore; /* leases > 1 */
	struct lease_cb cb;
	void *arg;
	enum lease_state state;
	struct event *timer;
	uint64_t timeout_ms;
	int timed_out;     /* the last acquire ended because its timeout ran out */
	char *data;        /* what our nodes hold (lease_data), to add held_since to */
	uint64_t asked_ms; /* wall clock: when this acquisition started */
};

static const char *lease_state_names[] = {"IDLE", "ACQUIRING", "HELD", "UNVERIFIED"};

/* The name of a state, for logs. */
const char *
lease_state_name(enum lease_state state)
{
	return lease_state_names[state];
}

/* Move to a new state, logging the transition by name. */
static void
lease_set_state(struct lease *l, enum lease_state state)
{
	if (l->state == state)
		return;
	log_debug("lease %s: %s -> %s", l->path, lease_state_name(l->state),
	          lease_state_name(state));
	l->state = state;
}

/*
 * Add "held_since" (now) to what our node holds, so that status shows both when a holder
 * joined the queue ("since") and when it got the lease. Only when it waited in the queue
 * for LEASE_HELD_SINCE_MS or more: a lease taken at once (a scheduled tick's usual case)
 * costs no write, and its "since" is when it got it. Data that is not lease_data's JSON
 * object is left alone.
 */
static void
lease_write_held(struct lease *l)
{
	char stamp[40], *out;
	json_t *o;

	if (clock_wall_ms() < l->asked_ms + LEASE_HELD_SINCE_MS)
		return;
	if (l->data == NULL || (o = json_loads(l->data, 0, NULL)) == NULL)
		return;
	if (json_is_object(o)) {
		clock_iso8601(clock_wall_ms(), stamp, sizeof stamp);
		json_object_set_new(o, "held_since", json_string(stamp));
		if ((out = json_dumps(o, JSON_COMPACT)) != NULL) {
			if (l->mutex != NULL)
				mutex_write_held(l->mutex, out);
			else
				semaphore_write_held(l->semaphore, out);
			free(out);
		}
	}
	json_decref(o);
}

/* The recipe holds: stop the timeout and tell the owner. */
static void
lease_acquired_cb(void *arg)
{
	struct lease *l = arg;

	evtimer_del(l->timer);
	lease_set_state(l, LEASE_HELD);
	l->cb.acquired(l, l->arg);
	if (l->state == LEASE_HELD)
		lease_write_held(l); /* after the owner's reaction: off the hand-over's path */
}

/* The recipe held and does not any more. */
static void
lease_lost_cb(const char *why, void *arg)
{
	struct lease *l = arg;

	lease_set_state(l, LEASE_IDLE);
	l->cb.lost(l, why, l->arg);
}

/* The recipe gave up acquiring. */
static void
lease_failed_cb(const char *why, void *arg)
{
	struct lease *l = arg;

	evtimer_del(l->timer);
	lease_set_state(l, LEASE_IDLE);
	l->cb.failed(l, why, l->arg);
}

/* The recipe's node is still ours after a reconnect. */
static void
lease_verified_cb(void *arg)
{
	struct lease *l = arg;

	lease_set_state(l, LEASE_HELD);
	if (l->cb.verified != NULL)
		l->cb.verified(l, l->arg);
}

/* The acquire timeout ran out: withdraw (deleting what we created) and report. */
static void
lease_timeout_cb(int fd, short what, void *arg)
{
	struct lease *l = arg;
	char why[64], dur[32];

	(void)fd;
	(void)what;
	if (l->state != LEASE_ACQUIRING)
		return;
	lease_release(l);
	duration_format(l->timeout_ms, dur, sizeof dur);
	snprintf(why, sizeof why, "no lease within %s", dur);
	l->timed_out = 1;
	lease_failed_cb(why, l);
}

/* A lease on path: a mutex when leases is 1, else a semaphore of that many leases. */
struct lease *
lease_new(struct event_base *base, struct zk *zk, const char *path, int leases, const char *data,
          const struct lease_cb *cb, void *arg)
{
	static const struct mutex_cb mcb = {lease_acquired_cb, lease_lost_cb, lease_failed_cb,
	                                    lease_verified_cb};
	static const struct semaphore_cb scb = {lease_acquired_cb, lease_lost_cb, lease_failed_cb,
	                                        lease_verified_cb};
	struct lease *l = xcalloc(1, sizeof *l);

	l->zk = zk;
	l->path = xstrdup(path);
	l->leases = leases;
	l->cb = *cb;
	l->arg = arg;
	l->data = data != NULL ? xstrdup(data) : NULL;
	if (leases == 1)
		l->mutex = mutex_new(zk, path, data, &mcb, l);
	else
		l->semaphore = semaphore_new(zk, path, leases, data, &scb, l);
	l->timer = evtimer_new(base, lease_timeout_cb, l);
	return l;
}

/* Start contending; give up after timeout_ms (0: wait for ever). */
void
lease_acquire(struct lease *l, uint64_t timeout_ms)
{
	if (l->state != LEASE_IDLE)
		fatalx("lease_acquire on %s in state %s", l->path, lease_state_name(l->state));
	lease_set_state(l, LEASE_ACQUIRING);
	l->timed_out = 0;
	l->asked_ms = clock_wall_ms();
	lease_retime(l, timeout_ms);
	if (l->mutex != NULL)
		mutex_acquire(l->mutex);
	else
		semaphore_acquire(l->semaphore);
}

/* While acquiring: give up timeout_ms from now instead (0: wait for ever). */
void
lease_retime(struct lease *l, uint64_t timeout_ms)
{
	struct timeval tv;

	evtimer_del(l->timer);
	l->timeout_ms = timeout_ms;
	if (timeout_ms > 0 && l->state == LEASE_ACQUIRING) {
		tv.tv_sec = (time_t)(timeout_ms / 1000);
		tv.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
		evtimer_add(l->timer, &tv);
	}
}

/* Whether the last acquire failed because its timeout ran out. */
int
lease_timed_out(const struct lease *l)
{
	return l->timed_out;
}

/* Stop contending or give the lease back; the delete is retried until it lands. */
void
lease_release(struct lease *l)
{
	evtimer_del(l->timer);
	if (l->mutex != NULL)
		mutex_release(l->mutex);
	else
		semaphore_release(l->semaphore);
	lease_set_state(l, LEASE_IDLE);
}

/* Release and free. */
void
lease_free(struct lease *l)
{
	if (l == NULL)
		return;
	lease_release(l);
	mutex_free(l->mutex);
	semaphore_free(l->semaphore);
	event_free(l->timer);
	free(l->path);
	free(l->data);
	free(l);
}

/* Session events, forwarded by the owner. */
void
lease_session(struct lease *l, enum zk_event event)
{
	if (event == ZK_EVENT_DISCONNECTED && l->state == LEASE_HELD)
		lease_set_state(l, LEASE_UNVERIFIED);
	if (l->mutex != NULL)
		mutex_session(l->mutex, event);
	else
		semaphore_session(l->semaphore, event);
}

/* The state. */
enum lease_state
lease_state(const struct lease *l)
{
	return l->state;
}

/* The fencing token: the czxid of our node, strictly increasing across the ensemble. */
int64_t
lease_fence(const struct lease *l)
{
	return l->mutex != NULL ? mutex_czxid(l->mutex) : semaphore_czxid(l->semaphore);
}

/* The lock path. */
const char *
lease_path(const struct lease *l)
{
	return l->path;
}

/* Replace the data written into our nodes at the next acquire. */
void
lease_set_data(struct lease *l, const char *data)
{
	free(l->data);
	l->data = xstrdup(data);
	if (l->mutex != NULL)
		mutex_set_data(l->mutex, data);
	else
		semaphore_set_data(l->semaphore, data);
}

/* The JSON a lease node holds: who holds or waits (caller frees). */
char *
lease_data(const char *node_id, const char *job, uint64_t since_ms)
{
	char stamp[40], *out;
	json_t *o;

	clock_iso8601(since_ms, stamp, sizeof stamp);
	o = json_pack("{s:s, s:I, s:s, s:s}", "node", node_id, "pid", (json_int_t)getpid(), "job",
	              job, "since", stamp);
	if (o == NULL)
		fatalx("lease_data: json_pack");
	out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (out == NULL)
		fatalx("lease_data: json_dumps");
	return out;
}
