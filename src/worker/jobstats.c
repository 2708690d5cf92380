/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* jobstats.c: a job's counters, its last result, and its status as JSON. */

#include <sys/wait.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "format.h"
#include "joblocks.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "lease.h"
#include "schedule.h"

static const char *job_lease_end_names[] = {"deadline", "expiry", "deleted", "released"};

/* Seconds to hours: a run's duration falls in the first bucket at least as long. */
static const double job_duration_bounds[JOB_DURATION_BUCKETS] = {
    1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200,
};

/* Remember the last outcome, for status. */
void
job_set_result(struct job *job, const char *fmt, ...)
{
	va_list ap;

	free(job->last_result);
	va_start(ap, fmt);
	if (vasprintf(&job->last_result, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
}

/* Count a run's end: its outcome, when, and (if it ran) how long. */
void
job_count_end(struct job *job, enum job_outcome outcome, int ran)
{
	double secs = (double)(clock_now_ns() - job->run_start_ns) / 1e9;
	size_t i;

	job->outcomes[outcome]++;
	job->last_outcome = (int)outcome;
	job->last_status = -1;
	job->last_end_ms = clock_wall_ms();
	if (outcome == JOB_OUTCOME_OK)
		job->last_ok_ms = job->last_end_ms;
	if (!ran)
		return;
	for (i = 0; i < JOB_DURATION_BUCKETS; i++) {
		if (secs <= job_duration_bounds[i])
			job->buckets[i]++;
	}
	job->durations++;
	job->duration_sum += secs;
}

/* The job's counters and whether it holds a lease. */
void
job_stats(const struct job *job, struct job_stats *st)
{
	enum lease_state ls = lease_state(job->lease);
	int i;

	st->lease_held = ls == LEASE_HELD || ls == LEASE_UNVERIFIED;
	st->runs = job->runs;
	st->failures = job->fsm.failures_total;
	st->corrupt_states = jobrec_corrupt_states(job->rec);
	st->cpu_usec = job->cpu_usec_total;
	st->ooms = job->ooms;
	st->last_peak = job->last_peak;
	memcpy(st->outcomes, job->outcomes, sizeof st->outcomes);
	memcpy(st->lease_ends, job->lease_ends, sizeof st->lease_ends);
	st->acquisitions = job->acquisitions;
	for (i = 0; i < JOBREC_MISSED_WHYS; i++)
		st->missed_ticks[i] = jobrec_missed_ticks(job->rec, (enum jobrec_missed_why)i);
	/* A chained job's generations missed: their start_deadline passed (jobchain.c). */
	st->missed_ticks[JOBREC_MISSED_DEADLINE] += job->chain_missed;
	st->paused_ticks = job->paused_ticks;
	st->last_end_ms = job->last_end_ms;
	st->last_ok_ms = job->last_ok_ms;
	st->interval_s = -1;
	if (job_scheduled(job) && job->next_tick >= 0) {
		int64_t after = schedule_next(job->cfg->sched, job->next_tick);

		if (after > job->next_tick)
			st->interval_s = after - job->next_tick;
	}
	st->bucket_bounds = job_duration_bounds;
	memcpy(st->buckets, job->buckets, sizeof st->buckets);
	st->durations = job->durations;
	st->duration_sum = job->duration_sum;
	st->hook_failures = job->hook_failures;
}

/* A lease end's cause, as the metrics spell it. */
const char *
job_lease_end_name(enum job_lease_end end)
{
	return job_lease_end_names[end];
}

/* The job as JSON, for the HTTP status. */
json_t *
job_status_json(const struct job *job)
{
	struct job_stats st;
	char next[40];
	json_t *o;

	job_stats(job, &st);
	o = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:b, s:I, s:I, s:I, s:i}", "name", job->name,
	              "state", jobfsm_state_name(job->fsm.state), "schedule", job->cfg->schedule,
	              "leases", job->cfg->leases, "lock_path", job->lock_path, "lease_state",
	              lease_state_name(lease_state(job->lease)), "lease_held", st.lease_held,
	              "fence", (json_int_t)(job->run != 0 ? job->run_fence : 0), "runs",
	              (json_int_t)st.runs, "failures", (json_int_t)st.failures,
	              "consecutive_failures", job->fsm.failures);
	json_object_set_new(o, "locks", joblocks_json(job->lease));
	if (job->chain != NULL)
		json_object_set_new(o, "after", job_chain_json(job));
	if (job->pid > 0)
		json_object_set_new(o, "pid", json_integer(job->pid));
	if (jobrec_cluster_leases(job->rec) > 0)
		json_object_set_new(o, "cluster_leases",
		                    json_integer(jobrec_cluster_leases(job->rec)));
	if (jobrec_locks_conflict(job->rec))
		json_object_set_new(o, "locks_conflict", json_true());
	json_object_set_new(o, "corrupt_states", json_integer(st.corrupt_states));
	if (jobrec_refused_format(job->rec) != 0) {
		char why[200];

		json_object_set_new(
		    o, "format_refused",
		    json_string(format_refusal(jobrec_refused_format(job->rec), why, sizeof why)));
	}
	if (job->next_tick >= 0 && job_scheduled(job)) {
		clock_iso8601((uint64_t)job->next_tick * 1000, next, sizeof next);
		json_object_set_new(o, "next_tick", json_string(next));
	}
	if (job->last_result != NULL)
		json_object_set_new(o, "last_result", json_string(job->last_result));
	/* The last result as fields: last_result is prose, kept for older readers. */
	if (job->last_outcome >= 0) {
		json_object_set_new(
		    o, "last_outcome",
		    json_string(job_outcome_name((enum job_outcome)job->last_outcome)));
		clock_iso8601(job->last_end_ms, next, sizeof next);
		json_object_set_new(o, "last_end", json_string(next));
	}
	if (job->last_status >= 0 && WIFEXITED(job->last_status))
		json_object_set_new(o, "last_exit_status",
		                    json_integer(WEXITSTATUS(job->last_status)));
	else if (job->last_status >= 0 && WIFSIGNALED(job->last_status))
		json_object_set_new(o, "last_signal", json_integer(WTERMSIG(job->last_status)));
	if (job->last_ok_ms > 0) {
		clock_iso8601(job->last_ok_ms, next, sizeof next);
		json_object_set_new(o, "last_success", json_string(next));
	}
	if (job->last_cpu_usec >= 0)
		json_object_set_new(o, "last_cpu_usec", json_integer(job->last_cpu_usec));
	if (job->last_peak >= 0)
		json_object_set_new(o, "last_memory_peak", json_integer(job->last_peak));
	json_object_set_new(o, "cpu_usec", json_integer((json_int_t)job->cpu_usec_total));
	json_object_set_new(o, "ooms", json_integer((json_int_t)job->ooms));
	json_object_set_new(o, "hook_failures", json_integer((json_int_t)job->hook_failures));
	return o;
}
