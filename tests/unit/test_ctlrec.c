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

/* ctlrec_request_invalid of a NUL-terminated text. */
static const char *
invalid(const char *text)
{
	return ctlrec_request_invalid(text, (int)strlen(text));
}

/* What a worker refuses before it acts on a request (issue 22): types, bounds, size. */
static void
test_request_invalid(void **state)
{
	char big[CTLREC_MAX_REQUEST + 16];

	(void)state;
	assert_null(
	    invalid("{\"by\":\"ops\",\"at\":\"2026-01-01T00:00:00Z\",\"timeout_ms\":30000}"));
	assert_null(
	    invalid("{\"by\":\"ops\",\"force\":true,\"claimed\":{},\"result\":{},\"x\":1}"));
	assert_non_null(invalid("not json"));
	assert_non_null(invalid("[1]"));
	assert_non_null(invalid("{}"));                     /* no by */
	assert_non_null(invalid("{\"by\":5}"));             /* by not a string */
	assert_non_null(invalid("{\"by\":\"\"}"));          /* empty */
	assert_non_null(invalid("{\"by\":\"a\\u0000b\"}")); /* a NUL inside */
	assert_non_null(invalid("{\"by\":\"a\",\"at\":5}"));
	assert_non_null(invalid("{\"by\":\"a\",\"timeout_ms\":-1}"));
	assert_non_null(invalid("{\"by\":\"a\",\"timeout_ms\":0}"));
	assert_non_null(invalid("{\"by\":\"a\",\"timeout_ms\":86400001}"));
	assert_non_null(invalid("{\"by\":\"a\",\"timeout_ms\":\"5\"}"));
	assert_non_null(invalid("{\"by\":\"a\",\"force\":\"yes\"}"));
	assert_non_null(invalid("{\"by\":\"a\",\"claimed\":1}"));
	assert_non_null(invalid("{\"by\":\"a\",\"result\":\"ok\"}"));
	assert_null(invalid("{\"by\":\"a\",\"timeout_ms\":86400000}"));
	memset(big, ' ', sizeof big);
	memcpy(big, "{\"by\":\"a\"", 9);
	big[sizeof big - 2] = '}';
	big[sizeof big - 1] = '\0';
	assert_string_equal(invalid(big), "larger than 4096 bytes");
	assert_non_null(ctlrec_request_invalid(NULL, 0));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_lifecycle),
	    cmocka_unit_test(test_request_hostile),
	    cmocka_unit_test(test_request_exit),
	    cmocka_unit_test(test_request_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
