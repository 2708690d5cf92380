/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * zk.c: one ZooKeeper session on a libevent loop, with a heartbeat and a lease deadline.
 *
 * The single-threaded C client is driven from one libevent event armed with what
 * zookeeper_interest() asks for, re-armed after every call into the library. The library
 * runs completions and watchers synchronously inside those calls; ours only append a
 * record to one FIFO queue, and zk_dispatch() hands the records to their owners after
 * the library has returned, in the order they happened. Owners may then issue requests,
 * cancel others or close the session without re-entering the library.
 *
 * Node watches are registered with one (function, context) pair per handle, so the
 * library keeps at most one registration per path and kind, and we fan each event out
 * to the subscribers of that path. A subscription becomes active only when its request
 * succeeds, which is exactly when the library registers the watch.
 *
 * The lease deadline: the server expires a session no earlier than T after the last
 * packet it received from us, and a request cannot reach the server before we send it.
 * So "send time of the newest request that got an answer + T - safety margin" is a time
 * before which the session cannot have expired. A heartbeat request every T/3 keeps the
 * deadline moving while the connection is healthy; nothing moves it otherwise.
 */

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "compat.h"
#include "log.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

enum zk_op_type {
	ZK_OP_CREATE,
	ZK_OP_GET,
	ZK_OP_EXISTS,
	ZK_OP_CHILDREN,
	ZK_OP_SET,
	ZK_OP_DELETE,
	ZK_OP_GET_ACL,
};

enum zk_sub_kind { ZK_SUB_DATA, ZK_SUB_CHILD };

/* One request in flight; freed after its completion has been dispatched. */
struct zk_op {
	struct zk *zk;
	enum zk_op_type type;
	char *path;
	zk_reply_cb cb;
	zk_watch_cb wcb;
	void *arg;
	uint64_t sent_ns;
	uint64_t epoch;

	int rc;
	char *created;
	char *value;
	int value_len;
	struct Stat stat;
	int has_stat;
	char **children;
	int nchildren;
	struct ACL_vector acl; /* get-acl: our copy */

	TAILQ_ENTRY(zk_op) entry; /* zk->ops while in flight */
};

/* A watch an owner waits on. */
struct zk_sub {
	enum zk_sub_kind kind;
	char *path;
	zk_watch_cb cb;
	void *arg;
	TAILQ_ENTRY(zk_sub) entry;
};

/* Something the library told us, kept until zk_dispatch. */
struct zk_record {
	enum { ZK_RECORD_REPLY, ZK_RECORD_WATCH, ZK_RECORD_SESSION } kind;
	struct zk_op *op;
	int type;
	int state;
	char *path;
	TAILQ_ENTRY(zk_record) entry;
};

/*
 * A delete retried after reconnects until it succeeds or cannot matter any more. With a
 * uuid, path is a folder: list it and delete each child protected with that uuid.
 */
struct zk_gdelete {
	char *path;
	char *uuid;
	int in_flight;
	TAILQ_ENTRY(zk_gdelete) entry;
};

struct zk {
	struct event_base *base;
	char *hosts;
	char *auth;
	char *reader_id;              /* zk_set_reader: READ for this digest id too */
	struct ACL reader_entries[2]; /* ... the creator's cdrwa, and its READ */
	struct ACL_vector reader_acl; /* ... over reader_entries */
	int requested_timeout_ms;
	int margin_ms;
	zk_event_cb cb;
	void *cb_arg;

	zhandle_t *zh;
	enum zk_state state;
	int64_t session_id;
	uint64_t epoch; /* increments with every new session */
	uint64_t answered_ns;
	uint64_t state_since_ns;
	uint64_t connecting_logged_ns;
	int closing;
	int abandoned;
	int dispatching;

	struct event *io;
	struct event *kick;      /* re-arm and dispatch soon, outside any library call */
	struct event *heartbeat; /* every T/3 */
	struct event *reinit;    /* open a new handle after expiry or a failed init */
	struct event *resync;    /* requests failed while we stayed connected: resume */
	struct event *stall;     /* a heartbeat went unanswered too long */
	uint64_t hb_sent_ns;     /* the unanswered heartbeat, 0 if none */
	int fd;                  /* the library's socket, as last armed */

	/* Faults that repeat while a server misbehaves: each warns once, then counts. */
	struct log_limit lim_delete, lim_stall, lim_lost, lim_auth, lim_init;

	TAILQ_HEAD(, zk_op) ops;
	TAILQ_HEAD(, zk_sub) subs;
	TAILQ_HEAD(, zk_record) records;
	TAILQ_HEAD(, zk_gdelete) gdeletes;
};

static void zk_arm(struct zk *);
static void zk_dispatch(struct zk *);
static void zk_open(struct zk *);
static void zk_kick(struct zk *);

