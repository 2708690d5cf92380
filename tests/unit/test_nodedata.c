/* SPDX-License-Identifier: Apache-2.0 */
/* test_nodedata.c: another party's node data, as status shows it and as the worker logs it. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "nodedata.h"
#include "tickstate.h"

/* nodedata_describe of a NUL-terminated text, compared and freed. */
static void
describes_as(const char *data, const char *want)
{
	char *got = nodedata_describe(data, (int)strlen(data));

	assert_string_equal(got, want);
	free(got);
}

/* A log line gets one line of printable text, whatever the node holds. */
static void
test_describe_escapes(void **state)
{
	char *got;

	(void)state;
	describes_as("x\nfake line\r\x1b[2J\"\\", "\"x\\nfake line\\r\\x1b[2J\\\"\\\\\"");
	got = nodedata_describe("a\0b\xff", 4);
	assert_string_equal(got, "\"a\\x00b\\xff\"");
	free(got);
	got = nodedata_describe(NULL, 0);
	assert_string_equal(got, "no data");
	free(got);
	got = nodedata_describe("", 0);
	assert_string_equal(got, "no data");
	free(got);
	/* JSON that is not a worker's node: the text itself, quoted. */
	describes_as("[1]", "\"[1]\"");
	describes_as("{\"pid\":\"7\"}", "\"{\\\"pid\\\":\\\"7\\\"}\"");
}

/* A worker node by what it says of its worker, each string field escaped. */
static void
test_describe_worker_node(void **state)
{
	(void)state;
	describes_as("{\"version\":\"0.1.0\",\"node\":\"a\",\"pid\":42,\"host\":\"h1\","
	             "\"start\":\"2026-01-02T03:04:05.000Z\",\"jobs\":[\"x\"]}",
	             "host \"h1\", pid 42, started \"2026-01-02T03:04:05.000Z\"");
	describes_as("{\"host\":\"h\\nfake line\\u001b\"}", "host \"h\\nfake line\\x1b\"");
	describes_as("{\"pid\":-1}", "pid -1");
}

/* However long the node, the line is bounded: long text keeps its start and end. */
static void
test_describe_bounded(void **state)
{
	size_t n = TICKSTATE_MAX_SIZE;
	char *big = malloc(n + 2), *got;

	(void)state;
	memset(big, '\n', n + 1);
	big[0] = 'A';
	big[n - 1] = 'Z';
	got = nodedata_describe(big, (int)n);
	assert_true(strlen(got) < 200);
	assert_non_null(strstr(got, "..."));
	assert_int_equal(got[1], 'A');
	assert_int_equal(got[strlen(got) - 2], 'Z');
	assert_null(strchr(got, '\n'));
	free(got);
	got = nodedata_describe(big, (int)n + 1);
	assert_string_equal(got, "65537 bytes of data");
	free(got);
	free(big);
}

/* status: the node's fields, never over what status found itself; text as is; huge named. */
static void
test_merge(void **state)
{
	json_t *o = json_pack("{s:s, s:I}", "znode", "n1", "session", (json_int_t)7);
	const char *text;
	char *big;

	(void)state;
	text = "{\"znode\":\"forged\",\"session\":1,\"stranger\":\"x\",\"pid\":3}";
	nodedata_merge(o, text, (int)strlen(text));
	assert_string_equal(json_string_value(json_object_get(o, "znode")), "n1");
	assert_int_equal(json_integer_value(json_object_get(o, "session")), 7);
	assert_null(json_object_get(o, "stranger"));
	assert_int_equal(json_integer_value(json_object_get(o, "pid")), 3);
	json_decref(o);

	o = json_object();
	nodedata_merge(o, "10.0.0.1", 8);
	assert_string_equal(json_string_value(json_object_get(o, "data")), "10.0.0.1");
	json_decref(o);

	o = json_object();
	big = calloc(1, TICKSTATE_MAX_SIZE + 1);
	nodedata_merge(o, big, TICKSTATE_MAX_SIZE + 1);
	assert_int_equal(json_integer_value(json_object_get(o, "data_too_large")),
	                 TICKSTATE_MAX_SIZE + 1);
	assert_null(json_object_get(o, "data"));
	free(big);
	json_decref(o);
}

/* status --json: no integer beyond 2^53 survives a merge; a tick gains its RFC 3339 time. */
static void
test_merge_safe(void **state)
{
	json_t *o = json_object(), *list;
	const char *text;

	(void)state;
	text = "{\"big\":9007199254740993,\"neg\":-9223372036854775807,\"ok\":9007199254740992,"
	       "\"deep\":{\"l\":[1,18446744073709551,{\"x\":72057594037927936}]},\"tick\":60}";
	nodedata_merge(o, text, (int)strlen(text));
	assert_string_equal(json_string_value(json_object_get(o, "big")), "9007199254740993");
	assert_string_equal(json_string_value(json_object_get(o, "neg")), "-9223372036854775807");
	assert_int_equal(json_integer_value(json_object_get(o, "ok")), 9007199254740992LL);
	list = json_object_get(json_object_get(o, "deep"), "l");
	assert_int_equal(json_integer_value(json_array_get(list, 0)), 1);
	assert_string_equal(json_string_value(json_array_get(list, 1)), "18446744073709551");
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 2), "x")),
	                    "72057594037927936");
	assert_int_equal(json_integer_value(json_object_get(o, "tick")), 60);
	assert_string_equal(json_string_value(json_object_get(o, "tick_time")),
	                    "1970-01-01T00:01:00.000Z");
	json_decref(o);

	/* A record's own tick_time stands; a tick beyond the year 9999 gets none. */
	o = json_object();
	text = "{\"tick\":60,\"tick_time\":\"given\"}";
	nodedata_merge(o, text, (int)strlen(text));
	assert_string_equal(json_string_value(json_object_get(o, "tick_time")), "given");
	json_decref(o);
	o = json_object();
	text = "{\"tick\":253402300800}";
	nodedata_merge(o, text, (int)strlen(text));
	assert_null(json_object_get(o, "tick_time"));
	json_decref(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_describe_escapes), cmocka_unit_test(test_describe_worker_node),
	    cmocka_unit_test(test_describe_bounded), cmocka_unit_test(test_merge),
	    cmocka_unit_test(test_merge_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
