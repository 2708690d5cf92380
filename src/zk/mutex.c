/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * mutex.c: Curator's InterProcessMutex protocol, asynchronous; and, with another order, one
 * side of its InterProcessReadWriteLock (mutex_new_side).
 *
 * A contender creates a protected ephemeral sequential node "_c_<uuid>-lock-" in the lock
 * folder and pipelines a listing right behind the create: the server answers a
 * session's requests in order, so the listing already holds the new node and an
 * uncontended acquire costs one round trip. Children sort by the text after the last
 * "lock-" (see znode.c). The head holds the lock; every other contender watches its
 * immediate predecessor with a get-data watch, which a vanished node does not leave
 * behind, and looks again when it fires.
 *
 * Hand-over without a round trip: nodes are only ever appended behind a contender, so
 * the queue in front of it only shrinks. A waiter whose predecessor was the head at its
 * last listing and is now deleted is the head: it holds the lock at once, where Curator
 * lists again. Every other wake-up lists again, as does any wake-up once names that do
 * not parse, wrapped (negative) sequences, or sequences near 2^31 were seen, since then a
 * newer node could sort in front.
 *
 * A listing leaves out the ghosts of our own deleted nodes (zk_drop_ghosts): ZooKeeper can
 * lose an acknowledged delete in a leader election, and the node, back, would head the
 * queue until our session ends (docs/safety.md).
 *
 * A read-write lock's side is the same machine on nodes "_c_<uuid>-__READ__" or
 * "_c_<uuid>-__WRIT__", ordered by sequence across both kinds (rworder.c): a writer holds at
 * the head, a reader when no writer is ahead of it, and each waits on the last node that
 * keeps it from holding; when that node was the last obstacle and is deleted, it holds
 * without listing again.
 */

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mutex.h"
#include "pnode.h"
#include "rworder.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define MUTEX_BASE      "lock-"
#define MUTEX_NEAR_WRAP (INT32_MAX - (1 << 20))

enum mutex_state {
	MUTEX_IDLE,
	MUTEX_CREATING,  /* our node is being created */
	MUTEX_LISTING,   /* listing the folder to find our place */
	MUTEX_WAITING,   /* watching our predecessor */
	MUTEX_HELD,      /* we are at the head */
	MUTEX_VERIFYING, /* held, checking our node after a reconnect */
};

struct mutex {
	struct zk *zk;
	char *dir;
	struct pnode *node;
	struct mutex_cb cb;
	void *arg;
	enum mutex_side side; /* exclusive (InterProcessMutex), or a read-write lock's side */

	enum mutex_state state;
	int listing;  /* listings in flight */
	char *pred;   /* the predecessor we watch */
	int shortcut; /* the node watched deleted means we hold (mutex_place) */
	int wrapped;
	uint64_t shortcuts;

	/* Each retry of a failing step would warn again: once, then a count (see log.h). */
	struct log_limit lim_gone, lim_list;
};

static const char *mutex_state_names[] = {
    "IDLE", "CREATING", "LISTING", "WAITING", "HELD", "VERIFYING",
};

static void mutex_list(struct mutex *);
static void mutex_restart(struct mutex *);

/* The name of a state, for logs. */
static const char *
mutex_state_name(enum mutex_state state)
{
	return mutex_state_names[state];
}

/* Move to a new state, logging the transition by name. */
static void
mutex_set_state(struct mutex *m, enum mutex_state state)
{
	if (m->state == state)
		return;
	log_debug("mutex %s: %s -> %s", m->dir, mutex_state_name(m->state),
	          mutex_state_name(state));
	m->state = state;
}

/* Our node, held, vanished or was found not ours after a reconnect (pnode.c). */
static void
mutex_lost_cb(struct pnode *p, const char *why, void *arg)
{
	struct mutex *m = arg;

	(void)p;
	mutex_release(m);
	m->cb.lost(why, m->arg);
}

