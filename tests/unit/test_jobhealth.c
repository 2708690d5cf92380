/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jobhealth.c: whose fault a failed start is (jobhealth_host_failure: the host's, to
 * give the tick back, or the job's own, to fail it as before), and the worker's health: N
 * host failures in a row make it unhealthy, a start that works heals it, a trial at most
 * once per probe.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jobhealth.h"

/* "what arg: strerror(e)", as child.c writes it. */
static const char *
why(const char *what, const char *arg, int e)
{
	static char buf[256];

	snprintf(buf, sizeof buf, "%s %s: %s", what, arg, strerror(e));
	return buf;
}

static void
test_whose_fault(void **state)
{
	(void)state;
	/* The job's own: the same on every host. */
	assert_false(jobhealth_host_failure(why("exec", "/no/such/cmd", ENOENT)));
	assert_false(jobhealth_host_failure(why("exec", "/etc/passwd", EACCES)));
	assert_false(jobhealth_host_failure(why("exec", "/bin/x", ENOEXEC)));
	assert_false(jobhealth_host_failure(why("exec", "/bin/x", E2BIG)));
	assert_false(jobhealth_host_failure(why("chdir", "/no/such/dir", ENOENT)));
	assert_false(jobhealth_host_failure(why("chdir", "/root/x", EACCES)));
	/* This host's. */
	assert_true(jobhealth_host_failure(why("exec", "/bin/true", ENOMEM)));
	assert_true(jobhealth_host_failure(why("exec", "/bin/true", EMFILE)));
	assert_true(jobhealth_host_failure(why("chdir", "/", ENOENT))); /* no workdir: "/" */
	assert_true(jobhealth_host_failure(why("unknown user", "nobody2", 0)));
	assert_true(jobhealth_host_failure(why("join", "the run's cgroup", ENOSPC)));
	assert_true(jobhealth_host_failure("/var/log/lk/x.log: No space left on device"));
	assert_true(jobhealth_host_failure("fork: Resource temporarily unavailable"));
	assert_true(jobhealth_host_failure("cgroups = required, and runs cannot get a cgroup"));
	assert_true(jobhealth_host_failure(NULL));
	/* Neither: a refusal at the lease deadline is not the host's health. */
	assert_false(jobhealth_host_failure("the lease deadline is too close to start a job"));
	/* An errno text that only ends the words does not count: ": " must come before. */
	assert_true(jobhealth_host_failure("exec /bin/xNo such file or directory"));
}

static void
test_unhealthy_then_healthy(void **state)
{
	struct jobhealth h;
	const char *disk = "/logs/x.log: No space left on device";

	(void)state;
	memset(&h, 0, sizeof h);
	h.threshold = 3;
	h.probe_ms = 10000;
	assert_false(jobhealth_failed(&h, disk, 1000));
	assert_false(jobhealth_failed(&h, why("exec", "/nope", ENOENT), 1100)); /* the job's */
	assert_false(jobhealth_failed(&h, disk, 1200));
	assert_false(h.unhealthy);
	assert_true(jobhealth_failed(&h, disk, 1300)); /* the third host failure in a row */
	assert_true(h.unhealthy);
	assert_int_equal(h.since_ms, 1300);
	assert_int_equal(h.host_failures, 3);
	assert_int_equal(h.job_failures, 1);
	assert_string_equal(h.reason, disk);
	assert_false(jobhealth_failed(&h, disk, 1400)); /* unhealthy already: not again */
	/* A trial at most once per probe, from the last failure on. */
	assert_false(jobhealth_trial(&h, 5000));
	assert_true(jobhealth_trial(&h, 11400));
	assert_false(jobhealth_trial(&h, 11500));
	assert_true(jobhealth_trial(&h, 21400));
	/* A start that works heals it, once. */
	assert_true(jobhealth_started(&h));
	assert_false(h.unhealthy);
	assert_false(jobhealth_started(&h));
	assert_false(jobhealth_trial(&h, 99999)); /* healthy: no trial */
	/* A failure in between breaks the row. */
	assert_false(jobhealth_failed(&h, disk, 2000));
	assert_false(jobhealth_failed(&h, disk, 2100));
	assert_false(jobhealth_started(&h));
	assert_false(jobhealth_failed(&h, disk, 2200));
	assert_false(h.unhealthy);
	/* unhealthy_after = 0: never. */
	memset(&h, 0, sizeof h);
	assert_false(jobhealth_failed(&h, disk, 1));
	assert_false(jobhealth_failed(&h, disk, 2));
	assert_false(h.unhealthy);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whose_fault),
	    cmocka_unit_test(test_unhealthy_then_healthy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
