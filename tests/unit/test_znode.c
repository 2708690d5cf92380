/* SPDX-License-Identifier: Apache-2.0 */
/* test_znode.c: node names, Curator's protected names and lock ordering, lease JSON. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "config.h"
#include "jobrec.h"
#include "lease.h"
#include "xmalloc.h"
#include "znode.h"

static void
test_valid_names(void **state)
{
	char *cause = NULL;

	(void)state;
	assert_true(znode_valid_name("backup", &cause));
	assert_true(znode_valid_name("db.backup-1_x", &cause));
	assert_false(znode_valid_name("", &cause));
	free(cause);
	assert_false(znode_valid_name("a/b", &cause));
	assert_non_null(strstr(cause, "lock_path"));
	free(cause);
	assert_false(znode_valid_name("..", &cause));
	free(cause);
	assert_false(znode_valid_name("tab\there", &cause));
	free(cause);
}

/*
 * Exactly what ZooKeeper's PathUtils.validatePath refuses, checked on UTF-16 units: the
 * edges of each refused range, and UTF-8 that is not well formed.
 */
static void
test_names_zookeeper_refuses(void **state)
{
	static const struct {
		const char *name;
		int ok;
		const char *why;
	} cases[] = {
	    {"caf\xc3\xa9", 1, NULL},
	    {"\xe6\x97\xa5\xe6\x9c\xac", 1, NULL},
	    {"a\x7e", 1, NULL},
	    {"a\x7f", 0, "character 2, U+007F"},
	    {"a\xc2\x80", 0, "character 2, U+0080"},
	    {"a\xc2\x9f", 0, "character 2, U+009F"},
	    {"a\xc2\xa0", 1, NULL},
	    {"\xed\x9f\xbf", 1, NULL},                   /* U+D7FF */
	    {"x\xee\x80\x80", 0, "character 2, U+E000"}, /* private use */
	    {"x\xef\xa3\xbf", 0, "character 2, U+F8FF"},
	    {"\xef\xa4\x80", 1, NULL}, /* U+F900 */
	    {"\xef\xbf\xaf", 1, NULL}, /* U+FFEF */
	    {"\xef\xbf\xb0", 0, "character 1, U+FFF0"},
	    {"\xef\xbf\xbd", 0, "character 1, U+FFFD"},
	    {"rocket-\xf0\x9f\x9a\x80", 0, "character 8, U+1F680"},
	    {"\xf0\x90\x80\x80", 0, "character 1, U+10000"},
	    {"caf\xe9", 0, "is not UTF-8 (byte \\xe9 at byte 4)"},
	    {"\xed\xa0\x80", 0, "is not UTF-8"}, /* an encoded surrogate */
	    {"\xc0\xae", 0, "is not UTF-8"},     /* an overlong "." */
	    {"a\x01", 0, "character 2, U+0001"},
	};
	char *cause;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cause = NULL;
		if (znode_valid_name(cases[i].name, &cause) != cases[i].ok)
			fail_msg("case %zu: want %d, cause %s", i, cases[i].ok,
			         cause != NULL ? cause : "(none)");
		if (!cases[i].ok && strstr(cause, cases[i].why) == NULL)
			fail_msg("case %zu: cause %s lacks %s", i, cause, cases[i].why);
		if (!cases[i].ok && strpbrk(cause, "\x01\x7f") != NULL)
			fail_msg("case %zu: cause quotes a raw control byte", i);
		free(cause);
	}
}

static void
test_valid_paths(void **state)
{
	char *cause = NULL;

	(void)state;
	assert_true(znode_valid_path("/locks/job", &cause));
	assert_false(znode_valid_path("locks/job", &cause));
	assert_non_null(strstr(cause, "start it with '/'"));
	free(cause);
	assert_false(znode_valid_path("/", &cause));
	free(cause);
	assert_false(znode_valid_path("/a//b", &cause));
	free(cause);
	assert_false(znode_valid_path("/a/", &cause));
	free(cause);
	assert_false(znode_valid_path("/zookeeper/quota", &cause));
	free(cause);
	assert_false(znode_valid_path("/a/../b", &cause));
	free(cause);
}

static void
test_uuid(void **state)
{
	char a[ZNODE_UUID_LEN + 1], b[ZNODE_UUID_LEN + 1];

	(void)state;
	znode_uuid(a);
	znode_uuid(b);
	assert_int_equal(strlen(a), 36);
	assert_string_not_equal(a, b);
	assert_int_equal(a[8], '-');
	assert_int_equal(a[14], '4'); /* version 4 */
	assert_true(strchr("89ab", a[19]) != NULL);
}

