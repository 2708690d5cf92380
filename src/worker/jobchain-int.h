/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* jobchain-int.h: what jobchain.c and jobchain-read.c share; no one else includes it. */
#ifndef JOBCHAIN_INT_H
#define JOBCHAIN_INT_H

#include <stdint.h>

#include <jansson.h>

#include "chainrec.h"

struct job;
struct event;

#define JOB_CHAIN_KEEP      32   /* candidate runs of one parent kept, the newest */
#define JOB_CHAIN_REFEED_MS 2000 /* the same generation is handed over again after this */
#define JOB_CHAIN_RACES     10   /* versioned writes lost in a row, at most */

enum job_chain_mode { JOB_CHAIN_OK, JOB_CHAIN_ANY, JOB_CHAIN_FAILED };

/* One parent: its runs folder, what was read of it. */
struct job_chain_parent {
	struct job_chain *c;
	char *job;
	enum job_chain_mode mode;
	char *runs_path;
	int listing, relist; /* a listing under way; the watch fired meanwhile */
	int reading;         /* records being read */
	int absent;          /* no runs folder yet: no watch is left on it, list it again later */
	int64_t seen;        /* the newest sequence number asked for */
	int64_t done;        /* the newest handled, as last read from the chain state */
	int64_t back, floor; /* reading back: the oldest asked for, and where to stop; -1: not */
	int kept;            /* candidates kept since the listing that began reading back */
	struct chainrec_run runs[JOB_CHAIN_KEEP]; /* candidates, oldest first */
	int nruns;
};

/*
 * A claim or a mark (missed, paused) of one generation, or the hand-back of a claim ("back"):
 * read, decide, write at the version.
 */
struct job_chain_op {
	struct job_chain *c;
	const char *how; /* "run", "missed", "paused", "back" */
	struct chainrec_gen gen;
	int races, maybe_set, waiting;
	int detached; /* a claim or hand-back the machine let go (ABANDON): it hears nothing */
	int unknown;  /* a claim whose fate the session's end left unknown: its entry stays */
	int keep;     /* a hand-back that found the claim taken again here: that one's entry */
	struct runjournal_left *left; /* a hand-back of a dead predecessor's claim (journal) */
	char *before; /* a claim: the state as read before it, which a hand-back writes again */
	struct job_chain_op *next;
};

struct job_chain {
	struct job *job;
	int n;
	struct job_chain_parent p[CHAINREC_MAX_PARENTS];
	char *state_path;
	struct event *timer;
	int reading, reread;     /* a read of the chain state for a generation */
	int watching;            /* a watch is set on the chain state */
	int known;               /* the chain state was read once: p->done is what it says */
	json_t *state;           /* ... and as last read (its "ids": runs handled) */
	int refused;             /* ... of a newer format (said once) */
	struct chainrec_gen fed; /* the generation handed to the machine last */
	uint64_t fed_ms;
	struct chainrec_gen run; /* the generation claimed: the run's parents */
	int have_run;
	char *before; /* ... and the chain state before its claim (a hand-back's) */
	struct job_chain_op *ops;
};

/* jobchain.c */
void job_chain_eval(struct job_chain *);

/* jobchain-read.c: the parents' run records */
void job_chain_list(struct job_chain_parent *);

#endif
