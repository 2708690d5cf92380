/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec.c: a job's records in ZooKeeper: the agreed lease count, tick claims, runs.
 *
 * <root>/jobs/<job> holds {"leases": N, "lock", "locks"}: the lease count and the locks the
 * cluster agreed on. The first worker to see the job writes them (locks: the first that
 * agrees on N); a worker configured otherwise does not contend and reports the conflict until
 * the record or its configuration changes (`leasekeeper set-leases`). We watch the record.
 *
 * <root>/jobs/<job>/state holds {"tick": T, "runners": [...], "recent": [...],
 * "missed": [...]}: the newest tick claimed and who claimed it, the last claimed ticks and
 * the last missed ones. A worker holding a lease claims tick T with a versioned write; a
 * worker that finds T, or a later tick, claimed by enough runners, or T marked missed,
 * skips it, so a host whose clock runs late cannot run a tick twice. Claims only move
 * forward: a tick older than the newest claimed one can never run, so the worker that
 * claims T also records as missed the ticks skipped since the previous claim.
 *
 * <root>/jobs/<job>/runs/run-<seq> holds one record per ended or missed run (jobrec-runs.c).
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "compat.h"
#include "ctlrec.h"
#include "format.h"
#include "jobrec-int.h"
#include "jobrec.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "sabotage.h"
#include "schedule.h"
#include "tickstate.h"
#include "xmalloc.h"
#include "znode.h"

/* ZooKeeper refusals repeat at every tick and every check: warn once, then count. */
static struct log_limit jobrec_lim_read, jobrec_lim_write, jobrec_lim_claim, jobrec_lim_state,
    jobrec_lim_run;

static void jobrec_claim_step(struct jobrec_task *);
static void jobrec_run_found_cb(int, const char *, void *);
static void jobrec_record_window(struct jobrec *, json_t *, int, struct jobrec_window *, int);

/* Say that a record was written (created: its path) or will not be (NULL). */
void
jobrec_recorded(struct jobrec *jr, json_t *record, const char *created)
{
	if (jr->cb.recorded != NULL)
		jr->cb.recorded(jr, record, created, jr->arg);
}

/* A job's records; call jobrec_check once the session is ready. */
struct jobrec *
jobrec_new(struct zk *zk, const char *root, const char *job, int leases, const char *lock_path,
           const char *locks, const struct jobrec_cb *cb, void *arg)
{
	struct jobrec *jr = xcalloc(1, sizeof *jr);

	jr->lock_path = xstrdup(lock_path);
	jr->locks = locks != NULL ? xstrdup(locks) : NULL;

	jr->zk = zk;
	jr->path = layout_job_record(root, job);
	jr->state_path = layout_job_state(root, job);
	jr->runs_path = layout_job_runs(root, job);
	jr->leases = leases;
	jr->cb = *cb;
	jr->arg = arg;
	TAILQ_INIT(&jr->tasks);
	return jr;
}

