/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jobfsm_kinds.c: a job with a schedule and after (docs/workflows.md, "A schedule and
 * after"): each meeting of a scheduled tick and a chain generation in the job machine
 * (jobfsm.c, jobfsmtick.c), driven step by step: due together, during a run of either, with
 * each overlap mode, paused, drained, past the deadline, a host's start failure, a stand-by,
 * catch_up = all's queue, a stop while a generation's claim is under way, and a generation
 * let go unrun in any other way (ABANDON: the lease lost, the supervisor died, a conflict,
 * an expiry, while its claim is out or after it landed), and a scheduled tick let go after its
 * claim landed, before its run started (ABANDON of kind TICK). Each action about a tick must
 * carry the kind of that tick.
 */

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "jobfsm.h"

#define TICK JOBFSM_KIND_TICK
#define GEN  JOBFSM_KIND_GEN

#define T0    1000000 /* the first tick, seconds */
#define DL_MS 60000   /* start_deadline */

struct t {
	struct jobfsm m;
	struct jobfsm_actions out;
	uint64_t now_ms;
};

/* A scheduled job with after, registered and agreed, waiting; overlap as given. */
static void
t_init(struct t *t, enum jobfsm_overlap overlap)
{
	struct jobfsm_config cfg = {.scheduled = 1,
	                            .max_failures = 3,
	                            .retries = 0,
	                            .start_deadline_ms = DL_MS,
	                            .overlap = overlap};
	struct jobfsm_input in;

	memset(t, 0, sizeof *t);
	t->now_ms = (uint64_t)T0 * 1000;
	jobfsm_init(&t->m, &cfg);
	memset(&in, 0, sizeof in);
	in.event = JOBFSM_READY;
	in.catch_up = -1;
	in.now_ms = t->now_ms;
	jobfsm_step(&t->m, &in, &t->out);
	in.event = JOBFSM_AGREED;
	jobfsm_step(&t->m, &in, &t->out);
	assert_int_equal(t->m.state, JOB_WAITING);
}

/* Feed an event with the facts given in in (event, now and catch_up filled here). */
static void
t_step(struct t *t, enum jobfsm_event ev, struct jobfsm_input in)
{
	in.event = ev;
	in.now_ms = t->now_ms;
	in.catch_up = -1;
	jobfsm_step(&t->m, &in, &t->out);
	assert_false(t->out.illegal);
	assert_false(t->out.overflow);
}

static void
t_ev(struct t *t, enum jobfsm_event ev)
{
	struct jobfsm_input in;

	memset(&in, 0, sizeof in);
	t_step(t, ev, in);
}

/* A tick (or a generation) due at seconds. */
static void
t_due(struct t *t, int64_t at, enum jobfsm_kind kind)
{
	struct jobfsm_input in;

	memset(&in, 0, sizeof in);
	in.tick = at;
	in.kind = kind;
	t_step(t, JOBFSM_TICK, in);
}

/* The action act of the last step (the n-th of them, from 0), or NULL. */
static const struct jobfsm_action *
t_find(const struct t *t, enum jobfsm_act act, int nth)
{
	int i;

	for (i = 0; i < t->out.n; i++)
		if (t->out.a[i].act == act && nth-- == 0)
			return &t->out.a[i];
	return NULL;
}

/* The last step had act about tick of kind. */
static void
t_has(const struct t *t, enum jobfsm_act act, int64_t tick, enum jobfsm_kind kind)
{
	const struct jobfsm_action *a = t_find(t, act, 0);

	assert_non_null(a);
	assert_int_equal(a->tick, tick);
	assert_int_equal(a->kind, kind);
}

/* From WAITING: the lease comes, the claim lands, the run starts: the run of tick, kind. */
static void
t_run(struct t *t, int64_t tick, enum jobfsm_kind kind)
{
	assert_int_equal(t->m.state, JOB_CONTENDING);
	t_ev(t, JOBFSM_LEASE_ACQUIRED);
	t_has(t, JOBFSM_CLAIM, tick, kind);
	t_ev(t, JOBFSM_CLAIMED);
	t_has(t, JOBFSM_START_RUN, tick, kind);
	t_ev(t, JOBFSM_STARTED);
	assert_int_equal(t->m.state, JOB_RUNNING);
}

/* The run ends ok: its record has its tick and kind. */
static void
t_exit(struct t *t, int64_t tick, enum jobfsm_kind kind, enum job_outcome outcome)
{
	struct jobfsm_input in;
	const struct jobfsm_action *a;

	memset(&in, 0, sizeof in);
	in.ok = 1;
	in.reason = outcome == JOB_OUTCOME_OK ? PROTO_EXIT_NORMAL : PROTO_EXIT_STOPPED;
	t_step(t, JOBFSM_EXITED, in);
	a = t_find(t, JOBFSM_RECORD, 0);
	assert_non_null(a);
	assert_int_equal(a->tick, tick);
	assert_int_equal(a->kind, kind);
	assert_int_equal(a->outcome, outcome);
	assert_null(t_find(t, JOBFSM_RECORD, 1));
}

/* A generation and a tick due together (the generation first): both run, in turn. */
static void
test_due_together(void **state)
{
	struct t t;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, GEN);
	assert_int_equal(t.m.state, JOB_CONTENDING);
	t_due(&t, T0, TICK); /* not a new target for the lease: it waits its turn */
	assert_null(t_find(&t, JOBFSM_RETIME, 0));
	assert_int_equal(t.m.pending_tick, T0);
	t_run(&t, T0, GEN);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_CONTENDING); /* the tick's turn */
	assert_int_equal(t.m.kind, TICK);
	t_run(&t, T0, TICK);
	t_exit(&t, T0, TICK, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING);
}

