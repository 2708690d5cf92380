/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* zk-int.h: what the files of the session layer (zk*.c) share; no one else includes it. */
#ifndef ZK_INT_H
#define ZK_INT_H

#include <stdint.h>

#include "clockoff.h"
#include "compat.h"
#include "deadnames.h"
#include "log.h"
#include "zk.h"

/*
 * At most this many requests are in the library's hands at once; the others wait in our
 * queue, in order. A heartbeat jumps the queue, so it waits behind at most these.
 */
#define ZK_INFLIGHT_MAX 32

/* The heartbeat delay histogram's upper bounds, in seconds (+Inf follows). */
#define ZK_HB_BUCKETS ZK_HEARTBEAT_BUCKETS

enum zk_op_type {
	ZK_OP_CREATE,
	ZK_OP_GET,
	ZK_OP_EXISTS,
	ZK_OP_CHILDREN,
	ZK_OP_SET,
	ZK_OP_DELETE,
	ZK_OP_GET_ACL,
	ZK_OP_SET_ACL,
	ZK_OP_WRITE_CREATE, /* one transaction: a node written (or created), another created */
};

enum zk_sub_kind { ZK_SUB_DATA, ZK_SUB_CHILD };

struct zk_owner;
struct zk_watched;

/* One request, from zk_request until its completion has been dispatched. */
struct zk_op {
	struct zk *zk;
	enum zk_op_type type;
	char *path;
	char *data; /* create, set: kept until issued */
	int len;
	int flags_or_version;
	zk_reply_cb cb;
	zk_watch_cb wcb;
	void *arg;
	struct zk_owner *owner; /* NULL once cancelled */
	int issued;             /* in the library's hands (counted in zk->inflight) */
	uint64_t sent_ns;       /* CLOCK_BOOTTIME when issued */
	int64_t sent_us;        /* wall clock when issued, for the clock offset */
	int64_t recv_us;        /* wall clock when the library completed it */
	uint64_t epoch;

	int rc;
	char *created;
	char *value;
	int value_len;
	struct Stat stat;
	int has_stat;
	char **children;
	int nchildren;
	struct ACL_vector acl;       /* get-acl: our copy; create, set-acl: the ACL to send */
	struct zk_op_second *second; /* write-create: the nodes created in the same transaction */
	char **createds;             /* ... as created, second->n of them */

	TAILQ_ENTRY(zk_op) entry;       /* zk->queue while it waits for a slot */
	TAILQ_ENTRY(zk_op) owner_entry; /* owner->ops */
};

/* A write-create's creates, and what the library fills in until it completes. */
struct zk_op_second {
	char *path; /* of each node created (sequential: a prefix) */
	int n;      /* nodes created, each with its data */
	char **data;
	int *len;
	int flags;
	zoo_op_t *ops;            /* n + 1: the write, then the creates */
	zoo_op_result_t *results; /* n + 1 */
	struct Stat stat;         /* the write's (a set) */
	char (*created)[1024];    /* n */
};

/* A watch an owner waits on. */
struct zk_sub {
	enum zk_sub_kind kind;
	char *path;
	zk_watch_cb cb;
	void *arg;
	struct zk_owner *owner;
	struct zk_watched *watched;
	TAILQ_ENTRY(zk_sub) entry;       /* zk->subs */
	TAILQ_ENTRY(zk_sub) owner_entry; /* owner->subs */
	TAILQ_ENTRY(zk_sub) path_entry;  /* watched->subs */
};

/* The subscriptions of one path: a watch event costs its own subscribers. */
struct zk_watched {
	char *path;
	TAILQ_HEAD(, zk_sub) subs;
	struct zk_watched *next; /* the hash chain */
};

/* Everything of one owner (a callback's arg): its cancel costs only these. */
struct zk_owner {
	void *arg;
	TAILQ_HEAD(, zk_op) ops;
	TAILQ_HEAD(, zk_sub) subs;
	struct zk_owner *next; /* the hash chain */
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
	char *operator_id;            /* zk_set_operator: control records for this digest id */
	char *acl_root;               /* ... under this root */
	struct ACL acl_entries[3][3]; /* zk-acl.c: the creator's cdrwa, reader, operator */
	struct ACL_vector acl[3];     /* ... by node class: plain, job record, control folder */
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
	uint64_t hb_due_ns;      /* when the unanswered heartbeat was due, 0 if none */
	uint64_t hb_next_ns;     /* when the heartbeat timer is due next */
	int fd;                  /* the library's socket, as last armed */

	/* The heartbeat's delay: from when its timer was due to its answer (zk_hb_*). */
	uint64_t hb_buckets[ZK_HB_BUCKETS];
	uint64_t hb_count;
	double hb_sum;

	/* This host's clock against the servers' (zk-clock.c). */
	struct clockoff clock;
	int clock_warned;        /* a warning about it was logged */
	int64_t clock_warned_us; /* the offset it named */

	/* Faults that repeat while a server misbehaves: each warns once, then counts. */
	struct log_limit lim_delete, lim_stall, lim_lost, lim_auth, lim_init, lim_late;

	/* Requests: waiting for a slot, and how many are in the library's hands. */
	TAILQ_HEAD(, zk_op) queue;
	int nqueued;
	int inflight;
	/* Owners by arg: an open hash of chains. */
	struct zk_owner **owners;
	size_t nbuckets;
	size_t nowners;

	/* Subscriptions by path: an open hash of chains. */
	struct zk_watched **watched;
	size_t nwbuckets;
	size_t nwatched;

	TAILQ_HEAD(, zk_sub) subs;
	TAILQ_HEAD(, zk_record) records;
	TAILQ_HEAD(, zk_gdelete) gdeletes;
	struct deadnames dead; /* zk-gdelete.c: acknowledged deletes of this session */
};

/* zk.c */
void zk_kick(struct zk *);
int zk_answered(int rc);

/* zk-request.c */
void zk_request(struct zk *, enum zk_op_type, const char *path, const char *data, int len,
                int flags_or_version, zk_watch_cb, zk_reply_cb, void *arg, int urgent);
void zk_request_acl(struct zk *, enum zk_op_type, const char *path, const char *data, int len,
                    int flags_or_version, const struct ACL_vector *, zk_reply_cb, void *arg);
void zk_request_pump(struct zk *);
void zk_request_fail_queued(struct zk *, int rc);
void zk_request_op_free(struct zk_op *);
void zk_request_sub_add(struct zk *, const struct zk_op *);
void zk_request_sub_take(struct zk *, struct zk_sub *);
struct zk_sub *zk_request_sub_find(struct zk *, const char *path, int data, int child);
void zk_request_sub_free(struct zk *, struct zk_sub *);
void zk_request_subs_clear(struct zk *);
void zk_request_free_owners(struct zk *);
void zk_request_node_watcher(zhandle_t *, int type, int state, const char *path, void *ctx);

/* zk-acl.c */
const struct ACL_vector *zk_acl_for(const struct zk *, const char *path);

/* zk-gdelete.c */
void zk_gdelete_retry(struct zk *);
void zk_gdelete_clear(struct zk *);

/* zk-heartbeat.c */
void zk_heartbeat_send(struct zk *);
void zk_heartbeat_timer_cb(int fd, short what, void *arg);
void zk_heartbeat_stall_cb(int fd, short what, void *arg);

/* zk-clock.c */
void zk_clock_init(struct zk *);
void zk_clock_note(struct zk *, const struct zk_op *);

#endif
