/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* worker-node.c: the worker's node <root>/workers/<node_id>: registration, a duplicate node id, its data, and a watch on it. */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
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
#include "control.h"
#include "endpoints.h"
#include "format.h"
#include "job.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "procstat.h"
#include "members.h"
#include "nodedata.h"
#include "rolesrec.h"
#include "runjournal.h"
#include "runout.h"
#include "runspec.h"
#include "sdnotify.h"
#include "sha1.h"
#include "svlink.h"
#include "worker.h"
#include "worker-int.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

/* ZooKeeper refusals of our registration repeat at every attempt: warn once, then count. */
static struct log_limit worker_lim_read, worker_lim_register, worker_lim_create;

#define WORKER_CLOCK_FIRST_MS   2000  /* our node says the clock offset this soon ... */
#define WORKER_CLOCK_MS         60000 /* ... and is rewritten this often: a clock sample */
#define WORKER_NODE_DATA_MAX    65536 /* a node's data longer than this is nobody's registration */
#define WORKER_DUP_RETRY_MS     1000  /* a duplicate node id not judged yet: look again, ... */
#define WORKER_DUP_RETRY_MAX_MS 16000 /* ... doubling up to this */

static void worker_node_watch_own(struct worker *);

/* Rewrite our node after ms. */
static void
worker_node_clock_later(struct worker *w, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(w->clock_timer, &tv);
}

/*
 * Now and then: rewrite our node, which says this host's clock offset to ZooKeeper's (for
 * `status`), and whose write gives the estimate a fresh sample even when no job writes.
 */
void
worker_node_clock_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	worker_node_update(w);
	worker_node_clock_later(w, WORKER_CLOCK_MS);
}
static void worker_node_registered(struct worker *);

/* Our labels as a JSON object, and the jobs we do not carry with the term that fails. */
static void
worker_node_placement(const struct config *cfg, json_t *o)
{
	json_t *labels = json_object(), *excluded = json_object();
	char why[CONFIG_TERM_MAX], text[CONFIG_TERM_MAX + 16], *eq;
	size_t i;

	for (i = 0; cfg->labels[i] != NULL; i++) {
		eq = strchr(cfg->labels[i], '=');
		*eq = '\0';
		json_object_set_new(labels, cfg->labels[i], json_string(eq + 1));
		*eq = '=';
	}
	for (i = 0; i < cfg->njobs; i++) {
		if (worker_carries(cfg, cfg->jobs_list[i], why, sizeof why))
			continue;
		snprintf(text, sizeof text, "constraint %s", why);
		json_object_set_new(excluded, cfg->jobs_list[i]->name, json_string(text));
	}
	json_object_set_new(o, "labels", labels);
	json_object_set_new(o, "excluded", excluded);
}

/* The JSON of our worker node. */
static char *
worker_node_data(struct worker *w)
{
	struct worker_job *wj;
	char host[HOST_NAME_MAX + 1], stamp[40], *out;
	json_t *o, *jobs;
	int64_t offset, error;

	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	clock_iso8601(w->started_ms, stamp, sizeof stamp);
	jobs = json_array();
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		/* A job stopping for good (a reload removed or replaced it) is carried no more. */
		if (!wj->done && !job_stopping(wj->job))
			json_array_append_new(jobs, json_string(job_name(wj->job)));
	}
	o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:o, s:s}", "version", LEASEKEEPER_VERSION, "node",
	              w->cfg->node_id, "pid", (json_int_t)getpid(), "host", host, "start", stamp,
	              "jobs", jobs, "containment", worker_containment_cb(w));
	if (zk_clock_offset(w->zk, &offset, &error) == 0) {
		json_object_set_new(o, "clock_offset_ms", json_integer((json_int_t)offset));
		json_object_set_new(o, "clock_error_ms", json_integer((json_int_t)error));
	}
	if (w->drained) {
		json_object_set_new(o, "drained", json_true());
		json_object_set_new(o, "leases_held", json_integer(w->drain_held));
	}
	worker_node_placement(w->cfg, o);
	/* Where its runs' output is followed, and the token that takes (runout.c): additive. */
	if (w->http_listen != NULL && w->runout != NULL) {
		json_object_set_new(o, "http", json_string(w->http_listen));
		json_object_set_new(o, "output_token", json_string(runout_token(w->runout)));
	}
	worker_health_node(w, o);
	format_stamp(o);
	out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return out;
}