/* The other order: a tick contended for, a generation due; and a newer tick retargets. */
static void
test_tick_then_gen(void **state)
{
	const struct jobfsm_action *a;
	struct t t;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_due(&t, T0, GEN);
	assert_int_equal(t.m.pending_gen, T0);
	assert_int_equal(t.m.kind, TICK);
	t_due(&t, T0 + 1, TICK); /* the newest tick is what counts: its place kept */
	assert_non_null(t_find(&t, JOBFSM_RETIME, 0));
	assert_int_equal(t.m.tick, T0 + 1);
	/* ... and the older one, lost to the wait, is recorded missed now (lease), once */
	a = t_find(&t, JOBFSM_RECORD_MISSED, 0);
	assert_non_null(a);
	assert_int_equal(a->tick, T0);
	assert_int_equal(a->kind, TICK);
	assert_int_equal(a->n, JOBFSM_MISSED_WAIT);
	assert_null(t_find(&t, JOBFSM_RECORD_MISSED, 1));
	assert_int_equal(t.m.pending_gen, T0); /* the generation is still there */
	t_run(&t, T0 + 1, TICK);
	t_exit(&t, T0 + 1, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0, GEN);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING);
}

/* Both due during a run: the older first, a generation first at the same second. */
static void
test_both_during_run(void **state)
{
	struct t t;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_run(&t, T0, TICK);
	t_due(&t, T0 + 5, TICK);
	t_due(&t, T0 + 3, GEN);
	assert_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	t.now_ms += 6000;
	t_exit(&t, T0, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0 + 3, GEN);
	t_exit(&t, T0 + 3, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0 + 5, TICK);
	t_exit(&t, T0 + 5, TICK, JOB_OUTCOME_OK);

	t_due(&t, T0 + 10, TICK);
	t_run(&t, T0 + 10, TICK);
	t_due(&t, T0 + 12, TICK);
	t_due(&t, T0 + 12, GEN);
	t_exit(&t, T0 + 10, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0 + 12, GEN);
	t_exit(&t, T0 + 12, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0 + 12, TICK);
	t_exit(&t, T0 + 12, TICK, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING);
}

/* overlap = skip: a tick due during any run is recorded missed (overlap); a generation waits. */
static void
test_overlap_skip(void **state)
{
	struct t t;
	const struct jobfsm_action *a;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_SKIP);
	t_due(&t, T0, GEN);
	t_run(&t, T0, GEN);
	t_due(&t, T0 + 1, TICK);
	a = t_find(&t, JOBFSM_RECORD_MISSED, 0);
	assert_non_null(a);
	assert_int_equal(a->tick, T0 + 1);
	assert_int_equal(a->kind, TICK);
	assert_int_equal(a->n, JOBFSM_MISSED_OVERLAP);
	assert_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING); /* nothing left to run */

	t_due(&t, T0 + 2, TICK);
	t_run(&t, T0 + 2, TICK);
	t_due(&t, T0 + 2, GEN); /* not skipped: a chained run waits for the run under way */
	assert_null(t_find(&t, JOBFSM_RECORD_MISSED, 0));
	assert_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	t_exit(&t, T0 + 2, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0 + 2, GEN);
	t_exit(&t, T0 + 2, GEN, JOB_OUTCOME_OK);
}