/* Forget a task. */
void
jobrec_task_free(struct jobrec_task *t)
{
	zk_cancel(t->jr->zk, t);
	TAILQ_REMOVE(&t->jr->tasks, t, entry);
	free(t->node);
	free(t->data);
	free(t->run_id);
	jobrec_runs_find_free(t->find);
	if (t->record != NULL)
		json_decref(t->record);
	if (t->skipped != NULL)
		json_decref(t->skipped);
	if (t->skip_recs != NULL)
		json_decref(t->skip_recs);
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
	free(jr->locks);
	free(jr->locks_said);
	free(jr);
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

/*
 * The record's JSON: our count, and where the lock lives, over what the record held (old,
 * may be NULL): a rewrite keeps what others wrote there (a pause).
 */
static char *
jobrec_data(struct jobrec *jr, const char *old, int old_len)
{
	json_t *o = NULL;
	char *data;

	if (old != NULL && old_len > 0 && old_len <= JOBREC_MAX_SIZE)
		o = json_loadb(old, (size_t)old_len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		o = json_object();
	}
	json_object_set_new(o, "leases", json_integer(jr->leases));
	json_object_set_new(o, "lock", json_string(jr->lock_path));
	if (jr->locks != NULL)
		json_object_set_new(o, "locks", json_loads(jr->locks, 0, NULL));
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return data;
}

/* Write our count into a new record. */
static void
jobrec_create(struct jobrec *jr)
{
	char *data = jobrec_data(jr, NULL, 0);

	zk_create_node(jr->zk, jr->path, data, (int)strlen(data), ZOO_PERSISTENT, jobrec_create_cb,
	               jr);
	free(data);
}

/* A record of a format this release cannot read: no contending, said once, never written over. */
static int
jobrec_refused(struct jobrec *jr, const struct zk_reply *reply)
{
	char what[300];
	int v = reply->value_len > 0 ? format_of_data(reply->value, (size_t)reply->value_len)
	                             : FORMAT_NONE;

	if (format_readable(v)) {
		if (jr->newer != 0)
			log_info("job %s: its record %s is readable again",
			         znode_basename(jr->path), jr->path);
		jr->newer = 0;
		format_warn_once(&jr->record_fmt, v, jr->path);
		return 0;
	}
	snprintf(what, sizeof what, "job %s: not contending: its record %s",
	         znode_basename(jr->path), jr->path);
	format_warn_once(&jr->record_fmt, v, what);
	jr->newer = v;
	jr->cluster = 0;
	jr->cb.conflict(jr, -1, jr->arg);
	return 1;
}

/* The record as read. */
static void
jobrec_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec *jr = arg;
	char *data;
	int n, locks;

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
	if (jobrec_refused(jr, reply) || jr->retired)
		return; /* retired: its job stops for good, and agrees to nothing */
	if (reply->stat != NULL)
		jr->created_ms = reply->stat->ctime;
	jr->paused = ctlrec_paused(reply->value, reply->value_len, &jr->paused_stop);
	n = jobrec_parse_leases(reply->value, reply->value_len);
	if (n < 0) {
		/* Corrupt: not ours to fix by writing (whoever wrote it would write it back). */
		if (!jr->invalid_said)
			log_warnx("%s holds an invalid lease count (not an integer in 1..%d): not "
			          "contending until it is fixed (`leasekeeper set-leases %s %d` "
			          "writes ours)",
			          jr->path, LK_MAX_LEASES, znode_basename(jr->path), jr->leases);
		jr->invalid_said = 1; /* said once, on every read the same */
		jr->cluster = 0;
		jr->cb.conflict(jr, -1, jr->arg);
		return;
	}
	jr->invalid_said = 0;
	locks = 1; /* compared once the counts agree: a count conflict is said alone */
	if (n == jr->leases)
		locks = jobrec_locks_check(jr->path, reply->value, reply->value_len, jr->locks,
		                           &jr->locks_said);
	else {
		free(jr->locks_said);
		jr->locks_said = NULL;
	}
	if (n == 0 ||
	    (n == jr->leases && (!jobrec_has_lock(reply->value, reply->value_len) || locks == 0))) {
		/*
		 * A record without a count (made by hand?), or one that does not say where the
		 * locks live (older, or written by set-leases): write ours, at its version. At
		 * most JOBREC_MAX_REWRITES a minute: another writer must not make this a loop.
		 */
		if (!jobrec_window_take(&jr->rewrites, JOBREC_MAX_REWRITES)) {
			if (jr->rewrites.dropped == 1)
				log_warnx(
				    "%s was rewritten %d times in a minute: someone writes it "
				    "back; not contending until it changes",
				    jr->path, JOBREC_MAX_REWRITES);
			if (n == 0) {
				jr->cluster = 0;
				jr->cb.conflict(jr, -1, jr->arg);
				return;
			}
			goto agreed; /* the count is ours; the lock path can wait, the locks not */
		}
		jr->rewrites.dropped = 0;
		if (n == 0)
			log_info("%s holds no lease count; writing %d", jr->path, jr->leases);
		data = jobrec_data(jr, reply->value, reply->value_len);
		jr->checking = 1;
		zk_set(jr->zk, jr->path, data, (int)strlen(data), reply->stat->version,
		       jobrec_create_cb, jr);
		free(data);
		return;
	}
agreed:
	jr->cluster = n;
	if (n != jr->leases)
		jr->cb.conflict(jr, n, jr->arg);
	else if (locks != 1)
		jr->cb.conflict(jr, -1, jr->arg); /* other locks (said), or none yet: wait */
	else
		jr->cb.agreed(jr, jr->arg);
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
			else if (t->kind == JOBREC_TASK_DISOWN)
				jobrec_disown_step(t);
			else if (t->settling) /* a dead worker's run: was it recorded? */
				jobrec_settle_search(t);
			else if (t->maybe_set) /* a record's answer lost: did it land? */
				t->find = jobrec_runs_find_start(jr->zk, jr->runs_path, t->data,
				                                 strlen(t->data), t->history,
				                                 jobrec_run_found_cb, t);
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
			if (event == ZK_EVENT_EXPIRED && (t->give || t->abandoned || t->rec_sent)) {
				/*
				 * A tick let go, or a mark with its record whose answer was lost: the
				 * next session's read tells whether it is ours, or landed.
				 */
				zk_cancel(jr->zk, t);
				t->waiting = 1;
			} else if (t->kind == JOBREC_TASK_CLAIM) {
				jobrec_claim_cb cb = t->cb;
				void *cbarg = t->arg;

				jobrec_task_free(t);
				if (cb != NULL)
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

/*
 * Whether rc leaves t's fate to the next read: a lost connection; or, for a tick let go (a
 * give-back, a claim abandoned), the session's end too: it goes on in the next session.
 */
int
jobrec_unknown(const struct jobrec_task *t, int rc)
{
	return zk_connection_error(rc) || ((t->give || t->abandoned || t->rec_sent) &&
	                                   (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE));
}

/* Whether a search after a lost answer ended for want of the cluster (look again later). */
int
jobrec_away(int rc)
{
	return zk_connection_error(rc) || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE ||
	       rc == ZCLOSING;
}

/* A new task. */
struct jobrec_task *
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

/* Record that a tick was missed, or not run because paused (a run record, a log line). */
void
jobrec_record_missed(struct jobrec *jr, int64_t tick, const char *node, int history, int paused,
                     enum jobrec_missed_why why)
{
	if (!paused && why < JOBREC_MISSED_WHYS)
		jr->missed[why]++;
	jobrec_missed_said(znode_basename(jr->path), tick, paused, why);
	jobrec_record_window(jr, jobrec_missed_record(tick, node, paused, why), history,
	                     &jr->missed_w, JOBREC_MAX_MISSED);
}

/*
 * The version a write of the state just read goes at: the read's (-1: it was not there; a
 * create).
 */
int
jobrec_state_version(const struct zk_reply *read)
{
	int version = read->rc == ZNONODE ? -1 : read->stat->version;

#ifdef LEASEKEEPER_SABOTAGE
	if (sabotage_on("no-claim-check"))
		version = -1; /* sabotage: the write checks no version */
#endif
	return version;
}

/*
 * Write the state (stolen reference) at the version just read, or create it if it was not
 * there: a concurrent writer makes the write fail (ZBADVERSION, ZNODEEXISTS) and cb reads
 * again.
 */
void
jobrec_write_state(struct jobrec_task *t, const struct zk_reply *read, struct tickstate *st,
                   zk_reply_cb cb)
{
	char *data = tickstate_dump(st);

	tickstate_free(st);
	if (read->rc == ZNONODE)
		zk_create_node(t->jr->zk, t->jr->state_path, data, (int)strlen(data),
		               ZOO_PERSISTENT, cb, t);
	else
		zk_set(t->jr->zk, t->jr->state_path, data, (int)strlen(data),
		       jobrec_state_version(read), cb, t);
	free(data);
}

/* End a claim with its result. */
static void
jobrec_claim_done(struct jobrec_task *t, enum jobrec_claim_result result)
{
	jobrec_claim_cb cb = t->cb;
	void *arg = t->arg;

	jobrec_task_free(t);
	if (cb != NULL)
		cb(result, arg);
}

/*
 * An abandoned claim landed: the tick is ours, and the job let it go before it knew. Give it
 * back (tickstate_give_back), unless another claim of ours for it has its write out (a new
 * claim that reads it ours is TAKEN, not run: it waits for the give-back like any worker).
 */
static void
jobrec_claim_give_back(struct jobrec_task *t)
{
	struct jobrec *jr = t->jr;
	struct jobrec_task *o;
	char when[40];

	TAILQ_FOREACH(o, &jr->tasks, entry) {
		if (o != t && o->kind == JOBREC_TASK_CLAIM && !o->abandoned && !o->peek &&
		    o->tick == t->tick && o->maybe_set)
			break;
	}
	if (o == NULL) {
		clock_iso8601((uint64_t)t->tick * 1000, when, sizeof when);
		log_info("job %s: the claim of the tick of %s landed after the job let it go (a "
		         "stop, a lost lease): giving the tick back to the other workers",
		         znode_basename(jr->path), when);
		jobrec_give_back(jr, t->tick, t->per_tick, t->node, t->history, 0);
	}
	jobrec_task_free(t);
}

static void jobrec_claim_set_cb(const struct zk_reply *, void *);

/*
 * The records of the ticks the claim skips, made before its write (t->skip_recs): [why,
 * record or null] for each, a record when the write limit admits it. They are created in the
 * claim's transaction, so that a worker that dies before the answer leaves no tick marked
 * missed in the state without its record (torture, finding 16).
 */
static void
jobrec_claim_records(struct jobrec_task *t)
{
	struct jobrec *jr = t->jr;
	json_t *v, *rec;
	size_t i;

	if (t->skip_recs != NULL)
		json_decref(t->skip_recs);
	t->skip_recs = json_array();
	json_array_foreach(t->skipped, i, v) {
		int64_t x = json_integer_value(v);
		enum jobrec_missed_why why =
		    jr->cb.no_worker != NULL && jr->cb.no_worker(jr, x, jr->arg)
		        ? JOBREC_MISSED_NO_WORKER
		        : t->why;

		rec = jobrec_missed_record(x, t->node, 0, why);
		if (!jobrec_record_admit(jr, rec, t->history, &jr->missed_w, JOBREC_MAX_MISSED)) {
			json_decref(rec);
			rec = json_null();
		}
		json_array_append_new(t->skip_recs, json_pack("[i, o]", (int)why, rec));
	}
}

/* The claim landed with its skipped ticks' records (createds: their paths, or NULL). */
static void
jobrec_claim_landed(struct jobrec_task *t, char *const *createds)
{
	struct jobrec *jr = t->jr;
	struct jobrec_task *trim;
	json_t *v, *rec;
	size_t i;
	int k = 0;

	json_array_foreach(t->skip_recs, i, v) {
		enum jobrec_missed_why why =
		    (enum jobrec_missed_why)json_integer_value(json_array_get(v, 0));

		rec = json_array_get(v, 1);
		if (why < JOBREC_MISSED_WHYS)
			jr->missed[why]++;
		jobrec_missed_said(znode_basename(jr->path),
		                   json_integer_value(json_array_get(t->skipped, i)), 0, why);
		if (json_is_object(rec) && t->recs_apart) {
			/* Written now, on their own (the transaction with them failed). */
			trim = jobrec_task_new(jr, JOBREC_TASK_RUN, 0, NULL);
			trim->record = json_incref(rec);
			trim->data = json_dumps(rec, JSON_COMPACT);
			trim->history = t->history;
			jobrec_run_step(trim);
		} else if (json_is_object(rec))
			jobrec_recorded(jr, rec, createds != NULL ? createds[k++] : NULL);
	}
	if (k > 0) { /* keep `history` */
		trim = jobrec_task_new(jr, JOBREC_TASK_RUN, 0, NULL);
		trim->history = t->history;
		zk_children(jr->zk, jr->runs_path, NULL, jobrec_trim_cb, trim);
	}
}

/* Send the claim's state (st, freed), with its skipped ticks' records if any. */
static void
jobrec_claim_send(struct jobrec_task *t, const struct zk_reply *read, struct tickstate *st)
{
	struct jobrec *jr = t->jr;
	const char **data;
	char *state, *path, **dumps;
	int *len, n = 0;
	size_t i;
	json_t *v;

	jobrec_claim_records(t);
	json_array_foreach(t->skip_recs, i, v) {
		if (json_is_object(json_array_get(v, 1)))
			n++;
	}
	t->recs_multi = n > 0 && !t->recs_apart;
	if (!t->recs_multi) {
		jobrec_write_state(t, read, st, jobrec_claim_set_cb);
		return;
	}
	state = tickstate_dump(st);
	tickstate_free(st);
	dumps = xcalloc((size_t)n, sizeof *dumps);
	data = xcalloc((size_t)n, sizeof *data);
	len = xcalloc((size_t)n, sizeof *len);
	n = 0;
	json_array_foreach(t->skip_recs, i, v) {
		if (!json_is_object(json_array_get(v, 1)))
			continue;
		dumps[n] = json_dumps(json_array_get(v, 1), JSON_COMPACT);
		data[n] = dumps[n];
		len[n] = (int)strlen(dumps[n]);
		n++;
	}
	path = znode_join(jr->runs_path, "run-");
	zk_write_creates(jr->zk, jr->state_path, state, (int)strlen(state),
	                 read->rc == ZNONODE ? ZK_WRITE_CREATES : jobrec_state_version(read), path,
	                 data, len, n, ZOO_PERSISTENT_SEQUENTIAL, jobrec_claim_set_cb, t);
	while (n-- > 0)
		free(dumps[n]);
	free(dumps);
	free(data);
	free(len);
	free(path);
	free(state);
}

/* The claim's write landed, or lost a race, or its fate is unknown. */
static void
jobrec_claim_set_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	if (reply->rc == ZOK) {
		jobrec_claim_landed(t, reply->createds);
		if (t->abandoned)
			jobrec_claim_give_back(t);
		else
			jobrec_claim_done(t, JOBREC_CLAIMED);
		return;
	}
	if ((reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS || reply->rc == ZNONODE) &&
	    ++t->races <= JOBREC_MAX_RACES) {
		if (reply->rc == ZNONODE)
			jobrec_make_runs(t->jr); /* <job>/runs is not there yet, for the records */
		jobrec_claim_step(t);            /* someone wrote first: look again */
		return;
	}
	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1; /* after the reconnect, the state tells whether it landed */
		return;
	}
	if (t->recs_multi && !t->recs_apart && ++t->races <= JOBREC_MAX_RACES) {
		/*
		 * The transaction failed for one of its records (a hostile ACL on <job>/runs, a
		 * record too large): the claim must not fail with it. Claimed alone, the records
		 * after it, as before they were one transaction.
		 */
		log_warnx_limited(&jobrec_lim_claim,
		                  "cannot claim tick %lld of %s with the records "
		                  "of the ticks it skips (%s): claiming it alone",
		                  (long long)t->tick, t->jr->path, zerror(reply->rc));
		t->recs_apart = 1;
		jobrec_claim_step(t);
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
	struct tickstate st;
	struct tickstate_claim c;
	enum tickstate_verdict verdict;
	json_t *skipped;

	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		log_warnx_limited(&jobrec_lim_state, "cannot read %s: %s", t->jr->state_path,
		                  zerror(reply->rc));
		jobrec_claim_done(t, JOBREC_ERROR);
		return;
	}
	if (!jobrec_read_state(t->jr, reply, &st)) {
		jobrec_claim_done(t, t->peek ? JOBREC_TAKEN : JOBREC_ERROR);
		return;
	}
	c.tick = t->tick;
	c.per_tick = t->per_tick;
	c.node = t->node;
	c.sched = t->sched;
	c.history = t->history;
	c.now = (int64_t)(zk_cluster_now_ms(t->jr->zk) / 1000); /* the cluster's clock */
	verdict = tickstate_claim(&st, &c, &skipped);
#ifdef LEASEKEEPER_SABOTAGE
	if (verdict == TICKSTATE_TAKEN && sabotage_on("no-claim-check"))
		verdict = TICKSTATE_CLAIM; /* sabotage: a taken tick claimed again */
#endif
	if (t->peek) {
		/* The same verdict a claim would reach, without the write. */
		if (t->await && verdict != TICKSTATE_CLAIM) {
			int wait = tickstate_current(&st, t->tick);

			tickstate_free(&st);
			if (skipped != NULL)
				json_decref(skipped);
			/* Run, superseded or missed: nothing to wait for. */
			if (!wait)
				jobrec_task_free(t);
			return;
		}
		tickstate_free(&st);
		if (skipped != NULL)
			json_decref(skipped);
		jobrec_claim_done(t, verdict == TICKSTATE_CLAIM ? JOBREC_FREE : JOBREC_TAKEN);
		return;
	}
	jobrec_state_warn(t->jr, &st);
	if (verdict == TICKSTATE_CLAIM && t->abandoned) {
		/* Let go, and its write did not land (or no write was sent): nothing to undo. */
		tickstate_free(&st);
		if (skipped != NULL)
			json_decref(skipped);
		jobrec_claim_done(t, JOBREC_TAKEN);
		return;
	}
	if (verdict != TICKSTATE_CLAIM) {
		tickstate_free(&st);
		/* Ours already: our earlier write landed (with its records), its answer was lost. */
		if (verdict == TICKSTATE_OURS && t->maybe_set)
			jobrec_claim_set_cb(&(struct zk_reply){.rc = ZOK}, t);
		else
			jobrec_claim_done(t, JOBREC_TAKEN);
		return;
	}
	if (t->skipped != NULL)
		json_decref(t->skipped);
	t->skipped = skipped;
	t->maybe_set = 1;
	jobrec_claim_send(t, reply, &st);
}