static const char *zk_state_names[] = {
    "CONNECTING", "CONNECTED", "EXPIRED", "AUTH_FAILED", "CLOSING", "CLOSED",
};

static const char *zk_event_names[] = {
    "session-new", "reconnected", "disconnected", "expired", "deadline", "closed",
};

/* The name of a session state, for logs. */
const char *
zk_state_name(enum zk_state state)
{
	return zk_state_names[state];
}

/* The name of a session event, for logs. */
const char *
zk_event_name(enum zk_event event)
{
	return zk_event_names[event];
}

/* Whether rc is an answer from the server (as opposed to a client-side failure). */
static int
zk_answered(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION ||
	       rc == ZNOTEMPTY || rc == ZNOCHILDRENFOREPHEMERALS || rc == ZNOAUTH ||
	       rc == ZINVALIDACL;
}

/*
 * Whether rc means the request's fate is unknown: it may have reached the server. Not
 * only connection losses: when a send fails, the single-threaded client can also fail
 * requests already sent with ZRUNTIMEINCONSISTENCY, ZSYSTEMERROR or ZMARSHALLINGERROR.
 * Everything that is neither an answer nor a request the library never issued counts.
 */
int
zk_connection_error(int rc)
{
	return rc != ZOK && !zk_answered(rc) && rc != ZBADARGUMENTS && rc != ZINVALIDSTATE &&
	       rc != ZCLOSING && rc != ZSESSIONEXPIRED && rc != ZAUTHFAILED &&
	       rc != ZINVALIDCALLBACK && rc != ZNOTHING;
}

/* Move to a new state, logging the transition by name. */
static void
zk_set_state(struct zk *zk, enum zk_state state)
{
	if (zk->state == state)
		return;
	if (state != ZK_STATE_CONNECTED) {
		zk->hb_sent_ns = 0;
		if (zk->stall != NULL)
			evtimer_del(zk->stall);
	}
	log_debug("zookeeper: session state %s -> %s", zk_state_name(zk->state),
	          zk_state_name(state));
	zk->state = state;
	zk->state_since_ns = clock_now_ns();
}

/* Tell the owner. */
static void
zk_emit(struct zk *zk, enum zk_event event)
{
	if (zk->cb != NULL)
		zk->cb(zk, event, zk->cb_arg);
}

/* Route the client library's own log lines into ours. */
static void
zk_log_cb(const char *message)
{
	log_info("zookeeper client: %s", message);
}

/* Default watcher: session state changes only. */
static void
zk_session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk *zk = ctx;
	struct zk_record *r;

	(void)path;
	if (zk == NULL || zh != zk->zh || type != ZOO_SESSION_EVENT)
		return;
	r = xcalloc(1, sizeof *r);
	r->kind = ZK_RECORD_SESSION;
	r->state = state;
	TAILQ_INSERT_TAIL(&zk->records, r, entry);
}

/* Node watcher, shared by every watch of this handle; session events are filtered. */
static void
zk_node_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
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

/* Queue a completed op for dispatch. */
static void
zk_op_done(struct zk_op *op, int rc)
{
	struct zk_record *r;

	op->rc = rc;
	TAILQ_REMOVE(&op->zk->ops, op, entry);
	r = xcalloc(1, sizeof *r);
	r->kind = ZK_RECORD_REPLY;
	r->op = op;
	TAILQ_INSERT_TAIL(&op->zk->records, r, entry);
}

static void
zk_stat_done_cb(int rc, const struct Stat *stat, const void *data)
{
	struct zk_op *op = (struct zk_op *)data;

	if (stat != NULL && (rc == ZOK || op->type == ZK_OP_SET)) {
		op->stat = *stat;
		op->has_stat = rc == ZOK;
	}
	zk_op_done(op, rc);
}

static void
zk_data_done_cb(int rc, const char *value, int value_len, const struct Stat *stat, const void *data)
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
	zk_op_done(op, rc);
}

static void
zk_create_done_cb(int rc, const char *created, const struct Stat *stat, const void *data)
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
	zk_op_done(op, rc);
}

static void
zk_children_done_cb(int rc, const struct String_vector *strings, const struct Stat *stat,
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
	zk_op_done(op, rc);
}

static void
zk_acl_done_cb(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data)
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
	zk_op_done(op, rc);
}

static void
zk_void_done_cb(int rc, const void *data)
{
	zk_op_done((struct zk_op *)data, rc);
}

/* Free an op and its results. */
static void
zk_op_free(struct zk_op *op)
{
	int i;

	for (i = 0; i < op->nchildren; i++)
		free(op->children[i]);
	free(op->children);
	for (i = 0; i < op->acl.count; i++) {
		free(op->acl.data[i].id.scheme);
		free(op->acl.data[i].id.id);
	}
	free(op->acl.data);
	free(op->created);
	free(op->value);
	free(op->path);
	free(op);
}

