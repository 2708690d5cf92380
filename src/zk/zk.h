/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* zk.h: one ZooKeeper session on a libevent loop, with a heartbeat and a lease deadline. */
#ifndef ZK_H
#define ZK_H

#include <stdint.h>

#include <zookeeper/zookeeper.h>

struct event_base;
struct zk;

enum zk_state {
	ZK_STATE_CONNECTING,
	ZK_STATE_CONNECTED,
	ZK_STATE_EXPIRED,
	ZK_STATE_AUTH_FAILED,
	ZK_STATE_CLOSING,
	ZK_STATE_CLOSED,
};

/* What the session tells its owner. */
enum zk_event {
	ZK_EVENT_SESSION_NEW,  /* connected with a new session: nothing of the old one remains */
	ZK_EVENT_RECONNECTED,  /* the same session is back after a disconnect */
	ZK_EVENT_DISCONNECTED, /* the connection dropped; the session may still be alive */
	ZK_EVENT_EXPIRED,      /* the session is gone, with its ephemeral nodes and watches */
	ZK_EVENT_DEADLINE,     /* the lease deadline moved forward */
	ZK_EVENT_CLOSED,       /* zk_close finished */
};

/* The answer to one request, valid only during the callback. */
struct zk_reply {
	int rc;
	const char *path;      /* the request's path */
	const char *created;   /* create: the path the server created (write-create: the first) */
	char *const *createds; /* write-creates: each node created, in order */
	const char *value;     /* get */
	int value_len;
	const struct Stat *stat; /* get, exists, create, set, children; NULL otherwise */
	char *const *children;   /* children */
	int nchildren;
	const struct ACL_vector *acl; /* get-acl */
	uint64_t sent_ns;
};

#define ZK_HEARTBEAT_BUCKETS 9

/* zk_write_create's version that creates the first node instead of setting it. */
#define ZK_WRITE_CREATES (-2)

/* The heartbeat's delay, from when it was due to its answer: a histogram, for /metrics. */
struct zk_heartbeat_stats {
	const double *bounds; /* ZK_HEARTBEAT_BUCKETS upper bounds, seconds (+Inf follows) */
	uint64_t buckets[ZK_HEARTBEAT_BUCKETS]; /* cumulative */
	uint64_t count;
	double sum; /* seconds */
};

typedef void (*zk_event_cb)(struct zk *, enum zk_event, void *arg);
typedef void (*zk_reply_cb)(const struct zk_reply *, void *arg);
typedef void (*zk_watch_cb)(int type, const char *path, void *arg);

struct zk *zk_create(struct event_base *, const char *hosts, int timeout_ms, int margin_ms,
                     const char *auth, zk_event_cb, void *arg);
void zk_close(struct zk *);
void zk_free(struct zk *);
void zk_abandon(struct zk *);

enum zk_state zk_state(const struct zk *);
const char *zk_state_name(enum zk_state);
const char *zk_event_name(enum zk_event);
int64_t zk_session_id(const struct zk *);
uint64_t zk_epoch(const struct zk *);
int zk_timeout_ms(const struct zk *);
uint64_t zk_deadline_ns(const struct zk *);
int zk_connection_error(int rc);
int zk_pending_ops(const struct zk *);

void zk_create_node(struct zk *, const char *path, const char *data, int len, int flags,
                    zk_reply_cb, void *arg);
void zk_create_path(struct zk *, const char *path, int flags, zk_reply_cb, void *arg);
void zk_get(struct zk *, const char *path, zk_watch_cb, zk_reply_cb, void *arg);
void zk_get_acl(struct zk *, const char *path, zk_reply_cb, void *arg);
void zk_set_reader(struct zk *, const char *digest_id);
void zk_set_operator(struct zk *, const char *root, const char *digest_id);
int zk_operator_perms(const struct zk *, const char *path);
const char *zk_operator_id(const struct zk *);
void zk_create_node_acl(struct zk *, const char *path, const char *data, int len, int flags,
                        const struct ACL_vector *, zk_reply_cb, void *arg);
void zk_set_acl(struct zk *, const char *path, int version, const struct ACL_vector *, zk_reply_cb,
                void *arg);
void zk_exists(struct zk *, const char *path, zk_reply_cb, void *arg);
void zk_children(struct zk *, const char *path, zk_watch_cb, zk_reply_cb, void *arg);
void zk_set(struct zk *, const char *path, const char *data, int len, int version, zk_reply_cb,
            void *arg);
void zk_write_create(struct zk *, const char *path, const char *data, int len, int version,
                     const char *cpath, const char *cdata, int clen, int cflags, zk_reply_cb,
                     void *arg);
void zk_write_creates(struct zk *, const char *path, const char *data, int len, int version,
                      const char *cpath, const char *const *cdata, const int *clen, int n,
                      int cflags, zk_reply_cb, void *arg);
void zk_delete(struct zk *, const char *path, int version, zk_reply_cb, void *arg);
void zk_delete_guaranteed(struct zk *, const char *path);
void zk_delete_protected(struct zk *, const char *dir, const char *uuid);
int zk_drop_ghosts(struct zk *, const char *dir, char **names, int n, const char *own);
void zk_cancel(struct zk *, void *arg);

void zk_heartbeat_stats(const struct zk *, struct zk_heartbeat_stats *);
int zk_clock_offset(const struct zk *, int64_t *offset_ms, int64_t *error_ms);
uint64_t zk_cluster_now_ms(const struct zk *);

#endif
