/* SPDX-License-Identifier: Apache-2.0 */
/* test_ctlrec.c: a run-now request node as read back, and the exit status run-now gives. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctlrec.h"
#include "leasekeeper.h"

/* ctlrec_request of a NUL-terminated text. */
static int
request(const char *text, struct ctlrec_request *r)
{
	return ctlrec_request(text, (int)strlen(text), r);
}

/* A request as made, claimed, and finished. */
static void
test_request_lifecycle(void **state)
{
	struct ctlrec_request r;

	(void)state;
	assert_int_equal(request("{\"by\":\"ops@h\",\"at\":\"x\",\"timeout_ms\":30000}", &r), 1);
	assert_string_equal(r.by, "ops@h");
	assert_int_equal(r.timeout_ms, 30000);
	assert_false(r.claimed);
	assert_false(r.done);
	request("{\"by\":\"ops@h\",\"claimed\":{\"node\":\"alpha\",\"at\":\"y\"}}", &r);
	assert_true(r.claimed);
	assert_string_equal(r.node, "alpha");
	assert_false(r.done);
	request("{\"claimed\":{\"node\":\"alpha\"},\"result\":{\"outcome\":\"failed\","
	        "\"exit_status\":7,\"error\":\"boom\"}}",
	        &r);
	assert_true(r.done);
	assert_string_equal(r.outcome, "failed");
	assert_int_equal(r.exit_status, 7);
	assert_int_equal(r.signal, -1);
	assert_string_equal(r.error, "boom");
}

/* Whatever a forger writes, what comes out is bounded and sane. */
static void
test_request_hostile(void **state)
{
	struct ctlrec_request r;
	char big[400];

	(void)state;
	assert_int_equal(request("[1,2]", &r), 0);
	assert_string_equal(r.by, "?");
	assert_int_equal(request("", &r), 0);
	request("{\"by\":\"\",\"timeout_ms\":0,\"result\":{\"outcome\":\"OK; rm\","
	        "\"exit_status\":256,\"signal\":0}}",
	        &r);
	assert_string_equal(r.by, "?");
	assert_int_equal(r.timeout_ms, -1);
	assert_string_equal(r.outcome, "unknown");
	assert_int_equal(r.exit_status, -1);
	assert_int_equal(r.signal, -1);
	/* A NUL inside a string: jansson refuses the whole document. */
	assert_int_equal(request("{\"by\":\"a\\u0000b\",\"claimed\":{}}", &r), 0);
	assert_false(r.claimed);
	request("{\"timeout_ms\":999999999999,\"claimed\":{\"node\":5}}", &r);
	assert_int_equal(r.timeout_ms, -1);
	assert_true(r.claimed);
	assert_string_equal(r.node, "");
	memset(big, 'x', sizeof big);
	snprintf(big, sizeof big, "{\"by\":\"%0300d\"}", 1);
	request(big, &r);
	assert_string_equal(r.by, "?");
}

/* The exit status of run-now --wait, from the result. */
static void
test_request_exit(void **state)
{
	struct ctlrec_request r;

	(void)state;
	request("{\"result\":{\"outcome\":\"ok\",\"exit_status\":0}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 0);
	request("{\"result\":{\"outcome\":\"restarted\"}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 0);
	request("{\"result\":{\"outcome\":\"failed\",\"exit_status\":3}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 3);
	request("{\"result\":{\"outcome\":\"timeout\",\"signal\":15}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 128 + 15);
	request("{\"result\":{\"outcome\":\"timeout\",\"exit_status\":0}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 1);
	request("{\"result\":{\"outcome\":\"no_lease\"}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), EXIT_TIMEOUT);
	request("{\"result\":{\"outcome\":\"lost\"}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), EXIT_UNAVAILABLE);
	request("{\"result\":{\"outcome\":\"start_failed\"}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), EXIT_CANNOT_RUN);
	request("{\"result\":{}}", &r);
	assert_int_equal(ctlrec_request_exit(&r), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_lifecycle),
	    cmocka_unit_test(test_request_hostile),
	    cmocka_unit_test(test_request_exit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