/* Start one request; a request the library refuses at once completes with its rc. */
static void
zk_request(struct zk *zk, enum zk_op_type type, const char *path, const char *data, int len,
           int flags_or_version, zk_watch_cb wcb, zk_reply_cb cb, void *arg)
{
	struct zk_op *op = xcalloc(1, sizeof *op);
	int rc;

	op->zk = zk;
	op->type = type;
	op->path = xstrdup(path);
	op->cb = cb;
	op->wcb = wcb;
	op->arg = arg;
	op->sent_ns = clock_now_ns();
	op->epoch = zk->epoch;
	TAILQ_INSERT_TAIL(&zk->ops, op, entry);

	if (zk->zh == NULL || zk->closing) {
		zk_op_done(op, zk->closing ? ZCLOSING : ZINVALIDSTATE);
		zk_kick(zk);
		return;
	}
	switch (type) {
	case ZK_OP_CREATE:
		/* With credentials, what we create is ours alone (digest auth: the same user). */
		rc = zoo_acreate2(zk->zh, path, data, len,
		                  zk->auth == NULL        ? &ZOO_OPEN_ACL_UNSAFE
		                  : zk->reader_id != NULL ? &zk->reader_acl
		                                          : &ZOO_CREATOR_ALL_ACL,
		                  flags_or_version, zk_create_done_cb, op);
		break;
	case ZK_OP_GET:
		if (wcb != NULL)
			rc = zoo_awget(zk->zh, path, zk_node_watcher, zk, zk_data_done_cb, op);
		else
			rc = zoo_aget(zk->zh, path, 0, zk_data_done_cb, op);
		break;
	case ZK_OP_EXISTS:
		rc = zoo_aexists(zk->zh, path, 0, zk_stat_done_cb, op);
		break;
	case ZK_OP_CHILDREN:
		if (wcb != NULL)
			rc = zoo_awget_children2(zk->zh, path, zk_node_watcher, zk,
			                         zk_children_done_cb, op);
		else
			rc = zoo_aget_children2(zk->zh, path, 0, zk_children_done_cb, op);
		break;
	case ZK_OP_SET:
		rc = zoo_aset(zk->zh, path, data, len, flags_or_version, zk_stat_done_cb, op);
		break;
	case ZK_OP_DELETE:
		rc = zoo_adelete(zk->zh, path, flags_or_version, zk_void_done_cb, op);
		break;
	case ZK_OP_GET_ACL:
		rc = zoo_aget_acl(zk->zh, path, zk_acl_done_cb, op);
		break;
	default:
		fatalx("zk_request: bad type %d", type);
	}
	if (rc != ZOK) {
		/* The library did not take the request: it will never complete it. */
		log_debug("zookeeper: request on %s refused at once: %s", path, zerror(rc));
		zk_op_done(op, rc);
	}
	zk_kick(zk);
}

/* Create a node; the reply carries the created path and its Stat (czxid: fencing token). */
void
zk_create_node(struct zk *zk, const char *path, const char *data, int len, int flags,
               zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_CREATE, path, data, len, flags, NULL, cb, arg);
}

/*
 * Create every element of path that is missing, from the top, in one pipeline (the server
 * answers a session's requests in order, so a request queued after these finds the path).
 * cb sees each element's answer (ZNODEEXISTS for those that were there).
 */
void
zk_create_path(struct zk *zk, const char *path, int flags, zk_reply_cb cb, void *arg)
{
	char *copy = xstrdup(path), *slash;

	for (slash = strchr(copy + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash != NULL)
			*slash = '\0';
		zk_create_node(zk, copy, NULL, -1, flags, cb, arg);
		if (slash == NULL)
			break;
		*slash = '/';
	}
	free(copy);
}

/* Read a node's data; with wcb, also watch it (only if it exists). */
void
zk_get(struct zk *zk, const char *path, zk_watch_cb wcb, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_GET, path, NULL, 0, 0, wcb, cb, arg);
}

/* Stat a node, without a watch (an exists watch on a missing node would linger). */
void
zk_exists(struct zk *zk, const char *path, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_EXISTS, path, NULL, 0, 0, NULL, cb, arg);
}

/* List a node's children; with wcb, also watch them. */
void
zk_children(struct zk *zk, const char *path, zk_watch_cb wcb, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_CHILDREN, path, NULL, 0, 0, wcb, cb, arg);
}

/*
 * With credentials, nodes created from now on also give READ to the digest id (USER:BASE64,
 * a read-only identity: the dashboard, status), besides the creator's every permission.
 */
