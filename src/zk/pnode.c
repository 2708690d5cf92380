/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * pnode.c: one protected ephemeral sequential node, created the way Curator creates it.
 *
 * The node is named "_c_<uuid>-<base>" and the server appends the sequence. When the
 * connection drops while the create is in flight, the create may or may not have
 * happened; creating again could leave an orphan that holds a place in the queue
 * forever (until the session ends). So after the reconnect we list the folder and look
 * for our uuid, and accept a node only if its ephemeralOwner is our session (Curator
 * 5's rule), before creating anew. Missing parents are created as containers, as
 * Curator's creatingParentContainersIfNeeded does, so that empty lock folders go away.
 *
 * A node its owner holds through (the head of a mutex, a counted lease) is watched: deleted
 * by anyone but us, the hold is lost. After each reconnect it is checked to be there and
 * still our session's, since what happened to it while we were away is not known.
 *
 * Deleting, or freeing, never leaves a node behind: a created node is deleted with a
 * guaranteed delete, and a create still in flight is followed by a protected delete
 * that finds the node by uuid once the create has landed.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pnode.h"
#include "xmalloc.h"
#include "znode.h"

enum pnode_state {
	PNODE_IDLE,       /* nothing created */
	PNODE_CREATING,   /* create (or parent creation) in flight */
	PNODE_RECOVERING, /* connection lost during create: find our node by uuid */
	PNODE_CREATED,    /* the node exists and belongs to our session */
	PNODE_HELD,       /* the owner holds through it: watched, deleted by anyone = lost */
	PNODE_VERIFYING,  /* held, checking after a reconnect that it is still ours */
};

struct pnode {
	struct zk *zk;
	char *dir;
	char *base;
	char *data;
	struct pnode_cb cb;
	void *arg;

	enum pnode_state state;
	char uuid[ZNODE_UUID_LEN + 1];
	char *path;
	int64_t czxid;
	int parents; /* parent creates in flight */

	/* A refused create is retried by each new attempt: warn once, then count (log.h). */
	struct log_limit lim_parent, lim_create;
};

static const char *pnode_state_names[] = {"IDLE",    "CREATING", "RECOVERING",
                                          "CREATED", "HELD",     "VERIFYING"};

/* The name of a state, for logs. */
static const char *
pnode_state_name(enum pnode_state state)
{
	return pnode_state_names[state];
}

/* Move to a new state, logging the transition. */
static void
pnode_set_state(struct pnode *p, enum pnode_state state)
{
	if (p->state == state)
		return;
	log_debug("pnode %s/_c_%.8s: %s -> %s", p->dir, p->uuid, pnode_state_name(p->state),
	          pnode_state_name(state));
	p->state = state;
}

/* A node under dir, protected, with its data. */
struct pnode *
pnode_new(struct zk *zk, const char *dir, const char *base, const char *data,
          const struct pnode_cb *cb, void *arg)
{
	struct pnode *p = xcalloc(1, sizeof *p);

	p->zk = zk;
	p->dir = xstrdup(dir);
	p->base = xstrdup(base);
	p->data = xstrdup(data != NULL ? data : "");
	p->cb = *cb;
	p->arg = arg;
	p->state = PNODE_IDLE;
	return p;
}

/*
 * Write data into our node while it exists (its name, so its place in the queue, stays):
 * for status only, so the answer is not awaited. A change of data fires our own watch,
 * which only watches again.
 */
void
pnode_write(struct pnode *p, const char *data)
{
	if (p->state != PNODE_CREATED && p->state != PNODE_HELD)
		return;
	zk_set(p->zk, p->path, data, (int)strlen(data), -1, NULL, NULL);
}

/* Replace the data written at the next create. */
void
pnode_set_data(struct pnode *p, const char *data)
{
	free(p->data);
	p->data = xstrdup(data);
}

static void pnode_send_create(struct pnode *);

/* Report a failure to the owner, back to IDLE. */
static void
pnode_fail(struct pnode *p, int rc)
{
	pnode_set_state(p, PNODE_IDLE);
	if (p->cb.failed != NULL)
		p->cb.failed(p, rc, p->arg);
}

/* Adopt a node as ours. */
static void
pnode_adopt(struct pnode *p, const char *path, int64_t czxid)
{
	free(p->path);
	p->path = xstrdup(path);
	p->czxid = czxid;
	pnode_set_state(p, PNODE_CREATED);
	p->cb.created(p, p->arg);
}

/* A parent container was created (or already existed). */
static void
pnode_parent_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;

	p->parents--;
	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && p->state == PNODE_CREATING) {
		if (zk_connection_error(reply->rc)) {
			pnode_set_state(p, PNODE_RECOVERING);
			return;
		}
		log_warnx_limited(&p->lim_parent, "cannot create %s: %s", reply->path,
		                  zerror(reply->rc));
		p->parents = 0;
		zk_cancel(p->zk, p);
		pnode_fail(p, reply->rc);
		return;
	}
	if (p->parents == 0 && p->state == PNODE_CREATING)
		pnode_send_create(p);
}

