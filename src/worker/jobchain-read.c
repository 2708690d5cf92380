/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobchain-read.c: a chained job's parents' run records: each parent's runs folder listed
 * with a watch, the new records read once, the candidates (the runs whose outcome the child
 * waits for) kept, the newest JOB_CHAIN_KEEP of each parent; and older ones read back when
 * the newest records held fewer candidates than that. Then jobchain.c judges them.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chainrec.h"
#include "jobchain-int.h"
#include "jobpriv.h"
#include "znode.h"

static void job_chain_record_cb(const struct zk_reply *, void *);

/* Whether a parent's run of this outcome is one the child waits for. */
static int
job_chain_wanted(const struct job_chain_parent *p, const struct chainrec_run *r)
{
	return p->mode == JOB_CHAIN_ANY || (p->mode == JOB_CHAIN_OK) == (r->ok != 0);
}

/* Keep a candidate run of p, in order, the newest JOB_CHAIN_KEEP. */
static void
job_chain_keep(struct job_chain_parent *p, const struct chainrec_run *r)
{
	int i;

	for (i = 0; i < p->nruns; i++)
		if (p->runs[i].seq == r->seq)
			return; /* read again after a new session */
	if (p->nruns == JOB_CHAIN_KEEP) {
		if (r->seq < p->runs[0].seq)
			return; /* read back, and older than every one kept */
		memmove(&p->runs[0], &p->runs[1], (JOB_CHAIN_KEEP - 1) * sizeof p->runs[0]);
		p->nruns--;
	}
	for (i = p->nruns; i > 0 && p->runs[i - 1].seq > r->seq; i--)
		p->runs[i] = p->runs[i - 1];
	p->runs[i] = *r;
	p->nruns++;
}

/* Read the record of p's run seq. */
static void
job_chain_read(struct job_chain_parent *p, int64_t seq)
{
	char name[32], *path;

	snprintf(name, sizeof name, "run-%010lld", (long long)seq);
	path = znode_join(p->runs_path, name);
	p->reading++;
	zk_get(p->c->job->zk, path, NULL, job_chain_record_cb, p);
	free(path);
}

/*
 * The newest JOB_CHAIN_KEEP records of a listing held fewer candidates than that (paused or
 * missed runs of the parent, or failed ones for `after = x`), and older records the child
 * has not handled were left unread: read them, the next ones back, so that a parent's runs
 * are not dropped unanswered for the records between them. Slices of at most KEEP records,
 * a round trip each; it ends when KEEP candidates are kept, or at what the chain state
 * handled. 1: reading.
 */
static int
job_chain_read_back(struct job_chain_parent *p)
{
	int64_t floor = p->done > p->floor ? p->done : p->floor, from, seq;

	if (p->back < 0 || p->kept >= JOB_CHAIN_KEEP || p->back - 1 <= floor) {
		p->back = -1;
		return 0;
	}
	from = p->back - (JOB_CHAIN_KEEP - p->kept);
	if (from <= floor)
		from = floor + 1;
	for (seq = from; seq < p->back; seq++)
		job_chain_read(p, seq);
	p->back = from;
	return 1;
}

/* A parent's run record as read. */
static void
job_chain_record_cb(const struct zk_reply *reply, void *arg)
{
	struct job_chain_parent *p = arg;
	struct chainrec_run r;
	int64_t seq = -1;

	p->reading--;
	if (reply->rc == ZOK && reply->stat != NULL &&
	    znode_sequence(znode_basename(reply->path), "run-", &seq) == 0 &&
	    chainrec_parse_run(reply->value, reply->value_len > 0 ? (size_t)reply->value_len : 0,
	                       seq, reply->stat->ctime, &r) &&
	    job_chain_wanted(p, &r)) {
		job_chain_keep(p, &r);
		p->kept += r.seq > p->done; /* one handled already is no candidate */
	}
	if (p->reading == 0 && !job_chain_read_back(p))
		job_chain_eval(p->c);
}

/* The parent's runs changed: list them again. */
static void
job_chain_watch_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	job_chain_list(arg);
}

/* The parent's runs as listed: read the records not read yet (the newest, at most KEEP). */
static void
job_chain_list_cb(const struct zk_reply *reply, void *arg)
{
	struct job_chain_parent *p = arg;
	int64_t seq, newest = p->seen, oldest = INT64_MAX, from;
	int i;

	p->listing = 0;
	if (p->relist) {
		job_chain_list(p);
		return;
	}
	p->absent = reply->rc == ZNONODE;
	if (p->absent)
		job_timer(p->c->timer, JOB_CHAIN_REFEED_MS);
	if (reply->rc != ZOK)
		return; /* no runs yet, or the session's news brings us back */
	for (i = 0; i < reply->nchildren; i++)
		if (znode_sequence(reply->children[i], "run-", &seq) == 0) {
			newest = seq > newest ? seq : newest;
			oldest = seq < oldest ? seq : oldest;
		}
	from = newest - JOB_CHAIN_KEEP > p->seen ? newest - JOB_CHAIN_KEEP : p->seen;
	if (p->back < 0 && from > p->seen && from > p->done && from >= oldest) {
		p->back = from + 1; /* the newest KEEP may not hold KEEP candidates */
		p->floor = p->seen > oldest - 1 ? p->seen : oldest - 1; /* not past the history */
		p->kept = 0;
	}
	for (i = 0; i < reply->nchildren; i++)
		if (znode_sequence(reply->children[i], "run-", &seq) == 0 && seq > from &&
		    seq > p->done)
			job_chain_read(p, seq);
	p->seen = newest;
}

/* List a parent's runs with a watch. */
void
job_chain_list(struct job_chain_parent *p)
{
	if (p->listing) {
		p->relist = 1;
		return;
	}
	p->listing = 1;
	p->relist = 0;
	zk_children(p->c->job->zk, p->runs_path, job_chain_watch_cb, job_chain_list_cb, p);
}
