/* SPDX-License-Identifier: Apache-2.0 */
/* test_layout.c: the ZooKeeper layout, every path under the root. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "layout.h"

/* Checks and frees a path built by layout.c. */
static void
check_path(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void
test_jobs_and_workers(void **state)
{
	(void)state;
	check_path(layout_jobs("/lk"), "/lk/jobs");
	check_path(layout_job_record("/lk", "backup"), "/lk/jobs/backup");
	check_path(layout_job_state("/lk", "backup"), "/lk/jobs/backup/state");
	check_path(layout_job_runs("/lk", "backup"), "/lk/jobs/backup/runs");
	check_path(layout_job_requests("/lk", "backup"), "/lk/jobs/backup/requests");
	check_path(layout_workers("/lk"), "/lk/workers");
	check_path(layout_worker("/lk", "alpha"), "/lk/workers/alpha");
	check_path(layout_job_record("/a/b", "x"), "/a/b/jobs/x");
}

/* One lease is a mutex, more a semaphore; lock_path overrides both. */
static void
test_lock_path(void **state)
{
	(void)state;
	check_path(layout_lock_dir("/lk", 1), "/lk/mutex");
	check_path(layout_lock_dir("/lk", 2), "/lk/semaphore");
	check_path(layout_lock_path("/lk", "backup", NULL, 1), "/lk/mutex/backup");
	check_path(layout_lock_path("/lk", "backup", NULL, 3), "/lk/semaphore/backup");
	check_path(layout_lock_path("/lk", "backup", "/curator/locks/b", 3), "/curator/locks/b");
	check_path(layout_lock_path("/lk", "backup", "/curator/locks/b", 1), "/curator/locks/b");
}

/* A semaphore's folders sit under its lock path, wherever that is. */
static void
test_semaphore_folders(void **state)
{
	(void)state;
	check_path(layout_semaphore_leases("/lk/semaphore/backup"), "/lk/semaphore/backup/leases");
	check_path(layout_semaphore_locks("/lk/semaphore/backup"), "/lk/semaphore/backup/locks");
	check_path(layout_semaphore_locks("/curator/b"), "/curator/b/locks");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jobs_and_workers),
	    cmocka_unit_test(test_lock_path),
	    cmocka_unit_test(test_semaphore_folders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
