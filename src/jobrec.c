/*
 * jobrec.c: a job's records in ZooKeeper: the agreed lease count, tick claims, runs.
 *
 * <root>/jobs/<job> holds {"leases": N}, the number of leases the cluster agreed on. The
 * first worker to see the job writes it; a worker configured with another N does not
 * contend and reports the conflict until the record or its configuration changes
 * (`leasekeeper set-leases` changes the record on purpose). We watch the record.
 *
 * <root>/jobs/<job>/state holds {"tick": T, "runners": [...], "recent": [...],
 * "missed": [...]}: the newest tick claimed and who claimed it, the last claimed ticks and
 * the last missed ones. A worker holding a lease claims tick T with a versioned write; a
 * worker that finds T, or a later tick, claimed by enough runners, or T marked missed,
 * skips it, so a host whose clock runs late cannot run a tick twice. Claims only move
 * forward: a tick older than the newest claimed one can never run, so the worker that
 * claims T also records as missed the ticks skipped since the previous claim.
 *
 * <root>/jobs/<job>/runs/run-<seq> holds one JSON record per finished (or missed) run,
 * the oldest deleted beyond `history`.
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "compat.h"
#include "jobrec.h"
#include "log.h"
#include "schedule.h"
#include "xmalloc.h"
#include "znode.h"

/* ZooKeeper refusals repeat at every tick and every check: warn once, then count. */
static struct log_limit jobrec_lim_read, jobrec_lim_write, jobrec_lim_claim, jobrec_lim_state,
    jobrec_lim_run;

enum jobrec_task_kind { JOBREC_TASK_CLAIM, JOBREC_TASK_MISSED, JOBREC_TASK_RUN };

#define JOBREC_KEEP_TICKS  64      /* claimed and missed ticks remembered in the state */
#define JOBREC_MAX_SKIPPED 1000000 /* ticks looked at between two claims, at most */

/* One multi-step operation on the records, with the context its replies need. */
struct jobrec_task {
	struct jobrec *jr;
	enum jobrec_task_kind kind;
	int64_t tick;
	int per_tick;
	char *node;
	int maybe_set; /* a claim write was sent and may have landed */
	int waiting;   /* waiting for a reconnect to go on */
	jobrec_claim_cb cb;
	void *arg;
	json_t *record;
	int history;
	const struct schedule *sched; /* claim: to name the ticks skipped since the last claim */
	json_t *skipped; /* claim: ticks found skipped, recorded once the claim lands */
	TAILQ_ENTRY(jobrec_task) entry;
};

struct jobrec {
	struct zk *zk;
	char *path;
	char *state_path;
	char *runs_path;
	int leases;
	char *lock_path; /* recorded with the count, so that status can find the lock */
	int cluster;     /* the agreed count, 0 until known */
	int checking;
	int recheck; /* check again after the reconnect */
	struct jobrec_cb cb;
	void *arg;
	TAILQ_HEAD(, jobrec_task) tasks;
};

static void jobrec_claim_step(struct jobrec_task *);
static void jobrec_missed_step(struct jobrec_task *);
static void jobrec_run_step(struct jobrec_task *);

/* <root>/jobs/<job> (caller frees). */
char *
jobrec_path(const char *root, const char *job)
{
	char *path;

	xasprintf(&path, "%s/jobs/%s", root, job);
	return path;
}

/* The "leases" of a job record's JSON, or 0 if there is none. */
int
jobrec_parse_leases(const char *data, int len)
{
	json_t *o, *n;
	int leases = 0;

	if (data == NULL || len <= 0)
		return 0;
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (o == NULL)
		return 0;
	n = json_object_get(o, "leases");
	if (json_is_integer(n) && json_integer_value(n) >= 1 && json_integer_value(n) <= 1000000)
		leases = (int)json_integer_value(n);
	json_decref(o);
	return leases;
}

/* Whether a job record's JSON names its lock. */
static int
jobrec_has_lock(const char *data, int len)
{
	json_t *o;
	int has;

	if (data == NULL || len <= 0 || (o = json_loadb(data, (size_t)len, 0, NULL)) == NULL)
		return 0;
	has = json_is_string(json_object_get(o, "lock"));
	json_decref(o);
	return has;
}

