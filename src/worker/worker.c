/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * worker.c: the daemon: one worker per host, running its jobs under leases.
 *
 * Start-up: fork the supervisor (the parent of every job), open the ZooKeeper session,
 * create the root paths and register <root>/workers/<node_id> as an ephemeral node. A
 * node id held by another live session means another worker already runs with it: we
 * wait up to a session timeout for it to go (a previous incarnation of this worker
 * killed without closing its session leaves its node behind until it expires), then
 * refuse to start. After registration the jobs contend for their leases.
 *
 * A worker is drained while <root>/drain/<node_id> exists (`leasekeeper drain`): it watches
 * the folder's children, so it learns of a drain or an undrain at once, after a reconnect and
 * at start-up alike; its jobs take no new lease, and it says "drained" in its node.
 *
 * Everything runs on one libevent loop: the session, timers, the supervisor's socket
 * and the signals, which all arrive as events and go through worker_signal_cb.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "aclcheck.h"
#include "ctlrec.h"
#include "cgroup.h"
#include "clock.h"
#include "compat.h"
#include "config.h"
#include "endpoints.h"
#include "job.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "members.h"
#include "runjournal.h"
#include "runout.h"
#include "nodedata.h"
#include "runspec.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker.h"
#include "worker-int.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

static const char *worker_state_names[] = {
    "CONNECTING", "REGISTERING", "DUPLICATE", "READY", "STOPPING",
};

static void worker_start_supervisor(struct worker *);

/* The name of a worker state, for logs and /status. */
const char *
worker_state_name(enum worker_state state)
{
	return worker_state_names[state];
}

/* Move to a new state, logging the transition by name. */
void
worker_set_state(struct worker *w, enum worker_state state)
{
	if (w->state == state)
		return;
	log_debug("worker: %s -> %s", worker_state_names[w->state], worker_state_names[state]);
	w->state = state;
}

/* How runs are contained, by name ("unknown" until the supervisor said). */
const char *
worker_containment_cb(void *arg)
{
	struct worker *w = arg;
	int mode = w->sv != NULL ? svlink_containment(w->sv) : -1;

	return mode < 0 ? "unknown" : proto_containment_name((enum proto_containment)mode);
}

/* Whether this worker carries job cj: its labels match the job's constraint. */
int
worker_carries(const struct config *cfg, const struct config_job *cj, char *why, size_t size)
{
	return config_job_matches(cj, cfg->labels, why, size);
}

/* Log the jobs of cfg that this worker does not carry, and why. */
void
worker_log_excluded(const struct config *cfg)
{
	char why[CONFIG_TERM_MAX];
	size_t i;

	for (i = 0; i < cfg->njobs; i++) {
		if (!worker_carries(cfg, cfg->jobs_list[i], why, sizeof why))
			log_info("job %s: not run here: its constraint %s does not hold for this "
			         "worker's labels",
			         cfg->jobs_list[i]->name, why);
	}
}

/*
 * Whether jobs may contend: the supervisor said how it contains runs, after it emptied
 * and removed what a previous supervisor or worker left (PROTO_HELLO).
 */
int
worker_sv_ready(struct worker *w)
{
	int mode = svlink_containment(w->sv);

	return mode >= 0 && mode != PROTO_CONTAIN_FAILED;
}

/* Forward a session event to every job. */
static void
worker_jobs_session(struct worker *w, enum zk_event event)
{
	struct worker_job *wj, *next;

	members_session(w->members, event);
	worker_placement_changed_cb(w); /* a span seen with no worker ends with the connection */
	if (event == ZK_EVENT_SESSION_NEW || event == ZK_EVENT_EXPIRED || event == ZK_EVENT_CLOSED)
		w->drain_watching = 0; /* watches do not outlive their session */
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_session(wj->job, event);
	}
}

/*
 * The deadline moved: note how much time the old one still had. Its least value over a
 * run is how close the heartbeat came to letting the jobs be killed (0: it did).
 */
static void
worker_deadline_moved(struct worker *w)
{
	uint64_t now = clock_now_ns(), left;

	if (w->deadline_ns != 0) {
		left = w->deadline_ns > now ? w->deadline_ns - now : 0;
		if (left < w->deadline_low_ns)
			w->deadline_low_ns = left;
	}
	w->deadline_ns = zk_deadline_ns(w->zk);
}

