/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec-runs.c: the run records' folder, <job>/runs: the oldest beyond `history` trimmed,
 * and whether a record whose create's answer was lost landed: its data is looked for among
 * the newest records, newest first, before it is written again, so that a connection lost
 * with the answer does not record a run twice.
 */

#include <stdlib.h>
#include <string.h>

#include "jobrec.h"
#include "xmalloc.h"
#include "znode.h"

#define JOBREC_RUNS_FIND_MAX 256 /* records read at most, newest first */
#define JOBREC_RUNS_TRIM_MAX 100 /* old run records deleted per record written, at most */

struct jobrec_runs_find {
	struct zk *zk;
	char *runs_path;
	char *data; /* the record's data, as its create sent it */
	size_t len;
	char *run_id; /* or NULL: a record whose "run_id" is this (jobrec_runs_find_run) */
	int max;      /* records to read at most */
	char **names;
	int nnames;
	int next; /* the index in names of the record read now */
	jobrec_runs_find_cb cb;
	void *arg;
};

static void jobrec_runs_find_next(struct jobrec_runs_find *);

/* Delete the oldest records beyond history, given the folder's listing (reply). */
void
jobrec_runs_trim(struct zk *zk, const char *runs_path, const struct zk_reply *reply, int history)
{
	char **names, *path;
	int i, excess;

	if (reply->rc != ZOK || reply->nchildren <= history)
		return;
	names = xcalloc((size_t)reply->nchildren, sizeof *names);
	for (i = 0; i < reply->nchildren; i++)
		names[i] = reply->children[i];
	znode_sort(names, (size_t)reply->nchildren, "run-");
	/* Someone may have made thousands: a few at a time, each record trims more. */
	excess = reply->nchildren - history;
	if (excess > JOBREC_RUNS_TRIM_MAX)
		excess = JOBREC_RUNS_TRIM_MAX;
	for (i = 0; i < excess; i++) {
		path = znode_join(runs_path, names[i]);
		zk_delete(zk, path, -1, NULL, NULL);
		free(path);
	}
	free(names);
}

/* Forget a search (NULL is fine); its callback is not called. */
void
jobrec_runs_find_free(struct jobrec_runs_find *f)
{
	int i;

	if (f == NULL)
		return;
	zk_cancel(f->zk, f);
	for (i = 0; i < f->nnames; i++)
		free(f->names[i]);
	free(f->names);
	free(f->runs_path);
	free(f->data);
	free(f->run_id);
	free(f);
}

/* End the search: tell the owner rc and the record's path, if found; then free it. */
static void
jobrec_runs_find_end(struct jobrec_runs_find *f, int rc, const char *found)
{
	f->cb(rc, found, f->arg);
	jobrec_runs_find_free(f);
}

/* Whether a record (untrusted: bounded, parsed) is of the run named run_id. */
static int
jobrec_runs_is_run(const char *value, int len, const char *run_id)
{
	json_t *o, *v;
	int same;

	if (value == NULL || len <= 0 || len > JOBREC_MAX_SIZE)
		return 0;
	if ((o = json_loadb(value, (size_t)len, 0, NULL)) == NULL)
		return 0;
	v = json_object_get(o, "run_id");
	same = json_is_string(v) && strcmp(json_string_value(v), run_id) == 0;
	json_decref(o);
	return same;
}

/* One record read: is it ours? */
static void
jobrec_runs_find_get_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_runs_find *f = arg;
	char *path;

	if (reply->rc != ZOK && reply->rc != ZNONODE && reply->rc != ZNOAUTH) {
		jobrec_runs_find_end(f, reply->rc, NULL); /* the session is away, or closing */
		return;
	}
	if (reply->rc == ZOK &&
	    (f->run_id != NULL ? jobrec_runs_is_run(reply->value, reply->value_len, f->run_id)
	                       : reply->value_len >= 0 && (size_t)reply->value_len == f->len &&
	                             memcmp(reply->value, f->data, f->len) == 0)) {
		path = znode_join(f->runs_path, f->names[f->next]);
		jobrec_runs_find_end(f, ZOK, path);
		free(path);
		return;
	}
	/* Not ours, gone (trimmed), or not ours to read: the next older one. */
	f->next++;
	jobrec_runs_find_next(f);
}