/* Our node, held, is still ours after a reconnect. */
static void
mutex_verified_cb(struct pnode *p, void *arg)
{
	struct mutex *m = arg;

	(void)p;
	mutex_set_state(m, MUTEX_HELD);
	if (m->cb.verified != NULL)
		m->cb.verified(m->arg);
}

/* Write data into our node while we hold (lease.c: when we got it, for status). */
void
mutex_write_held(struct mutex *m, const char *data)
{
	if (m->state == MUTEX_HELD && m->node != NULL)
		pnode_write(m->node, data);
}

/* We are at the head. */
static void
mutex_hold(struct mutex *m)
{
	free(m->pred);
	m->pred = NULL;
	mutex_set_state(m, MUTEX_HELD);
	m->cb.acquired(m->arg);
	/* After the owner's reaction (a job start), off the hand-over's path. */
	if (m->state == MUTEX_HELD)
		pnode_hold(m->node);
}

/* Our node exists: find our place, unless the pipelined listing is on its way. */
static void
mutex_created_cb(struct pnode *p, void *arg)
{
	struct mutex *m = arg;

	(void)p;
	if (m->state != MUTEX_CREATING)
		return;
	mutex_set_state(m, MUTEX_LISTING);
	if (m->listing == 0)
		mutex_list(m);
}

/* Our node cannot be created. */
static void
mutex_create_failed_cb(struct pnode *p, int rc, void *arg)
{
	struct mutex *m = arg;
	char why[256];

	(void)p;
	zk_cancel(m->zk, m);
	m->listing = 0;
	mutex_set_state(m, MUTEX_IDLE);
	snprintf(why, sizeof why, "cannot create a lock node in %s: %s", m->dir, zerror(rc));
	if (m->cb.failed != NULL)
		m->cb.failed(why, m->arg);
}

/* The predecessor's data came back (so the watch is set), or it is gone. */
static void
mutex_pred_cb(const struct zk_reply *reply, void *arg)
{
	struct mutex *m = arg;

	if (m->state != MUTEX_WAITING || m->pred == NULL || strcmp(reply->path, m->pred) != 0)
		return;
	if (reply->rc == ZOK || zk_connection_error(reply->rc))
		return; /* watching; or relist after the reconnect */
	if (reply->rc == ZNONODE && m->shortcut) {
		m->shortcuts++;
		mutex_hold(m);
		return;
	}
	mutex_list(m);
}

/* The predecessor changed or went away. */
static void
mutex_watch_cb(int type, const char *path, void *arg)
{
	struct mutex *m = arg;

	if (m->state != MUTEX_WAITING || m->pred == NULL || strcmp(path, m->pred) != 0)
		return;
	if (type == ZOO_DELETED_EVENT && m->shortcut) {
		log_debug("mutex %s: predecessor (the head) deleted: holding without a listing",
		          m->dir);
		m->shortcuts++;
		mutex_hold(m);
		return;
	}
	mutex_list(m);
}

/*
 * An exclusive contender's place in a listing (sorted, and which node to watch): index 0
 * holds; the shortcut (hold when the node watched is deleted) needs it to be the head, and
 * every name parsed and far from the 2^31 wrap.
 */
static void
mutex_order_exclusive(struct mutex *m, char **sorted, int n, struct rworder_place *pl)
{
	const char *own = pnode_name(m->node);
	int i, ok = 1;
	int64_t seq;

	for (i = 0; i < n; i++) {
		if (znode_sequence(sorted[i], MUTEX_BASE, &seq) != 0)
			ok = 0;
		else if (seq < 0 || seq > MUTEX_NEAR_WRAP) {
			ok = 0;
			if (seq < 0 && !m->wrapped) {
				/* Anyone who may create in the folder names it: quoted. */
				char *q = utf8_quote_str(sorted[i]);

				m->wrapped = 1;
				log_warnx("lock %s: sequence numbers have wrapped past 2^31 (node "
				          "%s); leasekeeper orders them correctly but Curator "
				          "clients on this lock will not: delete the lock folder "
				          "while no one contends for it",
				          m->dir, q);
				free(q);
			}
		}
	}
	znode_sort(sorted, (size_t)n, MUTEX_BASE);
	pl->index = -1;
	for (i = 0; i < n && pl->index < 0; i++) {
		if (strcmp(sorted[i], own) == 0)
			pl->index = i;
	}
	pl->holds = pl->index == 0;
	pl->watch = pl->index - 1;
	pl->shortcut = pl->index == 1 && ok;
}