/* overlap = replace: only a scheduled run is replaced, and only by a tick. */
static void
test_overlap_replace(void **state)
{
	struct t t;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_REPLACE);
	t_due(&t, T0, GEN);
	t_run(&t, T0, GEN);
	t_due(&t, T0 + 1, TICK); /* a chained run is not stopped for a tick */
	assert_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	assert_int_equal(t.m.state, JOB_RUNNING);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0 + 1, TICK);
	t_due(&t, T0 + 2, GEN); /* nor a scheduled run for a generation */
	assert_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	t_due(&t, T0 + 3, TICK); /* a tick replaces the scheduled run */
	assert_non_null(t_find(&t, JOBFSM_STOP_RUN, 0));
	assert_int_equal(t.m.state, JOB_STOPPING);
	t_exit(&t, T0 + 1, TICK, JOB_OUTCOME_REPLACED);
	t_run(&t, T0 + 2, GEN); /* the older first: the generation */
	t_exit(&t, T0 + 2, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0 + 3, TICK);
	t_exit(&t, T0 + 3, TICK, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING);
}

/* Paused during a run with both due: each is recorded paused where its kind is claimed. */
static void
test_paused(void **state)
{
	struct t t;
	struct jobfsm_input in;
	const struct jobfsm_action *a, *b;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_run(&t, T0, TICK);
	t_due(&t, T0 + 1, GEN);
	t_due(&t, T0 + 2, TICK);
	memset(&in, 0, sizeof in);
	in.paused = 1;
	t_step(&t, JOBFSM_AGREED, in);
	assert_int_equal(t.m.state, JOB_RUNNING); /* the run goes on to its end */
	t_exit(&t, T0, TICK, JOB_OUTCOME_OK);
	a = t_find(&t, JOBFSM_RECORD_PAUSED, 0);
	b = t_find(&t, JOBFSM_RECORD_PAUSED, 1);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->tick, T0 + 1);
	assert_int_equal(a->kind, GEN);
	assert_int_equal(b->tick, T0 + 2);
	assert_int_equal(b->kind, TICK);
	assert_null(t_find(&t, JOBFSM_ACQUIRE, 0));
	assert_int_equal(t.m.state, JOB_WAITING);
	t_due(&t, T0 + 3, GEN); /* while paused, at once */
	t_has(&t, JOBFSM_RECORD_PAUSED, T0 + 3, GEN);
	t_due(&t, T0 + 3, TICK);
	t_has(&t, JOBFSM_RECORD_PAUSED, T0 + 3, TICK);
}

/*
 * Paused while contending for a tick or a generation (torture seed 7: a pause that landed
 * while the worker waited for its lock): nobody will run it, so it is recorded paused.
 */
static void
test_paused_while_contending(void **state)
{
	enum jobfsm_kind kinds[] = {TICK, GEN};
	struct jobfsm_input in;
	struct t t;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		t_init(&t, JOBFSM_OVERLAP_QUEUE);
		t_due(&t, T0, kinds[i]);
		assert_int_equal(t.m.state, JOB_CONTENDING);
		memset(&in, 0, sizeof in);
		in.paused = 1;
		t_step(&t, JOBFSM_AGREED, in);
		t_has(&t, JOBFSM_RECORD_PAUSED, T0, kinds[i]);
		assert_int_equal(t.m.state, JOB_WAITING);
	}
}

/* Drained: neither kind is recorded here (the others run them). */
static void
test_drained(void **state)
{
	struct t t;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_ev(&t, JOBFSM_DRAIN);
	t_due(&t, T0, GEN);
	assert_null(t_find(&t, JOBFSM_RECORD_PAUSED, 0));
	assert_null(t_find(&t, JOBFSM_RECORD_MISSED, 0));
	assert_null(t_find(&t, JOBFSM_ACQUIRE, 0));
	t_due(&t, T0, TICK);
	assert_null(t_find(&t, JOBFSM_ACQUIRE, 0));
}

