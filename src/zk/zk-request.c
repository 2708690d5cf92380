/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * zk-request.c: the session's requests: paced into the library, indexed by owner, and
 * their completions recorded for zk_dispatch.
 *
 * At most ZK_INFLIGHT_MAX requests are in the library's hands; the others wait in one FIFO
 * queue and go out, in order, as answers come back (the server answers a session's
 * requests in order, and callers rely on it: a create queued after another finds it). So a
 * burst of thousands (a reload of thousands of jobs) never fills the library's send queue,
 * and a heartbeat, which jumps our queue, waits behind at most ZK_INFLIGHT_MAX. A request's
 * send time, for the lease deadline, is when it is handed to the library: never later than
 * it reaches the server.
 *
 * Every request and watch is also listed under its owner (the callbacks' arg), found by a
 * hash of the pointer, so that forgetting an owner that goes away (zk_cancel) costs its own
 * requests and watches, not every one of the session; and every watch under its path, so
 * that a watch event costs its own subscribers.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "clock.h"
#include "xmalloc.h"
#include "zk-int.h"

/* The bucket of an owner's pointer (Fibonacci hashing). */
static size_t
zk_request_hash(const struct zk *zk, const void *arg)
{
	uint64_t h = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (zk->nbuckets - 1);
}

/* The owner of arg, made if create and there is none; NULL otherwise. */
static struct zk_owner *
zk_request_owner(struct zk *zk, void *arg, int create)
{
	struct zk_owner *o, **old;
	size_t i, n;

	if (zk->nbuckets > 0) {
		for (o = zk->owners[zk_request_hash(zk, arg)]; o != NULL; o = o->next)
			if (o->arg == arg)
				return o;
	}
	if (!create)
		return NULL;
	if (zk->nowners + 1 > zk->nbuckets) {
		/* Keep the chains short: grow to twice the owners, rehashing each. */
		old = zk->owners;
		n = zk->nbuckets;
		zk->nbuckets = n == 0 ? 64 : n * 2;
		zk->owners = xcalloc(zk->nbuckets, sizeof *zk->owners);
		for (i = 0; i < n; i++) {
			while ((o = old[i]) != NULL) {
				old[i] = o->next;
				o->next = zk->owners[zk_request_hash(zk, o->arg)];
				zk->owners[zk_request_hash(zk, o->arg)] = o;
			}
		}
		free(old);
	}
	o = xcalloc(1, sizeof *o);
	o->arg = arg;
	TAILQ_INIT(&o->ops);
	TAILQ_INIT(&o->subs);
	o->next = zk->owners[zk_request_hash(zk, arg)];
	zk->owners[zk_request_hash(zk, arg)] = o;
	zk->nowners++;
	return o;
}

/* Forget an owner that has nothing left. */
static void
zk_request_owner_put(struct zk *zk, struct zk_owner *o)
{
	struct zk_owner **p;

	if (o == NULL || !TAILQ_EMPTY(&o->ops) || !TAILQ_EMPTY(&o->subs))
		return;
	for (p = &zk->owners[zk_request_hash(zk, o->arg)]; *p != NULL; p = &(*p)->next) {
		if (*p == o) {
			*p = o->next;
			zk->nowners--;
			free(o);
			return;
		}
	}
}

/* The wall clock in microseconds. */
static int64_t
zk_request_wall_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* Queue a completed op for dispatch. */
static void
zk_request_done(struct zk_op *op, int rc)
{
	struct zk_record *r;

	op->rc = rc;
	op->recv_us = zk_request_wall_us();
	if (op->issued) {
		op->issued = 0;
		op->zk->inflight--;
	}
	r = xcalloc(1, sizeof *r);
	r->kind = ZK_RECORD_REPLY;
	r->op = op;
	TAILQ_INSERT_TAIL(&op->zk->records, r, entry);
}

/* Node watcher, shared by every watch of this handle; session events are filtered. */
void
zk_request_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk *zk = ctx;
	struct zk_record *r;

	(void)state;
	if (zk == NULL || zh != zk->zh || type == ZOO_SESSION_EVENT || path == NULL)
		return;
	r = xcalloc(1, sizeof *r);
	r->kind = ZK_RECORD_WATCH;
	r->type = type;
	r->path = xstrdup(path);
	TAILQ_INSERT_TAIL(&zk->records, r, entry);
}