/* A read-write lock side's place (rworder.c): Curator's order across both kinds. */
static void
mutex_order_rw(struct mutex *m, char **sorted, int n, struct rworder_place *pl)
{
	rworder_sort(sorted, (size_t)n);
	rworder_place(sorted, n, pnode_name(m->node), m->side == MUTEX_WRITE, pl);
	if (pl->wrapped && !m->wrapped) {
		m->wrapped = 1;
		log_warnx("lock %s: sequence numbers have wrapped past 2^31; leasekeeper orders "
		          "them correctly but Curator clients on this lock will not: delete the "
		          "lock folder while no one contends for it",
		          m->dir);
	}
}

/* Find our place in a listing: hold, or watch the node we wait for. */
static void
mutex_place(struct mutex *m, char *const *children, int n)
{
	char **sorted = xcalloc((size_t)n + 1, sizeof *sorted);
	struct rworder_place pl;

	memset(&pl, 0, sizeof pl);
	memcpy(sorted, children, (size_t)n * sizeof *sorted);
	/* Our own nodes whose acknowledged delete ZooKeeper lost: no one holds through them. */
	n = zk_drop_ghosts(m->zk, m->dir, sorted, n, pnode_name(m->node));
	if (m->side == MUTEX_EXCLUSIVE)
		mutex_order_exclusive(m, sorted, n, &pl);
	else
		mutex_order_rw(m, sorted, n, &pl);
	if (pl.index < 0) {
		free(sorted);
		log_warnx_limited(&m->lim_gone,
		                  "lock %s: our node %s is not in the folder any more; contending "
		                  "again",
		                  m->dir, pnode_name(m->node));
		mutex_restart(m);
		return;
	}
	if (pl.holds) {
		free(sorted);
		mutex_hold(m);
		return;
	}
	free(m->pred);
	m->pred = znode_join(m->dir, sorted[pl.watch]);
	m->shortcut = pl.shortcut;
	free(sorted);
	mutex_set_state(m, MUTEX_WAITING);
	log_debug("mutex %s: %sposition %d, watching %s", m->dir,
	          m->side == MUTEX_READ    ? "reader at "
	          : m->side == MUTEX_WRITE ? "writer at "
	                                   : "",
	          pl.index, m->pred);
	zk_get(m->zk, m->pred, mutex_watch_cb, mutex_pred_cb, m);
}

/* A listing of the folder. */
static void
mutex_list_cb(const struct zk_reply *reply, void *arg)
{
	struct mutex *m = arg;

	m->listing--;
	if (m->state != MUTEX_LISTING || m->listing > 0)
		return;
	if (zk_connection_error(reply->rc))
		return; /* listed again after the reconnect */
	if (reply->rc != ZOK) {
		log_warnx_limited(&m->lim_list, "lock %s: cannot list: %s; contending again",
		                  m->dir, zerror(reply->rc));
		mutex_restart(m);
		return;
	}
	mutex_place(m, reply->children, reply->nchildren);
}

/* List the folder. */
static void
mutex_list(struct mutex *m)
{
	mutex_set_state(m, MUTEX_LISTING);
	m->listing++;
	zk_children(m->zk, m->dir, NULL, mutex_list_cb, m);
}

/* Create our node, with the listing pipelined right behind it. */
static void
mutex_start(struct mutex *m)
{
	mutex_set_state(m, MUTEX_CREATING);
	pnode_create(m->node);
	m->listing++;
	zk_children(m->zk, m->dir, NULL, mutex_list_cb, m);
}

/* Our node vanished or the folder misbehaved: drop what we have and start over. */
static void
mutex_restart(struct mutex *m)
{
	zk_cancel(m->zk, m);
	m->listing = 0;
	pnode_delete(m->node);
	mutex_start(m);
}

