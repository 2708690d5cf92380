/* SPDX-License-Identifier: Apache-2.0 */
/* test_svrun.c: the supervisor's run state machine, driven through every transition. */

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "svrun.h"

#define MS       1000000ULL
#define GRACE    (5000 * MS)
#define DEADLINE (100000 * MS)

static struct svrun_actions act;

/* Feed one event at now, under the test's lease deadline. */
static void
feed(struct svrun *r, enum svrun_event event, uint64_t now, int sig, uint64_t kill_at,
     int group_alive)
{
	struct svrun_input in = {event, now, DEADLINE, sig, kill_at, group_alive};

	svrun_step(r, &in, &act);
}

/* An event that needs only the time. */
static void
step(struct svrun *r, enum svrun_event event, uint64_t now)
{
	feed(r, event, now, 0, 0, 0);
}

/* Main asks to stop with sig, SIGKILL at kill_at (0: never). */
static void
stop(struct svrun *r, int sig, uint64_t kill_at, uint64_t now)
{
	feed(r, SVRUN_STOP, now, sig, kill_at, 0);
}

/* The leader is reaped, its group empty or not. */
static void
leader_exited(struct svrun *r, int group_alive, uint64_t now)
{
	feed(r, SVRUN_LEADER_EXITED, now, 0, 0, group_alive);
}

/* The actions sent exactly one signal, sig, for why. */
static void
assert_one_signal(int sig, enum svrun_why why)
{
	assert_int_equal(act.nsig, 1);
	assert_int_equal(act.sig[0], sig);
	assert_int_equal(act.why[0], why);
}

/* A run that exec'd. */
static void
running(struct svrun *r)
{
	svrun_init(r, "t", GRACE);
	assert_int_equal(r->state, SVRUN_STARTING);
	step(r, SVRUN_EXEC_OK, 0);
	assert_true(act.send_started);
	assert_int_equal(act.nsig, 0);
	assert_int_equal(r->state, SVRUN_RUNNING);
}

/*
 * The cgroup path: the command exits and a setsid daemon it started ignores SIGTERM. With a
 * cgroup per run the daemon is still "the group" (cgroup.events populated): it gets SIGTERM,
 * then SIGKILL (cgroup.kill) when the session ends, and the run ends only when the cgroup
 * is empty.
 */
static void
test_cgroup_daemon_outlives_leader(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	leader_exited(&r, 1, 10 * MS); /* populated 1: the daemon */
	assert_one_signal(SIGTERM, SVRUN_WHY_LEFTOVERS);
	assert_int_equal(r.state, SVRUN_LEFTOVERS);
	assert_false(act.send_exited);
	step(&r, SVRUN_EPOCH_END, 20 * MS);
	assert_one_signal(SIGKILL, SVRUN_WHY_EPOCH);
	assert_int_equal(r.state, SVRUN_DRAINING);
	leader_exited(&r, 1, 25 * MS); /* polled: still populated */
	assert_int_equal(act.nsig, 0);
	assert_false(act.send_exited);
	leader_exited(&r, 0, 30 * MS); /* populated 0 */
	assert_true(act.send_exited);
	assert_int_equal(r.state, SVRUN_DONE);
	assert_int_equal(r.reason, PROTO_EXIT_EPOCH);
}

/* Deadline before the leader exits: SIGTERM at deadline - grace, SIGKILL at the deadline. */
static void
test_deadline_before_leader_exit(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	step(&r, SVRUN_TIMER, 1 * MS);
	assert_int_equal(act.nsig, 0);
	assert_int_equal(act.wake, DEADLINE - GRACE);
	step(&r, SVRUN_TIMER, DEADLINE - GRACE);
	assert_one_signal(SIGTERM, SVRUN_WHY_DEADLINE_NEAR);
	assert_int_equal(r.state, SVRUN_TERM_SENT);
	assert_int_equal(act.wake, DEADLINE);
	step(&r, SVRUN_TIMER, DEADLINE - 1);
	assert_int_equal(act.nsig, 0);
	step(&r, SVRUN_TIMER, DEADLINE);
	assert_one_signal(SIGKILL, SVRUN_WHY_DEADLINE_PASSED);
	assert_int_equal(r.state, SVRUN_KILLED);
	assert_int_equal(act.wake, 0);
	step(&r, SVRUN_TIMER, DEADLINE + 1);
	assert_int_equal(act.nsig, 0); /* SIGKILL goes once */
	leader_exited(&r, 0, DEADLINE + 2);
	assert_true(act.send_exited);
	assert_int_equal(r.state, SVRUN_DONE);
	assert_int_equal(r.reason, PROTO_EXIT_DEADLINE);
}

/* A timer that fires only after the deadline sends SIGTERM and SIGKILL at once. */
static void
test_late_timer(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	step(&r, SVRUN_TIMER, DEADLINE + 7);
	assert_int_equal(act.nsig, 2);
	assert_int_equal(act.sig[0], SIGTERM);
	assert_int_equal(act.sig[1], SIGKILL);
	assert_int_equal(act.why[1], SVRUN_WHY_DEADLINE_PASSED);
	assert_int_equal(r.state, SVRUN_KILLED);
}