/* What the session tells us. */
static void
worker_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct worker *w = arg;

	switch (event) {
	case ZK_EVENT_DEADLINE:
		worker_deadline_moved(w);
		/*
		 * Thousands of answers a second (a reload) would each be a message: tell the
		 * supervisor when the deadline moved by WORKER_DEADLINE_PUSH_MS. The deadline it
		 * holds is then at most that much earlier than ours: it kills sooner, never later.
		 */
		if (zk_epoch(zk) != w->sv_epoch ||
		    zk_deadline_ns(zk) >=
		        w->sv_deadline_ns + WORKER_DEADLINE_PUSH_MS * CLOCK_NS_PER_MS) {
			w->sv_epoch = zk_epoch(zk);
			w->sv_deadline_ns = zk_deadline_ns(zk);
			svlink_session(w->sv, zk, event);
		}
		break;
	case ZK_EVENT_SESSION_NEW:
		worker_jobs_session(w, event);
		if (w->state != WORKER_STOPPING)
			worker_node_register(w);
		break;
	case ZK_EVENT_RECONNECTED:
		w->session_reconnects++;
		worker_jobs_session(w, event);
		if (w->state == WORKER_REGISTERING)
			worker_node_register(w);
		else if (w->state == WORKER_DUPLICATE)
			worker_node_dup_reconnected(w);
		break;
	case ZK_EVENT_DISCONNECTED:
		worker_jobs_session(w, event);
		break;
	case ZK_EVENT_EXPIRED:
		w->session_expiries++;
		svlink_session(w->sv, zk, event);
		worker_jobs_session(w, event);
		if (w->state != WORKER_STOPPING)
			worker_set_state(w, WORKER_CONNECTING);
		break;
	case ZK_EVENT_CLOSED:
		break;
	}
}

/* Find the job a supervisor run id belongs to. */
static struct job *
worker_find_run(struct worker *w, uint32_t run)
{
	struct worker_job *wj;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (job_owns_run(wj->job, run))
			return wj->job;
	}
	return NULL;
}

static void
worker_sv_started_cb(uint32_t run, pid_t pid, void *arg)
{
	struct job *job = worker_find_run(arg, run);

	if (job != NULL) {
		job_started(job, run, pid);
		worker_http_run_started(arg, job, run);
	}
}

static void
worker_sv_start_failed_cb(uint32_t run, const char *why, void *arg)
{
	struct job *job = worker_find_run(arg, run);

	if (job != NULL)
		job_start_failed(job, run, why);
}

static void
worker_sv_exited_cb(uint32_t run, int status, enum proto_exit_reason reason,
                    const struct proto_usage *usage, void *arg)
{
	struct job *job = worker_find_run(arg, run);
	uint64_t ends;

	if (job != NULL) {
		ends = job_ends(job);
		job_exited(job, run, status, reason, usage);
		worker_http_run_ended(arg, job, run, ends);
	}
}

/* What a run wrote, for its followers. */
static void
worker_sv_output_cb(uint32_t run, uint64_t offset, const char *buf, size_t len, void *arg)
{
	struct worker *w = arg;

	runout_add(w->runout, run, offset, buf, len);
}

/*
 * A reload changed a running job: the new copy nw waits for the old one to be done (its run
 * over, its lease given up), so that the two never run at once, even under other locks (a
 * new lock_mode, locks or leases). 1: held; 0: the old one is done already.
 */
int
worker_job_hold(struct worker_job *old, struct worker_job *nw)
{
	struct worker_job *root = old->pred != NULL ? old->pred : old; /* old is held itself */

	if (root->done)
		return 0;
	nw->pred = root;
	root->succ = nw;
	return 1;
}

/* A job is done: unlink it; the new copy it held back, if any, becomes ready now. */
static void
worker_job_release(struct worker *w, struct worker_job *wj)
{
	struct worker_job *s = wj->succ;

	if (wj->pred != NULL && wj->pred->succ == wj)
		wj->pred->succ = NULL; /* held, and stopped before its turn */
	wj->pred = wj->succ = NULL;
	if (s == NULL)
		return;
	s->pred = NULL;
	if (!s->done && w->state == WORKER_READY && worker_sv_ready(w)) {
		log_info("job %s: its previous copy has stopped: starting", job_name(s->job));
		job_ready(s->job);
	}
}

