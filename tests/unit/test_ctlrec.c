/* SPDX-License-Identifier: Apache-2.0 */
/* test_ctlrec.c: control records as read back (run-now, stop, params, <root>/roles). */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctlrec.h"
#include "paramrec.h"
#include "rolesrec.h"
#include "stoprec.h"
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

/* A stop request: the run it names, kill, no_restart; anything else insane is absent. */
static void
test_stop_request(void **state)
{
	struct stoprec r;
	const char *ok = "{\"by\":\"ops\",\"fence\":42,\"kill\":true,\"no_restart\":true,"
	                 "\"claimed\":{\"node\":\"a\"}}";
	const char *bad = "{\"fence\":-5,\"kill\":1,\"no_restart\":\"yes\"}";

	(void)state;
	assert_int_equal(stoprec_parse(ok, (int)strlen(ok), &r), 1);
	assert_int_equal(r.fence, 42);
	assert_int_equal(r.kill, 1);
	assert_int_equal(r.no_restart, 1);
	assert_string_equal(r.req.by, "ops");
	assert_int_equal(r.req.claimed, 1);
	assert_int_equal(stoprec_parse(bad, (int)strlen(bad), &r), 1);
	assert_int_equal(r.fence, -1);
	assert_int_equal(r.kill, 0);
	assert_int_equal(r.no_restart, 0);
	assert_int_equal(stoprec_parse("[1]", 3, &r), 0);
	assert_int_equal(stoprec_parse("{\"fence\":", 10, &r), 0);
}

/* A request's params: declared ones pass with the defaults filled in; anything else is refused. */
static void
test_params(void **state)
{
	char *declared[] = {"TARGET", "DRY_RUN=false", NULL}, **env, why[160];
	json_t *given = json_pack("{s:s}", "TARGET", "db2"), *values;
	int i;
	static const char *bad[] = {"[1]", "{\"NOPE\":\"1\"}", "{\"target\":\"1\"}",
	                            "{\"TARGET\":1}", NULL};

	(void)state;
	assert_int_equal(paramrec_resolve(given, declared, &env, &values, why, sizeof why), 1);
	assert_string_equal(env[0], "LEASEKEEPER_PARAM_TARGET=db2");
	assert_string_equal(env[1], "LEASEKEEPER_PARAM_DRY_RUN=false");
	assert_null(env[2]);
	assert_string_equal(json_string_value(json_object_get(values, "DRY_RUN")), "false");
	for (i = 0; env[i] != NULL; i++)
		free(env[i]);
	free(env);
	json_decref(values);
	json_decref(given);
	assert_int_equal(paramrec_resolve(NULL, declared, &env, &values, why, sizeof why), 1);
	assert_string_equal(env[0], "LEASEKEEPER_PARAM_DRY_RUN=false"); /* TARGET: no default */
	assert_null(env[1]);
	free(env[0]);
	free(env);
	json_decref(values);
	for (i = 0; bad[i] != NULL; i++) {
		given = json_loads(bad[i], 0, NULL);
		assert_int_equal(paramrec_resolve(given, declared, &env, &values, why, sizeof why),
		                 0);
		assert_null(env);
		assert_true(strlen(why) > 0);
		json_decref(given);
	}
	given = json_pack("{s:s%}", "TARGET", "a\0b", (size_t)3);
	assert_int_equal(paramrec_resolve(given, declared, &env, &values, why, sizeof why), 0);
	json_decref(given);
}

/* <root>/roles as a command reads it: what the worker writes, and what it must not believe. */
static void
test_roles(void **state)
{
	const char *w = "leasekeeper:AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	           *rd = "reader:CCCCCCCCCCCCCCCCCCCCCCCCCCC=";
	const char *op = "operator:BBBBBBBBBBBBBBBBBBBBBBBBBBB=";
	struct rolesrec r;
	const char *text;
	char *data;

	(void)state;
	data = rolesrec_dump(w, rd);
	assert_int_equal(rolesrec_parse(data, (int)strlen(data), op, &r), 1);
	assert_string_equal(r.workers, w);
	assert_string_equal(r.reader, rd);
	/* The workers' own credential: no roles to add. */
	assert_int_equal(rolesrec_parse(data, (int)strlen(data), w, &r), 0);
	assert_string_equal(r.workers, "");
	assert_string_equal(r.reader, "");
	free(data);
	data = rolesrec_dump(w, NULL);
	assert_int_equal(rolesrec_parse(data, (int)strlen(data), NULL, &r), 1);
	assert_string_equal(r.reader, "");
	free(data);
	/* A reader that is us, or not an id, is none; workers that are not an id, nobody. */
	text = "{\"workers\":\"leasekeeper:AAAAAAAAAAAAAAAAAAAAAAAAAAA=\","
	       "\"reader\":\"operator:BBBBBBBBBBBBBBBBBBBBBBBBBBB=\"}";
	assert_int_equal(rolesrec_parse(text, (int)strlen(text), op, &r), 1);
	assert_string_equal(r.reader, "");
	text =
	    "{\"workers\":\"leasekeeper:AAAA\",\"reader\":\"reader:CCCCCCCCCCCCCCCCCCCCCCCCCCC=\"}";
	assert_int_equal(rolesrec_parse(text, (int)strlen(text), op, &r), 0);
	assert_string_equal(r.reader, "");
	assert_int_equal(rolesrec_parse("[1]", 3, op, &r), 0);
	assert_int_equal(rolesrec_parse(NULL, 0, op, &r), 0);
	/* Larger than any roles node: not read. */
	text = "{\"workers\":\"leasekeeper:AAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}";
	assert_int_equal(rolesrec_parse(text, ROLESREC_MAX_DATA + 1, op, &r), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_lifecycle),
	    cmocka_unit_test(test_request_hostile),
	    cmocka_unit_test(test_request_exit),
	    cmocka_unit_test(test_request_invalid),
	    cmocka_unit_test(test_stop_request),
	    cmocka_unit_test(test_params),
	    cmocka_unit_test(test_roles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
