/* SPDX-License-Identifier: Apache-2.0 */
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
#include "control.h"
#include "ctlrec.h"
#include "format.h"
#include "layout.h"
#include "log.h"
#include "runreq.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define RUNREQ_KEEP_MS    (10 * 60 * 1000LL)   /* a finished request stays this long */
#define RUNREQ_GRACE_MS   (60 * 1000LL)        /* an untaken one this long past its timeout */
#define RUNREQ_STALE_MS   (24 * 3600 * 1000LL) /* a claimed, unfinished one this long */
#define RUNREQ_WAIT_MS    (60 * 1000LL)        /* the timeout of a request that names none */
#define RUNREQ_MAX_TRIM   100                  /* deletes of excess nodes per listing */
#define RUNREQ_LIMIT_STR  "32"                 /* CTLREC_MAX_REQUESTS, for messages */
#define RUNREQ_REFUSED_MS (60 * 1000LL)        /* a refused request stays this long */
#define RUNREQ_RATE_BURST 10                   /* requests a job takes at once ... */
#define RUNREQ_RATE_MS    (3 * 1000LL)         /* ... then one per this long */

_Static_assert(CTLREC_MAX_REQUESTS == 32, "RUNREQ_LIMIT_STR says 32");

static struct log_limit runreq_lim;

struct runreq {
	struct zk *zk;
	char *dir;
	char *job;
	char *node;
	const struct runreq_cb *cb;
	void *arg;
	int active;         /* watching the folder in this session */
	int pending;        /* a request was left untaken at the last listing */
	char *claiming;     /* the request whose claim was sent, until it is answered */
	json_t *claim;      /* ... its data with our claim */
	int claim_lost;     /* ... its answer was lost with the connection */
	char *taken;        /* the request being acted on */
	json_t *result;     /* the request's data with its result, until written */
	int writing;        /* the result's write is under way */
	int paused;         /* the job is paused: only forced requests are taken */
	double tokens;      /* the rate's bucket: requests that may be taken now */
	uint64_t tokens_ns; /* ... as of this time */
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
	rr->tokens = RUNREQ_RATE_BURST;
	rr->tokens_ns = clock_now_ns();
	return rr;
}

/* The job was paused or resumed (its record, as honoured). */
void
runreq_paused(struct runreq *rr, int paused)
{
	rr->paused = paused;
}

/* Whether the job's rate lets one more request be taken now (taking a token if so). */
static int
runreq_rate_take(struct runreq *rr)
{
	uint64_t now = clock_now_ns();

	rr->tokens += (double)(now - rr->tokens_ns) / ((double)RUNREQ_RATE_MS * 1e6);
	rr->tokens_ns = now;
	if (rr->tokens > RUNREQ_RATE_BURST)
		rr->tokens = RUNREQ_RATE_BURST;
	if (rr->tokens < 1.0)
		return 0;
	rr->tokens -= 1.0;
	return 1;
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
	if (reply->rc == ZBADVERSION)
		log_warnx_limited(&runreq_lim,
		                  "cannot write the result of %s: someone else changed it after "
		                  "our claim (its result is not ours)",
		                  reply->path);
	else if (reply->rc != ZOK && reply->rc != ZNONODE)
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
	char *data, *path = znode_join(rr->dir, rr->taken);

	format_stamp(rr->result);
	data = json_dumps(rr->result, JSON_COMPACT);
	rr->writing = 1;
	/* Our claim made version 1: a node changed since is not ours to finish. */
	zk_set(rr->zk, path, data, (int)strlen(data), 1, runreq_write_cb, rr);
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
	format_stamp(o);
	text = json_dumps(o, JSON_COMPACT);
	rr->claiming = xstrdup(znode_basename(path));
	rr->claim = o;
	zk_set(rr->zk, path, text, (int)strlen(text), 0, runreq_claim_cb, rr);
	free(text);
}

/* Refuse and delete a child that is not a valid request (junk cannot fill the folder). */
static void
runreq_drop(struct runreq *rr, const char *path, int version, const char *why)
{
	control_refused(rr->job, znode_basename(path), why);
	zk_delete(rr->zk, path, version, NULL, NULL);
}

/* Refuse a valid request that may not run now: claim it with a result that says why. */
static void
runreq_refuse(struct runreq *rr, const struct zk_reply *reply, const char *why)
{
	json_t *o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	char at[40], *text;

	control_refused(rr->job, znode_basename(reply->path), why);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return;
	}
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	json_object_set_new(o, "claimed", json_pack("{s:s, s:s}", "node", rr->node, "at", at));
	json_object_set_new(o, "result",
	                    json_pack("{s:s, s:s, s:s, s:s}", "outcome", "refused", "node",
	                              rr->node, "error", why, "at", at));
	text = json_dumps(o, JSON_COMPACT);
	zk_set(rr->zk, reply->path, text, (int)strlen(text), 0, NULL, NULL);
	free(text);
	json_decref(o);
}

