/* SPDX-License-Identifier: Apache-2.0 */
/* test_chainrec.c: a parent's run as a child reads it, and the chain claim (chainrec.c). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chainrec.h"

/* chainrec_parse_run of a NUL-terminated text. */
static int
run(const char *text, int64_t seq, struct chainrec_run *r)
{
	return chainrec_parse_run(text, strlen(text), seq, 1000 * seq, r);
}

/* A run is a run: a run id and an outcome; missed and paused ticks are none; bounded. */
static void
test_parse_run(void **state)
{
	struct chainrec_run r;
	char big[400];

	(void)state;
	assert_int_equal(run("{\"run_id\":\"a-1-2\",\"outcome\":\"ok\"}", 7, &r), 1);
	assert_true(r.ok);
	assert_int_equal(r.seq, 7);
	assert_string_equal(r.run_id, "a-1-2");
	assert_int_equal(run("{\"run_id\":\"a-1-3\",\"outcome\":\"failed\"}", 8, &r), 1);
	assert_false(r.ok);
	assert_string_equal(r.outcome, "failed");
	assert_int_equal(run("{\"tick\":5,\"outcome\":\"missed\"}", 9, &r), 0);
	assert_int_equal(run("{\"run_id\":\"x\",\"outcome\":\"missed\"}", 9, &r), 0);
	assert_int_equal(run("{\"run_id\":\"x\",\"outcome\":\"paused\"}", 9, &r), 0);
	assert_int_equal(run("{\"run_id\":\"x y\",\"outcome\":\"ok\"}", 9, &r), 0);
	assert_int_equal(run("{\"run_id\":\"x\",\"outcome\":\"OK\"}", 9, &r), 0);
	assert_int_equal(run("[1]", 9, &r), 0);
	assert_int_equal(run("{\"v\":99,\"run_id\":\"x\",\"outcome\":\"ok\"}", 9, &r), 0);
	memset(big, 'a', sizeof big);
	snprintf(big, sizeof big, "{\"run_id\":\"%0300d\",\"outcome\":\"ok\"}", 1);
	assert_int_equal(run(big, 9, &r), 0);
}

/* A generation of one or two parents. */
static void
gen(struct chainrec_gen *g, int64_t a, int64_t b)
{
	memset(g, 0, sizeof *g);
	g->p[0].job = "a";
	g->p[0].run.seq = a;
	snprintf(g->p[0].run.run_id, sizeof g->p[0].run.run_id, "a-1-%lld", (long long)a);
	g->n = 1;
	if (b >= 0) {
		g->p[1].job = "b";
		g->p[1].run.seq = b;
		snprintf(g->p[1].run.run_id, sizeof g->p[1].run.run_id, "b-1-%lld", (long long)b);
		g->n = 2;
	}
}

/* Claims move forward, once per parent run; a lost answer is found ours; dump reads back. */
static void
test_claim(void **state)
{
	struct chainrec_gen g;
	json_t *st = chainrec_parse_state(NULL, 0), *back;
	char *data, *ids;

	(void)state;
	gen(&g, 3, 5);
	assert_int_equal(chainrec_claim(st, &g, "n1", "run"), CHAINREC_CLAIM);
	assert_int_equal(chainrec_done(st, "a"), 3);
	assert_int_equal(chainrec_done(st, "b"), 5);
	data = chainrec_dump(st);
	back = chainrec_parse_state(data, strlen(data));
	free(data);
	/* The same generation: ours for n1 (its write landed), taken for anyone else. */
	assert_int_equal(chainrec_claim(back, &g, "n1", "run"), CHAINREC_OURS);
	assert_int_equal(chainrec_claim(back, &g, "n2", "run"), CHAINREC_TAKEN);
	/* A join with one parent's run used already is taken; both new is a claim. */
	gen(&g, 4, 5);
	assert_int_equal(chainrec_claim(back, &g, "n2", "run"), CHAINREC_TAKEN);
	gen(&g, 4, 6);
	assert_int_equal(chainrec_claim(back, &g, "n2", "missed"), CHAINREC_CLAIM);
	gen(&g, 2, -1);
	assert_int_equal(chainrec_claim(back, &g, "n2", "run"), CHAINREC_TAKEN);
	/* A parent run recorded twice (a retried create): its second record is taken. */
	gen(&g, 9, -1);
	snprintf(g.p[0].run.run_id, sizeof g.p[0].run.run_id, "a-1-4");
	assert_true(chainrec_handled_id(back, "a", "a-1-4"));
	assert_false(chainrec_handled_id(back, "a", "a-1-9"));
	assert_int_equal(chainrec_claim(back, &g, "n3", "run"), CHAINREC_TAKEN);
	gen(&g, 2, -1);
	ids = chainrec_ids(&g);
	assert_string_equal(ids, "a-1-2");
	free(ids);
	json_decref(st);
	json_decref(back);
}

/* What cannot be read: corrupt reads as empty, a newer format is refused (NULL). */
static void
test_state_bounded(void **state)
{
	const char *bad = "{\"done\":{\"a\":-3,\"b\":\"x\",\"\":4,\"c\":2},\"last\":7}";
	json_t *st;

	(void)state;
	st = chainrec_parse_state(bad, strlen(bad));
	assert_non_null(st);
	assert_int_equal(chainrec_done(st, "a"), -1);
	assert_int_equal(chainrec_done(st, "b"), -1);
	assert_int_equal(chainrec_done(st, "c"), 2);
	json_decref(st);
	st = chainrec_parse_state("not json", 8);
	assert_int_equal(chainrec_done(st, "c"), -1);
	json_decref(st);
	assert_null(chainrec_parse_state("{\"v\":99}", 8));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_run),
	    cmocka_unit_test(test_claim),
	    cmocka_unit_test(test_state_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
