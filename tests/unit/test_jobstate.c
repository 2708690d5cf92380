/* SPDX-License-Identifier: Apache-2.0 */
/* test_jobstate.c: what a job does when a run ends (jobstate.c), without processes. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jobstate.h"

/* A continuous job: 3 failures in a row before a cool-down. */
static struct jobstate_end
continuous(void)
{
	struct jobstate_end e = {0};

	e.max_failures = 3;
	e.retries = 2;
	return e;
}

/* A scheduled job with 2 retries of a tick. */
static struct jobstate_end
scheduled(void)
{
	struct jobstate_end e = continuous();

	e.scheduled = 1;
	return e;
}

static void
assert_action(struct jobstate_decision d, enum jobstate_action want)
{
	assert_string_equal(jobstate_action_name(d.action), jobstate_action_name(want));
}

static void
test_ok_run_restarts_and_resets_failures(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {2, 1, 0};
	struct jobstate_decision d;

	(void)state;
	e.ok = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RESTART);
	assert_false(d.failed);
	assert_true(d.counted);
	assert_int_equal(c.failures, 0);
	assert_int_equal(c.cooldowns, 0);
}

static void
test_failures_in_a_row_lead_to_a_cooldown(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {0, 0, 0};
	struct jobstate_decision d;
	int i;

	(void)state;
	for (i = 1; i < 3; i++) {
		d = jobstate_run_ended(&e, &c);
		assert_action(d, JOBSTATE_RESTART);
		assert_true(d.failed);
		assert_int_equal(c.failures, i);
	}
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_COOLDOWN);
	assert_int_equal(d.in_a_row, 3);
	assert_int_equal(c.failures, 0);
	assert_int_equal(c.cooldowns, 1);
	/* The next cool-down in a row is counted on (it is longer). */
	c.failures = 2;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_COOLDOWN);
	assert_int_equal(c.cooldowns, 2);
}

static void
test_long_failed_run_counts_as_the_first_failure(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {2, 3, 0};
	struct jobstate_decision d;

	(void)state;
	e.long_run = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RESTART);
	assert_true(d.failed);
	assert_int_equal(c.failures, 1);
	assert_int_equal(c.cooldowns, 0);
}

static void
test_start_failure_counts_even_when_stopping(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {0, 0, 0};
	struct jobstate_decision d;

	(void)state;
	e.start_failed = 1;
	e.stop_requested = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_FINISH);
	assert_false(d.counted);
	assert_int_equal(c.failures, 1);
	e.stop_requested = 0;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RESTART);
	assert_int_equal(c.failures, 2);
}

static void
test_stop_comes_before_a_pending_loss(void **state)
{
	struct jobstate_end e = scheduled();
	struct jobstate_counts c = {0, 0, 0};

	(void)state;
	e.stop_requested = 1;
	e.pending = 1;
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_FINISH);
	e.stop_requested = 0;
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_AFTER_LOSS);
	assert_int_equal(c.failures, 0);
}

static void
test_untrusted_kill_runs_again_under_the_lease(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {1, 0, 0};
	struct jobstate_decision d;

	(void)state;
	e.untrusted = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RUN_AGAIN);
	assert_false(d.counted);
	assert_int_equal(c.failures, 1); /* not the command's fault */
	e.lease_idle = 1;
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_AFTER_LOSS);
}

static void
test_untrusted_kill_of_a_tick_is_a_retry(void **state)
{
	struct jobstate_end e = scheduled();
	struct jobstate_counts c = {0, 0, 0};

	(void)state;
	e.untrusted = 1;
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_RUN_AGAIN);
	assert_int_equal(c.attempt, 1);
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_RUN_AGAIN);
	assert_int_equal(c.attempt, 2);
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_NEXT_TICK);
	assert_int_equal(c.attempt, 2);
}

static void
test_failed_tick_retries_then_waits(void **state)
{
	struct jobstate_end e = scheduled();
	struct jobstate_counts c = {0, 0, 0};
	struct jobstate_decision d;

	(void)state;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RETRY);
	assert_int_equal(c.attempt, 1);
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RETRY);
	assert_int_equal(c.attempt, 2);
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_NEXT_TICK);
	assert_true(d.failed);
	assert_int_equal(c.failures, 3); /* no cool-down for a scheduled job */
}

static void
test_ok_tick_waits_for_the_next(void **state)
{
	struct jobstate_end e = scheduled();
	struct jobstate_counts c = {0, 0, 0};

	(void)state;
	e.ok = 1;
	assert_action(jobstate_run_ended(&e, &c), JOBSTATE_NEXT_TICK);
	assert_int_equal(c.attempt, 0);
}

/* Paused or drained: no restart and no retry, the lease goes; the counters still move. */
static void
test_held_back_neither_restarts_nor_retries(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {0, 0, 0};
	struct jobstate_decision d;

	(void)state;
	e.held_back = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_HOLD);
	assert_true(d.failed);
	assert_int_equal(c.failures, 1);
	e = scheduled();
	e.held_back = 1;
	e.ok = 1;
	c = (struct jobstate_counts){0, 0, 0};
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_NEXT_TICK); /* the next tick is no restart */
}

/* run-now of a continuous job: the stopped copy starts again, unless something ended it. */
static void
test_manual_restart_starts_the_copy_again_or_is_abandoned(void **state)
{
	struct jobstate_end e = continuous();
	struct jobstate_counts c = {2, 0, 0};
	struct jobstate_decision d;

	(void)state;
	e.manual_restart = 1;
	e.lease_held = 1;
	d = jobstate_run_ended(&e, &c);
	assert_action(d, JOBSTATE_RESTART_NOW);
	assert_false(d.abandoned);
	assert_int_equal(c.failures, 2); /* not counted */
	e.held_back = 1;
	d = jobstate_run_ended(&e, &c);
	assert_true(d.abandoned);
	assert_action(d, JOBSTATE_HOLD);
	e.held_back = 0;
	e.lease_held = 0;
	e.lease_idle = 1;
	e.pending = 1;
	d = jobstate_run_ended(&e, &c);
	assert_true(d.abandoned);
	assert_action(d, JOBSTATE_AFTER_LOSS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ok_run_restarts_and_resets_failures),
	    cmocka_unit_test(test_failures_in_a_row_lead_to_a_cooldown),
	    cmocka_unit_test(test_long_failed_run_counts_as_the_first_failure),
	    cmocka_unit_test(test_start_failure_counts_even_when_stopping),
	    cmocka_unit_test(test_stop_comes_before_a_pending_loss),
	    cmocka_unit_test(test_untrusted_kill_runs_again_under_the_lease),
	    cmocka_unit_test(test_untrusted_kill_of_a_tick_is_a_retry),
	    cmocka_unit_test(test_failed_tick_retries_then_waits),
	    cmocka_unit_test(test_ok_tick_waits_for_the_next),
	    cmocka_unit_test(test_held_back_neither_restarts_nor_retries),
	    cmocka_unit_test(test_manual_restart_starts_the_copy_again_or_is_abandoned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
