/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_runout.c: a run's output kept for followers (runout.c): offsets, gaps, the cap, the
 * end; and the dashboard's tail path and a worker's listen address as follow.c reads them.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "follow.h"
#include "runout.h"

#define KEEP (64 * 1024) /* RUNOUT_KEEP */
#define READ (32 * 1024) /* RUNOUT_MAX_READ */

/* Read run "r-1" from offset from: the slice, whose status must be 200. */
static struct runout_slice
slice_of(struct runout *ro, uint64_t from)
{
	struct runout_slice sl;

	assert_int_equal(runout_slice(ro, "r-1", from, &sl), 200);
	return sl;
}

/* Bytes come in order, each read once from where the follower is, then the outcome. */
static void
test_in_order_then_outcome(void **state)
{
	struct runout *ro = runout_new();
	struct runout_slice sl;

	(void)state;
	assert_int_equal(strlen(runout_token(ro)), 32);
	assert_int_equal(runout_slice(ro, "r-1", 0, &sl), 404);
	runout_start(ro, 7, "job", "r-1", 1);
	sl = slice_of(ro, 0);
	assert_int_equal(sl.n, 0);
	assert_false(sl.ended);
	runout_add(ro, 7, 0, "one\n", 4);
	runout_add(ro, 7, 4, "two\n", 4);
	runout_add(ro, 8, 0, "not ours\n", 9); /* another run: not this one's */
	sl = slice_of(ro, 0);
	assert_int_equal(sl.at, 0);
	assert_int_equal(sl.n, 8);
	assert_memory_equal(sl.bytes, "one\ntwo\n", 8);
	sl = slice_of(ro, 4);
	assert_int_equal(sl.n, 4);
	assert_null(sl.outcome);
	runout_end(ro, 7, "failed");
	runout_add(ro, 7, 8, "late\n", 5); /* ended: nothing more */
	sl = slice_of(ro, 4);
	assert_true(sl.ended);
	assert_int_equal(sl.n, 4);
	assert_string_equal(sl.outcome, "failed"); /* every byte given with it */
	sl = slice_of(ro, 8);
	assert_int_equal(sl.n, 0);
	assert_string_equal(sl.outcome, "failed");
	sl = slice_of(ro, 100); /* past the end: at the end */
	assert_int_equal(sl.at, 8);
	runout_free(ro);
}

/* Past the cap the oldest bytes go; a gap (output the supervisor could not send) shows. */
static void
test_cap_and_gap(void **state)
{
	struct runout *ro = runout_new();
	struct runout_slice sl;
	char *big = malloc(KEEP + 100);
	size_t i;

	(void)state;
	for (i = 0; i < KEEP + 100; i++)
		big[i] = (char)('a' + i % 26);
	runout_start(ro, 7, "job", "r-1", 1);
	runout_add(ro, 7, 0, big, 16384);
	runout_add(ro, 7, 16384, big + 16384, KEEP + 100 - 16384);
	sl = slice_of(ro, 0); /* behind the oldest byte kept: from there */
	assert_int_equal(sl.at, 100);
	assert_int_equal(sl.n, READ); /* one answer carries so much */
	assert_memory_equal(sl.bytes, big + 100, READ);
	sl = slice_of(ro, 100 + READ);
	assert_int_equal(sl.n, KEEP - READ);
	assert_memory_equal(sl.bytes, big + 100 + READ, KEEP - READ);
	/* Offsets KEEP+100 to KEEP+200 never came: the next bytes start after the gap. */
	runout_add(ro, 7, KEEP + 200, "after\n", 6);
	sl = slice_of(ro, KEEP + 100);
	assert_int_equal(sl.at, KEEP + 200);
	assert_int_equal(sl.n, 6);
	assert_memory_equal(sl.bytes, "after\n", 6);
	/* A byte sent twice is kept once. */
	runout_add(ro, 7, KEEP + 203, "er\nmore\n", 8);
	sl = slice_of(ro, KEEP + 200);
	assert_int_equal(sl.n, 11);
	assert_memory_equal(sl.bytes, "after\nmore\n", 11);
	free(big);
	runout_free(ro);
}