/* Past the deadline after a long run: each is recorded missed, with its kind and reason. */
static void
test_late(void **state)
{
	struct t t;
	struct jobfsm_input in;
	const struct jobfsm_action *a, *b;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_run(&t, T0, TICK);
	t_due(&t, T0 + 1, GEN);
	t_due(&t, T0 + 90, TICK);
	t.now_ms = (uint64_t)(T0 + 100) * 1000; /* the generation is 99 s old, the tick 10 s */
	t_exit(&t, T0, TICK, JOB_OUTCOME_OK);
	a = t_find(&t, JOBFSM_RECORD_MISSED, 0);
	assert_non_null(a);
	assert_int_equal(a->tick, T0 + 1);
	assert_int_equal(a->kind, GEN);
	assert_int_equal(a->n, JOBFSM_MISSED_LATE);
	assert_null(t_find(&t, JOBFSM_RECORD_MISSED, 1));
	t_run(&t, T0 + 90, TICK); /* the tick, still in its deadline, runs */

	/* The lease does not come in time for a generation: missed (lease), as a generation. */
	t_exit(&t, T0 + 90, TICK, JOB_OUTCOME_OK);
	t_due(&t, T0 + 100, GEN);
	memset(&in, 0, sizeof in);
	in.timed_out = 1;
	t_step(&t, JOBFSM_LEASE_FAILED, in);
	b = t_find(&t, JOBFSM_RECORD_MISSED, 0);
	assert_non_null(b);
	assert_int_equal(b->kind, GEN);
	assert_int_equal(b->n, JOBFSM_MISSED_LEASE);
}

/* A host's start failure gives a tick back, never a generation (its claim is the chain's). */
static void
test_hand_back(void **state)
{
	struct t t;
	struct jobfsm_input in;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	memset(&in, 0, sizeof in);
	in.host = 1;
	t_due(&t, T0, GEN);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_ev(&t, JOBFSM_CLAIMED);
	t_step(&t, JOBFSM_START_FAILED, in);
	assert_null(t_find(&t, JOBFSM_HAND_BACK, 0));
	t_has(&t, JOBFSM_RECORD, T0, GEN);

	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_ev(&t, JOBFSM_CLAIMED);
	t_step(&t, JOBFSM_START_FAILED, in);
	t_has(&t, JOBFSM_HAND_BACK, T0, TICK);
}

/* A stand-by for a tick: a generation due meanwhile runs after the tick's read. */
static void
test_standby(void **state)
{
	struct t t;
	struct jobfsm_input in;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	memset(&in, 0, sizeof in);
	in.tick = T0;
	in.delay_ms = 500;
	t_step(&t, JOBFSM_TICK, in);
	assert_int_equal(t.m.state, JOB_STANDBY);
	t_due(&t, T0, GEN);
	assert_int_equal(t.m.state, JOB_STANDBY);
	t_ev(&t, JOBFSM_TIMER);
	t_has(&t, JOBFSM_PEEK, T0, TICK);
	memset(&in, 0, sizeof in);
	in.taken = 1;
	t_step(&t, JOBFSM_PEEKED, in); /* another worker has the tick */
	t_run(&t, T0, GEN);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
}

/* catch_up = all: a generation is not queued with the missed ticks, nor dropped by them. */
static void
test_catch_up_all(void **state)
{
	struct t t;
	struct jobfsm_input in;
	int64_t ticks[2] = {T0 - 20, T0 - 10};

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	memset(&in, 0, sizeof in);
	in.ticks = ticks;
	in.nticks = 2;
	t_step(&t, JOBFSM_CATCH_UP, in);
	assert_int_equal(t.m.tick, T0 - 20);
	t_due(&t, T0, GEN);
	assert_int_equal(t.m.ncatch, 1);
	assert_int_equal(t.m.pending_gen, T0);
	t_run(&t, T0 - 20, TICK);
	t_exit(&t, T0 - 20, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0, GEN);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0 - 10, TICK);
	t_exit(&t, T0 - 10, TICK, JOB_OUTCOME_OK);
	assert_int_equal(t.m.state, JOB_WAITING);
}

