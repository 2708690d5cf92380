/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * lease.c: what a job holds: one or several locks (mutex, semaphore lease, read or write side
 * of a read-write lock), all or none, with a timeout.
 *
 * Several locks are taken one at a time in one canonical order, sorted by path, whatever
 * order they were given in: two holders that want the same locks then always queue on the
 * first of them before taking the next, so no two can each hold what the other waits for.
 * The lease is held when every lock is; it is lost when any is, and then it gives back the
 * rest. A failure or the timeout gives back what was taken. All locks share the one session,
 * so they share its deadline.
 */

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

/* One lock of a lease. */
struct lease_lock {
	struct lease *lease;
	char *path;
	enum lease_kind kind;
	int leases;
	struct mutex *mutex;         /* LEASE_MUTEX, LEASE_READ, LEASE_WRITE */
	struct semaphore *semaphore; /* LEASE_SEMAPHORE */
	int held;
	int unverified; /* held, the connection dropped since, not confirmed yet */
};

struct lease {
	struct zk *zk;
	struct lease_lock *locks; /* as given; locks[0] is the first, its fence LEASEKEEPER_FENCE */
	int *order;               /* indexes into locks, sorted by path: the order of taking */
	int nlocks;
	int next;     /* while acquiring: the position in order being taken */
	unsigned gen; /* changes at every acquire and release */
	char *fences; /* "path=fence,..." of the last acquisition */
	struct lease_cb cb;
	void *arg;
	enum lease_state state;
	struct event *timer;
	uint64_t timeout_ms;
	int timed_out;     /* the last acquire ended because its timeout ran out */
	char *data;        /* what our nodes hold (lease_data), to add held_since to */
	uint64_t asked_ms; /* wall clock: when this acquisition started */
};

static const char *lease_kind_names[] = {"mutex", "semaphore", "read", "write"};

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
	log_debug("lease %s: %s -> %s", l->locks[0].path, lease_state_name(l->state),
	          lease_state_name(state));
	l->state = state;
}

/* The name of a lock's kind, for logs, status and LEASEKEEPER_FENCES. */
const char *
lease_kind_name(enum lease_kind kind)
{
	return lease_kind_names[kind];
}

/* Write data into a held lock's node (for status). */
static void
lease_lock_write(struct lease_lock *k, const char *data)
{
	if (k->mutex != NULL)
		mutex_write_held(k->mutex, data);
	else
		semaphore_write_held(k->semaphore, data);
}

/*
 * Add "held_since" (now) to what our nodes hold, so that status shows both when a holder
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
	int i;

	if (clock_wall_ms() < l->asked_ms + LEASE_HELD_SINCE_MS)
		return;
	if (l->data == NULL || (o = json_loads(l->data, 0, NULL)) == NULL)
		return;
	if (json_is_object(o)) {
		clock_iso8601(clock_wall_ms(), stamp, sizeof stamp);
		json_object_set_new(o, "held_since", json_string(stamp));
		if ((out = json_dumps(o, JSON_COMPACT)) != NULL) {
			for (i = 0; i < l->nlocks; i++)
				lease_lock_write(&l->locks[i], out);
			free(out);
		}
	}
	json_decref(o);
}

/* Start taking one lock. */
static void
lease_lock_acquire(struct lease_lock *k)
{
	k->held = k->unverified = 0;
	if (k->mutex != NULL)
		mutex_acquire(k->mutex);
	else
		semaphore_acquire(k->semaphore);
}

/* Stop taking one lock, or give it back. */
static void
lease_lock_release(struct lease_lock *k)
{
	k->held = k->unverified = 0;
	if (k->mutex != NULL)
		mutex_release(k->mutex);
	else
		semaphore_release(k->semaphore);
}

