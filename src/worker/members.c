/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * members.c: the live workers and the jobs each carries, a watched view of <root>/workers.
 *
 * Each worker's ephemeral registration lists its jobs (and "drained", if it is). Ranking a
 * tick (rank.c) needs the workers that carry the job; reading them at each tick would cost
 * a read per worker per tick, so the view is kept instead: the folder's children are
 * listed with a watch, each child read with a watch, and read again only when it changes.
 * A worker's registration changes at a reload or a drain; the folder when a worker comes
 * or goes. Every request carries the view itself as its argument, and a reply or a watch
 * finds its entry by path, so that an entry can go while a request for it is in flight.
 *
 * The view may lag or be wrong (data anyone can write): it only orders who contends first,
 * never who runs (the claim does), so a wrong view costs a delay or a useless contention.
 */

#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "layout.h"
#include "log.h"
#include "members.h"
#include "rank.h"
#include "xmalloc.h"
#include "znode.h"

struct members_entry {
	char *node;
	char *path;
	struct rank_member m;
	int loaded;   /* read at least once */
	int pending;  /* a read is in flight */
	int watching; /* a data watch is set */
	int seen;     /* listed by the last listing */
	TAILQ_ENTRY(members_entry) entry;
};

struct members {
	struct zk *zk;
	char *path; /* <root>/workers */
	int started;
	int listed;        /* listed at least once in this session */
	int list_pending;  /* a listing is in flight */
	int list_watching; /* a child watch is set */
	int resync;        /* a request failed with the connection: again after the reconnect */
	int overflow;      /* the last listing had more than MEMBERS_MAX children */
	size_t count;
	void (*changed)(void *arg); /* (may be NULL) the view changed */
	void *changed_arg;
	TAILQ_HEAD(, members_entry) entries;
};

static struct log_limit members_lim;

static void members_list(struct members *);

/* The entry of a registration's path, or NULL. */
static struct members_entry *
members_find(struct members *ms, const char *path)
{
	struct members_entry *e;

	TAILQ_FOREACH(e, &ms->entries, entry) {
		if (strcmp(e->path, path) == 0)
			return e;
	}
	return NULL;
}

/* Tell the owner that the view changed. */
static void
members_changed(struct members *ms)
{
	if (ms->changed != NULL)
		ms->changed(ms->changed_arg);
}

/* Forget an entry. */
static void
members_remove(struct members *ms, struct members_entry *e)
{
	members_changed(ms);
	TAILQ_REMOVE(&ms->entries, e, entry);
	ms->count--;
	rank_member_free(&e->m);
	free(e->node);
	free(e->path);
	free(e);
}

/* Forget every entry (the session went, and its watches with it). */
static void
members_clear(struct members *ms)
{
	struct members_entry *e;

	while ((e = TAILQ_FIRST(&ms->entries)) != NULL)
		members_remove(ms, e);
	zk_cancel(ms->zk, ms);
	ms->listed = ms->list_pending = ms->list_watching = ms->resync = ms->overflow = 0;
	members_changed(ms);
}

/* A new view of path's workers, empty until members_start. */
struct members *
members_new(struct zk *zk, const char *root)
{
	struct members *ms = xcalloc(1, sizeof *ms);

	ms->zk = zk;
	ms->path = layout_workers(root);
	TAILQ_INIT(&ms->entries);
	return ms;
}

/* Free the view. */
void
members_free(struct members *ms)
{
	if (ms == NULL)
		return;
	ms->changed = NULL;
	members_clear(ms);
	free(ms->path);
	free(ms);
}

static void members_get_cb(const struct zk_reply *, void *);
static void members_data_watch_cb(int, const char *, void *);

/* Read an entry, watching it unless a watch is set already. */
static void
members_read(struct members *ms, struct members_entry *e)
{
	if (e->pending)
		return;
	e->pending = 1;
	zk_get(ms->zk, e->path, e->watching ? NULL : members_data_watch_cb, members_get_cb, ms);
}

/* Whether two registrations carry the same jobs with the same flags. */
static int
members_same(const struct rank_member *a, const struct rank_member *b)
{
	size_t i;

	if (a->drained != b->drained || a->unhealthy != b->unhealthy || a->partial != b->partial ||
	    a->njobs != b->njobs)
		return 0;
	for (i = 0; i < a->njobs; i++) {
		if (strcmp(a->jobs[i], b->jobs[i]) != 0)
			return 0;
	}
	return 1;
}

/* A registration as read. */
static void
members_get_cb(const struct zk_reply *reply, void *arg)
{
	struct members *ms = arg;
	struct members_entry *e = members_find(ms, reply->path);
	struct rank_member old;

	if (e == NULL)
		return; /* gone meanwhile */
	e->pending = 0;
	if (reply->rc == ZNONODE) {
		members_remove(ms, e);
		return;
	}
	if (zk_connection_error(reply->rc)) {
		ms->resync = 1;
		return;
	}
	if (reply->rc != ZOK) {
		log_warnx_limited(&members_lim, "cannot read %s: %s", e->path, zerror(reply->rc));
		return;
	}
	e->watching = 1;
	old = e->m;
	memset(&e->m, 0, sizeof e->m);
	if (rank_parse_member(reply->value, reply->value_len > 0 ? (size_t)reply->value_len : 0,
	                      &e->m) != 0)
		log_debug("members: %s is not a registration we can read: carrying nothing",
		          e->path);
	/* A rewrite that changed neither the jobs nor a flag (its clock sample) is no change. */
	if (!e->loaded || !members_same(&old, &e->m))
		members_changed(ms);
	rank_member_free(&old);
	e->loaded = 1;
}

