/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* ctlrec.h: the cluster-wide controls as ZooKeeper holds them (pause, drain), read bounded. */
#ifndef CTLREC_H
#define CTLREC_H

#include <stdint.h>

#define CTLREC_MAX_SIZE    65536        /* bytes of a control node parsed; larger is ignored */
#define CTLREC_MAX_DRAIN_S (30 * 86400) /* a drain deadline longer than this is none */

#define CTLREC_MAX_BY       128          /* bytes of a request's "by" and "node" kept */
#define CTLREC_MAX_REQUESTS 32           /* run-now requests a job's folder holds at most */
#define CTLREC_MAX_WAIT_MS  (86400000LL) /* a request's timeout_ms is at most a day */
#define CTLREC_MAX_REQUEST  4096         /* bytes of a run-now request node a worker reads */

/* A run-now request node, <root>/jobs/<job>/requests/req-<seq>, as read (bounded). */
struct ctlrec_request {
	int valid;                     /* a JSON object no larger than CTLREC_MAX_SIZE */
	int format;                    /* its format version (format.h); the rest is read only
	                                  if format_readable(format) */
	char by[CTLREC_MAX_BY + 1];    /* who asked; "?" when absent or not a sane string */
	int64_t timeout_ms;            /* how long a worker may wait for the lease; -1: none */
	int force;                     /* "force": true: run it even if the job is paused */
	int claimed;                   /* "claimed": a worker took it */
	char node[CTLREC_MAX_BY + 1];  /* ... that worker's node id; "" when unknown */
	int done;                      /* "result": the worker reported how it ended */
	char outcome[24];              /* the result's outcome, [a-z_] only; "unknown" if not */
	int exit_status;               /* 0..255; -1: none */
	int signal;                    /* 1..127; -1: none */
	char error[CTLREC_MAX_BY + 1]; /* the result's error, bounded; "" if none */
};

int ctlrec_request(const char *data, int len, struct ctlrec_request *);
const char *ctlrec_request_invalid(const char *data, int len);
int ctlrec_request_exit(const struct ctlrec_request *);
int ctlrec_paused(const char *data, int len, int *stop_running);
int64_t ctlrec_drain_deadline_ms(const char *data, int len);

#endif
