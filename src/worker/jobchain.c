/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobchain.c: a chained job (`after = JOB`) as ticks of its machine. The worker lists each
 * parent's run records with a watch and reads the new ones once; the runs whose outcome the
 * child waits for are its candidates. A generation is the parents' runs one chained run
 * answers: with one parent, each of its runs in turn (oldest first); with several (a join),
 * the newest candidate of every parent, once each has one newer than the last it handled.
 * The machine gets a generation as a TICK of kind JOBFSM_KIND_GEN whose time is when its
 * last run was recorded, so that start_deadline counts from the parent's end; its claim, and
 * its missed or paused record, is a versioned write of the chain state (chainrec.c), apart
 * from the tick state that a job with a schedule as well claims its ticks in.
 * Parent runs recorded before the child's job record was created are not the child's.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "chainrec.h"
#include "clock.h"
#include "jobchain-int.h"
#include "config.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "layout.h"
#include "runjournal.h"
#include "xmalloc.h"
#include "znode.h"

/* Forget an operation. */
static void
job_chain_op_free(struct job_chain_op *op)
{
	struct job_chain_op **pp;

	zk_cancel(op->c->job->zk, op);
	for (pp = &op->c->ops; *pp != NULL; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			break;
		}
	free(op->before);
	free(op);
}

/* Whether op is a claim, or a claim's hand-back: the machine waits for its end. */
static int
job_chain_op_claims(const struct job_chain_op *op)
{
	return strcmp(op->how, "run") == 0 || strcmp(op->how, "back") == 0;
}

/*
 * The timer: list again the parents that had no runs folder (ZooKeeper leaves no watch on a
 * node that does not exist), and evaluate again (a generation handed over but not taken).
 */
static void
job_chain_timer_cb(int fd, short what, void *arg)
{
	struct job_chain *c = arg;
	int i;

	(void)fd;
	(void)what;
	for (i = 0; i < c->n; i++)
		if (c->p[i].absent && c->job->fsm.ready)
			job_chain_list(&c->p[i]);
	job_chain_eval(c);
}

/* The chain of a job with `after`, or NULL. */
struct job_chain *
job_chain_new(struct job *job, struct event_base *base)
{
	const struct config_job *cj = job->cfg;
	const char *root = job_main_config(job)->root;
	struct job_chain *c;
	char *const *a;

	if (cj->after == NULL)
		return NULL;
	c = xcalloc(1, sizeof *c);
	c->job = job;
	for (a = cj->after; *a != NULL && c->n < CHAINREC_MAX_PARENTS; a++) {
		struct job_chain_parent *p = &c->p[c->n++];
		const char *colon = strchr(*a, ':');

		p->c = c;
		p->job = colon != NULL ? xstrndup(*a, (size_t)(colon - *a)) : xstrdup(*a);
		p->mode = colon == NULL                   ? JOB_CHAIN_OK
		          : strcmp(colon + 1, "any") == 0 ? JOB_CHAIN_ANY
		                                          : JOB_CHAIN_FAILED;
		p->runs_path = layout_job_runs(root, p->job);
		p->seen = p->done = p->back = -1;
	}
	c->state_path = layout_job_chain(root, job->name);
	c->timer = evtimer_new(base, job_chain_timer_cb, c);
	return c;
}

/* Free the chain (nothing in ZooKeeper changes). */
void
job_chain_free(struct job_chain *c)
{
	int i;

	if (c == NULL)
		return;
	while (c->ops != NULL)
		job_chain_op_free(c->ops);
	zk_cancel(c->job->zk, c);
	for (i = 0; i < c->n; i++) {
		zk_cancel(c->job->zk, &c->p[i]);
		free(c->p[i].job);
		free(c->p[i].runs_path);
	}
	event_free(c->timer);
	if (c->state != NULL)
		json_decref(c->state);
	free(c->before);
	free(c->state_path);
	free(c);
}

/*
 * The next generation from the candidates newer than what state handled (the chain's as
 * known, c->state, or one just read): one parent's
 * oldest; a join's newest of each parent. 0 when some parent has none. A parent the chain
 * state never handled (a new chain, or `after` newly added to a job) has no candidate
 * recorded before the job's record, nor one past start_deadline already: those were never
 * the job's to run, and are not recorded missed either.
 */