/*
 * A contender on the lock folder dir, of Curator's InterProcessMutex (MUTEX_EXCLUSIVE: its
 * node "_c_<uuid>-lock-") or one side of its InterProcessReadWriteLock (MUTEX_READ,
 * MUTEX_WRITE: "_c_<uuid>-__READ__" or "-__WRIT__", ordered by rworder.c); data is written
 * into its node.
 */
struct mutex *
mutex_new_side(struct zk *zk, const char *dir, enum mutex_side side, const char *data,
               const struct mutex_cb *cb, void *arg)
{
	static const struct pnode_cb pcb = {mutex_created_cb, mutex_create_failed_cb, mutex_lost_cb,
	                                    mutex_verified_cb};
	struct mutex *m = xcalloc(1, sizeof *m);

	m->zk = zk;
	m->dir = xstrdup(dir);
	m->cb = *cb;
	m->arg = arg;
	m->side = side;
	m->node = pnode_new(zk, dir,
	                    side == MUTEX_READ    ? RWORDER_READ
	                    : side == MUTEX_WRITE ? RWORDER_WRITE
	                                          : MUTEX_BASE,
	                    data, &pcb, m);
	return m;
}

/* An exclusive contender (Curator's InterProcessMutex) on the lock folder dir. */
struct mutex *
mutex_new(struct zk *zk, const char *dir, const char *data, const struct mutex_cb *cb, void *arg)
{
	return mutex_new_side(zk, dir, MUTEX_EXCLUSIVE, data, cb, arg);
}

/* Start contending. */
void
mutex_acquire(struct mutex *m)
{
	if (m->state != MUTEX_IDLE)
		fatalx("mutex_acquire on %s in state %s", m->dir, mutex_state_name(m->state));
	mutex_start(m);
}

/* Stop contending, or give the lock up: delete our node (guaranteed). */
void
mutex_release(struct mutex *m)
{
	zk_cancel(m->zk, m);
	m->listing = 0;
	free(m->pred);
	m->pred = NULL;
	pnode_delete(m->node);
	mutex_set_state(m, MUTEX_IDLE);
}

/* Replace the data written into our node at the next acquire. */
void
mutex_set_data(struct mutex *m, const char *data)
{
	pnode_set_data(m->node, data);
}

/* Release and free. */
void
mutex_free(struct mutex *m)
{
	if (m == NULL)
		return;
	mutex_release(m);
	log_limit_flush(&m->lim_gone);
	log_limit_flush(&m->lim_list);
	pnode_free(m->node);
	free(m->dir);
	free(m);
}

/* Session events, forwarded by the owner. */
void
mutex_session(struct mutex *m, enum zk_event event)
{
	enum mutex_state was = m->state;

	pnode_session(m->node, event);
	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (was == MUTEX_HELD || was == MUTEX_VERIFYING)
			mutex_set_state(m, MUTEX_VERIFYING); /* pnode_session checks the node */
		else if (was == MUTEX_WAITING || (was == MUTEX_LISTING && m->listing == 0))
			mutex_list(m);
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		zk_cancel(m->zk, m);
		m->listing = 0;
		free(m->pred);
		m->pred = NULL;
		mutex_set_state(m, MUTEX_IDLE);
		if (was == MUTEX_HELD || was == MUTEX_VERIFYING)
			m->cb.lost("the session expired", m->arg);
		else if (was != MUTEX_IDLE && m->cb.failed != NULL)
			m->cb.failed("the session expired", m->arg);
		break;
	default:
		break;
	}
}

/* Our node's czxid: the fencing token. */
int64_t
mutex_czxid(const struct mutex *m)
{
	return pnode_czxid(m->node);
}

/* How many times the lock was taken over without a listing. */
uint64_t
mutex_shortcuts(const struct mutex *m)
{
	return m->shortcuts;
}

/* Whether our node is in place and waits behind another holder's (watching it). */
int
mutex_waiting(const struct mutex *m)
{
	return m->state == MUTEX_WAITING;
}