/* An awaited tick's state changed: read it again. */
static void
jobrec_await_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	jobrec_claim_step(arg);
}

static void
jobrec_claim_step(struct jobrec_task *t)
{
	zk_get(t->jr->zk, t->jr->state_path, t->await ? jobrec_await_cb : NULL, jobrec_claim_get_cb,
	       t);
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
	t->why = jr->skip_catch_up ? JOBREC_MISSED_CATCH_UP : JOBREC_MISSED_SUPERSEDED;
	jr->skip_catch_up = 0;
	jobrec_claim_step(t);
}

/*
 * The next claim is a catch-up one: the ticks it skips (not run since the last claim) are
 * recorded as missed for catch_up instead of superseded.
 */
void
jobrec_skip_reason(struct jobrec *jr, const char *reason)
{
	jr->skip_catch_up = reason != NULL && strcmp(reason, "catch_up") == 0;
}

/*
 * Read once whether tick is claimed by per_tick workers (or by node), a later tick claimed,
 * or the tick marked missed (JOBREC_TAKEN), or not (JOBREC_FREE): what a backup in the
 * ranking reads before it steps in. Nothing is written; jobrec_cancel_claim cancels it.
 * await: wait instead, with a watch, for the tick (claimed by others) to be given back
 * (jobrec_hand_back), and call back only then, with JOBREC_FREE; once the tick runs, is
 * superseded or is marked missed, the wait ends silently.
 */