static int
job_chain_next(const struct job_chain *c, const json_t *state, struct chainrec_gen *g)
{
	int64_t created = jobrec_created_ms(c->job->rec),
	        stale = (int64_t)job_now_ms(c->job) - (int64_t)c->job->cfg->start_deadline_ms;
	int i, j, pick;

	g->n = 0;
	for (i = 0; i < c->n; i++) {
		const struct job_chain_parent *p = &c->p[i];
		int64_t done = chainrec_done(state, p->job);

		pick = -1;
		for (j = 0; j < p->nruns; j++) {
			if (p->runs[j].seq <= done || p->runs[j].ctime_ms < created ||
			    (done < 0 && p->runs[j].ctime_ms < stale) ||
			    chainrec_handled_id(state, p->job, p->runs[j].run_id))
				continue;
			pick = j;
			if (c->n == 1)
				break; /* one parent: each of its runs, oldest first */
		}
		if (pick < 0)
			return 0;
		g->p[g->n].job = p->job;
		g->p[g->n++].run = p->runs[pick];
	}
	return g->n > 0;
}

/* The generation's time: when its last parent run was recorded (seconds, servers' clock). */
static int64_t
job_chain_time(const struct chainrec_gen *g)
{
	int64_t t = 0;
	int i;

	for (i = 0; i < g->n; i++)
		if (g->p[i].run.ctime_ms > t)
			t = g->p[i].run.ctime_ms;
	return t / 1000;
}

/* Whether two generations are the same parents' runs. */
static int
job_chain_same(const struct chainrec_gen *a, const struct chainrec_gen *b)
{
	int i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->p[i].run.seq != b->p[i].run.seq || strcmp(a->p[i].job, b->p[i].job) != 0)
			return 0;
	return 1;
}

/*
 * Whether g is still the generation to handle by the chain state st just read (the claim's
 * read): not if a parent's run before it is free again there (given back, by a hand-back or
 * by a dead process's next one, since the machine was handed g from an older read), which
 * the claim would otherwise skip for good. What the chain knows is left as it was: the
 * state's watch brings it up to date.
 */
static int
job_chain_still_next(const struct job_chain *c, const struct chainrec_gen *g, const json_t *st)
{
	struct chainrec_gen now;

	return !job_chain_next(c, st, &now) || job_chain_same(&now, g);
}

/* The journal of open runs (runjournal.c), where a claim stays until its run begins. */
static struct runjournal *
job_chain_journal(const struct job_chain *c)
{
	return c->job->cb->journal(c->job->cb_arg);
}

/* A generation as its claim's journal entry keeps it: each parent's run and its sequence. */
static json_t *
job_chain_gen_entry(const struct chainrec_gen *g)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < g->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:s, s:s}", "job", g->p[i].job,
		                                   "seq", (json_int_t)g->p[i].run.seq, "ctime_ms",
		                                   (json_int_t)g->p[i].run.ctime_ms, "run_id",
		                                   g->p[i].run.run_id, "outcome",
		                                   g->p[i].run.outcome));
	return a;
}

/*
 * op's claim (or hand-back) is over here with nothing left to follow: its journal entry goes,
 * unless another claim of the job has written the entry since (one entry a job and process).
 */
static void
job_chain_unjournal(const struct job_chain_op *op)
{
	const struct job_chain *c = op->c;
	const struct job_chain_op *o;

	if (op->left != NULL || op->keep || c->have_run)
		return;
	for (o = c->ops; o != NULL; o = o->next)
		if (o != op && o->left == NULL && job_chain_op_claims(o))
			return;
	runjournal_chain_unclaim(job_chain_journal(c), c->job->name);
}

/*
 * Whether the machine may be handed the next generation (c->fed, which its claim takes): it
 * waits; or, with a schedule as well, it handles a tick (a run, a stand-by, a retry) and
 * holds no generation, and keeps this one pending (jobfsmtick.c), so that ticks due one
 * after the other do not keep it waiting. Never while it holds one: c->fed is its claim's.
 */
static int
job_chain_may_feed(const struct job *job)
{
	const struct jobfsm *m = &job->fsm;

	if (m->state == JOB_WAITING)
		return 1;
	return job_has_schedule(job) && m->pending_gen < 0 &&
	       !(m->tick >= 0 && m->kind == JOBFSM_KIND_GEN);
}