/* A job's records; call jobrec_check once the session is ready. */
struct jobrec *
jobrec_new(struct zk *zk, const char *root, const char *job, int leases, const char *lock_path,
           const struct jobrec_cb *cb, void *arg)
{
	struct jobrec *jr = xcalloc(1, sizeof *jr);

	jr->lock_path = xstrdup(lock_path);

	jr->zk = zk;
	jr->path = jobrec_path(root, job);
	jr->state_path = znode_join(jr->path, "state");
	jr->runs_path = znode_join(jr->path, "runs");
	jr->leases = leases;
	jr->cb = *cb;
	jr->arg = arg;
	TAILQ_INIT(&jr->tasks);
	return jr;
}

/* Forget a task. */
static void
jobrec_task_free(struct jobrec_task *t)
{
	zk_cancel(t->jr->zk, t);
	TAILQ_REMOVE(&t->jr->tasks, t, entry);
	free(t->node);
	if (t->record != NULL)
		json_decref(t->record);
	if (t->skipped != NULL)
		json_decref(t->skipped);
	free(t);
}

/* Free the records' state (nothing in ZooKeeper changes). */
void
jobrec_free(struct jobrec *jr)
{
	struct jobrec_task *t;

	if (jr == NULL)
		return;
	zk_cancel(jr->zk, jr);
	while ((t = TAILQ_FIRST(&jr->tasks)) != NULL)
		jobrec_task_free(t);
	free(jr->path);
	free(jr->state_path);
	free(jr->runs_path);
	free(jr->lock_path);
	free(jr);
}

/* The agreed count as last read, 0 if unknown. */
int
jobrec_cluster_leases(const struct jobrec *jr)
{
	return jr->cluster;
}

/* The record changed or went away: read it again. */
static void
jobrec_watch_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	jobrec_check(arg);
}

static void jobrec_create_cb(const struct zk_reply *, void *);

/* The record's JSON: our count, and where the lock lives. */
static char *
jobrec_data(struct jobrec *jr)
{
	json_t *o = json_pack("{s:i, s:s}", "leases", jr->leases, "lock", jr->lock_path);
	char *data = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return data;
}

/* Write our count into a new record. */
static void
jobrec_create(struct jobrec *jr)
{
	char *data = jobrec_data(jr);

	zk_create_node(jr->zk, jr->path, data, (int)strlen(data), ZOO_PERSISTENT, jobrec_create_cb,
	               jr);
	free(data);
}

/* The record as read. */
static void
jobrec_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec *jr = arg;
	char *data;
	int n;

	jr->checking = 0;
	if (zk_connection_error(reply->rc)) {
		jr->recheck = 1;
		return;
	}
	if (reply->rc == ZNONODE) {
		jr->checking = 1;
		jobrec_create(jr);
		return;
	}
	if (reply->rc != ZOK) {
		log_warnx_limited(&jobrec_lim_read, "cannot read %s: %s", jr->path,
		                  zerror(reply->rc));
		return;
	}
	n = jobrec_parse_leases(reply->value, reply->value_len);
	if (n == 0 || (n == jr->leases && !jobrec_has_lock(reply->value, reply->value_len))) {
		/*
		 * A record without a count (made by hand?), or one that does not say where the
		 * lock lives (older, or written by set-leases): write ours, at its version.
		 */
		if (n == 0)
			log_info("%s holds no lease count; writing %d", jr->path, jr->leases);
		data = jobrec_data(jr);
		jr->checking = 1;
		zk_set(jr->zk, jr->path, data, (int)strlen(data), reply->stat->version,
		       jobrec_create_cb, jr);
		free(data);
		return;
	}
	jr->cluster = n;
	if (n == jr->leases)
		jr->cb.agreed(jr, jr->arg);
	else
		jr->cb.conflict(jr, n, jr->arg);
}

/* Our count was written (or someone else's was first): read it back, with a watch. */
static void
jobrec_create_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec *jr = arg;

	jr->checking = 0;
	if (zk_connection_error(reply->rc)) {
		jr->recheck = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && reply->rc != ZBADVERSION) {
		log_warnx_limited(&jobrec_lim_write, "cannot write %s: %s", reply->path,
		                  zerror(reply->rc));
		return;
	}
	jobrec_check(jr);
}

/* Read the record (creating it with our count if there is none) and watch it. */
void
jobrec_check(struct jobrec *jr)
{
	if (jr->checking)
		return;
	jr->checking = 1;
	jr->recheck = 0;
	zk_get(jr->zk, jr->path, jobrec_watch_cb, jobrec_get_cb, jr);
}