/*
 * Our node is gone (deleted by someone else, or the whole root): not ready (/health says
 * so) until registered again, at most WORKER_REREGISTER_MAX times a minute so that
 * someone deleting it in a loop cannot make us write in a loop.
 */
static void
worker_node_lost(struct worker *w, const char *why)
{
	uint64_t now = clock_now_ns();
	struct timeval tv;

	worker_set_state(w, WORKER_REGISTERING);
	if (w->rereg_start_ns == 0 ||
	    now - w->rereg_start_ns >= (uint64_t)WORKER_REREGISTER_WINDOW_S * 1000000000ULL) {
		w->rereg_start_ns = now;
		w->rereg_count = 0;
	}
	if (w->rereg_count++ < WORKER_REREGISTER_MAX) {
		log_warnx("%s %s: registering again", w->path, why);
		worker_node_register(w);
		return;
	}
	tv.tv_sec = WORKER_REREGISTER_WINDOW_S;
	tv.tv_usec = 0;
	log_warnx("%s %s, %d times within %d s: registering again in %d s (not ready until then)",
	          w->path, why, w->rereg_count, WORKER_REREGISTER_WINDOW_S,
	          WORKER_REREGISTER_WINDOW_S);
	evtimer_add(w->reg_timer, &tv);
}

/* The rate limit of registrations allows one again. */
void
worker_node_reg_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (w->state == WORKER_REGISTERING)
		worker_node_register(w);
}

/* Our node changed (our own update) or went away. */
static void
worker_node_own_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)path;
	if (w->state != WORKER_READY)
		return;
	if (type == ZOO_DELETED_EVENT)
		worker_node_lost(w, "was deleted by someone else");
	else
		worker_node_watch_own(w);
}

/* Our node as read with its watch: still ours? */
static void
worker_node_own_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;

	if (w->state != WORKER_READY || zk_connection_error(reply->rc))
		return; /* a reconnect watches it again */
	if (reply->rc == ZNONODE)
		worker_node_lost(w, "is gone");
	else if (reply->rc == ZOK && reply->stat != NULL &&
	         reply->stat->ephemeralOwner != zk_session_id(w->zk)) {
		/* Deleted and made again by another session under our node id. */
		log_warnx("%s is now held by another session (0x%llx)", w->path,
		          (unsigned long long)reply->stat->ephemeralOwner);
		worker_set_state(w, WORKER_REGISTERING);
		zk_get(w->zk, w->path, worker_node_dup_watch_cb, worker_node_dup_get_cb, w);
	}
}

/* Watch our node, so that its deletion by anyone else is noticed. */
static void
worker_node_watch_own(struct worker *w)
{
	zk_get(w->zk, w->path, worker_node_own_watch_cb, worker_node_own_get_cb, w);
}

/*
 * The start-up ACL check is over. Open folders were logged; with require_acl they stop the
 * worker before any job contends. Interrupted: the next registration checks again.
 */
static void
worker_node_acl_cb(enum aclcheck_result result, void *arg)
{
	struct worker *w = arg;

	aclcheck_free(w->acl);
	w->acl = NULL;
	log_debug("worker: ACL check %s", aclcheck_result_name(result));
	if (result == ACLCHECK_INTERRUPTED)
		return;
	if (result == ACLCHECK_OPEN && w->cfg->require_acl) {
		log_warnx("refusing to start: others may create or delete in folders of this "
		          "worker's nodes (above) and [zookeeper] require_acl = true; fix their "
		          "ACLs (see docs/security.md) or set require_acl = false");
		w->exit_code = EXIT_CONFIG;
		worker_finish(w);
		return;
	}
	w->acl_done = 1;
	control_decide(w->cfg, result == ACLCHECK_CLOSED);
	if (w->state == WORKER_REGISTERING)
		worker_node_registered(w);
}

/* A job of w by name, for lookups of many names at once (worker_jobs_by_name). */
struct worker_named {
	const char *name;
	struct job *job;
	size_t order; /* its place in w->jobs: the first of equal names wins, as in the list */
};

static int
worker_named_cmp(const void *a, const void *b)
{
	const struct worker_named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

/* The jobs of w not stopping for good, sorted by name (*n of them; free the array). */
static struct worker_named *
worker_jobs_by_name(struct worker *w, size_t *n)
{
	struct worker_named *v;
	struct worker_job *wj;
	size_t k = 0;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		k += !wj->done;
	}
	v = xcalloc(k > 0 ? k : 1, sizeof *v);
	k = 0;
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done) {
			v[k].name = job_name(wj->job);
			v[k].job = wj->job;
			v[k].order = k;
			k++;
		}
	}
	qsort(v, k, sizeof *v, worker_named_cmp);
	*n = k;
	return v;
}