/* Record "path=fence,..." for every lock, in the order given. */
static void
lease_note_fences(struct lease *l)
{
	size_t len = 1, off = 0;
	int i;

	for (i = 0; i < l->nlocks; i++)
		len += strlen(l->locks[i].path) + 24;
	free(l->fences);
	l->fences = xmalloc(len);
	l->fences[0] = '\0';
	for (i = 0; i < l->nlocks; i++)
		off += (size_t)snprintf(l->fences + off, len - off, "%s%s=%lld", i > 0 ? "," : "",
		                        l->locks[i].path, (long long)lease_lock_fence(l, i));
}

/* Whether a lock held is not confirmed since the last disconnect. */
static int
lease_unverified(const struct lease *l)
{
	int i;

	for (i = 0; i < l->nlocks; i++)
		if (l->locks[i].unverified)
			return 1;
	return 0;
}

/* A lock holds: take the next one, or, with all held, stop the timeout and tell the owner. */
static void
lease_acquired_cb(void *arg)
{
	struct lease_lock *k = arg;
	struct lease *l = k->lease;

	k->held = 1;
	if (l->state != LEASE_ACQUIRING)
		return;
	if (++l->next < l->nlocks) {
		log_debug("lease %s: holding %s, taking %s", l->locks[0].path, k->path,
		          l->locks[l->order[l->next]].path);
		lease_lock_acquire(&l->locks[l->order[l->next]]);
		return;
	}
	evtimer_del(l->timer);
	lease_note_fences(l);
	/* A lock taken before a disconnect while the rest were being taken: not confirmed yet. */
	lease_set_state(l, lease_unverified(l) ? LEASE_UNVERIFIED : LEASE_HELD);
	l->cb.acquired(l, l->arg);
	if (l->state == LEASE_HELD)
		lease_write_held(l); /* after the owner's reaction: off the hand-over's path */
}

/* Give back every lock and report why acquiring ended (the owner may acquire again). */
static void
lease_fail(struct lease *l, const char *why)
{
	lease_release(l);
	l->cb.failed(l, why, l->arg);
}

/* A lock held and does not any more: the lease is lost (or, while taking the rest, failed). */
static void
lease_lost_cb(const char *why, void *arg)
{
	struct lease_lock *k = arg;
	struct lease *l = k->lease;
	enum lease_state was = l->state;
	char buf[512];

	k->held = 0;
	if (l->nlocks > 1) {
		snprintf(buf, sizeof buf, "lock %s (%s): %s", k->path, lease_kind_name(k->kind),
		         why);
		why = buf;
	}
	if (was == LEASE_ACQUIRING) {
		lease_fail(l, why);
		return;
	}
	lease_release(l);
	if (was != LEASE_IDLE)
		l->cb.lost(l, why, l->arg);
}

/* A lock gave up acquiring: give back what was taken. */
static void
lease_failed_cb(const char *why, void *arg)
{
	struct lease_lock *k = arg;
	struct lease *l = k->lease;
	char buf[512];

	if (l->state == LEASE_IDLE)
		return;
	if (l->nlocks > 1) {
		snprintf(buf, sizeof buf, "lock %s (%s): %s", k->path, lease_kind_name(k->kind),
		         why);
		why = buf;
	}
	lease_fail(l, why);
}

/* A lock's node is still ours after a reconnect; the lease is confirmed when all are. */
static void
lease_verified_cb(void *arg)
{
	struct lease_lock *k = arg;
	struct lease *l = k->lease;

	k->unverified = 0;
	if (lease_unverified(l) || l->state != LEASE_UNVERIFIED)
		return;
	lease_set_state(l, LEASE_HELD);
	if (l->cb.verified != NULL)
		l->cb.verified(l, l->arg);
}

/* The acquire timeout ran out: withdraw (deleting what we created) and report. */
static void
lease_timeout_cb(int fd, short what, void *arg)
{
	struct lease *l = arg;
	char why[512], dur[32];

	(void)fd;
	(void)what;
	if (l->state != LEASE_ACQUIRING)
		return;
	duration_format(l->timeout_ms, dur, sizeof dur);
	if (l->nlocks > 1)
		snprintf(why, sizeof why,
		         "not every lock within %s (waiting for %s, %d of %d held)", dur,
		         l->locks[l->order[l->next]].path, l->next, l->nlocks);
	else
		snprintf(why, sizeof why, "no lease within %s", dur);
	lease_release(l);
	l->timed_out = 1;
	l->cb.failed(l, why, l->arg);
}

