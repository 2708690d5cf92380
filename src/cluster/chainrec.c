/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * chainrec.c: chained jobs' records (`after = JOB`). A child reads its parents' run records
 * (<root>/jobs/<parent>/runs/run-<seq>) to learn which runs ended and how, and claims each
 * generation in its chain state, <root>/jobs/<child>/chain:
 *
 *   {"v": 1, "done": {"build": 41, "test": 17}, "ids": {"build": [RUN_ID, ...], ...},
 *    "last": {"node": N, "key": K, "how": H}}
 *
 * "done" holds, per parent, the sequence number of the newest of its runs handled (run,
 * recorded missed, or let go while paused); a claim moves them forward with a versioned
 * write, as a tick's claim does, so two workers never both run one parent run's child.
 * "ids" holds the last run ids handled per parent: a parent run recorded twice (its worker
 * retried a create whose answer was lost) is one run.
 * "last" names the last claim, so that a worker whose write's answer was lost knows it
 * landed. Anyone who can write to ZooKeeper can write these nodes: everything is bounded
 * and validated here, and these functions touch no network (the fuzzer drives them).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chainrec.h"
#include "format.h"
#include "xmalloc.h"

#define CHAINREC_MAX_DONE 64 /* parents remembered in "done" (and "ids"), at most */
#define CHAINREC_KEEP_IDS 8  /* run ids remembered per parent */

/* Copy s into buf (size) if it is 1..size-1 bytes of the class wanted, else "". */
static void
chainrec_copy(char *buf, size_t size, const char *s, int lower)
{
	size_t i, n = s != NULL ? strlen(s) : 0;

	buf[0] = '\0';
	if (n == 0 || n >= size)
		return;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (lower ? !((c >= 'a' && c <= 'z') || c == '_') : (c < 0x21 || c > 0x7e))
			return;
	}
	memcpy(buf, s, n + 1);
}

/*
 * A parent's run record as a child reads it: 1 when it is a run (it has a run id and an
 * outcome; a missed or paused tick is none), with r filled in; else 0.
 */
int
chainrec_parse_run(const char *data, size_t len, int64_t seq, int64_t ctime_ms,
                   struct chainrec_run *r)
{
	json_t *o;
	int ok = 0;

	memset(r, 0, sizeof *r);
	if (data == NULL || len == 0 || len > CHAINREC_MAX_SIZE)
		return 0;
	o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(o) && format_readable(format_of(o))) {
		chainrec_copy(r->outcome, sizeof r->outcome,
		              json_string_value(json_object_get(o, "outcome")), 1);
		chainrec_copy(r->run_id, sizeof r->run_id,
		              json_string_value(json_object_get(o, "run_id")), 0);
		ok = r->outcome[0] != '\0' && r->run_id[0] != '\0' &&
		     strcmp(r->outcome, "missed") != 0 && strcmp(r->outcome, "paused") != 0;
	}
	if (o != NULL)
		json_decref(o);
	r->seq = seq;
	r->ctime_ms = ctime_ms;
	r->ok = ok && strcmp(r->outcome, "ok") == 0;
	return ok;
}

/* "ids" as read: per parent, the last run ids handled (short printable strings), bounded. */
static json_t *
chainrec_parse_ids(const json_t *in)
{
	json_t *out = json_object(), *list, *v, *keep;
	const char *key;
	size_t i, from;

	json_object_foreach((json_t *)in, key, list) {
		if (json_object_size(out) >= CHAINREC_MAX_DONE)
			break;
		if (strlen(key) == 0 || strlen(key) > CHAINREC_MAX_JOB || !json_is_array(list))
			continue;
		keep = json_array();
		from = json_array_size(list) > CHAINREC_KEEP_IDS
		           ? json_array_size(list) - CHAINREC_KEEP_IDS
		           : 0;
		for (i = from; i < json_array_size(list); i++) {
			char id[CHAINREC_MAX_ID + 1];

			v = json_array_get(list, i);
			chainrec_copy(id, sizeof id, json_string_value(v), 0);
			if (id[0] != '\0')
				json_array_append_new(keep, json_string(id));
		}
		json_object_set_new(out, key, keep);
	}
	return out;
}

/*
 * Whether the run id was handled for parent already: a parent's run recorded twice (its
 * worker retried the record's create after a lost answer) still starts one child run.
 */
int
chainrec_handled_id(const json_t *state, const char *parent, const char *run_id)
{
	json_t *list = json_object_get(json_object_get(state, "ids"), parent), *v;
	size_t i;

	json_array_foreach(list, i, v) {
		if (strcmp(json_string_value(v), run_id) == 0)
			return 1;
	}
	return 0;
}

/*
 * A chain state as read, normalized to {"done": {...}, "last": {...}}; NULL when it is of a
 * format this release cannot read (nothing is claimed over it). Corrupt data reads as empty.
 */