/* Session events: go on after a reconnect; nothing survives an expiry. */
void
jobrec_session(struct jobrec *jr, enum zk_event event)
{
	struct jobrec_task *t, *next;

	switch (event) {
	case ZK_EVENT_RECONNECTED:
	case ZK_EVENT_SESSION_NEW:
		if (jr->recheck && event == ZK_EVENT_RECONNECTED)
			jobrec_check(jr);
		TAILQ_FOREACH_SAFE(t, &jr->tasks, entry, next) {
			if (!t->waiting)
				continue;
			t->waiting = 0;
			if (t->kind == JOBREC_TASK_CLAIM)
				jobrec_claim_step(t);
			else if (t->kind == JOBREC_TASK_MISSED)
				jobrec_missed_step(t);
			else
				jobrec_run_step(t);
		}
		break;
	case ZK_EVENT_EXPIRED:
	case ZK_EVENT_CLOSED:
		zk_cancel(jr->zk, jr);
		jr->checking = 0;
		jr->recheck = 0;
		jr->cluster = 0;
		TAILQ_FOREACH_SAFE(t, &jr->tasks, entry, next) {
			if (t->kind == JOBREC_TASK_CLAIM) {
				jobrec_claim_cb cb = t->cb;
				void *cbarg = t->arg;

				jobrec_task_free(t);
				cb(JOBREC_ERROR, cbarg);
			} else if (t->kind == JOBREC_TASK_MISSED)
				jobrec_task_free(t);
			/* Run records are written by the next session. */
		}
		break;
	default:
		break;
	}
}

/* A new task. */
static struct jobrec_task *
jobrec_task_new(struct jobrec *jr, enum jobrec_task_kind kind, int64_t tick, const char *node)
{
	struct jobrec_task *t = xcalloc(1, sizeof *t);

	t->jr = jr;
	t->kind = kind;
	t->tick = tick;
	t->node = node != NULL ? xstrdup(node) : NULL;
	TAILQ_INSERT_TAIL(&jr->tasks, t, entry);
	return t;
}

/* The claimed tick and its lists, from the state's JSON. */
static json_t *
jobrec_parse_state(const struct zk_reply *reply, int64_t *tick)
{
	json_t *o = NULL, *t;
	const char *lists[] = {"runners", "recent", "missed"};
	size_t i;

	*tick = -1;
	if (reply->value != NULL && reply->value_len > 0)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	if (o == NULL || !json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		o = json_object();
	}
	t = json_object_get(o, "tick");
	if (json_is_integer(t))
		*tick = json_integer_value(t);
	for (i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		if (!json_is_array(json_object_get(o, lists[i])))
			json_object_set_new(o, lists[i], json_array());
	}
	return o;
}

/* Whether a list of ticks holds tick. */
static int
jobrec_has_tick(json_t *list, int64_t tick)
{
	json_t *v;
	size_t i;

	json_array_foreach(list, i, v)
	{
		if (json_is_integer(v) && json_integer_value(v) == tick)
			return 1;
	}
	return 0;
}

/* Append tick to a list of ticks, keeping the newest JOBREC_KEEP_TICKS. */
static void
jobrec_add_tick(json_t *list, int64_t tick)
{
	json_array_append_new(list, json_integer(tick));
	while (json_array_size(list) > JOBREC_KEEP_TICKS)
		json_array_remove(list, 0);
}

/* Record that a tick was missed (one run record, and a log line). */
static void
jobrec_record_missed(struct jobrec *jr, int64_t tick, const char *node, int history)
{
	char when[40];
	json_t *record;

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	log_warnx("job %s: the tick of %s was missed: no worker started it within its "
	          "start_deadline",
	          znode_basename(jr->path), when);
	record = json_pack("{s:I, s:s, s:s}", "tick", (json_int_t)tick, "node", node, "reason",
	                   "missed");
	jobrec_record_run(jr, record, history);
}

/*
 * Write the state (stolen reference) at the version just read, or create it if it was not
 * there: a concurrent writer makes the write fail (ZBADVERSION, ZNODEEXISTS) and cb reads
 * again.
 */
static void
jobrec_write_state(struct jobrec_task *t, const struct zk_reply *read, json_t *state,
                   zk_reply_cb cb)
{
	char *data = json_dumps(state, JSON_COMPACT);

	json_decref(state);
	if (read->rc == ZNONODE)
		zk_create_node(t->jr->zk, t->jr->state_path, data, (int)strlen(data),
		               ZOO_PERSISTENT, cb, t);
	else
		zk_set(t->jr->zk, t->jr->state_path, data, (int)strlen(data), read->stat->version,
		       cb, t);
	free(data);
}

