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
 */

#include "jobstate.h"

static const char *jobstate_action_names[] = {
    "FINISH", "AFTER_LOSS", "RUN_AGAIN", "RESTART", "COOLDOWN", "RETRY", "NEXT_TICK",
};

/* The name of an action, for logs and tests. */
const char *
jobstate_action_name(enum jobstate_action action)
{
	return jobstate_action_names[action];
}

/* Decide what follows a run's end, moving the counters as job.c used to inline. */
struct jobstate_decision
jobstate_run_ended(const struct jobstate_end *e, struct jobstate_counts *c)
{
	struct jobstate_decision d = {JOBSTATE_NEXT_TICK, 0, 0, 0};

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
