/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* jobrec-get.c: a job's records as last read and counted, for status, /status and metrics. */

#include "jobrec-int.h"
#include "jobrec.h"

/* How many ticks this worker recorded as missed for why (each is recorded once, cluster-wide). */
uint64_t
jobrec_missed_ticks(const struct jobrec *jr, enum jobrec_missed_why why)
{
	return why < JOBREC_MISSED_WHYS ? jr->missed[why] : 0;
}

/* When the cluster first knew the job (its record's ctime, ms; 0 until read). */
int64_t
jobrec_created_ms(const struct jobrec *jr)
{
	return jr->created_ms;
}

/* How many times the tick state was found corrupt or claimed too far ahead, and repaired. */
int64_t
jobrec_corrupt_states(const struct jobrec *jr)
{
	return jr->corrupt;
}

/* Whether the record said the job is paused, as last read; *stop_running with it. */
int
jobrec_paused(const struct jobrec *jr, int *stop_running)
{
	*stop_running = jr->paused_stop;
	return jr->paused;
}

/* The record's (else tick state's) format when this release cannot read it, 0 if readable. */
int
jobrec_refused_format(const struct jobrec *jr)
{
	return jr->newer != 0 ? jr->newer : jr->state_newer;
}

/* The agreed count as last read, 0 if unknown. */
int
jobrec_cluster_leases(const struct jobrec *jr)
{
	return jr->cluster;
}

/* Whether the record, as last read, names other locks than ours (the conflict was said). */
int
jobrec_locks_conflict(const struct jobrec *jr)
{
	return jr->locks_said != NULL;
}

/*
 * Its job stops for good (a reload removed or changed it): it writes no count or locks into
 * the record any more, which would undo a set-leases made for the job's new copy.
 */
void
jobrec_retire(struct jobrec *jr)
{
	jr->retired = 1;
}
