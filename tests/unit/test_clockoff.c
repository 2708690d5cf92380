/* SPDX-License-Identifier: Apache-2.0 */
/* test_clockoff.c: the clock offset estimate from the mtime of our writes (clockoff.c). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "clockoff.h"

#define SEC 1000000000ULL

/* Nothing known: no estimate. */
static void
test_empty(void **state)
{
	struct clockoff c;
	int64_t off, err;

	(void)state;
	clockoff_init(&c, 60 * SEC);
	assert_int_equal(clockoff_get(&c, 5 * SEC, &off, &err), -1);
}

/* A host 30 s ahead: the server stamps a time 30 s behind the midpoint of its round trip. */
static void
test_ahead_within_half_a_round_trip(void **state)
{
	struct clockoff c;
	int64_t off, err;
	int64_t send = 1700000000000000LL; /* us */

	(void)state;
	clockoff_init(&c, 60 * SEC);
	/* sent at t, answered 4 ms later; the server wrote at t - 30 s + 1 ms (its clock) */
	assert_int_equal(clockoff_add(&c, send, send + 4000, (send - 30000000 + 1000) / 1000, SEC),
	                 0);
	assert_int_equal(clockoff_get(&c, SEC, &off, &err), 0);
	assert_int_equal(err, 2500); /* half the round trip + 0.5 ms */
	assert_true(off >= 30000000 - err && off <= 30000000 + err);
	assert_int_equal(off, 30000000 + 2000 - 1000 - 500);
}

/* A behind host gives a negative offset; the true one is always within the bound. */
static void
test_behind_and_bound_holds(void **state)
{
	struct clockoff c;
	int64_t off, err, stamp_at, truth = -12345678; /* us: we are behind */
	int64_t send = 1700000000000000LL;
	int i;

	(void)state;
	clockoff_init(&c, 60 * SEC);
	for (i = 0; i < 50; i++) {
		/* the server stamps anywhere within the round trip, in its own clock */
		stamp_at = send + (i * 7919) % (1000 + i * 100);
		assert_int_equal(clockoff_add(&c, send, send + 1000 + i * 100,
		                              (stamp_at - truth) / 1000, SEC + (uint64_t)i),
		                 0);
		assert_int_equal(clockoff_get(&c, SEC + (uint64_t)i, &off, &err), 0);
		assert_true(truth >= off - err && truth <= off + err);
		send += 1000000;
	}
}

/* The smallest round trip wins; a slow answer (a busy loop) never replaces a quick one. */
static void
test_smallest_round_trip_wins(void **state)
{
	struct clockoff c;
	int64_t off, err, send = 1700000000000000LL;

	(void)state;
	clockoff_init(&c, 60 * SEC);
	clockoff_add(&c, send, send + 2000, send / 1000, SEC);           /* 2 ms round trip */
	clockoff_add(&c, send, send + 5000000, send / 1000 + 4000, SEC); /* 5 s: stalled */
	assert_int_equal(clockoff_get(&c, 2 * SEC, &off, &err), 0);
	assert_int_equal(err, 1500);
	assert_int_equal(off, 1000 - 500);
}

/* Old samples leave the window: a stepped clock is followed within it. */
static void
test_window_forgets(void **state)
{
	struct clockoff c;
	int64_t off, err, send = 1700000000000000LL;

	(void)state;
	clockoff_init(&c, 10 * SEC);
	clockoff_add(&c, send, send + 1000, send / 1000, SEC); /* offset about 0 */
	/* 2 minutes later, our clock was stepped 5 s ahead: a slower sample, but the only one */
	clockoff_add(&c, send + 5000000, send + 5000000 + 8000, (send + 4000) / 1000, 120 * SEC);
	assert_int_equal(clockoff_get(&c, 120 * SEC, &off, &err), 0);
	assert_true(off > 4990000 && off < 5010000);
	/* and past the window, nothing */
	assert_int_equal(clockoff_get(&c, 300 * SEC, &off, &err), -1);
}

/* An answer before its request (our clock stepped back in between) is refused. */
static void
test_nonsense_refused(void **state)
{
	struct clockoff c;
	int64_t off, err;

	(void)state;
	clockoff_init(&c, 60 * SEC);
	assert_int_equal(clockoff_add(&c, 2000000, 1000000, 1500, SEC), -1);
	assert_int_equal(clockoff_add(&c, 1000000, 2000000, 0, SEC), -1);
	assert_int_equal(clockoff_get(&c, SEC, &off, &err), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_ahead_within_half_a_round_trip),
	    cmocka_unit_test(test_behind_and_bound_holds),
	    cmocka_unit_test(test_smallest_round_trip_wins),
	    cmocka_unit_test(test_window_forgets),
	    cmocka_unit_test(test_nonsense_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