/* Whether node is among the runners. */
static int
jobrec_has_runner(json_t *state, const char *node)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(state, "runners"), i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), node) == 0)
			return 1;
	}
	return 0;
}

/* End a claim with its result. */
static void
jobrec_claim_done(struct jobrec_task *t, enum jobrec_claim_result result)
{
	jobrec_claim_cb cb = t->cb;
	void *arg = t->arg;

	jobrec_task_free(t);
	cb(result, arg);
}

/* The claim's write landed, or lost a race, or its fate is unknown. */
static void
jobrec_claim_set_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	json_t *v;
	size_t i;

	if (reply->rc == ZOK) {
		json_array_foreach(t->skipped, i, v)
		    jobrec_record_missed(t->jr, json_integer_value(v), t->node, t->history);
		jobrec_claim_done(t, JOBREC_CLAIMED);
		return;
	}
	if (reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) {
		jobrec_claim_step(t); /* someone wrote first: look again */
		return;
	}
	if (zk_connection_error(reply->rc)) {
		t->waiting = 1; /* after the reconnect, the state tells whether it landed */
		return;
	}
	log_warnx_limited(&jobrec_lim_claim, "cannot claim tick %lld of %s: %s", (long long)t->tick,
	                  t->jr->path, zerror(reply->rc));
	jobrec_claim_done(t, JOBREC_ERROR);
}

/* The state as read: claim the tick if it is free. */
static void
jobrec_claim_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	json_t *state, *runners, *missed, *v;
	int64_t tick, x;
	size_t i;
	int n;

	if (zk_connection_error(reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		log_warnx_limited(&jobrec_lim_state, "cannot read %s: %s", t->jr->state_path,
		                  zerror(reply->rc));
		jobrec_claim_done(t, JOBREC_ERROR);
		return;
	}
	state = jobrec_parse_state(reply, &tick);
	runners = json_object_get(state, "runners");
	missed = json_object_get(state, "missed");
	if (tick == t->tick && jobrec_has_runner(state, t->node)) {
		/* Our earlier write landed, its answer was lost: finish what it started. */
		json_decref(state);
		if (t->maybe_set)
			jobrec_claim_set_cb(&(struct zk_reply){.rc = ZOK}, t);
		else
			jobrec_claim_done(t, JOBREC_TAKEN);
		return;
	}
	if (tick > t->tick || jobrec_has_tick(missed, t->tick) ||
	    (tick == t->tick && json_array_size(runners) >= (size_t)t->per_tick)) {
		json_decref(state);
		jobrec_claim_done(t, JOBREC_TAKEN);
		return;
	}
	if (tick < t->tick) {
		/* The ticks between the last claim and this one can never run now: missed. */
		if (t->skipped != NULL)
			json_decref(t->skipped);
		t->skipped = json_array();
		/* The most recent of them, up to history (after a long outage, many). */
		for (x = tick < 0 || t->sched == NULL ? -1 : schedule_next(t->sched, tick), n = 0;
		     x >= 0 && x < t->tick && n < JOBREC_MAX_SKIPPED;
		     x = schedule_next(t->sched, x), n++) {
			if (jobrec_has_tick(missed, x))
				continue;
			json_array_append_new(t->skipped, json_integer(x));
			while (json_array_size(t->skipped) > (size_t)t->history)
				json_array_remove(t->skipped, 0);
		}
		json_array_foreach(t->skipped, i, v) jobrec_add_tick(missed, json_integer_value(v));
		json_array_clear(runners);
		json_object_set_new(state, "tick", json_integer(t->tick));
		jobrec_add_tick(json_object_get(state, "recent"), t->tick);
	}
	json_array_append_new(runners, json_string(t->node));
	t->maybe_set = 1;
	jobrec_write_state(t, reply, state, jobrec_claim_set_cb);
}

static void
jobrec_claim_step(struct jobrec_task *t)
{
	zk_get(t->jr->zk, t->jr->state_path, NULL, jobrec_claim_get_cb, t);
}

/*
 * Claim tick for node, unless per_tick workers (or this one) already claimed it, a later
 * tick was claimed, or it was marked missed. sched names the ticks skipped since the
 * previous claim, recorded as missed (at most history of them).
 */
void
jobrec_claim(struct jobrec *jr, int64_t tick, int per_tick, const char *node,
             const struct schedule *sched, int history, jobrec_claim_cb cb, void *arg)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_CLAIM, tick, node);

	t->sched = sched;
	t->history = history;
	t->per_tick = per_tick;
	t->cb = cb;
	t->arg = arg;
	jobrec_claim_step(t);
}