/* Create every ancestor of our node as a container, in order, in one pipeline. */
static void
pnode_create_parents(struct pnode *p)
{
	char *path = xstrdup(p->dir), *slash;

	for (slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash != NULL)
			*slash = '\0';
		p->parents++;
		zk_create_node(p->zk, path, NULL, -1, ZOO_CONTAINER, pnode_parent_cb, p);
		if (slash == NULL)
			break;
		*slash = '/';
	}
	free(path);
}

/* The create's answer. */
static void
pnode_create_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;

	if (p->state != PNODE_CREATING)
		return;
	if (reply->rc == ZOK) {
		pnode_adopt(p, reply->created, reply->stat != NULL ? reply->stat->czxid : 0);
		return;
	}
	if (reply->rc == ZNONODE) {
		pnode_create_parents(p);
		return;
	}
	if (zk_connection_error(reply->rc)) {
		log_info("connection lost while creating a node in %s; will look for it by uuid "
		         "after reconnecting",
		         p->dir);
		pnode_set_state(p, PNODE_RECOVERING);
		return;
	}
	log_warnx_limited(&p->lim_create, "cannot create a node in %s: %s", p->dir,
	                  zerror(reply->rc));
	pnode_fail(p, reply->rc);
}

static void
pnode_send_create(struct pnode *p)
{
	char *path;

	xasprintf(&path, "%s/%s%s-%s", p->dir, ZNODE_PROTECTED_PREFIX, p->uuid, p->base);
	zk_create_node(p->zk, path, p->data, (int)strlen(p->data), ZOO_EPHEMERAL_SEQUENTIAL,
	               pnode_create_cb, p);
	free(path);
}

/* Create the node (a new uuid each time). */
void
pnode_create(struct pnode *p)
{
	if (p->state != PNODE_IDLE)
		fatalx("pnode_create in state %s", pnode_state_name(p->state));
	znode_uuid(p->uuid);
	pnode_set_state(p, PNODE_CREATING);
	pnode_send_create(p);
}

/* The owner check of a node found by uuid after a connection loss. */
static void
pnode_owner_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;

	if (p->state != PNODE_RECOVERING)
		return;
	if (zk_connection_error(reply->rc))
		return; /* try again after the next reconnect */
	if (reply->rc == ZOK && reply->stat != NULL &&
	    reply->stat->ephemeralOwner == zk_session_id(p->zk)) {
		log_info("found our node %s after the connection loss", reply->path);
		pnode_adopt(p, reply->path, reply->stat->czxid);
		return;
	}
	/* Gone, or not ours: create anew. */
	pnode_set_state(p, PNODE_CREATING);
	pnode_send_create(p);
}

/* The listing of the folder, looking for our uuid. */
static void
pnode_recover_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;
	char *path;
	int i;

	if (p->state != PNODE_RECOVERING || zk_connection_error(reply->rc))
		return;
	for (i = 0; reply->rc == ZOK && i < reply->nchildren; i++) {
		if (znode_is_protected(reply->children[i], p->uuid)) {
			path = znode_join(p->dir, reply->children[i]);
			zk_exists(p->zk, path, pnode_owner_cb, p);
			free(path);
			return;
		}
	}
	pnode_set_state(p, PNODE_CREATING);
	if (reply->rc == ZNONODE)
		pnode_create_parents(p);
	else
		pnode_send_create(p);
}

