/* Runs in: the worker's main process (`leasekeeper run`). */
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
#include "format.h"
#include "job.h"
#include "layout.h"
#include "leasekeeper.h"
#include "log.h"
#include "members.h"
#include "nodedata.h"
#include "runspec.h"
#include "sdnotify.h"
#include "svlink.h"
#include "worker.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define WORKER_SUPERVISOR_RESTARTS 5    /* at most this many ... */
#define WORKER_SUPERVISOR_WINDOW_S 60   /* ... within this many seconds */
#define WORKER_STOP_SLACK_MS       2000 /* beyond the longest kill_grace at shutdown */
#define WORKER_FLUSH_MS            2000 /* at most this long for the last writes to land */
#define WORKER_REREGISTER_MAX      5    /* registrations again after a deletion, at most ... */
#define WORKER_REREGISTER_WINDOW_S 60   /* ... within this many seconds; then wait */
#define WORKER_DRAIN_POLL_MS       250  /* drained: how often the leases still held are counted */
#define WORKER_STATUS_MS           1000 /* systemd's STATUS= is brought up to date this often */
#define WORKER_PLACEMENT_MS        5000 /* how often jobs no live worker can run are looked for */

enum worker_state {
	WORKER_CONNECTING,  /* no session yet */
	WORKER_REGISTERING, /* creating our node */
	WORKER_DUPLICATE,   /* another session holds our node id: waiting for it to go */
	WORKER_READY,       /* registered: jobs may contend */
	WORKER_STOPPING,    /* stopping jobs before closing the session */
};

struct worker_job {
	struct job *job;
	int done;
	TAILQ_ENTRY(worker_job) entry;
};

/* A configuration replaced by a reload, kept while jobs it describes may still stop. */
struct worker_config {
	struct config *cfg;
	TAILQ_ENTRY(worker_config) entry;
};

struct worker {
	char *config_file;
	struct config *cfg;
	struct config *initial_cfg; /* the caller's: freed by the caller */
	struct event_base *base;
	struct zk *zk;
	struct svlink *sv;
	struct endpoints *http;
	struct members *members;            /* the live workers and their jobs, for ranking ticks */
	struct event *placement_timer;      /* jobs no live worker can run, looked for */
	json_t *unrunnable;                 /* {job: true}: those last found, warned of once */
	char *http_listen;                  /* what http listens on, NULL: off */
	const struct endpoints_cb *http_cb; /* to listen anew at a reload */
	enum worker_state state;
	char *path; /* <root>/workers/<node_id> */
	uint64_t started_ms;
	int notified_ready;
	struct supervisor_opts sv_opts; /* [worker] cgroups, for each supervisor */
	char *cgroup_name;
	int cgroup_said;     /* the containment was logged (once, at start-up) */
	int sv_died_pending; /* a dead supervisor's jobs wait for the new one's cleanup */
	int exit_code;
	struct aclcheck *acl; /* the start-up check of the folders' ACLs, while it runs */
	int acl_done;         /* checked (or nothing to check: no credentials) */
	uint32_t next_run;
	int drained;               /* <root>/drain/<node_id> exists */
	int drain_watching;        /* a watch on <root>/drain is set in this session */
	int drain_held;            /* drained: jobs holding a lease, as our node last said */
	char *drain_path;          /* <root>/drain/<node_id> */
	struct event *drain_timer; /* drained: the deadline of scheduled runs */
	struct event *drain_poll;  /* drained: count the leases still held */

	struct event *signals[5];
	struct event *dup_timer;
	struct event *reg_timer; /* registering again, once the rate limit allows */
	uint64_t rereg_start_ns; /* the window of WORKER_REREGISTER_MAX */
	int rereg_count;
	struct event *stop_timer;
	struct event *sv_timer;
	struct event *reap;
	struct event *flush_timer;
	uint64_t flush_until;
	uint64_t sv_restarts[WORKER_SUPERVISOR_RESTARTS];
	int sv_restart_count;
	uint64_t deadline_ns;         /* the lease deadline before the last answer moved it */
	uint64_t deadline_low_ns;     /* the least time left then, since start; UINT64_MAX: none */
	uint64_t session_expiries;    /* for /metrics */
	uint64_t session_reconnects;  /* the same session back after a disconnect */
	struct event *watchdog_timer; /* WATCHDOG=1 at half of WATCHDOG_USEC; NULL: none */
	struct event *status_timer;   /* STATUS= when it changed; NULL: systemd does not listen */
	char status_sent[256];        /* the last STATUS= sent */

	TAILQ_HEAD(, worker_job) jobs;
	TAILQ_HEAD(, worker_config) retired;
};

static const char *worker_state_names[] = {
    "CONNECTING", "REGISTERING", "DUPLICATE", "READY", "STOPPING",
};

/* ZooKeeper refusals of our registration repeat at every attempt: warn once, then count. */
static struct log_limit worker_lim_read, worker_lim_register, worker_lim_create;

static void worker_register(struct worker *);
static void worker_finish(struct worker *);
static void worker_start_supervisor(struct worker *);
static struct job *worker_job_new(struct worker *, const struct config_job *);

/* Move to a new state, logging the transition by name. */
static void
worker_set_state(struct worker *w, enum worker_state state)
{
	if (w->state == state)
		return;
	log_debug("worker: %s -> %s", worker_state_names[w->state], worker_state_names[state]);
	w->state = state;
}

/* Tell systemd (Type=notify) how we are, if it is listening. */
static void
worker_notify(const char *message)
{
	(void)sdnotify(message);
}

/*
 * What the worker does, in one line for `systemctl status` (STATUS=): its jobs, the
 * leases it holds, its runs, and its session.
 */