/* A run-now run while a generation and a tick are due: both after it; the run has no kind. */
static void
test_manual(void **state)
{
	struct t t;
	struct jobfsm_input in;
	const struct jobfsm_action *a;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	memset(&in, 0, sizeof in);
	in.manual_ms = 1000;
	t_step(&t, JOBFSM_RUN_REQUEST, in);
	assert_int_equal(t.m.state, JOB_CONTENDING);
	t_due(&t, T0, GEN);
	t_due(&t, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	a = t_find(&t, JOBFSM_START_RUN, 0);
	assert_non_null(a);
	assert_int_equal(a->tick, -1);
	t_ev(&t, JOBFSM_STARTED);
	t_exit(&t, -1, TICK, JOB_OUTCOME_OK);
	t_run(&t, T0, GEN);
	t_exit(&t, T0, GEN, JOB_OUTCOME_OK);
	t_run(&t, T0, TICK);
	t_exit(&t, T0, TICK, JOB_OUTCOME_OK);
}

/*
 * Stopped for good (a reload removed the job, or shutdown) while the claim of a generation
 * is under way: its write may land, and a claim dropped then leaves the parent's run claimed
 * by a job that never runs it and answered by no one (ci14: a run of a lost so to its child
 * b, removed from every worker by a reload while one worker's claim was out). The stop
 * waits for the claim's answer; a landed claim is given back (HAND_BACK of the generation),
 * still under the lease, and only the hand-back's end lets the lease go and the job be done.
 */
static void
test_stop_while_claiming_a_generation(void **state)
{
	struct t t;
	struct jobfsm_input in;
	const struct jobfsm_action *a;

	(void)state;
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, GEN);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_has(&t, JOBFSM_CLAIM, T0, GEN);
	t_ev(&t, JOBFSM_STOP);
	assert_null(t_find(&t, JOBFSM_CANCEL_CLAIM, 0));
	assert_null(t_find(&t, JOBFSM_RELEASE, 0));
	assert_null(t_find(&t, JOBFSM_DONE, 0));
	assert_int_equal(t.m.state, JOB_CLAIMING);
	t_ev(&t, JOBFSM_STOP); /* shutdown after the reload: still waiting */
	assert_int_equal(t.out.n, 0);
	t_ev(&t, JOBFSM_CLAIMED);
	t_has(&t, JOBFSM_HAND_BACK, T0, GEN);
	assert_null(t_find(&t, JOBFSM_START_RUN, 0));
	assert_null(t_find(&t, JOBFSM_RELEASE, 0));
	assert_null(t_find(&t, JOBFSM_DONE, 0));
	assert_int_equal(t.m.state, JOB_CLAIMING);
	t_ev(&t, JOBFSM_CLAIM_LOST); /* given back (or recorded missed): the claim is over */
	assert_null(t_find(&t, JOBFSM_HAND_BACK, 0));
	assert_non_null(t_find(&t, JOBFSM_RELEASE, 0));
	assert_non_null(t_find(&t, JOBFSM_DONE, 0));
	assert_int_equal(t.m.state, JOB_DONE);

	/* The claim did not land: nothing to give back. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, GEN);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_ev(&t, JOBFSM_STOP);
	memset(&in, 0, sizeof in);
	in.taken = 1;
	t_step(&t, JOBFSM_CLAIM_LOST, in);
	assert_null(t_find(&t, JOBFSM_HAND_BACK, 0));
	assert_non_null(t_find(&t, JOBFSM_DONE, 0));

	/* A conflict meanwhile waits too; an expiry ends the wait (nothing can be written). */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, GEN);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_ev(&t, JOBFSM_STOP);
	t_ev(&t, JOBFSM_CONFLICT);
	assert_null(t_find(&t, JOBFSM_CANCEL_CLAIM, 0));
	assert_int_equal(t.m.state, JOB_CLAIMING);
	t_ev(&t, JOBFSM_CLAIMED);
	t_has(&t, JOBFSM_HAND_BACK, T0, GEN);
	t_ev(&t, JOBFSM_SESSION_GONE);
	t_ev(&t, JOBFSM_SESSION_EXPIRED);
	assert_non_null(t_find(&t, JOBFSM_DONE, 0));
	assert_int_equal(t.m.state, JOB_DONE);

	/* A scheduled tick's claim is dropped at once, as before (its claim is the tick state's). */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_has(&t, JOBFSM_CLAIM, T0, TICK);
	t_ev(&t, JOBFSM_STOP);
	assert_non_null(t_find(&t, JOBFSM_CANCEL_CLAIM, 0));
	a = t_find(&t, JOBFSM_DONE, 0);
	assert_non_null(a);
	assert_int_equal(t.m.state, JOB_DONE);
}

