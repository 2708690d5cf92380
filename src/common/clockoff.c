/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * clockoff.c: the offset of this host's clock to ZooKeeper's, from the mtime of our writes.
 *
 * A server stamps a write with its own wall clock (mtime, in ms) at some instant between the
 * request's send and its answer's receipt, both on our wall clock. So our clock minus the
 * server's lies within the midpoint of [send, receive] minus mtime, plus or minus half the
 * round trip (and half a millisecond of mtime's rounding down). The smaller the round trip,
 * the tighter the bound: each bucket of time keeps its best sample, and the estimate is the
 * best one within the window (CLOCKOFF_BUCKETS buckets), so that a clock that is stepped is
 * followed within a window, and a slow answer (a busy loop, a busy server) never counts
 * more than a quick one. Pure: no clock of its own, for the unit test.
 */

#include <string.h>

#include "clockoff.h"

/* An empty estimator whose window is CLOCKOFF_BUCKETS buckets of bucket_ns. */
void
clockoff_init(struct clockoff *c, uint64_t bucket_ns)
{
	memset(c, 0, sizeof *c);
	c->bucket_ns = bucket_ns > 0 ? bucket_ns : 1;
}

/*
 * One write: sent at send_us, answered at recv_us (our wall clock, microseconds), stamped
 * server_ms by the server, at monotonic now_ns. -1 if the times make no sense (an answer
 * before its request: our clock was stepped between them).
 */
int
clockoff_add(struct clockoff *c, int64_t send_us, int64_t recv_us, int64_t server_ms,
             uint64_t now_ns)
{
	uint64_t bucket = now_ns / c->bucket_ns + 1; /* 0 marks an empty slot */
	struct clockoff_sample *slot = &c->s[bucket % CLOCKOFF_BUCKETS];
	int64_t half = (recv_us - send_us) / 2;
	int64_t offset = send_us + half - (server_ms * 1000 + 500);
	int64_t error = half + 500;

	if (recv_us < send_us || server_ms <= 0)
		return -1;
	if (slot->bucket != bucket || error < slot->error_us) {
		slot->bucket = bucket;
		slot->offset_us = offset;
		slot->error_us = error;
	}
	return 0;
}

/* The best estimate within the window at monotonic now_ns: 0, or -1 if there is none. */
int
clockoff_get(const struct clockoff *c, uint64_t now_ns, int64_t *offset_us, int64_t *error_us)
{
	uint64_t bucket = now_ns / c->bucket_ns + 1;
	const struct clockoff_sample *best = NULL;
	int i;

	for (i = 0; i < CLOCKOFF_BUCKETS; i++) {
		const struct clockoff_sample *s = &c->s[i];

		if (s->bucket == 0 || s->bucket > bucket || bucket - s->bucket >= CLOCKOFF_BUCKETS)
			continue;
		if (best == NULL || s->error_us < best->error_us)
			best = s;
	}
	if (best == NULL)
		return -1;
	*offset_us = best->offset_us;
	*error_us = best->error_us;
	return 0;
}