/* Sort the order of taking by path (insertion sort: a handful of locks). */
static void
lease_sort_order(struct lease *l)
{
	int i, j, t;

	for (i = 0; i < l->nlocks; i++)
		l->order[i] = i;
	for (i = 1; i < l->nlocks; i++)
		for (j = i; j > 0 &&
		            strcmp(l->locks[l->order[j - 1]].path, l->locks[l->order[j]].path) > 0;
		     j--) {
			t = l->order[j];
			l->order[j] = l->order[j - 1];
			l->order[j - 1] = t;
		}
}

/* A lease made of n locks, taken in path order, all or none; data goes into every node. */
struct lease *
lease_new_set(struct event_base *base, struct zk *zk, const struct lease_spec *specs, int n,
              const char *data, const struct lease_cb *cb, void *arg)
{
	static const struct mutex_cb mcb = {lease_acquired_cb, lease_lost_cb, lease_failed_cb,
	                                    lease_verified_cb};
	static const struct semaphore_cb scb = {lease_acquired_cb, lease_lost_cb, lease_failed_cb,
	                                        lease_verified_cb};
	struct lease *l = xcalloc(1, sizeof *l);
	struct lease_lock *k;
	int i;

	if (n < 1)
		fatalx("lease_new_set: no locks");
	l->zk = zk;
	l->cb = *cb;
	l->arg = arg;
	l->data = data != NULL ? xstrdup(data) : NULL;
	l->nlocks = n;
	l->locks = xcalloc((size_t)n, sizeof *l->locks);
	l->order = xcalloc((size_t)n, sizeof *l->order);
	for (i = 0; i < n; i++) {
		k = &l->locks[i];
		k->lease = l;
		k->path = xstrdup(specs[i].path);
		k->kind = specs[i].kind;
		k->leases = specs[i].kind == LEASE_SEMAPHORE ? specs[i].leases : 1;
		if (k->kind == LEASE_SEMAPHORE)
			k->semaphore = semaphore_new(zk, k->path, k->leases, data, &scb, k);
		else
			k->mutex = mutex_new_side(zk, k->path,
			                          k->kind == LEASE_READ    ? MUTEX_READ
			                          : k->kind == LEASE_WRITE ? MUTEX_WRITE
			                                                   : MUTEX_EXCLUSIVE,
			                          data, &mcb, k);
	}
	lease_sort_order(l);
	l->timer = evtimer_new(base, lease_timeout_cb, l);
	return l;
}

/* A lease on path: a mutex when leases is 1, else a semaphore of that many leases. */
struct lease *
lease_new(struct event_base *base, struct zk *zk, const char *path, int leases, const char *data,
          const struct lease_cb *cb, void *arg)
{
	struct lease_spec spec = {path, leases == 1 ? LEASE_MUTEX : LEASE_SEMAPHORE, leases};

	return lease_new_set(base, zk, &spec, 1, data, cb, arg);
}