/* The job named name in v (worker_jobs_by_name), or NULL: O(log n). */
static struct job *
worker_job_named(const struct worker_named *v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first of that name */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(v[lo].name, name) == 0 ? v[lo].job : NULL;
}

/*
 * Record the runs this worker's previous process left without a record (runjournal.c): now
 * that we are registered, its session is over and its runs are dead. A job no longer
 * configured cannot record its run: said, and dropped.
 */
static void
worker_settle_runs(struct worker *w)
{
	struct runjournal_left *l;
	struct worker_named *named;
	struct job *job;
	size_t n;
	int i;

	runjournal_load(w->journal);
	named = worker_jobs_by_name(w, &n);
	for (i = 0; (l = runjournal_left(w->journal, i)) != NULL; i++) {
		if (l->run_id == NULL || l->settling || l->claim)
			continue;
		if ((job = worker_job_named(named, n, l->job)) != NULL) {
			job_settle_run(job, l);
			continue;
		}
		log_warnx("job %s is not configured: its run %s, which this worker's previous "
		          "process left without a record, is not recorded",
		          l->job, l->run_id);
		runjournal_settled(w->journal, l);
	}
	free(named);
}

/* Order of run entries by job, then tick (worker_disown_claims). */
static int
worker_left_cmp(const void *a, const void *b)
{
	const struct runjournal_left *x = *(const struct runjournal_left *const *)a;
	const struct runjournal_left *y = *(const struct runjournal_left *const *)b;
	int c = strcmp(x->job, y->job);

	return c != 0 ? c : (x->tick > y->tick) - (x->tick < y->tick);
}

/*
 * Our previous process is dead (its node's pid is gone from this host, or we are registered
 * and have not claimed yet): each tick it claimed and never started (a claim entry of its
 * journal, and no run entry of that tick) is given back if it still holds it
 * (job_disown_claim); the entry goes once that is done. An entry of a job no longer
 * configured, or of a tick started, goes at once.
 */
static void
worker_disown_claims(struct worker *w, int registered)
{
	struct runjournal_left *l, **runs, key;
	struct worker_named *named;
	struct job *job;
	size_t n, nruns = 0;
	int i;

	memset(&key, 0, sizeof key);
	runjournal_load(w->journal);
	for (i = 0; (l = runjournal_left(w->journal, i)) != NULL; i++) {
		nruns += l->run_id != NULL && !l->claim;
	}
	runs = xcalloc(nruns > 0 ? nruns : 1, sizeof *runs);
	nruns = 0;
	for (i = 0; (l = runjournal_left(w->journal, i)) != NULL; i++) {
		if (l->run_id != NULL && !l->claim)
			runs[nruns++] = l;
	}
	qsort(runs, nruns, sizeof *runs, worker_left_cmp);
	named = worker_jobs_by_name(w, &n);
	for (i = 0; (l = runjournal_left(w->journal, i)) != NULL; i++) {
		const struct runjournal_left *kp = &key;

		if (l->run_id == NULL || !l->claim || l->settling)
			continue;
		/*
		 * A chained job's claim only once registered: before, the dead session may still
		 * have its claim's write on its way, which a read now would not see.
		 */
		if (l->chain && !registered)
			continue;
		key.job = l->job;
		key.tick = l->tick;
		/* a run of that tick started: its record says what became of the tick */
		if (bsearch(&kp, runs, nruns, sizeof *runs, worker_left_cmp) == NULL &&
		    l->tick >= 0 && (job = worker_job_named(named, n, l->job)) != NULL)
			(l->chain ? job_disown_chain
			          : job_disown_claim)(job, l); /* settles l when done */
		else
			runjournal_settled(w->journal, l);
	}
	free(named);
	free(runs);
}

