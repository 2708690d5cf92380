/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * runreq.c: a job's run-now requests, as a worker that carries the job takes them.
 *
 * `leasekeeper run-now JOB` creates <root>/jobs/<job>/requests/req-<seq> (persistent,
 * sequential) holding {"by", "at", "timeout_ms"}. Every worker that carries the job watches
 * the folder; one that could act on a request now (runreq_cb.can_take) claims it by writing
 * "claimed": {"node", "at"} into it at version 0, as a tick is claimed: of all the workers
 * that see it, exactly one write lands, so the request is acted on once. The job then runs
 * (or restarts) under its lease and hands back how it ended (runreq_finish), written into
 * the node as "result". Whoever lists the folder deletes what is done and older than
 * RUNREQ_KEEP_MS, requests nobody took long after their timeout (the command that made them
 * is gone), and claims a worker never finished for a day; a request claimed by this node id
 * that this process does not know (it restarted) is finished as "lost".
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ctlrec.h"
#include "layout.h"
#include "log.h"
#include "runreq.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define RUNREQ_KEEP_MS   (10 * 60 * 1000LL)        /* a finished request stays this long */
#define RUNREQ_GRACE_MS  (60 * 1000LL)             /* an untaken one this long past its timeout */
#define RUNREQ_STALE_MS  (24 * 3600 * 1000LL)      /* a claimed, unfinished one this long */
#define RUNREQ_WAIT_MS   (60 * 1000LL)             /* the timeout of a request that names none */
#define RUNREQ_MAX_TRIM  100                       /* deletes of excess nodes per listing */
#define RUNREQ_MAX_LISTS (2 * CTLREC_MAX_REQUESTS) /* the newest read at each listing */

static struct log_limit runreq_lim;

struct runreq {
	struct zk *zk;
	char *dir;
	char *job;
	char *node;
	const struct runreq_cb *cb;
	void *arg;
	int active;     /* watching the folder in this session */
	int pending;    /* a request was left untaken at the last listing */
	char *claiming; /* the request whose claim was sent, until it is answered */
	json_t *claim;  /* ... its data with our claim */
	int claim_lost; /* ... its answer was lost with the connection */
	char *taken;    /* the request being acted on */
	json_t *result; /* the request's data with its result, until written */
	int writing;    /* the result's write is under way */
};

static void runreq_list(struct runreq *);

/* A job's requests; runreq_start once the worker is registered. */
struct runreq *
runreq_new(struct zk *zk, const char *root, const char *job, const struct runreq_cb *cb, void *arg)
{
	struct runreq *rr = xcalloc(1, sizeof *rr);

	rr->zk = zk;
	rr->dir = layout_job_requests(root, job);
	rr->job = xstrdup(job);
	rr->cb = cb;
	rr->arg = arg;
	return rr;
}

/* Forget the requests' state (a request taken and not finished is finished as "lost" later). */
void
runreq_free(struct runreq *rr)
{
	if (rr == NULL)
		return;
	zk_cancel(rr->zk, rr);
	free(rr->dir);
	free(rr->job);
	free(rr->node);
	free(rr->claiming);
	free(rr->taken);
	if (rr->claim != NULL)
		json_decref(rr->claim);
	if (rr->result != NULL)
		json_decref(rr->result);
	free(rr);
}

/* Send the result (again). */
static void runreq_write(struct runreq *);

/* The result's write landed, or the node went, or it waits for a reconnect. */
static void
runreq_write_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;

	rr->writing = 0;
	if (zk_connection_error(reply->rc))
		return; /* sent again at the reconnect */
	if (reply->rc != ZOK && reply->rc != ZNONODE)
		log_warnx_limited(&runreq_lim, "cannot write the result of %s: %s", reply->path,
		                  zerror(reply->rc));
	json_decref(rr->result);
	rr->result = NULL;
	free(rr->taken);
	rr->taken = NULL;
	if (rr->pending)
		runreq_list(rr);
}

static void
runreq_write(struct runreq *rr)
{
	char *data = json_dumps(rr->result, JSON_COMPACT), *path = znode_join(rr->dir, rr->taken);

	rr->writing = 1;
	zk_set(rr->zk, path, data, (int)strlen(data), -1, runreq_write_cb, rr);
	free(path);
	free(data);
}

/*
 * The request taken ended so (result: {"outcome", "exit_status"?, "signal"?, "error"?, ...},
 * stolen): write it into the request node.
 */