/* The owner's hold is gone with the node: tell it why (the owner may delete or free us). */
static void
pnode_lost(struct pnode *p, const char *path, const char *how)
{
	char why[256];

	/* "lock node ..." or "lease node ...": the base without its trailing '-'. */
	snprintf(why, sizeof why, "%.*s node %s %s", (int)strcspn(p->base, "-"), p->base, path,
	         how);
	p->cb.lost(p, why, p->arg);
}

static void pnode_watch_own(struct pnode *);

/* Our held node changed or went away. */
static void
pnode_own_watch_cb(int type, const char *path, void *arg)
{
	struct pnode *p = arg;

	if ((p->state != PNODE_HELD && p->state != PNODE_VERIFYING) || strcmp(path, p->path) != 0)
		return;
	if (type == ZOO_DELETED_EVENT)
		pnode_lost(p, p->path, "vanished while held");
	else
		pnode_watch_own(p);
}

/* The answer to the read that set the watch: already gone is lost too. */
static void
pnode_own_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;

	if (p->state == PNODE_HELD && reply->rc == ZNONODE)
		pnode_lost(p, p->path, "vanished while held");
}

/* Watch our node (a get-data watch, which a vanished node does not leave behind). */
static void
pnode_watch_own(struct pnode *p)
{
	zk_get(p->zk, p->path, pnode_own_watch_cb, pnode_own_cb, p);
}

/* The owner holds through our node from now on: watch it. */
void
pnode_hold(struct pnode *p)
{
	if (p->state != PNODE_CREATED)
		fatalx("pnode_hold in state %s", pnode_state_name(p->state));
	pnode_set_state(p, PNODE_HELD);
	pnode_watch_own(p);
}

/* After a reconnect: is our held node still there, and still our session's? */
static void
pnode_verify_cb(const struct zk_reply *reply, void *arg)
{
	struct pnode *p = arg;

	if (p->state != PNODE_VERIFYING || zk_connection_error(reply->rc))
		return;
	if (reply->rc == ZOK && reply->stat != NULL &&
	    reply->stat->ephemeralOwner == zk_session_id(p->zk)) {
		pnode_set_state(p, PNODE_HELD);
		if (p->cb.verified != NULL)
			p->cb.verified(p, p->arg);
		return;
	}
	pnode_lost(p, reply->path, reply->rc == ZOK ? "belongs to another session" : "vanished");
}

/* Session events, forwarded by the owner. */
void
pnode_session(struct pnode *p, enum zk_event event)
{
	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (p->state == PNODE_RECOVERING)
			zk_children(p->zk, p->dir, NULL, pnode_recover_cb, p);
		else if (p->state == PNODE_HELD || p->state == PNODE_VERIFYING) {
			pnode_set_state(p, PNODE_VERIFYING);
			zk_exists(p->zk, p->path, pnode_verify_cb, p);
		}
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		/* The node, if any, went with the session. */
		zk_cancel(p->zk, p);
		p->parents = 0;
		pnode_set_state(p, PNODE_IDLE);
		break;
	default:
		break;
	}
}

/* Delete what we created or may have created, and go back to IDLE. */
void
pnode_delete(struct pnode *p)
{
	zk_cancel(p->zk, p);
	p->parents = 0;
	switch (p->state) {
	case PNODE_CREATED:
	case PNODE_HELD:
	case PNODE_VERIFYING:
		zk_delete_guaranteed(p->zk, p->path);
		break;
	case PNODE_CREATING:
	case PNODE_RECOVERING:
		zk_delete_protected(p->zk, p->dir, p->uuid);
		break;
	case PNODE_IDLE:
		break;
	}
	pnode_set_state(p, PNODE_IDLE);
}

/* Delete (see pnode_delete) and free. */
void
pnode_free(struct pnode *p)
{
	if (p == NULL)
		return;
	pnode_delete(p);
	log_limit_flush(&p->lim_parent);
	log_limit_flush(&p->lim_create);
	free(p->dir);
	free(p->base);
	free(p->data);
	free(p->path);
	free(p);
}

/* The name (last element) of the created node, or NULL. */
const char *
pnode_name(const struct pnode *p)
{
	return p->state >= PNODE_CREATED ? znode_basename(p->path) : NULL;
}

/* The czxid of the created node: the fencing token. */
int64_t
pnode_czxid(const struct pnode *p)
{
	return p->czxid;
}
