/* SPDX-License-Identifier: Apache-2.0 */
/* test_tickstate.c: the tick state read from ZooKeeper, bounded, and the claim computed on it. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jobrec.h"
#include "leasekeeper.h"
#include "schedule.h"
#include "tickstate.h"

#define T0 1800000000 /* 2027-01-15T08:00:00Z, a whole minute */

/* {"tick":tick,"missed":[0,0,...]} with n zeros (caller frees). */
static char *
hostile_state(int64_t tick, size_t n, size_t *len)
{
	char *s = malloc(64 + 2 * n), *p = s;
	size_t i;

	p += sprintf(p, "{\"tick\":%lld,\"missed\":[", (long long)tick);
	for (i = 0; i < n; i++)
		p += sprintf(p, i == 0 ? "0" : ",0");
	p += sprintf(p, "]}");
	*len = (size_t)(p - s);
	return s;
}

/* A minutely cron schedule in UTC. */
static struct schedule *
minutely(void)
{
	struct schedule *s = NULL;
	char *cause = NULL;

	assert_int_equal(schedule_parse("* * * * *", "UTC", &s, &cause), 0);
	return s;
}

static void
test_parse_plain(void **state)
{
	const char *j = "{\"tick\":60,\"runners\":[\"a\",\"b\"],\"recent\":[0,60],\"missed\":[30]}";
	struct tickstate st;
	char *out;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(st.flags, 0);
	assert_int_equal(st.tick, 60);
	assert_int_equal(json_array_size(json_object_get(st.o, "runners")), 2);
	/* 30 is neither the tick nor recent: only its place in "missed" makes this 0 */
	assert_false(tickstate_mark_missed(&st, 30));
	out = tickstate_dump(&st);
	assert_string_equal(
	    out,
	    "{\"missed\":[30],\"recent\":[0,60],\"runners\":[\"a\",\"b\"],\"tick\":60,\"v\":1}");
	free(out);
	tickstate_free(&st);
}

static void
test_parse_garbage(void **state)
{
	const char *bad[] = {"", "not json", "[1,2]", "{\"tick\":\"x\",\"missed\":{}}",
	                     "{\"tick\":-5,\"runners\":[1,null,\"\"],\"missed\":[\"a\",-1]}"};
	struct tickstate st;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tickstate_parse(bad[i], strlen(bad[i]), &st);
		assert_int_equal(st.tick, -1);
		assert_int_equal(json_array_size(json_object_get(st.o, "runners")), 0);
		assert_int_equal(json_array_size(json_object_get(st.o, "missed")), 0);
		assert_true(i == 0 || st.flags != 0);
		tickstate_free(&st);
	}
}

/* A long list is cut to TICKSTATE_MAX_LIST, keeping the newest (last) entries. */
static void
test_parse_long_list_truncated(void **state)
{
	size_t len;
	char *j = hostile_state(1, 1000, &len);
	struct tickstate st;

	(void)state;
	tickstate_parse(j, len, &st);
	assert_true(st.flags & TICKSTATE_TRUNCATED);
	assert_int_equal(st.tick, 1);
	assert_int_equal(json_array_size(json_object_get(st.o, "missed")), TICKSTATE_MAX_LIST);
	tickstate_free(&st);
	free(j);
}

/* A node above TICKSTATE_MAX_SIZE is corrupt and not parsed at all. */
static void
test_parse_too_large(void **state)
{
	size_t len;
	char *j = hostile_state(1, 300000, &len);
	struct tickstate st;

	(void)state;
	tickstate_parse(j, len, &st);
	assert_true(st.flags & TICKSTATE_CORRUPT);
	assert_int_equal(st.tick, -1);
	assert_int_equal(json_array_size(json_object_get(st.o, "missed")), 0);
	tickstate_free(&st);
	free(j);
}

/* The ticks skipped since the last claim are the newest ones, at most history of them. */
static void
test_claim_skipped(void **state)
{
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "me", s, 3, T0 + 5};
	const char *j = "{\"tick\":1799999400,\"missed\":[1799999940]}"; /* T0-600; T0-60 */
	struct tickstate st;
	json_t *skipped;
	char *out;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_int_equal(json_array_size(skipped), 3);
	assert_int_equal(json_integer_value(json_array_get(skipped, 0)), T0 - 240);
	assert_int_equal(json_integer_value(json_array_get(skipped, 1)), T0 - 180);
	assert_int_equal(json_integer_value(json_array_get(skipped, 2)), T0 - 120);
	assert_int_equal(st.tick, T0);
	/* what is written: the skipped ticks added to "missed", the claim to "recent" */
	out = tickstate_dump(&st);
	assert_string_equal(out, "{\"missed\":[1799999940,1799999760,1799999820,1799999880],"
	                         "\"recent\":[1800000000],\"runners\":[\"me\"],\"tick\":1800000000,"
	                         "\"v\":1}");
	free(out);
	json_decref(skipped);
	tickstate_free(&st);
	schedule_free(s);
}

