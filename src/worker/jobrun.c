/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * jobrun.c: a job's run: started and stopped through the supervisor as the machine asks,
 * the supervisor's news of it fed back as events, and its end counted, logged and
 * recorded in ZooKeeper with the outcome the machine decided.
 */

#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "duration.h"
#include "joblocks.h"
#include "jobpriv.h"
#include "jobrec.h"
#include "runjournal.h"
#include "lease.h"
#include "stopreq.h"
#include "svlink.h"
#include "utf8.h"

#define JOB_LONG_RUN_MS 60000ULL /* a run this long resets the failure count */
/* The output in a run record, escaped: under what status and logs parse (64 KiB). */
#define JOB_OUTPUT_JSON_MAX 49152

/*
 * What a run and a hook of the job share: its command line argv, environment, user, working
 * directory, log and grace; the caller adds what is its own (fence, deadline, tick, facts).
 */
struct runspec
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

/*
 * Name a run at its start: "<node>-<boot>-<n>", the node id (bytes other than letters,
 * digits, '.', '_' and '-' as '_', at most 100), the wall second this worker process named
 * its first run, and the process's run number. A node id is one worker at a time in the
 * cluster, and a worker restarted under it starts a second or more later: no two runs share
 * an id. The id goes to the log lines (run=), the supervisor, the run's and the hooks'
 * environment (LEASEKEEPER_RUN_ID), the run record ("run_id") and `logs --run`.
 */
static void
job_run_name(struct job *job, const char *node)
{
	static uint64_t boot;
	size_t i, n = strlen(node) < 100 ? strlen(node) : 100;
	char *p = job->run_id;

	if (boot == 0)
		boot = clock_wall_ms() / 1000;
	for (i = 0; i < n; i++)
		*p++ = strchr("._-", node[i]) != NULL || (node[i] >= 'a' && node[i] <= 'z') ||
		               (node[i] >= 'A' && node[i] <= 'Z') ||
		               (node[i] >= '0' && node[i] <= '9')
		           ? node[i]
		           : '_';
	snprintf(p, sizeof job->run_id - n, "-%llu-%lu", (unsigned long long)boot,
	         (unsigned long)job->run);
}

/* Ask the supervisor to start the command under the current session's lease. */
void
job_start_run(struct job *job)
{
	const struct config_job *cj = job->cfg;
	const struct config *cfg = job_main_config(job);
	struct zk *zk = job->zk;
	struct proto_spec spec = {NULL, 0};
	struct runspec rs;
	char **env;
	json_t *chained = json_object();

	job->run = job->cb->next_run(job->cb_arg);
	job_run_name(job, cfg->node_id);
	job->run_fence = lease_fence(job->lease);
	/*
	 * Journaled first: if main dies now, its next process records the run (runjournal.c),
	 * a chained run with the parent runs it answers, as its own record would.
	 */
	job_chain_record(job, chained, job->fsm.tick, job->fsm.kind);
	runjournal_begin(job->cb->journal(job->cb_arg), job->name, job->run_id, job->fsm.tick,
	                 job->run_fence, json_object_get(chained, "after"));
	json_decref(chained);
	if (svlink_containment(job_supervisor(job)) < 0) {
		/*
		 * A new supervisor that has not said hello yet is still emptying what the dead
		 * one's runs left, and at its hello every job gives up the lease it held (the
		 * dead one's runs could have left a process): a run started now would outlive
		 * its lease. Refused at once, like a start to a dead supervisor.
		 */
		job_start_failed(job, job->run, "the supervisor is not ready yet");
		return;
	}
	job->run_start_ns = clock_now_ns();
	job->run_start_ms = clock_wall_ms();

	rs = job_runspec(job, cj->argv);
	rs.run_id = job->run_id;
	env = job_params_env(job, &rs);     /* the job's env and its parameters */
	env = job_chain_env(job, &rs, env); /* and the parents' runs of a chained run */
	rs.fence = job->run_fence;
	rs.fences = lease_fences(job->lease);
	rs.leases = cj->leases;
	rs.deadline_ms = zk_timeout_ms(zk) - (int)cfg->safety_margin_ms;
	rs.tick = job->fsm.tick;
	rs.record_output = cj->record_output;
	rs.limits =
	    (struct proto_limits){cj->limits.memory_max, cj->limits.memory_high, cj->limits.cpu_max,
	                          cj->limits.tasks_max, cj->limits.io_weight};
	runspec_build(&rs, &spec);
	job_free_env(env);
	/* A refusal comes back at once (job_start_failed): the machine made this its last act. */
	svlink_job_start(job_supervisor(job), job->run, zk_epoch(zk), &spec);
	proto_spec_free(&spec);
}