/*
 * The supervisor died, and its jobs with it. Whatever they held can no longer be
 * trusted to be free of a stray process, so every job gives its lease up and contends
 * again once a new supervisor runs; if it keeps dying, we stop (systemd restarts us).
 */
static void
worker_sv_died_cb(void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj, *next;
	struct timeval tv = {0, 200000};
	uint64_t now = clock_now_ns();
	int i, recent = 0;

	w->sv_died_ms = clock_wall_ms();     /* main killed their process groups just now */
	runout_end_all(w->runout, "killed"); /* its runs died with it (docs/outcomes.md) */
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			job_supervisor_gone(wj->job, w->sv); /* when its run died (the witness) */
	}
	/*
	 * With a cgroup per run, what the dead supervisor's runs left (a process that called
	 * setsid()) is killed by the next supervisor before it says hello: only then are the
	 * leases released (worker_sv_hello_cb).
	 */
	if (svlink_containment(w->sv) == PROTO_CONTAIN_CGROUP && w->state != WORKER_STOPPING)
		w->sv_died_pending = 1;
	else {
		TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
			if (!wj->done)
				job_supervisor_died(wj->job, w->sv_died_ms);
		}
	}
	if (w->state == WORKER_STOPPING) {
		worker_finish(w);
		return;
	}
	for (i = 0; i < WORKER_SUPERVISOR_RESTARTS; i++) {
		if (w->sv_restarts[i] != 0 &&
		    now - w->sv_restarts[i] < WORKER_SUPERVISOR_WINDOW_S * 1000000000ULL)
			recent++;
	}
	if (recent >= WORKER_SUPERVISOR_RESTARTS) {
		log_warnx("the supervisor died %d times within %d s: giving up", recent,
		          WORKER_SUPERVISOR_WINDOW_S);
		w->exit_code = 1;
		worker_finish(w);
		return;
	}
	w->sv_restarts[w->sv_restart_count++ % WORKER_SUPERVISOR_RESTARTS] = now;
	evtimer_add(w->sv_timer, &tv);
}

/* Replace a dead supervisor. */
static void
worker_sv_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	svlink_free(w->sv);
	worker_start_supervisor(w);
	log_info("started a new supervisor, pid %ld", (long)svlink_pid(w->sv));
	/* the new one learns the deadline; the jobs contend again when it says hello */
	w->sv_epoch = zk_epoch(w->zk);
	w->sv_deadline_ns = zk_deadline_ns(w->zk);
	svlink_session(w->sv, w->zk, ZK_EVENT_DEADLINE);
}

/* runspec_unenforced: say that a job's limit is not enforced here (*arg: the cgroups mode). */
static void
worker_unenforced_cb(const struct config_job *cj, const char *key, const char *value,
                     const char *controller, void *arg)
{
	int required = *(enum config_cgroups *)arg == CONFIG_CGROUPS_REQUIRED;

	if (controller == NULL)
		return;
	log_warnx("%s:%d: job %s: %s = %s %s: the %s controller is not delegated to this "
	          "worker's cgroup (see docs/safety.md)%s",
	          cj->file, cj->line, cj->name, key, value,
	          required ? "cannot be enforced" : "is not enforced", controller,
	          required ? "; with cgroups = required the worker does not run jobs without "
	                     "their limits: delegate the controller or remove the limit"
	                   : "");
}

/*
 * Whether cfg's limits can be enforced by the supervisor's run cgroups: each one whose
 * controller is missing is logged; under cgroups = required that is -1, under auto 0.
 */
int
worker_check_limits(struct worker *w, const struct config *cfg)
{
	unsigned ctl =
	    svlink_containment(w->sv) == PROTO_CONTAIN_CGROUP ? svlink_controllers(w->sv) : 0;
	enum config_cgroups how = cfg->cgroups;

	if (runspec_unenforced(cfg, ctl, worker_unenforced_cb, &how) > 0 &&
	    how == CONFIG_CGROUPS_REQUIRED)
		return -1;
	return 0;
}

/* A dead supervisor's run kept processes (a daemon) until gone_ms: its true end. */
static void
worker_sv_stale_gone_cb(uint32_t run, uint64_t gone_ms, void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			job_run_outlived(wj->job, run, gone_ms);
	}
}

/*
 * The supervisor is ready and says how it contains runs. Under cgroups = required without
 * a usable cgroup v2, or without a controller a job's limit needs, stop; under auto, say
 * once that runs fall back to process groups, and which limits are not enforced.
 * Then release what a dead supervisor's jobs held, and let the jobs contend.
 */
