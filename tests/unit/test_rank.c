/* SPDX-License-Identifier: Apache-2.0 */
/* test_rank.c: the ranking of the workers that carry a job, for each tick. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rank.h"
#include "schedule.h"

#define T0 1800000000 /* 2027-01-15T08:00:00Z, a whole minute */

static const char *nodes12[] = {"w01", "w02", "w03", "w04", "w05", "w06",
                                "w07", "w08", "w09", "w10", "w11", "w12"};

static struct schedule *
sched(const char *spec)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	assert_int_equal(schedule_parse(spec, "UTC", &s, &cause), 0);
	return s;
}

/* Every worker computes its own rank from the same list: together they are 0..n-1 once each. */
static void
test_ranks_are_a_permutation(void **state)
{
	int64_t seq;
	size_t i, seen[12];

	(void)state;
	for (seq = 0; seq < 100; seq++) {
		memset(seen, 0, sizeof seen);
		for (i = 0; i < 12; i++) {
			size_t pos = rank_position("backup", seq, nodes12[i], nodes12, 12);

			assert_true(pos < 12);
			seen[pos]++;
		}
		for (i = 0; i < 12; i++)
			assert_int_equal(seen[i], 1);
	}
}

/* Over n consecutive ticks each of n workers is first exactly once (and per_tick = 2: twice). */
static void
test_rotation_is_even(void **state)
{
	size_t i, first[12] = {0}, top2[12] = {0};
	int64_t seq;

	(void)state;
	for (seq = 1000; seq < 1000 + 12 * 5; seq++) {
		for (i = 0; i < 12; i++) {
			size_t pos = rank_position("report", seq, nodes12[i], nodes12, 12);

			first[i] += pos == 0;
			top2[i] += rank_delay_ms(pos, 2, 100) == 0;
		}
	}
	for (i = 0; i < 12; i++) {
		assert_int_equal(first[i], 5);
		assert_int_equal(top2[i], 10);
	}
}

/* Jobs start at different places: the same tick of ten jobs is not all on one worker. */
static void
test_jobs_spread_at_one_tick(void **state)
{
	char job[16];
	size_t i, j, distinct = 0, hits[12] = {0};

	(void)state;
	for (j = 0; j < 10; j++) {
		snprintf(job, sizeof job, "job%zu", j);
		for (i = 0; i < 12; i++)
			if (rank_position(job, 77, nodes12[i], nodes12, 12) == 0)
				hits[i]++;
	}
	for (i = 0; i < 12; i++)
		distinct += hits[i] > 0;
	assert_true(distinct >= 4);
}

/* Self counts whether listed or not; the others' ranks do not depend on the list's order. */
static void
test_self_and_order(void **state)
{
	const char *without[11], *reversed[12];
	size_t i;

	(void)state;
	for (i = 0; i < 11; i++)
		without[i] = nodes12[i + 1];
	for (i = 0; i < 12; i++)
		reversed[i] = nodes12[11 - i];
	for (i = 0; i < 50; i++) {
		size_t pos = rank_position("j", (int64_t)i, "w01", nodes12, 12);

		assert_int_equal(rank_position("j", (int64_t)i, "w01", without, 11), pos);
		assert_int_equal(rank_position("j", (int64_t)i, "w01", reversed, 12), pos);
	}
	/* Alone: always first. */
	assert_int_equal(rank_position("j", 5, "solo", NULL, 0), 0);
}

/* Consecutive ticks of an interval or a regular cron expression have consecutive numbers. */
static void
test_seq(void **state)
{
	struct schedule *every = sched("@every 2s"), *five = sched("*/5 * * * *");
	int64_t t;

	(void)state;
	for (t = T0; t < T0 + 20; t += 2)
		assert_int_equal(rank_seq(every, t + 2), rank_seq(every, t) + 1);
	for (t = T0; t < T0 + 3 * 3600; t += 300)
		assert_int_equal(rank_seq(five, t + 300), rank_seq(five, t) + 1);
	assert_int_equal(rank_seq(NULL, T0), T0);
	schedule_free(every);
	schedule_free(five);
}

/* The step: 500 ms at most; every backup has read within half the deadline, before the next
 * tick; 50 ms at least. */
static void
test_step_bounds(void **state)
{
	struct schedule *two = sched("@every 2s"), *one = sched("@every 1s"),
	                *hourly = sched("@hourly");
	uint64_t step;

	(void)state;
	assert_int_equal(rank_step_ms(two, T0, 60000), 500);
	assert_int_equal(rank_step_ms(one, T0, 60000), 250);
	assert_int_equal(rank_step_ms(hourly, T0, 60000), 500);
	assert_int_equal(rank_step_ms(hourly, T0, 1200), 200);
	assert_int_equal(rank_step_ms(hourly, T0, 100), RANK_MIN_STEP_MS);
	step = rank_step_ms(one, T0, 1500);
	assert_true(RANK_STEPS * step <= 1500 / 2);
	assert_true(RANK_STEPS * step < 1000);
	schedule_free(two);
	schedule_free(one);
	schedule_free(hourly);
}