void
zk_set_reader(struct zk *zk, const char *digest_id)
{
	free(zk->reader_id);
	zk->reader_id = xstrdup(digest_id);
	zk->reader_entries[0] = (struct ACL){ZOO_PERM_ALL, {"auth", ""}};
	zk->reader_entries[1] = (struct ACL){ZOO_PERM_READ, {"digest", zk->reader_id}};
	zk->reader_acl = (struct ACL_vector){2, zk->reader_entries};
}

/* Read a node's ACL. */
void
zk_get_acl(struct zk *zk, const char *path, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_GET_ACL, path, NULL, 0, 0, NULL, cb, arg);
}

/* Write a node's data at a version (-1: any). */
void
zk_set(struct zk *zk, const char *path, const char *data, int len, int version, zk_reply_cb cb,
       void *arg)
{
	zk_request(zk, ZK_OP_SET, path, data, len, version, NULL, cb, arg);
}

/* Delete a node at a version (-1: any). */
void
zk_delete(struct zk *zk, const char *path, int version, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_DELETE, path, NULL, 0, version, NULL, cb, arg);
}

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

/* How many requests are in flight. */
int
zk_pending_ops(const struct zk *zk)
{
	const struct zk_op *op;
	int n = 0;

	TAILQ_FOREACH(op, &zk->ops, entry)
		n++;
	return n;
}

/* Forget every callback and watch registered with arg: its owner is going away. */
void
zk_cancel(struct zk *zk, void *arg)
{
	struct zk_op *op;
	struct zk_sub *sub, *next;
	struct zk_record *r;

	TAILQ_FOREACH(op, &zk->ops, entry) {
		if (op->arg == arg) {
			op->cb = NULL;
			op->wcb = NULL;
		}
	}
	TAILQ_FOREACH(r, &zk->records, entry) {
		if (r->kind == ZK_RECORD_REPLY && r->op->arg == arg) {
			r->op->cb = NULL;
			r->op->wcb = NULL;
		}
	}
	TAILQ_FOREACH_SAFE(sub, &zk->subs, entry, next) {
		if (sub->arg == arg) {
			TAILQ_REMOVE(&zk->subs, sub, entry);
			free(sub->path);
			free(sub);
		}
	}
}

/* Drop every subscription: the watches died with the session. */
static void
zk_subs_clear(struct zk *zk)
{
	struct zk_sub *sub;

	while ((sub = TAILQ_FIRST(&zk->subs)) != NULL) {
		TAILQ_REMOVE(&zk->subs, sub, entry);
		free(sub->path);
		free(sub);
	}
}

/* The lease deadline moves to the send time of an answered request of this session. */
static void
zk_note_answer(struct zk *zk, const struct zk_op *op)
{
	if (!zk_answered(op->rc) || op->epoch != zk->epoch || zk->epoch == 0)
		return;
	if (op->sent_ns <= zk->answered_ns)
		return;
	zk->answered_ns = op->sent_ns;
	zk_emit(zk, ZK_EVENT_DEADLINE);
}

/* Hand a reply to its owner, activating its watch if the request succeeded. */
static void
zk_dispatch_reply(struct zk *zk, struct zk_op *op)
{
	struct zk_reply reply;
	struct zk_sub *sub;
	struct timeval tv = {0, 200000};

	zk_note_answer(zk, op);
	/*
	 * Owners retry requests of unknown fate after a reconnect. The library may drop and
	 * re-open its socket without a state change we would see: then say "reconnected"
	 * ourselves, a little later, so that nothing waits for ever.
	 */
	if (zk_connection_error(op->rc) && zk->state == ZK_STATE_CONNECTED &&
	    op->epoch == zk->epoch && !evtimer_pending(zk->resync, NULL))
		evtimer_add(zk->resync, &tv);
	if (op->wcb != NULL && op->rc == ZOK && op->epoch == zk->epoch) {
		sub = xcalloc(1, sizeof *sub);
		sub->kind = op->type == ZK_OP_CHILDREN ? ZK_SUB_CHILD : ZK_SUB_DATA;
		sub->path = xstrdup(op->path);
		sub->cb = op->wcb;
		sub->arg = op->arg;
		TAILQ_INSERT_TAIL(&zk->subs, sub, entry);
	}
	if (op->cb != NULL) {
		memset(&reply, 0, sizeof reply);
		reply.rc = op->rc;
		reply.path = op->path;
		reply.created = op->created;
		reply.value = op->value;
		reply.value_len = op->value_len;
		reply.stat = op->has_stat ? &op->stat : NULL;
		reply.children = op->children;
		reply.nchildren = op->nchildren;
		reply.acl = op->type == ZK_OP_GET_ACL && op->rc == ZOK ? &op->acl : NULL;
		reply.sent_ns = op->sent_ns;
		op->cb(&reply, op->arg);
	}
	zk_op_free(op);
}

/*
 * Hand a watch event to every subscriber of that path and kind; each fires once. One at a
 * time, from the live list, because a callback may cancel other subscribers.
 */