static void
worker_status_line(struct worker *w, char *buf, size_t len)
{
	struct worker_job *wj;
	struct job_stats st;
	enum job_state js;
	int jobs = 0, held = 0, running = 0;
	uint64_t deadline, now;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (wj->done)
			continue;
		jobs++;
		job_stats(wj->job, &st);
		held += st.lease_held != 0;
		js = job_state(wj->job);
		running += js == JOB_STARTING || js == JOB_RUNNING || js == JOB_STOPPING;
	}
	switch (w->state) {
	case WORKER_CONNECTING:
		snprintf(buf, len, "connecting to ZooKeeper %s", w->cfg->hosts);
		return;
	case WORKER_REGISTERING:
		snprintf(buf, len, "registering as %s", w->path);
		return;
	case WORKER_DUPLICATE:
		snprintf(buf, len, "waiting for another session's %s to go", w->path);
		return;
	case WORKER_STOPPING:
		snprintf(buf, len, "stopping: %d run%s left, %d lease%s held", running,
		         running == 1 ? "" : "s", held, held == 1 ? "" : "s");
		return;
	case WORKER_READY:
		break;
	}
	if (zk_state(w->zk) == ZK_STATE_CONNECTED) {
		snprintf(buf, len,
		         "%d job%s, %d lease%s held, %d running; connected to ZooKeeper %s "
		         "as session 0x%llx",
		         jobs, jobs == 1 ? "" : "s", held, held == 1 ? "" : "s", running,
		         w->cfg->hosts, (unsigned long long)zk_session_id(w->zk));
		return;
	}
	deadline = zk_deadline_ns(w->zk);
	now = clock_now_ns();
	snprintf(buf, len,
	         "%d job%s, %d lease%s held, %d running; disconnected from ZooKeeper %s, "
	         "lease deadline in %llu ms",
	         jobs, jobs == 1 ? "" : "s", held, held == 1 ? "" : "s", running, w->cfg->hosts,
	         (unsigned long long)(deadline > now ? (deadline - now) / CLOCK_NS_PER_MS : 0));
}

/*
 * Send what (READY=1, ...; NULL: nothing) with the status line, or the status line alone
 * when it changed since the last one sent.
 */
static void
worker_notify_status(struct worker *w, const char *what)
{
	char line[sizeof w->status_sent], msg[sizeof line + 128];

	if (!sdnotify_listening())
		return;
	worker_status_line(w, line, sizeof line);
	if (what == NULL && strcmp(line, w->status_sent) == 0)
		return;
	snprintf(msg, sizeof msg, "%s%sSTATUS=%s", what != NULL ? what : "",
	         what != NULL ? "\n" : "", line);
	if (sdnotify(msg) > 0)
		snprintf(w->status_sent, sizeof w->status_sent, "%s", line);
}

/* Every WORKER_STATUS_MS: STATUS= if it changed. */
static void
worker_status_timer_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	worker_notify_status(arg, NULL);
}

/*
 * The watchdog: from the main loop, so that a loop that is wedged (or a process that is
 * stopped) misses its pings and systemd restarts the service. The supervisor kills the
 * jobs at the lease deadline either way.
 */
static void
worker_watchdog_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	worker_notify("WATCHDOG=1");
}

/* How runs are contained, by name ("unknown" until the supervisor said). */
static const char *
worker_containment_cb(void *arg)
{
	struct worker *w = arg;
	int mode = w->sv != NULL ? svlink_containment(w->sv) : -1;

	return mode < 0 ? "unknown" : proto_containment_name((enum proto_containment)mode);
}

/* Whether this worker carries job cj: its labels match the job's constraint. */
static int
worker_carries(const struct config *cfg, const struct config_job *cj, char *why, size_t size)
{
	return config_job_matches(cj, cfg->labels, why, size);
}

/* Log the jobs of cfg that this worker does not carry, and why. */
static void
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
	if (w->drained) {
		json_object_set_new(o, "drained", json_true());
		json_object_set_new(o, "leases_held", json_integer(w->drain_held));
	}
	worker_node_placement(w->cfg, o);
	format_stamp(o);
	out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return out;
}

static void worker_watch_own(struct worker *);
static void worker_dup_watch_cb(int, const char *, void *);
static void worker_dup_get_cb(const struct zk_reply *, void *);

/*
 * Our node is gone (deleted by someone else, or the whole root): not ready (/health says
 * so) until registered again, at most WORKER_REREGISTER_MAX times a minute so that
 * someone deleting it in a loop cannot make us write in a loop.
 */
static void
worker_lost_node(struct worker *w, const char *why)
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
		worker_register(w);
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
static void
worker_reg_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (w->state == WORKER_REGISTERING)
		worker_register(w);
}

/* Our node changed (our own update) or went away. */
static void
worker_own_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)path;
	if (w->state != WORKER_READY)
		return;
	if (type == ZOO_DELETED_EVENT)
		worker_lost_node(w, "was deleted by someone else");
	else
		worker_watch_own(w);
}

/* Our node as read with its watch: still ours? */
static void
worker_own_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;

	if (w->state != WORKER_READY || zk_connection_error(reply->rc))
		return; /* a reconnect watches it again */
	if (reply->rc == ZNONODE)
		worker_lost_node(w, "is gone");
	else if (reply->rc == ZOK && reply->stat != NULL &&
	         reply->stat->ephemeralOwner != zk_session_id(w->zk)) {
		/* Deleted and made again by another session under our node id. */
		log_warnx("%s is now held by another session (0x%llx)", w->path,
		          (unsigned long long)reply->stat->ephemeralOwner);
		worker_set_state(w, WORKER_REGISTERING);
		zk_get(w->zk, w->path, worker_dup_watch_cb, worker_dup_get_cb, w);
	}
}

/* Watch our node, so that its deletion by anyone else is noticed. */
static void
worker_watch_own(struct worker *w)
{
	zk_get(w->zk, w->path, worker_own_watch_cb, worker_own_get_cb, w);
}