/* Registered: check the ACLs once, then tell systemd once and let the jobs contend. */
static void
worker_node_registered(struct worker *w)
{
	struct worker_job *wj;

	evtimer_del(w->dup_timer);
	evtimer_del(w->reg_timer);
	if (!w->acl_done) {
		worker_set_state(w, WORKER_REGISTERING);
		if (w->acl == NULL)
			w->acl = aclcheck_start(w->zk, w->cfg, w->path, worker_node_acl_cb, w);
		return;
	}
	control_decide(w->cfg, 0); /* without credentials (no check): decided here, once */
	worker_set_state(w, WORKER_READY);
	log_info("registered as %s (session 0x%llx)", w->path,
	         (unsigned long long)zk_session_id(w->zk));
	if (!w->notified_ready) {
		w->notified_ready = 1;
		worker_notify_status(w, "READY=1");
	}
	worker_node_watch_own(w);
	/* The node was written before the ACL check: what changed since (the supervisor's
	 * containment, which it may have reported meanwhile) goes in now. */
	worker_node_update(w);
	worker_node_clock_later(w, WORKER_CLOCK_FIRST_MS);
	if (!w->disowned) {
		w->disowned = 1; /* before any claim of ours */
		worker_disown_claims(w,
		                     1); /* what the early pass left (a chain's claims), or all */
	}
	worker_settle_runs(w);
	members_start(w->members);
	worker_drain_watch(w);
	if (!worker_sv_ready(w))
		return; /* worker_sv_hello_cb lets them */
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done && wj->pred == NULL)
			job_ready(wj->job);
	}
}

/* Another session's node under our id went away: try again. */
void
worker_node_dup_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)path;
	if (w->state == WORKER_DUPLICATE && type == ZOO_DELETED_EVENT) {
		log_info("the other session's %s is gone; registering", w->path);
		worker_node_register(w);
	}
}

/*
 * Whether a node's data (untrusted: bounded, parsed, never trusted further) names a process
 * of this host that is gone (WORKER_PRED_DEAD): the node is our own predecessor's, left
 * behind by a killed worker, whose session must expire before we can register. Or this very
 * process (WORKER_PRED_SELF: our pid and our start): an earlier session of ours, which we saw
 * expire, and which ZooKeeper brought back with its node after losing transactions (torture,
 * seed 6011): it expires again, however long that takes; no other worker holds our id.
 */
static int
worker_node_predecessor(const struct worker *w, const char *value, int len)
{
	char host[HOST_NAME_MAX + 1], stamp[40];
	struct procstat ps;
	json_t *o, *h, *p, *s;
	json_int_t pid;
	int gone = 0;

	if (value == NULL || len <= 0 || len > WORKER_NODE_DATA_MAX ||
	    gethostname(host, sizeof host) != 0)
		return 0;
	host[sizeof host - 1] = '\0';
	o = json_loadb(value, (size_t)len, 0, NULL);
	h = json_object_get(o, "host");
	p = json_object_get(o, "pid");
	s = json_object_get(o, "start");
	clock_iso8601(w->started_ms, stamp, sizeof stamp);
	if (json_is_string(h) && json_is_integer(p) && strcmp(json_string_value(h), host) == 0) {
		pid = json_integer_value(p);
		if (pid == (json_int_t)getpid() && json_is_string(s) &&
		    strcmp(json_string_value(s), stamp) == 0)
			gone = WORKER_PRED_SELF;
		else if (pid > 1 && pid <= INT_MAX && pid != (json_int_t)getpid()) {
			gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
			/* A zombie is gone too. */
			if (!gone && procstat_read((pid_t)pid, &ps) == 0)
				gone = ps.state == 'Z';
		}
	}
	json_decref(o);
	return gone;
}

/* Look at the node under our id again in dup_retry_ms, doubling the back-off. */
static void
worker_node_dup_retry(struct worker *w)
{
	struct timeval tv;

	tv.tv_sec = w->dup_retry_ms / 1000;
	tv.tv_usec = (w->dup_retry_ms % 1000) * 1000;
	evtimer_add(w->dup_timer, &tv);
	w->dup_retry_ms = w->dup_retry_ms * 2 < WORKER_DUP_RETRY_MAX_MS ? w->dup_retry_ms * 2
	                                                                : WORKER_DUP_RETRY_MAX_MS;
}