static void
zk_request_stat_cb(int rc, const struct Stat *stat, const void *data)
{
	struct zk_op *op = (struct zk_op *)data;

	if (stat != NULL && (rc == ZOK || op->type == ZK_OP_SET)) {
		op->stat = *stat;
		op->has_stat = rc == ZOK;
	}
	zk_request_done(op, rc);
}

static void
zk_request_data_cb(int rc, const char *value, int value_len, const struct Stat *stat,
                   const void *data)
{
	struct zk_op *op = (struct zk_op *)data;

	if (rc == ZOK) {
		if (value != NULL && value_len > 0) {
			op->value = xmalloc((size_t)value_len + 1);
			memcpy(op->value, value, (size_t)value_len);
			op->value[value_len] = '\0';
			op->value_len = value_len;
		}
		if (stat != NULL) {
			op->stat = *stat;
			op->has_stat = 1;
		}
	}
	zk_request_done(op, rc);
}

static void
zk_request_create_cb(int rc, const char *created, const struct Stat *stat, const void *data)
{
	struct zk_op *op = (struct zk_op *)data;

	if (rc == ZOK) {
		if (created != NULL)
			op->created = xstrdup(created);
		if (stat != NULL) {
			op->stat = *stat;
			op->has_stat = 1;
		}
	}
	zk_request_done(op, rc);
}

static void
zk_request_children_cb(int rc, const struct String_vector *strings, const struct Stat *stat,
                       const void *data)
{
	struct zk_op *op = (struct zk_op *)data;
	int i;

	if (rc == ZOK && strings != NULL) {
		op->nchildren = strings->count;
		op->children = xcalloc((size_t)strings->count + 1, sizeof *op->children);
		for (i = 0; i < strings->count; i++)
			op->children[i] = xstrdup(strings->data[i]);
		if (stat != NULL) {
			op->stat = *stat;
			op->has_stat = 1;
		}
	}
	zk_request_done(op, rc);
}

static void
zk_request_acl_cb(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data)
{
	struct zk_op *op = (struct zk_op *)data;
	int i;

	if (rc == ZOK && acl != NULL && acl->count > 0) {
		op->acl.count = acl->count;
		op->acl.data = xcalloc((size_t)acl->count, sizeof *op->acl.data);
		for (i = 0; i < acl->count; i++) {
			op->acl.data[i].perms = acl->data[i].perms;
			op->acl.data[i].id.scheme = xstrdup(acl->data[i].id.scheme);
			op->acl.data[i].id.id = xstrdup(acl->data[i].id.id);
		}
	}
	if (rc == ZOK && stat != NULL) {
		op->stat = *stat;
		op->has_stat = 1;
	}
	zk_request_done(op, rc);
}

static void
zk_request_void_cb(int rc, const void *data)
{
	zk_request_done((struct zk_op *)data, rc);
}

/* A write-create's answer: the first failed operation's error, or the node created. */
static void
zk_request_multi_cb(int rc, const void *data)
{
	struct zk_op *op = (struct zk_op *)data;
	struct zk_op_second *s = op->second;
	int i;

	if (rc == ZOK) {
		op->created = xstrdup(s->created[0]);
		op->createds = xcalloc((size_t)s->n, sizeof *op->createds);
		for (i = 0; i < s->n; i++)
			op->createds[i] = xstrdup(s->created[i]);
		if (op->flags_or_version != ZK_WRITE_CREATES) {
			op->stat = s->stat; /* the set's */
			op->has_stat = 1;
		}
	} else
		for (i = 0; i < s->n + 1; i++)
			if (s->results[i].err != ZOK &&
			    s->results[i].err != ZRUNTIMEINCONSISTENCY) {
				rc = s->results[i].err;
				break;
			}
	zk_request_done(op, rc);
}

