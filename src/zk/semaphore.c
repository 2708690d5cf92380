/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * semaphore.c: Curator's InterProcessSemaphoreV2 protocol, asynchronous.
 *
 * To take one of N leases on <path>: take the mutex at <path>/locks; create a protected
 * ephemeral sequential "_c_<uuid>-lease-" under <path>/leases, with a watched listing
 * of that folder pipelined behind it; while the folder holds more than N children (our
 * own included) wait for the watch and list again; then release the mutex. Only the
 * mutex holder watches the leases folder, so a release wakes one waiter rather than the
 * herd, and waiters queue fairly on the mutex. The "index < N, watch children[index-N]"
 * shortcut is not used: it is safe but not live (N = 2, [a b c d]: when b goes first, c
 * may run but is never woken), which is why Curator deprecated it.
 */

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "log.h"
#include "mutex.h"
#include "pnode.h"
#include "semaphore.h"
#include "xmalloc.h"
#include "znode.h"

#define SEMAPHORE_BASE "lease-"

enum semaphore_state {
	SEMAPHORE_IDLE,
	SEMAPHORE_LOCKING,   /* waiting for the <path>/locks mutex */
	SEMAPHORE_CREATING,  /* holding it, creating our lease node */
	SEMAPHORE_COUNTING,  /* listing <path>/leases */
	SEMAPHORE_WAITING,   /* more than N leases: watching the folder */
	SEMAPHORE_HELD,      /* our lease counts among the N */
	SEMAPHORE_VERIFYING, /* held, checking our node after a reconnect */
};

struct semaphore {
	struct zk *zk;
	char *path;
	char *leases_dir;
	int max;
	struct mutex *lock;
	struct pnode *lease;
	struct semaphore_cb cb;
	void *arg;

	enum semaphore_state state;
	int listing;

	/* Each retry of a failing step would warn again: once, then a count (see log.h). */
	struct log_limit lim_mutex, lim_gone;
};

static const char *semaphore_state_names[] = {
    "IDLE", "LOCKING", "CREATING", "COUNTING", "WAITING", "HELD", "VERIFYING",
};

static void semaphore_list(struct semaphore *);
static void semaphore_create_lease(struct semaphore *);

/* The name of a state, for logs. */
static const char *
semaphore_state_name(enum semaphore_state state)
{
	return semaphore_state_names[state];
}

/* Move to a new state, logging the transition by name. */
static void
semaphore_set_state(struct semaphore *s, enum semaphore_state state)
{
	if (s->state == state)
		return;
	log_debug("semaphore %s: %s -> %s", s->path, semaphore_state_name(s->state),
	          semaphore_state_name(state));
	s->state = state;
}

/* Give up: drop everything and tell the owner. */
static void
semaphore_fail(struct semaphore *s, const char *why)
{
	semaphore_release(s);
	if (s->cb.failed != NULL)
		s->cb.failed(why, s->arg);
}

/* We hold the locks mutex: create our lease node. */
static void
semaphore_locked_cb(void *arg)
{
	struct semaphore *s = arg;

	if (s->state != SEMAPHORE_LOCKING)
		return;
	semaphore_create_lease(s);
}

/* The locks mutex was lost while we held it to count (its node vanished): lock again. */
static void
semaphore_lock_lost_cb(const char *why, void *arg)
{
	struct semaphore *s = arg;

	if (s->state == SEMAPHORE_IDLE || s->state == SEMAPHORE_HELD ||
	    s->state == SEMAPHORE_VERIFYING)
		return;
	log_warnx_limited(&s->lim_mutex, "semaphore %s: lost its locks mutex (%s); starting over",
	                  s->path, why);
	zk_cancel(s->zk, s);
	s->listing = 0;
	pnode_delete(s->lease);
	semaphore_set_state(s, SEMAPHORE_LOCKING);
	mutex_acquire(s->lock);
}

/* The locks mutex could not be taken. */
static void
semaphore_lock_failed_cb(const char *why, void *arg)
{
	struct semaphore *s = arg;

	if (s->state != SEMAPHORE_IDLE)
		semaphore_fail(s, why);
}

/* Write data into our lease node while we hold (lease.c: when we got it, for status). */
void
semaphore_write_held(struct semaphore *s, const char *data)
{
	if (s->state == SEMAPHORE_HELD && s->lease != NULL)
		pnode_write(s->lease, data);
}