/* The chain state as read: what is handled; hand the next generation to the machine. */
static void
job_chain_state_cb(const struct zk_reply *reply, void *arg)
{
	struct job_chain *c = arg;
	struct job *job = c->job;
	struct chainrec_gen g;
	struct jobfsm_input in;
	json_t *st;
	uint64_t now = job_now_ms(job);
	int i;

	c->reading = 0;
	if (reply->rc != ZOK)
		c->watching = 0; /* a read that failed, or of no node, leaves no watch */
	if (reply->rc != ZOK && reply->rc != ZNONODE)
		return; /* the session's news brings us back */
	st = chainrec_parse_state(
	    reply->rc == ZOK ? reply->value : NULL,
	    reply->rc == ZOK && reply->value_len > 0 ? (size_t)reply->value_len : 0);
	if (st == NULL) {
		if (!c->refused)
			log_warnx("job %s: its chain state %s is of a newer format: not running it "
			          "after its parents here",
			          job->name, c->state_path);
		c->refused = 1;
		return;
	}
	c->refused = 0;
	for (i = 0; i < c->n; i++)
		c->p[i].done = chainrec_done(st, c->p[i].job);
	c->known = 1;
	if (c->state != NULL)
		json_decref(c->state);
	c->state = st;
	if (c->reread) {
		c->reread = 0;
		job_chain_eval(c);
		return;
	}
	if (!job_chain_next(c, c->state, &g) || !job_chain_may_feed(job) ||
	    !jobfsm_active(&job->fsm))
		return; /* the machine evaluates again when it waits (TICK_ARM_IF_IDLE) */
	if (job_chain_same(&g, &c->fed) && now < c->fed_ms + JOB_CHAIN_REFEED_MS) {
		job_timer(c->timer, c->fed_ms + JOB_CHAIN_REFEED_MS - now);
		return; /* handed over just now (drained here, or not taken yet) */
	}
	c->fed = g;
	c->fed_ms = now;
	log_debug("job %s: parent run(s) to answer, recorded at %lld", job->name,
	          (long long)job_chain_time(&g));
	job_input(job, &in, JOBFSM_TICK);
	in.tick = job_chain_time(&g);
	in.kind = JOBFSM_KIND_GEN;
	job_feed(job, &in, NULL);
}

/*
 * The chain state changed: a claim, a mark, or a hand-back (a worker stopped before its run
 * gave the parents' runs back): read it again before judging the candidates.
 */
static void
job_chain_state_watch_cb(int type, const char *path, void *arg)
{
	struct job_chain *c = arg;

	(void)type;
	(void)path;
	c->watching = 0;
	c->known = 0;
	job_chain_eval(c);
}

/* Look for a generation to run: read the chain state if some candidate may be new. */
void
job_chain_eval(struct job_chain *c)
{
	struct chainrec_gen g;

	/* Until the state is read, a parent's done is not known: read it (once) to tell. */
	if (!c->job->fsm.ready || !c->job->fsm.agreed ||
	    (c->known && !job_chain_next(c, c->state, &g)))
		return;
	if (c->reading) {
		c->reread = 1;
		return;
	}
	c->reading = 1;
	zk_get(c->job->zk, c->state_path, c->watching ? NULL : job_chain_state_watch_cb,
	       job_chain_state_cb, c);
	c->watching = 1;
}

/* The machine waits (TICK_ARM): look for the next generation. */
void
job_chain_poke(struct job_chain *c)
{
	job_chain_eval(c);
}

/*
 * Registered in a session: list every parent's runs with a watch, reading again the newest
 * records (what an earlier session asked for may never have been answered).
 */
void
job_chain_ready(struct job_chain *c)
{
	int i;

	for (i = 0; i < c->n; i++) {
		zk_cancel(c->job->zk, &c->p[i]);
		c->p[i].listing = c->p[i].relist = c->p[i].reading = 0;
		c->p[i].seen = c->p[i].back = -1;
		job_chain_list(&c->p[i]);
	}
}

static void job_chain_op_step(struct job_chain_op *);

/*
 * Record a generation missed or paused (a run record of the child, in the window of missed
 * ones); a hand-back that could not be done ("back": a later generation was handled on top
 * of our claim) records it missed, superseded, and has said why.
 */
