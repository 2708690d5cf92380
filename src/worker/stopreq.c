/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * stopreq.c: a job's stop requests (`leasekeeper stop`), as the worker that runs the job
 * takes them.
 *
 * `leasekeeper stop JOB` creates <root>/jobs/<job>/stops/stop-<seq> (persistent, sequential)
 * holding {"by", "at", "timeout_ms", "fence"?, "kill"?, "no_restart"?}. Every worker that
 * carries the job watches the folder; the one whose run it names claims it by writing
 * "claimed": {"node", "at", "fence"} into it at version 0, as a run-now request is claimed,
 * so that it is taken once. The run it names: the one with that fencing token ("fence"), or
 * without one the run under way when the request was made, that is whose lease is older than
 * the request (its fence, the lease node's czxid, is below the request's czxid). The job
 * stops the run (stopreq_cb.take) and, when its record is written, hands back how it ended
 * (stopreq_finish), written into the node as "result". Whoever lists the folder deletes what
 * is done and older than STOPREQ_KEEP_MS, and requests nobody took long after their timeout.
 * A request read while its run was not under way here (an @continuous copy restarting under
 * its lease) is read again when a run starts (stopreq_ran): the folder's watch would not fire.
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "control.h"
#include "layout.h"
#include "log.h"
#include "stoprec.h"
#include "stopreq.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define STOPREQ_KEEP_MS  (10 * 60 * 1000LL) /* a finished request stays this long */
#define STOPREQ_GRACE_MS (60 * 1000LL)      /* an untaken one this long past its timeout */
#define STOPREQ_WAIT_MS  (10 * 1000LL)      /* the timeout of a request that names none */
#define STOPREQ_MAX_LIST (2 * CTLREC_MAX_REQUESTS)

static struct log_limit stopreq_lim;

/* One request claimed, until its result is written. */
struct stopreq_taken {
	char *name;
	json_t *data;   /* its data with our claim (and, once the run ended, the result) */
	int done;       /* the result is in data */
	int writing;    /* its write is under way */
	int claim_lost; /* the claim's answer was lost with the connection */
};

struct stopreq {
	struct zk *zk;
	char *dir;
	char *job;
	char *node;
	const struct stopreq_cb *cb;
	void *arg;
	int active;    /* watching the folder in this session */
	int unmatched; /* the last listing had a request for a run not under way here */
	struct stopreq_taken taken[STOPREQ_MAX_TAKEN];
	int ntaken;
};

static void stopreq_list(struct stopreq *);

/* A job's stop requests; stopreq_start once the worker is registered. */
struct stopreq *
stopreq_new(struct zk *zk, const char *root, const char *job, const struct stopreq_cb *cb,
            void *arg)
{
	struct stopreq *sr = xcalloc(1, sizeof *sr);

	sr->zk = zk;
	sr->dir = layout_job_stops(root, job);
	sr->job = xstrdup(job);
	sr->cb = cb;
	sr->arg = arg;
	return sr;
}

/* Forget one taken request. */
static void
stopreq_forget(struct stopreq *sr, int i)
{
	free(sr->taken[i].name);
	json_decref(sr->taken[i].data);
	sr->taken[i] = sr->taken[--sr->ntaken];
}

/* Forget the requests' state (a request taken and not finished stays claimed). */
void
stopreq_free(struct stopreq *sr)
{
	if (sr == NULL)
		return;
	zk_cancel(sr->zk, sr);
	while (sr->ntaken > 0)
		stopreq_forget(sr, sr->ntaken - 1);
	free(sr->dir);
	free(sr->job);
	free(sr->node);
	free(sr);
}

/* The index of a taken request by name, or -1. */
static int
stopreq_find(const struct stopreq *sr, const char *name)
{
	int i;

	for (i = 0; i < sr->ntaken; i++)
		if (strcmp(sr->taken[i].name, name) == 0)
			return i;
	return -1;
}

/* A result's write landed (or the node went); a connection error waits for the reconnect. */
static void
stopreq_write_cb(const struct zk_reply *reply, void *arg)
{
	struct stopreq *sr = arg;
	int i = stopreq_find(sr, znode_basename(reply->path));

	if (i < 0)
		return;
	sr->taken[i].writing = 0;
	if (zk_connection_error(reply->rc))
		return;
	if (reply->rc != ZOK && reply->rc != ZNONODE)
		log_warnx_limited(&stopreq_lim, "cannot write the result of %s: %s", reply->path,
		                  zerror(reply->rc));
	stopreq_forget(sr, i);
}

