/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* tickstate.h: a job's tick state read from ZooKeeper, bounded, and the claim computed on it. */
#ifndef TICKSTATE_H
#define TICKSTATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define TICKSTATE_MAX_SIZE    65536 /* bytes of a state node parsed; larger is corrupt */
#define TICKSTATE_MAX_LIST    256   /* entries of each list read; the newest are kept */
#define TICKSTATE_KEEP_TICKS  64    /* claimed and missed ticks remembered when writing */
#define TICKSTATE_MAX_NODE    512   /* bytes of a runner's name; longer ones are dropped */
#define TICKSTATE_MAX_SKIPPED 64    /* ticks recorded as missed by one claim, at most */
#define TICKSTATE_HORIZON     3     /* a claim beyond this many ticks after now is corrupt */
#define TICKSTATE_MIN_HORIZON 3600  /* ... and beyond an hour after now, for fast schedules */

/* What tickstate_parse and tickstate_claim found wrong with what was read (bits). */
#define TICKSTATE_CORRUPT   0x1 /* not a JSON object, or too large: read as empty */
#define TICKSTATE_TRUNCATED 0x2 /* a list too long, or entries of the wrong type: trimmed */
#define TICKSTATE_FUTURE    0x4 /* a claimed tick beyond the horizon: overridden */

struct schedule;

/* The state, normalized: "tick" (-1 when none), "runners", "recent", "missed", "handed". */
struct tickstate {
	json_t *o;
	int64_t tick;
	int flags;
	int format; /* the format version read (format.h); unreadable ones are read as empty */
};

enum tickstate_verdict {
	TICKSTATE_OURS,  /* the tick is claimed by us already (an earlier write landed) */
	TICKSTATE_TAKEN, /* claimed by enough workers, superseded, or marked missed */
	TICKSTATE_CLAIM, /* ours: the state now holds our claim, to be written */
};

/* What a worker claims. */
struct tickstate_claim {
	int64_t tick;
	int per_tick;
	const char *node;
	const struct schedule *sched; /* NULL: no ticks to name as skipped */
	int history; /* skipped ticks recorded, at most (and TICKSTATE_MAX_SKIPPED) */
	int64_t now; /* wall clock, Unix seconds */
};

void tickstate_parse(const char *data, size_t len, struct tickstate *);
void tickstate_free(struct tickstate *);
int64_t tickstate_horizon(const struct schedule *, int64_t now);
enum tickstate_verdict tickstate_claim(struct tickstate *, const struct tickstate_claim *,
                                       json_t **skipped);
int tickstate_mark_missed(struct tickstate *, int64_t tick);
int tickstate_hand_back(struct tickstate *, int64_t tick, const char *node, int missed);
int tickstate_give_back(struct tickstate *, int64_t tick, const char *node);
int tickstate_mark_superseded(struct tickstate *, int64_t tick);
int tickstate_current(const struct tickstate *, int64_t tick);
char *tickstate_dump(const struct tickstate *);

#endif