static void
test_protected(void **state)
{
	const char *uuid = "0f8a3c1e-1111-4222-8333-444455556666";

	(void)state;
	assert_true(
	    znode_is_protected("_c_0f8a3c1e-1111-4222-8333-444455556666-lock-0000000001", uuid));
	assert_false(
	    znode_is_protected("_c_0f8a3c1e-1111-4222-8333-444455556667-lock-0000000001", uuid));
	assert_false(znode_is_protected("lock-0000000001", uuid));
	/* the uuid must be followed by '-' */
	assert_false(znode_is_protected("_c_0f8a3c1e-1111-4222-8333-444455556666xlock-1", uuid));
}

static void
test_sequence(void **state)
{
	int64_t seq;

	(void)state;
	assert_int_equal(znode_sequence("_c_u-lock-0000000042", "lock-", &seq), 0);
	assert_int_equal(seq, 42);
	assert_int_equal(znode_sequence("_c_u-lock-2147483647", "lock-", &seq), 0);
	assert_int_equal(seq, INT32_MAX);
	/* Past the wrap the server writes negative numbers, %010d-style. */
	assert_int_equal(znode_sequence("_c_u-lock--000000042", "lock-", &seq), 0);
	assert_int_equal(seq, -42);
	assert_int_equal(znode_sequence("_c_u-lock--2147483648", "lock-", &seq), 0);
	assert_int_equal(seq, INT32_MIN);
	assert_int_not_equal(znode_sequence("_c_u-lock-", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("_c_u-lock-12x", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("_c_u-lock-99999999999", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("kazoo__lock__0000000001", "lock-", &seq), 0);
	/* Not the server's %010d form: as strings they would not order like numbers. */
	assert_int_not_equal(znode_sequence("_c_u-lock-42", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("_c_u-lock-00000000042", "lock-", &seq), 0);
	/* Nor a second spelling of a wrapped one (found by fuzz_znode): one number, one name. */
	assert_int_not_equal(znode_sequence("_c_u-lock--0000000042", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("_c_u-lock--0000000000", "lock-", &seq), 0);
	assert_int_not_equal(znode_sequence("_c_u-lock--000000000", "lock-", &seq), 0);
	assert_int_equal(znode_sequence("_c_u-lock--1000000000", "lock-", &seq), 0);
	assert_int_equal(seq, -1000000000);
	assert_int_equal(znode_sequence("_c_u-lock--999999999", "lock-", &seq), 0);
	assert_int_equal(seq, -999999999);
	assert_int_not_equal(znode_sequence("_c_u-lock--42", "lock-", &seq), 0);
}

/* Sort a copy and compare with the expected order. */
static void
assert_sorted(const char **in, const char **want, size_t n, const char *base)
{
	char **names = calloc(n, sizeof *names);
	size_t i;

	for (i = 0; i < n; i++)
		names[i] = (char *)in[i];
	znode_sort(names, n, base);
	for (i = 0; i < n; i++)
		assert_string_equal(names[i], want[i]);
	free(names);
}

/*
 * Curator sorts by the text after the LAST occurrence of the lock name, or the whole name
 * without one: the sequence read from there, and the order of names without a sequence.
 */
static void
test_fix_for_sorting(void **state)
{
	const char *in[] = {"m-lock-b", "abc__lock__0000000003", "zz-lock-a"};
	const char *want[] = {"zz-lock-a", "abc__lock__0000000003", "m-lock-b"};
	int64_t seq;

	(void)state;
	assert_int_equal(znode_sequence("_c_x-lock-0000000007", "lock-", &seq), 0);
	assert_int_equal(seq, 7);
	assert_int_equal(znode_sequence("lock-lock-0000000007", "lock-", &seq), 0);
	assert_int_equal(seq, 7);
	assert_int_equal(znode_sequence("_c_x-lease-0000000002", "lease-", &seq), 0);
	assert_int_equal(seq, 2);
	/* No "lock-": sorted by the whole name, "a" < "abc__lock__0000000003" < "b". */
	assert_int_not_equal(znode_sequence("abc__lock__0000000003", "lock-", &seq), 0);
	assert_sorted(in, want, 3, "lock-");
}

static void
test_order_curator(void **state)
{
	/* Different uuids must not matter: only the sequence does. */
	const char *in[] = {"_c_ffff-lock-0000000010", "_c_0000-lock-0000000002",
	                    "_c_aaaa-lock-0000000009", "_c_1111-lock-0000000100"};
	const char *want[] = {"_c_0000-lock-0000000002", "_c_aaaa-lock-0000000009",
	                      "_c_ffff-lock-0000000010", "_c_1111-lock-0000000100"};

	(void)state;
	assert_sorted(in, want, 4, "lock-");
}

static void
test_order_unprotected_and_plain(void **state)
{
	/* A plain "lock-" name (old Curator, no protection) sorts by its sequence too. */
	const char *in[] = {"_c_b-lock-0000000005", "lock-0000000003", "_c_a-lock-0000000004"};
	const char *want[] = {"lock-0000000003", "_c_a-lock-0000000004", "_c_b-lock-0000000005"};

	(void)state;
	assert_sorted(in, want, 3, "lock-");
}

static void
test_order_wrapped(void **state)
{
	/*
	 * After the parent's cversion passes 2^31, suffixes turn negative. They are the
	 * newest nodes: they must sort after every non-negative one (as strings, Curator
	 * would put them first).
	 */
	const char *in[] = {"_c_c--2147483646", "_c_a-lock-2147483646", "_c_d-lock--2147483647",
	                    "_c_b-lock-2147483647", "_c_e-lock--2147483648"};
	const char *want[] = {"_c_a-lock-2147483646", "_c_b-lock-2147483647",
	                      "_c_e-lock--2147483648", "_c_d-lock--2147483647", "_c_c--2147483646"};

	(void)state;
	/* "_c_c--2147483646" has no "lock-": its whole name does not parse: it goes last. */
	assert_sorted(in, want, 5, "lock-");
	/* -1 is 2^32 - 1 unsigned: after 1. */
	assert_sorted((const char *[]){"_c_x-lock--000000001", "_c_y-lock-0000000001"},
	              (const char *[]){"_c_y-lock-0000000001", "_c_x-lock--000000001"}, 2, "lock-");
}

static void
test_order_foreign_last(void **state)
{
	const char *in[] = {"zzz", "_c_a-lock-0000000002", "abc__lock__0000000001",
	                    "_c_b-lock-0000000001"};
	const char *want[] = {"_c_b-lock-0000000001", "_c_a-lock-0000000002",
	                      "abc__lock__0000000001", "zzz"};

	(void)state;
	assert_sorted(in, want, 4, "lock-");
}

static void
test_join_parent(void **state)
{
	char buf[64], *p;

	(void)state;
	p = znode_join("/", "a");
	assert_string_equal(p, "/a");
	free(p);
	p = znode_join("/a/b", "c");
	assert_string_equal(p, "/a/b/c");
	free(p);
	assert_int_equal(znode_parent("/a/b/c", buf, sizeof buf), 0);
	assert_string_equal(buf, "/a/b");
	assert_int_equal(znode_parent("/a", buf, sizeof buf), 0);
	assert_string_equal(buf, "/");
	assert_int_equal(znode_parent("/", buf, sizeof buf), -1);
	assert_string_equal(znode_basename("/a/b/c"), "c");
}

static void
test_lease_data_json(void **state)
{
	char *data = lease_data("alpha", "backup", 1700000000123ULL);
	json_t *o = json_loads(data, 0, NULL);

	(void)state;
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "node")), "alpha");
	assert_string_equal(json_string_value(json_object_get(o, "job")), "backup");
	assert_string_equal(json_string_value(json_object_get(o, "since")),
	                    "2023-11-14T22:13:20.123Z");
	assert_true(json_integer_value(json_object_get(o, "pid")) > 0);
	json_decref(o);
	free(data);
}

static void
test_jobrec_leases(void **state)
{
	(void)state;
	assert_int_equal(jobrec_parse_leases("{\"leases\":3}", 12), 3);
	assert_int_equal(jobrec_parse_leases("{\"x\":1}", 7), 0);
	assert_int_equal(jobrec_parse_leases(NULL, 0), 0);
	/* A count that is there but invalid is corrupt (-1), never "no count" (0). */
	assert_int_equal(jobrec_parse_leases("{\"leases\":0}", 12), -1);
	assert_int_equal(jobrec_parse_leases("not json", 8), -1);
}

/* jobrec_locks_agree on a string (len -1). */
static int
locks_agree(const char *data, int len, const char *ours, char **theirs)
{
	(void)len;
	return jobrec_locks_agree(data, (int)strlen(data), ours, theirs);
}

/* The job record's "locks": canonical, validated, compared (jobrec-data.c). */
static void
test_jobrec_locks(void **state)
{
	const char *mutex = "[{\"path\":\"/lk/mutex/j\",\"mode\":\"mutex\"}]";
	json_t *in;
	char *canon, *theirs;

	(void)state;
	/* Extra keys and key order do not matter; a semaphore keeps its size. */
	in = json_loads("[{\"mode\":\"semaphore\",\"x\":1,\"leases\":3,\"path\":\"/a\"},"
	                "{\"path\":\"/b\",\"mode\":\"read\"}]",
	                0, NULL);
	canon = jobrec_locks_canon(in);
	assert_string_equal(canon, "[{\"path\":\"/a\",\"mode\":\"semaphore\",\"leases\":3},"
	                           "{\"path\":\"/b\",\"mode\":\"read\"}]");
	free(canon);
	json_decref(in);
	/* Not sorted, a path twice, an unknown mode, a bad path, a count on a mutex, none. */
	static const char *const bad[] = {
	    "[{\"path\":\"/b\",\"mode\":\"mutex\"},{\"path\":\"/a\",\"mode\":\"mutex\"}]",
	    "[{\"path\":\"/a\",\"mode\":\"mutex\"},{\"path\":\"/a\",\"mode\":\"read\"}]",
	    "[{\"path\":\"/a\",\"mode\":\"exclusive\"}]",
	    "[{\"path\":\"a/\",\"mode\":\"mutex\"}]",
	    "[{\"path\":\"/a\",\"mode\":\"mutex\",\"leases\":1}]",
	    "[{\"path\":\"/a\",\"mode\":\"semaphore\",\"leases\":0}]",
	    "[{\"path\":\"/a\",\"mode\":\"semaphore\"}]",
	    "[]",
	    "{}",
	    "[\"/a\"]",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		in = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		assert_non_null(in);
		assert_null(jobrec_locks_canon(in));
		json_decref(in);
	}
	/* The record's against ours: the same, none (older, cleared), other, invalid. */
	canon = xstrdup(mutex);
	assert_int_equal(locks_agree("{\"leases\":1,\"locks\":[{\"mode\":\"mutex\","
	                             "\"path\":\"/lk/mutex/j\"}]}",
	                             -1, canon, &theirs),
	                 1);
	assert_null(theirs);
	assert_int_equal(locks_agree("{\"leases\":1,\"lock\":\"/lk/mutex/j\"}", -1, canon, &theirs),
	                 0);
	assert_int_equal(jobrec_locks_agree(NULL, 0, canon, &theirs), 0);
	assert_int_equal(locks_agree("{\"locks\":[{\"path\":\"/lk/rwlock/j\",\"mode\":"
	                             "\"write\"}]}",
	                             -1, canon, &theirs),
	                 -1);
	assert_string_equal(theirs, "[{\"path\":\"/lk/rwlock/j\",\"mode\":\"write\"}]");
	free(theirs);
	assert_int_equal(locks_agree("{\"locks\":\"/lk/mutex/j\"}", -1, canon, &theirs), -1);
	assert_string_equal(theirs, "(not a valid list of locks)");
	free(theirs);
	/* A configuration's locks, in the order of taking (by path) whatever the order written. */
	struct config_lock cl[] = {{NULL, "/lk/semaphore/pool", CONFIG_LOCK_SEMAPHORE, 3},
	                           {NULL, "/lk/rwlock/db", CONFIG_LOCK_READ, 1},
	                           {NULL, "/a/x", CONFIG_LOCK_WRITE, 1}};
	struct config_job cj = {.locks = cl, .nlocks = 3};
	char *mine = jobrec_config_locks(&cj);
	assert_string_equal(mine, "[{\"path\":\"/a/x\",\"mode\":\"write\"},"
	                          "{\"path\":\"/lk/rwlock/db\",\"mode\":\"read\"},"
	                          "{\"path\":\"/lk/semaphore/pool\",\"mode\":\"semaphore\","
	                          "\"leases\":3}]");
	free(mine);
	/* A user that does not say its locks (exec) agrees with any. */
	assert_int_equal(locks_agree("{\"locks\":7}", -1, NULL, &theirs), 1);
	free(canon);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_names),
	    cmocka_unit_test(test_jobrec_locks),
	    cmocka_unit_test(test_names_zookeeper_refuses),
	    cmocka_unit_test(test_valid_paths),
	    cmocka_unit_test(test_uuid),
	    cmocka_unit_test(test_protected),
	    cmocka_unit_test(test_fix_for_sorting),
	    cmocka_unit_test(test_sequence),
	    cmocka_unit_test(test_order_curator),
	    cmocka_unit_test(test_order_unprotected_and_plain),
	    cmocka_unit_test(test_order_wrapped),
	    cmocka_unit_test(test_order_foreign_last),
	    cmocka_unit_test(test_join_parent),
	    cmocka_unit_test(test_lease_data_json),
	    cmocka_unit_test(test_jobrec_leases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
