/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands). */
/* stoprec.h: a stop request (`leasekeeper stop`) as ZooKeeper holds it, read bounded. */
#ifndef STOPREC_H
#define STOPREC_H

#include <stdint.h>

#include "ctlrec.h"

/*
 * A stop request node: what a run-now request holds ("by", "at", "timeout_ms", "claimed",
 * "result"), and which run it ends ("fence": a run's fencing token; absent: the one under way
 * when the request was made), "kill" (SIGKILL at once) and "no_restart" (the command paused
 * the job before it asked).
 */
struct stoprec {
	struct ctlrec_request req; /* the fields a run-now request has too */
	int64_t fence;             /* the run asked for; -1: the current one */
	int kill;
	int no_restart;
};

int stoprec_parse(const char *data, int len, struct stoprec *);

#endif
