/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * job.c: one configured job's life in the main process.
 *
 * A job first checks that the cluster agrees on its number of leases (jobrec.c), then:
 *
 * @continuous: contend for a lease and run the command while holding it; when the
 * command ends, start it again after a back-off that doubles with each consecutive
 * failure; after max_failures consecutive failures give the lease up so that another
 * host takes over, and contend again after a cool-down.
 *
 * cron and @every: at each tick, rank the live workers that carry the job (rank.c); the
 * first per_tick in rank contend for a lease within start_deadline, claim the tick in
 * <root>/jobs/<job>/state, run, retry on failure, record the run, release; the others
 * (STANDBY) wait a delay that grows with their rank, read the state once, and contend
 * only if the tick is still unclaimed ([worker] tick_claim = contend: all contend). A
 * tick nobody starts in time is recorded as missed; at start-up the most recent tick
 * still inside start_deadline is contended for (catch-up after an outage), and the
 * claim keeps it from running twice.
 *
 * A job paused cluster-wide (its record says "paused", `leasekeeper pause`) or on a drained
 * worker (`leasekeeper drain`) takes no new lease. Paused, its ticks are recorded as
 * "paused" (once, by whoever marks them first) and its runs go on to their end, unless the
 * pause says stop_running; drained, its ticks are left to the other workers, a continuous
 * run is stopped at once (the hand-over of a graceful stop) and a scheduled one only at the
 * drain's deadline.
 *
 * A run-now request (runreq.c) taken by this worker runs the command once more, under a lease
 * like a tick's (contended for within the request's timeout) but with no tick to claim, no
 * retry, recorded with the reason "manual"; for a continuous job it is taken by a worker
 * whose copy runs, and restarts it at once (the old copy stopped as any stop).
 *
 * Whatever the schedule, the command runs only while the lease is held: when the lease
 * is lost the run is killed at once (the supervisor has usually done so already, at the
 * lease deadline); after a disconnect a run is restarted only once the lease has been
 * verified.
 */

#include <sys/wait.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "duration.h"
#include "job.h"
#include "jobrec.h"
#include "jobstate.h"
#include "lease.h"
#include "log.h"
#include "members.h"
#include "rank.h"
#include "control.h"
#include "runreq.h"
#include "runspec.h"
#include "schedule.h"
#include "svlink.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

#define JOB_LONG_RUN_MS    60000ULL  /* a run this long resets the failure count */
#define JOB_MAX_BACKOFF_MS 300000ULL /* no back-off or cool-down is longer */
#define JOB_RETRY_MS       5000ULL   /* after an unexpected acquire failure */
/* The output in a run record, escaped: under what status and logs parse (64 KiB). */
#define JOB_OUTPUT_JSON_MAX 49152
/* Hooks of one job waiting for the running one (misses come in bursts); more are dropped. */
#define JOB_MAX_HOOKS_QUEUED 8

/* A hook waiting for the one before it to end: its key and start spec. */
struct job_hook {
	const char *key;
	struct proto_spec spec;
};

struct job {
	struct zk *zk;
	const struct job_cb *cb;
	void *cb_arg;
	const struct config_job *cfg;
	char *name;
	char *lock_path;
	enum job_state state;
	struct lease *lease;
	struct jobrec *rec;

	int ready;            /* registered in the current session */
	int agreed;           /* the cluster's lease count is ours */
	int stop_requested;   /* job_stop: finish and be done */
	int lost_pending;     /* the lease went while running: contend again after the exit */
	int conflict_pending; /* the count changed while running: stop contending after */
	int await_verify;     /* start once the lease is confirmed after a reconnect */
	int paused;           /* the record says paused: take no new lease */
	int drained;          /* this worker is drained: take no new lease */

	struct runreq *req; /* the run-now requests */
	char *manual_req;   /* the run-now request taken, until it is reported */
	char *manual_by;    /* ... who asked */
	int manual_restart; /* continuous: the copy is being stopped to restart it */
	int manual_ended;   /* the run that just ended was a manual one */
	int manual_queued;  /* taken while busy: acted on once the job is free */
	int64_t manual_timeout_ms;

	uint32_t run;
	pid_t pid;
	uint64_t run_start_ns;
	uint64_t run_start_ms;
	int64_t run_fence;
	int timed_out;
	int failures;  /* consecutive */
	int cooldowns; /* consecutive cool-downs, each longer */
	uint64_t runs;
	uint64_t failures_total;
	uint64_t cpu_usec_total; /* of the runs that have ended, where their cgroup told */
	uint64_t ooms;
	int64_t last_cpu_usec, last_peak; /* of the last run; -1: not known */
	char *last_result;
	uint64_t outcomes[JOB_OUTCOMES];
	uint64_t lease_ends[JOB_LEASE_ENDS];
	uint64_t acquisitions;
	uint64_t paused_ticks; /* ticks this worker let go because the job was paused */
	uint64_t last_end_ms, last_ok_ms;
	uint64_t buckets[JOB_DURATION_BUCKETS];
	uint64_t durations;
	double duration_sum;
	int expiring;     /* the session's expiry is being told to the lease */
	int last_outcome; /* enum job_outcome of the last run here; -1: none */
	int last_status;  /* its wait status; -1: none (it did not start, or no process) */

	int64_t tick;         /* scheduled: the tick being handled, -1 if none */
	int64_t next_tick;    /* scheduled: the next tick the timer waits for */
	int attempt;          /* scheduled: retries of this tick so far */
	int64_t pending_tick; /* scheduled: the newest tick that came due during a run */

	struct event *timer;      /* back-off, retry, cool-down */
	struct event *tick_timer; /* scheduled: the next tick */
	struct event *run_timer;  /* the run's timeout */

	uint32_t hook_run; /* the hook running (on_failure, ...), 0: none */
	struct job_hook hookq[JOB_MAX_HOOKS_QUEUED]; /* the hooks waiting for it, in order */
	int nhookq;
	const char *hook_key;   /* its key, for logs */
	uint64_t hook_failures; /* hooks that failed, timed out, or were not run */
	uint64_t hook_start_ns;

	/* A job that keeps failing the same way warns once, then counts (see log.h). */
	struct log_limit lim_lost, lim_acquire, lim_cooldown, lim_start, lim_hook;
};

static const char *job_outcome_names[] = {
    "ok", "failed", "timeout", "oom", "killed", "stopped", "start_failed",
};

static const char *job_lease_end_names[] = {"deadline", "expiry", "deleted", "released"};

/* Seconds to hours: a run's duration falls in the first bucket at least as long. */
static const double job_duration_bounds[JOB_DURATION_BUCKETS] = {
    1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200,
};

static const char *job_state_names[] = {
    "IDLE",    "CONFLICT", "WAITING",  "STANDBY",  "CONTENDING", "CLAIMING", "STARTING",
    "RUNNING", "BACKOFF",  "STOPPING", "COOLDOWN", "DONE",       "PAUSED",   "DRAINED",
};

static void job_contend(struct job *, int64_t tick);
static void job_start_run(struct job *);
static void job_go(struct job *);
static void job_arm_tick(struct job *);
static void job_wait_tick(struct job *);
static int job_hold(struct job *);
static void job_manual_go(struct job *);

/* The worker's configuration (replaced at each reload). */
static const struct config *
job_main_config(const struct job *job)
{
	return job->cb->config(job->cb_arg);
}

/* The supervisor (replaced when one dies). */
static struct svlink *
job_supervisor(const struct job *job)
{
	return job->cb->supervisor(job->cb_arg);
}

/* The name of a state, for logs. */
static const char *
job_state_name(enum job_state state)
{
	return job_state_names[state];
}

/* Move to a new state, logging the transition by name. */
static void
job_set_state(struct job *job, enum job_state state)
{
	if (job->state == state)
		return;
	log_debug("job %s: %s -> %s", job->name, job_state_name(job->state), job_state_name(state));
	job->state = state;
}