static void worker_registered(struct worker *);
static void worker_watch_drain(struct worker *);

/*
 * The start-up ACL check is over. Open folders were logged; with require_acl they stop the
 * worker before any job contends. Interrupted: the next registration checks again.
 */
static void
worker_acl_cb(enum aclcheck_result result, void *arg)
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
	if (w->state == WORKER_REGISTERING)
		worker_registered(w);
}

/*
 * Whether jobs may contend: the supervisor said how it contains runs, after it emptied
 * and removed what a previous supervisor or worker left (PROTO_HELLO).
 */
static int
worker_sv_ready(struct worker *w)
{
	int mode = svlink_containment(w->sv);

	return mode >= 0 && mode != PROTO_CONTAIN_FAILED;
}

/* Registered: check the ACLs once, then tell systemd once and let the jobs contend. */
static void
worker_registered(struct worker *w)
{
	struct worker_job *wj;

	evtimer_del(w->dup_timer);
	evtimer_del(w->reg_timer);
	if (!w->acl_done) {
		worker_set_state(w, WORKER_REGISTERING);
		if (w->acl == NULL)
			w->acl = aclcheck_start(w->zk, w->cfg, w->path, worker_acl_cb, w);
		return;
	}
	worker_set_state(w, WORKER_READY);
	log_info("registered as %s (session 0x%llx)", w->path,
	         (unsigned long long)zk_session_id(w->zk));
	if (!w->notified_ready) {
		w->notified_ready = 1;
		worker_notify_status(w, "READY=1");
	}
	worker_watch_own(w);
	members_start(w->members);
	worker_watch_drain(w);
	if (!worker_sv_ready(w))
		return; /* worker_sv_hello_cb lets them */
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			job_ready(wj->job);
	}
}

/* Another session's node under our id went away: try again. */
static void
worker_dup_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)path;
	if (w->state == WORKER_DUPLICATE && type == ZOO_DELETED_EVENT) {
		log_info("the other session's %s is gone; registering", w->path);
		worker_register(w);
	}
}

/* The node under our id: ours after all (a create whose answer we lost), or another's. */
static void
worker_dup_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	struct timeval tv;
	char *data;
	int wait_ms;

	if (w->state != WORKER_REGISTERING && w->state != WORKER_DUPLICATE)
		return;
	if (zk_connection_error(reply->rc))
		return; /* registered again after the reconnect */
	if (reply->rc == ZNONODE) {
		worker_register(w);
		return;
	}
	if (reply->rc != ZOK || reply->stat == NULL) {
		log_warnx_limited(&worker_lim_read, "cannot read %s: %s", w->path,
		                  zerror(reply->rc));
		return;
	}
	if (reply->stat->ephemeralOwner == zk_session_id(w->zk)) {
		worker_registered(w);
		return;
	}
	if (w->state == WORKER_DUPLICATE)
		return;
	worker_set_state(w, WORKER_DUPLICATE);
	wait_ms = zk_timeout_ms(w->zk) + 2000;
	/* Whoever holds our node id wrote its data: described, never copied raw into the log. */
	data = nodedata_describe(reply->value, reply->value_len);
	log_warnx("node id \"%s\" is registered by another session (0x%llx: %s); waiting up to "
	          "%d ms for it to expire",
	          w->cfg->node_id, (unsigned long long)reply->stat->ephemeralOwner, data, wait_ms);
	free(data);
	tv.tv_sec = wait_ms / 1000;
	tv.tv_usec = (wait_ms % 1000) * 1000;
	evtimer_add(w->dup_timer, &tv);
}

/* The other session kept our node id: another worker is running with it. */
static void
worker_dup_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;

	(void)fd;
	(void)what;
	if (w->state != WORKER_DUPLICATE)
		return;
	log_warnx("another worker is running with node id \"%s\" (%s is held by a live session): "
	          "give this worker another node_id in [worker], or stop the other one",
	          w->cfg->node_id, w->path);
	w->exit_code = 1;
	worker_finish(w);
}

/* The answer to our registration. */
static void
worker_register_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;

	if (w->state != WORKER_REGISTERING)
		return;
	if (reply->rc == ZOK) {
		worker_registered(w);
		return;
	}
	if (reply->rc == ZNODEEXISTS) {
		zk_get(w->zk, w->path, worker_dup_watch_cb, worker_dup_get_cb, w);
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
		worker_lost_node(w, "could not be created, its parent is gone");
		return;
	}
	log_warnx_limited(&worker_lim_register, "cannot register %s: %s", w->path,
	                  zerror(reply->rc));
}

/* Creating a root path: only a refusal matters. */
static void
worker_root_cb(const struct zk_reply *reply, void *arg)
{
	(void)arg;
	if (reply->rc != ZOK && reply->rc != ZNODEEXISTS && !zk_connection_error(reply->rc) &&
	    reply->rc != ZCLOSING)
		log_warnx_limited(&worker_lim_create, "cannot create %s: %s", reply->path,
		                  zerror(reply->rc));
}

/* Create the root paths and our node, in one pipeline (the server keeps the order). */
static void
worker_register(struct worker *w)
{
	const char *root = w->cfg->root;
	char *dirs[] = {layout_jobs(root), layout_workers(root), layout_lock_dir(root, 1),
	                layout_lock_dir(root, 2), layout_drains(root)};
	char *data;
	size_t i;

	worker_set_state(w, WORKER_REGISTERING);
	zk_create_path(w->zk, root, ZOO_PERSISTENT, worker_root_cb, w);
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		zk_create_node(w->zk, dirs[i], NULL, -1, ZOO_PERSISTENT, worker_root_cb, w);
		free(dirs[i]);
	}
	data = worker_node_data(w);
	zk_create_node(w->zk, w->path, data, (int)strlen(data), ZOO_EPHEMERAL, worker_register_cb,
	               w);
	free(data);
}

