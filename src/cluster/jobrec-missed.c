/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec-missed.c: why a tick was missed: the fixed set of names (a record's
 * "missed_reason", the label reason of leasekeeper_job_missed_ticks_total), the older
 * "reason" each maps to for older readers, and the log line of each.
 */

#include "clock.h"
#include "jobrec.h"
#include "log.h"

static const char *const jobrec_missed_names[JOBREC_MISSED_WHYS] = {
    "superseded", "deadline",  "lease_held", "locks",    "unreachable",
    "unhealthy",  "no_worker", "overlap",    "catch_up",
};

/* The name of why (the record's "missed_reason", the metric's label). */
const char *
jobrec_missed_name(enum jobrec_missed_why why)
{
	return why < JOBREC_MISSED_WHYS ? jobrec_missed_names[why] : "deadline";
}

/* The record's older "reason" for why: missed, locks, overlap or catch_up. */
const char *
jobrec_missed_legacy(enum jobrec_missed_why why)
{
	switch (why) {
	case JOBREC_MISSED_LOCKS:
	case JOBREC_MISSED_OVERLAP:
	case JOBREC_MISSED_CATCH_UP:
		return jobrec_missed_names[why];
	default:
		return "missed";
	}
}

/* The log line of a tick of job (due at when) not run: paused, or missed for why. */
static void
jobrec_missed_log(const char *job, const char *when, int paused, enum jobrec_missed_why why)
{
	const char *text = "its start_deadline passed before a worker could contend for it";

	if (paused) {
		log_info("job %s: the tick of %s is not run: the job is paused", job, when);
		return;
	}
	switch (why) {
	case JOBREC_MISSED_SUPERSEDED:
		log_info("job %s: the tick of %s is missed (superseded): a later tick was claimed "
		         "before any worker ran it",
		         job, when);
		return;
	case JOBREC_MISSED_OVERLAP:
		log_info("job %s: the tick of %s is missed (overlap): the run before it goes on "
		         "(overlap = skip)",
		         job, when);
		return;
	case JOBREC_MISSED_CATCH_UP:
		log_info("job %s: the tick of %s is missed (catch_up): no worker ran it, and the "
		         "job's catch_up does not run it late",
		         job, when);
		return;
	case JOBREC_MISSED_LEASE_HELD:
		text = "its lease stayed held by others (a peer, or a semaphore full) until its "
		       "start_deadline";
		break;
	case JOBREC_MISSED_LOCKS:
		text = "no worker got all its locks within its start_deadline";
		break;
	case JOBREC_MISSED_UNREACHABLE:
		text = "the cluster could not be reached until its start_deadline";
		break;
	case JOBREC_MISSED_UNHEALTHY:
		text =
		    "its start failed on this host, and no healthy worker was left to hand it to";
		break;
	case JOBREC_MISSED_NO_WORKER:
		text = "no live worker could run it (each live worker that carries it was drained, "
		       "or none does; see leasekeeper status)";
		break;
	default:
		break;
	}
	log_warnx("job %s: the tick of %s was missed (%s): %s", job, when, jobrec_missed_name(why),
	          text);
}

/* Log that a tick of job was not run (paused, or missed for why), once it is recorded. */
void
jobrec_missed_said(const char *job, int64_t tick, int paused, enum jobrec_missed_why why)
{
	char when[40];

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	jobrec_missed_log(job, when, paused, why);
}

/* The run record of a tick not run (paused, or missed for why); nothing is logged. */
json_t *
jobrec_missed_record(int64_t tick, const char *node, int paused, enum jobrec_missed_why why)
{
	char when[40];
	json_t *record;

	clock_iso8601((uint64_t)tick * 1000, when, sizeof when);
	/*
	 * "tick" and "reason" (the older names: missed, locks, overlap, catch_up, paused) for
	 * older readers; "tick_time", "outcome" and "missed_reason" added, additive.
	 */
	record = json_pack("{s:I, s:s, s:s, s:s, s:s}", "tick", (json_int_t)tick, "tick_time", when,
	                   "node", node, "reason", paused ? "paused" : jobrec_missed_legacy(why),
	                   "outcome", paused ? "paused" : "missed");
	if (!paused)
		json_object_set_new(record, "missed_reason", json_string(jobrec_missed_name(why)));
	return record;
}