static void
job_chain_record_missed(struct job_chain *c, const struct job_chain_op *op)
{
	struct job *job = c->job;
	char when[40], *ids = chainrec_ids(&op->gen);
	int64_t tick = job_chain_time(&op->gen);
	int paused = strcmp(op->how, "paused") == 0;
	json_t *o;

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	if (paused)
		log_info("job %s: not run after %s: the job is paused", job->name, ids);
	else if (strcmp(op->how, "back") != 0)
		log_warnx("job %s: missed the run after %s: no worker started it within its "
		          "start_deadline",
		          job->name, ids);
	if (!paused)
		job->chain_missed++;
	o = json_pack("{s:I, s:s, s:s, s:s, s:s}", "tick", (json_int_t)tick, "tick_time", when,
	              "node", job_main_config(job)->node_id, "reason", paused ? "paused" : "missed",
	              "outcome", paused ? "paused" : "missed");
	json_object_set_new(o, "after", chainrec_gen_json(&op->gen));
	if (!paused)
		json_object_set_new(o, "missed_reason",
		                    json_string(jobrec_missed_name(strcmp(op->how, "back") == 0
		                                                       ? JOBREC_MISSED_SUPERSEDED
		                                                       : JOBREC_MISSED_DEADLINE)));
	jobrec_record_not_run(job->rec, o, job->cfg->history); /* apart from the runs */
	free(ids);
}

/* Say that the claim of op's generation is given back (landed: it was ours until now). */
static void
job_chain_given_back(const struct job_chain_op *op)
{
	char *ids = chainrec_ids(&op->gen);

	if (op->left != NULL)
		log_info(
		    "job %s: the run after %s, claimed by this worker's previous process, "
		    "which died before it ran it: given back to the workers that carry the job",
		    op->c->job->name, ids);
	else if (op->detached)
		log_info("job %s: let go of its claim of the run after %s before running it (the "
		         "lease went, the supervisor died, or the job stopped): given back to the "
		         "workers that carry the job",
		         op->c->job->name, ids);
	else
		log_info("job %s: stopped before its run after %s: given back to the workers that "
		         "carry the job",
		         op->c->job->name, ids);
	free(ids);
}

/*
 * Whether op's generation, let go, is claimed here again meanwhile: a claim of ours whose
 * write is out, or that landed (it finds our claim its own and runs it): not given back.
 */
static int
job_chain_claimed_again(const struct job_chain_op *op)
{
	const struct job_chain *c = op->c;
	const struct job_chain_op *o;

	if (c->have_run && job_chain_same(&c->run, &op->gen))
		return 1;
	for (o = c->ops; o != NULL; o = o->next)
		if (o != op && !o->detached && o->maybe_set && strcmp(o->how, "run") == 0 &&
		    job_chain_same(&o->gen, &op->gen))
			return 1;
	return 0;
}

/* The last claim let go is followed to its end: a job stopped meanwhile is done now. */
static void
job_chain_followed(struct job_chain *c)
{
	struct job *job = c->job;

	if (!job->done_later || job_chain_following(c))
		return;
	job->done_later = 0;
	log_debug("job %s: its chain claims are followed to their end", job->name);
	job->cb->done(job, job->cb_arg);
}

/*
 * A claim (or a hand-back) the machine let go ended: a claim that landed is given back now
 * (the same operation, as a hand-back), unless claimed here again; nothing is fed.
 */
static void
job_chain_detached_done(struct job_chain_op *op, int landed)
{
	struct job_chain *c = op->c;

	if (strcmp(op->how, "run") == 0 && landed && !job_chain_claimed_again(op)) {
		log_debug("job %s: a claim let go landed: giving it back", c->job->name);
		op->how = "back";
		op->maybe_set = op->races = op->waiting = 0;
		job_chain_op_step(op);
		return;
	}
	if (strcmp(op->how, "back") == 0 && landed)
		job_chain_given_back(op);
	if (op->left != NULL)
		runjournal_settled(op->left->rj, op->left); /* a predecessor's claim: done */
	else
		job_chain_unjournal(op);
	job_chain_op_free(op);
	job_chain_followed(c);
}

/* An operation ends: a claim (or its hand-back) tells the machine; a mark records. */
static void
job_chain_op_done(struct job_chain_op *op, int landed, int taken)
{
	struct job_chain *c = op->c;
	struct jobfsm_input in;
	int back = strcmp(op->how, "back") == 0, claim = back || strcmp(op->how, "run") == 0;

	if (op->detached) {
		job_chain_detached_done(op, landed);
		return;
	}
	if (claim && !back && landed) {
		c->run = op->gen;
		c->have_run = 1;
		free(c->before);
		c->before = op->before;
		op->before = NULL;
	}
	if (back) {
		c->have_run = 0;
		if (landed)
			job_chain_given_back(op);
		landed = 0; /* the claim is over: CLAIM_LOST ends the machine's wait */
		job_chain_unjournal(op);
	} else if (claim && !landed && !op->unknown)
		job_chain_unjournal(op); /* not ours: nothing to give back */
	if (!claim && landed)
		job_chain_record_missed(c, op);
	job_chain_op_free(op);
	if (claim) {
		job_input(c->job, &in, landed ? JOBFSM_CLAIMED : JOBFSM_CLAIM_LOST);
		in.taken = taken;
		job_feed(c->job, &in, NULL);
	} else
		job_chain_eval(c);
}