/* Update our node's job list after a reload. */
static void
worker_update_node(struct worker *w)
{
	char *data;

	if (w->state != WORKER_READY)
		return;
	data = worker_node_data(w);
	zk_set(w->zk, w->path, data, (int)strlen(data), -1, worker_root_cb, w);
	free(data);
}

/* Forward a session event to every job. */
static void
worker_jobs_session(struct worker *w, enum zk_event event)
{
	struct worker_job *wj, *next;

	members_session(w->members, event);
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
		svlink_session(w->sv, zk, event);
		break;
	case ZK_EVENT_SESSION_NEW:
		worker_jobs_session(w, event);
		if (w->state != WORKER_STOPPING)
			worker_register(w);
		break;
	case ZK_EVENT_RECONNECTED:
		w->session_reconnects++;
		worker_jobs_session(w, event);
		if (w->state == WORKER_REGISTERING)
			worker_register(w);
		else if (w->state == WORKER_DUPLICATE)
			zk_get(w->zk, w->path, worker_dup_watch_cb, worker_dup_get_cb, w);
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

	if (job != NULL)
		job_started(job, run, pid);
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

	if (job != NULL)
		job_exited(job, run, status, reason, usage);
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
				job_supervisor_died(wj->job);
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
static int
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

/*
 * The supervisor is ready and says how it contains runs. Under cgroups = required without
 * a usable cgroup v2, or without a controller a job's limit needs, stop; under auto, say
 * once that runs fall back to process groups, and which limits are not enforced.
 * Then release what a dead supervisor's jobs held, and let the jobs contend.
 */
static void
worker_sv_hello_cb(enum proto_containment mode, unsigned controllers, const char *note, void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj, *next;

	(void)controllers; /* svlink_controllers */
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
				job_supervisor_died(wj->job);
		}
	}
	worker_update_node(w);
	if (w->state != WORKER_READY)
		return;
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_ready(wj->job);
	}
}

static void
worker_start_supervisor(struct worker *w)
{
	static const struct svlink_cb cb = {worker_sv_started_cb, worker_sv_start_failed_cb,
	                                    worker_sv_exited_cb, worker_sv_died_cb,
	                                    worker_sv_hello_cb};

	w->sv = svlink_start(w->base, &cb, w, &w->sv_opts);
}

/*
 * Leave the loop: let the last writes (run records) land, then close the session, which
 * deletes its ephemeral nodes at once.
 */
static void
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
	struct worker *w = arg;
	struct worker_job *wj;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (wj->job == job)
			wj->done = 1;
	}
	if (w->state != WORKER_STOPPING) {
		event_active(w->reap, EV_TIMEOUT, 0);
		return;
	}
	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			return;
	}
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

static void worker_reload_http(struct worker *, const char *);

/* Reload the configuration: jobs come, go or change; a broken file changes nothing. */
static void
worker_reload_config(struct worker *w)
{
	struct config *cfg;
	struct config_errors errors = {NULL, 0};
	struct worker_config *rc;
	struct config_job *cj;
	struct worker_job *wj, *next;
	struct job *job;
	size_t i;

	log_info("reloading %s", w->config_file);
	if (config_load(w->config_file, &cfg, &errors) != 0) {
		for (i = 0; i < errors.n; i++)
			log_warnx("%s", errors.lines[i]);
		log_warnx("reload refused: %zu error(s); the running configuration stays",
		          errors.n);
		config_errors_free(&errors);
		return;
	}
	config_errors_free(&errors);
	if (w->sv != NULL && svlink_containment(w->sv) >= 0 && worker_check_limits(w, cfg) != 0) {
		log_warnx("reload refused: with cgroups = required every limit must be enforced; "
		          "the running configuration stays");
		config_free(cfg);
		return;
	}
	if (strcmp(cfg->hosts, w->cfg->hosts) != 0 || strcmp(cfg->root, w->cfg->root) != 0 ||
	    strcmp(cfg->node_id, w->cfg->node_id) != 0 ||
	    cfg->session_timeout_ms != w->cfg->session_timeout_ms ||
	    cfg->safety_margin_ms != w->cfg->safety_margin_ms ||
	    cfg->require_acl != w->cfg->require_acl ||
	    (cfg->auth == NULL) != (w->cfg->auth == NULL) ||
	    (cfg->auth != NULL && strcmp(cfg->auth, w->cfg->auth) != 0))
		log_warnx("reload: changes to [zookeeper], node_id or safety_margin take effect "
		          "only after a restart; job changes are applied now");
	worker_reload_http(w, cfg->http_listen);

	/*
	 * Removed or changed jobs stop; unchanged ones take the new configuration. A copy
	 * that is already stopping (an earlier reload changed or removed it) is left to
	 * finish and never counts as present: the loop below starts a new one if needed.
	 */
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (wj->done || job_stopping(wj->job))
			continue;
		cj = config_find_job(cfg, job_name(wj->job));
		if (cj != NULL && !worker_carries(cfg, cj, NULL, 0)) {
			log_info("reload: job %s no longer runs here (its constraint)",
			         job_name(wj->job));
			job_stop(wj->job, 0);
			continue;
		}
		if (cj != NULL && config_job_equal(cj, job_config(wj->job))) {
			job_update(wj->job, cj);
			continue;
		}
		log_info("reload: job %s %s", job_name(wj->job),
		         cj == NULL ? "removed" : "changed");
		job_stop(wj->job, 0);
	}
	/* New and changed jobs start. */
	for (i = 0; i < cfg->njobs; i++) {
		cj = cfg->jobs_list[i];
		if (!worker_carries(cfg, cj, NULL, 0))
			continue;
		TAILQ_FOREACH(wj, &w->jobs, entry) {
			if (!wj->done && !job_stopping(wj->job) &&
			    strcmp(job_name(wj->job), cj->name) == 0 && job_config(wj->job) == cj)
				break;
		}
		if (wj != NULL)
			continue;
		log_info("reload: job %s starts", cj->name);
		job = worker_job_new(w, cj);
		wj = xcalloc(1, sizeof *wj);
		wj->job = job;
		TAILQ_INSERT_TAIL(&w->jobs, wj, entry);
		if (w->state == WORKER_READY && worker_sv_ready(w))
			job_ready(job);
	}
	/* Jobs still stopping point into the old configuration: keep it until exit. */
	rc = xcalloc(1, sizeof *rc);
	rc->cfg = w->cfg;
	TAILQ_INSERT_TAIL(&w->retired, rc, entry);
	w->cfg = cfg;
	worker_log_excluded(cfg);
	worker_update_node(w);
	event_active(w->reap, EV_TIMEOUT, 0); /* the old configuration may be unused already */
	log_info("reloaded: %zu job(s)", cfg->njobs);
}

