/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (pure logic: no ZooKeeper, event or process calls). */
/*
 * jobhealth.c: whether a start that failed is this host's fault or the job's own, and the
 * worker's health that follows (docs/safety.md, "A host that cannot start jobs").
 *
 * The job's own failures are those its configuration makes on every host alike: the command
 * not found, not executable or not a program, or its arguments and environment too long
 * (exec: ENOENT, EACCES, ENOEXEC, ENOTDIR, ELOOP, ENAMETOOLONG, E2BIG), the workdir missing or closed to the job's user (chdir: ENOENT, ENOTDIR,
 * EACCES). Handing such a tick to the next worker would only fail it there too. Everything
 * else is the host's: the job log cannot be opened (ENOSPC, no inodes, EMFILE), fork or
 * clone fails, the cgroup cannot be made, the user or group is unknown here, setuid fails,
 * exec fails for lack of memory or descriptors. Pure: a unit test drives it.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jobhealth.h"

/* Whether why ends with ": " and the text of one of the errnos in list (ended by 0). */
static int
jobhealth_ends_with_errno(const char *why, const int *list)
{
	size_t n = strlen(why), m;
	const char *text;

	for (; *list != 0; list++) {
		text = strerror(*list);
		m = strlen(text);
		if (n >= m + 2 && strcmp(why + n - m, text) == 0 && why[n - m - 2] == ':' &&
		    why[n - m - 1] == ' ')
			return 1;
	}
	return 0;
}

/*
 * Whether a start failed (why: the supervisor's words, as child.c and supervisor.c write
 * them: "exec CMD: strerror", "chdir DIR: strerror", or a refusal) for a reason of this host.
 */
int
jobhealth_host_failure(const char *why)
{
	static const int exec_own[] = {ENOENT, EACCES,       ENOEXEC, ENOTDIR,
	                               ELOOP,  ENAMETOOLONG, E2BIG,   0};
	static const int dir_own[] = {ENOENT, ENOTDIR, EACCES, 0};

	if (why == NULL)
		return 1;
	if (strncmp(why, "exec ", 5) == 0 && jobhealth_ends_with_errno(why, exec_own))
		return 0;
	/* "chdir /" is the fallback of a job without a workdir: the host's. */
	if (strncmp(why, "chdir ", 6) == 0 && strncmp(why, "chdir /:", 8) != 0 &&
	    jobhealth_ends_with_errno(why, dir_own))
		return 0;
	/* Not a failure of a start but a refusal to start past the lease deadline. */
	if (strstr(why, "lease deadline") != NULL)
		return 0;
	return 1;
}

/*
 * A start failed for why at now: counted; a host failure counts toward unhealthy. 1 if the
 * worker became unhealthy just now.
 */
int
jobhealth_failed(struct jobhealth *h, const char *why, uint64_t now_ms)
{
	if (!jobhealth_host_failure(why)) {
		h->job_failures++;
		return 0;
	}
	h->host_failures++;
	h->in_a_row++;
	snprintf(h->reason, sizeof h->reason, "%s", why != NULL ? why : "?");
	h->probe_at_ms = now_ms + h->probe_ms; /* a trial that failed: the next one later */
	if (h->unhealthy || h->threshold <= 0 || h->in_a_row < h->threshold)
		return 0;
	h->unhealthy = 1;
	h->since_ms = now_ms;
	return 1;
}

/* A start worked: healthy again. 1 if the worker was unhealthy until now. */
int
jobhealth_started(struct jobhealth *h)
{
	int was = h->unhealthy;

	h->in_a_row = 0;
	h->unhealthy = 0;
	return was;
}

/*
 * Unhealthy: whether to take the tick due now as a trial start (ranked as if healthy), at
 * most once per probe_ms; the trial is used up when taken.
 */
int
jobhealth_trial(struct jobhealth *h, uint64_t now_ms)
{
	if (!h->unhealthy || now_ms < h->probe_at_ms)
		return 0;
	h->probe_at_ms = now_ms + h->probe_ms;
	return 1;
}