/*
 * Whether op waits for the session's news after rc: a lost connection, or an expiry while a
 * claim (or a hand-back) of ours may have landed, or one the machine let go: the state read
 * in the next session tells (the machine hears the lease go and lets the claim go).
 */
static int
job_chain_op_unknown(const struct job_chain_op *op, int rc)
{
	return zk_connection_error(rc) ||
	       (rc == ZSESSIONEXPIRED &&
	        (op->detached || (op->maybe_set && job_chain_op_claims(op))));
}

/* The versioned write of the chain state landed, lost a race, or its fate is unknown. */
static void
job_chain_set_cb(const struct zk_reply *reply, void *arg)
{
	struct job_chain_op *op = arg;

	if (reply->rc == ZOK) {
		job_chain_op_done(op, 1, 0);
		return;
	}
	if ((reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) &&
	    ++op->races <= JOB_CHAIN_RACES) {
		if (strcmp(op->how, "back") == 0)
			op->maybe_set = 0; /* it did not land: the state tells what to do now */
		job_chain_op_step(op);
		return;
	}
	if (job_chain_op_unknown(op, reply->rc)) {
		op->waiting = 1; /* after the reconnect, the state tells whether it landed */
		return;
	}
	log_warnx("job %s: cannot write %s: %s", op->c->job->name, op->c->state_path,
	          zerror(reply->rc));
	job_chain_op_done(op, 0, 0);
}

/*
 * The chain state as read for a hand-back: while our claim is the last write (nobody wrote
 * since), the state before it is written again at this version, and the parents' runs are
 * free for the workers that carry the job (or, past start_deadline, recorded missed by them).
 * Not handled at all, or moved on after a write of ours whose answer was lost: our hand-back
 * landed. Handled with a later write on top and no write of ours out (a mark of a newer
 * generation, or another lease's claim): it cannot be undone, and this worker, which claimed
 * it, records it missed.
 */
static void
job_chain_back_read(struct job_chain_op *op, const struct zk_reply *reply, json_t *st)
{
	struct job_chain *c = op->c;
	enum chainrec_verdict v =
	    chainrec_claim(st, &op->gen, job_main_config(c->job)->node_id, "back");
	char *ids = chainrec_ids(&op->gen);

	json_decref(st);
	if (op->detached && v == CHAINREC_OURS && job_chain_claimed_again(op)) {
		free(ids); /* claimed here again: that claim runs it */
		op->keep = 1;
		job_chain_op_done(op, 0, 0);
		return;
	}
	if (v == CHAINREC_OURS && op->before != NULL && reply->rc == ZOK) {
		free(ids);
		op->maybe_set = 1;
		log_debug("job %s: writing %s (back)", c->job->name, c->state_path);
		zk_set(c->job->zk, c->state_path, op->before, (int)strlen(op->before),
		       reply->stat->version, job_chain_set_cb, op);
		return;
	}
	if (op->left != NULL && v == CHAINREC_CLAIM && !op->maybe_set)
		log_info("job %s: the run after %s, which this worker's previous process was "
		         "claiming when it died, was not claimed: nothing to give back",
		         c->job->name, ids);
	else if (v == CHAINREC_CLAIM || op->maybe_set)
		job_chain_given_back(op);
	else if (op->left != NULL)
		/* a predecessor's claim that may never have landed: another worker may have run
		 * the generation (the journal's limit, as for a tick: docs/safety.md) */
		log_warnx(
		    "job %s: the run after %s, which this worker's previous process was "
		    "claiming when it died, is handled by another write since: not given back "
		    "(if that claim had landed, nobody runs it)",
		    c->job->name, ids);
	else {
		log_warnx(
		    "job %s: let go of the run after %s before running it, and a later "
		    "generation handled on top of its claim in %s keeps it handled: recording "
		    "it missed (superseded)",
		    c->job->name, ids, c->state_path);
		job_chain_record_missed(c, op);
	}
	free(ids);
	job_chain_op_done(op, 0, 0);
}