/*
 * The step's ABANDON of tick of kind (landed: its claim landed, else it is out) comes before
 * any CANCEL_CLAIM (which would drop the claim), with no run and no hand-back.
 */
static void
t_abandoned_kind(const struct t *t, int64_t tick, enum jobfsm_kind kind, int landed)
{
	const struct jobfsm_action *a = t_find(t, JOBFSM_ABANDON, 0), *c;
	int i, ia = -1, ic = -1;

	assert_non_null(a);
	assert_int_equal(a->tick, tick);
	assert_int_equal(a->kind, kind);
	assert_int_equal(a->n, landed);
	assert_null(t_find(t, JOBFSM_ABANDON, 1));
	assert_null(t_find(t, JOBFSM_START_RUN, 0));
	assert_null(t_find(t, JOBFSM_HAND_BACK, 0));
	c = t_find(t, JOBFSM_CANCEL_CLAIM, 0);
	for (i = 0; i < t->out.n; i++) {
		if (&t->out.a[i] == a)
			ia = i;
		if (&t->out.a[i] == c)
			ic = i;
	}
	assert_true(c == NULL || ia < ic);
}

/* The step's ABANDON of generation tick (landed, or out), before any CANCEL_CLAIM. */
static void
t_abandoned(const struct t *t, int64_t tick, int landed)
{
	t_abandoned_kind(t, tick, GEN, landed);
}

/* From WAITING: a generation due, its lease held and its claim out. */
static void
t_claiming(struct t *t)
{
	t_due(t, T0, GEN);
	t_ev(t, JOBFSM_LEASE_ACQUIRED);
	t_has(t, JOBFSM_CLAIM, T0, GEN);
	assert_int_equal(t->m.state, JOB_CLAIMING);
}

/* A fresh machine whose claim (of kind) landed while its session was suspect: the run waits
 * for the lease to be verified. */
static void
t_unverified(struct t *t, enum jobfsm_kind kind)
{
	t_init(t, JOBFSM_OVERLAP_QUEUE);
	if (kind == GEN) {
		t_claiming(t);
	} else {
		t_due(t, T0, TICK);
		t_ev(t, JOBFSM_LEASE_ACQUIRED);
		t_has(t, JOBFSM_CLAIM, T0, TICK);
	}
	t_ev(t, JOBFSM_SESSION_SUSPECT);
	t_ev(t, JOBFSM_CLAIMED);
}

/*
 * The lease goes (a deleted lock node, an expiry), the supervisor dies, or the cluster's
 * lease count changes while a generation's claim is out: its write may land, or has. The
 * machine lets it go with ABANDON (jobchain.c follows it to its answer and gives a landed
 * claim back, with no lease) before it drops the claim; the claim's answer is not awaited
 * (the lease is gone: nothing can wait under it). Before, the claim was dropped, and a write
 * that landed left the parent's run claimed, never run nor recorded missed.
 */