/* Ask the supervisor to stop the run: SIGTERM then SIGKILL after kill_grace, or SIGKILL. */
void
job_stop_run(struct job *job, const struct jobfsm_action *a)
{
	char dur[32];

	switch (a->why) {
	case JOBFSM_WHY_TIMEOUT:
		duration_format(job->cfg->timeout_ms, dur, sizeof dur);
		log_warnx("job %s: timeout (%s): stopping the run", job->name, dur);
		break;
	case JOBFSM_WHY_STOP:
		log_info("job %s: stopping the run", job->name);
		break;
	case JOBFSM_WHY_PAUSED:
	case JOBFSM_WHY_DRAINED:
		log_info("job %s: stopping the run (%s)", job->name,
		         a->why == JOBFSM_WHY_DRAINED ? "the worker is drained"
		                                      : "paused, stop_running");
		break;
	default:
		break; /* a lost lease, a conflict and a run-now say so themselves */
	}
	svlink_job_stop(job_supervisor(job), job->run, a->sig,
	                a->sig == SIGKILL ? -1 : (int64_t)job->cfg->kill_grace_ms);
}

/*
 * The fields that find a run in the logs, as key=value at the end of its lines
 * (docs/design.md, "Logs"): " run=ID fence=N", and " tick=TIME" for a scheduled run.
 */