void
worker_sv_hello_cb(enum proto_containment mode, unsigned controllers, const char *note, void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj, *next;

	(void)controllers; /* svlink_controllers */
	if (mode == PROTO_CONTAIN_FAILED && w->cfg->cgroups != CONFIG_CGROUPS_REQUIRED) {
		/* cgroups = auto on a host whose cgroups work: no fall-back, a restart */
		log_warnx("runs cannot get a cgroup: %s; not running jobs rather than fall back "
		          "to process groups",
		          note);
		w->exit_code = 1;
		worker_finish(w);
		return;
	}
	if (mode == PROTO_CONTAIN_FAILED) {
		log_warnx("[worker] cgroups = required, but runs cannot get a cgroup: %s; set up "
		          "a delegated cgroup v2 (see docs/safety.md) or set cgroups = auto",
		          note);
		w->exit_code = EXIT_CONFIG;
		worker_finish(w);
		return;
	}
	if (!w->cgroup_said) {
		w->cgroup_said = 1;
		if (worker_check_limits(w, w->cfg) != 0) {
			log_warnx(
			    "[worker] cgroups = required, and limits cannot be enforced here: "
			    "not running jobs");
			w->exit_code = EXIT_CONFIG;
			worker_finish(w);
			return;
		}
		if (mode == PROTO_CONTAIN_CGROUP)
			log_info("each run gets a cgroup of its own under %s", note);
		else if (w->cfg->cgroups == CONFIG_CGROUPS_AUTO)
			log_warnx("no usable cgroup v2 (%s): runs are contained by process groups "
			          "only, and a process that calls setsid() escapes (see "
			          "docs/safety.md)",
			          note);
	}
	if (w->sv_died_pending) {
		w->sv_died_pending = 0;
		TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
			if (!wj->done)
				job_supervisor_died(wj->job, w->sv_died_ms);
		}
	}
	worker_node_update(w);
	if (w->state != WORKER_READY)
		return;
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done && wj->pred == NULL)
			job_ready(wj->job);
	}
}

static void
worker_start_supervisor(struct worker *w)
{
	static const struct svlink_cb cb = {worker_sv_started_cb,   worker_sv_start_failed_cb,
	                                    worker_sv_exited_cb,    worker_sv_died_cb,
	                                    worker_sv_hello_cb,     worker_sv_output_cb,
	                                    worker_sv_stale_gone_cb};

	w->sv = svlink_start(w->base, &cb, w, &w->sv_opts);
}

/*
 * Leave the loop: let the last writes (run records) land, then close the session, which
 * deletes its ephemeral nodes at once.
 */
void
worker_finish(struct worker *w)
{
	struct timeval tv = {0, 20000};

	evtimer_del(w->stop_timer);
	evtimer_del(w->dup_timer);
	evtimer_del(w->reg_timer);
	if (w->flush_until == 0)
		w->flush_until = clock_now_ns() + WORKER_FLUSH_MS * CLOCK_NS_PER_MS;
	if (zk_state(w->zk) == ZK_STATE_CONNECTED && zk_pending_ops(w->zk) > 0 &&
	    clock_now_ns() < w->flush_until) {
		evtimer_add(w->flush_timer, &tv);
		return;
	}
	/*
	 * Closing the session gives every lease away at once: only when no job runs. Else
	 * the supervisor first kills what is left (see worker_run's end).
	 */
	if (svlink_running_jobs(w->sv) == 0)
		zk_close(w->zk);
	else
		log_warnx("%d job(s) still running: killing them before the session is closed",
		          svlink_running_jobs(w->sv));
	event_base_loopbreak(w->base);
}

/* Waiting for the last writes before closing. */
static void
worker_flush_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	worker_finish(arg);
}

/* A job finished stopping (shutdown, removal or change). */
static void
worker_job_done_cb(struct job *job, void *arg)
{
	struct worker_job *wj = arg;
	struct worker *w = wj->w;

	(void)job; /* wj->job: each job's callbacks get its own entry */
	if (!wj->done) {
		wj->done = 1;
		w->njobs_live--;
		worker_job_release(w, wj);
	}
	if (w->state != WORKER_STOPPING) {
		event_active(w->reap, EV_TIMEOUT, 0);
		return;
	}
	if (w->njobs_live > 0)
		return;
	log_info("every job is stopped");
	worker_finish(w);
}