/* Whether the job runs at ticks (as opposed to continuously). */
static int
job_scheduled(const struct job *job)
{
	return schedule_kind(job->cfg->sched) != SCHEDULE_CONTINUOUS;
}

/* Arm a timer for ms from now. */
static void
job_timer(struct event *ev, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(ev, &tv);
}

/* base * 2^(n-1), capped, with +-20% jitter so that hosts do not move in lockstep. */
static uint64_t
job_backoff(uint64_t base, int n)
{
	uint64_t ms = base;
	double jitter;
	int i;

	for (i = 1; i < n && ms < JOB_MAX_BACKOFF_MS; i++)
		ms *= 2;
	if (ms > JOB_MAX_BACKOFF_MS)
		ms = JOB_MAX_BACKOFF_MS;
	jitter = 0.8 + 0.4 * ((double)random() / (double)RAND_MAX);
	return (uint64_t)((double)ms * jitter);
}

/* Whether a run of this job is under way (started or starting). */
static int
job_busy(const struct job *job)
{
	return job->run != 0;
}

/* Remember the last outcome, for status. */
static void job_set_result(struct job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
job_set_result(struct job *job, const char *fmt, ...)
{
	va_list ap;

	free(job->last_result);
	va_start(ap, fmt);
	if (vasprintf(&job->last_result, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
}

/* Give the lease back, counting it as released if it was held. */
static void
job_release(struct job *job)
{
	enum lease_state ls = lease_state(job->lease);

	if (ls == LEASE_HELD || ls == LEASE_UNVERIFIED)
		job->lease_ends[JOB_LEASE_RELEASED]++;
	lease_release(job->lease);
}

/* Report how the run-now request taken ended (result stolen) and forget it. */
static void
job_manual_end(struct job *job, json_t *result)
{
	if (job->manual_req == NULL) {
		json_decref(result);
		return;
	}
	runreq_finish(job->req, result);
	free(job->manual_req);
	free(job->manual_by);
	job->manual_req = job->manual_by = NULL;
	job->manual_queued = 0;
}

/* The run-now request taken cannot be carried out: report why (outcome and error). */
static void
job_manual_abort(struct job *job, const char *outcome, const char *why)
{
	if (job->manual_req == NULL)
		return;
	log_warnx("job %s: run-now request %s: %s", job->name, job->manual_req, why);
	job->manual_restart = job->manual_queued = 0;
	job_manual_end(job, json_pack("{s:s, s:s, s:s}", "outcome", outcome, "node",
	                              job_main_config(job)->node_id, "error", why));
}

/* Count a run's end: its outcome, when, and (if it ran) how long. */
static void
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

/*
 * The fields that find a run in the logs, as key=value at the end of its lines
 * (docs/design.md, "Logs"): " run=ID fence=N", and " tick=TIME" for a scheduled run.
 */
static void
job_run_fields(const struct job *job, uint32_t run, char *buf, size_t len)
{
	char when[40];

	snprintf(buf, len, " run=%lu fence=%lld", (unsigned long)run, (long long)job->run_fence);
	if (job->tick >= 0) {
		clock_iso8601((uint64_t)job->tick * 1000, when, sizeof when);
		snprintf(buf + strlen(buf), len - strlen(buf), " tick=%s", when);
	}
}

/*
 * Where to start text so that, escaped in JSON (a control byte takes six), it takes at most
 * JOB_OUTPUT_JSON_MAX bytes: at a line, or a character, from its end.
 */
static const char *
job_output_fit(const char *text)
{
	const unsigned char *p = (const unsigned char *)text + strlen(text);
	const char *nl;
	size_t size = 0;

	while (p > (const unsigned char *)text) {
		p--;
		size += *p == '"' || *p == '\\' || *p == '\n' || *p == '\t' || *p == '\r' ? 2
		        : *p < 0x20                                                       ? 6
		                                                                          : 1;
		if (size > JOB_OUTPUT_JSON_MAX) {
			p++;
			while ((*p & 0xc0) == 0x80)
				p++;
			nl = strchr((const char *)p, '\n');
			return nl != NULL && nl[1] != '\0' ? nl + 1 : (const char *)p;
		}
	}
	return text;
}

/* Record a finished run in ZooKeeper, with its usage when known (u may be NULL). */
static void
job_record(struct job *job, const char *reason, enum job_outcome outcome, int status,
           int have_status, const char *error, const struct proto_usage *u)
{
	char start[40], end[40], tick[40];
	uint64_t end_ms = clock_wall_ms();
	json_t *o;

	clock_iso8601(job->run_start_ms, start, sizeof start);
	clock_iso8601(end_ms, end, sizeof end);
	o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "node", job_main_config(job)->node_id,
	              "fence", (json_int_t)job->run_fence, "start", start, "end", end, "reason",
	              reason, "duration_ms",
	              (json_int_t)(end_ms > job->run_start_ms ? end_ms - job->run_start_ms : 0));
	/* "outcome", "exit_status" and "tick_time" are additive: older readers read the rest. */
	json_object_set_new(o, "outcome", json_string(job_outcome_name(outcome)));
	if (job->tick >= 0) {
		json_object_set_new(o, "tick", json_integer(job->tick));
		clock_iso8601((uint64_t)job->tick * 1000, tick, sizeof tick);
		json_object_set_new(o, "tick_time", json_string(tick));
	}
	if (have_status && WIFEXITED(status)) {
		json_object_set_new(o, "status", json_integer(WEXITSTATUS(status)));
		json_object_set_new(o, "exit_status", json_integer(WEXITSTATUS(status)));
	} else if (have_status && WIFSIGNALED(status))
		json_object_set_new(o, "signal", json_integer(WTERMSIG(status)));
	if (error != NULL)
		json_object_set_new(o, "error", json_string(error));
	if (u != NULL && u->cpu_usec >= 0)
		json_object_set_new(o, "cpu_usec", json_integer(u->cpu_usec));
	if (u != NULL && u->mem_peak >= 0)
		json_object_set_new(o, "memory_peak", json_integer(u->mem_peak));
	if (u != NULL && u->output != NULL) {
		/* Any bytes at all: made valid UTF-8 for JSON (the reader escapes the rest). */
		char *text = utf8_valid(u->output, u->output_len);

		json_object_set_new(o, "output", json_string(job_output_fit(text)));
		free(text);
	}
	if (job->manual_req != NULL && (job->manual_restart || !job->manual_queued)) {
		/* A run-now: the run asked for ("manual"), or the copy it restarts. */
		json_object_set_new(o, "by", json_string(job->manual_by));
		json_object_set_new(o, "request", json_string(job->manual_req));
		if (job_scheduled(job)) {
			json_t *res = json_deep_copy(o);

			json_object_set_new(o, "reason", json_string("manual"));
			json_object_del(res, "by");
			json_object_del(res, "request");
			json_object_del(res, "reason");
			json_object_del(res, "status");
			json_object_del(res,
			                "output"); /* the run record keeps it: leasekeeper logs */
			job->manual_ended = 1;
			job_manual_end(job, res);
		}
	}
	jobrec_record_run(job->rec, o, job->cfg->history);
}

/*
 * What a run and a hook of the job share: its command line argv, environment, user, working
 * directory, log and grace; the caller adds what is its own (fence, deadline, tick, facts).
 */
static struct runspec
job_runspec(const struct job *job, char *const *argv)
{
	const struct config_job *cj = job->cfg;
	const struct config *cfg = job_main_config(job);

	return (struct runspec){
	    .name = job->name,
	    .argv = argv,
	    .env = cj->env,
	    .nenv = cj->nenv,
	    .pass_env = cj->pass_env,
	    .node_id = cfg->node_id,
	    .tick = -1,
	    /* Without a workdir: the user's home for a job run as another user, as cron does. */
	    .workdir = cj->workdir != NULL ? cj->workdir
	               : cj->user == NULL  ? cfg->state_dir
	                                   : NULL,
	    .user = cj->user,
	    .group = cj->group,
	    .umask = cj->umask,
	    .log_file = cj->log_file,
	    .log_max_bytes = cj->log_max_bytes,
	    .kill_grace_ms = cj->kill_grace_ms,
	};
}

/* Start the first hook waiting, if any: one hook of a job at a time, in order. */
static void
job_hook_next(struct job *job)
{
	struct proto_spec spec;

	if (job->nhookq == 0)
		return;
	job->hook_key = job->hookq[0].key;
	spec = job->hookq[0].spec;
	memmove(&job->hookq[0], &job->hookq[1], (size_t)(job->nhookq - 1) * sizeof job->hookq[0]);
	job->nhookq--;
	job->hook_start_ns = clock_now_ns();
	job->hook_run = job->cb->next_run(job->cb_arg);
	/* A refusal comes back at once (job_start_failed), and starts the next. */
	svlink_job_start(job_supervisor(job), job->hook_run, zk_epoch(job->zk), &spec);
	proto_spec_free(&spec);
}

/*
 * A record this worker made is written (or will not be): run the hook its outcome asks
 * for, through the supervisor as a run outside any lease, as the job's user, with the
 * record's facts in LEASEKEEPER_* and the run record's number once it has one. One hook
 * of a job at a time: others wait their turn, up to JOB_MAX_HOOKS_QUEUED (more are dropped
 * and counted).
 */
static void
job_recorded_cb(struct jobrec *jr, json_t *rec, const char *created, void *arg)
{
	struct job *job = arg;
	const struct config_job *cj = job->cfg;
	const char *outcome = json_string_value(json_object_get(rec, "outcome")), *cmd, *key;
	char *argv[4], *facts[12];
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;
	json_t *v;
	int64_t seq;
	size_t n = 0, i;

	(void)jr;
	/*
	 * By the outcome, not the reason: a run-now's reason is "manual" whatever its end, and a
	 * paused tick is no failure. A stopped run and a paused tick run no hook.
	 */
	if (outcome == NULL || strcmp(outcome, "stopped") == 0 || strcmp(outcome, "paused") == 0)
		return;
	if (strcmp(outcome, "ok") == 0)
		key = "on_success", cmd = cj->hooks.on_success;
	else if (strcmp(outcome, "missed") == 0)
		key = "on_missed", cmd = cj->hooks.on_missed;
	else /* failed, timeout, oom, killed (at the lease deadline or with the lease), start_failed */
		key = "on_failure", cmd = cj->hooks.on_failure;
	if (cmd == NULL)
		return;
	if (job->hook_run != 0 && job->nhookq == JOB_MAX_HOOKS_QUEUED) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: %s not run: %d hooks of the job are waiting already",
		                  job->name, key, JOB_MAX_HOOKS_QUEUED);
		return;
	}
	xasprintf(&facts[n++], "LEASEKEEPER_HOOK=%s", key);
	xasprintf(&facts[n++], "LEASEKEEPER_OUTCOME=%s", outcome);
	if (json_is_integer(v = json_object_get(rec, "status")))
		xasprintf(&facts[n++], "LEASEKEEPER_EXIT_STATUS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "signal")))
		xasprintf(&facts[n++], "LEASEKEEPER_SIGNAL=%lld", (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "duration_ms")))
		xasprintf(&facts[n++], "LEASEKEEPER_DURATION_MS=%lld",
		          (long long)json_integer_value(v));
	if (json_is_integer(v = json_object_get(rec, "fence")))
		xasprintf(&facts[n++], "LEASEKEEPER_FENCE=%lld", (long long)json_integer_value(v));
	if (created != NULL && znode_sequence(znode_basename(created), "run-", &seq) == 0)
		xasprintf(&facts[n++], "LEASEKEEPER_RUN_ID=%lld", (long long)seq);
	xasprintf(&facts[n++], "LEASEKEEPER_LOG=%s", cj->log_file);
	facts[n] = NULL;
	argv[0] = (char *)"/bin/sh";
	argv[1] = (char *)"-c";
	argv[2] = (char *)cmd;
	argv[3] = NULL;
	v = json_object_get(rec, "tick");
	rs = job_runspec(job, argv);
	rs.tick = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
	rs.hook_ms = cj->hooks.timeout_ms;
	rs.facts = facts;
	runspec_build(&rs, &spec);
	for (i = 0; i < n; i++)
		free(facts[i]);
	log_info("job %s: %s its %s (%s %s)", job->name,
	         job->hook_run != 0 ? "queueing" : "running", key, outcome,
	         created != NULL ? znode_basename(created) : "not recorded");
	job->hookq[job->nhookq].key = key;
	job->hookq[job->nhookq++].spec = spec;
	if (job->hook_run == 0)
		job_hook_next(job);
}