/* Issue a write-create: the write and the creates in one multi. */
static int
zk_request_issue_multi(struct zk *zk, struct zk_op *op)
{
	struct zk_op_second *s = op->second;
	int i, v = op->flags_or_version;

	memset(s->results, 0, (size_t)(s->n + 1) * sizeof *s->results);
	if (v == ZK_WRITE_CREATES)
		zoo_create_op_init(&s->ops[0], op->path, op->data, op->len,
		                   zk_acl_for(zk, op->path), ZOO_PERSISTENT, NULL, 0);
	else
		zoo_set_op_init(&s->ops[0], op->path, op->data, op->len, v, &s->stat);
	for (i = 0; i < s->n; i++) {
		s->created[i][0] = '\0';
		zoo_create_op_init(&s->ops[i + 1], s->path, s->data[i], s->len[i],
		                   zk_acl_for(zk, s->path), s->flags, s->created[i],
		                   (int)sizeof s->created[i]);
	}
	return zoo_amulti(zk->zh, s->n + 1, s->ops, s->results, zk_request_multi_cb, op);
}

/* Free an op and its results, and take it off its owner. */
void
zk_request_op_free(struct zk_op *op)
{
	struct zk_owner *o = op->owner;
	int i;

	if (o != NULL) {
		TAILQ_REMOVE(&o->ops, op, owner_entry);
		zk_request_owner_put(op->zk, o);
	}
	for (i = 0; i < op->nchildren; i++)
		free(op->children[i]);
	free(op->children);
	for (i = 0; i < op->acl.count; i++) {
		free(op->acl.data[i].id.scheme);
		free(op->acl.data[i].id.id);
	}
	free(op->acl.data);
	if (op->second != NULL) {
		for (i = 0; i < op->second->n; i++) {
			free(op->second->data[i]);
			free(op->createds != NULL ? op->createds[i] : NULL);
		}
		free(op->second->path);
		free(op->second->data);
		free(op->second->len);
		free(op->second->ops);
		free(op->second->results);
		free(op->second->created);
		free(op->second);
	}
	free(op->createds);
	free(op->created);
	free(op->value);
	free(op->data);
	free(op->path);
	free(op);
}

/* Hand one op to the library; one it refuses at once completes with its rc. */
static void
zk_request_issue(struct zk *zk, struct zk_op *op)
{
	const char *path = op->path;
	int rc, v = op->flags_or_version;

	op->issued = 1;
	zk->inflight++;
	op->sent_ns = clock_now_ns();
	op->sent_us = zk_request_wall_us();
	op->epoch = zk->epoch;
	switch (op->type) {
	case ZK_OP_CREATE:
		/* With credentials, what we create is ours alone (digest auth: the same user). */
		rc = zoo_acreate2(zk->zh, path, op->data, op->len,
		                  op->acl.count > 0 ? &op->acl : zk_acl_for(zk, path), v,
		                  zk_request_create_cb, op);
		break;
	case ZK_OP_GET:
		rc = op->wcb != NULL ? zoo_awget(zk->zh, path, zk_request_node_watcher, zk,
		                                 zk_request_data_cb, op)
		                     : zoo_aget(zk->zh, path, 0, zk_request_data_cb, op);
		break;
	case ZK_OP_EXISTS:
		rc = zoo_aexists(zk->zh, path, 0, zk_request_stat_cb, op);
		break;
	case ZK_OP_CHILDREN:
		rc = op->wcb != NULL
		         ? zoo_awget_children2(zk->zh, path, zk_request_node_watcher, zk,
		                               zk_request_children_cb, op)
		         : zoo_aget_children2(zk->zh, path, 0, zk_request_children_cb, op);
		break;
	case ZK_OP_SET:
		rc = zoo_aset(zk->zh, path, op->data, op->len, v, zk_request_stat_cb, op);
		break;
	case ZK_OP_DELETE:
		rc = zoo_adelete(zk->zh, path, v, zk_request_void_cb, op);
		break;
	case ZK_OP_GET_ACL:
		rc = zoo_aget_acl(zk->zh, path, zk_request_acl_cb, op);
		break;
	case ZK_OP_SET_ACL:
		rc = zoo_aset_acl(zk->zh, path, v, &op->acl, zk_request_void_cb, op);
		break;
	case ZK_OP_WRITE_CREATE:
		rc = zk_request_issue_multi(zk, op);
		break;
	default:
		fatalx("zk_request_issue: bad type %d", op->type);
	}
	if (rc != ZOK) {
		/* The library did not take the request: it will never complete it. */
		log_debug("zookeeper: request on %s refused at once: %s", path, zerror(rc));
		zk_request_done(op, rc);
	}
}