/* The node under our id: ours after all (a create whose answer we lost), or another's. */
void
worker_node_dup_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	char *data;

	if (w->state != WORKER_REGISTERING && w->state != WORKER_DUPLICATE)
		return;
	if (zk_connection_error(reply->rc))
		return; /* registered again after the reconnect */
	if (reply->rc == ZNONODE) {
		worker_node_register(w);
		return;
	}
	if (reply->rc != ZOK || reply->stat == NULL) {
		log_warnx_limited(&worker_lim_read, "cannot read %s: %s", w->path,
		                  zerror(reply->rc));
		return;
	}
	if (reply->stat->ephemeralOwner == zk_session_id(w->zk)) {
		worker_node_registered(w);
		return;
	}
	if (w->state == WORKER_DUPLICATE)
		return; /* looked at again: its deletion is watched, the timer judges */
	worker_set_state(w, WORKER_DUPLICATE);
	w->dup_wait_ms = zk_timeout_ms(w->zk) + 2000;
	w->dup_since_ns = clock_now_ns();
	w->dup_retry_ms = WORKER_DUP_RETRY_MS;
	w->dup_said = 0;
	w->dup_predecessor = worker_node_predecessor(w, reply->value, reply->value_len);
	/* Whoever holds our node id wrote its data: described, never copied raw into the log. */
	data = nodedata_describe(reply->value, reply->value_len);
	if (w->dup_predecessor == WORKER_PRED_SELF)
		log_warnx(
		    "node id \"%s\" is registered by an earlier session of this very process "
		    "(0x%llx: %s), which expired: ZooKeeper has brought it back (a server lost "
		    "transactions); waiting for it to expire again",
		    w->cfg->node_id, (unsigned long long)reply->stat->ephemeralOwner, data);
	else if (w->dup_predecessor)
		log_warnx("node id \"%s\" is registered by another session (0x%llx: %s); its "
		          "process on this host is gone (our predecessor): waiting for its session "
		          "to expire",
		          w->cfg->node_id, (unsigned long long)reply->stat->ephemeralOwner, data);
	else
		log_warnx("node id \"%s\" is registered by another session (0x%llx: %s); waiting "
		          "up to %d ms for it to expire",
		          w->cfg->node_id, (unsigned long long)reply->stat->ephemeralOwner, data,
		          w->dup_wait_ms);
	free(data);
	if (w->dup_predecessor == WORKER_PRED_DEAD && !w->disowned)
		worker_disown_claims(w, 0); /* now: others may claim on top once its session ends */
	worker_node_dup_retry(w);
}

/* Connected again while another session holds our node id: look again, and wait anew. */
void
worker_node_dup_reconnected(struct worker *w)
{
	w->dup_since_ns = clock_now_ns();
	zk_get(w->zk, w->path, worker_node_dup_watch_cb, worker_node_dup_get_cb, w);
}

/*
 * Judge the node under our id. Our predecessor's (gone from this host): wait for its
 * session to expire, however long the ensemble takes. Without a connection (no quorum: no
 * session expires) nothing can be told: wait. Another session that stays for a session
 * timeout (and 2 s) while we are connected: another worker is running with our node id.
 */
void
worker_node_dup_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	uint64_t connected_ms, left;
	struct timeval tv;

	(void)fd;
	(void)what;
	if (w->state != WORKER_DUPLICATE)
		return;
	if (zk_state(w->zk) != ZK_STATE_CONNECTED || w->dup_predecessor) {
		if (!w->dup_said)
			log_warnx("%s is still held by another session; %s: waiting for it to go, "
			          "looking again with back-off up to %d s (not ready until then)",
			          w->path,
			          w->dup_predecessor == WORKER_PRED_SELF
			              ? "it is an earlier session of ours"
			          : w->dup_predecessor ? "it is our predecessor's"
			                               : "it cannot be judged while "
			                                 "disconnected from ZooKeeper "
			                                 "(no quorum?)",
			          WORKER_DUP_RETRY_MAX_MS / 1000);
		w->dup_said = 1;
		if (zk_state(w->zk) == ZK_STATE_CONNECTED)
			zk_get(w->zk, w->path, worker_node_dup_watch_cb, worker_node_dup_get_cb, w);
		worker_node_dup_retry(w);
		return;
	}
	connected_ms = (clock_now_ns() - w->dup_since_ns) / 1000000;
	if (connected_ms < (uint64_t)w->dup_wait_ms) {
		left = (uint64_t)w->dup_wait_ms - connected_ms;
		tv.tv_sec = (time_t)(left / 1000);
		tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
		evtimer_add(w->dup_timer, &tv);
		return;
	}
	log_warnx("another worker is running with node id \"%s\" (%s is held by a live session): "
	          "give this worker another node_id in [worker], or stop the other one",
	          w->cfg->node_id, w->path);
	w->exit_code = 1;
	worker_finish(w);
}