/* Our lease node exists: count, unless the pipelined listing is on its way. */
static void
semaphore_created_cb(struct pnode *p, void *arg)
{
	struct semaphore *s = arg;

	(void)p;
	if (s->state != SEMAPHORE_CREATING)
		return;
	semaphore_set_state(s, SEMAPHORE_COUNTING);
	if (s->listing == 0)
		semaphore_list(s);
}

/* Our lease node cannot be created. */
static void
semaphore_create_failed_cb(struct pnode *p, int rc, void *arg)
{
	struct semaphore *s = arg;
	char why[256];

	(void)p;
	snprintf(why, sizeof why, "cannot create a lease node in %s: %s", s->leases_dir,
	         zerror(rc));
	semaphore_fail(s, why);
}

/* The leases folder changed while we wait. */
static void
semaphore_watch_cb(int type, const char *path, void *arg)
{
	struct semaphore *s = arg;

	(void)type;
	(void)path;
	if (s->state == SEMAPHORE_WAITING)
		semaphore_list(s);
}

/* Our lease node, held, vanished or was found not ours after a reconnect (pnode.c). */
static void
semaphore_lost_cb(struct pnode *p, const char *why, void *arg)
{
	struct semaphore *s = arg;

	(void)p;
	semaphore_release(s);
	s->cb.lost(why, s->arg);
}

/* Our lease node, held, is still ours after a reconnect. */
static void
semaphore_verified_cb(struct pnode *p, void *arg)
{
	struct semaphore *s = arg;

	(void)p;
	semaphore_set_state(s, SEMAPHORE_HELD);
	if (s->cb.verified != NULL)
		s->cb.verified(s->arg);
}

/* A listing of the leases folder. */
static void
semaphore_list_cb(const struct zk_reply *reply, void *arg)
{
	struct semaphore *s = arg;
	const char *own = pnode_name(s->lease);
	int i, n, found = 0;
	char **names;

	s->listing--;
	if (s->state != SEMAPHORE_COUNTING || s->listing > 0)
		return;
	if (zk_connection_error(reply->rc))
		return; /* listed again after the reconnect */
	n = reply->rc == ZOK ? reply->nchildren : 0;
	names = xcalloc((size_t)n + 1, sizeof *names);
	memcpy(names, reply->children, (size_t)n * sizeof *names);
	/* Our own leases whose acknowledged delete ZooKeeper lost take no place among the N. */
	n = zk_drop_ghosts(s->zk, s->leases_dir, names, n, own);
	for (i = 0; i < n; i++) {
		if (own != NULL && strcmp(names[i], own) == 0)
			found = 1;
	}
	free(names);
	if (!found) {
		/* Curator's RETRY_DUE_TO_MISSING_NODE. */
		log_warnx_limited(
		    &s->lim_gone,
		    "semaphore %s: our lease node is not in %s (%s); creating it again", s->path,
		    s->leases_dir, zerror(reply->rc));
		zk_cancel(s->zk, s);
		s->listing = 0;
		pnode_delete(s->lease);
		semaphore_create_lease(s);
		return;
	}
	if (n <= s->max) {
		mutex_release(s->lock);
		semaphore_set_state(s, SEMAPHORE_HELD);
		log_debug("semaphore %s: lease %s held (%d of %d)", s->path, own, n, s->max);
		s->cb.acquired(s->arg);
		/* After the owner's reaction (a job start), off the acquire's path. */
		if (s->state == SEMAPHORE_HELD)
			pnode_hold(s->lease);
		return;
	}
	semaphore_set_state(s, SEMAPHORE_WAITING);
	log_debug("semaphore %s: %d leases taken of %d; waiting", s->path, n - 1, s->max);
}

/* List the leases folder, with a watch. */
static void
semaphore_list(struct semaphore *s)
{
	semaphore_set_state(s, SEMAPHORE_COUNTING);
	s->listing++;
	zk_children(s->zk, s->leases_dir, semaphore_watch_cb, semaphore_list_cb, s);
}

