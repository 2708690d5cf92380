/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * rwlock.c: one side (read or write) of Curator's InterProcessReadWriteLock, asynchronous.
 *
 * The same machine as mutex.c: a protected ephemeral sequential node, here
 * "_c_<uuid>-__READ__" or "_c_<uuid>-__WRIT__", with a listing pipelined behind its create,
 * a get-data watch on the node we wait for, recovery by uuid after a connection loss,
 * guaranteed release and a check of our node after every reconnect (pnode.c). Who holds
 * and whom to watch is rworder.c's: a writer holds at the head of the queue of both kinds,
 * a reader when no writer is ahead of it. When the node we watch was the last obstacle at
 * our last listing and is deleted, we hold without listing again (as mutex.c does).
 */

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rwlock.h"
#include "pnode.h"
#include "rworder.h"
#include "xmalloc.h"
#include "znode.h"

enum rwlock_state {
	RWLOCK_IDLE,
	RWLOCK_CREATING,  /* our node is being created */
	RWLOCK_LISTING,   /* listing the folder to find our place */
	RWLOCK_WAITING,   /* watching our predecessor */
	RWLOCK_HELD,      /* we are at the head */
	RWLOCK_VERIFYING, /* held, checking our node after a reconnect */
};

struct rwlock {
	struct zk *zk;
	char *dir;
	int writer; /* the write side; else the read side */
	struct pnode *node;
	struct rwlock_cb cb;
	void *arg;

	enum rwlock_state state;
	int listing;  /* listings in flight */
	char *pred;   /* the predecessor we watch */
	int shortcut; /* the predecessor deleted means we hold (rworder.c) */
	int wrapped;
	uint64_t shortcuts;

	/* Each retry of a failing step would warn again: once, then a count (see log.h). */
	struct log_limit lim_gone, lim_list;
};

static const char *rwlock_state_names[] = {
    "IDLE", "CREATING", "LISTING", "WAITING", "HELD", "VERIFYING",
};

static void rwlock_list(struct rwlock *);
static void rwlock_restart(struct rwlock *);

/* The name of a state, for logs. */
static const char *
rwlock_state_name(enum rwlock_state state)
{
	return rwlock_state_names[state];
}

/* Move to a new state, logging the transition by name. */
static void
rwlock_set_state(struct rwlock *m, enum rwlock_state state)
{
	if (m->state == state)
		return;
	log_debug("rwlock %s: %s -> %s", m->dir, rwlock_state_name(m->state),
	          rwlock_state_name(state));
	m->state = state;
}

/* Our node, held, vanished or was found not ours after a reconnect (pnode.c). */
static void
rwlock_lost_cb(struct pnode *p, const char *why, void *arg)
{
	struct rwlock *m = arg;

	(void)p;
	rwlock_release(m);
	m->cb.lost(why, m->arg);
}

/* Our node, held, is still ours after a reconnect. */
static void
rwlock_verified_cb(struct pnode *p, void *arg)
{
	struct rwlock *m = arg;

	(void)p;
	rwlock_set_state(m, RWLOCK_HELD);
	if (m->cb.verified != NULL)
		m->cb.verified(m->arg);
}

/* Write data into our node while we hold (lease.c: when we got it, for status). */
void
rwlock_write_held(struct rwlock *m, const char *data)
{
	if (m->state == RWLOCK_HELD && m->node != NULL)
		pnode_write(m->node, data);
}

/* We are at the head. */
static void
rwlock_hold(struct rwlock *m)
{
	free(m->pred);
	m->pred = NULL;
	rwlock_set_state(m, RWLOCK_HELD);
	m->cb.acquired(m->arg);
	/* After the owner's reaction (a job start), off the hand-over's path. */
	if (m->state == RWLOCK_HELD)
		pnode_hold(m->node);
}

/* Our node exists: find our place, unless the pipelined listing is on its way. */
static void
rwlock_created_cb(struct pnode *p, void *arg)
{
	struct rwlock *m = arg;

	(void)p;
	if (m->state != RWLOCK_CREATING)
		return;
	rwlock_set_state(m, RWLOCK_LISTING);
	if (m->listing == 0)
		rwlock_list(m);
}