/* The answer to our registration. */
static void
worker_node_register_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;

	if (w->state != WORKER_REGISTERING)
		return;
	if (reply->rc == ZOK) {
		worker_node_registered(w);
		return;
	}
	if (reply->rc == ZNODEEXISTS) {
		zk_get(w->zk, w->path, worker_node_dup_watch_cb, worker_node_dup_get_cb, w);
		return;
	}
	if (zk_connection_error(reply->rc))
		return; /* registered again after the reconnect */
	if (reply->rc == ZNOAUTH) {
		log_warnx("not allowed to create %s: check the ACLs of [zookeeper] root and the "
		          "credentials in [zookeeper] auth",
		          w->path);
		w->exit_code = 1;
		worker_finish(w);
		return;
	}
	if (reply->rc == ZNONODE && !w->notified_ready && strchr(w->cfg->hosts, '/') != NULL) {
		/*
		 * Never registered: the root paths could not be made either, so the chroot of
		 * hosts does not exist. Retrying would not make it: a fatal error, as the README
		 * says (exit 1), rather than "not ready" for ever.
		 */
		log_warnx("cannot register %s: no node: the chroot of [zookeeper] hosts (\"%s\") "
		          "does not exist: create it in ZooKeeper, or remove it from hosts",
		          w->path, w->cfg->hosts);
		w->exit_code = 1;
		worker_finish(w);
		return;
	}
	if (reply->rc == ZNONODE) {
		/* The root went while we made it (deleted by someone else): again, bounded. */
		worker_node_lost(w, "could not be created, its parent is gone");
		return;
	}
	log_warnx_limited(&worker_lim_register, "cannot register %s: %s", w->path,
	                  zerror(reply->rc));
}

/* Creating a root path: only a refusal matters. */
static void
worker_node_root_cb(const struct zk_reply *reply, void *arg)
{
	(void)arg;
	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && !zk_connection_error(reply->rc) &&
	    reply->rc != ZCLOSING)
		log_warnx_limited(&worker_lim_create, "cannot create %s: %s", reply->path,
		                  zerror(reply->rc));
}

/* The roles node's data: {"workers": ID, "reader": ID} (caller frees). */
static char *
worker_node_roles_data(const struct config *cfg)
{
	char *id = sha1_zk_digest_id(cfg->auth), *data = rolesrec_dump(id, cfg->reader);

	free(id);
	return data;
}

/* The roles node exists (made by an older start): write who we are now. */
static void
worker_node_roles_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	char *data;

	if (reply->rc != ZNODEEXISTS) {
		worker_node_root_cb(reply, arg);
		return;
	}
	data = worker_node_roles_data(w->cfg);
	zk_set(w->zk, reply->path, data, (int)strlen(data), -1, worker_node_root_cb, w);
	free(data);
}

/*
 * With an operator identity: <root>/roles names the workers' digest id (and the reader's),
 * so that a command run with the operator's credential gives the workers every permission
 * on the control records it creates (zk ACLs name users; an operator cannot read our id from
 * an ACL, the server hides digests from those without ADMIN).
 */
static void
worker_node_roles(struct worker *w)
{
	char *path, *data;

	if (w->cfg->auth == NULL || w->cfg->operator_id == NULL)
		return;
	path = layout_roles(w->cfg->root);
	data = worker_node_roles_data(w->cfg);
	zk_create_node(w->zk, path, data, (int)strlen(data), ZOO_PERSISTENT, worker_node_roles_cb,
	               w);
	free(data);
	free(path);
}

/* Create the root paths and our node, in one pipeline (the server keeps the order). */
void
worker_node_register(struct worker *w)
{
	const char *root = w->cfg->root;
	char *dirs[] = {layout_jobs(root), layout_workers(root), layout_lock_dir(root, 1),
	                layout_lock_dir(root, 2), layout_drains(root)};
	char *data;
	size_t i;

	worker_set_state(w, WORKER_REGISTERING);
	zk_create_path(w->zk, root, ZOO_PERSISTENT, worker_node_root_cb, w);
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		zk_create_node(w->zk, dirs[i], NULL, -1, ZOO_PERSISTENT, worker_node_root_cb, w);
		free(dirs[i]);
	}
	worker_node_roles(w);
	data = worker_node_data(w);
	zk_create_node(w->zk, w->path, data, (int)strlen(data), ZOO_EPHEMERAL,
	               worker_node_register_cb, w);
	free(data);
}

/* Update our node's job list after a reload. */
void
worker_node_update(struct worker *w)
{
	char *data;

	if (w->state != WORKER_READY)
		return;
	data = worker_node_data(w);
	zk_set(w->zk, w->path, data, (int)strlen(data), -1, worker_node_root_cb, w);
	free(data);
}