static void
zk_dispatch_watch(struct zk *zk, int type, const char *path)
{
	struct zk_sub *sub;
	int data =
	    type == ZOO_CREATED_EVENT || type == ZOO_CHANGED_EVENT || type == ZOO_DELETED_EVENT;
	int child = type == ZOO_CHILD_EVENT || type == ZOO_DELETED_EVENT;

	for (;;) {
		TAILQ_FOREACH(sub, &zk->subs, entry) {
			if (strcmp(sub->path, path) == 0 && ((sub->kind == ZK_SUB_DATA && data) ||
			                                     (sub->kind == ZK_SUB_CHILD && child)))
				break;
		}
		if (sub == NULL)
			return;
		TAILQ_REMOVE(&zk->subs, sub, entry);
		sub->cb(type, path, sub->arg);
		free(sub->path);
		free(sub);
	}
}

/* A heartbeat came back: the server is alive. */
static void
zk_heartbeat_cb(const struct zk_reply *reply, void *arg)
{
	struct zk *zk = arg;

	if (!zk_answered(reply->rc)) {
		log_debug("zookeeper: heartbeat failed: %s", zerror(reply->rc));
		return;
	}
	if (zk->hb_sent_ns != 0 && reply->sent_ns >= zk->hb_sent_ns) {
		zk->hb_sent_ns = 0;
		evtimer_del(zk->stall);
	}
}

/* Send one heartbeat: the cheapest request that the server must answer. */
static void
zk_heartbeat_send(struct zk *zk)
{
	struct timeval tv;
	int stall_ms = zk_timeout_ms(zk) / 6;

	if (zk->state != ZK_STATE_CONNECTED || zk->closing)
		return;
	if (zk->hb_sent_ns == 0) {
		zk->hb_sent_ns = clock_now_ns();
		tv.tv_sec = stall_ms / 1000;
		tv.tv_usec = (stall_ms % 1000) * 1000;
		evtimer_add(zk->stall, &tv);
	}
	zk_exists(zk, "/", zk_heartbeat_cb, zk);
}

/*
 * A heartbeat got no answer within T/6, while a healthy server answers in milliseconds.
 * The client library would give up on this server only after 2/3 T of silence, later
 * than the lease deadline lets jobs live (SIGTERM comes at T - safety_margin - kill_grace).
 * With other servers to try, drop the connection now: the library moves to the next
 * server and resumes the same session, and requests in flight are retried as after any
 * connection loss.
 */
static void
zk_stall_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;

	(void)fd;
	(void)what;
	if (zk->state != ZK_STATE_CONNECTED || zk->closing || zk->hb_sent_ns == 0 || zk->fd < 0 ||
	    strchr(zk->hosts, ',') == NULL)
		return;
	log_warnx_limited(&zk->lim_stall,
	                  "zookeeper: the server did not answer a heartbeat within %d ms; "
	                  "moving to another server",
	                  zk_timeout_ms(zk) / 6);
	zk->hb_sent_ns = 0;
	shutdown(zk->fd, SHUT_RDWR);
	zk_kick(zk);
}

/* The heartbeat timer: a request every T/3, and a word while we cannot connect. */
static void
zk_heartbeat_timer_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;
	struct timeval tv;
	int timeout = zk_timeout_ms(zk);
	uint64_t now = clock_now_ns();

	(void)fd;
	(void)what;
	if (zk->state == ZK_STATE_CONNECTED)
		zk_heartbeat_send(zk);
	else if (zk->state == ZK_STATE_CONNECTING &&
	         now - zk->connecting_logged_ns > 10ULL * 1000 * CLOCK_NS_PER_MS &&
	         now - zk->state_since_ns > 2ULL * 1000 * CLOCK_NS_PER_MS) {
		log_warnx("zookeeper: not connected to %s for %llu s; still trying", zk->hosts,
		          (unsigned long long)((now - zk->state_since_ns) / 1000000000ULL));
		zk->connecting_logged_ns = now;
	}
	tv.tv_sec = timeout / 3 / 1000;
	tv.tv_usec = (timeout / 3 % 1000) * 1000;
	evtimer_add(zk->heartbeat, &tv);
}

/* Retry every guaranteed delete that is not in flight. */
static void
zk_gdelete_retry(struct zk *zk)
{
	struct zk_gdelete *gd;

	TAILQ_FOREACH(gd, &zk->gdeletes, entry) {
		if (!gd->in_flight)
			zk_gdelete_send(zk, gd);
	}
}

/* Drop guaranteed deletes: the session that owned the nodes is gone. */
static void
zk_gdelete_clear(struct zk *zk)
{
	struct zk_gdelete *gd;

	while ((gd = TAILQ_FIRST(&zk->gdeletes)) != NULL)
		zk_gdelete_free(zk, gd);
}