/* A run whose output is not kept is refused; a dead supervisor's runs end as killed. */
static void
test_not_kept_and_all_ended(void **state)
{
	struct runout *ro = runout_new();
	struct runout_slice sl;

	(void)state;
	runout_start(ro, 3, "quiet", "q-1", 0);
	runout_add(ro, 3, 0, "secret\n", 7);
	assert_int_equal(runout_slice(ro, "q-1", 0, &sl), 403);
	runout_start(ro, 7, "job", "r-1", 1);
	runout_add(ro, 7, 0, "x\n", 2);
	runout_end_all(ro, "killed");
	sl = slice_of(ro, 0);
	assert_true(sl.ended);
	assert_string_equal(sl.outcome, "killed");
	assert_int_equal(sl.n, 2);
	runout_free(ro);
}

/* The dashboard's /api/runs/<job>/<run id>/output?from=N: the job decoded, the rest strict. */
static void
test_tail_uri(void **state)
{
	char job[32], id[FOLLOW_MAX_RUN_ID + 1];
	uint64_t from = 7;

	(void)state;
	assert_int_equal(follow_parse_tail_uri("/api/runs/a%20b.c/run-01/output?from=12", job,
	                                       sizeof job, id, sizeof id, &from),
	                 0);
	assert_string_equal(job, "a b.c");
	assert_string_equal(id, "run-01");
	assert_int_equal(from, 12);
	assert_int_equal(
	    follow_parse_tail_uri("/api/runs/j/r/output", job, sizeof job, id, sizeof id, &from),
	    0);
	assert_int_equal(from, 0);
	static const char *const bad[] = {
	    "/api/runs/j/r/output?from=x",
	    "/api/runs/j/r/output?from=1&x=2",
	    "/api/runs//r/output",
	    "/api/runs/r/output",
	    "/api/runs/j/../output",
	    "/api/runs/a%2Fb/r/output",
	    "/api/runs/a%00b/r/output",
	    "/api/runs/a%2/r/output",
	    "/api/runs/j/r/outputs",
	    "/api/runs/j/r/output/",
	    "/runs/r/output",
	    "/api/runs/0123456789012345678901234567890123/r/output",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(
		    follow_parse_tail_uri(bad[i], job, sizeof job, id, sizeof id, &from), -1);
}

/* A worker node's "http": an address, or the worker's host name for a wildcard one. */
static void
test_listen(void **state)
{
	char host[64];
	int port;

	(void)state;
	assert_int_equal(follow_parse_listen("127.0.0.1:9100", "h", host, sizeof host, &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 9100);
	assert_int_equal(follow_parse_listen("[::1]:80", NULL, host, sizeof host, &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(follow_parse_listen("0.0.0.0:81", "w1.example", host, sizeof host, &port),
	                 0);
	assert_string_equal(host, "w1.example");
	assert_int_equal(follow_parse_listen(":82", NULL, host, sizeof host, &port), -1);
	assert_int_equal(follow_parse_listen("h:0", NULL, host, sizeof host, &port), -1);
	assert_int_equal(follow_parse_listen("h:65536", NULL, host, sizeof host, &port), -1);
	assert_int_equal(follow_parse_listen("h:+80", NULL, host, sizeof host, &port), -1);
	assert_int_equal(follow_parse_listen("a/b:80", NULL, host, sizeof host, &port), -1);
	assert_int_equal(follow_parse_listen("h", NULL, host, sizeof host, &port), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_in_order_then_outcome),
	    cmocka_unit_test(test_cap_and_gap),
	    cmocka_unit_test(test_not_kept_and_all_ended),
	    cmocka_unit_test(test_tail_uri),
	    cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