void
jobrec_peek(struct jobrec *jr, int64_t tick, int per_tick, const char *node,
            const struct schedule *sched, int await, jobrec_claim_cb cb, void *arg)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_CLAIM, tick, node);

	t->peek = 1;
	t->await = await;
	t->sched = sched;
	t->per_tick = per_tick;
	t->cb = cb;
	t->arg = arg;
	jobrec_claim_step(t);
}

/*
 * The job's schedule changed its address (a reload handed the job the new configuration's
 * copy, and the old one is freed): claims and peeks in progress name skipped ticks with it.
 */
void
jobrec_schedule(struct jobrec *jr, const struct schedule *sched)
{
	struct jobrec_task *t;

	TAILQ_FOREACH(t, &jr->tasks, entry) {
		if (t->kind == JOBREC_TASK_CLAIM)
			t->sched = sched;
	}
}

/*
 * Abandon a claim (or a peek) in progress; its callback is not called. A claim whose write
 * was sent may land all the same (a stop, a lost lease between the write and its answer):
 * it is followed to its answer, and if it landed the tick is given back
 * (jobrec_claim_give_back), else that claim would keep the tick that nobody runs.
 */
void
jobrec_cancel_claim(struct jobrec *jr)
{
	struct jobrec_task *t, *next;

	TAILQ_FOREACH_SAFE(t, &jr->tasks, entry, next) {
		if (t->kind != JOBREC_TASK_CLAIM || t->abandoned)
			continue;
		if (t->maybe_set && !t->peek) {
			t->abandoned = 1;
			t->cb = NULL;
			t->arg = NULL;
		} else
			jobrec_task_free(t);
	}
}

