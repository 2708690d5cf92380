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
 *
 * The parts: zk-request.c (requests, paced and indexed by owner), zk-heartbeat.c,
 * zk-gdelete.c (guaranteed deletes) and zk-clock.c (this host's clock against the servers').
 */

#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "xmalloc.h"
#include "zk-int.h"

static void zk_arm(struct zk *);
static void zk_dispatch(struct zk *);
static void zk_open(struct zk *);

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
int
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

/* Create a node; the reply carries the created path and its Stat (czxid: fencing token). */
void
zk_create_node(struct zk *zk, const char *path, const char *data, int len, int flags,
               zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_CREATE, path, data, len, flags, NULL, cb, arg, 0);
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
	zk_request(zk, ZK_OP_GET, path, NULL, 0, 0, wcb, cb, arg, 0);
}

/* Stat a node, without a watch (an exists watch on a missing node would linger). */
void
zk_exists(struct zk *zk, const char *path, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_EXISTS, path, NULL, 0, 0, NULL, cb, arg, 0);
}

/* List a node's children; with wcb, also watch them. */
void
zk_children(struct zk *zk, const char *path, zk_watch_cb wcb, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_CHILDREN, path, NULL, 0, 0, wcb, cb, arg, 0);
}

/* Read a node's ACL. */
void
zk_get_acl(struct zk *zk, const char *path, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_GET_ACL, path, NULL, 0, 0, NULL, cb, arg, 0);
}

/* Write a node's data at a version (-1: any). */
void
zk_set(struct zk *zk, const char *path, const char *data, int len, int version, zk_reply_cb cb,
       void *arg)
{
	zk_request(zk, ZK_OP_SET, path, data, len, version, NULL, cb, arg, 0);
}

/* Delete a node at a version (-1: any). */
void
zk_delete(struct zk *zk, const char *path, int version, zk_reply_cb cb, void *arg)
{
	zk_request(zk, ZK_OP_DELETE, path, NULL, 0, version, NULL, cb, arg, 0);
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
	zk_clock_note(zk, op);
	if (op->wcb != NULL && op->rc == ZOK && op->epoch == zk->epoch)
		zk_request_sub_add(zk, op);
	if (op->cb != NULL) {
		memset(&reply, 0, sizeof reply);
		reply.rc = op->rc;
		reply.path = op->path;
		reply.created = op->created;
		reply.createds = op->createds;
		reply.value = op->value;
		reply.value_len = op->value_len;
		reply.stat = op->has_stat ? &op->stat : NULL;
		reply.children = op->children;
		reply.nchildren = op->nchildren;
		reply.acl = op->type == ZK_OP_GET_ACL && op->rc == ZOK ? &op->acl : NULL;
		reply.sent_ns = op->sent_ns;
		op->cb(&reply, op->arg);
	}
	zk_request_op_free(op);
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
		if ((sub = zk_request_sub_find(zk, path, data, child)) == NULL)
			return;
		zk_request_sub_take(zk, sub);
		sub->cb(type, path, sub->arg);
		free(sub->path);
		free(sub);
	}
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
		zk_request_subs_clear(zk);
		zk_request_fail_queued(zk, ZSESSIONEXPIRED);
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
		zk_request_subs_clear(zk);
		zk_request_fail_queued(zk, ZAUTHFAILED);
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
	zk_request_pump(zk);
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

/* Dispatch and re-arm soon, from the loop. */
void
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
	zk->lim_late.burst = 5;
	zk->base = base;
	zk->hosts = xstrdup(hosts);
	zk->auth = auth != NULL ? xstrdup(auth) : NULL;
	zk->requested_timeout_ms = timeout_ms;
	zk->margin_ms = margin_ms;
	zk->cb = cb;
	zk->cb_arg = arg;
	zk->state = ZK_STATE_CONNECTING;
	zk->state_since_ns = clock_now_ns();
	TAILQ_INIT(&zk->queue);
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
	zk->stall = evtimer_new(base, zk_heartbeat_stall_cb, zk);
	zk_clock_init(zk);
	zk->fd = -1;
	tv.tv_sec = timeout_ms / 3 / 1000;
	tv.tv_usec = (timeout_ms / 3 % 1000) * 1000;
	evtimer_add(zk->heartbeat, &tv);
	zk->hb_next_ns = clock_now_ns() + (uint64_t)(timeout_ms / 3) * CLOCK_NS_PER_MS;
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
	zk_request_fail_queued(zk, ZCLOSING);
	zk_dispatch(zk);
	zk_gdelete_clear(zk);
	zk_request_subs_clear(zk);
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
		zk_request_fail_queued(zk, ZCLOSING);
		zk_gdelete_clear(zk);
		zk_request_subs_clear(zk); /* watches their owners kept to the end */
	} else
		zk_close(zk);
	while ((r = TAILQ_FIRST(&zk->records)) != NULL) {
		TAILQ_REMOVE(&zk->records, r, entry);
		if (r->kind == ZK_RECORD_REPLY)
			zk_request_op_free(r->op);
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
	log_limit_flush(&zk->lim_late);
	zk_request_free_owners(zk);
	deadnames_clear(&zk->dead);
	free(zk->hosts);
	free(zk->auth);
	free(zk->reader_id);
	free(zk->operator_id);
	free(zk->acl_root);
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