/* A hook ended (or could not start): logged, and counted when it failed. */
static void
job_hook_end(struct job *job, int failed, const char *how)
{
	uint64_t ms = (clock_now_ns() - job->hook_start_ns) / CLOCK_NS_PER_MS;

	job->hook_run = 0;
	if (failed) {
		job->hook_failures++;
		log_warnx_limited(&job->lim_hook,
		                  "job %s: its %s failed after %llu ms: %s (not "
		                  "retried)",
		                  job->name, job->hook_key, (unsigned long long)ms, how);
	} else
		log_info("job %s: its %s ended after %llu ms", job->name, job->hook_key,
		         (unsigned long long)ms);
	job_hook_next(job);
}

/* Stopped for good: give the lease back and tell the worker. */
static void
job_finish_stop(struct job *job)
{
	evtimer_del(job->timer);
	evtimer_del(job->tick_timer);
	evtimer_del(job->run_timer);
	jobrec_cancel_claim(job->rec);
	job_release(job);
	job_manual_abort(job, "stopped",
	                 "the job was stopped on this worker (a shutdown or a reload)");
	job_set_state(job, JOB_DONE);
	log_info("job %s: stopped", job->name);
	job->cb->done(job, job->cb_arg);
}

/* The lease is gone or given up: go back to contending when the session allows. */
static void
job_after_loss(struct job *job)
{
	job->await_verify = 0;
	evtimer_del(job->timer);
	jobrec_cancel_claim(job->rec);
	if (job->stop_requested) {
		job_finish_stop(job);
		return;
	}
	job_manual_abort(job, "killed", "the lease was lost before the run started");
	if (job->conflict_pending) {
		job->conflict_pending = 0;
		job_release(job);
		evtimer_del(job->tick_timer);
		job_set_state(job, JOB_CONFLICT);
		return;
	}
	if (!job->ready || !job->agreed) {
		job_set_state(job, JOB_IDLE);
		/* Registered again while the run was ending: the agreement is to be checked. */
		if (job->ready)
			jobrec_check(job->rec);
		return;
	}
	if (job_scheduled(job)) {
		job_release(job);
		job_wait_tick(job);
		return;
	}
	if (lease_state(job->lease) == LEASE_IDLE)
		job_contend(job, -1);
}

/* Start contending for the lease (for tick, if scheduled). */
static void
job_contend(struct job *job, int64_t tick)
{
	uint64_t timeout = 0, now_ms = clock_wall_ms();
	char *data;

	if (!job->ready || !job->agreed || job->stop_requested)
		return;
	if (lease_state(job->lease) != LEASE_IDLE)
		job_release(job);
	if (tick >= 0 && (job->paused || job->drained)) {
		/* Paused: the tick is recorded as such, once; drained: it is the others'. */
		if (job->paused) {
			job->paused_ticks++;
			jobrec_paused_tick(job->rec, tick, job_main_config(job)->node_id,
			                   job->cfg->history);
		}
		job_wait_tick(job);
		return;
	}
	if (job_hold(job))
		return;
	job->tick = tick;
	if (tick >= 0) {
		uint64_t until = (uint64_t)tick * 1000 + job->cfg->start_deadline_ms;

		if (now_ms >= until) {
			jobrec_missed(job->rec, tick, job_main_config(job)->node_id,
			              job->cfg->history);
			job_wait_tick(job);
			return;
		}
		timeout = until - now_ms;
		job->attempt = 0;
	}
	data = lease_data(job_main_config(job)->node_id, job->name, now_ms);
	lease_set_data(job->lease, data);
	free(data);
	job_set_state(job, JOB_CONTENDING);
	lease_acquire(job->lease, timeout);
}