/* A finished or claimed request: clean it up when old, or report ours as lost. */
static void
runreq_claimed(struct runreq *rr, const struct zk_reply *reply, const struct ctlrec_request *r)
{
	const char *name = znode_basename(reply->path);
	int64_t idle = (int64_t)zk_cluster_now_ms(rr->zk) - reply->stat->mtime;

	if (r->done) {
		if (idle >
		    (strcmp(r->outcome, "refused") == 0 ? RUNREQ_REFUSED_MS : RUNREQ_KEEP_MS))
			zk_delete(rr->zk, reply->path, reply->stat->version, NULL, NULL);
		return;
	}
	if (strcmp(r->node, rr->node) != 0) {
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
			runreq_claim_cb(&(struct zk_reply){.rc = ZOK, .path = reply->path}, rr);
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
	runreq_finish(rr,
	              json_pack("{s:s, s:s, s:s}", "outcome", "lost", "node", rr->node, "error",
	                        "the worker lost track of the run (a restart or a new session)"));
}

/* One request as read: refuse it, take it, clean it up, or leave it. */
static void
runreq_get_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	const char *name, *why;
	struct ctlrec_request r;
	int64_t age, wait;
	char refusal[200], *who;

	if (reply->rc != ZOK || reply->stat == NULL)
		return;
	name = znode_basename(reply->path);
	age = (int64_t)zk_cluster_now_ms(rr->zk) - reply->stat->ctime; /* server stamps */
	ctlrec_request(reply->value, reply->value_len, &r);
	if (!format_readable(r.format)) {
		/* A newer leasekeeper's request: not ours to take, refuse or clean up. */
		log_warnx_limited(&runreq_lim, "job %s: not taking run-now request %s: it is %s",
		                  rr->job, name, format_refusal(r.format, refusal, sizeof refusal));
		return;
	}
	if ((why = ctlrec_request_invalid(reply->value, reply->value_len)) != NULL) {
		runreq_drop(rr, reply->path, reply->stat->version, why);
		return;
	}
	if (r.done || r.claimed) {
		runreq_claimed(rr, reply, &r);
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
	if (!control_allow(CONTROL_RUN_REQUEST, rr->job, name))
		return;
	if (rr->paused && !r.force) {
		runreq_refuse(rr, reply, "the job is paused and the request has no \"force\"");
		return;
	}
	if (!runreq_rate_take(rr)) {
		runreq_refuse(rr, reply,
		              "over the job's rate of run-now requests (10 at once, then "
		              "one per 3 s)");
		return;
	}
	who = utf8_quote_str(r.by);
	log_info("job %s: run-now request \"%s\" by %s: claiming it", rr->job, name, who);
	free(who);
	runreq_claim(rr, reply->path, reply->value, reply->value_len);
}

/* A child's stat: read it only if it is small enough to be a request. */
static void
runreq_stat_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	char why[80];

	if (reply->rc != ZOK || reply->stat == NULL)
		return;
	if (reply->stat->dataLength > CTLREC_MAX_REQUEST) {
		snprintf(why, sizeof why, "%d bytes, more than a request's %d",
		         reply->stat->dataLength, CTLREC_MAX_REQUEST);
		runreq_drop(rr, reply->path, reply->stat->version, why);
		return;
	}
	zk_get(rr->zk, reply->path, NULL, runreq_get_cb, rr);
}

/* Whether a child's name is a request's: req-<sequence>, as the server makes them. */
static int
runreq_name_ok(const char *name)
{
	int64_t seq;

	return strncmp(name, "req-", 4) == 0 && znode_sequence(name, "req-", &seq) == 0;
}

/*
 * The folder's children, oldest first: refuse and delete what is not named as a request,
 * and the unclaimed requests beyond the CTLREC_MAX_REQUESTS oldest; stat the rest.
 */
static void
runreq_list_cb(const struct zk_reply *reply, void *arg)
{
	struct runreq *rr = arg;
	char **names, *path;
	int i, n = 0, drops = 0;

	if (reply->rc != ZOK)
		return; /* a connection error: listed again at the reconnect */
	rr->pending = 0;
	if (reply->nchildren == 0)
		return;
	names = xcalloc((size_t)reply->nchildren, sizeof *names);
	for (i = 0; i < reply->nchildren; i++) {
		if (runreq_name_ok(reply->children[i]))
			names[n++] = reply->children[i];
		else if (drops++ < RUNREQ_MAX_TRIM) {
			path = znode_join(rr->dir, reply->children[i]);
			runreq_drop(rr, path, -1, "not named as a request (req-<sequence>)");
			free(path);
		}
	}
	znode_sort(names, (size_t)n, "req-");
	for (i = 0; i < n; i++) {
		path = znode_join(rr->dir, names[i]);
		if (i < CTLREC_MAX_REQUESTS)
			zk_exists(rr->zk, path, runreq_stat_cb, rr);
		else if (drops++ < RUNREQ_MAX_TRIM)
			runreq_drop(rr, path, 0,
			            "the job holds " RUNREQ_LIMIT_STR " requests already");
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
