/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * tickstate.c: a job's tick state read from ZooKeeper, bounded, and the claim computed on it.
 *
 * Anyone who can write to ZooKeeper can write <root>/jobs/<job>/state, so what is read is
 * bounded before anything loops over it: the node's size, each list's length, each entry's
 * type. A claim is computed in O(history + TICKSTATE_MAX_LIST) whatever the state holds and
 * however far the clock moved since the last claim: the skipped ticks are found walking back
 * from the tick claimed, never forward from the last one. A claimed tick beyond the horizon
 * (a few ticks after now) cannot have been claimed by a sane clock: it is overridden, or one
 * bad write (or a worker started once with its clock years ahead) would stop the job for good.
 * These functions touch no network, so that unit tests and the fuzzer can drive them.
 */

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "schedule.h"
#include "tickstate.h"

/* The list under key, of valid entries only (ticks >= 0, or short strings), the newest kept. */
static json_t *
tickstate_list(json_t *o, const char *key, int strings, int *flags)
{
	json_t *in = json_object_get(o, key), *out = json_array(), *v;
	size_t i, n, from = 0;

	if (in == NULL)
		return out;
	if (!json_is_array(in)) {
		*flags |= TICKSTATE_TRUNCATED;
		return out;
	}
	n = json_array_size(in);
	if (n > TICKSTATE_MAX_LIST) {
		*flags |= TICKSTATE_TRUNCATED;
		from = n - TICKSTATE_MAX_LIST;
	}
	for (i = from; i < n; i++) {
		v = json_array_get(in, i);
		if (strings ? json_is_string(v) && json_string_length(v) > 0 &&
		                  json_string_length(v) <= TICKSTATE_MAX_NODE
		            : json_is_integer(v) && json_integer_value(v) >= 0)
			json_array_append(out, v);
		else
			*flags |= TICKSTATE_TRUNCATED;
	}
	return out;
}

/* Parse a state node's data into st (never fails: what cannot be read is read as empty). */
void
tickstate_parse(const char *data, size_t len, struct tickstate *st)
{
	json_t *o = NULL, *t;

	memset(st, 0, sizeof *st);
	st->tick = -1;
	if (len > TICKSTATE_MAX_SIZE)
		st->flags |= TICKSTATE_CORRUPT;
	else if (data != NULL && len > 0) {
		o = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(o))
			st->flags |= TICKSTATE_CORRUPT;
	}
	st->o = json_object();
	st->format = format_of(o);
	if (json_is_object(o) && !format_readable(st->format)) {
		json_decref(o); /* not ours to read, nor to repair */
		o = NULL;
	}
	if (json_is_object(o)) {
		t = json_object_get(o, "tick");
		if (json_is_integer(t) && json_integer_value(t) >= 0)
			st->tick = json_integer_value(t);
		else if (t != NULL)
			st->flags |= TICKSTATE_TRUNCATED;
	}
	json_object_set_new(st->o, "runners", tickstate_list(o, "runners", 1, &st->flags));
	json_object_set_new(st->o, "recent", tickstate_list(o, "recent", 0, &st->flags));
	json_object_set_new(st->o, "missed", tickstate_list(o, "missed", 0, &st->flags));
	/* Who gave the tick back (tickstate_hand_back): absent in older states, read as none. */
	json_object_set_new(st->o, "handed", tickstate_list(o, "handed", 1, &st->flags));
	/* The newest tick forgotten from "missed" (tickstate_add_missed): absent in older states. */
	t = json_is_object(o) ? json_object_get(o, "settled") : NULL;
	if (json_is_integer(t) && json_integer_value(t) >= 0)
		json_object_set(st->o, "settled", t);
	else if (t != NULL)
		st->flags |= TICKSTATE_TRUNCATED;
	if (o != NULL)
		json_decref(o);
}

/* Free what tickstate_parse made. */
void
tickstate_free(struct tickstate *st)
{
	if (st->o != NULL)
		json_decref(st->o);
	st->o = NULL;
}