/* Start contending, for the first lock in path order; give up after timeout_ms (0: never). */
void
lease_acquire(struct lease *l, uint64_t timeout_ms)
{
	if (l->state != LEASE_IDLE)
		fatalx("lease_acquire on %s in state %s", l->locks[0].path,
		       lease_state_name(l->state));
	lease_set_state(l, LEASE_ACQUIRING);
	l->gen++;
	l->timed_out = 0;
	l->next = 0;
	l->asked_ms = clock_wall_ms();
	lease_retime(l, timeout_ms);
	lease_lock_acquire(&l->locks[l->order[0]]);
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

/*
 * Whether an acquisition waits behind others who hold the lock it is taking: its node is in
 * place and watches theirs. Not while its nodes are being created or listed (a cluster that
 * answers slowly, or not at all, is no holder).
 */
int
lease_waiting(const struct lease *l)
{
	const struct lease_lock *k;

	if (l->state != LEASE_ACQUIRING || l->next < 0 || l->next >= l->nlocks)
		return 0;
	k = &l->locks[l->order[l->next]];
	return k->semaphore != NULL ? semaphore_waiting(k->semaphore)
	       : k->mutex != NULL   ? mutex_waiting(k->mutex)
	                            : 0;
}

/* Stop contending or give every lock back; each delete is retried until it lands. */
void
lease_release(struct lease *l)
{
	int i;

	evtimer_del(l->timer);
	l->gen++;
	for (i = l->nlocks - 1; i >= 0; i--)
		lease_lock_release(&l->locks[l->order[i]]);
	lease_set_state(l, LEASE_IDLE);
}

/* Release and free. */
void
lease_free(struct lease *l)
{
	struct lease_lock *k;
	int i;

	if (l == NULL)
		return;
	lease_release(l);
	for (i = 0; i < l->nlocks; i++) {
		k = &l->locks[i];
		mutex_free(k->mutex);
		semaphore_free(k->semaphore);
		free(k->path);
	}
	free(l->locks);
	free(l->order);
	event_free(l->timer);
	free(l->fences);
	free(l->data);
	free(l);
}

/* Forward a session event to one lock. */
static void
lease_lock_session(struct lease_lock *k, enum zk_event event)
{
	if (event == ZK_EVENT_DISCONNECTED && k->held)
		k->unverified = 1;
	if (k->mutex != NULL)
		mutex_session(k->mutex, event);
	else
		semaphore_session(k->semaphore, event);
}

/*
 * Session events, forwarded by the owner. A lock's report can end the whole lease (and the
 * owner may start it anew): the locks not told yet were given back by then, so the event
 * is not theirs any more.
 */
void
lease_session(struct lease *l, enum zk_event event)
{
	unsigned gen = l->gen;
	int i;

	if (event == ZK_EVENT_DISCONNECTED && l->state == LEASE_HELD)
		lease_set_state(l, LEASE_UNVERIFIED);
	for (i = 0; i < l->nlocks && l->gen == gen; i++)
		lease_lock_session(&l->locks[l->order[i]], event);
}

/* The state. */
enum lease_state
lease_state(const struct lease *l)
{
	return l->state;
}

/* The fencing token of the first lock: the czxid of its node. */
int64_t
lease_fence(const struct lease *l)
{
	return lease_lock_fence(l, 0);
}

/* "path=fence,..." for every lock as given, as of the last acquisition (NULL before). */
const char *
lease_fences(const struct lease *l)
{
	return l->fences;
}

/* The first lock's path. */
const char *
lease_path(const struct lease *l)
{
	return l->locks[0].path;
}

/* How many locks. */
int
lease_count(const struct lease *l)
{
	return l->nlocks;
}

/* Lock i's path (in the order given). */
const char *
lease_lock_path(const struct lease *l, int i)
{
	return l->locks[i].path;
}

/* Lock i's kind. */
enum lease_kind
lease_lock_kind(const struct lease *l, int i)
{
	return l->locks[i].kind;
}

/* Lock i's fencing token: the czxid of its node, strictly increasing across the ensemble. */
int64_t
lease_lock_fence(const struct lease *l, int i)
{
	const struct lease_lock *k = &l->locks[i];

	if (k->mutex != NULL)
		return mutex_czxid(k->mutex);
	return semaphore_czxid(k->semaphore);
}

/* Replace the data written into our nodes at the next acquire. */
void
lease_set_data(struct lease *l, const char *data)
{
	struct lease_lock *k;
	int i;

	free(l->data);
	l->data = xstrdup(data);
	for (i = 0; i < l->nlocks; i++) {
		k = &l->locks[i];
		if (k->mutex != NULL)
			mutex_set_data(k->mutex, data);
		else
			semaphore_set_data(k->semaphore, data);
	}
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