/* The first per_tick contend at once; the backups in steps of rank, at most RANK_STEPS. */
static void
test_delays(void **state)
{
	(void)state;
	assert_int_equal(rank_delay_ms(0, 1, 400), 0);
	assert_int_equal(rank_delay_ms(1, 1, 400), 400);
	assert_int_equal(rank_delay_ms(2, 1, 400), 800);
	assert_int_equal(rank_delay_ms(3, 1, 400), RANK_STEPS * 400);
	assert_int_equal(rank_delay_ms(47, 1, 400), RANK_STEPS * 400);
	assert_int_equal(rank_delay_ms(1, 2, 400), 0);
	assert_int_equal(rank_delay_ms(2, 2, 400), 400);
	assert_int_equal(rank_delay_ms(0, 0, 400), 0);
}

/* A registration: its jobs (sorted, distinct, bounded), drained and unhealthy. */
static void
test_parse_member(void **state)
{
	const char *reg =
	    "{\"node\":\"a\",\"jobs\":[\"b\",\"a\",\"b\",7,\"\",null],\"drained\":true}";
	const char nul[] = "{\"jobs\":[\"x\\u0000y\",\"c\"]}";
	struct rank_member m;

	(void)state;
	assert_int_equal(rank_parse_member(reg, strlen(reg), &m), 0);
	assert_int_equal(m.njobs, 2);
	assert_string_equal(m.jobs[0], "a");
	assert_string_equal(m.jobs[1], "b");
	assert_true(m.drained);
	assert_true(rank_member_has(&m, "a"));
	assert_true(rank_member_has(&m, "b"));
	assert_false(rank_member_has(&m, "c"));
	rank_member_free(&m);

	/* A NUL inside a name: not read at all (carrying nothing). */
	assert_int_equal(rank_parse_member(nul, sizeof nul - 1, &m), -1);
	assert_int_equal(m.njobs, 0);
	assert_false(rank_member_has(&m, "c"));
	rank_member_free(&m);

	assert_int_equal(rank_parse_member("[1]", 3, &m), -1);
	assert_int_equal(m.njobs, 0);
	assert_false(rank_member_has(&m, "a"));
	rank_member_free(&m);
	reg = "{\"jobs\":\"a\",\"drained\":1}";
	assert_int_equal(rank_parse_member(reg, strlen(reg), &m), 0);
	assert_int_equal(m.njobs, 0);
	assert_false(m.drained); /* only true is true */
	assert_false(m.unhealthy);
	rank_member_free(&m);
	/* Issue 20: an unhealthy worker (its node says so) is ranked out like a drained one. */
	reg = "{\"jobs\":[\"a\"],\"unhealthy\":true,\"unhealthy_reason\":\"x\"}";
	assert_int_equal(rank_parse_member(reg, strlen(reg), &m), 0);
	assert_true(m.unhealthy);
	assert_false(m.drained);
	rank_member_free(&m);
	assert_int_equal(rank_parse_member(NULL, 0, &m), -1);
	rank_member_free(&m);
}

/* Too large, too many, too long: bounded. */
static void
test_parse_member_bounds(void **state)
{
	size_t i, len = 0, cap = 16 + (RANK_MAX_JOBS + 10) * 12 + RANK_MAX_NAME + 16;
	char *s = malloc(cap);
	struct rank_member m;

	(void)state;
	len += (size_t)sprintf(s + len, "{\"jobs\":[\"");
	memset(s + len, 'x', RANK_MAX_NAME + 1);
	len += RANK_MAX_NAME + 1;
	len += (size_t)sprintf(s + len, "\"");
	for (i = 0; i < RANK_MAX_JOBS + 10; i++)
		len += (size_t)sprintf(s + len, ",\"j%05zu\"", i);
	len += (size_t)sprintf(s + len, "]}");
	assert_int_equal(rank_parse_member(s, len, &m), 0);
	/* The over-long first name is dropped; the list is cut at RANK_MAX_JOBS entries. */
	assert_int_equal(m.njobs, RANK_MAX_JOBS - 1);
	assert_true(rank_member_has(&m, "j00000"));
	assert_true(rank_member_has(&m, "j65534"));
	assert_false(rank_member_has(&m, "j65535"));
	assert_true(m.partial);
	rank_member_free(&m);
	assert_int_equal(rank_parse_member(s, RANK_MAX_SIZE + 1, &m), -1);
	assert_true(m.partial);
	rank_member_free(&m);
	/* 10,000 jobs (a large worker's registration, over 64 KiB) are read whole. */
	len = (size_t)sprintf(s, "{\"jobs\":[\"j00000\"");
	for (i = 1; i < 10000; i++)
		len += (size_t)sprintf(s + len, ",\"job-number-%05zu\"", i);
	len += (size_t)sprintf(s + len, "]}");
	assert_true(len > 65536);
	assert_int_equal(rank_parse_member(s, len, &m), 0);
	assert_int_equal(m.njobs, 10000);
	assert_false(m.partial);
	assert_true(rank_member_has(&m, "job-number-09999"));
	rank_member_free(&m);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranks_are_a_permutation),
	    cmocka_unit_test(test_rotation_is_even),
	    cmocka_unit_test(test_jobs_spread_at_one_tick),
	    cmocka_unit_test(test_self_and_order),
	    cmocka_unit_test(test_seq),
	    cmocka_unit_test(test_step_bounds),
	    cmocka_unit_test(test_delays),
	    cmocka_unit_test(test_parse_member),
	    cmocka_unit_test(test_parse_member_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