/* The chain state as read: claim (or mark) the generation if no run of it was handled. */
static void
job_chain_op_get_cb(const struct zk_reply *reply, void *arg)
{
	struct job_chain_op *op = arg;
	struct job_chain *c = op->c;
	enum chainrec_verdict v;
	json_t *st;
	char *data, *before;

	if (job_chain_op_unknown(op, reply->rc)) {
		op->waiting = 1;
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		job_chain_op_done(op, 0, 0);
		return;
	}
	st = chainrec_parse_state(
	    reply->rc == ZOK ? reply->value : NULL,
	    reply->rc == ZOK && reply->value_len > 0 ? (size_t)reply->value_len : 0);
	if (st == NULL) {
		job_chain_op_done(op, 0, 1);
		return;
	}
	if (strcmp(op->how, "back") == 0) {
		job_chain_back_read(op, reply, st);
		return;
	}
	if (!op->detached && !job_chain_still_next(c, &op->gen, st)) {
		/* handed over from an older read: a run given back since comes first */
		log_debug("job %s: the generation handed over is not the next by the state read "
		          "(a parent's run before it is free again): not %s",
		          c->job->name, strcmp(op->how, "run") == 0 ? "claimed" : "marked");
		json_decref(st);
		job_chain_op_done(op, 0, 1);
		return;
	}
	before = strcmp(op->how, "run") == 0 ? chainrec_dump(st) : NULL;
	v = chainrec_claim(st, &op->gen, job_main_config(c->job)->node_id, op->how);
	if (v != CHAINREC_CLAIM) {
		json_decref(st);
		free(before);
		/* Ours already: our earlier write landed, its answer was lost. */
		job_chain_op_done(op, v == CHAINREC_OURS && op->maybe_set, 1);
		return;
	}
	if (op->detached) { /* let go, and it did not land (or no write was sent): done */
		json_decref(st);
		free(before);
		job_chain_op_done(op, 0, 1);
		return;
	}
	free(op->before);
	op->before = before;
	data = chainrec_dump(st);
	json_decref(st);
	if (strcmp(op->how, "run") == 0) /* journaled first: if main dies, its next process... */
		runjournal_chain_claim(job_chain_journal(c), c->job->name, job_chain_time(&op->gen),
		                       job_chain_gen_entry(&op->gen), op->before);
	op->maybe_set = 1;
	log_debug("job %s: writing %s (%s)", c->job->name, c->state_path, op->how);
	if (reply->rc == ZNONODE)
		zk_create_node(c->job->zk, c->state_path, data, (int)strlen(data), ZOO_PERSISTENT,
		               job_chain_set_cb, op);
	else
		zk_set(c->job->zk, c->state_path, data, (int)strlen(data), reply->stat->version,
		       job_chain_set_cb, op);
	free(data);
}

static void
job_chain_op_step(struct job_chain_op *op)
{
	zk_get(op->c->job->zk, op->c->state_path, NULL, job_chain_op_get_cb, op);
}

/* Claim the generation handed over (how "run"), or mark it missed or paused. */
void
job_chain_claim(struct job_chain *c, const char *how)
{
	struct job_chain_op *op = xcalloc(1, sizeof *op);

	op->c = c;
	op->how = how;
	op->gen = c->fed;
	op->next = c->ops;
	c->ops = op;
	if (strcmp(how, "run") == 0)
		c->have_run = 0;
	job_chain_op_step(op);
}

/*
 * Give back the generation claimed (HAND_BACK: the job stopped for good before its run); the
 * machine hears CLAIM_LOST once it is given back, or recorded missed if it cannot be.
 */
void
job_chain_give_back(struct job_chain *c)
{
	struct job_chain_op *op = xcalloc(1, sizeof *op);

	op->c = c;
	op->how = "back";
	op->gen = c->run;
	op->before = c->before; /* the state before the claim, written again */
	c->before = NULL;
	op->next = c->ops;
	c->ops = op;
	job_chain_op_step(op);
}

/*
 * The machine lets its generation go unrun (ABANDON): the claim (or the stop's hand-back)
 * under way is followed to its answer, and a claim that landed, now or then (landed: the
 * run waited for the lease), is given back: no lease is needed, nothing ran. The machine
 * hears nothing of it; a job stopped meanwhile is done only once it is over.
 */
