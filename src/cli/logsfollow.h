/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot command `leasekeeper logs --follow`. */
/* logsfollow.h: following a job's run in progress from any host. */
#ifndef LOGSFOLLOW_H
#define LOGSFOLLOW_H

struct admin;

/* Exit statuses of `logs --follow` besides 0 (the run ended ok). */
#define LOGSFOLLOW_EXIT_FAILED  1  /* the run failed: its command exited non-zero */
#define LOGSFOLLOW_EXIT_OTHER   2  /* it ended otherwise: timeout, killed, oom, stopped, ... */
#define LOGSFOLLOW_EXIT_NO_RUN  3  /* no run of the job is in progress */
#define LOGSFOLLOW_EXIT_REFUSED 77 /* no credential to read it (EX_NOPERM) */

int logsfollow_run(struct admin *, const char *job, int next);

#endif