/* Hand queued requests to the library while there is room. Never inside a library call. */
void
zk_request_pump(struct zk *zk)
{
	struct zk_op *op;
	int issued = 0;

	while (zk->inflight < ZK_INFLIGHT_MAX && (op = TAILQ_FIRST(&zk->queue)) != NULL) {
		TAILQ_REMOVE(&zk->queue, op, entry);
		zk->nqueued--;
		if (zk->zh == NULL || zk->closing)
			zk_request_done(op, zk->closing ? ZCLOSING : ZINVALIDSTATE);
		else
			zk_request_issue(zk, op);
		issued = 1;
	}
	if (issued)
		zk_kick(zk);
}

/* Complete every queued request with rc, unsent: the session they were for is gone. */
void
zk_request_fail_queued(struct zk *zk, int rc)
{
	struct zk_op *op;

	while ((op = TAILQ_FIRST(&zk->queue)) != NULL) {
		TAILQ_REMOVE(&zk->queue, op, entry);
		zk->nqueued--;
		zk_request_done(op, rc);
	}
}

static struct zk_op *zk_request_new(struct zk *, enum zk_op_type, const char *, const char *, int,
                                    int, zk_watch_cb, zk_reply_cb, void *);
static void zk_request_start(struct zk *, struct zk_op *, int urgent);

/*
 * Start one request: now if there is room and nothing waits (or urgent: a heartbeat, which
 * depends on no other request), else behind the others.
 */
void
zk_request(struct zk *zk, enum zk_op_type type, const char *path, const char *data, int len,
           int flags_or_version, zk_watch_cb wcb, zk_reply_cb cb, void *arg, int urgent)
{
	zk_request_start(
	    zk, zk_request_new(zk, type, path, data, len, flags_or_version, wcb, cb, arg), urgent);
}

/* A create or set-ACL request that carries its own ACL (copied). */
void
zk_request_acl(struct zk *zk, enum zk_op_type type, const char *path, const char *data, int len,
               int flags_or_version, const struct ACL_vector *acl, zk_reply_cb cb, void *arg)
{
	struct zk_op *op =
	    zk_request_new(zk, type, path, data, len, flags_or_version, NULL, cb, arg);
	int i;

	op->acl.count = acl->count;
	op->acl.data = xcalloc((size_t)(acl->count > 0 ? acl->count : 1), sizeof *op->acl.data);
	for (i = 0; i < acl->count; i++) {
		op->acl.data[i].perms = acl->data[i].perms;
		op->acl.data[i].id.scheme = xstrdup(acl->data[i].id.scheme);
		op->acl.data[i].id.id = xstrdup(acl->data[i].id.id);
	}
	zk_request_start(zk, op, 0);
}

/*
 * One transaction (a multi): path's data set at version (-1: any; ZK_WRITE_CREATES: path
 * created, persistent), and n nodes created at cpath with cdata[i] (clen[i] bytes; NULL:
 * none) and cflags. All land or none does. The reply's rc is the first failed operation's
 * (ZBADVERSION: path changed; ZNONODE: path, or cpath's parent, is missing; ...); created
 * and createds are the nodes as created, stat path's (a set).
 */
void
zk_write_creates(struct zk *zk, const char *path, const char *data, int len, int version,
                 const char *cpath, const char *const *cdata, const int *clen, int n, int cflags,
                 zk_reply_cb cb, void *arg)
{
	struct zk_op *op =
	    zk_request_new(zk, ZK_OP_WRITE_CREATE, path, data, len, version, NULL, cb, arg);
	struct zk_op_second *s = xcalloc(1, sizeof *s);
	int i;

	if (n < 1)
		fatalx("zk_write_creates: %d nodes to create", n);
	s->path = xstrdup(cpath);
	s->n = n;
	s->data = xcalloc((size_t)n, sizeof *s->data);
	s->len = xcalloc((size_t)n, sizeof *s->len);
	for (i = 0; i < n; i++) {
		s->len[i] = cdata[i] != NULL ? clen[i] : -1;
		if (cdata[i] != NULL && clen[i] > 0) {
			s->data[i] = xmalloc((size_t)clen[i]);
			memcpy(s->data[i], cdata[i], (size_t)clen[i]);
		}
	}
	s->flags = cflags;
	s->ops = xcalloc((size_t)n + 1, sizeof *s->ops);
	s->results = xcalloc((size_t)n + 1, sizeof *s->results);
	s->created = xcalloc((size_t)n, sizeof *s->created);
	op->second = s;
	zk_request_start(zk, op, 0);
}