/*
 * SIGHUP: reload, between RELOADING=1 (with the CLOCK_MONOTONIC time of the request, as
 * Type=notify-reload wants) and READY=1, once systemd was told we are ready.
 */
static void
worker_reload(struct worker *w)
{
	char msg[128];

	if (w->notified_ready) {
		snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
		         (unsigned long long)sdnotify_monotonic_usec());
		worker_notify(msg);
	}
	worker_reload_config(w);
	if (w->notified_ready)
		worker_notify_status(w, "READY=1");
}

/*
 * [http] listen changed at a reload: listen on the new address, then close the old one;
 * an address that cannot be bound keeps the old listener, and says so.
 */
static void
worker_reload_http(struct worker *w, const char *listen)
{
	struct endpoints *h;

	if ((listen == NULL && w->http_listen == NULL) ||
	    (listen != NULL && w->http_listen != NULL && strcmp(listen, w->http_listen) == 0))
		return;
	if (listen == NULL) {
		log_info("reload: [http] listen is empty: the status page is off");
		endpoints_free(w->http);
		w->http = NULL;
	} else if ((h = endpoints_start(w->base, listen, w->http_cb, w)) == NULL) {
		log_warnx("reload: [http] listen = %s cannot be served (see above): %s%s", listen,
		          w->http_listen != NULL ? "still listening on "
		                                 : "the status page stays off",
		          w->http_listen != NULL ? w->http_listen : "");
		return;
	} else {
		endpoints_free(w->http);
		w->http = h;
	}
	free(w->http_listen);
	w->http_listen = listen != NULL ? xstrdup(listen) : NULL;
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
			worker_reload(w);
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

/* Free the jobs that are done stopping; the others are freed at exit. */
static void
worker_free_jobs(struct worker *w, int all)
{
	struct worker_job *wj, *next;

	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (all || wj->done) {
			TAILQ_REMOVE(&w->jobs, wj, entry);
			job_free(wj->job);
			free(wj);
		}
	}
}

/* Whether any job still points into a retired configuration. */
static int
worker_config_in_use(struct worker *w, const struct config *cfg)
{
	struct worker_job *wj;
	size_t i;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		for (i = 0; i < cfg->njobs; i++) {
			if (job_config(wj->job) == cfg->jobs_list[i])
				return 1;
		}
	}
	return 0;
}

/* Free finished jobs, and the retired configurations no job uses any more. */
static void
worker_reap_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_config *rc, *next;

	(void)fd;
	(void)what;
	worker_free_jobs(w, 0);
	TAILQ_FOREACH_SAFE(rc, &w->retired, entry, next) {
		if (rc->cfg != w->initial_cfg && !worker_config_in_use(w, rc->cfg)) {
			TAILQ_REMOVE(&w->retired, rc, entry);
			config_free(rc->cfg);
			free(rc);
		}
	}
}

/* What a job asks of the worker (job.h). */
static const struct config *
worker_job_config_cb(void *arg)
{
	struct worker *w = arg;

	return w->cfg;
}

static struct svlink *
worker_job_supervisor_cb(void *arg)
{
	struct worker *w = arg;

	return w->sv;
}

/* A fresh id for one run of a job, never 0. */
static uint32_t
worker_job_next_run_cb(void *arg)
{
	struct worker *w = arg;

	if (++w->next_run == 0)
		w->next_run = 1;
	return w->next_run;
}

static const struct members *
worker_job_members_cb(void *arg)
{
	struct worker *w = arg;

	return w->members;
}

/* A new job of this worker (drained with it, if it is). */
static struct job *
worker_job_new(struct worker *w, const struct config_job *cj)
{
	static const struct job_cb cb = {worker_job_config_cb, worker_job_supervisor_cb,
	                                 worker_job_next_run_cb, worker_job_done_cb,
	                                 worker_job_members_cb};
	struct job *job = job_new(w->base, w->zk, cj, &cb, w);

	if (w->drained)
		job_drain(job, 1, 0);
	return job;
}

/* Drained: the jobs that still hold a lease (or run, or wait for one). */
static int
worker_drain_held(struct worker *w)
{
	struct worker_job *wj;
	int n = 0;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done && job_holds_lease(wj->job))
			n++;
	}
	return n;
}

/* Drained: say in our node how many leases are still held, when that changes. */
static void
worker_drain_poll_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct timeval tv = {0, WORKER_DRAIN_POLL_MS * 1000};
	int held;

	(void)fd;
	(void)what;
	if (!w->drained)
		return;
	held = worker_drain_held(w);
	if (held != w->drain_held) {
		w->drain_held = held;
		if (held == 0)
			log_info("drained: no lease held");
		worker_update_node(w);
	}
	evtimer_add(w->drain_poll, &tv);
}

