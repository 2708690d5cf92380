/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* leasekeeper.h: definitions every command shares: exit statuses (see leasekeeper(1)), limits. */
#ifndef LEASEKEEPER_H
#define LEASEKEEPER_H

#define EXIT_USAGE          64  /* bad command line (EX_USAGE) */
#define EXIT_UNAVAILABLE    69  /* lease count conflict, or ZooKeeper refused us (EX_UNAVAILABLE) */
#define EXIT_SOFTWARE_ERROR 70  /* the supervisor died (EX_SOFTWARE) */
#define EXIT_CANT_CREATE    73  /* init-auth: the file could not be made (EX_CANTCREAT) */
#define EXIT_TIMEOUT        75  /* exec: no lease within --timeout (EX_TEMPFAIL) */
#define EXIT_CONFIG         78  /* configuration errors (EX_CONFIG) */
#define EXIT_CANNOT_RUN     127 /* exec: the command could not be started, as a shell says */

/*
 * The largest lease count of a job, the same in check, set-leases, exec and the job record
 * read back from ZooKeeper: a record above it is treated as corrupt, never as "no count".
 */
#define LK_MAX_LEASES 10000

/* How long a command (status, set-leases, logs, exec) waits for a first session. */
#define LK_CONNECT_TIMEOUT_S 15

/*
 * The PATH a job starts with, whatever its user (systemd gives every service the same):
 * never the worker's own. A job's env lines or pass_env may replace it.
 */
#define LK_JOB_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#endif
