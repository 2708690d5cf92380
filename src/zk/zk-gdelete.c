/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * zk-gdelete.c: guaranteed deletes: a node of this session deleted, retried across
 * reconnects until the delete succeeds, finds no node, or the session ends (taking its
 * ephemeral nodes with it); with a uuid, whatever node carries Curator's protection prefix.
 *
 * The paths whose delete the server acknowledged (ZOK or ZNONODE) are remembered for the
 * session (deadnames.c): a lock's listing that shows one again shows a delete ZooKeeper lost
 * (a ghost, docs/safety.md), which zk_drop_ghosts leaves out and deletes again.
 */

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"
#include "zk-int.h"
#include "znode.h"

static void zk_gdelete_send(struct zk *, struct zk_gdelete *);

/* Find the in-flight guaranteed delete a reply belongs to. */
static struct zk_gdelete *
zk_gdelete_find(struct zk *zk, const char *path, int protected)
{
	struct zk_gdelete *gd;

	TAILQ_FOREACH(gd, &zk->gdeletes, entry) {
		if (gd->in_flight && (gd->uuid != NULL) == protected && strcmp(gd->path, path) == 0)
			return gd;
	}
	return NULL;
}

/* Forget a guaranteed delete. */
static void
zk_gdelete_free(struct zk *zk, struct zk_gdelete *gd)
{
	TAILQ_REMOVE(&zk->gdeletes, gd, entry);
	free(gd->path);
	free(gd->uuid);
	free(gd);
}

/* Listing for a protected delete: delete every child carrying the uuid. */
static void
zk_gdelete_list_cb(const struct zk_reply *reply, void *arg)
{
	struct zk *zk = arg;
	struct zk_gdelete *gd = zk_gdelete_find(zk, reply->path, 1);
	char *child;
	int i;

	if (gd == NULL)
		return;
	gd->in_flight = 0;
	if (zk_connection_error(reply->rc) && zk->state != ZK_STATE_EXPIRED && !zk->closing) {
		if (zk->state == ZK_STATE_CONNECTED)
			zk_gdelete_send(zk, gd);
		return;
	}
	for (i = 0; reply->rc == ZOK && i < reply->nchildren; i++) {
		if (znode_is_protected(reply->children[i], gd->uuid)) {
			child = znode_join(gd->path, reply->children[i]);
			log_debug("zookeeper: deleting %s left by an abandoned create", child);
			zk_delete_guaranteed(zk, child);
			free(child);
		}
	}
	zk_gdelete_free(zk, gd);
}

/* Completion of a guaranteed delete: done, or kept for the next reconnect. */
static void
zk_gdelete_cb(const struct zk_reply *reply, void *arg)
{
	struct zk *zk = arg;
	struct zk_gdelete *gd = zk_gdelete_find(zk, reply->path, 0);

	if (gd == NULL)
		return;
	gd->in_flight = 0;
	if (zk_connection_error(reply->rc) && zk->state != ZK_STATE_EXPIRED && !zk->closing) {
		log_info("zookeeper: delete of %s interrupted (%s); retrying after reconnect",
		         gd->path, zerror(reply->rc));
		if (zk->state == ZK_STATE_CONNECTED)
			zk_gdelete_send(zk, gd);
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE && reply->rc != ZSESSIONEXPIRED &&
	    reply->rc != ZCLOSING && reply->rc != ZINVALIDSTATE)
		log_warnx_limited(&zk->lim_delete, "zookeeper: cannot delete %s: %s", gd->path,
		                  zerror(reply->rc));
	else
		log_debug("zookeeper: deleted %s (%s)", gd->path, zerror(reply->rc));
	if (reply->rc == ZOK || reply->rc == ZNONODE)
		deadnames_add(&zk->dead, gd->path);
	zk_gdelete_free(zk, gd);
}

static void
zk_gdelete_send(struct zk *zk, struct zk_gdelete *gd)
{
	gd->in_flight = 1;
	if (gd->uuid != NULL)
		zk_children(zk, gd->path, NULL, zk_gdelete_list_cb, zk);
	else
		zk_delete(zk, gd->path, -1, zk_gdelete_cb, zk);
}

/*
 * Delete a node of this session and keep trying across reconnects until the delete
 * succeeds, finds no node, or the session ends (taking its ephemeral nodes with it).
 */
void
zk_delete_guaranteed(struct zk *zk, const char *path)
{
	struct zk_gdelete *gd = xcalloc(1, sizeof *gd);

	gd->path = xstrdup(path);
	TAILQ_INSERT_TAIL(&zk->gdeletes, gd, entry);
	zk_gdelete_send(zk, gd);
}

/*
 * Delete whatever node of this session carries Curator's protection prefix with uuid in
 * folder dir, once any create in flight before this call has landed (the server answers
 * a session's requests in order), retrying across reconnects like zk_delete_guaranteed.
 */
void
zk_delete_protected(struct zk *zk, const char *dir, const char *uuid)
{
	struct zk_gdelete *gd = xcalloc(1, sizeof *gd);

	gd->path = xstrdup(dir);
	gd->uuid = xstrdup(uuid);
	TAILQ_INSERT_TAIL(&zk->gdeletes, gd, entry);
	zk_gdelete_send(zk, gd);
}

/* Whether a guaranteed delete of path (not a protected one) is under way. */
static int
zk_gdelete_pending(struct zk *zk, const char *path)
{
	struct zk_gdelete *gd;

	TAILQ_FOREACH(gd, &zk->gdeletes, entry) {
		if (gd->uuid == NULL && strcmp(gd->path, path) == 0)
			return 1;
	}
	return 0;
}

/*
 * Leave out of a listing of dir (names, n of them: compacted in place; the new count is
 * returned) every node this session deleted with an acknowledged delete but for own (our
 * current node, NULL if none): ZooKeeper lost that delete. Its hold is over, so it stands
 * for no one; it is deleted again, and reported once.
 */
int
zk_drop_ghosts(struct zk *zk, const char *dir, char **names, int n, const char *own)
{
	char *path;
	int i, k, slot;

	for (i = k = 0; i < n; i++) {
		path = znode_join(dir, names[i]);
		slot = own != NULL && strcmp(names[i], own) == 0 ? -1
		                                                 : deadnames_find(&zk->dead, path);
		if (slot < 0) {
			names[k++] = names[i];
			free(path);
			continue;
		}
		if (deadnames_warn_once(&zk->dead, slot))
			log_warnx(
			    "lock %s: node %s, which this worker deleted (the delete was "
			    "acknowledged), came back: ZooKeeper lost the delete; deleting it "
			    "again, and not waiting behind it",
			    dir, names[i]);
		if (!zk_gdelete_pending(zk, path))
			zk_delete_guaranteed(zk, path);
		free(path);
	}
	return k;
}

/* Retry every guaranteed delete that is not in flight. */
void
zk_gdelete_retry(struct zk *zk)
{
	struct zk_gdelete *gd;

	TAILQ_FOREACH(gd, &zk->gdeletes, entry) {
		if (!gd->in_flight)
			zk_gdelete_send(zk, gd);
	}
}

/* Drop guaranteed deletes: the session that owned the nodes is gone. */
void
zk_gdelete_clear(struct zk *zk)
{
	struct zk_gdelete *gd;

	while ((gd = TAILQ_FIRST(&zk->gdeletes)) != NULL)
		zk_gdelete_free(zk, gd);
	deadnames_clear(&zk->dead);
}