/* Whether a (bounded) list of ticks holds tick. */
static int
tickstate_has_tick(const json_t *list, int64_t tick)
{
	size_t i, n = json_array_size(list);

	for (i = 0; i < n; i++) {
		if (json_integer_value(json_array_get(list, i)) == tick)
			return 1;
	}
	return 0;
}

/* Append tick to a list of ticks, keeping the newest TICKSTATE_KEEP_TICKS. */
static void
tickstate_add_tick(json_t *list, int64_t tick)
{
	json_array_append_new(list, json_integer(tick));
	while (json_array_size(list) > TICKSTATE_KEEP_TICKS)
		json_array_remove(list, 0);
}

/*
 * The newest tick marked missed and then forgotten (the list keeps TICKSTATE_KEEP_TICKS):
 * every tick after the last claimed, up to it, was claimed or recorded missed once. A claim
 * does not name those as skipped, nor does a mark record one again, however long a pause or
 * a wait for a lease marked ticks one by one. -1: none.
 */
static int64_t
tickstate_settled(const struct tickstate *st)
{
	json_t *v = json_object_get(st->o, "settled");

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Drop the oldest entries of the missed list o holds beyond TICKSTATE_KEEP_TICKS: settled. */
static void
tickstate_forget_missed(json_t *o)
{
	json_t *missed = json_object_get(o, "missed"), *v = json_object_get(o, "settled");
	int64_t settled = json_is_integer(v) ? json_integer_value(v) : -1, x;

	while (json_array_size(missed) > TICKSTATE_KEEP_TICKS) {
		x = json_integer_value(json_array_get(missed, 0));
		if (x > settled)
			settled = x;
		json_array_remove(missed, 0);
	}
	if (settled >= 0)
		json_object_set_new(o, "settled", json_integer(settled));
}

/* Mark tick missed in the state, forgetting the oldest marks beyond what is kept. */
static void
tickstate_add_missed(struct tickstate *st, int64_t tick)
{
	json_array_append_new(json_object_get(st->o, "missed"), json_integer(tick));
	tickstate_forget_missed(st->o);
}

/* The latest tick a sane clock could have claimed at now: a few ticks ahead, an hour at least. */
int64_t
tickstate_horizon(const struct schedule *sched, int64_t now)
{
	int64_t h = now, x;
	int i;

	for (i = 0; sched != NULL && i < TICKSTATE_HORIZON; i++) {
		if ((x = schedule_next(sched, h)) < 0)
			break;
		h = x;
	}
	return h > now + TICKSTATE_MIN_HORIZON ? h : now + TICKSTATE_MIN_HORIZON;
}

/* Drop the ticks of a list beyond horizon. */
static void
tickstate_drop_future(json_t *list, int64_t horizon)
{
	size_t i = 0;

	while (i < json_array_size(list)) {
		if (json_integer_value(json_array_get(list, i)) > horizon)
			json_array_remove(list, i);
		else
			i++;
	}
}

/* Where node is in the list of names under key ("runners", "handed"), or -1. */
static int
tickstate_find_node(const struct tickstate *st, const char *key, const char *node)
{
	json_t *list = json_object_get(st->o, key);
	size_t i, n = json_array_size(list);

	for (i = 0; i < n; i++) {
		if (strcmp(json_string_value(json_array_get(list, i)), node) == 0)
			return (int)i;
	}
	return -1;
}

/* Whether node is among the runners. */
static int
tickstate_has_runner(const struct tickstate *st, const char *node)
{
	return tickstate_find_node(st, "runners", node) >= 0;
}

/*
 * Whether tick is the last one claimed and every worker that claimed it gave it back (it
 * has no runner left): no one runs it unless it is claimed again.
 */
static int
tickstate_let_go(const struct tickstate *st, int64_t tick)
{
	return tick >= 0 && st->tick == tick &&
	       json_array_size(json_object_get(st->o, "runners")) == 0;
}

/*
 * The ticks between st->tick and c->tick, newest first walking back, not already missed:
 * at most min(history, TICKSTATE_MAX_SKIPPED) of them, oldest first in the array returned.
 */
static json_t *
tickstate_skipped(const struct tickstate *st, const struct tickstate_claim *c)
{
	json_t *out = json_array(), *missed = json_object_get(st->o, "missed");
	int64_t x = c->tick;
	int keep = c->history < TICKSTATE_MAX_SKIPPED ? c->history : TICKSTATE_MAX_SKIPPED;
	int steps = 0, let_go;
	int64_t last;

	if (st->tick < 0 || c->sched == NULL)
		return out;
	/* The last tick claimed is one skipped too if all who claimed it gave it back. */
	let_go = tickstate_let_go(st, st->tick) && !tickstate_has_tick(missed, st->tick);
	last = let_go ? st->tick - 1 : st->tick;
	/* The ticks after the claim up to the settled one were recorded missed once. */
	if (tickstate_settled(st) > st->tick)
		last = tickstate_settled(st);
	/* Each step either keeps a tick or passes one of the (bounded) missed list. */
	while ((int)json_array_size(out) < keep && steps++ < keep + TICKSTATE_MAX_LIST) {
		x = schedule_prev(c->sched, x - 1);
		if (x < 0 || x <= last)
			break;
		if (!tickstate_has_tick(missed, x))
			json_array_insert_new(out, 0, json_integer(x));
	}
	if (let_go && last > st->tick && (int)json_array_size(out) < keep)
		json_array_insert_new(out, 0, json_integer(st->tick)); /* below the settled ones */
	return out;
}

/*
 * Decide on c's claim of a tick given the state read. TICKSTATE_CLAIM: st now holds the
 * claim (to write) and *skipped the ticks it skipped, recorded as missed; the caller frees
 * it. A claimed tick beyond the horizon is flagged TICKSTATE_FUTURE and overridden.
 */
enum tickstate_verdict
tickstate_claim(struct tickstate *st, const struct tickstate_claim *c, json_t **skipped)
{
	json_t *runners = json_object_get(st->o, "runners");
	json_t *missed = json_object_get(st->o, "missed");
	int64_t horizon = tickstate_horizon(c->sched, c->now);
	size_t i, n;

	*skipped = NULL;
	if (st->tick > horizon && st->tick > c->tick) {
		st->flags |= TICKSTATE_FUTURE;
		st->tick = -1;
		json_array_clear(runners);
		json_array_clear(json_object_get(st->o, "handed"));
		tickstate_drop_future(missed, horizon);
		tickstate_drop_future(json_object_get(st->o, "recent"), horizon);
	}
	if (tickstate_settled(st) > horizon) {
		st->flags |= TICKSTATE_FUTURE;
		json_object_del(st->o, "settled");
	}
	if (st->tick == c->tick && tickstate_has_runner(st, c->node))
		return TICKSTATE_OURS;
	/* A worker that gave the tick back (its start failed there) does not take it again. */
	if (st->tick > c->tick || tickstate_has_tick(missed, c->tick) ||
	    (st->tick == c->tick && json_array_size(runners) >= (size_t)c->per_tick) ||
	    (st->tick == c->tick && tickstate_find_node(st, "handed", c->node) >= 0))
		return TICKSTATE_TAKEN;
	if (st->tick < c->tick) {
		*skipped = tickstate_skipped(st, c);
		n = json_array_size(*skipped);
		for (i = 0; i < n; i++)
			tickstate_add_missed(st, json_integer_value(json_array_get(*skipped, i)));
		json_array_clear(runners);
		json_array_clear(json_object_get(st->o, "handed"));
		st->tick = c->tick;
		tickstate_add_tick(json_object_get(st->o, "recent"), c->tick);
	}
	json_array_append_new(runners, json_string(c->node));
	return TICKSTATE_CLAIM;
}

/*
 * Mark tick missed unless it was claimed (and not given back by all who claimed it) or marked
 * already: 1 if st changed, to write.
 */
int
tickstate_mark_missed(struct tickstate *st, int64_t tick)
{
	json_t *missed = json_object_get(st->o, "missed");
	int handed = tickstate_let_go(st, tick);

	if (tickstate_has_tick(missed, tick) || (tick != st->tick && tick <= tickstate_settled(st)))
		return 0; /* marked already (and perhaps forgotten since: settled) */
	if (!handed &&
	    (st->tick == tick || tickstate_has_tick(json_object_get(st->o, "recent"), tick)))
		return 0;
	tickstate_add_missed(st, tick);
	return 1;
}

/*
 * Give tick back: node's start of it failed for a reason of its host. node leaves the
 * runners and joins "handed" (it does not claim the tick again), so that another worker may
 * claim it; with missed (no healthy worker is left to), the tick is marked missed instead
 * when no runner is left. 1 if st changed, to write; 0 if the tick is not node's (any more).
 */
int
tickstate_hand_back(struct tickstate *st, int64_t tick, const char *node, int missed)
{
	json_t *runners = json_object_get(st->o, "runners");
	json_t *handed = json_object_get(st->o, "handed");
	int i = tickstate_find_node(st, "runners", node);

	if (st->tick != tick || i < 0)
		return 0; /* 1: changed, to write; 2: and marked missed */
	json_array_remove(runners, (size_t)i);
	if (tickstate_find_node(st, "handed", node) < 0 &&
	    json_array_size(handed) < TICKSTATE_MAX_LIST)
		json_array_append_new(handed, json_string(node));
	if (missed && json_array_size(runners) == 0 && tickstate_mark_missed(st, tick))
		return 2;
	return 1;
}

/*
 * Give tick back: node claimed it but will not run it (its claim landed after the job let it
 * go: a stop, a lost lease). node leaves the runners without joining "handed", so that any
 * worker may claim it, this node again too (restarted); if no one does, the next claim
 * records it missed (tickstate_let_go). 1 if st changed, to write; 0 if it is not node's.
 */
int
tickstate_give_back(struct tickstate *st, int64_t tick, const char *node)
{
	int i, changed = 0;

	if (st->tick != tick)
		return 0;
	/* Every entry of node's (a state written by others may hold one twice). */
	while ((i = tickstate_find_node(st, "runners", node)) >= 0) {
		json_array_remove(json_object_get(st->o, "runners"), (size_t)i);
		changed = 1;
	}
	return changed;
}

/*
 * Mark tick missed though it was claimed: its one runner let it go unrun (a give-back that
 * found a later tick claimed on top of it, whose claim did not name it as skipped since it
 * had a runner then). 1 if st changed, to write: tick is older than the last claimed, among
 * the recent claims, and not marked missed yet.
 */
int
tickstate_mark_superseded(struct tickstate *st, int64_t tick)
{
	json_t *missed = json_object_get(st->o, "missed");

	if (tick < 0 || st->tick <= tick || tickstate_has_tick(missed, tick) ||
	    !tickstate_has_tick(json_object_get(st->o, "recent"), tick))
		return 0;
	tickstate_add_missed(st, tick);
	return 1;
}

/* Whether tick is the one claimed last and is not marked missed: it may still be given back. */
int
tickstate_current(const struct tickstate *st, int64_t tick)
{
	return st->tick == tick && !tickstate_has_tick(json_object_get(st->o, "missed"), tick);
}

/* The state's JSON, to write (caller frees): lists trimmed to what is kept. */
char *
tickstate_dump(const struct tickstate *st)
{
	json_t *o = json_deep_copy(st->o);
	json_t *recent = json_object_get(o, "recent");
	char *data;

	while (json_array_size(recent) > TICKSTATE_KEEP_TICKS)
		json_array_remove(recent, 0);
	tickstate_forget_missed(o); /* a longer list as read (others' writes): settled too */
	if (json_array_size(json_object_get(o, "handed")) == 0)
		json_object_del(o, "handed"); /* as older releases write it */
	if (st->tick >= 0)
		json_object_set_new(o, "tick", json_integer(st->tick));
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return data;
}