void
runreq_finish(struct runreq *rr, json_t *result)
{
	char at[40];

	if (rr->taken == NULL || rr->claim == NULL || rr->result != NULL) {
		json_decref(result);
		return;
	}
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	json_object_set_new(result, "at", json_string(at));
	rr->result = rr->claim;
	rr->claim = NULL;
	json_object_set_new(rr->result, "result", result);
	runreq_write(rr);
}

/* The request taken, as claimed (its "params", ...); NULL if none is taken. */
const json_t *
runreq_taken_data(const struct runreq *rr)
{
	return rr->taken != NULL ? rr->claim : NULL;
}

/* Our claim was answered (or lost in a reconnect: the next listing tells). */
static void
runreq_claim_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	struct ctlrec_request r;
	char *data;

	if (rr->claiming == NULL)
		return;
	if (zk_connection_error(reply->rc)) {
		rr->claim_lost = 1; /* landed or not: the next listing tells */
		return;
	}
	if (reply->rc != ZOK) {
		/* Another worker took it (or it was deleted): look for another. */
		free(rr->claiming);
		rr->claiming = NULL;
		json_decref(rr->claim);
		rr->claim = NULL;
		if (rr->pending)
			runreq_list(rr);
		return;
	}
	rr->taken = rr->claiming;
	rr->claiming = NULL;
	data = json_dumps(rr->claim, JSON_COMPACT);
	ctlrec_request(data, (int)strlen(data), &r);
	free(data);
	rr->cb->take(rr, rr->taken, r.by, r.timeout_ms > 0 ? r.timeout_ms : RUNREQ_WAIT_MS,
	             rr->arg);
}

/* Claim a request at version 0 with what it held (data, len). */
static void
runreq_claim(struct runreq *rr, const char *path, const char *data, int len)
{
	json_t *o = json_loadb(data, (size_t)len, 0, NULL), *c;
	char at[40], *text;

	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return;
	}
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	c = json_pack("{s:s, s:s}", "node", rr->node, "at", at);
	json_object_set_new(o, "claimed", c);
	text = json_dumps(o, JSON_COMPACT);
	rr->claiming = xstrdup(znode_basename(path));
	rr->claim = o;
	zk_set(rr->zk, path, text, (int)strlen(text), 0, runreq_claim_cb, rr);
	free(text);
}

/* One request as read: take it, clean it up, or leave it. */
static void
runreq_get_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	const char *name;
	struct ctlrec_request r;
	int64_t now = (int64_t)clock_wall_ms(), age, idle, wait;
	char *who;

	if (reply->rc != ZOK || reply->stat == NULL)
		return;
	name = znode_basename(reply->path);
	age = now - reply->stat->ctime;
	idle = now - reply->stat->mtime;
	if (!ctlrec_request(reply->value, reply->value_len, &r)) {
		/* Not a request (too large, not JSON): garbage, once it is old. */
		if (age > RUNREQ_STALE_MS)
			zk_delete(rr->zk, reply->path, reply->stat->version, NULL, NULL);
		return;
	}
	if (r.done) {
		if (idle > RUNREQ_KEEP_MS)
			zk_delete(rr->zk, reply->path, reply->stat->version, NULL, NULL);
		return;
	}
	if (r.claimed) {
		if (strcmp(r.node, rr->node) != 0) {
			if (idle > RUNREQ_STALE_MS)
				zk_delete(rr->zk, reply->path, reply->stat->version, NULL, NULL);
			return;
		}
		if (rr->taken != NULL && strcmp(rr->taken, name) == 0)
			return; /* ours, under way */
		if (rr->claiming != NULL && strcmp(rr->claiming, name) == 0) {
			rr->claim_lost = 0;
			if (rr->cb->can_take(rr->arg)) {
				/* Our claim landed; its answer was lost in a reconnect. */
				runreq_claim_cb(&(struct zk_reply){.rc = ZOK, .path = reply->path},
				                rr);
				return;
			}
			/* Too late to act on it: report it lost, below. */
			json_decref(rr->claim);
			rr->claim = NULL;
			free(rr->claiming);
			rr->claiming = NULL;
		}
		if (rr->taken != NULL || rr->claiming != NULL)
			return; /* finished as lost once the one under way is done */
		/* Ours, but not known here: this worker restarted, or lost its session, meanwhile. */
		rr->taken = xstrdup(name);
		rr->claim = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
		if (!json_is_object(rr->claim)) {
			if (rr->claim != NULL)
				json_decref(rr->claim);
			rr->claim = json_object();
		}
		log_warnx("job %s: run-now request %s was taken here and lost (a restart or a new "
		          "session): reporting it so",
		          rr->job, name);
		runreq_finish(rr, json_pack("{s:s, s:s, s:s}", "outcome", "lost", "node", rr->node,
		                            "error",
		                            "the worker lost track of the run (a restart or a "
		                            "new session)"));
		return;
	}
	wait = r.timeout_ms > 0 ? r.timeout_ms : RUNREQ_WAIT_MS;
	if (age > wait + RUNREQ_GRACE_MS) {
		/* The command that made it is gone: nobody will read what happens. */
		zk_delete(rr->zk, reply->path, 0, NULL, NULL);
		return;
	}
	if (rr->claim_lost && rr->claiming != NULL && strcmp(rr->claiming, name) == 0) {
		/* Our claim's write was lost with the connection and did not land: again. */
		rr->claim_lost = 0;
		free(rr->claiming);
		rr->claiming = NULL;
		json_decref(rr->claim);
		rr->claim = NULL;
	}
	if (reply->stat->version != 0 || rr->claiming != NULL || rr->taken != NULL ||
	    !rr->cb->can_take(rr->arg)) {
		rr->pending = 1;
		return;
	}
	who = utf8_quote_str(r.by);
	log_info("job %s: run-now request %s by %s: claiming it", rr->job, name, who);
	free(who);
	runreq_claim(rr, reply->path, reply->value, reply->value_len);
}