/* A leader that exits leaving its group: SIGTERM to them, SIGKILL after the grace. */
static void
test_leader_exit_with_leftovers(void **state)
{
	struct svrun r;
	uint64_t t = 10 * MS;

	(void)state;
	running(&r);
	leader_exited(&r, 1, t);
	assert_one_signal(SIGTERM, SVRUN_WHY_LEFTOVERS);
	assert_false(act.send_exited);
	assert_int_equal(r.state, SVRUN_LEFTOVERS);
	assert_int_equal(r.kill_at, t + GRACE);
	step(&r, SVRUN_TIMER, t + 1);
	assert_int_equal(act.nsig, 0);
	assert_int_equal(act.wake, t + GRACE);
	step(&r, SVRUN_TIMER, t + GRACE);
	assert_one_signal(SIGKILL, SVRUN_WHY_GRACE_OVER);
	assert_int_equal(r.state, SVRUN_DRAINING);
	leader_exited(&r, 0, t + GRACE + 1);
	assert_true(act.send_exited);
	assert_int_equal(r.state, SVRUN_DONE);
	assert_int_equal(r.reason, PROTO_EXIT_NORMAL);
}

/* Leftovers near the deadline are killed at the deadline, not after the whole grace. */
static void
test_leftovers_killed_by_the_deadline(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	step(&r, SVRUN_TIMER, DEADLINE - GRACE);
	assert_int_equal(r.state, SVRUN_TERM_SENT);
	leader_exited(&r, 1, DEADLINE - 2 * MS);
	assert_one_signal(SIGTERM, SVRUN_WHY_LEFTOVERS);
	assert_int_equal(r.kill_at, DEADLINE);
	step(&r, SVRUN_TIMER, DEADLINE);
	assert_int_equal(act.nsig, 1);
	assert_int_equal(act.sig[0], SIGKILL);
	assert_int_equal(r.state, SVRUN_DRAINING);
}

/* A run is over only when its group is empty, however often the leader's exit is seen. */
static void
test_over_only_when_group_empty(void **state)
{
	struct svrun r;
	int i;

	(void)state;
	running(&r);
	stop(&r, SIGKILL, 0, 1);
	assert_one_signal(SIGKILL, SVRUN_WHY_STOP);
	assert_int_equal(r.state, SVRUN_KILLED);
	for (i = 0; i < 5; i++) {
		leader_exited(&r, 1, 2 + (uint64_t)i);
		assert_int_equal(act.nsig, 0);
		assert_false(act.send_exited);
		assert_int_equal(r.state, SVRUN_DRAINING);
	}
	leader_exited(&r, 0, 10);
	assert_true(act.send_exited);
	assert_int_equal(r.state, SVRUN_DONE);
	assert_int_equal(r.reason, PROTO_EXIT_STOPPED);
	step(&r, SVRUN_EPOCH_END, 11);
	assert_int_equal(act.nsig, 0); /* a done run takes nothing more */
}

/* Stop before exec is confirmed: the signal goes, and STARTED is still reported. */
static void
test_stop_during_start(void **state)
{
	struct svrun r;

	(void)state;
	svrun_init(&r, "t", GRACE);
	stop(&r, SIGTERM, 300 * MS, 1);
	assert_one_signal(SIGTERM, SVRUN_WHY_STOP);
	assert_int_equal(r.state, SVRUN_TERM_SENT);
	step(&r, SVRUN_EXEC_OK, 2);
	assert_true(act.send_started);
	assert_int_equal(r.state, SVRUN_TERM_SENT);
	step(&r, SVRUN_TIMER, 3);
	assert_int_equal(act.wake, 300 * MS);
	step(&r, SVRUN_TIMER, 300 * MS);
	assert_one_signal(SIGKILL, SVRUN_WHY_GRACE_OVER);
	assert_int_equal(r.state, SVRUN_KILLED);
	assert_int_equal(r.reason, PROTO_EXIT_STOPPED);
}

/* The epoch ends while SIGTERM waits: SIGKILL at once; the first reason stays. */
static void
test_epoch_end_during_term_wait(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	step(&r, SVRUN_TIMER, DEADLINE - GRACE);
	assert_int_equal(r.state, SVRUN_TERM_SENT);
	step(&r, SVRUN_EPOCH_END, DEADLINE - GRACE + 1);
	assert_one_signal(SIGKILL, SVRUN_WHY_EPOCH);
	assert_int_equal(r.state, SVRUN_KILLED);
	assert_int_equal(r.reason, PROTO_EXIT_DEADLINE);

	running(&r);
	step(&r, SVRUN_MAIN_GONE, 5);
	assert_one_signal(SIGKILL, SVRUN_WHY_MAIN_GONE);
	assert_int_equal(r.reason, PROTO_EXIT_EPOCH);
}