static void
test_let_go_while_claiming_a_generation(void **state)
{
	static const enum jobfsm_event evs[] = {JOBFSM_LEASE_LOST, JOBFSM_SUPERVISOR_DIED,
	                                        JOBFSM_CONFLICT};
	struct t t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		t_init(&t, JOBFSM_OVERLAP_QUEUE);
		t_claiming(&t);
		t_ev(&t, evs[i]);
		t_abandoned(&t, T0, 0);
		assert_int_not_equal(t.m.state, JOB_CLAIMING);
		assert_int_equal(t.m.lease, JOBFSM_LEASE_IDLE);
		/* The claim's answer, if it came, is no longer the machine's. */
		t_ev(&t, JOBFSM_CLAIMED);
		assert_null(t_find(&t, JOBFSM_START_RUN, 0));
		assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	}

	/* An expiry: the lease hears it first (LEASE_LOST), then the machine. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_claiming(&t);
	t_ev(&t, JOBFSM_SESSION_GONE);
	t_ev(&t, JOBFSM_LEASE_LOST);
	t_abandoned(&t, T0, 0);
	t_ev(&t, JOBFSM_SESSION_EXPIRED);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	assert_int_equal(t.m.state, JOB_IDLE);

	/* A stop waiting for the claim (under the lease) that loses the lease lets it go too. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_claiming(&t);
	t_ev(&t, JOBFSM_STOP);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	t_ev(&t, JOBFSM_LEASE_LOST);
	t_abandoned(&t, T0, 0);
	assert_non_null(t_find(&t, JOBFSM_DONE, 0));

	/* ... and so does one whose hand-back is under way: it goes on, followed by jobchain.c. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_claiming(&t);
	t_ev(&t, JOBFSM_STOP);
	t_ev(&t, JOBFSM_CLAIMED);
	t_has(&t, JOBFSM_HAND_BACK, T0, GEN);
	t_ev(&t, JOBFSM_SUPERVISOR_DIED);
	t_abandoned(&t, T0, 1);
	assert_non_null(t_find(&t, JOBFSM_DONE, 0));

	/* A scheduled tick's claim is dropped as before: jobrec.c follows it itself. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	t_ev(&t, JOBFSM_LEASE_LOST);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	assert_non_null(t_find(&t, JOBFSM_CANCEL_CLAIM, 0));
}

/*
 * The claim of a generation landed while the connection was down: its run waits for the
 * lease to be verified (BACKOFF). The lease is lost instead: the run never comes, and the
 * parent's run stays claimed by this worker; the machine gives it back (ABANDON, landed),
 * with no lease. Likewise an expiry, the supervisor's death, a conflict, a drain, a pause or
 * a stop before the run started; once the run started, its record answers the parent's run
 * and nothing is given back.
 */
static void
test_let_go_after_a_generation_landed(void **state)
{
	static const enum jobfsm_event evs[] = {JOBFSM_LEASE_LOST, JOBFSM_SUPERVISOR_DIED,
	                                        JOBFSM_CONFLICT, JOBFSM_DRAIN, JOBFSM_STOP};
	struct t t;
	struct jobfsm_input in;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		t_unverified(&t, GEN);
		assert_null(t_find(&t, JOBFSM_START_RUN, 0));
		assert_int_equal(t.m.state, JOB_BACKOFF);
		t_ev(&t, evs[i]);
		t_abandoned(&t, T0, 1);
		assert_int_not_equal(t.m.state, JOB_BACKOFF);
		if (evs[i] == JOBFSM_STOP)
			assert_non_null(t_find(&t, JOBFSM_DONE, 0));
		/* Nothing is left to run it: verified now, the lease starts nothing. */
		t_ev(&t, JOBFSM_LEASE_VERIFIED);
		assert_null(t_find(&t, JOBFSM_START_RUN, 0));
	}

	/* A pause (the record says paused): the run is not started, the claim given back. */
	t_unverified(&t, GEN);
	memset(&in, 0, sizeof in);
	in.paused = 1;
	t_step(&t, JOBFSM_AGREED, in);
	t_abandoned(&t, T0, 1);

	/* Woken past the lease deadline after the claim landed, then the lease is lost. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_claiming(&t);
	memset(&in, 0, sizeof in);
	in.deadline_near = 1;
	t_step(&t, JOBFSM_CLAIMED, in);
	assert_null(t_find(&t, JOBFSM_START_RUN, 0));
	assert_int_equal(t.m.state, JOB_BACKOFF);
	t_ev(&t, JOBFSM_LEASE_LOST);
	t_abandoned(&t, T0, 1);

	/* Verified in time: the run starts, and the lease lost then kills it, nothing given back. */
	t_unverified(&t, GEN);
	t_ev(&t, JOBFSM_LEASE_VERIFIED);
	t_has(&t, JOBFSM_START_RUN, T0, GEN);
	t_ev(&t, JOBFSM_LEASE_LOST);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	assert_non_null(t_find(&t, JOBFSM_STOP_RUN, 0));
}

/*
 * The same for a scheduled tick: its claim landed (runners = [this worker]) while the
 * connection was down, and its run waits in BACKOFF for the lease to be verified. The lease
 * is lost instead (or the supervisor dies, a conflict, a drain, a stop, an expiry): nothing
 * will run the tick here, and jobrec_cancel_claim follows only claims still out, so the tick
 * stayed claimed by a worker that never ran it: no other worker claims it (taken), and the
 * next claim does not name it among the skipped ones (it has a runner): neither run nor
 * recorded missed. The machine lets it go with ABANDON (kind TICK, landed), before any
 * CANCEL_CLAIM; jobrec gives it back (tickstate_give_back, no lease needed). A pause gives it
 * back recorded paused (why PAUSED) in the same write, instead of a RECORD_PAUSED that finds
 * the tick claimed and marks nothing. Once the run started, its record answers the tick.
 */