/* Create our lease node with the watched listing pipelined behind it. */
static void
semaphore_create_lease(struct semaphore *s)
{
	semaphore_set_state(s, SEMAPHORE_CREATING);
	pnode_create(s->lease);
	s->listing++;
	zk_children(s->zk, s->leases_dir, semaphore_watch_cb, semaphore_list_cb, s);
}

/* A contender for one of `leases` leases on path; data is written into its nodes. */
struct semaphore *
semaphore_new(struct zk *zk, const char *path, int leases, const char *data,
              const struct semaphore_cb *cb, void *arg)
{
	static const struct mutex_cb mcb = {semaphore_locked_cb, semaphore_lock_lost_cb,
	                                    semaphore_lock_failed_cb, NULL};
	static const struct pnode_cb pcb = {semaphore_created_cb, semaphore_create_failed_cb,
	                                    semaphore_lost_cb, semaphore_verified_cb};
	struct semaphore *s = xcalloc(1, sizeof *s);
	char *locks;

	s->zk = zk;
	s->path = xstrdup(path);
	s->leases_dir = layout_semaphore_leases(path);
	s->max = leases;
	s->cb = *cb;
	s->arg = arg;
	locks = layout_semaphore_locks(path);
	s->lock = mutex_new(zk, locks, data, &mcb, s);
	free(locks);
	s->lease = pnode_new(zk, s->leases_dir, SEMAPHORE_BASE, data, &pcb, s);
	return s;
}

/* Start contending for a lease. */
void
semaphore_acquire(struct semaphore *s)
{
	if (s->state != SEMAPHORE_IDLE)
		fatalx("semaphore_acquire on %s in state %s", s->path,
		       semaphore_state_name(s->state));
	semaphore_set_state(s, SEMAPHORE_LOCKING);
	mutex_acquire(s->lock);
}

/* Stop contending, or give the lease back. */
void
semaphore_release(struct semaphore *s)
{
	zk_cancel(s->zk, s);
	s->listing = 0;
	semaphore_set_state(s, SEMAPHORE_IDLE);
	mutex_release(s->lock);
	pnode_delete(s->lease);
}

/* Replace the data written into our nodes at the next acquire. */
void
semaphore_set_data(struct semaphore *s, const char *data)
{
	mutex_set_data(s->lock, data);
	pnode_set_data(s->lease, data);
}

/* Release and free. */
void
semaphore_free(struct semaphore *s)
{
	if (s == NULL)
		return;
	semaphore_release(s);
	mutex_free(s->lock);
	pnode_free(s->lease);
	log_limit_flush(&s->lim_mutex);
	log_limit_flush(&s->lim_gone);
	free(s->leases_dir);
	free(s->path);
	free(s);
}

/* Session events, forwarded by the owner. */
void
semaphore_session(struct semaphore *s, enum zk_event event)
{
	enum semaphore_state was = s->state;

	if (event == ZK_EVENT_EXPIRED || event == ZK_EVENT_CLOSED) {
		/* Quiet first, so the mutex's own callbacks find us idle. */
		zk_cancel(s->zk, s);
		s->listing = 0;
		semaphore_set_state(s, SEMAPHORE_IDLE);
	}
	mutex_session(s->lock, event);
	pnode_session(s->lease, event);
	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (was == SEMAPHORE_HELD || was == SEMAPHORE_VERIFYING)
			semaphore_set_state(s, SEMAPHORE_VERIFYING); /* pnode_session checks it */
		else if (was == SEMAPHORE_WAITING || (was == SEMAPHORE_COUNTING && s->listing == 0))
			semaphore_list(s);
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		if (was == SEMAPHORE_HELD || was == SEMAPHORE_VERIFYING)
			s->cb.lost("the session expired", s->arg);
		else if (was != SEMAPHORE_IDLE && s->cb.failed != NULL)
			s->cb.failed("the session expired", s->arg);
		break;
	default:
		break;
	}
}

/* Our lease node's czxid: the fencing token. */
int64_t
semaphore_czxid(const struct semaphore *s)
{
	return pnode_czxid(s->lease);
}

/* Whether our lease node waits behind N others' (or the locks mutex behind another's). */
int
semaphore_waiting(const struct semaphore *s)
{
	return s->state == SEMAPHORE_WAITING ||
	       (s->state == SEMAPHORE_LOCKING && mutex_waiting(s->lock));
}