/* Create <job> and <job>/runs, if they are not there; a request queued after finds them. */
void
jobrec_make_runs(struct jobrec *jr)
{
	zk_create_node(jr->zk, jr->path, NULL, -1, ZOO_PERSISTENT, NULL, NULL);
	zk_create_node(jr->zk, jr->runs_path, NULL, -1, ZOO_PERSISTENT, NULL, NULL);
}

/* Trim: the listing of the runs. */
void
jobrec_trim_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	jobrec_runs_trim(t->jr->zk, t->jr->runs_path, reply, t->history);
	jobrec_task_free(t);
}

/* A run record landed (created: its path), or cannot be written (NULL). */
static void
jobrec_run_landed(struct jobrec_task *t, const char *created)
{
	if (t->settle_cb != NULL)
		t->settle_cb(created, t->arg); /* a dead worker's run (jobrec-settle.c) */
	else
		jobrec_recorded(t->jr, t->record, created);
}

/* The run record's create. */
static void
jobrec_run_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	if (reply->rc == ZNONODE) {
		jobrec_make_runs(t->jr); /* <job>/runs does not exist yet (nor, perhaps, <job>) */
		jobrec_run_step(t);
		return;
	}
	if (zk_connection_error(reply->rc) || reply->rc == ZSESSIONEXPIRED ||
	    reply->rc == ZINVALIDSTATE) {
		/* It may have landed: after the reconnect, look for it (jobrec-runs.c). */
		t->maybe_set = 1;
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK) {
		log_warnx_limited(&jobrec_lim_run, "cannot record a run of %s: %s", t->jr->path,
		                  zerror(reply->rc));
		jobrec_run_landed(t, NULL);
		jobrec_task_free(t);
		return;
	}
	jobrec_run_landed(t, reply->created);
	zk_children(t->jr->zk, t->jr->runs_path, NULL, jobrec_trim_cb, t);
}

