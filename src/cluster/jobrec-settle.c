/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (with jobrec.c). */
/*
 * jobrec-settle.c: the record of a run that an earlier process of this worker started and
 * never recorded, because it died (SIGKILL, a crash) before the record landed. Its next
 * start writes it (the worker's journal of open runs, runjournal.c): first it looks for the
 * run's record by its run_id among the newest `history` ones, since the dead process may
 * have written it just before it died; found, nothing is written. Not found, it is written
 * as a run record is, with the same care for an answer lost with the connection.
 */

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "format.h"
#include "jobrec-int.h"
#include "log.h"
#include "tickstate.h"
#include "xmalloc.h"
#include "znode.h"

/* The search by run_id ended: found (nothing to write), not found (write it), or away. */
static void
jobrec_settle_found_cb(int rc, const char *found, void *arg)
{
	struct jobrec_task *t = arg;

	t->find = NULL; /* it frees itself */
	if (jobrec_away(rc)) {
		t->waiting = 1; /* look again after the reconnect (jobrec_session) */
		return;
	}
	t->settling = 0;
	if (rc != ZOK || found != NULL) {
		if (found != NULL)
			log_info("job %s: the record of run %s, left by this worker's previous "
			         "process, is there: %s",
			         znode_basename(t->jr->path), t->run_id, znode_basename(found));
		t->settle_cb(found, t->arg);
		jobrec_task_free(t);
		return;
	}
	jobrec_run_step(t);
}

/* Look for the run's record by its run_id (again, after a reconnect). */
void
jobrec_settle_search(struct jobrec_task *t)
{
	t->find = jobrec_runs_find_run(t->jr->zk, t->jr->runs_path, t->run_id, t->history,
	                               jobrec_settle_found_cb, t);
}

/*
 * Record the run named run_id, which an earlier process of this worker started, with record
 * (a stolen reference), unless a record of it is among the newest history ones already. cb
 * hears the record's path (written, or found), or NULL if it cannot be written (history 0, no
 * right to write); until then a lost connection or session only delays it. No hook runs.
 */
void
jobrec_settle(struct jobrec *jr, const char *run_id, json_t *record, int history,
              jobrec_settle_cb cb, void *arg)
{
	struct jobrec_task *t;

	if (history <= 0) {
		json_decref(record);
		cb(NULL, arg);
		return;
	}
	format_stamp(record);
	t = jobrec_task_new(jr, JOBREC_TASK_RUN, 0, NULL);
	t->record = record;
	t->data = json_dumps(record, JSON_COMPACT);
	t->history = history;
	t->run_id = xstrdup(run_id);
	t->settling = 1;
	t->settle_cb = cb;
	t->arg = arg;
	jobrec_settle_search(t);
}

/* The give-back is done, or nothing is left to give back: say so, and end. */
static void
jobrec_disown_done(struct jobrec_task *t)
{
	jobrec_settle_cb cb = t->settle_cb;
	void *arg = t->arg;

	jobrec_task_free(t);
	cb(NULL, arg);
}

/* The give-back's write: landed, lost a race (read again), or given up. */
static void
jobrec_disown_set_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;

	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1; /* the next read tells */
		return;
	}
	if ((reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) &&
	    ++t->races <= JOBREC_MAX_RACES) {
		jobrec_disown_step(t);
		return;
	}
	if (reply->rc != ZOK)
		log_warnx("job %s: cannot give back the tick its previous process claimed: %s",
		          znode_basename(t->jr->path), zerror(reply->rc));
	jobrec_disown_done(t);
}

/* The state as read: the tick, if it is still the one claimed last and node's, is given back. */
static void
jobrec_disown_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	struct tickstate st;
	char when[40];

	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK || !jobrec_read_state(t->jr, reply, &st)) {
		jobrec_disown_done(t); /* no state: nothing claimed; or unreadable */
		return;
	}
	if (!tickstate_give_back(&st, t->tick, t->node)) {
		tickstate_free(&st); /* not node's (another claimed it), or a later tick's since */
		jobrec_disown_done(t);
		return;
	}
	clock_iso8601((uint64_t)t->tick * 1000, when, sizeof when);
	log_warnx("job %s: the tick of %s was claimed by this worker's previous process, which "
	          "died before it started it: giving it back to the workers",
	          znode_basename(t->jr->path), when);
	t->maybe_set = 1;
	jobrec_write_state(t, reply, &st, jobrec_disown_set_cb);
}

/* Read the state (again). */
void
jobrec_disown_step(struct jobrec_task *t)
{
	zk_get(t->jr->zk, t->jr->state_path, NULL, jobrec_disown_get_cb, t);
}

/*
 * node's previous process claimed tick and died before it started it (its journal says so,
 * runjournal.c), maybe before it heard whether the claim landed. If it landed and the tick
 * is still the last claimed, it would stay claimed by no one alive, neither run nor recorded
 * missed (torture, finding 16): it is given back (tickstate_give_back), so that any worker
 * may claim it while its start_deadline lasts, and if none does the next claim records it
 * missed. Once a later tick is claimed, the state no longer says who claimed this one: then
 * it is left as it is. cb (path NULL) hears that it is done, or that nothing was left to do;
 * not if the job goes first (its next process tries again).
 */
void
jobrec_disown(struct jobrec *jr, const char *node, int64_t tick, jobrec_settle_cb cb, void *arg)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_DISOWN, tick, node);

	t->give = 1; /* outlives an expiry: the next session's read tells (jobrec_session) */
	t->settle_cb = cb;
	t->arg = arg;
	jobrec_disown_step(t);
}