/* Write the results that are in and not under way. */
static void
stopreq_write(struct stopreq *sr)
{
	char *data, *path;
	int i;

	for (i = 0; i < sr->ntaken; i++) {
		if (!sr->taken[i].done || sr->taken[i].writing)
			continue;
		data = json_dumps(sr->taken[i].data, JSON_COMPACT);
		path = znode_join(sr->dir, sr->taken[i].name);
		sr->taken[i].writing = 1;
		zk_set(sr->zk, path, data, (int)strlen(data), -1, stopreq_write_cb, sr);
		free(path);
		free(data);
	}
}

/* The run the taken requests stopped ended so (result: {"outcome", ...}, stolen). */
void
stopreq_finish(struct stopreq *sr, json_t *result)
{
	char at[40];
	int i;

	clock_iso8601(clock_wall_ms(), at, sizeof at);
	json_object_set_new(result, "at", json_string(at));
	for (i = 0; i < sr->ntaken; i++)
		if (!sr->taken[i].done) {
			json_object_set(sr->taken[i].data, "result", result);
			sr->taken[i].done = 1;
		}
	json_decref(result);
	if (sr->active)
		stopreq_write(sr);
}

/* Whether requests were taken and wait for their run's end. */
int
stopreq_pending(const struct stopreq *sr)
{
	int i;

	for (i = 0; i < sr->ntaken; i++)
		if (!sr->taken[i].done)
			return 1;
	return 0;
}

/* Our claim was answered: take the request, or leave it to whoever took it. */
static void
stopreq_claim_cb(const struct zk_reply *reply, void *arg)
{
	struct stopreq *sr = arg;
	int i = stopreq_find(sr, znode_basename(reply->path));
	struct stoprec s;
	char *data;

	if (i < 0 || sr->taken[i].done)
		return;
	if (zk_connection_error(reply->rc)) {
		sr->taken[i].claim_lost = 1; /* landed or not: the next listing tells */
		return;
	}
	if (reply->rc != ZOK) {
		stopreq_forget(sr, i); /* taken by another, or withdrawn */
		return;
	}
	data = json_dumps(sr->taken[i].data, JSON_COMPACT);
	stoprec_parse(data, (int)strlen(data), &s);
	free(data);
	sr->cb->take(sr, sr->taken[i].name, &s, sr->arg);
}

/* Whether this worker's run is the one request s (made at czxid) names. */
static int
stopreq_mine(const struct stopreq *sr, const struct stoprec *s, int64_t czxid)
{
	int64_t fence = sr->cb->running(sr->arg);

	if (fence <= 0)
		return 0;
	return s->fence > 0 ? fence == s->fence : fence < czxid;
}

/* Claim a request at version 0 with what it held (data, len). */
static void
stopreq_claim(struct stopreq *sr, const char *path, const char *data, int len)
{
	json_t *o = json_loadb(data, (size_t)len, 0, NULL);
	char at[40], *text;
	struct stopreq_taken *t;

	if (!json_is_object(o) || sr->ntaken == STOPREQ_MAX_TAKEN) {
		if (o != NULL)
			json_decref(o);
		return;
	}
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	json_object_set_new(o, "claimed",
	                    json_pack("{s:s, s:s, s:I}", "node", sr->node, "at", at, "fence",
	                              (json_int_t)sr->cb->running(sr->arg)));
	t = &sr->taken[sr->ntaken++];
	memset(t, 0, sizeof *t);
	t->name = xstrdup(znode_basename(path));
	t->data = o;
	text = json_dumps(o, JSON_COMPACT);
	zk_set(sr->zk, path, text, (int)strlen(text), 0, stopreq_claim_cb, sr);
	free(text);
}

/*
 * A request whose claim's answer was lost in a reconnect: the claim landed (take it now),
 * or it did not (claim it again below); 1 when handled.
 */
static int
stopreq_lost_claim(struct stopreq *sr, const struct zk_reply *reply, const struct stoprec *s)
{
	int i = stopreq_find(sr, znode_basename(reply->path));

	if (i < 0 || !sr->taken[i].claim_lost)
		return 0;
	sr->taken[i].claim_lost = 0;
	if (s->req.claimed && !s->req.done && strcmp(s->req.node, sr->node) == 0) {
		stopreq_claim_cb(&(struct zk_reply){.rc = ZOK, .path = reply->path}, sr);
		return 1;
	}
	stopreq_forget(sr, i);
	return s->req.claimed;
}