/* The drain's deadline: stop the scheduled runs still going. */
static void
worker_drain_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_job *wj, *next;

	(void)fd;
	(void)what;
	if (!w->drained)
		return;
	log_info("drain deadline: stopping the runs still going");
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_drain(wj->job, 1, 1);
	}
}

/* Drained (deadline_ms: scheduled runs stopped after it; -1: let them end), or not. */
static void
worker_set_drained(struct worker *w, int drained, int64_t deadline_ms)
{
	struct worker_job *wj, *next;
	struct timeval tv;

	if (drained == w->drained)
		return;
	w->drained = drained;
	log_info("%s: %s", drained ? "drained" : "undrained",
	         drained ? "taking no new lease, handing continuous jobs over"
	                 : "taking leases again");
	evtimer_del(w->drain_timer);
	evtimer_del(w->drain_poll);
	if (drained && deadline_ms >= 0) {
		tv.tv_sec = (time_t)(deadline_ms / 1000);
		tv.tv_usec = (suseconds_t)(deadline_ms % 1000) * 1000;
		evtimer_add(w->drain_timer, &tv);
	}
	TAILQ_FOREACH_SAFE(wj, &w->jobs, entry, next) {
		if (!wj->done)
			job_drain(wj->job, drained, 0);
	}
	w->drain_held = drained ? worker_drain_held(w) : 0;
	worker_update_node(w);
	if (drained)
		worker_drain_poll_cb(-1, 0, w);
}

/* Our drain node, read: drained, with its deadline. */
static void
worker_drain_get_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	static struct format_once once;

	if (reply->rc == ZOK && reply->value_len > 0)
		format_warn_once(&once, format_of_data(reply->value, (size_t)reply->value_len),
		                 "the drain node (draining with no deadline)");
	if (reply->rc == ZOK)
		worker_set_drained(w, 1, ctlrec_drain_deadline_ms(reply->value, reply->value_len));
	else if (reply->rc == ZNONODE)
		worker_set_drained(w, 0, -1);
}

/* The drain folder's children: is our node id among them? */
static void
worker_drain_list_cb(const struct zk_reply *reply, void *arg)
{
	struct worker *w = arg;
	int i;

	if (reply->rc == ZNONODE) {
		w->drain_watching = 0; /* no watch was set */
		worker_set_drained(w, 0, -1);
		return;
	}
	if (reply->rc != ZOK) {
		w->drain_watching = 0; /* no watch was set */
		return;                /* a reconnect or the next registration reads it again */
	}
	for (i = 0; i < reply->nchildren; i++) {
		if (strcmp(reply->children[i], w->cfg->node_id) == 0) {
			if (!w->drained)
				zk_get(w->zk, w->drain_path, NULL, worker_drain_get_cb, w);
			return;
		}
	}
	worker_set_drained(w, 0, -1);
}

/* A drain node came or went. */
static void
worker_drain_watch_cb(int type, const char *path, void *arg)
{
	struct worker *w = arg;

	(void)type;
	(void)path;
	w->drain_watching = 0; /* it fired */
	if (w->state == WORKER_READY)
		worker_watch_drain(w);
}

/* Read the drain folder, and watch it. */
static void
worker_watch_drain(struct worker *w)
{
	char *dir = layout_drains(w->cfg->root);

	/* One watch at a time: registering again in the same session reads, not re-watches. */
	zk_children(w->zk, dir, w->drain_watching ? NULL : worker_drain_watch_cb,
	            worker_drain_list_cb, w);
	w->drain_watching = 1;
	free(dir);
}

/* Whether the worker is drained, for /status and /metrics. */
static int
worker_drained_cb(void *arg)
{
	struct worker *w = arg;

	return w->drained;
}

/* Registered with a connected session: what /health reports. */
static int
worker_ready_cb(void *arg)
{
	struct worker *w = arg;

	return w->state == WORKER_READY && zk_state(w->zk) == ZK_STATE_CONNECTED;
}

/*
 * Why the worker is not ready (/readyz), or NULL: registered with a connected session and
 * not draining. i13ctl's drained flag belongs here: a drained worker answers "draining".
 */
static const char *
worker_not_ready_cb(void *arg)
{
	struct worker *w = arg;

	if (w->state == WORKER_STOPPING)
		return "stopping";
	if (zk_state(w->zk) != ZK_STATE_CONNECTED)
		return "not connected to ZooKeeper";
	if (w->state != WORKER_READY)
		return w->state == WORKER_DUPLICATE
		           ? "not registered: another session holds the node id"
		           : "not registered yet";
	if (w->drained)
		return "drained (leasekeeper undrain)";
	return NULL;
}

/* The worker's own counters, for /metrics. */
static void
worker_stats_cb(void *arg, struct endpoints_worker_stats *st)
{
	struct worker *w = arg;

	st->session_expiries = w->session_expiries;
	st->session_reconnects = w->session_reconnects;
	st->start_ms = w->started_ms;
}

static enum zk_state
worker_session_cb(void *arg)
{
	struct worker *w = arg;

	return zk_state(w->zk);
}

/* Time left before the supervisor kills the jobs if no answer arrives. */
static uint64_t
worker_deadline_in_ms_cb(void *arg)
{
	struct worker *w = arg;
	uint64_t deadline = zk_deadline_ns(w->zk), now = clock_now_ns();

	return deadline > now ? (deadline - now) / CLOCK_NS_PER_MS : 0;
}

/* The least time left before the lease deadline when an answer moved it, since start. */
static uint64_t
worker_deadline_low_ms_cb(void *arg)
{
	struct worker *w = arg;

	if (w->deadline_low_ns == UINT64_MAX)
		return UINT64_MAX;
	return w->deadline_low_ns / CLOCK_NS_PER_MS;
}