/* A registration changed or went. */
static void
members_data_watch_cb(int type, const char *path, void *arg)
{
	struct members *ms = arg;
	struct members_entry *e = members_find(ms, path);

	if (e == NULL)
		return;
	e->watching = 0;
	if (type == ZOO_DELETED_EVENT)
		members_remove(ms, e);
	else
		members_read(ms, e);
}

/* The folder's children as listed: add the new, drop the gone. */
static void
members_list_cb(const struct zk_reply *reply, void *arg)
{
	struct members *ms = arg;
	struct members_entry *e, *next;
	char *path;
	int i;

	ms->list_pending = 0;
	if (zk_connection_error(reply->rc)) {
		ms->resync = 1;
		return;
	}
	if (reply->rc != ZOK) {
		log_warnx_limited(&members_lim, "cannot list %s: %s", ms->path, zerror(reply->rc));
		return;
	}
	ms->list_watching = 1;
	TAILQ_FOREACH(e, &ms->entries, entry)
		e->seen = 0;
	ms->overflow = 0;
	for (i = 0; i < reply->nchildren; i++) {
		if (strlen(reply->children[i]) > RANK_MAX_NAME)
			continue;
		path = znode_join(ms->path, reply->children[i]);
		if ((e = members_find(ms, path)) == NULL) {
			if (ms->count >= MEMBERS_MAX) {
				log_warnx_limited(
				    &members_lim,
				    "%s: more than %d workers: the others are not ranked", ms->path,
				    MEMBERS_MAX);
				ms->overflow = 1;
				free(path);
				continue;
			}
			e = xcalloc(1, sizeof *e);
			e->node = xstrdup(reply->children[i]);
			e->path = path;
			TAILQ_INSERT_TAIL(&ms->entries, e, entry);
			ms->count++;
			members_read(ms, e);
		} else
			free(path);
		e->seen = 1;
	}
	TAILQ_FOREACH_SAFE(e, &ms->entries, entry, next) {
		if (!e->seen)
			members_remove(ms, e);
	}
	ms->listed = 1;
	members_changed(ms);
}

/* The folder's children changed. */
static void
members_list_watch_cb(int type, const char *path, void *arg)
{
	struct members *ms = arg;

	(void)type;
	(void)path;
	ms->list_watching = 0;
	members_list(ms);
}

/* List the folder, watching it unless a watch is set already. */
static void
members_list(struct members *ms)
{
	if (ms->list_pending)
		return;
	ms->list_pending = 1;
	zk_children(ms->zk, ms->path, ms->list_watching ? NULL : members_list_watch_cb,
	            members_list_cb, ms);
}

/* Registered: keep the view from now on (again after each new session). */
void
members_start(struct members *ms)
{
	ms->started = 1;
	if (!ms->listed || !ms->list_watching)
		members_list(ms);
}

/* Session events: read again what failed with the connection; nothing survives an expiry. */
void
members_session(struct members *ms, enum zk_event event)
{
	struct members_entry *e;

	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (!ms->resync)
			break;
		ms->resync = 0;
		if (ms->started)
			members_list(ms);
		TAILQ_FOREACH(e, &ms->entries, entry) {
			if (!e->loaded || !e->watching)
				members_read(ms, e);
		}
		break;
	case ZK_EVENT_SESSION_NEW:
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		members_clear(ms);
		ms->started = 0;
		break;
	default:
		break;
	}
}

/* Whether the view is kept (listed at least once in this session). */
int
members_ready(const struct members *ms)
{
	return ms->listed;
}

/*
 * The live workers that carry job and are neither drained nor unhealthy, as read so far
 * (caller frees the array, not the names: they are valid until the view next changes).
 */
const char **
members_carrying(const struct members *ms, const char *job, size_t *n)
{
	const struct members_entry *e;
	const char **out = xcalloc(ms->count > 0 ? ms->count : 1, sizeof *out);

	*n = 0;
	TAILQ_FOREACH(e, &ms->entries, entry) {
		if (e->loaded && !e->m.drained && !e->m.unhealthy && rank_member_has(&e->m, job))
			out[(*n)++] = e->node;
	}
	return out;
}

/* Call cb(arg) whenever the view changes (a registration read, gone, the view cleared). */
void
members_on_change(struct members *ms, void (*cb)(void *arg), void *arg)
{
	ms->changed = cb;
	ms->changed_arg = arg;
}

/*
 * Whether the view is complete: listed in this session, every registration listed read at
 * least once (a re-read after a change keeps what was read last), none left out past
 * MEMBERS_MAX, nothing to read again after a reconnect; whole: and every registration read
 * whole (none unreadable, no job name dropped).
 */
int
members_settled(const struct members *ms, int whole)
{
	const struct members_entry *e;

	if (!ms->listed || ms->resync || ms->overflow)
		return 0;
	TAILQ_FOREACH(e, &ms->entries, entry) {
		if (!e->loaded || (whole && e->m.partial))
			return 0;
	}
	return 1;
}

/* How many live workers carry job and are not drained, healthy or not, as read so far. */
size_t
members_carriers(const struct members *ms, const char *job)
{
	const struct members_entry *e;
	size_t n = 0;

	TAILQ_FOREACH(e, &ms->entries, entry) {
		if (e->loaded && !e->m.drained && rank_member_has(&e->m, job))
			n++;
	}
	return n;
}