/*
 * A long pause, or a long wait for a lease, marks more ticks missed one by one than the state
 * remembers (TICKSTATE_KEEP_TICKS): the next claim must not name the ones forgotten as skipped
 * (each was recorded missed once already).
 */
static void
test_claim_after_long_marking(void **state)
{
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "me", s, 1000, T0 + 5};
	char j[64];
	struct tickstate st;
	json_t *skipped;
	char *out;
	int64_t t;

	(void)state;
	snprintf(j, sizeof j, "{\"tick\":%lld,\"runners\":[\"x\"]}", (long long)(T0 - 200 * 60));
	out = strdup(j);
	for (t = T0 - 199 * 60; t < T0; t += 60) { /* each marked, written and read again */
		tickstate_parse(out, strlen(out), &st);
		free(out);
		assert_true(tickstate_mark_missed(&st, t));
		out = tickstate_dump(&st);
		tickstate_free(&st);
	}
	tickstate_parse(out, strlen(out), &st);
	free(out);
	assert_int_equal(json_array_size(json_object_get(st.o, "missed")), TICKSTATE_KEEP_TICKS);
	assert_false(tickstate_mark_missed(&st, T0 - 199 * 60)); /* forgotten, yet recorded */
	assert_false(tickstate_mark_missed(&st, T0 - 100 * 60));
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_int_equal(json_array_size(skipped), 0);
	json_decref(skipped);
	tickstate_free(&st);

	/* A "settled" beyond the horizon (a hostile write) is dropped, as a future claim is. */
	snprintf(j, sizeof j, "{\"tick\":%lld,\"runners\":[\"x\"],\"settled\":%lld}",
	         (long long)(T0 - 600), (long long)(T0 + 86400));
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_true(st.flags & TICKSTATE_FUTURE);
	assert_int_equal(json_array_size(skipped), 9);
	json_decref(skipped);
	tickstate_free(&st);
	schedule_free(s);
}

/*
 * Item 4 of issue 8: an old tick and a long missed list. The claim still lands, names at
 * most history skipped ticks, and its work is bounded by the lists' caps (the old code
 * walked every tick since 1970 against the whole list).
 */
static void
test_claim_hostile_old_tick(void **state)
{
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "me", s, 20, T0 + 1};
	size_t len;
	char *j = hostile_state(1, 5000, &len);
	struct tickstate st;
	json_t *skipped;
	char *out;

	(void)state;
	tickstate_parse(j, len, &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_int_equal(json_array_size(skipped), 20);
	assert_int_equal(json_integer_value(json_array_get(skipped, 19)), T0 - 60);
	out = tickstate_dump(&st);
	assert_true(strlen(out) < 4096); /* rewritten sanely: short lists */
	free(out);
	json_decref(skipped);
	tickstate_free(&st);
	free(j);
	schedule_free(s);
}

/* Item 5 of issue 8: a tick claimed far in the future is overridden and flagged. */
static void
test_claim_future_overridden(void **state)
{
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "me", s, 20, T0 + 1};
	const char *j =
	    "{\"tick\":4102444800,\"runners\":[\"clock-ahead\"],\"missed\":[4102444740]}";
	struct tickstate st;
	json_t *skipped;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_true(st.flags & TICKSTATE_FUTURE);
	assert_int_equal(st.tick, T0);
	assert_int_equal(json_array_size(skipped), 0);
	assert_int_equal(json_array_size(json_object_get(st.o, "missed")), 0);
	assert_int_equal(json_array_size(json_object_get(st.o, "runners")), 1);
	json_decref(skipped);
	tickstate_free(&st);
	schedule_free(s);
}

/* A later tick within the horizon (a peer's clock a minute ahead) is respected. */
static void
test_claim_later_within_horizon(void **state)
{
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "me", s, 20, T0 + 1};
	const char *j = "{\"tick\":1800000060,\"runners\":[\"peer\"]}";
	struct tickstate st;
	json_t *skipped;

	(void)state;
	assert_true(tickstate_horizon(s, T0 + 1) >= T0 + TICKSTATE_MIN_HORIZON);
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_TAKEN);
	assert_int_equal(st.flags, 0);
	assert_null(skipped);
	tickstate_free(&st);
	schedule_free(s);
}

