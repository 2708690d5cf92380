/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper pause, resume, stop --no-restart`). */
/*
 * pausewr.c: a job's pause is the "paused" object of its record <root>/jobs/<job>; `pause`,
 * `resume` and `stop --no-restart` set or clear it here, one way: read the record, change
 * "paused" and keep whatever else it holds, write it back at the version read, and read
 * again when another writer came first (at most PAUSEWR_MAX_RACES times in a row).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "format.h"
#include "jobrec.h"
#include "pausewr.h"

#define PAUSEWR_MAX_RACES 10 /* versioned writes lost in a row, at most */

static void pausewr_read(struct pausewr *);

/* Tell the caller how it ended, once, and let go of what was being written. */
static void
pausewr_end(struct pausewr *w, enum pausewr_result result, const json_t *paused, const char *why,
            const struct zk_reply *reply)
{
	w->done(w, result, paused, why, reply);
	if (w->written != NULL)
		json_decref(w->written);
	w->written = NULL;
}

/* The write landed, or lost a race (read again). */
static void
pausewr_write_cb(const struct zk_reply *reply, void *arg)
{
	struct pausewr *w = arg;

	if ((reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) &&
	    ++w->races <= PAUSEWR_MAX_RACES) {
		pausewr_read(w);
		return;
	}
	pausewr_end(w, reply->rc == ZOK ? PAUSEWR_WRITTEN : PAUSEWR_FAILED, w->written, "write",
	            reply);
}

/* The record as read, as a JSON object (a new one when there is none); NULL: refused. */
static json_t *
pausewr_record(struct pausewr *w, const struct zk_reply *reply, char *why, size_t size)
{
	json_t *o = NULL;
	char refusal[200];

	if (reply->rc != ZOK || reply->value_len <= 0)
		return json_object();
	if (reply->value_len <= JOBREC_MAX_SIZE)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		snprintf(
		    why, size,
		    "%s is not a job record (not a JSON object): `leasekeeper set-leases %s N` "
		    "writes a sane one",
		    w->path, w->job);
		return NULL;
	}
	if (!format_readable(format_of(o))) {
		/* Written by a newer leasekeeper: writing over it would lose what it says. */
		snprintf(why, size, "%s is %s", w->path,
		         format_refusal(format_of(o), refusal, sizeof refusal));
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The record as it is: set or clear its "paused", keeping whatever else it holds. */
static void
pausewr_read_cb(const struct zk_reply *reply, void *arg)
{
	struct pausewr *w = arg;
	json_t *o, *p, *old;
	char since[40], why[400], *data;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		pausewr_end(w, PAUSEWR_FAILED, NULL, "read", reply);
		return;
	}
	if (reply->rc == ZNONODE && !w->may_create) {
		pausewr_end(w, PAUSEWR_NO_JOB, NULL, NULL, reply);
		return;
	}
	if ((o = pausewr_record(w, reply, why, sizeof why)) == NULL) {
		pausewr_end(w, PAUSEWR_REFUSED, NULL, why, reply);
		return;
	}
	old = json_object_get(o, "paused");
	if (w->resume && old == NULL) {
		json_decref(o);
		pausewr_end(w, PAUSEWR_NOT_PAUSED, NULL, NULL, reply);
		return;
	}
	if (!w->resume && json_is_object(old) &&
	    (!w->stop_running || json_is_true(json_object_get(old, "stop_running")))) {
		pausewr_end(w, PAUSEWR_ALREADY, old, NULL, reply);
		json_decref(o);
		return;
	}
	if (w->resume)
		json_object_del(o, "paused");
	else {
		clock_iso8601(clock_wall_ms(), since, sizeof since);
		p = json_pack("{s:s, s:s}", "by", w->by, "since", since);
		if (w->stop_running)
			json_object_set_new(p, "stop_running", json_true());
		json_object_set_new(o, "paused", p);
		if (w->written != NULL)
			json_decref(w->written);
		w->written = json_incref(p); /* what done is told was written */
	}
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);
	if (reply->rc == ZNONODE)
		zk_create_node(w->zk, w->path, data, (int)strlen(data), ZOO_PERSISTENT,
		               pausewr_write_cb, w);
	else
		zk_set(w->zk, w->path, data, (int)strlen(data), reply->stat->version,
		       pausewr_write_cb, w);
	free(data);
	json_decref(o);
}

static void
pausewr_read(struct pausewr *w)
{
	zk_get(w->zk, w->path, NULL, pausewr_read_cb, w);
}

/* Pause (or resume) the job: w->done is called once with how it ended. */
void
pausewr_start(struct pausewr *w)
{
	w->races = 0;
	pausewr_read(w);
}