/* A backup's read of the tick: step in if it is still unclaimed, else wait for the next. */
static void
job_peek_cb(enum jobrec_claim_result result, void *arg)
{
	struct job *job = arg;

	if (job->state != JOB_STANDBY)
		return;
	if (result == JOBREC_TAKEN) {
		job_wait_tick(job);
		return;
	}
	/* Unclaimed (or unknown: then the claim tells): step in. */
	log_debug("job %s: tick %lld still unclaimed: stepping in", job->name,
	          (long long)job->tick);
	job_contend(job, job->tick);
}

/*
 * A tick is due and we are free: contend at once if we are among the first per_tick in
 * rank (or tick_claim = contend, or the view of the workers is not kept yet); otherwise
 * wait our delay in STANDBY, then read the tick once (job_peek_cb).
 */
static void
job_tick_due(struct job *job, int64_t tick)
{
	const struct config *cfg = job_main_config(job);
	const struct members *ms = job->cb->members(job->cb_arg);
	const char **nodes;
	size_t n, pos;
	uint64_t delay;

	if (cfg->tick_claim == CONFIG_TICK_CONTEND || ms == NULL || !members_ready(ms)) {
		job_contend(job, tick);
		return;
	}
	nodes = members_carrying(ms, job->name, &n);
	pos = rank_position(job->name, rank_seq(job->cfg->sched, tick), cfg->node_id, nodes, n);
	free(nodes);
	delay = rank_delay_ms(pos, job->cfg->per_tick,
	                      rank_step_ms(job->cfg->sched, tick, job->cfg->start_deadline_ms));
	if (delay == 0) {
		job_contend(job, tick);
		return;
	}
	log_debug("job %s: tick %lld: rank %zu of %zu: reading it in %llu ms", job->name,
	          (long long)tick, pos + 1, n, (unsigned long long)delay);
	job->tick = tick;
	job_set_state(job, JOB_STANDBY);
	job_timer(job->timer, delay);
}

/* The claim of a tick: run it, or leave it to the worker that has it. */
static void
job_claim_cb(enum jobrec_claim_result result, void *arg)
{
	struct job *job = arg;
	char when[40];

	if (job->state != JOB_CLAIMING)
		return;
	clock_iso8601((uint64_t)job->tick * 1000, when, sizeof when);
	if (result == JOBREC_CLAIMED) {
		log_info("job %s: running the tick of %s", job->name, when);
		job_start_run(job);
		return;
	}
	log_debug("job %s: the tick of %s %s", job->name, when,
	          result == JOBREC_TAKEN ? "is already run or missed" : "could not be claimed");
	job_release(job);
	if (job->ready)
		job_wait_tick(job);
	else
		job_set_state(job, JOB_IDLE);
}

/* Lease callbacks. */
static void
job_lease_acquired_cb(struct lease *l, void *arg)
{
	struct job *job = arg;

	job->acquisitions++;
	if (job_scheduled(job))
		log_debug("job %s: lease acquired on %s (fence %lld)", job->name, lease_path(l),
		          (long long)lease_fence(l));
	else
		log_info("job %s: lease acquired on %s (fence %lld)", job->name, lease_path(l),
		         (long long)lease_fence(l));
	if (job->stop_requested) {
		job_finish_stop(job);
		return;
	}
	if (job_scheduled(job) && job->manual_req != NULL && job->tick < 0) {
		log_info("job %s: running it at the request of %s (%s)", job->name, job->manual_by,
		         job->manual_req);
		job_start_run(job); /* no tick to claim */
		return;
	}
	if (job_scheduled(job)) {
		job_set_state(job, JOB_CLAIMING);
		jobrec_claim(job->rec, job->tick, job->cfg->per_tick, job_main_config(job)->node_id,
		             job->cfg->sched, job->cfg->history, job_claim_cb, job);
		return;
	}
	job_start_run(job);
}

static void
job_lease_lost_cb(struct lease *l, const char *why, void *arg)
{
	struct job *job = arg;

	(void)l;
	job->lease_ends[job->expiring ? JOB_LEASE_EXPIRY : JOB_LEASE_DELETED]++;
	log_warnx_limited(&job->lim_lost, "job %s: lease lost: %s", job->name, why);
	job->await_verify = 0;
	if (job_busy(job)) {
		/* Another host may take the lease now: the run must not outlive it. */
		svlink_job_stop(job_supervisor(job), job->run, SIGKILL, -1);
		job->lost_pending = 1;
		job_set_state(job, JOB_STOPPING);
		return;
	}
	job_after_loss(job);
}

static void
job_lease_failed_cb(struct lease *l, const char *why, void *arg)
{
	struct job *job = arg;

	if (job->stop_requested) {
		job_finish_stop(job);
		return;
	}
	if (job->manual_req != NULL) {
		job_manual_abort(job, "no_lease", why);
		job->tick = -1;
		if (job->ready)
			job_wait_tick(job);
		else
			job_set_state(job, JOB_IDLE);
		return;
	}
	if (job_scheduled(job) && job->tick >= 0 && lease_timed_out(l)) {
		log_debug("job %s: tick %lld: %s", job->name, (long long)job->tick, why);
		jobrec_missed(job->rec, job->tick, job_main_config(job)->node_id,
		              job->cfg->history);
		job_wait_tick(job);
		return;
	}
	log_warnx_limited(&job->lim_acquire, "job %s: could not acquire a lease: %s", job->name,
	                  why);
	job->tick = -1;
	if (!job->ready) {
		job_set_state(job, JOB_IDLE);
		return;
	}
	if (job_scheduled(job)) {
		job_wait_tick(job);
		return;
	}
	job_set_state(job, JOB_BACKOFF);
	job_timer(job->timer, JOB_RETRY_MS);
}

static void
job_lease_verified_cb(struct lease *l, void *arg)
{
	struct job *job = arg;

	(void)l;
	log_info("job %s: lease verified after the reconnect", job->name);
	if (job->await_verify && job->state == JOB_BACKOFF && !job_busy(job)) {
		job->await_verify = 0;
		job_start_run(job);
	}
}

/* Ask the supervisor to start the command under the current session's lease. */
static void
job_start_run(struct job *job)
{
	const struct config_job *cj = job->cfg;
	const struct config *cfg = job_main_config(job);
	struct zk *zk = job->zk;
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;

	if (job->stop_requested) {
		job_finish_stop(job);
		return;
	}
	/*
	 * A restart or a retry after a pause or a drain; a tick claimed before it still runs, and
	 * so does a manual run of a paused scheduled job (run-now --force).
	 */
	if (job->state != JOB_CLAIMING && (job->paused || job->drained) &&
	    !(job_scheduled(job) && job->manual_req != NULL && !job->manual_queued &&
	      !job->drained)) {
		job_manual_abort(job, "stopped", "the job was paused or the worker drained");
		job_release(job);
		if (job_scheduled(job))
			job_wait_tick(job);
		else
			job_hold(job);
		return;
	}
	if (lease_state(job->lease) == LEASE_UNVERIFIED) {
		job->await_verify = 1;
		job_set_state(job, JOB_BACKOFF);
		return;
	}
	if (lease_state(job->lease) != LEASE_HELD) {
		job_after_loss(job);
		return;
	}
	job->run = job->cb->next_run(job->cb_arg);
	job->run_start_ns = clock_now_ns();
	job->run_start_ms = clock_wall_ms();
	job->run_fence = lease_fence(job->lease);
	job->timed_out = 0;

	rs = job_runspec(job, cj->argv);
	rs.fence = job->run_fence;
	rs.leases = cj->leases;
	rs.deadline_ms = zk_timeout_ms(zk) - (int)cfg->safety_margin_ms;
	rs.tick = job->tick;
	rs.record_output = cj->record_output;
	rs.limits =
	    (struct proto_limits){cj->limits.memory_max, cj->limits.memory_high, cj->limits.cpu_max,
	                          cj->limits.tasks_max, cj->limits.io_weight};
	runspec_build(&rs, &spec);

	job_set_state(job, JOB_STARTING);
	svlink_job_start(job_supervisor(job), job->run, zk_epoch(zk), &spec);
	proto_spec_free(&spec);
}

