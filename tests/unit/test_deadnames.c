/* SPDX-License-Identifier: Apache-2.0 */
/* test_deadnames.c: the bounded set of paths whose delete this session saw acknowledged. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "deadnames.h"

/* Found once added, once however often added; a path never added is not found. */
static void
test_add_find(void **state)
{
	static struct deadnames d;

	(void)state;
	assert_int_equal(deadnames_find(&d, "/l/_c_a-lock-0000000001"), -1);
	deadnames_add(&d, "/l/_c_a-lock-0000000001");
	deadnames_add(&d, "/l/_c_b-lock-0000000002");
	deadnames_add(&d, "/l/_c_a-lock-0000000001");
	assert_true(deadnames_find(&d, "/l/_c_a-lock-0000000001") >= 0);
	assert_true(deadnames_find(&d, "/l/_c_b-lock-0000000002") >= 0);
	assert_int_equal(deadnames_find(&d, "/l/_c_a-lock-000000000"), -1);
	assert_int_equal(deadnames_find(&d, "/l/_c_a-lock-00000000012"), -1);
	assert_int_equal(d.next, 2);
	deadnames_clear(&d);
	assert_int_equal(deadnames_find(&d, "/l/_c_a-lock-0000000001"), -1);
	assert_int_equal(d.next, 0);
}

/* Reported once per path; a path added again after being forgotten is reported again. */
static void
test_warn_once(void **state)
{
	static struct deadnames d;
	int i;

	(void)state;
	deadnames_add(&d, "/l/x");
	i = deadnames_find(&d, "/l/x");
	assert_true(deadnames_warn_once(&d, i));
	assert_false(deadnames_warn_once(&d, i));
	deadnames_add(&d, "/l/x"); /* already there: still reported */
	assert_false(deadnames_warn_once(&d, deadnames_find(&d, "/l/x")));
	assert_false(deadnames_warn_once(&d, -1));
	assert_false(deadnames_warn_once(&d, DEADNAMES_MAX));
	deadnames_clear(&d);
	deadnames_add(&d, "/l/x");
	assert_true(deadnames_warn_once(&d, deadnames_find(&d, "/l/x")));
	deadnames_clear(&d);
}

/* Full, the oldest path is forgotten first, and only it. */
static void
test_bounded(void **state)
{
	static struct deadnames d;
	char path[64];
	int i;

	(void)state;
	for (i = 0; i < DEADNAMES_MAX + 3; i++) {
		snprintf(path, sizeof path, "/l/n%d", i);
		deadnames_add(&d, path);
	}
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "/l/n%d", i);
		assert_int_equal(deadnames_find(&d, path), -1);
	}
	for (i = 3; i < DEADNAMES_MAX + 3; i++) {
		snprintf(path, sizeof path, "/l/n%d", i);
		assert_true(deadnames_find(&d, path) >= 0);
	}
	deadnames_clear(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_find),
	    cmocka_unit_test(test_warn_once),
	    cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
