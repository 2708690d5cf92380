/* SPDX-License-Identifier: Apache-2.0 */
/* test_format.c: the format version of the nodes leasekeeper writes, and what a reader refuses. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctlrec.h"
#include "format.h"
#include "tickstate.h"

/* format_of_data of a NUL-terminated text. */
static int
fmt(const char *text)
{
	return format_of_data(text, strlen(text));
}

/* No "v" is the previous release's format; this one's and older are read; newer are not. */
static void
test_versions(void **state)
{
	(void)state;
	assert_int_equal(fmt("{\"leases\":1}"), FORMAT_NONE);
	assert_int_equal(fmt("{\"v\":1,\"leases\":1}"), 1);
	assert_int_equal(fmt("{\"v\":2}"), 2);
	assert_true(format_readable(FORMAT_NONE));
	assert_true(format_readable(FORMAT_VERSION));
	assert_false(format_readable(FORMAT_VERSION + 1));
	assert_false(format_readable(FORMAT_INVALID));
	/* Not a version: a string, a fraction, a negative or huge number, null. */
	assert_int_equal(fmt("{\"v\":\"1\"}"), FORMAT_INVALID);
	assert_int_equal(fmt("{\"v\":1.0}"), FORMAT_INVALID);
	assert_int_equal(fmt("{\"v\":-1}"), FORMAT_INVALID);
	assert_int_equal(fmt("{\"v\":99999999999999}"), FORMAT_INVALID);
	assert_int_equal(fmt("{\"v\":null}"), FORMAT_INVALID);
	/* Not an object at all: no format; its reader judges the data (Curator's, garbage). */
	assert_int_equal(fmt("10.0.0.1"), FORMAT_NONE);
	assert_int_equal(fmt("[{\"v\":2}]"), FORMAT_NONE);
	assert_int_equal(format_of_data(NULL, 0), FORMAT_NONE);
	assert_int_equal(format_of_data("{\"v\":2}", FORMAT_MAX_SIZE + 1), FORMAT_NONE);
}

/* What is written carries this release's version, over whatever "v" was there. */
static void
test_stamp(void **state)
{
	json_t *o = json_pack("{s:i, s:s}", "v", 0, "x", "y");
	char *text;

	(void)state;
	format_stamp(o);
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"v\":1,\"x\":\"y\"}");
	assert_int_equal(fmt(text), FORMAT_VERSION);
	free(text);
	json_decref(o);
	format_stamp(NULL); /* not an object: nothing */
}

/* The refusal names the version and says what to do; said once per version. */
static void
test_refusal_once(void **state)
{
	struct format_once once = {0};
	char why[200];

	(void)state;
	format_refusal(2, why, sizeof why);
	assert_non_null(strstr(why, "written by a newer leasekeeper (format 2;"));
	assert_non_null(strstr(why, "docs/upgrading.md"));
	format_refusal(FORMAT_INVALID, why, sizeof why);
	assert_non_null(strstr(why, "unknown format"));
	assert_int_equal(format_warn_once(&once, 1, "x"), 0);
	assert_int_equal(format_warn_once(&once, 2, "x"), 1);
	assert_int_equal(format_warn_once(&once, 2, "x"), 0);
	assert_int_equal(format_warn_once(&once, 3, "x"), 1);
	assert_int_equal(format_warn_once(&once, FORMAT_NONE, "x"), 0); /* readable again */
	assert_int_equal(format_warn_once(&once, 3, "x"), 1);
}

/* A tick state: the previous format and this one read alike; a newer one reads as empty. */
static void
test_tickstate(void **state)
{
	const char *old = "{\"tick\":60,\"runners\":[\"a\"],\"recent\":[60],\"missed\":[]}";
	const char *cur = "{\"v\":1,\"tick\":60,\"runners\":[\"a\"],\"recent\":[60],\"missed\":[]}";
	const char *newer = "{\"v\":2,\"tick\":60,\"runners\":[\"a\"],\"recent\":[60]}";
	struct tickstate st;
	char *out;

	(void)state;
	tickstate_parse(old, strlen(old), &st);
	assert_int_equal(st.format, FORMAT_NONE);
	assert_int_equal(st.tick, 60);
	assert_int_equal(st.flags, 0);
	out = tickstate_dump(&st);
	assert_int_equal(fmt(out), FORMAT_VERSION); /* rewritten in this release's format */
	free(out);
	tickstate_free(&st);
	tickstate_parse(cur, strlen(cur), &st);
	assert_int_equal(st.format, 1);
	assert_int_equal(st.tick, 60);
	assert_int_equal(st.flags, 0);
	tickstate_free(&st);
	tickstate_parse(newer, strlen(newer), &st);
	assert_int_equal(st.format, 2);
	assert_int_equal(st.tick, -1); /* not read: the reader must not claim on it */
	tickstate_free(&st);
}

/* Controls: a newer request is a request, of unknown content; a newer drain has no deadline. */
static void
test_controls(void **state)
{
	const char *req = "{\"v\":2,\"by\":\"ops\",\"claimed\":{\"node\":\"a\"},\"result\":{}}";
	const char *old = "{\"by\":\"ops\",\"timeout_ms\":500}";
	struct ctlrec_request r;

	(void)state;
	assert_int_equal(ctlrec_request(req, (int)strlen(req), &r), 1);
	assert_int_equal(r.format, 2);
	assert_false(r.claimed);
	assert_false(r.done);
	assert_string_equal(r.by, "?");
	assert_int_equal(ctlrec_request(old, (int)strlen(old), &r), 1);
	assert_int_equal(r.format, FORMAT_NONE);
	assert_string_equal(r.by, "ops");
	assert_int_equal(r.timeout_ms, 500);
	assert_int_equal(ctlrec_drain_deadline_ms("{\"deadline_ms\":5}", 17), 5);
	assert_int_equal(ctlrec_drain_deadline_ms("{\"v\":1,\"deadline_ms\":5}", 23), 5);
	assert_int_equal(ctlrec_drain_deadline_ms("{\"v\":2,\"deadline_ms\":5}", 23), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_versions),     cmocka_unit_test(test_stamp),
	    cmocka_unit_test(test_refusal_once), cmocka_unit_test(test_tickstate),
	    cmocka_unit_test(test_controls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