/* Our node cannot be created. */
static void
rwlock_create_failed_cb(struct pnode *p, int rc, void *arg)
{
	struct rwlock *m = arg;
	char why[256];

	(void)p;
	zk_cancel(m->zk, m);
	m->listing = 0;
	rwlock_set_state(m, RWLOCK_IDLE);
	snprintf(why, sizeof why, "cannot create a lock node in %s: %s", m->dir, zerror(rc));
	if (m->cb.failed != NULL)
		m->cb.failed(why, m->arg);
}

/* The predecessor's data came back (so the watch is set), or it is gone. */
static void
rwlock_pred_cb(const struct zk_reply *reply, void *arg)
{
	struct rwlock *m = arg;

	if (m->state != RWLOCK_WAITING || m->pred == NULL || strcmp(reply->path, m->pred) != 0)
		return;
	if (reply->rc == ZOK || zk_connection_error(reply->rc))
		return; /* watching; or relist after the reconnect */
	if (reply->rc == ZNONODE && m->shortcut) {
		m->shortcuts++;
		rwlock_hold(m);
		return;
	}
	rwlock_list(m);
}

/* The predecessor changed or went away. */
static void
rwlock_watch_cb(int type, const char *path, void *arg)
{
	struct rwlock *m = arg;

	if (m->state != RWLOCK_WAITING || m->pred == NULL || strcmp(path, m->pred) != 0)
		return;
	if (type == ZOO_DELETED_EVENT && m->shortcut) {
		log_debug("rwlock %s: the last node ahead of us deleted: holding without a listing",
		          m->dir);
		m->shortcuts++;
		rwlock_hold(m);
		return;
	}
	rwlock_list(m);
}

/* Find our place in a listing: hold, or watch the node we wait for. */
static void
rwlock_place(struct rwlock *m, char *const *children, int n)
{
	struct rworder_place pl;
	char **sorted;

	sorted = xcalloc((size_t)n + 1, sizeof *sorted);
	memcpy(sorted, children, (size_t)n * sizeof *sorted);
	rworder_sort(sorted, (size_t)n);
	rworder_place(sorted, n, pnode_name(m->node), m->writer, &pl);
	if (pl.wrapped && !m->wrapped) {
		m->wrapped = 1;
		log_warnx("lock %s: sequence numbers have wrapped past 2^31; leasekeeper orders "
		          "them correctly but Curator clients on this lock will not: delete the "
		          "lock folder while no one contends for it",
		          m->dir);
	}
	if (pl.index < 0) {
		free(sorted);
		log_warnx_limited(&m->lim_gone,
		                  "lock %s: our node %s is not in the folder any more; contending "
		                  "again",
		                  m->dir, pnode_name(m->node));
		rwlock_restart(m);
		return;
	}
	if (pl.holds) {
		free(sorted);
		rwlock_hold(m);
		return;
	}
	free(m->pred);
	m->pred = znode_join(m->dir, sorted[pl.watch]);
	m->shortcut = pl.shortcut;
	free(sorted);
	rwlock_set_state(m, RWLOCK_WAITING);
	log_debug("rwlock %s: %s at position %d, watching %s", m->dir,
	          m->writer ? "writer" : "reader", pl.index, m->pred);
	zk_get(m->zk, m->pred, rwlock_watch_cb, rwlock_pred_cb, m);
}

/* A listing of the folder. */
static void
rwlock_list_cb(const struct zk_reply *reply, void *arg)
{
	struct rwlock *m = arg;

	m->listing--;
	if (m->state != RWLOCK_LISTING || m->listing > 0)
		return;
	if (zk_connection_error(reply->rc))
		return; /* listed again after the reconnect */
	if (reply->rc != ZOK) {
		log_warnx_limited(&m->lim_list, "lock %s: cannot list: %s; contending again",
		                  m->dir, zerror(reply->rc));
		rwlock_restart(m);
		return;
	}
	rwlock_place(m, reply->children, reply->nchildren);
}