/* Read the next record, newest first, or end the search: not found. */
static void
jobrec_runs_find_next(struct jobrec_runs_find *f)
{
	char *path;

	if (f->next >= f->nnames || f->next >= f->max) {
		jobrec_runs_find_end(f, ZOK, NULL);
		return;
	}
	path = znode_join(f->runs_path, f->names[f->next]);
	zk_get(f->zk, path, NULL, jobrec_runs_find_get_cb, f);
	free(path);
}

/* The listing of the runs: the records named run-<seq>, newest first. */
static void
jobrec_runs_find_children_cb(const struct zk_reply *reply, void *arg)
{
	struct jobrec_runs_find *f = arg;
	int i, n;

	if (reply->rc != ZOK) {
		/* ZNONODE: no runs folder, so no record of ours. */
		jobrec_runs_find_end(f, reply->rc == ZNONODE ? ZOK : reply->rc, NULL);
		return;
	}
	f->names = xcalloc((size_t)reply->nchildren + 1, sizeof *f->names);
	for (i = 0; i < reply->nchildren; i++)
		f->names[i] = xstrdup(reply->children[i]);
	f->nnames = reply->nchildren;
	znode_sort(f->names, (size_t)f->nnames, "run-");
	for (i = 0, n = f->nnames; i < n / 2; i++) {
		char *swap = f->names[i];

		f->names[i] = f->names[n - 1 - i];
		f->names[n - 1 - i] = swap;
	}
	jobrec_runs_find_next(f);
}

/* A search of the newest max records (at most JOBREC_RUNS_FIND_MAX), started. */
static struct jobrec_runs_find *
jobrec_runs_find_new(struct zk *zk, const char *runs_path, const char *data, size_t len,
                     const char *run_id, int max, jobrec_runs_find_cb cb, void *arg)
{
	struct jobrec_runs_find *f = xcalloc(1, sizeof *f);

	f->zk = zk;
	f->runs_path = xstrdup(runs_path);
	f->data = xmalloc(len + 1);
	memcpy(f->data, data, len);
	f->data[len] = '\0';
	f->len = len;
	f->run_id = run_id != NULL ? xstrdup(run_id) : NULL;
	f->max = max < JOBREC_RUNS_FIND_MAX ? max : JOBREC_RUNS_FIND_MAX;
	f->cb = cb;
	f->arg = arg;
	zk_children(zk, runs_path, NULL, jobrec_runs_find_children_cb, f);
	return f;
}

/*
 * Look for a record whose data is data (len bytes) among the newest max (at most
 * JOBREC_RUNS_FIND_MAX) under runs_path. cb gets ZOK and the record's path, or ZOK and NULL (not
 * there), or the error that stopped the search; the search is then over and freed (do not
 * jobrec_runs_find_free it from cb).
 */
struct jobrec_runs_find *
jobrec_runs_find_start(struct zk *zk, const char *runs_path, const char *data, size_t len, int max,
                       jobrec_runs_find_cb cb, void *arg)
{
	return jobrec_runs_find_new(zk, runs_path, data, len, NULL, max, cb, arg);
}

/*
 * The same for the record of the run named run_id, by its "run_id": a record another process
 * may have written, whose bytes are not known here.
 */
struct jobrec_runs_find *
jobrec_runs_find_run(struct zk *zk, const char *runs_path, const char *run_id, int max,
                     jobrec_runs_find_cb cb, void *arg)
{
	return jobrec_runs_find_new(zk, runs_path, "", 0, run_id, max, cb, arg);
}
