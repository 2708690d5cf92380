/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper pause, resume, stop --no-restart`). */
/* pausewr.h: the one read-modify-write of a job record's "paused" the commands share. */
#ifndef PAUSEWR_H
#define PAUSEWR_H

#include <jansson.h>

#include "zk.h"

enum pausewr_result {
	PAUSEWR_WRITTEN,    /* paused (or resumed) now */
	PAUSEWR_ALREADY,    /* paused already: who paused it first stays on record */
	PAUSEWR_NOT_PAUSED, /* resume: it was not paused; nothing written */
	PAUSEWR_NO_JOB,     /* no job record, and not to be created */
	PAUSEWR_REFUSED,    /* not a job record, or of a newer format: message in why */
	PAUSEWR_FAILED,     /* ZooKeeper failed the read or the write (reply) */
};

/* One pause or resume of a job record: fill in, then pausewr_start. */
struct pausewr {
	struct zk *zk;
	const char *path; /* the job record */
	const char *job;
	const char *by;
	int resume;       /* clear "paused" instead of setting it */
	int stop_running; /* the pause asks the workers to stop the runs under way */
	int may_create;   /* create the record when there is none (a job the configuration knows) */
	/* How it ended: paused is the "paused" object written or found (borrowed until done
	 * returns); why a message for PAUSEWR_REFUSED, or for PAUSEWR_FAILED what failed
	 * ("read", "write") with reply. */
	void (*done)(struct pausewr *, enum pausewr_result, const json_t *paused, const char *why,
	             const struct zk_reply *reply);
	void *arg;
	int races;
	json_t *written; /* the "paused" object being written */
};

void pausewr_start(struct pausewr *);

#endif