/*
 * A run ended (or could not start): decide what follows (jobstate.c) and do it:
 * restart, retry, hand over, finish the tick, or carry out what was decided meanwhile.
 */
static void
job_run_end(struct job *job, struct jobstate_end *e)
{
	struct jobstate_counts c = {job->failures, job->cooldowns, job->attempt};
	struct jobstate_decision d;
	uint64_t delay;
	int manual = job->manual_ended;

	job->manual_ended = 0;
	if (job->manual_restart) {
		/* run-now of a continuous job: the copy stopped; the next one starts at once. */
		job->manual_restart = 0;
		if (!job->stop_requested && !job->lost_pending && !job->conflict_pending &&
		    !e->untrusted && !e->start_failed && !job->paused && !job->drained &&
		    lease_state(job->lease) == LEASE_HELD) {
			job_start_run(job);
			return;
		}
		job_manual_abort(job, "stopped",
		                 "the copy was stopped but is not started again here");
	}
	e->scheduled = job_scheduled(job);
	e->stop_requested = job->stop_requested;
	e->pending = job->lost_pending || job->conflict_pending;
	e->lease_idle = lease_state(job->lease) == LEASE_IDLE;
	e->max_failures = job->cfg->max_failures;
	e->retries = manual ? 0 : job->cfg->retries; /* a manual run is tried once */
	d = jobstate_run_ended(e, &c);
	job->failures = c.failures;
	job->cooldowns = c.cooldowns;
	job->attempt = c.attempt;
	if (d.counted && d.failed && !e->start_failed)
		job->failures_total++;
	log_debug("job %s: after the run: %s", job->name, jobstate_action_name(d.action));
	if ((job->paused || job->drained) &&
	    (d.action == JOBSTATE_RUN_AGAIN || d.action == JOBSTATE_RESTART ||
	     d.action == JOBSTATE_COOLDOWN || d.action == JOBSTATE_RETRY)) {
		/* Paused or drained: no restart, no retry; the lease goes now (a hand-over). */
		job_release(job);
		if (job_scheduled(job))
			job_wait_tick(job);
		else
			job_hold(job);
		return;
	}

	switch (d.action) {
	case JOBSTATE_FINISH:
		job_finish_stop(job);
		break;
	case JOBSTATE_AFTER_LOSS:
		job->lost_pending = 0;
		job_after_loss(job);
		break;
	case JOBSTATE_RUN_AGAIN:
		job_start_run(job);
		break;
	case JOBSTATE_COOLDOWN:
		/* Each cool-down in a row doubles, up to the cap: a job that never works must
		 * not churn the cluster for ever. */
		delay = job_backoff(job->cfg->restart_backoff_ms,
		                    job->cfg->max_failures + job->cooldowns);
		log_warnx_limited(
		    &job->lim_cooldown,
		    "job %s: failed %d times in a row: giving the lease up for %llu ms "
		    "so that another host can take over",
		    job->name, d.in_a_row, (unsigned long long)delay);
		job_release(job);
		job_set_state(job, JOB_COOLDOWN);
		job_timer(job->timer, delay);
		break;
	case JOBSTATE_RESTART:
		delay = d.failed ? job_backoff(job->cfg->restart_backoff_ms, job->failures)
		                 : job->cfg->restart_backoff_ms;
		log_info("job %s: restarting in %llu ms", job->name, (unsigned long long)delay);
		job_set_state(job, JOB_BACKOFF);
		job_timer(job->timer, delay);
		break;
	case JOBSTATE_RETRY:
		delay = job_backoff(job->cfg->retry_backoff_ms, job->attempt);
		log_info("job %s: retry %d of %d in %llu ms", job->name, job->attempt,
		         job->cfg->retries, (unsigned long long)delay);
		job_set_state(job, JOB_BACKOFF);
		job_timer(job->timer, delay);
		break;
	case JOBSTATE_NEXT_TICK:
		job_release(job);
		job_wait_tick(job);
		break;
	}
}

/* The back-off, retry or cool-down timer. */
static void
job_timer_cb(int fd, short what, void *arg)
{
	struct job *job = arg;

	(void)fd;
	(void)what;
	switch (job->state) {
	case JOB_BACKOFF:
		if (lease_state(job->lease) != LEASE_IDLE)
			job_start_run(job); /* restart, or retry the tick, under the lease held */
		else if (job_scheduled(job))
			job_wait_tick(job); /* the lease went meanwhile: this tick is over for us */
		else
			job_contend(job, -1);
		break;
	case JOB_COOLDOWN:
		job_contend(job, -1);
		break;
	case JOB_STANDBY:
		jobrec_peek(job->rec, job->tick, job->cfg->per_tick, job_main_config(job)->node_id,
		            job->cfg->sched, job_peek_cb, job);
		break;
	default:
		break;
	}
}

/* The run's timeout. */
static void
job_run_timer_cb(int fd, short what, void *arg)
{
	struct job *job = arg;
	char dur[32];

	(void)fd;
	(void)what;
	if (!job_busy(job))
		return;
	duration_format(job->cfg->timeout_ms, dur, sizeof dur);
	log_warnx("job %s: timeout (%s): stopping the run", job->name, dur);
	job->timed_out = 1;
	svlink_job_stop(job_supervisor(job), job->run, SIGTERM, (int64_t)job->cfg->kill_grace_ms);
}

/* A tick is due. */
static void
job_tick_cb(int fd, short what, void *arg)
{
	struct job *job = arg;
	int64_t tick = job->next_tick;
	uint64_t now = clock_wall_ms();

	(void)fd;
	(void)what;
	if (now + 5 < (uint64_t)tick * 1000) {
		/* Early (the wall clock moved): wait for the rest. */
		job_timer(job->tick_timer, (uint64_t)tick * 1000 - now);
		return;
	}
	job_arm_tick(job);
	if (!job->ready || !job->agreed || job->stop_requested)
		return;
	switch (job->state) {
	case JOB_WAITING:
		job_tick_due(job, tick);
		break;
	case JOB_STANDBY:
		/* A backup for an older tick: the newest due tick is what counts now. */
		evtimer_del(job->timer);
		jobrec_cancel_claim(job->rec);
		job_tick_due(job, tick);
		break;
	case JOB_CONTENDING:
		if (job->manual_req != NULL) {
			job->pending_tick = tick; /* after the manual run, as after any run */
			break;
		}
		/*
		 * Still waiting for a lease for an older tick: the newest due tick is what
		 * counts now (claims only move forward, so the older one could not run after
		 * it anyway). Keep the place in the queue; only the target and its deadline
		 * change.
		 */
		job->tick = tick;
		job->attempt = 0;
		lease_retime(job->lease, job->cfg->start_deadline_ms);
		break;
	default:
		/* Busy with a run: the tick is for the others, or for us right after. */
		job->pending_tick = tick;
		break;
	}
}

/* Arm the tick timer for the first fire time after now, and after the current one. */
static void
job_arm_tick(struct job *job)
{
	uint64_t now = clock_wall_ms();
	int64_t after = (int64_t)(now / 1000), next;

	if (job->next_tick > after)
		after = job->next_tick;
	next = schedule_next(job->cfg->sched, after);
	evtimer_del(job->tick_timer);
	job->next_tick = next;
	if (next < 0) {
		log_warnx("job %s: its schedule \"%s\" never fires", job->name, job->cfg->schedule);
		return;
	}
	job_timer(job->tick_timer, (uint64_t)next * 1000 > now ? (uint64_t)next * 1000 - now : 0);
}

/*
 * Between ticks: the timer armed for the next one. A tick that came due during the run
 * just ended is contended for now if it is still inside its start_deadline (another
 * worker may have run it meanwhile: the claim tells); past it, it is recorded as missed
 * unless someone ran it.
 */