static void
job_run_fields(const struct job *job, uint32_t run, char *buf, size_t len)
{
	char when[40];

	(void)run;
	snprintf(buf, len, " run=%s fence=%lld", job->run_id, (long long)job->run_fence);
	if (job->fsm.tick >= 0) {
		clock_iso8601((uint64_t)job->fsm.tick * 1000, when, sizeof when);
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

/* A run-now's fields in its run record; a scheduled job's request gets the record as result. */
static void
job_record_manual(struct job *job, json_t *o, const struct jobfsm_action *a)
{
	json_t *res;

	json_object_set_new(o, "by", json_string(job->manual_by));
	json_object_set_new(o, "request", json_string(job->manual_req));
	if (job->manual_params != NULL && json_object_size(job->manual_params) > 0)
		json_object_set(o, "params", job->manual_params);
	if (!a->manual_result)
		return;
	res = json_deep_copy(o);
	json_object_set_new(o, "reason", json_string("manual"));
	json_object_del(res, "by");
	json_object_del(res, "request");
	json_object_del(res, "reason");
	json_object_del(res, "status");
	json_object_del(res, "output"); /* the run record keeps it: leasekeeper logs */
	job_manual_end(job, res);
}

/* A time the supervisor stamped (wall ms, >= 0) into the record as key, ISO 8601. */
static void
job_record_time(json_t *o, const char *key, int64_t ms)
{
	char when[40];

	if (ms < 0)
		return;
	clock_iso8601((uint64_t)ms, when, sizeof when);
	json_object_set_new(o, key, json_string(when));
}

/* The signals the supervisor sent the run: when, which, and why (docs/outcomes.md). */
static void
job_record_signals(json_t *o, const struct proto_usage *u)
{
	if (u->term_ms >= 0) {
		job_record_time(o, "term_sent", u->term_ms);
		json_object_set_new(o, "term_signal", json_integer(u->term_sig));
		json_object_set_new(o, "term_reason",
		                    json_string(proto_signal_why_name(u->term_why)));
	}
	if (u->kill_ms >= 0) {
		job_record_time(o, "kill_sent", u->kill_ms);
		json_object_set_new(o, "kill_reason",
		                    json_string(proto_signal_why_name(u->kill_why)));
	}
}

/*
 * Record a finished run in ZooKeeper, with its usage when known (u may be NULL). Its start
 * and end are the supervisor's (exec, and the last process gone) when it sent them: main
 * may have been stopped or slow since, and writes them as they are.
 */
static void
job_record(struct job *job, const struct jobfsm_action *a, const char *reason, int status,
           int have_status, const char *error, const struct proto_usage *u)
{
	char start[40], end[40], tick[40];
	uint64_t start_ms = job->run_start_ms, end_ms = clock_wall_ms();
	json_t *o;

	if (u != NULL && u->exec_ms >= 0)
		start_ms = (uint64_t)u->exec_ms;
	if (u != NULL && u->end_ms >= 0)
		end_ms = (uint64_t)u->end_ms;
	else if (u == NULL && job->sv_died_ms != 0 && job->sv_died_ms >= start_ms)
		end_ms = job->sv_died_ms;
	clock_iso8601(start_ms, start, sizeof start);
	clock_iso8601(end_ms, end, sizeof end);
	o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I}", "node", job_main_config(job)->node_id,
	              "fence", (json_int_t)job->run_fence, "start", start, "end", end, "reason",
	              reason, "duration_ms",
	              (json_int_t)(end_ms > start_ms ? end_ms - start_ms : 0));
	/* "outcome", "exit_status" and "tick_time" are additive: older readers read the rest. */
	json_object_set_new(o, "locks", joblocks_json(job->lease));
	json_object_set_new(o, "outcome", json_string(job_outcome_name(a->outcome)));
	json_object_set_new(o, "run_id", json_string(job->run_id));
	if (a->tick >= 0) {
		json_object_set_new(o, "tick", json_integer(a->tick));
		clock_iso8601((uint64_t)a->tick * 1000, tick, sizeof tick);
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
	if (u != NULL)
		job_record_signals(o, u);
	if (a->manual)
		job_record_manual(job, o, a);
	job_chain_record(job, o, a->tick, a->kind);
	if (job->halt_by != NULL) /* `leasekeeper stop` ended it */
		json_object_set_new(o, "stopped_by", json_string(job->halt_by));
	runjournal_record(job->cb->journal(job->cb_arg), job->name, job->run_id, o);
	jobrec_record_run(job->rec, o, job->cfg->history);
}

/* The run ended as the machine says (a->outcome): count it, log it, record it. */
static void
job_exit_recorded(struct job *job, const struct jobfsm_action *a, const struct job_ctx *ctx)
{
	const struct proto_usage *u = ctx->u;
	int status = ctx->status;
	const char *what;
	char how[64], used[96];

	if (WIFEXITED(status))
		snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(how, sizeof how, "signal %d", WTERMSIG(status));
	what = job_outcome_name(a->outcome); /* one name everywhere (docs/outcomes.md) */
	if (a->untrusted)
		job->lease_ends[JOB_LEASE_DEADLINE]++;
	job_count_end(job, a->outcome, 1);
	job->last_status = status;
	job->last_cpu_usec = u->cpu_usec;
	job->last_peak = u->mem_peak;
	if (u->cpu_usec >= 0)
		job->cpu_usec_total += (uint64_t)u->cpu_usec;
	if (a->outcome == JOB_OUTCOME_OOM)
		job->ooms++;
	used[0] = '\0';
	if (u->cpu_usec >= 0)
		snprintf(used, sizeof used, ", cpu %.3f s", (double)u->cpu_usec / 1e6);
	if (u->mem_peak >= 0)
		snprintf(used + strlen(used), sizeof used - strlen(used), ", peak memory %.1f MiB",
		         (double)u->mem_peak / (1024.0 * 1024.0));
	if (a->outcome == JOB_OUTCOME_OOM)
		log_warnx("job %s: run ended after %llu ms: %s (oom: the OOM killer ended it; "
		          "memory_max is %llu bytes)%s%s",
		          job->name, (unsigned long long)ctx->ran_ms, how,
		          (unsigned long long)job->cfg->limits.memory_max, used, ctx->fields);
	else
		log_info("job %s: run ended after %llu ms: %s (%s)%s%s", job->name,
		         (unsigned long long)ctx->ran_ms, how, what, used, ctx->fields);
	job_set_result(job, "%s (%s)", what, how);
	/* The record's "reason" as older versions wrote it: "aborted" for killed. */
	job_record(job, a, a->outcome == JOB_OUTCOME_KILLED ? "aborted" : what, status, 1, NULL, u);
}

/* The machine's RECORD: the run is over; event says how it ended. */
void
job_run_ended(struct job *job, const struct jobfsm_action *a, enum jobfsm_event event,
              const struct job_ctx *ctx)
{
	job->run = 0;
	job->pid = 0;
	job_running_del(job);
	switch (event) {
	case JOBFSM_START_FAILED:
		log_warnx_limited(&job->lim_start, "job %s: could not start: %s", job->name,
		                  ctx->why);
		job_set_result(job, "could not start: %s", ctx->why);
		job_count_end(job, JOB_OUTCOME_START_FAILED, 0);
		job_record(job, a, "failed", 0, 0, ctx->why, NULL);
		break;
	case JOBFSM_EXITED:
		job_exit_recorded(job, a, ctx);
		break;
	default: /* JOBFSM_SUPERVISOR_DIED */
		job_set_result(job, "killed (the supervisor died)");
		job_count_end(job, JOB_OUTCOME_KILLED, 1);
		job_record(job, a, "aborted", 0, 0, "the supervisor died", NULL);
		break;
	}
}

/* The run's timeout. */
void
job_run_timer_cb(int fd, short what, void *arg)
{
	struct job *job = arg;
	struct jobfsm_input in;

	(void)fd;
	(void)what;
	if (job->run == 0)
		return;
	job_input(job, &in, JOBFSM_RUN_TIMEOUT);
	job_feed(job, &in, NULL);
}

/* The supervisor started the run. */
void
job_started(struct job *job, uint32_t run, pid_t pid)
{
	struct jobfsm_input in;
	char fields[256];

	if (run != 0 && run == job->hook_run) {
		log_debug("job %s: its %s runs, pid %d", job->name, job->hook_key, (int)pid);
		return;
	}
	if (run != job->run)
		return;
	job->pid = pid;
	job->runs++;
	job_running_add(job); /* visible from any host while it runs */
	job_run_fields(job, run, fields, sizeof fields);
	log_info("job %s: running, pid %d%s", job->name, (int)pid, fields);
	job_health_started(job);
	job_input(job, &in, JOBFSM_STARTED);
	job_feed(job, &in, NULL);
	stopreq_ran(job->stops); /* a stop that came while the copy was restarting */
}

/* The supervisor could not start the run. */
void
job_start_failed(struct job *job, uint32_t run, const char *why)
{
	struct job_ctx ctx = {.why = why};
	struct jobfsm_input in;

	if (run != 0 && run == job->hook_run) {
		job_hook_end(job, 1, why);
		return;
	}
	if (run != job->run)
		return;
	job_input(job, &in, JOBFSM_START_FAILED);
	in.host = job_health_failed(job, why);
	job_feed(job, &in, &ctx);
}

/*
 * The run ended, and all of it is gone (its cgroup, or its process group). The machine
 * decides the outcome: killed (the lease could not be trusted), oom, timeout, stopped, ok
 * or failed, in that order.
 */
void
job_exited(struct job *job, uint32_t run, int status, enum proto_exit_reason reason,
           const struct proto_usage *u)
{
	uint64_t ran_ms = (clock_now_ns() - job->run_start_ns) / CLOCK_NS_PER_MS;
	struct job_ctx ctx = {NULL, status, reason, u, ran_ms, NULL};
	struct jobfsm_input in;
	char how[64], fields[256];

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
	if (u->exec_ms >= 0 && u->end_ms >= u->exec_ms) /* as long as it ran, not as we heard */
		ctx.ran_ms = (uint64_t)(u->end_ms - u->exec_ms);
	job_run_fields(job, run, fields, sizeof fields);
	ctx.fields = fields;
	job_input(job, &in, JOBFSM_EXITED);
	in.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	in.long_run = ctx.ran_ms >= JOB_LONG_RUN_MS;
	in.reason = reason;
	job_feed(job, &in, &ctx);
}

/*
 * The supervisor died: the run died with it (at run_died_ms, job_supervisor_gone; else
 * died_ms, when main saw the supervisor gone), which is the run's recorded end unless a
 * process that had left the group lived on (job_run_outlived); the lease can no longer be
 * trusted.
 */
void
job_supervisor_died(struct job *job, uint64_t died_ms)
{
	struct jobfsm_input in;

	if (job->hook_run != 0)
		job_hook_end(job, 1, "the supervisor died");
	if (!job->fsm.stop_requested && lease_state(job->lease) != LEASE_IDLE)
		log_warnx("job %s: releasing its lease: the supervisor died", job->name);
	job_input(job, &in, JOBFSM_SUPERVISOR_DIED);
	if (job->run_died_ms != 0)
		died_ms = job->run_died_ms;
	job->sv_died_ms = job->outlived_ms > died_ms ? job->outlived_ms : died_ms;
	job_feed(job, &in, NULL);
	job->sv_died_ms = job->outlived_ms = job->run_died_ms = 0;
}

/*
 * The supervisor sv just died: note when the job's run ended (svlink_run_end_ms: with the
 * supervisor, by its witness, or at main's kill of the group), before sv is replaced.
 */
void
job_supervisor_gone(struct job *job, const struct svlink *sv)
{
	if (job->run != 0)
		job->run_died_ms = svlink_run_end_ms(sv, job->run);
}

/*
 * The dead supervisor's run (its number) kept processes that had left its process group
 * until the next supervisor killed them, at gone_ms: that, not main's kill, is its end.
 */
void
job_run_outlived(struct job *job, uint32_t run, uint64_t gone_ms)
{
	if (run != 0 && job->run == run)
		job->outlived_ms = gone_ms;
}