static void
test_claim_taken_and_ours(void **state)
{
	struct tickstate_claim c = {T0, 2, "me", NULL, 20, T0};
	const char *full = "{\"tick\":1800000000,\"runners\":[\"a\",\"b\"]}";
	const char *ours = "{\"tick\":1800000000,\"runners\":[\"me\"]}";
	const char *one = "{\"tick\":1800000000,\"runners\":[\"a\"]}";
	const char *missed = "{\"tick\":1799999940,\"missed\":[1800000000]}";
	struct tickstate st;
	json_t *skipped;

	(void)state;
	tickstate_parse(full, strlen(full), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_TAKEN);
	tickstate_free(&st);
	tickstate_parse(ours, strlen(ours), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_OURS);
	tickstate_free(&st);
	tickstate_parse(missed, strlen(missed), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_TAKEN);
	tickstate_free(&st);
	tickstate_parse(one, strlen(one), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_null(skipped);
	assert_int_equal(json_array_size(json_object_get(st.o, "runners")), 2);
	tickstate_free(&st);
}

/*
 * A claimed tick (it has a runner: every claim writes one) or a recent one is not marked
 * missed; a later one is, once. A tick with no runner left is test_give_back's.
 */
static void
test_mark_missed(void **state)
{
	const char *j = "{\"tick\":1800000000,\"runners\":[\"a\"],\"recent\":[1799999940]}";
	struct tickstate st;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_false(tickstate_mark_missed(&st, T0));
	assert_false(tickstate_mark_missed(&st, T0 - 60));
	assert_true(tickstate_mark_missed(&st, T0 + 60));
	assert_false(tickstate_mark_missed(&st, T0 + 60));
	tickstate_free(&st);
}

/*
 * Issue 20: a tick given back leaves its runners for "handed"; another worker may claim it,
 * the one that gave it back may not; with no runner left it may be marked missed, and with
 * missed asked for it is marked at once. A state written by an older release (no "handed")
 * reads as none given back, and a dump with none given back has no "handed".
 */
static void
test_hand_back(void **state)
{
	const char *j = "{\"tick\":1800000000,\"runners\":[\"a\"],\"recent\":[1800000000]}";
	struct tickstate st;
	struct tickstate_claim c = {T0, 1, "a", NULL, 5, T0};
	json_t *skipped;
	char *dump;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	dump = tickstate_dump(&st);
	assert_null(strstr(dump, "handed"));
	free(dump);
	assert_int_equal(tickstate_hand_back(&st, T0 + 60, "a", 0), 0); /* not that tick */
	assert_int_equal(tickstate_hand_back(&st, T0, "b", 0), 0);      /* not b's */
	assert_false(tickstate_mark_missed(&st, T0));                   /* a has it */
	assert_int_equal(tickstate_hand_back(&st, T0, "a", 0), 1);
	assert_true(tickstate_current(&st, T0));
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_TAKEN); /* a gave it */
	c.node = "b";
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_null(skipped);
	dump = tickstate_dump(&st);
	assert_non_null(strstr(dump, "\"handed\":[\"a\"]"));
	assert_non_null(strstr(dump, "\"runners\":[\"b\"]"));
	free(dump);
	/* b gives it back too, with no healthy worker left: marked missed at once. */
	assert_int_equal(tickstate_hand_back(&st, T0, "b", 1), 2);
	assert_false(tickstate_current(&st, T0));
	c.node = "c";
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_TAKEN);
	/* The next tick's claim forgets who gave the last one back. */
	c.tick = T0 + 60;
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	json_decref(skipped);
	dump = tickstate_dump(&st);
	assert_null(strstr(dump, "handed"));
	free(dump);
	tickstate_free(&st);
}

/*
 * A claim that landed after its job let the tick go (a stop, a lost lease: jobrec.c) gives
 * the tick back without joining "handed": any worker may claim it, the same node restarted
 * too. Until one does, no one runs it: a deadline may mark it missed, and the next tick's
 * claim names it among the skipped ticks (recorded missed), so it is never lost unrecorded.
 */