/* One request as read: take it, clean it up, or leave it. */
static void
stopreq_get_cb(const struct zk_reply *reply, void *arg)
{
	struct stopreq *sr = arg;
	int64_t now = (int64_t)clock_wall_ms(), wait;
	struct stoprec s;
	char *who;

	if (reply->rc != ZOK || reply->stat == NULL)
		return;
	if (!stoprec_parse(reply->value, reply->value_len, &s)) {
		if (now - reply->stat->ctime > STOPREQ_KEEP_MS)
			zk_delete(sr->zk, reply->path, reply->stat->version, NULL, NULL);
		return;
	}
	if (stopreq_lost_claim(sr, reply, &s))
		return;
	if (s.req.done || s.req.claimed) {
		/* A claim never finished (its worker died) goes as a finished one does. */
		if (now - reply->stat->mtime > STOPREQ_KEEP_MS)
			zk_delete(sr->zk, reply->path, reply->stat->version, NULL, NULL);
		return;
	}
	wait = s.req.timeout_ms > 0 ? s.req.timeout_ms : STOPREQ_WAIT_MS;
	if (now - reply->stat->ctime > wait + STOPREQ_GRACE_MS) {
		zk_delete(sr->zk, reply->path, 0, NULL, NULL);
		return;
	}
	if (reply->stat->version != 0 || stopreq_find(sr, znode_basename(reply->path)) >= 0)
		return;
	if (!stopreq_mine(sr, &s, reply->stat->czxid)) {
		sr->unmatched = 1; /* a copy restarting under that fence may start: stopreq_ran */
		return;
	}
	/* Like every control record: honoured only where control needs credentials. */
	if (!control_allow(CONTROL_STOP, sr->job, znode_basename(reply->path)))
		return;
	who = utf8_quote_str(s.req.by);
	log_info("job %s: stop request %s by %s: claiming it", sr->job, znode_basename(reply->path),
	         who);
	free(who);
	stopreq_claim(sr, reply->path, reply->value, reply->value_len);
}

/* The folder's requests: read each (the newest STOPREQ_MAX_LIST). */
static void
stopreq_list_cb(const struct zk_reply *reply, void *arg)
{
	struct stopreq *sr = arg;
	char **names, *path;
	int i, from = 0;

	if (reply->rc != ZOK || reply->nchildren == 0)
		return;    /* a connection error: listed again at the reconnect */
	sr->unmatched = 0; /* the gets below tell again */
	names = xcalloc((size_t)reply->nchildren, sizeof *names);
	for (i = 0; i < reply->nchildren; i++)
		names[i] = reply->children[i];
	znode_sort(names, (size_t)reply->nchildren, "stop-");
	if (reply->nchildren > STOPREQ_MAX_LIST)
		from = reply->nchildren - STOPREQ_MAX_LIST;
	for (i = from; i < reply->nchildren; i++) {
		path = znode_join(sr->dir, names[i]);
		zk_get(sr->zk, path, NULL, stopreq_get_cb, sr);
		free(path);
	}
	free(names);
}

/* The folder changed. */
static void
stopreq_watch_cb(int type, const char *path, void *arg)
{
	struct stopreq *sr = arg;

	(void)type;
	(void)path;
	if (sr->active)
		stopreq_list(sr);
}

/* List the folder, with a watch. */
static void
stopreq_list(struct stopreq *sr)
{
	if (sr->active)
		zk_children(sr->zk, sr->dir, stopreq_watch_cb, stopreq_list_cb, sr);
}

/*
 * A run started here: a request read while no run (or another) was under way may name this
 * one (an @continuous copy restarted under the same lease shares its fence): read them again.
 * The folder's watch fires only when a request is made or goes.
 */
void
stopreq_ran(struct stopreq *sr)
{
	if (!sr->active || !sr->unmatched)
		return;
	sr->unmatched = 0;
	zk_children(sr->zk, sr->dir, NULL, stopreq_list_cb, sr);
}

/* The folder exists (made now, or before): list it. */
static void
stopreq_made_cb(const struct zk_reply *reply, void *arg)
{
	struct stopreq *sr = arg;

	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && !zk_connection_error(reply->rc))
		log_warnx_limited(&stopreq_lim, "cannot create %s: %s", sr->dir, zerror(reply->rc));
	stopreq_list(sr);
}

/* The worker is registered as node: watch the requests (the folder is made if missing). */
void
stopreq_start(struct stopreq *sr, const char *node)
{
	free(sr->node);
	sr->node = xstrdup(node);
	if (sr->active)
		return;
	sr->active = 1;
	zk_create_path(sr->zk, sr->dir, ZOO_PERSISTENT, stopreq_made_cb, sr);
	stopreq_write(sr);
}

/* Session events: list again after a reconnect; after an expiry, wait for stopreq_start. */
void
stopreq_session(struct stopreq *sr, enum zk_event event)
{
	int i;

	switch (event) {
	case ZK_EVENT_RECONNECTED:
		stopreq_write(sr);
		stopreq_list(sr);
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		zk_cancel(sr->zk, sr);
		sr->active = 0;
		for (i = 0; i < sr->ntaken; i++)
			sr->taken[i].writing = 0;
		break;
	default:
		break;
	}
}