/* Grace -1 (never kill): no SIGKILL for the stop, only the deadline's. */
static void
test_stop_grace_never(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	stop(&r, SIGINT, 0, 1);
	assert_one_signal(SIGINT, SVRUN_WHY_STOP);
	assert_int_equal(r.kill_at, 0);
	step(&r, SVRUN_TIMER, DEADLINE - GRACE); /* SIGTERM was the stop's: not again */
	assert_int_equal(act.nsig, 0);
	assert_int_equal(act.wake, DEADLINE);
	step(&r, SVRUN_TIMER, DEADLINE);
	assert_one_signal(SIGKILL, SVRUN_WHY_DEADLINE_PASSED);
	assert_int_equal(r.reason, PROTO_EXIT_STOPPED);
}

/* A stop whose grace ends after the deadline is cut short by it; a second stop only brings it closer. */
static void
test_stop_grace_past_deadline(void **state)
{
	struct svrun r;

	(void)state;
	running(&r);
	stop(&r, SIGTERM, DEADLINE + 50 * MS, 1);
	stop(&r, SIGTERM, DEADLINE + 90 * MS, 2);
	assert_one_signal(SIGTERM, SVRUN_WHY_STOP);
	assert_int_equal(r.kill_at, DEADLINE + 50 * MS);
	step(&r, SVRUN_TIMER, DEADLINE);
	assert_one_signal(SIGKILL, SVRUN_WHY_DEADLINE_PASSED);
	stop(&r, SIGTERM, 0, DEADLINE + 1);
	assert_int_equal(act.nsig, 0); /* nothing after SIGKILL */
}

/* A child that could not exec: main hears START_FAILED, nothing kills it, no EXITED. */
static void
test_exec_failed(void **state)
{
	struct svrun r;

	(void)state;
	svrun_init(&r, "t", GRACE);
	step(&r, SVRUN_EXEC_FAILED, 1);
	assert_true(act.send_start_failed);
	assert_int_equal(r.state, SVRUN_START_FAILED);
	stop(&r, SIGTERM, 0, 2);
	assert_int_equal(act.nsig, 0);
	step(&r, SVRUN_TIMER, DEADLINE);
	assert_int_equal(act.nsig, 0);
	leader_exited(&r, 1, DEADLINE + 1);
	assert_false(act.send_exited);
	assert_int_equal(r.state, SVRUN_DONE);
}

/*
 * An exec result never ends a run, in any state the leader is alive in: the supervisor
 * reads it just before it feeds the leader's reaping (sv_sigchld_cb), and only that, with
 * an empty group, ends the run.
 */
static void
test_exec_result_never_ends_run(void **state)
{
	enum svrun_event results[] = {SVRUN_EXEC_OK, SVRUN_EXEC_FAILED};
	struct svrun r;
	size_t i;
	int live;

	(void)state;
	for (i = 0; i < sizeof results / sizeof results[0]; i++) {
		for (live = SVRUN_STARTING; live <= SVRUN_START_FAILED; live++) {
			svrun_init(&r, "t", GRACE);
			if (live == SVRUN_RUNNING)
				step(&r, SVRUN_EXEC_OK, 1);
			if (live != SVRUN_STARTING && live != SVRUN_RUNNING)
				stop(&r, SIGTERM, 300 * MS, 1);
			if (live == SVRUN_KILLED || live == SVRUN_START_FAILED)
				stop(&r, SIGKILL, 0, 2);
			if (live == SVRUN_START_FAILED)
				step(&r, SVRUN_EXEC_FAILED, 3);
			if (live == SVRUN_LEFTOVERS || live == SVRUN_DRAINING)
				continue; /* the leader is reaped: no exec result can come */
			assert_int_equal(r.state, live);
			assert_true(svrun_leader_alive(&r));
			step(&r, results[i], 4);
			assert_int_not_equal(r.state, SVRUN_DONE);
			assert_true(svrun_leader_alive(&r));
			leader_exited(&r, 0, 5);
			assert_int_equal(r.state, SVRUN_DONE);
		}
	}
}

/* Each state and event has a name of its own. */
static void
test_names(void **state)
{
	int a, b;

	(void)state;
	for (a = SVRUN_STARTING; a <= SVRUN_DONE; a++) {
		assert_string_not_equal(svrun_state_name((enum svrun_state)a), "?");
		for (b = SVRUN_STARTING; b < a; b++)
			assert_string_not_equal(svrun_state_name((enum svrun_state)a),
			                        svrun_state_name((enum svrun_state)b));
	}
	for (a = SVRUN_EXEC_OK; a <= SVRUN_LEADER_EXITED; a++)
		assert_string_not_equal(svrun_event_name((enum svrun_event)a), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deadline_before_leader_exit),
	    cmocka_unit_test(test_cgroup_daemon_outlives_leader),
	    cmocka_unit_test(test_late_timer),
	    cmocka_unit_test(test_leader_exit_with_leftovers),
	    cmocka_unit_test(test_leftovers_killed_by_the_deadline),
	    cmocka_unit_test(test_over_only_when_group_empty),
	    cmocka_unit_test(test_stop_during_start),
	    cmocka_unit_test(test_epoch_end_during_term_wait),
	    cmocka_unit_test(test_stop_grace_never),
	    cmocka_unit_test(test_stop_grace_past_deadline),
	    cmocka_unit_test(test_exec_failed),
	    cmocka_unit_test(test_exec_result_never_ends_run),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