/* The folder's requests, oldest first: read each (deleting what is beyond any bound). */
static void
runreq_list_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	char **names, *path;
	int i, excess, from = 0;

	if (reply->rc != ZOK)
		return; /* a connection error: listed again at the reconnect */
	rr->pending = 0;
	if (reply->nchildren == 0)
		return;
	names = xcalloc((size_t)reply->nchildren, sizeof *names);
	for (i = 0; i < reply->nchildren; i++)
		names[i] = reply->children[i];
	znode_sort(names, (size_t)reply->nchildren, "req-");
	if (reply->nchildren > RUNREQ_MAX_LISTS) {
		excess = reply->nchildren - RUNREQ_MAX_LISTS;
		from = excess;
		for (i = 0; i < excess && i < RUNREQ_MAX_TRIM; i++) {
			path = znode_join(rr->dir, names[i]);
			zk_delete(rr->zk, path, -1, NULL, NULL);
			free(path);
		}
	}
	for (i = from; i < reply->nchildren; i++) {
		path = znode_join(rr->dir, names[i]);
		zk_get(rr->zk, path, NULL, runreq_get_cb, rr);
		free(path);
	}
	free(names);
}

/* The folder changed. */
static void
runreq_watch_cb(int type, const char *path, void *arg)
{
	struct runreq *rr = arg;

	(void)type;
	(void)path;
	if (rr->active)
		runreq_list(rr);
}

/* List the folder, with a watch. */
static void
runreq_list(struct runreq *rr)
{
	if (rr->active)
		zk_children(rr->zk, rr->dir, runreq_watch_cb, runreq_list_cb, rr);
}

/* The folder exists (made now, or before): list it. */
static void
runreq_made_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;

	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && !zk_connection_error(reply->rc))
		log_warnx_limited(&runreq_lim, "cannot create %s: %s", rr->dir, zerror(reply->rc));
	runreq_list(rr);
}

/* The worker is registered as node: watch the requests (the folder is made if missing). */
void
runreq_start(struct runreq *rr, const char *node)
{
	free(rr->node);
	rr->node = xstrdup(node);
	if (rr->active)
		return;
	rr->active = 1;
	zk_create_path(rr->zk, rr->dir, ZOO_PERSISTENT, runreq_made_cb, rr);
	if (rr->result != NULL && !rr->writing)
		runreq_write(rr);
}

/* The job is free again: a request it had to leave may be taken now. */
void
runreq_check(struct runreq *rr)
{
	if (rr->pending && rr->claiming == NULL && rr->taken == NULL && rr->cb->can_take(rr->arg))
		runreq_list(rr);
}

/* Session events: list again after a reconnect; after an expiry, wait for runreq_start. */
void
runreq_session(struct runreq *rr, enum zk_event event)
{
	switch (event) {
	case ZK_EVENT_RECONNECTED:
		if (rr->result != NULL && !rr->writing)
			runreq_write(rr);
		runreq_list(rr);
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		zk_cancel(rr->zk, rr);
		rr->active = 0;
		rr->writing = 0;
		if (rr->claiming != NULL)
			rr->claim_lost = 1;
		break;
	default:
		break;
	}
}