static void
job_wait_tick(struct job *job)
{
	int64_t pending = job->pending_tick;

	job->tick = -1;
	job->pending_tick = -1;
	job_set_state(job, JOB_WAITING);
	if (!evtimer_pending(job->tick_timer, NULL))
		job_arm_tick(job);
	if (pending >= 0 && job->ready && job->agreed && !job->stop_requested)
		job_contend(job, pending);
	if (job->state == JOB_WAITING && job->manual_queued)
		job_manual_go(job);
	else if (job->state == JOB_WAITING)
		runreq_check(job->req);
}

/*
 * A continuous job that is paused or drained waits, holding nothing, in PAUSED or DRAINED;
 * 1 if so.
 */
static int
job_hold(struct job *job)
{
	if (job_scheduled(job) || (!job->paused && !job->drained))
		return 0;
	job_set_state(job, job->paused ? JOB_PAUSED : JOB_DRAINED);
	return 1;
}

/* Agreed and registered: start doing the job. */
static void
job_go(struct job *job)
{
	uint64_t now = clock_wall_ms();
	int64_t prev;

	if (!job->ready || !job->agreed || job->stop_requested)
		return;
	if (job->state != JOB_IDLE && job->state != JOB_CONFLICT)
		return;
	if (!job_scheduled(job)) {
		job_contend(job, -1);
		return;
	}
	job_wait_tick(job);
	if (job->paused || job->drained)
		return;
	/* Catch-up: the latest tick still within its start deadline, if nobody ran it. */
	prev = schedule_prev(job->cfg->sched, (int64_t)(now / 1000));
	if (prev >= 0 && now < (uint64_t)prev * 1000 + job->cfg->start_deadline_ms) {
		char when[32];

		clock_iso8601((uint64_t)prev * 1000, when, sizeof when);
		log_info("job %s: catching up the tick of %s, still inside its start_deadline",
		         job->name, when);
		job_contend(job, prev);
	}
}

/*
 * Not paused or drained any more: a continuous job held back contends again (a scheduled
 * one waits for its next tick as it did all along).
 */
static void
job_unhold(struct job *job)
{
	if (job->paused || job->drained)
		return;
	if (job->state == JOB_PAUSED || job->state == JOB_DRAINED) {
		job_set_state(job, JOB_IDLE);
		if (job->ready && !job->agreed)
			jobrec_check(job->rec);
		else
			job_go(job);
	}
}

/*
 * Paused or drained now: give up a lease being waited for, a restart or a retry; stop a
 * run if stop (SIGTERM, then SIGKILL after kill_grace, like any stop), else let it end.
 */
static void
job_hold_now(struct job *job, int stop)
{
	switch (job->state) {
	case JOB_CONTENDING:
	case JOB_BACKOFF:
	case JOB_COOLDOWN:
		/*
		 * A manual run of a scheduled job taken before the pause goes on, as job_start_run
		 * lets it; anything else lets go, and a request waiting on it ends: a manual request
		 * left set would make the next tick's lease start a run without a claim.
		 */
		if (!job->drained && job_scheduled(job) && job->manual_req != NULL &&
		    !job->manual_queued)
			break;
		evtimer_del(job->timer);
		job->await_verify = 0;
		job_release(job);
		job_manual_abort(job, "stopped",
		                 job->drained ? "the worker was drained before the run started"
		                              : "the job was paused before the run started");
		if (job_scheduled(job))
			job_wait_tick(job);
		else
			job_hold(job);
		break;
	case JOB_STARTING:
	case JOB_RUNNING:
		if (stop && job_busy(job)) {
			log_info("job %s: stopping the run (%s)", job->name,
			         job->drained ? "the worker is drained" : "paused, stop_running");
			svlink_job_stop(job_supervisor(job), job->run, SIGTERM,
			                (int64_t)job->cfg->kill_grace_ms);
			job_set_state(job, JOB_STOPPING);
		}
		break;
	default:
		/* IDLE: not contending yet; job_contend holds it back when it would. */
		break;
	}
}

/* The record's pause as last read: follow its changes. */
static void
job_pause_check(struct job *job)
{
	int stop, paused = jobrec_paused(job->rec, &stop) &&
	                   control_allow(CONTROL_PAUSE, job->name, "paused");

	if (paused == job->paused && !(paused && stop))
		return;
	if (paused != job->paused)
		log_info("job %s: %s cluster-wide", job->name, paused ? "paused" : "resumed");
	job->paused = paused;
	runreq_paused(job->req, paused);
	if (paused)
		job_hold_now(job, stop);
	else
		job_unhold(job);
}

/* The cluster's lease count is ours. */
static void
job_agreed_cb(struct jobrec *jr, void *arg)
{
	struct job *job = arg;

	(void)jr;
	if (job->state == JOB_CONFLICT)
		log_info("job %s: the cluster now agrees on %d lease(s)", job->name,
		         job->cfg->leases);
	job->agreed = 1;
	job_pause_check(job);
	job_go(job);
}

/* The cluster's lease count is not ours: stop contending until that changes. */
static void
job_conflict_cb(struct jobrec *jr, int cluster, void *arg)
{
	struct job *job = arg;

	(void)jr;
	if (cluster > 0)
		log_warnx(
		    "job %s: the cluster agreed on %d lease(s) but this worker is configured "
		    "with %d: not contending (set leases = %d in the job, or run `leasekeeper "
		    "set-leases %s %d` to change the cluster's count on purpose)",
		    job->name, cluster, job->cfg->leases, cluster, job->name, job->cfg->leases);
	/* cluster < 0: the record is corrupt, jobrec.c said so and why. */
	job->agreed = 0;
	job->await_verify = 0;
	evtimer_del(job->timer);
	if (job_busy(job)) {
		job->conflict_pending = 1;
		svlink_job_stop(job_supervisor(job), job->run, SIGTERM,
		                (int64_t)job->cfg->kill_grace_ms);
		job_set_state(job, JOB_STOPPING);
		return;
	}
	jobrec_cancel_claim(job->rec);
	job_release(job);
	job_manual_abort(job, "no_lease", "the cluster agreed on another lease count");
	evtimer_del(job->tick_timer);
	job_set_state(job, JOB_CONFLICT);
}

/*
 * Whether the job could act on a run-now request now: a scheduled job between ticks, or a
 * continuous one whose copy runs here; never on a drained worker.
 */
static int
job_can_take_cb(void *arg)
{
	struct job *job = arg;

	if (!job->ready || !job->agreed || job->stop_requested || job->drained ||
	    job->manual_req != NULL)
		return 0;
	if (job_scheduled(job))
		return job->state == JOB_WAITING;
	return job->state == JOB_RUNNING && lease_state(job->lease) == LEASE_HELD;
}

/* Act on the run-now request taken: contend for a lease and run, or restart the copy. */
static void
job_manual_go(struct job *job)
{
	char *data;

	job->manual_queued = 0;
	if (!job_scheduled(job)) {
		log_info("job %s: run-now request %s: restarting the running copy", job->name,
		         job->manual_req);
		job->manual_restart = 1;
		svlink_job_stop(job_supervisor(job), job->run, SIGTERM,
		                (int64_t)job->cfg->kill_grace_ms);
		job_set_state(job, JOB_STOPPING);
		return;
	}
	log_info("job %s: run-now request %s: contending for a lease", job->name, job->manual_req);
	job->tick = -1;
	job->attempt = 0;
	data = lease_data(job_main_config(job)->node_id, job->name, clock_wall_ms());
	lease_set_data(job->lease, data);
	free(data);
	job_set_state(job, JOB_CONTENDING);
	lease_acquire(job->lease, (uint64_t)job->manual_timeout_ms);
}

/*
 * A run-now request claimed for us: act on it now, or (a tick came meanwhile) once the job
 * is free again (job_wait_tick; a continuous copy that starts meanwhile is the restart).
 */
