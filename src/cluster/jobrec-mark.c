/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (with jobrec.c). */
/*
 * jobrec-mark.c: a tick marked missed or paused in the job's tick state (a claim will never
 * take it), or given back, and the run record that says so.
 *
 * A mark and its record are one transaction (a multi): both land or neither does. Written
 * one after the other, a mark whose answer was lost with the connection (it had landed) was
 * read back after the reconnect as another worker's, and its record was never written: a
 * tick neither run nor recorded (torture finding 14). Now a lost answer is settled by the
 * record: found under runs/, the mark landed with it; not found, neither did, and the state
 * is read again. A record the window refuses (600 a minute) is not written; the mark is.
 */

#include <stdlib.h>
#include <string.h>

#include "jobrec-int.h"
#include "jobrec.h"
#include "log.h"
#include "tickstate.h"
#include "xmalloc.h"
#include "znode.h"

static void jobrec_missed_get_cb(const struct zk_reply *, void *);

/* Forget the record of a mark that did not land. */
static void
jobrec_mark_forget(struct jobrec_task *t)
{
	if (t->record != NULL)
		json_decref(t->record);
	t->record = NULL;
	free(t->data);
	t->data = NULL;
	t->rec_sent = 0;
}

/* The mark landed (with its record, created; or alone, NULL): say so, keep `history`. */
static void
jobrec_mark_landed(struct jobrec_task *t, const char *created)
{
	struct jobrec *jr = t->jr;

	t->rec_sent = 0;
	if (!t->paused && t->why < JOBREC_MISSED_WHYS)
		jr->missed[t->why]++;
	jobrec_missed_said(znode_basename(jr->path), t->tick, t->paused, t->why);
	jobrec_recorded(jr, t->record, created);
	if (created != NULL)
		zk_children(jr->zk, jr->runs_path, NULL, jobrec_trim_cb, t); /* it frees t */
	else
		jobrec_task_free(t);
}

/* The mark's write (with its record, or alone): landed, lost a race, or its fate unknown. */
static void
jobrec_mark_set_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	struct jobrec *jr = t->jr;

	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1; /* rec_sent: the next step looks for the record */
		return;
	}
	if (reply->rc == ZNONODE && t->rec_sent && ++t->races <= JOBREC_MAX_RACES) {
		/* <job>/runs is not there yet (or the state went away): make it, read again. */
		jobrec_make_runs(jr);
		jobrec_mark_forget(t);
		jobrec_missed_step(t);
		return;
	}
	if ((reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) &&
	    ++t->races <= JOBREC_MAX_RACES) {
		t->maybe_set = 0; /* it did not land */
		jobrec_mark_forget(t);
		jobrec_missed_step(t);
		return;
	}
	if (reply->rc == ZOK && t->record != NULL) {
		jobrec_mark_landed(t, t->rec_sent ? reply->created : NULL);
		return;
	}
	jobrec_task_free(t);
}

/* Send the state (st, freed) with the tick's mark and t's record, in one transaction. */
static void
jobrec_mark_send(struct jobrec_task *t, const struct zk_reply *read, struct tickstate *st)
{
	struct jobrec *jr = t->jr;
	char *data = tickstate_dump(st);
	char *path = znode_join(jr->runs_path, "run-");

	tickstate_free(st);
	free(t->data);
	t->data = json_dumps(t->record, JSON_COMPACT);
	t->rec_sent = 1;
	zk_write_create(jr->zk, jr->state_path, data, (int)strlen(data),
	                read->rc == ZNONODE ? ZK_WRITE_CREATES : jobrec_state_version(read), path,
	                t->data, (int)strlen(t->data), ZOO_PERSISTENT_SEQUENTIAL,
	                jobrec_mark_set_cb, t);
	free(path);
	free(data);
}

/* After a lost answer: the record found (the mark landed with it), or not (neither did). */
static void
jobrec_mark_found_cb(int rc, const char *found, void *arg)
{
	struct jobrec_task *t = arg;

	t->find = NULL; /* it frees itself */
	if (jobrec_away(rc)) {
		t->waiting = 1; /* away again: look after the next reconnect (or session) */
		return;
	}
	if (found != NULL) {
		log_info("job %s: the mark of a tick not run, whose answer was lost, had landed "
		         "with its record %s",
		         znode_basename(t->jr->path), znode_basename(found));
		jobrec_mark_landed(t, found);
		return;
	}
	jobrec_mark_forget(t); /* not there: the state tells what is left to do */
	jobrec_missed_step(t);
}