/* The same with one node created (cdata: clen bytes, or NULL). */
void
zk_write_create(struct zk *zk, const char *path, const char *data, int len, int version,
                const char *cpath, const char *cdata, int clen, int cflags, zk_reply_cb cb,
                void *arg)
{
	zk_write_creates(zk, path, data, len, version, cpath, &cdata, &clen, 1, cflags, cb, arg);
}

/* A new op, not yet started. */
static struct zk_op *
zk_request_new(struct zk *zk, enum zk_op_type type, const char *path, const char *data, int len,
               int flags_or_version, zk_watch_cb wcb, zk_reply_cb cb, void *arg)
{
	struct zk_op *op = xcalloc(1, sizeof *op);

	op->zk = zk;
	op->type = type;
	op->path = xstrdup(path);
	if (data != NULL && len > 0) {
		op->data = xmalloc((size_t)len);
		memcpy(op->data, data, (size_t)len);
		op->len = len;
	} else
		op->len = data != NULL ? len : -1;
	op->flags_or_version = flags_or_version;
	op->cb = cb;
	op->wcb = wcb;
	op->arg = arg;
	op->epoch = zk->epoch;
	op->owner = zk_request_owner(zk, arg, 1);
	TAILQ_INSERT_TAIL(&op->owner->ops, op, owner_entry);
	return op;
}

/* Send op now if there is room and nothing waits (or urgent), else queue it. */
static void
zk_request_start(struct zk *zk, struct zk_op *op, int urgent)
{
	if (zk->zh == NULL || zk->closing)
		zk_request_done(op, zk->closing ? ZCLOSING : ZINVALIDSTATE);
	else if (urgent || (zk->inflight < ZK_INFLIGHT_MAX && TAILQ_EMPTY(&zk->queue)))
		zk_request_issue(zk, op);
	else {
		TAILQ_INSERT_TAIL(&zk->queue, op, entry);
		zk->nqueued++;
	}
	zk_kick(zk);
}

/* The bucket of a path (FNV-1a). */
static size_t
zk_request_path_hash(const struct zk *zk, const char *path)
{
	uint32_t h = 2166136261u;

	for (; *path != '\0'; path++)
		h = (h ^ (unsigned char)*path) * 16777619u;
	return (size_t)h & (zk->nwbuckets - 1);
}

/* The subscriptions of path, made if create and there are none; NULL otherwise. */
static struct zk_watched *
zk_request_watched(struct zk *zk, const char *path, int create)
{
	struct zk_watched *p, **old;
	size_t i, n, b;

	if (zk->nwbuckets > 0) {
		for (p = zk->watched[zk_request_path_hash(zk, path)]; p != NULL; p = p->next)
			if (strcmp(p->path, path) == 0)
				return p;
	}
	if (!create)
		return NULL;
	if (zk->nwatched + 1 > zk->nwbuckets) {
		old = zk->watched;
		n = zk->nwbuckets;
		zk->nwbuckets = n == 0 ? 64 : n * 2;
		zk->watched = xcalloc(zk->nwbuckets, sizeof *zk->watched);
		for (i = 0; i < n; i++) {
			while ((p = old[i]) != NULL) {
				old[i] = p->next;
				b = zk_request_path_hash(zk, p->path);
				p->next = zk->watched[b];
				zk->watched[b] = p;
			}
		}
		free(old);
	}
	p = xcalloc(1, sizeof *p);
	p->path = xstrdup(path);
	TAILQ_INIT(&p->subs);
	b = zk_request_path_hash(zk, path);
	p->next = zk->watched[b];
	zk->watched[b] = p;
	zk->nwatched++;
	return p;
}

/* Forget a path nobody waits on any more. */
static void
zk_request_watched_put(struct zk *zk, struct zk_watched *w)
{
	struct zk_watched **p;

	if (!TAILQ_EMPTY(&w->subs))
		return;
	for (p = &zk->watched[zk_request_path_hash(zk, w->path)]; *p != NULL; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			zk->nwatched--;
			free(w->path);
			free(w);
			return;
		}
	}
}

