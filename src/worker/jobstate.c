/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobstate.c: the decision job.c takes when a run ends, as a pure function of what the
 * job knows and its counters, so that it can be tested without processes.
 *
 * Whatever was decided during the run comes first (a stop, a lost lease, a changed
 * lease count). A run killed because the session could not be trusted is not the
 * command's fault: it runs again at once if the lease is still held (for a scheduled
 * job, as a retry of the tick). Otherwise a continuous job restarts after a back-off,
 * or after max_failures failures in a row gives its lease up for a cool-down; a
 * scheduled job retries a failed tick up to `retries` times, then waits for the next.
 * A paused or drained job neither restarts nor retries: it lets the lease go (HOLD). A
 * continuous copy stopped for a run-now request starts again at once, unless something
 * else ended it meanwhile. A run ended by `leasekeeper stop` is no failure and is not
 * retried: a scheduled job waits for its next tick, a continuous copy restarts after
 * restart_backoff.
 */

#include "jobstate.h"

static const char *jobstate_action_names[] = {
    "FINISH", "AFTER_LOSS", "RUN_AGAIN", "RESTART",     "COOLDOWN",
    "RETRY",  "NEXT_TICK",  "HOLD",      "RESTART_NOW",
};

/* The name of an action, for logs and tests. */
const char *
jobstate_action_name(enum jobstate_action action)
{
	return jobstate_action_names[action];
}

static struct jobstate_decision jobstate_decide(const struct jobstate_end *,
                                                struct jobstate_counts *);

/* Decide what follows a run's end, moving the counters. */
struct jobstate_decision
jobstate_run_ended(const struct jobstate_end *e, struct jobstate_counts *c)
{
	struct jobstate_decision d;
	int abandoned = 0;

	if (e->manual_restart) {
		if (!e->stop_requested && !e->pending && !e->untrusted && !e->start_failed &&
		    !e->held_back && e->lease_held) {
			d = (struct jobstate_decision){JOBSTATE_RESTART_NOW, 0, 0, 0, 0};
			return d;
		}
		abandoned = 1;
	}
	d = jobstate_decide(e, c);
	d.abandoned = abandoned;
	if (e->held_back && (d.action == JOBSTATE_RUN_AGAIN || d.action == JOBSTATE_RESTART ||
	                     d.action == JOBSTATE_COOLDOWN || d.action == JOBSTATE_RETRY))
		d.action = JOBSTATE_HOLD; /* the counters moved as if it went on */
	return d;
}

/* The decision without run-now and pause: the counters and the schedule. */
static struct jobstate_decision
jobstate_decide(const struct jobstate_end *e, struct jobstate_counts *c)
{
	struct jobstate_decision d = {JOBSTATE_NEXT_TICK, 0, 0, 0, 0};

	d.failed = e->start_failed || !e->ok;
	if (e->start_failed)
		c->failures++;
	if (e->stop_requested) {
		d.action = JOBSTATE_FINISH;
		return d;
	}
	if (e->pending) {
		d.action = JOBSTATE_AFTER_LOSS;
		return d;
	}
	if (!e->start_failed && e->untrusted) {
		d.failed = 0;
		if (e->lease_idle)
			d.action = JOBSTATE_AFTER_LOSS;
		else if (e->scheduled && c->attempt >= e->retries)
			d.action = JOBSTATE_NEXT_TICK;
		else {
			if (e->scheduled)
				c->attempt++;
			d.action = JOBSTATE_RUN_AGAIN;
		}
		return d;
	}
	if (!e->start_failed && e->halted) {
		/* `leasekeeper stop`: the schedule goes on; a copy restarts after restart_backoff. */
		d.failed = 0;
		d.action = e->scheduled ? JOBSTATE_NEXT_TICK : JOBSTATE_RESTART;
		return d;
	}
	d.counted = 1;
	if (!e->start_failed) {
		if (e->ok || e->long_run) {
			c->failures = e->ok ? 0 : 1;
			c->cooldowns = 0;
		} else
			c->failures++;
	}
	if (!e->scheduled) {
		if (d.failed && c->failures >= e->max_failures) {
			/* Each cool-down in a row is longer: see job.c. */
			d.action = JOBSTATE_COOLDOWN;
			d.in_a_row = c->failures;
			c->cooldowns++;
			c->failures = 0;
		} else
			d.action = JOBSTATE_RESTART;
		return d;
	}
	if (d.failed && c->attempt < e->retries) {
		c->attempt++;
		d.action = JOBSTATE_RETRY;
	} else
		d.action = JOBSTATE_NEXT_TICK;
	return d;
}