static void
job_take_cb(struct runreq *rr, const char *name, const char *by, int64_t timeout_ms, void *arg)
{
	struct job *job = arg;
	char *who = utf8_quote_str(by);

	(void)rr;
	log_info("job %s: run-now request %s by %s taken", job->name, name, who);
	free(who);
	if (job->manual_req != NULL || job->stop_requested) {
		/* Cannot happen (can_take said no), but must not leave the request hanging. */
		json_t *res = json_pack("{s:s, s:s}", "outcome", "lost", "error", "busy");

		runreq_finish(job->req, res);
		return;
	}
	job->manual_req = xstrdup(name);
	job->manual_by = xstrdup(by);
	job->manual_timeout_ms = timeout_ms;
	job->manual_queued = 1;
	if (job_scheduled(job) ? job->state == JOB_WAITING
	                       : job->state == JOB_RUNNING && job_busy(job))
		job_manual_go(job);
}

/* A job of the worker, idle until job_ready; cb tells it what it needs from the worker. */
struct job *
job_new(struct event_base *base, struct zk *zk, const struct config_job *cj,
        const struct job_cb *cb, void *arg)
{
	static const struct lease_cb lcb = {job_lease_acquired_cb, job_lease_lost_cb,
	                                    job_lease_failed_cb, job_lease_verified_cb};
	static const struct jobrec_cb rcb = {job_agreed_cb, job_conflict_cb, job_recorded_cb};
	static const struct runreq_cb qcb = {job_can_take_cb, job_take_cb};
	const struct config *cfg = cb->config(arg);
	struct job *job = xcalloc(1, sizeof *job);
	char *data;

	job->lim_lost.burst = 5; /* each one matters; only a storm is counted */
	job->zk = zk;
	job->cb = cb;
	job->cb_arg = arg;
	job->cfg = cj;
	job->name = xstrdup(cj->name);
	job->state = JOB_IDLE;
	job->tick = job->next_tick = job->pending_tick = -1;
	job->last_cpu_usec = job->last_peak = -1;
	job->last_outcome = job->last_status = -1;
	job->lock_path = xstrdup(cj->lock_znode);
	data = lease_data(cfg->node_id, cj->name, clock_wall_ms());
	job->lease = lease_new(base, zk, job->lock_path, cj->leases, data, &lcb, job);
	free(data);
	job->rec = jobrec_new(zk, cfg->root, cj->name, cj->leases, job->lock_path, &rcb, job);
	job->req = runreq_new(zk, cfg->root, cj->name, &qcb, job);
	job->timer = evtimer_new(base, job_timer_cb, job);
	job->tick_timer = evtimer_new(base, job_tick_cb, job);
	job->run_timer = evtimer_new(base, job_run_timer_cb, job);
	return job;
}

/* Free the job; its lease nodes are deleted (or go with the session). */
void
job_free(struct job *job)
{
	if (job == NULL)
		return;
	lease_free(job->lease);
	jobrec_free(job->rec);
	runreq_free(job->req);
	free(job->manual_req);
	free(job->manual_by);
	event_free(job->timer);
	event_free(job->tick_timer);
	event_free(job->run_timer);
	log_limit_flush(&job->lim_lost);
	log_limit_flush(&job->lim_acquire);
	log_limit_flush(&job->lim_cooldown);
	log_limit_flush(&job->lim_start);
	log_limit_flush(&job->lim_hook);
	while (job->nhookq > 0)
		proto_spec_free(&job->hookq[--job->nhookq].spec);
	free(job->lock_path);
	free(job->last_result);
	free(job->name);
	free(job);
}

/* The worker is registered in a session: check the agreement, then contend. */
void
job_ready(struct job *job)
{
	if (job->stop_requested || job->state == JOB_DONE)
		return;
	job->ready = 1;
	runreq_start(job->req, job_main_config(job)->node_id);
	if (job->state == JOB_IDLE || job->state == JOB_CONFLICT || job->state == JOB_PAUSED ||
	    job->state == JOB_DRAINED)
		jobrec_check(job->rec);
}

/* Session events, forwarded by the worker. */
void
job_session(struct job *job, enum zk_event event)
{
	if (event == ZK_EVENT_EXPIRED || event == ZK_EVENT_SESSION_NEW) {
		job->ready = 0;
		job->agreed = 0;
	}
	job->expiring = event == ZK_EVENT_EXPIRED;
	lease_session(job->lease, event);
	job->expiring = 0;
	jobrec_session(job->rec, event);
	runreq_session(job->req, event);
	if (event == ZK_EVENT_EXPIRED && !job_busy(job) && job->state != JOB_DONE &&
	    job->state != JOB_CONFLICT && job->state != JOB_STOPPING) {
		/* Nothing survives the session: start over once registered again. */
		evtimer_del(job->timer);
		evtimer_del(job->tick_timer);
		jobrec_cancel_claim(job->rec);
		job_release(job);
		job_manual_abort(job, "no_lease", "the session expired before the run started");
		job->tick = -1;
		job->await_verify = 0;
		job_set_state(job, JOB_IDLE);
	}
}

/* Stop: end the run (unless wait, then let it finish), release, and report done. */
void
job_stop(struct job *job, int wait)
{
	if (job->stop_requested && !wait && job->state == JOB_STOPPING)
		return;
	job->stop_requested = 1;
	evtimer_del(job->timer);
	evtimer_del(job->tick_timer);
	jobrec_cancel_claim(job->rec);
	if (!job_busy(job)) {
		if (job->state != JOB_DONE)
			job_finish_stop(job);
		return;
	}
	if (wait) {
		log_info("job %s: waiting for the run to finish (on_shutdown = wait)", job->name);
		return;
	}
	log_info("job %s: stopping the run", job->name);
	svlink_job_stop(job_supervisor(job), job->run, SIGTERM, (int64_t)job->cfg->kill_grace_ms);
	job_set_state(job, JOB_STOPPING);
}

/* A reload found the job unchanged: adopt the new configuration's copy. */
void
job_update(struct job *job, const struct config_job *cj)
{
	job->cfg = cj;
}

/* The supervisor started the run. */
void
job_started(struct job *job, uint32_t run, pid_t pid)
{
	char fields[96];

	if (run != 0 && run == job->hook_run) {
		log_debug("job %s: its %s runs, pid %d", job->name, job->hook_key, (int)pid);
		return;
	}
	if (run != job->run)
		return;
	job->pid = pid;
	job->runs++;
	job_run_fields(job, run, fields, sizeof fields);
	log_info("job %s: running, pid %d%s", job->name, (int)pid, fields);
	if (job->state == JOB_STARTING)
		job_set_state(job, JOB_RUNNING);
	if (job->cfg->timeout_ms > 0)
		job_timer(job->run_timer, job->cfg->timeout_ms);
	if (!job_scheduled(job)) {
		/* run-now of a continuous job: done once a new copy runs. */
		job_manual_end(job, json_pack("{s:s, s:s, s:I, s:i}", "outcome", "restarted",
		                              "node", job_main_config(job)->node_id, "fence",
		                              (json_int_t)job->run_fence, "pid", (int)pid));
		runreq_check(job->req);
	}
}

/* The supervisor could not start the run. */
void
job_start_failed(struct job *job, uint32_t run, const char *why)
{
	struct jobstate_end e = {0};

	if (run != 0 && run == job->hook_run) {
		job_hook_end(job, 1, why);
		return;
	}
	if (run != job->run)
		return;
	e.start_failed = 1;
	job->run = 0;
	job->pid = 0;
	job->failures_total++;
	log_warnx_limited(&job->lim_start, "job %s: could not start: %s", job->name, why);
	job_set_result(job, "could not start: %s", why);
	job_count_end(job, JOB_OUTCOME_START_FAILED, 0);
	job_record(job, "failed", JOB_OUTCOME_START_FAILED, 0, 0, why, NULL);
	job_run_end(job, &e);
}