/* React to a session state reported by the library. */
static void
zk_dispatch_session(struct zk *zk, int state)
{
	const clientid_t *id;
	struct timeval tv = {1, 0};

	if (state == ZOO_CONNECTED_STATE) {
		id = zoo_client_id(zk->zh);
		if (id->client_id != zk->session_id) {
			zk->session_id = id->client_id;
			zk->epoch++;
			zk->answered_ns = 0;
			zk_set_state(zk, ZK_STATE_CONNECTED);
			log_info("zookeeper: session 0x%llx established, timeout %d ms",
			         (unsigned long long)zk->session_id, zoo_recv_timeout(zk->zh));
			if (zoo_recv_timeout(zk->zh) < zk->requested_timeout_ms)
				log_warnx(
				    "zookeeper: the server lowered the session timeout from %d "
				    "to %d ms (its maxSessionTimeout); lease deadlines follow the "
				    "lower value, so jobs are killed sooner after a lost contact: "
				    "raise the server's maxSessionTimeout or lower session_timeout",
				    zk->requested_timeout_ms, zoo_recv_timeout(zk->zh));
			zk_heartbeat_send(zk);
			zk_emit(zk, ZK_EVENT_SESSION_NEW);
		} else {
			zk_set_state(zk, ZK_STATE_CONNECTED);
			evtimer_del(zk->resync);
			log_info("zookeeper: session 0x%llx reconnected",
			         (unsigned long long)zk->session_id);
			zk_heartbeat_send(zk);
			zk_gdelete_retry(zk);
			zk_emit(zk, ZK_EVENT_RECONNECTED);
		}
	} else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
		if (zk->state == ZK_STATE_CONNECTED) {
			zk_set_state(zk, ZK_STATE_CONNECTING);
			log_warnx_limited(&zk->lim_lost,
			                  "zookeeper: connection to session 0x%llx lost; "
			                  "reconnecting",
			                  (unsigned long long)zk->session_id);
			zk_emit(zk, ZK_EVENT_DISCONNECTED);
		}
	} else if (state == ZOO_EXPIRED_SESSION_STATE) {
		/* Not limited: at most one per session, and each names a different session. */
		log_warnx("zookeeper: session 0x%llx expired; opening a new one",
		          (unsigned long long)zk->session_id);
		zk_set_state(zk, ZK_STATE_EXPIRED);
		zk_subs_clear(zk);
		zk_gdelete_clear(zk);
		zk_emit(zk, ZK_EVENT_EXPIRED);
		tv.tv_sec = 0;
		evtimer_add(zk->reinit, &tv);
	} else if (state == ZOO_AUTH_FAILED_STATE) {
		log_warnx_limited(
		    &zk->lim_auth,
		    "zookeeper: authentication failed; check [zookeeper] auth; retrying in "
		    "10 s");
		zk_set_state(zk, ZK_STATE_AUTH_FAILED);
		zk_subs_clear(zk);
		zk_gdelete_clear(zk);
		zk_emit(zk, ZK_EVENT_EXPIRED);
		tv.tv_sec = 10;
		evtimer_add(zk->reinit, &tv);
	}
}

/* Requests failed with an unknown fate but no disconnect was reported: resume as after one. */
static void
zk_resync_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;

	(void)fd;
	(void)what;
	if (zk->state != ZK_STATE_CONNECTED || zk->closing)
		return;
	log_info("zookeeper: requests failed without a reported disconnect; resuming");
	zk_heartbeat_send(zk);
	zk_gdelete_retry(zk);
	zk_emit(zk, ZK_EVENT_RECONNECTED);
}

/* Deliver every queued record, in order. */
static void
zk_dispatch(struct zk *zk)
{
	struct zk_record *r;

	if (zk->dispatching)
		return;
	zk->dispatching = 1;
	while ((r = TAILQ_FIRST(&zk->records)) != NULL) {
		TAILQ_REMOVE(&zk->records, r, entry);
		switch (r->kind) {
		case ZK_RECORD_REPLY:
			zk_dispatch_reply(zk, r->op);
			break;
		case ZK_RECORD_WATCH:
			zk_dispatch_watch(zk, r->type, r->path);
			break;
		case ZK_RECORD_SESSION:
			zk_dispatch_session(zk, r->state);
			break;
		}
		free(r->path);
		free(r);
	}
	zk->dispatching = 0;
}

/* Socket ready or timeout: let the library work, then dispatch and re-arm. */
static void
zk_io_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;
	int events = 0;

	(void)fd;
	if (zk->zh == NULL)
		return;
	if (what & EV_READ)
		events |= ZOOKEEPER_READ;
	if (what & EV_WRITE)
		events |= ZOOKEEPER_WRITE;
	zookeeper_process(zk->zh, events);
	zk_dispatch(zk);
	zk_arm(zk);
}