static void
test_give_back(void **state)
{
	const char *j = "{\"tick\":1800000000,\"runners\":[\"a\"],\"recent\":[1800000000]}";
	struct schedule *s = minutely();
	struct tickstate_claim c = {T0, 1, "a", s, 5, T0 + 5};
	struct tickstate st;
	json_t *skipped;
	char *dump;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_give_back(&st, T0 + 60, "a"), 0); /* not that tick */
	assert_int_equal(tickstate_give_back(&st, T0, "b"), 0);      /* not b's */
	assert_int_equal(tickstate_give_back(&st, T0, "a"), 1);
	assert_true(tickstate_current(&st, T0));
	dump = tickstate_dump(&st);
	assert_string_equal(dump, "{\"missed\":[],\"recent\":[1800000000],\"runners\":[],"
	                          "\"tick\":1800000000,\"v\":1}");
	/* a (restarted) may claim it again: it did not join "handed". */
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_null(skipped);
	tickstate_free(&st);
	/* Given back and not claimed: its deadline may mark it missed. */
	tickstate_parse(dump, strlen(dump), &st);
	assert_true(tickstate_mark_missed(&st, T0));
	tickstate_free(&st);
	/* ... or the next claim records it among the ticks it skipped. */
	tickstate_parse(dump, strlen(dump), &st);
	c.node = "b";
	c.tick = T0 + 120;
	c.now = T0 + 125;
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_int_equal(json_array_size(skipped), 2);
	assert_int_equal(json_integer_value(json_array_get(skipped, 0)), T0);
	assert_int_equal(json_integer_value(json_array_get(skipped, 1)), T0 + 60);
	json_decref(skipped);
	tickstate_free(&st);
	/* A tick that its runner still has is not skipped. */
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_claim(&st, &c, &skipped), TICKSTATE_CLAIM);
	assert_int_equal(json_array_size(skipped), 1);
	assert_int_equal(json_integer_value(json_array_get(skipped, 0)), T0 + 60);
	json_decref(skipped);
	tickstate_free(&st);
	free(dump);
	schedule_free(s);
}

/*
 * A tick claimed by a worker that let it go unrun, and superseded by a later claim before it
 * was given back (that claim did not name it skipped: it had a runner), is marked missed by
 * the give-back (jobrec.c records it superseded); once only; never the last tick claimed, a
 * tick not claimed, or one marked already.
 */
static void
test_mark_superseded(void **state)
{
	const char *j = "{\"tick\":1800000060,\"runners\":[\"b\"],"
	                "\"recent\":[1800000000,1800000060],\"missed\":[1799999940]}";
	struct tickstate st;

	(void)state;
	tickstate_parse(j, strlen(j), &st);
	assert_int_equal(tickstate_give_back(&st, T0, "a"), 0);        /* not the last claimed */
	assert_int_equal(tickstate_mark_superseded(&st, T0 + 60), 0);  /* the last claimed */
	assert_int_equal(tickstate_mark_superseded(&st, T0 - 60), 0);  /* marked already */
	assert_int_equal(tickstate_mark_superseded(&st, T0 - 120), 0); /* never claimed */
	assert_int_equal(tickstate_mark_superseded(&st, T0), 1);
	assert_int_equal(tickstate_mark_superseded(&st, T0), 0); /* once */
	assert_false(tickstate_mark_missed(&st, T0));
	tickstate_free(&st);
}

/* Item 6 of issue 8: a count above LK_MAX_LEASES is corrupt, not "no count". */
static void
test_jobrec_leases_limit(void **state)
{
	char buf[64];

	(void)state;
	snprintf(buf, sizeof buf, "{\"leases\":%d}", LK_MAX_LEASES);
	assert_int_equal(jobrec_parse_leases(buf, (int)strlen(buf)), LK_MAX_LEASES);
	snprintf(buf, sizeof buf, "{\"leases\":%d}", LK_MAX_LEASES + 1);
	assert_int_equal(jobrec_parse_leases(buf, (int)strlen(buf)), -1);
	assert_int_equal(jobrec_parse_leases("{\"leases\":2000000}", 18), -1);
	assert_int_equal(jobrec_parse_leases("{\"leases\":\"3\"}", 14), -1);
	assert_int_equal(jobrec_parse_leases("{}", 2), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_plain),
	    cmocka_unit_test(test_parse_garbage),
	    cmocka_unit_test(test_parse_long_list_truncated),
	    cmocka_unit_test(test_parse_too_large),
	    cmocka_unit_test(test_claim_skipped),
	    cmocka_unit_test(test_claim_after_long_marking),
	    cmocka_unit_test(test_claim_hostile_old_tick),
	    cmocka_unit_test(test_claim_future_overridden),
	    cmocka_unit_test(test_claim_later_within_horizon),
	    cmocka_unit_test(test_claim_taken_and_ours),
	    cmocka_unit_test(test_mark_missed),
	    cmocka_unit_test(test_hand_back),
	    cmocka_unit_test(test_give_back),
	    cmocka_unit_test(test_mark_superseded),
	    cmocka_unit_test(test_jobrec_leases_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