/* The jobs did not stop in time: leave anyway (the supervisor kills what is left). */
static void
worker_stop_timer_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	log_warnx("jobs did not stop in time; leaving");
	worker_finish(arg);
}

/* Graceful stop: stop the jobs, give their leases back, close the session. */
static void
worker_stop(struct worker *w)
{
	struct worker_job *wj, *next;
	struct timeval tv;
	uint64_t grace = w->cfg->kill_grace_ms;
	int waiting = 0;

	if (w->state == WORKER_STOPPING) {
		log_info("second stop request: leaving now");
		worker_finish(w);
		return;
	}
	worker_set_state(w, WORKER_STOPPING);
	worker_reload_abort(w);
	worker_notify_status(w, "STOPPING=1");
	log_info("stopping");
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (job_config(wj->job)->kill_grace_ms > grace)
			grace = job_config(wj->job)->kill_grace_ms;
		if (job_config(wj->job)->on_shutdown == CONFIG_SHUTDOWN_WAIT)
			waiting = 1;
	}
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_stop(wj->job, job_config(wj->job)->on_shutdown == CONFIG_SHUTDOWN_WAIT);
	}
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			break;
	}
	if (wj == NULL) {
		worker_finish(w);
		return;
	}
	if (!waiting) {
		grace += WORKER_STOP_SLACK_MS;
		tv.tv_sec = (time_t)(grace / 1000);
		tv.tv_usec = (suseconds_t)(grace % 1000) * 1000;
		evtimer_add(w->stop_timer, &tv);
	}
}

/* Signals arrive here as events. */
static void
worker_signal_cb(int sig, short what, void *arg)
{
	struct worker *w = arg;
	int status;
	pid_t pid;

	(void)what;
	switch (sig) {
	case SIGTERM:
	case SIGINT:
		log_info("received %s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		worker_stop(w);
		break;
	case SIGHUP:
		if (w->state != WORKER_STOPPING)
			worker_reload_request(w);
		break;
	case SIGCHLD:
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (!svlink_reap(w->sv, pid, status))
				log_debug("reaped unknown child %ld", (long)pid);
		}
		break;
	}
}

/* Make a directory and its parents. */
static int
worker_mkdirs(const char *dir)
{
	char path[PATH_MAX], *slash;

	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash != NULL)
			*slash = '\0';
		if (mkdir(path, 0750) != 0 && errno != EEXIST)
			return -1;
		if (slash == NULL)
			return 0;
		*slash = '/';
	}
}

/* What a job asks of the worker (job.h). */
static const struct config *
worker_job_config_cb(void *arg)
{
	struct worker *w = ((struct worker_job *)arg)->w;

	return w->cfg;
}

static struct svlink *
worker_job_supervisor_cb(void *arg)
{
	struct worker *w = ((struct worker_job *)arg)->w;

	return w->sv;
}

/* A fresh id for one run of a job, never 0. */
static uint32_t
worker_job_next_run_cb(void *arg)
{
	struct worker *w = ((struct worker_job *)arg)->w;

	if (++w->next_run == 0)
		w->next_run = 1;
	return w->next_run;
}

static const struct members *
worker_job_members_cb(void *arg)
{
	struct worker *w = ((struct worker_job *)arg)->w;

	return w->members;
}

/* Whether this worker saw no live worker able to run job through [from_ms, to_ms]. */
static int
worker_job_nobody_cb(void *arg, const char *job, uint64_t from_ms, uint64_t to_ms)
{
	return worker_placement_nobody(((struct worker_job *)arg)->w, job, from_ms, to_ms);
}

static struct runjournal *
worker_job_journal_cb(void *arg)
{
	return ((struct worker_job *)arg)->w->journal;
}

/* A new job of this worker (drained with it, if it is); its callbacks get wj. */
static struct job *
worker_job_new(struct worker *w, struct worker_job *wj, const struct config_job *cj)
{
	static const struct job_cb cb = {
	    worker_job_config_cb,         worker_job_supervisor_cb, worker_job_next_run_cb,
	    worker_job_done_cb,           worker_job_members_cb,    worker_job_health_cb,
	    worker_job_health_changed_cb, worker_job_nobody_cb,     worker_job_journal_cb};
	struct job *job = job_new(w->base, w->zk, cj, &cb, wj);

	if (w->drained)
		job_drain(job, 1, 0);
	return job;
}