void
jobrec_run_step(struct jobrec_task *t)
{
	char *path = znode_join(t->jr->runs_path, "run-");

	zk_create_node(t->jr->zk, path, t->data, (int)strlen(t->data), ZOO_PERSISTENT_SEQUENTIAL,
	               jobrec_run_cb, t);
	free(path);
}

/* After a lost answer: the record found (it landed), not found (write it), or wait again. */
static void
jobrec_run_found_cb(int rc, const char *found, void *arg)
{
	struct jobrec_task *t = arg;

	t->find = NULL; /* it frees itself */
	if (jobrec_away(rc)) {
		t->waiting = 1; /* away again: look after the next reconnect (or session) */
		return;
	}
	t->maybe_set = 0;
	if (found == NULL) {
		jobrec_run_step(t);
		return;
	}
	log_info("job %s: the run record whose answer was lost had landed: %s",
	         znode_basename(t->jr->path), znode_basename(found));
	jobrec_run_landed(t, found);
	zk_children(t->jr->zk, t->jr->runs_path, NULL, jobrec_trim_cb, t);
}

/*
 * Whether a record may be written now: history keeps some, and window w (at most max a
 * minute) has room. Runs have a window of their own (a job that ends at once and restarts
 * must not write thousands a minute); missed and paused ticks another, wider one, for each
 * claim already bounds them (by history) and every tick must be run or recorded. Admitted,
 * the record is stamped and carries the count of those the window dropped before it.
 */