json_t *
chainrec_parse_state(const char *data, size_t len)
{
	json_t *in = NULL, *out = json_object(), *done = json_object(), *v, *last;
	const char *key;

	if (data != NULL && len > 0 && len <= CHAINREC_MAX_SIZE)
		in = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_object(in) && !format_readable(format_of(in))) {
		json_decref(in);
		json_decref(out);
		json_decref(done);
		return NULL;
	}
	json_object_foreach(json_object_get(in, "done"), key, v) {
		if (json_object_size(done) >= CHAINREC_MAX_DONE)
			break;
		if (strlen(key) > 0 && strlen(key) <= CHAINREC_MAX_JOB && json_is_integer(v) &&
		    json_integer_value(v) >= 0)
			json_object_set(done, key, v);
	}
	json_object_set_new(out, "done", done);
	json_object_set_new(out, "ids", chainrec_parse_ids(json_object_get(in, "ids")));
	last = json_object_get(in, "last");
	if (json_is_object(last))
		json_object_set_new(out, "last",
		                    json_pack("{s:s?, s:s?}", "node",
		                              json_string_value(json_object_get(last, "node")),
		                              "key",
		                              json_string_value(json_object_get(last, "key"))));
	if (in != NULL)
		json_decref(in);
	return out;
}

/* The newest run of parent handled, by its sequence number; -1 when none. */
int64_t
chainrec_done(const json_t *state, const char *parent)
{
	json_t *v = json_object_get(json_object_get(state, "done"), parent);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* A generation's key: "job:seq,job:seq" (caller frees). */
static char *
chainrec_key(const struct chainrec_gen *g)
{
	size_t size = 1, i;
	char *key, *p;

	for (i = 0; i < (size_t)g->n; i++)
		size += strlen(g->p[i].job) + 24;
	p = key = xmalloc(size);
	*p = '\0';
	for (i = 0; i < (size_t)g->n; i++)
		p += snprintf(p, size - (size_t)(p - key), "%s%s:%lld", i > 0 ? "," : "",
		              g->p[i].job, (long long)g->p[i].run.seq);
	return key;
}

/*
 * Claim generation g for node in state (how: "run", "missed", "paused"): CHAINREC_CLAIM
 * when no parent's run of it was handled (state then holds the claim, to write),
 * CHAINREC_OURS when node's earlier write of it landed, CHAINREC_TAKEN otherwise.
 */
enum chainrec_verdict
chainrec_claim(json_t *state, const struct chainrec_gen *g, const char *node, const char *how)
{
	json_t *last = json_object_get(state, "last"), *done = json_object_get(state, "done");
	char *key = chainrec_key(g);
	const char *lnode = json_string_value(json_object_get(last, "node")),
	           *lkey = json_string_value(json_object_get(last, "key"));
	int i;

	if (lnode != NULL && lkey != NULL && strcmp(lnode, node) == 0 && strcmp(lkey, key) == 0) {
		free(key);
		return CHAINREC_OURS;
	}
	for (i = 0; i < g->n; i++) {
		if (chainrec_done(state, g->p[i].job) >= g->p[i].run.seq ||
		    chainrec_handled_id(state, g->p[i].job, g->p[i].run.run_id)) {
			free(key);
			return CHAINREC_TAKEN;
		}
	}
	for (i = 0; i < g->n; i++) {
		json_t *ids = json_object_get(json_object_get(state, "ids"), g->p[i].job);

		json_object_set_new(done, g->p[i].job, json_integer(g->p[i].run.seq));
		if (ids == NULL) {
			ids = json_array();
			json_object_set_new(json_object_get(state, "ids"), g->p[i].job, ids);
		}
		json_array_append_new(ids, json_string(g->p[i].run.run_id));
		while (json_array_size(ids) > CHAINREC_KEEP_IDS)
			json_array_remove(ids, 0);
	}
	json_object_set_new(state, "last",
	                    json_pack("{s:s, s:s, s:s}", "node", node, "key", key, "how", how));
	free(key);
	return CHAINREC_CLAIM;
}

/* The state's JSON, to write (caller frees). */
char *
chainrec_dump(const json_t *state)
{
	json_t *o = json_deep_copy(state);
	char *data;

	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return data;
}

/* The parents' run ids, comma-separated (LEASEKEEPER_PARENT_RUN; caller frees). */
char *
chainrec_ids(const struct chainrec_gen *g)
{
	size_t size = 1, i;
	char *ids, *p;

	for (i = 0; i < (size_t)g->n; i++)
		size += strlen(g->p[i].run.run_id) + 1;
	p = ids = xmalloc(size);
	*p = '\0';
	for (i = 0; i < (size_t)g->n; i++)
		p += snprintf(p, size - (size_t)(p - ids), "%s%s", i > 0 ? "," : "",
		              g->p[i].run.run_id);
	return ids;
}

/* The generation for a run record: [{"job", "run_id", "outcome"}, ...]. */
json_t *
chainrec_gen_json(const struct chainrec_gen *g)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < g->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "job", g->p[i].job, "run_id",
		                                   g->p[i].run.run_id, "outcome",
		                                   g->p[i].run.outcome));
	return a;
}