/* A job of cj, part of cfg, added to the worker's list (idle until job_ready). */
struct worker_job *
worker_job_add(struct worker *w, const struct config_job *cj, struct config *cfg)
{
	struct worker_job *wj = xcalloc(1, sizeof *wj);

	wj->w = w;
	wj->cfg = cfg;
	wj->job = worker_job_new(w, wj, cj);
	TAILQ_INSERT_TAIL(&w->jobs, wj, entry);
	w->njobs_live++;
	return wj;
}

/* The worker's timers and events, made once the loop exists. */
static void
worker_events_new(struct worker *w)
{
	struct timeval ptv = {WORKER_PLACEMENT_MS / 1000, (WORKER_PLACEMENT_MS % 1000) * 1000};

	w->dup_timer = evtimer_new(w->base, worker_node_dup_timer_cb, w);
	w->reg_timer = evtimer_new(w->base, worker_node_reg_timer_cb, w);
	w->stop_timer = evtimer_new(w->base, worker_stop_timer_cb, w);
	w->sv_timer = evtimer_new(w->base, worker_sv_timer_cb, w);
	w->reap = event_new(w->base, -1, 0, worker_reload_reap_cb, w);
	event_priority_set(w->reap, WORKER_PRIORITY_BACKGROUND);
	w->flush_timer = evtimer_new(w->base, worker_flush_cb, w);
	w->drain_timer = evtimer_new(w->base, worker_drain_timer_cb, w);
	w->drain_poll = evtimer_new(w->base, worker_drain_poll_cb, w);
	w->clock_timer = evtimer_new(w->base, worker_node_clock_cb, w);
	worker_reload_init(w);
	w->placement_timer = event_new(w->base, -1, EV_PERSIST, worker_placement_timer_cb, w);
	event_add(w->placement_timer, &ptv);
	w->observe_timer = evtimer_new(w->base, worker_placement_observe_cb, w);
	members_on_change(w->members, worker_placement_changed_cb, w);
}

/* Free what worker_events_new made. */
static void
worker_events_free(struct worker *w)
{
	worker_reload_fini(w);
	event_free(w->dup_timer);
	event_free(w->reg_timer);
	event_free(w->stop_timer);
	event_free(w->sv_timer);
	event_free(w->reap);
	event_free(w->flush_timer);
	event_free(w->drain_timer);
	event_free(w->drain_poll);
	event_free(w->clock_timer);
	event_free(w->placement_timer);
	event_free(w->observe_timer);
	w->observe_timer = NULL; /* worker_placement_changed_cb, from a session event, checks */
	if (w->watchdog_timer != NULL)
		event_free(w->watchdog_timer);
	if (w->status_timer != NULL)
		event_free(w->status_timer);
}

/* After the loop: the supervisor first, then the session, then everything else. */
static void
worker_teardown(struct worker *w, struct config *cfg)
{
	struct worker_config *rc;
	size_t i;

	/*
	 * The supervisor goes first: leases may be released and the session closed only once
	 * no job can be alive. If that is not certain, the session is left to expire.
	 */
	if (!svlink_free(w->sv))
		zk_abandon(w->zk);
	aclcheck_free(w->acl);
	endpoints_free(w->http); /* before the jobs its sliced replies may hold */
	w->http = NULL;
	worker_events_free(w); /* a reload cut short retires its configuration here */
	worker_reload_free_jobs(w, 1);
	members_free(w->members);
	zk_free(w->zk);
	runjournal_free(w->journal);
	runout_free(w->runout);
	for (i = 0; i < sizeof w->signals / sizeof w->signals[0]; i++) {
		if (w->signals[i] != NULL)
			event_free(w->signals[i]);
	}
	free(w->drain_path);
	json_decref(w->unrunnable);
	json_decref(w->nobody);
	event_base_free(w->base);
	log_info("stopped");
	free(w->path);
	free(w->http_listen);
	free(w->cgroup_name);
	free(w->config_file);
	while ((rc = TAILQ_FIRST(&w->retired)) != NULL) {
		TAILQ_REMOVE(&w->retired, rc, entry);
		if (rc->cfg != cfg)
			config_free(rc->cfg);
		free(rc);
	}
	if (w->cfg != cfg)
		config_free(w->cfg);
}