int
jobrec_record_admit(struct jobrec *jr, json_t *record, int history, struct jobrec_window *w,
                    int max)
{
	if (history <= 0)
		return 0;
	if (!jobrec_window_take(w, max)) {
		if (w->dropped == 1)
			log_warnx("job %s: %d %s records in the last minute: not recording more "
			          "until the minute is over (they are counted in the next one)",
			          znode_basename(jr->path), max, w == &jr->runs ? "run" : "missed");
		return 0;
	}
	if (w->dropped > 0) {
		log_warnx("job %s: %d record(s) were not written in the last minute",
		          znode_basename(jr->path), w->dropped);
		json_object_set_new(record, "runs_not_recorded", json_integer(w->dropped));
		w->dropped = 0;
	}
	format_stamp(record);
	return 1;
}

/* Append a record (stolen reference) and keep the newest `history` of them (above). */
static void
jobrec_record_window(struct jobrec *jr, json_t *record, int history, struct jobrec_window *w,
                     int max)
{
	struct jobrec_task *t;

	if (!jobrec_record_admit(jr, record, history, w, max)) {
		jobrec_recorded(jr, record, NULL);
		json_decref(record);
		return;
	}
	t = jobrec_task_new(jr, JOBREC_TASK_RUN, 0, NULL);
	t->record = record;
	t->data = json_dumps(record, JSON_COMPACT);
	t->history = history;
	jobrec_run_step(t);
}

/* Append a run record (stolen reference) and keep the newest `history` of them. */
void
jobrec_record_run(struct jobrec *jr, json_t *record, int history)
{
	jobrec_record_window(jr, record, history, &jr->runs, JOBREC_MAX_RUNS);
}

/*
 * Append a record of a run that was not made (stolen reference), missed or paused, in the
 * window of such records: a chained job's parent runs it did not answer.
 */
void
jobrec_record_not_run(struct jobrec *jr, json_t *record, int history)
{
	jobrec_record_window(jr, record, history, &jr->missed_w, JOBREC_MAX_MISSED);
}