void
job_chain_abandon(struct job_chain *c, int landed)
{
	struct job_chain_op *op;
	int out = 0;

	for (op = c->ops; op != NULL; op = op->next)
		if (job_chain_op_claims(op) && !op->detached)
			op->detached = out = 1;
	if (!out && landed && c->have_run) {
		job_chain_give_back(c);
		c->ops->detached = 1;
	}
	c->have_run = 0;
}

/*
 * The worker's previous process died holding l, a claim of a generation it had not started
 * (runjournal.c): give it back as a hand-back the machine let go, which writes the state
 * before the claim again only while that claim is still the last write (a versioned write:
 * no lease needed; the dead session's lease keeps others from running it meanwhile). The
 * entry is settled once that is done. 0 (nothing started) when the entry no longer fits the
 * job: a parent that is not one of its parents now, or a state that does not parse.
 */
int
job_chain_disown(struct job_chain *c, struct runjournal_left *l)
{
	const json_t *gen = json_object_get(l->claimed, "gen"), *p;
	const char *before = json_string_value(json_object_get(l->claimed, "before"));
	struct job_chain_op *op;
	json_t *st, *raw;
	size_t i;
	int k;

	if (!json_is_array(gen) || json_array_size(gen) == 0 ||
	    json_array_size(gen) > CHAINREC_MAX_PARENTS || before == NULL ||
	    strlen(before) > CHAINREC_MAX_SIZE)
		return 0;
	/* a state as ZooKeeper held it: an object (what does not parse is not read as empty) */
	if ((raw = json_loads(before, 0, NULL)) == NULL || !json_is_object(raw)) {
		if (raw != NULL)
			json_decref(raw);
		return 0;
	}
	json_decref(raw);
	if ((st = chainrec_parse_state(before, strlen(before))) == NULL)
		return 0;
	op = xcalloc(1, sizeof *op);
	json_array_foreach(gen, i, p) {
		const char *job = json_string_value(json_object_get(p, "job")),
		           *id = json_string_value(json_object_get(p, "run_id")),
		           *out = json_string_value(json_object_get(p, "outcome"));
		const json_t *seq = json_object_get(p, "seq"),
		             *ctime = json_object_get(p, "ctime_ms");

		for (k = 0; job != NULL && k < c->n && strcmp(c->p[k].job, job) != 0; k++)
			;
		if (job == NULL || k == c->n || id == NULL || out == NULL ||
		    !json_is_integer(seq) || json_integer_value(seq) < 0 ||
		    strlen(id) > CHAINREC_MAX_ID ||
		    strlen(out) >= sizeof op->gen.p[0].run.outcome) {
			json_decref(st);
			free(op);
			return 0;
		}
		op->gen.p[op->gen.n].job = c->p[k].job;
		op->gen.p[op->gen.n].run.seq = (int64_t)json_integer_value(seq);
		op->gen.p[op->gen.n].run.ctime_ms =
		    json_is_integer(ctime) ? (int64_t)json_integer_value(ctime) : 0;
		snprintf(op->gen.p[op->gen.n].run.run_id, sizeof op->gen.p[0].run.run_id, "%s", id);
		snprintf(op->gen.p[op->gen.n].run.outcome, sizeof op->gen.p[0].run.outcome, "%s",
		         out);
		op->gen.n++;
	}
	op->before = chainrec_dump(st); /* as parsed: bounded and valid, whatever the file held */
	/* and the generation was claimable on it: it is the state before that very claim */
	if (chainrec_claim(st, &op->gen, job_main_config(c->job)->node_id, "run") !=
	    CHAINREC_CLAIM) {
		json_decref(st);
		free(op->before);
		free(op);
		return 0;
	}
	json_decref(st);
	op->c = c;
	op->how = "back";
	op->detached = 1;
	op->left = l;
	op->next = c->ops;
	c->ops = op;
	job_chain_op_step(op);
	return 1;
}

/* Whether a claim or a hand-back the machine let go is still followed. */
int
job_chain_following(const struct job_chain *c)
{
	const struct job_chain_op *op;

	for (op = c->ops; op != NULL; op = op->next)
		if (op->detached)
			return 1;
	return 0;
}

/* Forget a claim (or a hand-back) under way (its callback is not called); marks go on, and
 * so do those the machine let go (job_chain_abandon). */