/* Arm the io event with what the library wants now (its fd changes on reconnect). */
static void
zk_arm(struct zk *zk)
{
	struct timeval tv = {0, 0};
	int fd = -1, interest = 0, rc;
	short what = EV_TIMEOUT;

	if (zk->zh == NULL)
		return;
	event_del(zk->io);
	rc = zookeeper_interest(zk->zh, &fd, &interest, &tv);
	zk_dispatch(zk);
	if (zk->zh == NULL)
		return;
	if (rc == ZINVALIDSTATE) {
		/* Expired or auth failed: the session handler opens a new handle. */
		return;
	}
	if (rc != ZOK && tv.tv_sec == 0 && tv.tv_usec < 100000) {
		/* It failed before choosing a timeout (a host that does not resolve): back off. */
		tv.tv_sec = 0;
		tv.tv_usec = 100000;
	}
	if (fd >= 0) {
		if (interest & ZOOKEEPER_READ)
			what |= EV_READ;
		if (interest & ZOOKEEPER_WRITE)
			what |= EV_WRITE;
	} else
		fd = -1;
	if (tv.tv_sec < 0 || tv.tv_usec < 0)
		tv.tv_sec = tv.tv_usec = 0;
	zk->fd = fd;
	event_assign(zk->io, zk->base, fd, what, zk_io_cb, zk);
	event_add(zk->io, &tv);
}

/* Soon, outside of any callback: dispatch what is queued and re-arm. */
static void
zk_kick_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;

	(void)fd;
	(void)what;
	zk_dispatch(zk);
	zk_arm(zk);
}

static void
zk_kick(struct zk *zk)
{
	event_active(zk->kick, EV_TIMEOUT, 0);
}

/* Open a handle: a new session, since a lost one cannot be resumed by id here. */
static void
zk_open(struct zk *zk)
{
	struct timeval tv = {1, 0};

	zk->zh = zookeeper_init2(zk->hosts, zk_session_watcher, zk->requested_timeout_ms, NULL, zk,
	                         0, zk_log_cb);
	if (zk->zh == NULL) {
		log_warn_limited(&zk->lim_init,
		                 "zookeeper: cannot start a session with \"%s\"; retrying in 1 s",
		                 zk->hosts);
		evtimer_add(zk->reinit, &tv);
		return;
	}
	/*
	 * By default the client resolves the host names again in every zookeeper_interest()
	 * call (about 20 us each, several times per answer). Resolve on connection loss only:
	 * that is when a changed address matters.
	 */
	zoo_set_servers_resolution_delay(zk->zh, -1);
	zk_set_state(zk, ZK_STATE_CONNECTING);
	if (zk->auth != NULL)
		zoo_add_auth(zk->zh, "digest", zk->auth, (int)strlen(zk->auth), NULL, NULL);
	zk_arm(zk);
}

/* Close the current handle; the library completes its pending requests with ZCLOSING. */
static void
zk_close_handle(struct zk *zk)
{
	zhandle_t *zh = zk->zh;

	if (zh == NULL)
		return;
	event_del(zk->io);
	zookeeper_close(zh);
	zk->zh = NULL;
	zk_dispatch(zk);
}

/* After expiry or auth failure: drop the dead handle and open a new session. */
static void
zk_reinit_cb(int fd, short what, void *arg)
{
	struct zk *zk = arg;

	(void)fd;
	(void)what;
	if (zk->closing)
		return;
	zk_close_handle(zk);
	zk_open(zk);
}

/* Start a session with hosts; events go to cb. Connection happens on the loop. */
struct zk *
zk_create(struct event_base *base, const char *hosts, int timeout_ms, int margin_ms,
          const char *auth, zk_event_cb cb, void *arg)
{
	struct zk *zk = xcalloc(1, sizeof *zk);
	struct timeval tv;

	zk->lim_stall.burst = 5; /* each one matters; only a storm is counted */
	zk->lim_lost.burst = 5;  /* each one matters; only a storm is counted */
	zk->base = base;
	zk->hosts = xstrdup(hosts);
	zk->auth = auth != NULL ? xstrdup(auth) : NULL;
	zk->requested_timeout_ms = timeout_ms;
	zk->margin_ms = margin_ms;
	zk->cb = cb;
	zk->cb_arg = arg;
	zk->state = ZK_STATE_CONNECTING;
	zk->state_since_ns = clock_now_ns();
	TAILQ_INIT(&zk->ops);
	TAILQ_INIT(&zk->subs);
	TAILQ_INIT(&zk->records);
	TAILQ_INIT(&zk->gdeletes);

	/* The library logs every refused connect; our own lines say it once. 0 disables. */
	zoo_set_debug_level(log_verbose() ? ZOO_LOG_LEVEL_INFO : (ZooLogLevel)0);
	zk->io = event_new(base, -1, 0, zk_io_cb, zk);
	zk->kick = event_new(base, -1, 0, zk_kick_cb, zk);
	zk->heartbeat = evtimer_new(base, zk_heartbeat_timer_cb, zk);
	zk->reinit = evtimer_new(base, zk_reinit_cb, zk);
	zk->resync = evtimer_new(base, zk_resync_cb, zk);
	zk->stall = evtimer_new(base, zk_stall_cb, zk);
	zk->fd = -1;
	tv.tv_sec = timeout_ms / 3 / 1000;
	tv.tv_usec = (timeout_ms / 3 % 1000) * 1000;
	evtimer_add(zk->heartbeat, &tv);
	log_info("zookeeper: connecting to %s (session timeout %d ms)", hosts, timeout_ms);
	zk_open(zk);
	return zk;
}