/* The supervisor, with the cgroups of [worker]. */
static void
worker_supervisor_setup(struct worker *w, const struct config *cfg)
{
	w->cgroup_name = cgroup_worker_name(cfg->node_id, cfg->state_dir);
	w->sv_opts.cgroup_name = w->cgroup_name;
	w->sv_opts.cgroups = cfg->cgroups == CONFIG_CGROUPS_OFF        ? SUPERVISOR_CGROUPS_OFF
	                     : cfg->cgroups == CONFIG_CGROUPS_REQUIRED ? SUPERVISOR_CGROUPS_REQUIRED
	                                                               : SUPERVISOR_CGROUPS_AUTO;
	worker_start_supervisor(w);
	log_info("leasekeeper %s starting as node \"%s\", %zu job(s), supervisor pid %ld",
	         LEASEKEEPER_VERSION, cfg->node_id, cfg->njobs, (long)svlink_pid(w->sv));
	if (config_auth_warning(cfg) != NULL)
		log_warnx("%s", config_auth_warning(cfg));
}

/* The `run` command: the daemon, in the foreground, until SIGTERM or SIGINT. */
int
worker_run(const char *config_file, struct config *cfg)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
	struct worker w;
	char *jobs_dir;
	size_t i;

	memset(&w, 0, sizeof w);
	w.config_file = xstrdup(config_file);
	w.cfg = cfg;
	w.initial_cfg = cfg;
	worker_health_configure(&w);
	w.started_ms = clock_wall_ms();
	w.deadline_low_ns = UINT64_MAX;
	w.state = WORKER_CONNECTING;
	TAILQ_INIT(&w.jobs);
	TAILQ_INIT(&w.retired);
	w.path = layout_worker(cfg->root, cfg->node_id);

	jobs_dir = znode_join(cfg->state_dir, "jobs");
	if (worker_mkdirs(jobs_dir) != 0)
		fatal("cannot create the state directory %s (set [worker] state_dir to a "
		      "writable directory)",
		      jobs_dir);
	free(jobs_dir);
	w.journal = runjournal_open(cfg->state_dir, cfg->node_id);

	signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
	/*
	 * No fast bins: a reload frees thousands of small blocks, and glibc would merge them all
	 * at the next large malloc or free (4 ms of one callback at 2,000 jobs, more beyond);
	 * without them each free merges its own, and the loop never waits for all at once.
	 */
	mallopt(M_MXFAST, 0);
#endif
	if ((w.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	/* Before any event: each takes the middle one, a reload's slices the last (worker-int.h). */
	if (event_base_priority_init(w.base, WORKER_PRIORITIES) != 0)
		fatalx("event_base_priority_init");
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		w.signals[i] = evsignal_new(w.base, sigs[i], worker_signal_cb, &w);
		event_add(w.signals[i], NULL);
	}
	/* A status page that cannot listen yet (a busy port) does not stop the jobs: it retries. */
	w.http_cb = &worker_http_table;
	w.runout = runout_new();
	if (cfg->http_listen != NULL) {
		w.http = endpoints_start(w.base, cfg->http_listen, &worker_http_table, &w, 1);
		w.http_listen = xstrdup(cfg->http_listen);
	}
	w.drain_path = layout_drain(cfg->root, cfg->node_id);
	worker_supervisor_setup(&w, cfg);
	/* Without credentials every node is open: the warning above says it all. */
	w.acl_done = cfg->auth == NULL;

	w.zk = zk_create(w.base, cfg->hosts, (int)cfg->session_timeout_ms,
	                 (int)cfg->safety_margin_ms, cfg->auth, worker_zk_cb, &w);
	if (cfg->reader != NULL)
		zk_set_reader(w.zk, cfg->reader); /* the read-only identity reads what we create */
	if (cfg->operator_id != NULL)             /* the operator identity writes control records */
		zk_set_operator(w.zk, cfg->root, cfg->operator_id);
	w.members = members_new(w.zk, cfg->root);
	w.unrunnable = json_object();
	w.nobody = json_object();
	worker_events_new(&w);
	worker_log_excluded(cfg);
	for (i = 0; i < cfg->njobs; i++) {
		if (worker_carries(cfg, cfg->jobs_list[i], NULL, 0))
			worker_job_add(&w, cfg->jobs_list[i], cfg);
	}
	worker_notify_start(&w);

	event_base_dispatch(w.base);

	worker_teardown(&w, cfg);
	return w.exit_code;
}