/* The first subscriber of path for a data (or child) event, or NULL. */
struct zk_sub *
zk_request_sub_find(struct zk *zk, const char *path, int data, int child)
{
	struct zk_watched *w = zk_request_watched(zk, path, 0);
	struct zk_sub *sub;

	if (w == NULL)
		return NULL;
	TAILQ_FOREACH(sub, &w->subs, path_entry) {
		if ((sub->kind == ZK_SUB_DATA && data) || (sub->kind == ZK_SUB_CHILD && child))
			return sub;
	}
	return NULL;
}

/* A request with a watch succeeded: its owner now waits on the watch. */
void
zk_request_sub_add(struct zk *zk, const struct zk_op *op)
{
	struct zk_sub *sub = xcalloc(1, sizeof *sub);

	sub->kind = op->type == ZK_OP_CHILDREN ? ZK_SUB_CHILD : ZK_SUB_DATA;
	sub->path = xstrdup(op->path);
	sub->cb = op->wcb;
	sub->arg = op->arg;
	sub->owner = zk_request_owner(zk, op->arg, 1);
	TAILQ_INSERT_TAIL(&sub->owner->subs, sub, owner_entry);
	sub->watched = zk_request_watched(zk, sub->path, 1);
	TAILQ_INSERT_TAIL(&sub->watched->subs, sub, path_entry);
	TAILQ_INSERT_TAIL(&zk->subs, sub, entry);
}

/* Take one subscription off the session's list and its owner's (the owner may go). */
void
zk_request_sub_take(struct zk *zk, struct zk_sub *sub)
{
	struct zk_owner *o = sub->owner;

	TAILQ_REMOVE(&zk->subs, sub, entry);
	TAILQ_REMOVE(&sub->watched->subs, sub, path_entry);
	zk_request_watched_put(zk, sub->watched);
	sub->watched = NULL;
	if (o != NULL) {
		TAILQ_REMOVE(&o->subs, sub, owner_entry);
		sub->owner = NULL;
		zk_request_owner_put(zk, o);
	}
}

/* Drop one subscription. */
void
zk_request_sub_free(struct zk *zk, struct zk_sub *sub)
{
	zk_request_sub_take(zk, sub);
	free(sub->path);
	free(sub);
}

/* Drop every subscription: the watches died with the session. */
void
zk_request_subs_clear(struct zk *zk)
{
	struct zk_sub *sub;

	while ((sub = TAILQ_FIRST(&zk->subs)) != NULL)
		zk_request_sub_free(zk, sub);
}

/* Forget every callback and watch registered with arg: its owner is going away. */
void
zk_cancel(struct zk *zk, void *arg)
{
	struct zk_owner *o = zk_request_owner(zk, arg, 0);
	struct zk_op *op;
	struct zk_sub *sub;

	if (o == NULL)
		return;
	while ((op = TAILQ_FIRST(&o->ops)) != NULL) {
		TAILQ_REMOVE(&o->ops, op, owner_entry);
		op->owner = NULL;
		op->cb = NULL;
		op->wcb = NULL;
	}
	while ((sub = TAILQ_FIRST(&o->subs)) != NULL) {
		TAILQ_REMOVE(&o->subs, sub, owner_entry);
		sub->owner = NULL;
		zk_request_sub_free(zk, sub);
	}
	zk_request_owner_put(zk, o);
}

/* Free the owners' table (every op and sub is gone by now). */
void
zk_request_free_owners(struct zk *zk)
{
	struct zk_owner *o;
	size_t i;

	for (i = 0; i < zk->nbuckets; i++) {
		while ((o = zk->owners[i]) != NULL) {
			zk->owners[i] = o->next;
			free(o);
		}
	}
	free(zk->owners);
	zk->owners = NULL;
	zk->nbuckets = zk->nowners = 0;
	free(zk->watched); /* each path went with its last subscription */
	zk->watched = NULL;
	zk->nwbuckets = zk->nwatched = 0;
}

/* How many requests are queued or in flight. */
int
zk_pending_ops(const struct zk *zk)
{
	return zk->inflight + zk->nqueued;
}