/* Abandon a claim in progress; its callback is not called. */
void
jobrec_cancel_claim(struct jobrec *jr)
{
	struct jobrec_task *t, *next;

	TAILQ_FOREACH_SAFE(t, &jr->tasks, entry, next) {
		if (t->kind == JOBREC_TASK_CLAIM)
			jobrec_task_free(t);
	}
}

/* The missed mark's write. */
static void
jobrec_missed_set_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	if (reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) {
		jobrec_missed_step(t);
		return;
	}
	if (zk_connection_error(reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc == ZOK)
		jobrec_record_missed(t->jr, t->tick, t->node, t->history);
	jobrec_task_free(t);
}

/* The state as read: mark the tick missed unless it was claimed or already marked. */
static void
jobrec_missed_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	json_t *state, *missed;
	int64_t tick;

	if (zk_connection_error(reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		jobrec_task_free(t);
		return;
	}
	state = jobrec_parse_state(reply, &tick);
	missed = json_object_get(state, "missed");
	if (tick == t->tick || jobrec_has_tick(json_object_get(state, "recent"), t->tick) ||
	    jobrec_has_tick(missed, t->tick)) {
		json_decref(state);
		jobrec_task_free(t);
		return;
	}
	jobrec_add_tick(missed, t->tick);
	jobrec_write_state(t, reply, state, jobrec_missed_set_cb);
}

static void
jobrec_missed_step(struct jobrec_task *t)
{
	zk_get(t->jr->zk, t->jr->state_path, NULL, jobrec_missed_get_cb, t);
}

/* Record tick as missed, once cluster-wide, unless it was claimed or already recorded. */
void
jobrec_missed(struct jobrec *jr, int64_t tick, const char *node, int history)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_MISSED, tick, node);

	t->history = history;
	jobrec_missed_step(t);
}

/* Trim: the listing of the runs. */
static void
jobrec_trim_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	char **names, *path;
	int i, excess;

	if (reply->rc == ZOK && reply->nchildren > t->history) {
		names = xcalloc((size_t)reply->nchildren, sizeof *names);
		for (i = 0; i < reply->nchildren; i++)
			names[i] = reply->children[i];
		znode_sort(names, (size_t)reply->nchildren, "run-");
		excess = reply->nchildren - t->history;
		for (i = 0; i < excess; i++) {
			path = znode_join(t->jr->runs_path, names[i]);
			zk_delete(t->jr->zk, path, -1, NULL, NULL);
			free(path);
		}
		free(names);
	}
	jobrec_task_free(t);
}

/* The run record's create. */
static void
jobrec_run_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	if (reply->rc == ZNONODE) {
		/* <job>/runs does not exist yet (nor, perhaps, <job>). */
		zk_create_node(t->jr->zk, t->jr->path, NULL, -1, ZOO_PERSISTENT, NULL, NULL);
		zk_create_node(t->jr->zk, t->jr->runs_path, NULL, -1, ZOO_PERSISTENT, NULL, NULL);
		jobrec_run_step(t);
		return;
	}
	if (zk_connection_error(reply->rc) || reply->rc == ZSESSIONEXPIRED ||
	    reply->rc == ZINVALIDSTATE) {
		/* It may have landed: a duplicate record is better than a lost one. */
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK) {
		log_warnx_limited(&jobrec_lim_run, "cannot record a run of %s: %s", t->jr->path,
		                  zerror(reply->rc));
		jobrec_task_free(t);
		return;
	}
	zk_children(t->jr->zk, t->jr->runs_path, NULL, jobrec_trim_cb, t);
}

static void
jobrec_run_step(struct jobrec_task *t)
{
	char *data = json_dumps(t->record, JSON_COMPACT),
	     *path = znode_join(t->jr->runs_path, "run-");

	zk_create_node(t->jr->zk, path, data, (int)strlen(data), ZOO_PERSISTENT_SEQUENTIAL,
	               jobrec_run_cb, t);
	free(path);
	free(data);
}

/* Append a run record (stolen reference) and keep the newest `history` of them. */
void
jobrec_record_run(struct jobrec *jr, json_t *record, int history)
{
	struct jobrec_task *t;

	if (history <= 0) {
		json_decref(record);
		return;
	}
	t = jobrec_task_new(jr, JOBREC_TASK_RUN, 0, NULL);
	t->record = record;
	t->history = history;
	jobrec_run_step(t);
}