/*
 * The run ended, and all of it is gone (its cgroup, or its process group). The outcome:
 * aborted (the lease could not be trusted), oom (the OOM killer killed in its cgroup),
 * timeout, stopped, ok or failed, in that order.
 */
void
job_exited(struct job *job, uint32_t run, int status, enum proto_exit_reason reason,
           const struct proto_usage *u)
{
	uint64_t ran_ms = (clock_now_ns() - job->run_start_ns) / CLOCK_NS_PER_MS;
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !job->timed_out &&
	         reason != PROTO_EXIT_OOM;
	struct jobstate_end e = {0};
	enum job_outcome outcome;
	const char *what;
	char how[64], used[96], fields[96];

	if (run != 0 && run == job->hook_run) {
		if (WIFEXITED(status))
			snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
		else
			snprintf(how, sizeof how, "signal %d%s", WTERMSIG(status),
			         reason == PROTO_EXIT_DEADLINE ? ", at its hook_timeout" : "");
		job_hook_end(job, !WIFEXITED(status) || WEXITSTATUS(status) != 0, how);
		return;
	}
	if (run != job->run)
		return;
	job_run_fields(job, run, fields, sizeof fields);
	job->run = 0;
	job->pid = 0;
	evtimer_del(job->run_timer);
	if (WIFEXITED(status))
		snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof how, "signal %d", WTERMSIG(status));

	if (reason == PROTO_EXIT_DEADLINE || reason == PROTO_EXIT_EPOCH || job->lost_pending)
		outcome = JOB_OUTCOME_KILLED;
	else if (reason == PROTO_EXIT_OOM)
		outcome = JOB_OUTCOME_OOM;
	else if (job->timed_out)
		outcome = JOB_OUTCOME_TIMEOUT;
	else if (job->stop_requested || job->conflict_pending || reason == PROTO_EXIT_STOPPED)
		outcome = JOB_OUTCOME_STOPPED;
	else
		outcome = ok ? JOB_OUTCOME_OK : JOB_OUTCOME_FAILED;
	/* The record's "reason" as older versions wrote it: "aborted" for killed. */
	what = outcome == JOB_OUTCOME_KILLED ? "aborted" : job_outcome_name(outcome);
	if (reason == PROTO_EXIT_DEADLINE)
		job->lease_ends[JOB_LEASE_DEADLINE]++;
	job_count_end(job, outcome, 1);
	job->last_status = status;
	job->last_cpu_usec = u->cpu_usec;
	job->last_peak = u->mem_peak;
	if (u->cpu_usec >= 0)
		job->cpu_usec_total += (uint64_t)u->cpu_usec;
	if (reason == PROTO_EXIT_OOM)
		job->ooms++;
	used[0] = '\0';
	if (u->cpu_usec >= 0)
		snprintf(used, sizeof used, ", cpu %.3f s", (double)u->cpu_usec / 1e6);
	if (u->mem_peak >= 0)
		snprintf(used + strlen(used), sizeof used - strlen(used), ", peak memory %.1f MiB",
		         (double)u->mem_peak / (1024.0 * 1024.0));
	if (reason == PROTO_EXIT_OOM)
		log_warnx("job %s: run ended after %llu ms: %s (oom: the OOM killer ended it; "
		          "memory_max is %llu bytes)%s%s",
		          job->name, (unsigned long long)ran_ms, how,
		          (unsigned long long)job->cfg->limits.memory_max, used, fields);
	else
		log_info("job %s: run ended after %llu ms: %s (%s)%s%s", job->name,
		         (unsigned long long)ran_ms, how, what, used, fields);
	job_set_result(job, "%s (%s)", what, how);
	job_record(job, what, outcome, status, 1, NULL, u);
	e.ok = ok;
	e.long_run = ran_ms >= JOB_LONG_RUN_MS;
	e.untrusted = reason == PROTO_EXIT_DEADLINE || reason == PROTO_EXIT_EPOCH;
	job_run_end(job, &e);
}

/* The supervisor died: the run died with it; the lease can no longer be trusted. */
void
job_supervisor_died(struct job *job)
{
	if (job_busy(job)) {
		job->run = 0;
		job->pid = 0;
		evtimer_del(job->run_timer);
		job_set_result(job, "aborted (the supervisor died)");
		job_count_end(job, JOB_OUTCOME_KILLED, 1);
		job_record(job, "aborted", JOB_OUTCOME_KILLED, 0, 0, "the supervisor died", NULL);
	}
	if (job->hook_run != 0)
		job_hook_end(job, 1, "the supervisor died");
	evtimer_del(job->timer);
	jobrec_cancel_claim(job->rec);
	job->lost_pending = job->conflict_pending = job->await_verify = 0;
	if (job->stop_requested) {
		job_finish_stop(job);
		return;
	}
	if (lease_state(job->lease) != LEASE_IDLE)
		log_warnx("job %s: releasing its lease: the supervisor died", job->name);
	job_release(job);
	job_manual_abort(job, "killed", "the supervisor died");
	job->tick = -1;
	evtimer_del(job->tick_timer);
	job_set_state(job, JOB_IDLE);
}

/*
 * The worker is drained (or not any more): take no new lease; stop a continuous run at
 * once (a hand-over), a scheduled one only if stop_runs (the drain's deadline).
 */
void
job_drain(struct job *job, int drained, int stop_runs)
{
	if (job->stop_requested || job->state == JOB_DONE)
		return;
	job->drained = drained;
	if (drained)
		job_hold_now(job, stop_runs || !job_scheduled(job));
	else
		job_unhold(job);
}

/* Whether the job holds a lease, or waits for one, or runs. */
int
job_holds_lease(const struct job *job)
{
	return job_busy(job) || lease_state(job->lease) != LEASE_IDLE;
}

/* Whether the job was told to stop (for good). */
int
job_stopping(const struct job *job)
{
	return job->stop_requested;
}

/* Whether run is this job's current run. */
int
job_owns_run(const struct job *job, uint32_t run)
{
	return run != 0 && (job->run == run || job->hook_run == run);
}

/* The job's name. */
const char *
job_name(const struct job *job)
{
	return job->name;
}

/* The job's configuration. */
const struct config_job *
job_config(const struct job *job)
{
	return job->cfg;
}

/* The job's state. */
enum job_state
job_state(const struct job *job)
{
	return job->state;
}

/* The job's counters and whether it holds a lease. */
void
job_stats(const struct job *job, struct job_stats *st)
{
	enum lease_state ls = lease_state(job->lease);

	st->lease_held = ls == LEASE_HELD || ls == LEASE_UNVERIFIED;
	st->runs = job->runs;
	st->failures = job->failures_total;
	st->corrupt_states = jobrec_corrupt_states(job->rec);
	st->cpu_usec = job->cpu_usec_total;
	st->ooms = job->ooms;
	st->last_peak = job->last_peak;
	memcpy(st->outcomes, job->outcomes, sizeof st->outcomes);
	memcpy(st->lease_ends, job->lease_ends, sizeof st->lease_ends);
	st->acquisitions = job->acquisitions;
	st->missed_ticks = jobrec_missed_ticks(job->rec);
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

/* An outcome's name, as records and metrics spell it. */
const char *
job_outcome_name(enum job_outcome outcome)
{
	return job_outcome_names[outcome];
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
	              "state", job_state_name(job->state), "schedule", job->cfg->schedule, "leases",
	              job->cfg->leases, "lock_path", job->lock_path, "lease_state",
	              lease_state_name(lease_state(job->lease)), "lease_held", st.lease_held,
	              "fence", (json_int_t)(job_busy(job) ? job->run_fence : 0), "runs",
	              (json_int_t)st.runs, "failures", (json_int_t)st.failures,
	              "consecutive_failures", job->failures);
	if (job->pid > 0)
		json_object_set_new(o, "pid", json_integer(job->pid));
	if (jobrec_cluster_leases(job->rec) > 0)
		json_object_set_new(o, "cluster_leases",
		                    json_integer(jobrec_cluster_leases(job->rec)));
	json_object_set_new(o, "corrupt_states", json_integer(st.corrupt_states));
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