static void
test_let_go_after_a_tick_landed(void **state)
{
	static const enum jobfsm_event evs[] = {JOBFSM_LEASE_LOST, JOBFSM_SUPERVISOR_DIED,
	                                        JOBFSM_CONFLICT, JOBFSM_DRAIN, JOBFSM_STOP};
	struct t t;
	struct jobfsm_input in;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		t_unverified(&t, TICK);
		assert_null(t_find(&t, JOBFSM_START_RUN, 0));
		assert_int_equal(t.m.state, JOB_BACKOFF);
		t_ev(&t, evs[i]);
		t_abandoned_kind(&t, T0, TICK, 1);
		assert_int_equal(t_find(&t, JOBFSM_ABANDON, 0)->why, JOBFSM_WHY_NONE);
		assert_int_not_equal(t.m.state, JOB_BACKOFF);
		t_ev(&t, JOBFSM_LEASE_VERIFIED);
		assert_null(t_find(&t, JOBFSM_START_RUN, 0));
	}

	/* An expiry: the lease hears it first (LEASE_LOST), then the machine. */
	t_unverified(&t, TICK);
	t_ev(&t, JOBFSM_SESSION_GONE);
	t_ev(&t, JOBFSM_LEASE_LOST);
	t_abandoned_kind(&t, T0, TICK, 1);
	t_ev(&t, JOBFSM_SESSION_EXPIRED);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));

	/* A pause: given back and recorded paused in one (no RECORD_PAUSED that marks nothing). */
	t_unverified(&t, TICK);
	memset(&in, 0, sizeof in);
	in.paused = 1;
	t_step(&t, JOBFSM_AGREED, in);
	t_abandoned_kind(&t, T0, TICK, 1);
	assert_int_equal(t_find(&t, JOBFSM_ABANDON, 0)->why, JOBFSM_WHY_PAUSED);
	assert_null(t_find(&t, JOBFSM_RECORD_PAUSED, 0));

	/* Woken past the lease deadline after the claim landed, then the lease is lost. */
	t_init(&t, JOBFSM_OVERLAP_QUEUE);
	t_due(&t, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_ACQUIRED);
	memset(&in, 0, sizeof in);
	in.deadline_near = 1;
	t_step(&t, JOBFSM_CLAIMED, in);
	assert_null(t_find(&t, JOBFSM_START_RUN, 0));
	assert_int_equal(t.m.state, JOB_BACKOFF);
	t_ev(&t, JOBFSM_LEASE_LOST);
	t_abandoned_kind(&t, T0, TICK, 1);

	/* Verified in time: the run starts; the lease lost then kills it, nothing given back. */
	t_unverified(&t, TICK);
	t_ev(&t, JOBFSM_LEASE_VERIFIED);
	t_has(&t, JOBFSM_START_RUN, T0, TICK);
	t_ev(&t, JOBFSM_LEASE_LOST);
	assert_null(t_find(&t, JOBFSM_ABANDON, 0));
	assert_non_null(t_find(&t, JOBFSM_STOP_RUN, 0));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_due_together),
	    cmocka_unit_test(test_tick_then_gen),
	    cmocka_unit_test(test_both_during_run),
	    cmocka_unit_test(test_overlap_skip),
	    cmocka_unit_test(test_overlap_replace),
	    cmocka_unit_test(test_paused),
	    cmocka_unit_test(test_paused_while_contending),
	    cmocka_unit_test(test_drained),
	    cmocka_unit_test(test_late),
	    cmocka_unit_test(test_hand_back),
	    cmocka_unit_test(test_standby),
	    cmocka_unit_test(test_catch_up_all),
	    cmocka_unit_test(test_manual),
	    cmocka_unit_test(test_stop_while_claiming_a_generation),
	    cmocka_unit_test(test_let_go_while_claiming_a_generation),
	    cmocka_unit_test(test_let_go_after_a_generation_landed),
	    cmocka_unit_test(test_let_go_after_a_tick_landed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
