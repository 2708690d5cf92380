/* SPDX-License-Identifier: Apache-2.0 */
/* test_sdnotify.c: when the worker pings systemd's watchdog, and how often. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sdnotify.h"

/* WATCHDOG_USEC alone: the interval, in microseconds. */
static void
test_watchdog_usec(void **state)
{
	(void)state;
	assert_int_equal(sdnotify_watchdog_usec("30000000", NULL, 42), 30000000);
	assert_int_equal(sdnotify_watchdog_usec("1", NULL, 42), 1);
	assert_int_equal(sdnotify_watchdog_usec("18446744073709551615", NULL, 42), UINT64_MAX);
}

/* No watchdog: unset, zero, or not a plain decimal number that fits. */
static void
test_watchdog_off(void **state)
{
	static const char *const bad[] = {"",
	                                  "0",
	                                  "-1",
	                                  " 5",
	                                  "5 ",
	                                  "5s",
	                                  "0x10",
	                                  "+5",
	                                  "1e6",
	                                  "18446744073709551616",
	                                  "99999999999999999999"};
	size_t i;

	(void)state;
	assert_int_equal(sdnotify_watchdog_usec(NULL, NULL, 42), 0);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(sdnotify_watchdog_usec(bad[i], NULL, 42), 0);
}

/* WATCHDOG_PID: ours, or the variables were meant for another process (they leaked). */
static void
test_watchdog_pid(void **state)
{
	(void)state;
	assert_int_equal(sdnotify_watchdog_usec("2000000", "42", 42), 2000000);
	assert_int_equal(sdnotify_watchdog_usec("2000000", "43", 42), 0);
	assert_int_equal(sdnotify_watchdog_usec("2000000", "", 42), 0);
	assert_int_equal(sdnotify_watchdog_usec("2000000", "42x", 42), 0);
	assert_int_equal(sdnotify_watchdog_usec("2000000", "-42", 42), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watchdog_usec),
	    cmocka_unit_test(test_watchdog_off),
	    cmocka_unit_test(test_watchdog_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