/* Close the session: the server deletes its ephemeral nodes at once. */
void
zk_close(struct zk *zk)
{
	if (zk->closing)
		return;
	zk->closing = 1;
	zk_set_state(zk, ZK_STATE_CLOSING);
	evtimer_del(zk->heartbeat);
	evtimer_del(zk->reinit);
	evtimer_del(zk->resync);
	evtimer_del(zk->stall);
	if (zk->zh != NULL && zk->session_id != 0)
		log_info("zookeeper: closing session 0x%llx", (unsigned long long)zk->session_id);
	zk_close_handle(zk);
	zk_gdelete_clear(zk);
	zk_subs_clear(zk);
	zk_set_state(zk, ZK_STATE_CLOSED);
	zk_emit(zk, ZK_EVENT_CLOSED);
}

/*
 * Stop talking without closing the session: the server keeps it (and its ephemeral nodes,
 * so the leases) until it expires. Later requests complete at once with ZCLOSING, unsent.
 * For when jobs of this session may still be alive. zk_free() then frees everything.
 */
void
zk_abandon(struct zk *zk)
{
	if (zk->closing)
		return;
	if (zk->zh != NULL && zk->session_id != 0)
		log_warnx("zookeeper: leaving session 0x%llx to expire, not closing it: jobs may "
		          "still be alive",
		          (unsigned long long)zk->session_id);
	if (zk->fd >= 0)
		shutdown(zk->fd, SHUT_RDWR);
	zk->closing = 1;
	zk->abandoned = 1;
	evtimer_del(zk->heartbeat);
	evtimer_del(zk->reinit);
	evtimer_del(zk->resync);
	evtimer_del(zk->stall);
}

/* Close if needed and free everything. */
void
zk_free(struct zk *zk)
{
	struct zk_record *r;

	zk->cb = NULL;
	if (zk->abandoned) {
		zk_close_handle(zk); /* the socket is shut: no CloseSession reaches the server */
		zk_gdelete_clear(zk);
		zk_subs_clear(zk); /* watches their owners kept to the end */
	} else
		zk_close(zk);
	while ((r = TAILQ_FIRST(&zk->records)) != NULL) {
		TAILQ_REMOVE(&zk->records, r, entry);
		if (r->kind == ZK_RECORD_REPLY)
			zk_op_free(r->op);
		free(r->path);
		free(r);
	}
	event_free(zk->io);
	event_free(zk->kick);
	event_free(zk->heartbeat);
	event_free(zk->reinit);
	event_free(zk->resync);
	event_free(zk->stall);
	log_limit_flush(&zk->lim_delete);
	log_limit_flush(&zk->lim_stall);
	log_limit_flush(&zk->lim_lost);
	log_limit_flush(&zk->lim_auth);
	log_limit_flush(&zk->lim_init);
	free(zk->hosts);
	free(zk->auth);
	free(zk->reader_id);
	free(zk);
}

/* The session's state. */
enum zk_state
zk_state(const struct zk *zk)
{
	return zk->state;
}

/* The current session id, 0 before the first session. */
int64_t
zk_session_id(const struct zk *zk)
{
	return zk->session_id;
}

/* A number that changes with every new session. */
uint64_t
zk_epoch(const struct zk *zk)
{
	return zk->epoch;
}

/* The negotiated session timeout, or the requested one before the first session. */
int
zk_timeout_ms(const struct zk *zk)
{
	if (zk->zh != NULL && zk->session_id != 0)
		return zoo_recv_timeout(zk->zh);
	return zk->requested_timeout_ms;
}

/* The lease deadline on CLOCK_BOOTTIME, or 0 while no request of this session got an answer. */
uint64_t
zk_deadline_ns(const struct zk *zk)
{
	if (zk->answered_ns == 0)
		return 0;
	return zk->answered_ns + (uint64_t)(zk_timeout_ms(zk) - zk->margin_ms) * CLOCK_NS_PER_MS;
}