void
job_chain_cancel(struct job_chain *c)
{
	struct job_chain_op *op, *next;

	for (op = c->ops; op != NULL; op = next) {
		next = op->next;
		if (job_chain_op_claims(op) && !op->detached)
			job_chain_op_free(op);
	}
}

/* Session events: operations go on after a reconnect; an expiry ends them. */
void
job_chain_session(struct job_chain *c, enum zk_event event)
{
	struct job_chain_op *op, *next;

	for (op = c->ops; op != NULL; op = next) {
		next = op->next;
		if ((event == ZK_EVENT_RECONNECTED || event == ZK_EVENT_SESSION_NEW) &&
		    op->waiting) {
			op->waiting = 0;
			job_chain_op_step(op);
		} else if (event == ZK_EVENT_EXPIRED && op->detached) {
			op->waiting = 1; /* the next session's read tells whether it landed */
		} else if (event == ZK_EVENT_EXPIRED || event == ZK_EVENT_CLOSED) {
			/* A job stopping for good hears it as SESSION_EXPIRED, after this loop. */
			if (job_chain_op_claims(op) && !op->detached &&
			    !c->job->fsm.stop_requested) {
				op->unknown =
				    op->maybe_set; /* it may have landed: its entry stays */
				job_chain_op_done(op, 0, 0);
			} else
				job_chain_op_free(op);
		}
	}
	if (event == ZK_EVENT_EXPIRED || event == ZK_EVENT_CLOSED) {
		zk_cancel(c->job->zk, c);
		c->reading = c->reread = c->watching = 0;
	}
}

/*
 * Whether the run of tick is a chained one (a generation claimed): not the run-now of a
 * chained job (no tick), nor a scheduled tick's run of a job with a schedule as well.
 */
static int
job_chain_running(const struct job *job, int64_t tick, enum jobfsm_kind kind)
{
	return job->chain != NULL && job->chain->have_run && tick >= 0 && kind == JOBFSM_KIND_GEN;
}

/*
 * The run's environment (rs): its list, plus LEASEKEEPER_PARENT_RUN (the parents' run ids,
 * comma-separated), LEASEKEEPER_PARENT_JOB and LEASEKEEPER_PARENT_OUTCOME likewise. env is
 * the list job_params_env made (freed here); returns the one to free once the spec is built.
 */
char **
job_chain_env(struct job *job, struct runspec *rs, char **env)
{
	const struct chainrec_gen *g;
	char **out, *ids,
	    jobs[CHAINREC_MAX_PARENTS * (CHAINREC_MAX_JOB + 1) + 1] = "",
	                                                         outs[CHAINREC_MAX_PARENTS * 25 +
	                                                              1] = "";
	size_t i, n = rs->nenv;
	int k;

	if (!job_chain_running(job, job->fsm.tick, job->fsm.kind))
		return env;
	g = &job->chain->run;
	out = xcalloc(n + 4, sizeof *out);
	for (i = 0; i < n; i++)
		out[i] = xstrdup(rs->env[i]);
	for (k = 0; k < g->n; k++) {
		snprintf(jobs + strlen(jobs), sizeof jobs - strlen(jobs), "%s%s", k > 0 ? "," : "",
		         g->p[k].job);
		snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%s%s", k > 0 ? "," : "",
		         g->p[k].run.outcome);
	}
	ids = chainrec_ids(g);
	xasprintf(&out[n++], "LEASEKEEPER_PARENT_RUN=%s", ids);
	xasprintf(&out[n++], "LEASEKEEPER_PARENT_JOB=%s", jobs);
	xasprintf(&out[n++], "LEASEKEEPER_PARENT_OUTCOME=%s", outs);
	free(ids);
	job_free_env(env);
	rs->env = out;
	rs->nenv = n;
	return out;
}

/* The record of a chained run (of tick) says which parents' runs it answers ("after"). */
void
job_chain_record(const struct job *job, json_t *record, int64_t tick, enum jobfsm_kind kind)
{
	if (job_chain_running(job, tick, kind))
		json_object_set_new(record, "after", chainrec_gen_json(&job->chain->run));
}

/* For status: the parents' names and what each waits for ("build", "test:any"). */
json_t *
job_chain_json(const struct job *job)
{
	json_t *a;
	char *const *p;

	if (job->cfg->after == NULL)
		return NULL;
	a = json_array();
	for (p = job->cfg->after; *p != NULL; p++)
		json_array_append_new(a, json_string(*p));
	return a;
}