/* List the folder. */
static void
rwlock_list(struct rwlock *m)
{
	rwlock_set_state(m, RWLOCK_LISTING);
	m->listing++;
	zk_children(m->zk, m->dir, NULL, rwlock_list_cb, m);
}

/* Create our node, with the listing pipelined right behind it. */
static void
rwlock_start(struct rwlock *m)
{
	rwlock_set_state(m, RWLOCK_CREATING);
	pnode_create(m->node);
	m->listing++;
	zk_children(m->zk, m->dir, NULL, rwlock_list_cb, m);
}

/* Our node vanished or the folder misbehaved: drop what we have and start over. */
static void
rwlock_restart(struct rwlock *m)
{
	zk_cancel(m->zk, m);
	m->listing = 0;
	pnode_delete(m->node);
	rwlock_start(m);
}

/* A reader (writer = 0) or writer on the lock folder dir; data is written into its node. */
struct rwlock *
rwlock_new(struct zk *zk, const char *dir, int writer, const char *data, const struct rwlock_cb *cb,
           void *arg)
{
	static const struct pnode_cb pcb = {rwlock_created_cb, rwlock_create_failed_cb,
	                                    rwlock_lost_cb, rwlock_verified_cb};
	struct rwlock *m = xcalloc(1, sizeof *m);

	m->zk = zk;
	m->dir = xstrdup(dir);
	m->writer = writer;
	m->cb = *cb;
	m->arg = arg;
	m->node = pnode_new(zk, dir, writer ? RWORDER_WRITE : RWORDER_READ, data, &pcb, m);
	return m;
}

/* Start contending. */
void
rwlock_acquire(struct rwlock *m)
{
	if (m->state != RWLOCK_IDLE)
		fatalx("rwlock_acquire on %s in state %s", m->dir, rwlock_state_name(m->state));
	rwlock_start(m);
}

/* Stop contending, or give the lock up: delete our node (guaranteed). */
void
rwlock_release(struct rwlock *m)
{
	zk_cancel(m->zk, m);
	m->listing = 0;
	free(m->pred);
	m->pred = NULL;
	pnode_delete(m->node);
	rwlock_set_state(m, RWLOCK_IDLE);
}

/* Replace the data written into our node at the next acquire. */
void
rwlock_set_data(struct rwlock *m, const char *data)
{
	pnode_set_data(m->node, data);
}

/* Release and free. */
void
rwlock_free(struct rwlock *m)
{
	if (m == NULL)
		return;
	rwlock_release(m);
	log_limit_flush(&m->lim_gone);
	log_limit_flush(&m->lim_list);
	pnode_free(m->node);
	free(m->dir);
	free(m);
}

/* Session events, forwarded by the owner. */
void
rwlock_session(struct rwlock *m, enum zk_event event)
{
	enum rwlock_state was = m->state;

	pnode_session(m->node, event);
	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (was == RWLOCK_HELD || was == RWLOCK_VERIFYING)
			rwlock_set_state(m, RWLOCK_VERIFYING); /* pnode_session checks the node */
		else if (was == RWLOCK_WAITING || (was == RWLOCK_LISTING && m->listing == 0))
			rwlock_list(m);
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		zk_cancel(m->zk, m);
		m->listing = 0;
		free(m->pred);
		m->pred = NULL;
		rwlock_set_state(m, RWLOCK_IDLE);
		if (was == RWLOCK_HELD || was == RWLOCK_VERIFYING)
			m->cb.lost("the session expired", m->arg);
		else if (was != RWLOCK_IDLE && m->cb.failed != NULL)
			m->cb.failed("the session expired", m->arg);
		break;
	default:
		break;
	}
}

/* Our node's czxid: the fencing token. */
int64_t
rwlock_czxid(const struct rwlock *m)
{
	return pnode_czxid(m->node);
}

/* How many times the lock was taken over without a listing. */
uint64_t
rwlock_shortcuts(const struct rwlock *m)
{
	return m->shortcuts;
}
