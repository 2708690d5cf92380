/* SPDX-License-Identifier: Apache-2.0 */
/* test_rworder.c: Curator's read-write lock order, who holds and whom to watch. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rworder.h"

#define U         "0f8a3c1e-1111-4222-8333-44445555666"
#define R(c, seq) "_c_" U c "-__READ__" seq
#define W(c, seq) "_c_" U c "-__WRIT__" seq

/* Curator's fixForSorting for the read-write lock: after __READ__, then after __WRIT__. */
static void
test_sort_text(void **state)
{
	/* A lock name inside the uuid part cannot fool it: the last occurrence counts. */
	char *names[] = {R("1", "0000000005"), "_c_x__WRIT__y-__READ__0000000003",
	                 W("2", "0000000004"), R("3", "12x"), "_c_u-lock-0000000001"};
	struct rworder_place pl;

	(void)state;
	rworder_sort(names, 5);
	assert_string_equal(names[0], "_c_x__WRIT__y-__READ__0000000003");
	assert_string_equal(names[1], W("2", "0000000004"));
	assert_string_equal(names[2], R("1", "0000000005"));
	/* Names that do not parse follow, by their text ("12x" < "_c_u-lock-..."). */
	assert_string_equal(names[3], R("3", "12x"));
	assert_string_equal(names[4], "_c_u-lock-0000000001");
	rworder_place(names, 5, names[2], 0, &pl);
	assert_false(pl.ok);
	assert_false(pl.shortcut);
	assert_int_equal(pl.watch, 1);
	/* The first node's name holds "__WRIT__": Curator counts it a writer, and so do we. */
	assert_true(rworder_is_writer(names[0]));
	assert_true(rworder_is_writer(W("1", "0000000001")));
	assert_false(rworder_is_writer(R("1", "0000000001")));
}

/* Both kinds share one queue by sequence; the uuid does not matter. */
static void
test_sort_mixed(void **state)
{
	char *names[] = {R("9", "0000000004"), W("1", "0000000002"), "stranger",
	                 R("2", "0000000001"), W("0", "0000000003")};

	(void)state;
	rworder_sort(names, 5);
	assert_string_equal(names[0], R("2", "0000000001"));
	assert_string_equal(names[1], W("1", "0000000002"));
	assert_string_equal(names[2], W("0", "0000000003"));
	assert_string_equal(names[3], R("9", "0000000004"));
	assert_string_equal(names[4], "stranger");
}

/* After the wrap a negative suffix is the newest: it sorts last, not first. */
static void
test_sort_wrapped(void **state)
{
	char *names[] = {W("1", "-2147483648"), R("2", "2147483647")};
	struct rworder_place pl;

	(void)state;
	rworder_sort(names, 2);
	assert_string_equal(names[0], R("2", "2147483647"));
	rworder_place(names, 2, names[1], 1, &pl);
	assert_int_equal(pl.index, 1);
	assert_false(pl.holds);
	assert_true(pl.wrapped);
	assert_false(pl.ok);
	assert_false(pl.shortcut);
}

/* A writer holds only at the head and watches its immediate predecessor, of either kind. */
static void
test_writer(void **state)
{
	char *q[] = {R("1", "0000000001"), R("2", "0000000002"), W("3", "0000000003"),
	             R("4", "0000000004")};
	struct rworder_place pl;

	(void)state;
	rworder_place(q, 4, q[2], 1, &pl);
	assert_int_equal(pl.index, 2);
	assert_false(pl.holds);
	assert_int_equal(pl.watch, 1);
	assert_false(pl.shortcut);
	rworder_place(q + 1, 3, q[2], 1, &pl);
	assert_int_equal(pl.watch, 0);
	assert_true(pl.shortcut);
	rworder_place(q + 2, 2, q[2], 1, &pl);
	assert_true(pl.holds);
	assert_int_equal(pl.watch, -1);
}

/* A reader holds beside readers ahead, waits behind any writer, watching the last one. */
static void
test_reader(void **state)
{
	char *q[] = {W("1", "0000000001"), R("2", "0000000002"), W("3", "0000000003"),
	             R("4", "0000000004"), R("5", "0000000005"), W("6", "0000000006")};
	struct rworder_place pl;

	(void)state;
	rworder_place(q, 6, q[4], 0, &pl);
	assert_int_equal(pl.index, 4);
	assert_false(pl.holds);
	assert_int_equal(pl.watch, 2); /* the last writer ahead, not Curator's first */
	assert_false(pl.shortcut);     /* two writers ahead: list again when it goes */
	rworder_place(q + 1, 5, q[4], 0, &pl);
	assert_int_equal(pl.watch, 1);
	assert_true(pl.shortcut); /* the one writer ahead: its delete means we hold */
	rworder_place(q + 3, 3, q[4], 0, &pl);
	assert_true(pl.holds); /* a reader ahead and a writer behind do not matter */
	rworder_place(q + 1, 1, q[1], 0, &pl);
	assert_true(pl.holds);
}

/* Our node missing from the listing; names that do not parse turn the shortcut off. */
static void
test_missing_and_strangers(void **state)
{
	char *q[] = {W("1", "0000000001"), R("2", "0000000002"), "zz-stranger"};
	struct rworder_place pl;

	(void)state;
	rworder_place(q, 3, R("9", "0000000009"), 0, &pl);
	assert_int_equal(pl.index, -1);
	assert_false(pl.holds);
	rworder_place(q, 3, q[1], 0, &pl);
	assert_int_equal(pl.watch, 0);
	assert_false(pl.ok);
	assert_false(pl.shortcut);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sort_text),    cmocka_unit_test(test_sort_mixed),
	    cmocka_unit_test(test_sort_wrapped), cmocka_unit_test(test_writer),
	    cmocka_unit_test(test_reader),       cmocka_unit_test(test_missing_and_strangers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