/* Call fn for each job not yet done. */
static void
worker_jobs_cb(void *arg, void (*fn)(const struct job *, void *), void *fnarg)
{
	struct worker *w = arg;
	struct worker_job *wj;

	TAILQ_FOREACH(wj, &w->jobs, entry) {
		if (!wj->done)
			fn(wj->job, fnarg);
	}
}

/* Add one job's status to a JSON array. */
static void
worker_job_status_cb(const struct job *job, void *arg)
{
	json_array_append_new(arg, job_status_json(job));
}

/* The worker's view of itself, for the HTTP status. */
static json_t *
worker_status_cb(void *arg)
{
	struct worker *w = arg;
	json_t *jobs = json_array();
	char session[24], start[40];

	worker_jobs_cb(w, worker_job_status_cb, jobs);
	/* As the logs print it: a 64-bit number is not safe in JSON (2^53). */
	snprintf(session, sizeof session, "0x%llx", (unsigned long long)zk_session_id(w->zk));
	clock_iso8601(w->started_ms, start, sizeof start);
	return json_pack(
	    "{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I, s:b, s:o}", "node", w->cfg->node_id,
	    "version", LEASEKEEPER_VERSION, "start", start, "state", worker_state_names[w->state],
	    "ready", worker_not_ready_cb(w) == NULL, "containment", worker_containment_cb(w),
	    "session_state", zk_state_name(zk_state(w->zk)), "session_id", session,
	    "session_timeout_ms", (json_int_t)zk_timeout_ms(w->zk), "lease_deadline_in_ms",
	    (json_int_t)worker_deadline_in_ms_cb(w), "drained", w->drained, "jobs", jobs);
}

/*
 * The live workers that can run a job of our configuration: those whose registration lists
 * it (its constraint matches their labels) and that are not drained, this one included once
 * its own node is read back; -1 until the view of the workers is listed in this session.
 */