/* Go on with a mark: look for its record if a write's answer was lost, else read the state. */
void
jobrec_missed_step(struct jobrec_task *t)
{
	if (t->rec_sent) {
		t->find =
		    jobrec_runs_find_start(t->jr->zk, t->jr->runs_path, t->data, strlen(t->data),
		                           t->history, jobrec_mark_found_cb, t);
		return;
	}
	zk_get(t->jr->zk, t->jr->state_path, NULL, jobrec_missed_get_cb, t);
}

/*
 * A give-back on the state read: 1 the tick is given back, 2 and marked missed (paused: it is
 * recorded paused), 0 nothing to do. A tick that a later claim superseded while its one runner
 * (us) still had it was not named skipped by that claim: it is marked and recorded missed
 * (superseded) now, unless a write of ours may have given it back already (another worker may
 * have run it since).
 */
static int
jobrec_give(struct jobrec_task *t, struct tickstate *st)
{
	if (tickstate_give_back(st, t->tick, t->node))
		return t->paused && tickstate_mark_missed(st, t->tick) ? 2 : 1;
	if (t->per_tick != 1 || t->maybe_set || !tickstate_mark_superseded(st, t->tick))
		return 0;
	if (!t->paused)
		t->why = JOBREC_MISSED_SUPERSEDED;
	return 2;
}

/* The state as read: mark the tick missed unless it was claimed or already marked. */
static void
jobrec_missed_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_task *t = arg;
	struct tickstate st;

	if (jobrec_unknown(t, reply->rc)) {
		t->waiting = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		jobrec_task_free(t);
		return;
	}
	if (!jobrec_read_state(t->jr, reply, &st)) {
		jobrec_task_free(t);
		return;
	}
	jobrec_state_warn(t->jr, &st);
	if (t->give)
		t->handed = jobrec_give(t, &st);
	else if (t->hand)
		t->handed =
		    tickstate_hand_back(&st, t->tick, t->node, t->why == JOBREC_MISSED_UNHEALTHY);
	if (t->hand ? t->handed == 0 : !tickstate_mark_missed(&st, t->tick)) {
		tickstate_free(&st);
		jobrec_task_free(t);
		return;
	}
	t->maybe_set = t->give; /* a give-back may land though its answer is lost */
	jobrec_mark_forget(t);
	if (!t->hand || t->handed == 2)
		t->record = jobrec_missed_record(t->tick, t->node, t->paused, t->why);
	if (t->record != NULL && jobrec_record_admit(t->jr, t->record, t->history, &t->jr->missed_w,
	                                             JOBREC_MAX_MISSED)) {
		jobrec_mark_send(t, reply, &st);
		return;
	}
	jobrec_write_state(t, reply, &st, jobrec_mark_set_cb);
}

/* Record tick as missed for why, once cluster-wide, unless it was claimed or recorded already. */
void
jobrec_missed_why(struct jobrec *jr, int64_t tick, const char *node, int history,
                  enum jobrec_missed_why why)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_MISSED, tick, node);

	t->history = history;
	t->why = why;
	jobrec_missed_step(t);
}

/*
 * Give tick, which node claimed, back: its start failed for a reason of this host
 * (tickstate_hand_back). unhealthy: no healthy worker is left to run it, so it is marked and
 * recorded missed (why unhealthy) unless another runner has it.
 */
void
jobrec_hand_back(struct jobrec *jr, int64_t tick, const char *node, int history, int unhealthy)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_MISSED, tick, node);

	t->history = history;
	t->hand = 1;
	t->why = unhealthy ? JOBREC_MISSED_UNHEALTHY : JOBREC_MISSED_DEADLINE;
	jobrec_missed_step(t);
}

/*
 * Give tick, which node claimed and will not run, back (tickstate_give_back): a claim that
 * landed after the job let it go, or whose run never started (the machine's ABANDON). No
 * lease is needed: nothing ran. paused: marked and recorded paused in the same write. A
 * tick superseded meanwhile is recorded missed (jobrec_give). It outlives an expiry: the
 * next session's read tells whether the tick is still node's.
 */
void
jobrec_give_back(struct jobrec *jr, int64_t tick, int per_tick, const char *node, int history,
                 int paused)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_MISSED, tick, node);

	t->per_tick = per_tick;
	t->history = history;
	t->hand = t->give = 1;
	t->paused = paused;
	t->why = JOBREC_MISSED_DEADLINE;
	jobrec_missed_step(t);
}

/*
 * Record tick as not run because the job is paused: marked like a missed tick (so that it
 * never runs late), and recorded once cluster-wide, with the reason "paused".
 */
void
jobrec_paused_tick(struct jobrec *jr, int64_t tick, const char *node, int history)
{
	struct jobrec_task *t = jobrec_task_new(jr, JOBREC_TASK_MISSED, tick, node);

	t->history = history;
	t->paused = 1;
	jobrec_missed_step(t);
}