static int
worker_runnable(const struct worker *w, const char *job)
{
	const char **nodes;
	size_t n;

	if (w->members == NULL || !members_ready(w->members))
		return -1;
	nodes = members_carrying(w->members, job, &n);
	free(nodes);
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* For /metrics: each job of our configuration with worker_runnable(). */
static void
worker_placement_cb(void *arg, void (*fn)(const char *job, int workers, void *), void *fnarg)
{
	struct worker *w = arg;
	size_t i;

	for (i = 0; i < w->cfg->njobs; i++)
		fn(w->cfg->jobs_list[i]->name, worker_runnable(w, w->cfg->jobs_list[i]->name),
		   fnarg);
}

/*
 * Every WORKER_PLACEMENT_MS: warn once of each job of our configuration that no live worker
 * can run (its constraint matches no live worker's labels, or those that match are drained),
 * and say when one can again.
 */
static void
worker_placement_timer_cb(int fd, short what, void *arg)
{
	struct worker *w = arg;
	json_t *now = json_object();
	char why[CONFIG_TERM_MAX];
	const char *name;
	size_t i;
	int n;

	(void)fd;
	(void)what;
	if (w->state != WORKER_READY || zk_state(w->zk) != ZK_STATE_CONNECTED)
		goto keep; /* what we would count is not known now */
	for (i = 0; i < w->cfg->njobs; i++) {
		name = w->cfg->jobs_list[i]->name;
		if ((n = worker_runnable(w, name)) < 0)
			goto keep;
		if (n > 0) {
			if (json_object_get(w->unrunnable, name) != NULL)
				log_info("job %s: %d live worker%s can run it again", name, n,
				         n == 1 ? "" : "s");
			continue;
		}
		json_object_set_new(now, name, json_true());
		if (json_object_get(w->unrunnable, name) != NULL)
			continue;
		if (config_job_matches(w->cfg->jobs_list[i], w->cfg->labels, why, sizeof why))
			log_warnx(
			    "job %s: no live worker can run it: every worker that carries it is "
			    "drained (see leasekeeper status)",
			    name);
		else
			log_warnx(
			    "job %s: no live worker can run it: no worker that is not drained "
			    "matches its constraint (%s fails here; see leasekeeper status)",
			    name, why);
	}
	json_decref(w->unrunnable);
	w->unrunnable = now;
	return;
keep:
	json_decref(now);
}

/*
 * When systemd listens: STATUS= kept up to date, and WATCHDOG=1 at half the interval it
 * asks for (WATCHDOG_USEC, for us if WATCHDOG_PID says so), from the start.
 */
static void
worker_notify_start(struct worker *w)
{
	uint64_t usec;
	struct timeval tv;

	if (!sdnotify_listening())
		return;
	tv.tv_sec = WORKER_STATUS_MS / 1000;
	tv.tv_usec = (WORKER_STATUS_MS % 1000) * 1000;
	w->status_timer = event_new(w->base, -1, EV_PERSIST, worker_status_timer_cb, w);
	event_add(w->status_timer, &tv);
	worker_notify_status(w, NULL);
	usec = sdnotify_watchdog_usec(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
	if (usec == 0)
		return;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	w->watchdog_timer = event_new(w->base, -1, EV_PERSIST, worker_watchdog_cb, w);
	event_add(w->watchdog_timer, &tv);
	worker_notify("WATCHDOG=1");
	log_info("systemd watchdog: WATCHDOG=1 every %llu ms",
	         (unsigned long long)(usec + 999) / 1000);
}

/* The `run` command: the daemon, in the foreground, until SIGTERM or SIGINT. */
int
worker_run(const char *config_file, struct config *cfg)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
	static const struct endpoints_cb hcb = {
	    worker_status_cb,          worker_ready_cb,    worker_not_ready_cb,
	    worker_stats_cb,           worker_session_cb,  worker_deadline_in_ms_cb,
	    worker_deadline_low_ms_cb, worker_jobs_cb,     worker_containment_cb,
	    worker_drained_cb,         worker_placement_cb};
	struct worker w;
	struct worker_job *wj;
	struct worker_config *rc;
	char *jobs_dir;
	size_t i;

	memset(&w, 0, sizeof w);
	w.config_file = xstrdup(config_file);
	w.cfg = cfg;
	w.initial_cfg = cfg;
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

	signal(SIGPIPE, SIG_IGN);
	if ((w.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		w.signals[i] = evsignal_new(w.base, sigs[i], worker_signal_cb, &w);
		event_add(w.signals[i], NULL);
	}
	/* A status page that cannot listen is a configuration error, like any other. */
	w.http_cb = &hcb;
	if (cfg->http_listen != NULL) {
		if ((w.http = endpoints_start(w.base, cfg->http_listen, &hcb, &w)) == NULL) {
			log_warnx("%s: [http] listen = %s cannot be served (see above): free the "
			          "port, fix the address, or leave listen empty to turn the status "
			          "page off",
			          config_file, cfg->http_listen);
			for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
				event_free(w.signals[i]);
			event_base_free(w.base);
			free(w.path);
			free(w.config_file);
			return EXIT_CONFIG;
		}
		w.http_listen = xstrdup(cfg->http_listen);
	}
	w.dup_timer = evtimer_new(w.base, worker_dup_timer_cb, &w);
	w.reg_timer = evtimer_new(w.base, worker_reg_timer_cb, &w);
	w.stop_timer = evtimer_new(w.base, worker_stop_timer_cb, &w);
	w.sv_timer = evtimer_new(w.base, worker_sv_timer_cb, &w);
	w.reap = event_new(w.base, -1, 0, worker_reap_cb, &w);
	w.flush_timer = evtimer_new(w.base, worker_flush_cb, &w);
	w.drain_timer = evtimer_new(w.base, worker_drain_timer_cb, &w);
	w.drain_poll = evtimer_new(w.base, worker_drain_poll_cb, &w);
	w.drain_path = layout_drain(cfg->root, cfg->node_id);
	w.cgroup_name = cgroup_worker_name(cfg->node_id, cfg->state_dir);
	w.sv_opts.cgroup_name = w.cgroup_name;
	w.sv_opts.cgroups = cfg->cgroups == CONFIG_CGROUPS_OFF        ? SUPERVISOR_CGROUPS_OFF
	                    : cfg->cgroups == CONFIG_CGROUPS_REQUIRED ? SUPERVISOR_CGROUPS_REQUIRED
	                                                              : SUPERVISOR_CGROUPS_AUTO;
	worker_start_supervisor(&w);
	log_info("leasekeeper %s starting as node \"%s\", %zu job(s), supervisor pid %ld",
	         LEASEKEEPER_VERSION, cfg->node_id, cfg->njobs, (long)svlink_pid(w.sv));
	if (config_auth_warning(cfg) != NULL)
		log_warnx("%s", config_auth_warning(cfg));
	/* Without credentials every node is open: the warning above says it all. */
	w.acl_done = cfg->auth == NULL;

	w.zk = zk_create(w.base, cfg->hosts, (int)cfg->session_timeout_ms,
	                 (int)cfg->safety_margin_ms, cfg->auth, worker_zk_cb, &w);
	w.members = members_new(w.zk, cfg->root);
	w.unrunnable = json_object();
	{
		struct timeval ptv = {WORKER_PLACEMENT_MS / 1000,
		                      (WORKER_PLACEMENT_MS % 1000) * 1000};

		w.placement_timer =
		    event_new(w.base, -1, EV_PERSIST, worker_placement_timer_cb, &w);
		event_add(w.placement_timer, &ptv);
	}
	worker_log_excluded(cfg);
	for (i = 0; i < cfg->njobs; i++) {
		if (!worker_carries(cfg, cfg->jobs_list[i], NULL, 0))
			continue;
		wj = xcalloc(1, sizeof *wj);
		wj->job = worker_job_new(&w, cfg->jobs_list[i]);
		TAILQ_INSERT_TAIL(&w.jobs, wj, entry);
	}
	worker_notify_start(&w);

	event_base_dispatch(w.base);

	/*
	 * The supervisor goes first: leases may be released and the session closed only once
	 * no job can be alive. If that is not certain, the session is left to expire.
	 */
	if (!svlink_free(w.sv))
		zk_abandon(w.zk);
	aclcheck_free(w.acl);
	worker_free_jobs(&w, 1);
	members_free(w.members);
	zk_free(w.zk);
	endpoints_free(w.http);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		event_free(w.signals[i]);
	event_free(w.dup_timer);
	event_free(w.reg_timer);
	event_free(w.stop_timer);
	event_free(w.sv_timer);
	event_free(w.reap);
	event_free(w.flush_timer);
	event_free(w.drain_timer);
	event_free(w.drain_poll);
	free(w.drain_path);
	if (w.watchdog_timer != NULL)
		event_free(w.watchdog_timer);
	if (w.status_timer != NULL)
		event_free(w.status_timer);
	event_free(w.placement_timer);
	json_decref(w.unrunnable);
	event_base_free(w.base);
	log_info("stopped");
	free(w.path);
	free(w.http_listen);
	free(w.cgroup_name);
	free(w.config_file);
	while ((rc = TAILQ_FIRST(&w.retired)) != NULL) {
		TAILQ_REMOVE(&w.retired, rc, entry);
		if (rc->cfg != cfg)
			config_free(rc->cfg);
		free(rc);
	}
	if (w.cfg != cfg)
		config_free(w.cfg);
	return w.exit_code;
}
