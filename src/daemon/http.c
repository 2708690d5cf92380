/* Runs in: the main process. */
/*
 * http.c: the worker's HTTP status endpoint, for operators and monitoring.
 *
 * GET /status is the worker's view as JSON (session, deadline, jobs and their leases),
 * GET /metrics the same as Prometheus text, GET /health 200 while the worker is
 * registered with a connected session and 503 otherwise. GET /readyz is /health and not
 * draining, with the reason when not ready; GET /livez says the loop is alive: it answers
 * from the loop, 503 if the loop's own once-a-second timer has not run for
 * HTTP_LIVEZ_STALE_MS (a loop wedged outright does not answer at all, which a probe's
 * timeout counts as a failure too). Neither depends on ZooKeeper.
 *
 * The listener shares the loop that keeps the ZooKeeper heartbeat, and its clients are not
 * trusted, so everything a client can make it hold is bounded: a request (from the
 * connection's start or the previous reply to the end of the reply) gets HTTP_TIMEOUT_S,
 * headers HTTP_MAX_HEADERS bytes, a body none, and at most HTTP_MAX_CONNECTIONS
 * connections are open; past that the listener stops accepting and the kernel's backlog
 * holds the rest, and each reply closes its connection, so a client that keeps sending
 * requests cannot keep its slot from those waiting. A connection reads at most
 * HTTP_MAX_INPUT bytes ahead of the request being answered: requests pipelined behind a
 * reply the client does not read wait in the kernel, not in our memory. Running out of
 * file descriptors pauses accepting for
 * HTTP_ACCEPT_PAUSE_MS, with one warning per interval, instead of failing accept() in a
 * loop.
 *
 * libevent 2.1 has no connection cap and no hook when a server connection opens, so we
 * make each connection's bufferevent ourselves (evhttp_set_bevcb), then, once the accept
 * callback has returned, find the connection evhttp built around it and ask to hear of
 * its close.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <jansson.h>

#include "clock.h"
#include "http.h"
#include "job.h"
#include "leasekeeper.h"
#include "log.h"
#include "xmalloc.h"

#define HTTP_TIMEOUT_S       10
#define HTTP_MAX_HEADERS     8192
#define HTTP_MAX_BODY        0
#define HTTP_MAX_CONNECTIONS 16
#define HTTP_MAX_INPUT       (2 * HTTP_MAX_HEADERS)
#define HTTP_ACCEPT_PAUSE_MS 1000
#define HTTP_BEAT_MS         1000  /* the loop's heartbeat timer, for /livez */
#define HTTP_LIVEZ_STALE_MS  10000 /* /livez fails when the last beat is older */

/* One open connection: a slot is taken when evhttp asks for a bufferevent. */
struct http_conn {
	struct http *h;
	int used;
	struct bufferevent *bev;         /* until adopted: ours, with a reference held */
	struct evhttp_connection *evcon; /* once adopted */
	struct event *deadline;          /* the request in progress must be done by then */
};

struct http {
	struct event_base *base;
	struct evhttp *evh;
	struct evconnlistener *lev;
	struct event *adopt;  /* finds the connections evhttp built on new bufferevents */
	struct event *resume; /* accepting again after running out of descriptors */
	struct event *beat;   /* the loop's heartbeat, once a second */
	uint64_t beat_ns;     /* its last run */
	int listening;
	int out_of_fds;
	int closing;
	int nconn;
	struct http_conn conns[HTTP_MAX_CONNECTIONS];
	const struct http_cb *cb;
	void *arg;
};

static struct log_limit http_lim_accept, http_lim_full;

/* The one listener of the process: libevent hands its accept errors evhttp's argument. */
static struct http *http_self;

/* Accept while there is room and descriptors; otherwise leave clients in the backlog. */
static void
http_listen_update(struct http *h)
{
	int want = !h->closing && !h->out_of_fds && h->nconn < HTTP_MAX_CONNECTIONS;

	if (h->lev == NULL || want == h->listening)
		return;
	if (want)
		evconnlistener_enable(h->lev);
	else
		evconnlistener_disable(h->lev);
	h->listening = want;
	if (!want && !h->out_of_fds && !h->closing)
		log_warnx_limited(&http_lim_full,
		                  "http: %d connections open, the most allowed: new ones wait",
		                  HTTP_MAX_CONNECTIONS);
}

/* Give a connection's slot back. */
static void
http_conn_release(struct http_conn *c)
{
	evtimer_del(c->deadline);
	c->used = 0;
	c->bev = NULL;
	c->evcon = NULL;
	c->h->nconn--;
	http_listen_update(c->h);
}

/* A connection the server (or its client) closed. */
static void
http_conn_close_cb(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn *c = arg;

	evhttp_connection_set_closecb(evcon, NULL, NULL);
	if (c->used && c->evcon == evcon)
		http_conn_release(c);
}

/* The request in progress took too long: drop the connection. */
static void
http_conn_deadline_cb(int fd, short what, void *arg)
{
	struct http_conn *c = arg;
	struct evhttp_connection *evcon = c->evcon;

	(void)fd;
	(void)what;
	if (evcon == NULL)
		return;
	log_debug("http: a request took more than %d s: closing its connection", HTTP_TIMEOUT_S);
	evhttp_connection_free(evcon);
	if (c->used && c->evcon == evcon)
		http_conn_release(c);
}

/* Give the connection a request's time again: from now to the end of its next reply. */
static void
http_conn_rearm(struct http_conn *c)
{
	struct timeval tv = {HTTP_TIMEOUT_S, 0};

	evtimer_add(c->deadline, &tv);
}

/* evhttp wants a bufferevent for an accepted connection: take a slot for it. */
static struct bufferevent *
http_bev_cb(struct event_base *base, void *arg)
{
	struct http *h = arg;
	struct http_conn *c = NULL;
	size_t i;

	for (i = 0; i < HTTP_MAX_CONNECTIONS && c == NULL; i++) {
		if (!h->conns[i].used)
			c = &h->conns[i];
	}
	if (c == NULL)
		return NULL; /* not reached: the listener stops at the cap */
	c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		return NULL;
	bufferevent_incref(c->bev); /* alive until adopted, whatever evhttp does meanwhile */
	/*
	 * Stop reading once this much waits unparsed: evhttp answers one request at a time,
	 * and would otherwise read everything a client pipelines behind a reply it does not
	 * read. Room for a whole request, so a request never waits on itself.
	 */
	bufferevent_setwatermark(c->bev, EV_READ, 0, HTTP_MAX_INPUT);
	c->used = 1;
	h->nconn++;
	http_conn_rearm(c);
	event_active(h->adopt, EV_TIMEOUT, 1);
	http_listen_update(h);
	return c->bev;
}

/* After the accept callback: find the connection evhttp built on each new bufferevent. */
static void
http_adopt_cb(int fd, short what, void *arg)
{
	struct http *h = arg;
	struct http_conn *c;
	bufferevent_event_cb eventcb;
	void *cbarg;
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		struct bufferevent *bev;

		c = &h->conns[i];
		if (!c->used || c->evcon != NULL)
			continue;
		bev = c->bev;
		bufferevent_getcb(bev, NULL, NULL, &eventcb, &cbarg);
		if (eventcb != NULL && cbarg != NULL &&
		    evhttp_connection_get_bufferevent(cbarg) == bev) {
			c->evcon = cbarg;
			evhttp_connection_set_closecb(c->evcon, http_conn_close_cb, c);
		} else
			http_conn_release(c); /* evhttp let it go already */
		bufferevent_decref(bev);
	}
}

/* The slot of the connection a request came on, or NULL. */
static struct http_conn *
http_conn_find(struct http *h, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	size_t i;

	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		if (h->conns[i].used && h->conns[i].evcon == evcon)
			return &h->conns[i];
	}
	return NULL;
}

/*
 * Send a reply; the connection's next request gets its own time from now. With every slot
 * taken the reply closes the connection: a client sending a request every few seconds
 * would otherwise hold its slot for ever, and clients in the backlog wait at most until
 * each holder's next request or HTTP_TIMEOUT_S.
 */
static void
http_send(struct http *h, struct evhttp_request *req, int code, const char *reason,
          struct evbuffer *buf)
{
	struct http_conn *c = http_conn_find(h, req);

	if (c != NULL)
		http_conn_rearm(c);
	if (h->nconn >= HTTP_MAX_CONNECTIONS)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	evhttp_send_reply(req, code, reason, buf);
}

/* accept() failed: out of descriptors (or worse). Pause rather than fail in a loop. */
static void
http_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct http *h = http_self;
	struct timeval tv = {HTTP_ACCEPT_PAUSE_MS / 1000, (HTTP_ACCEPT_PAUSE_MS % 1000) * 1000};

	(void)lev;
	(void)arg;
	if (h == NULL)
		return;
	log_warn_limited(&http_lim_accept,
	                 "http: cannot accept a connection; not accepting for %d ms",
	                 HTTP_ACCEPT_PAUSE_MS);
	h->out_of_fds = 1;
	http_listen_update(h);
	evtimer_add(h->resume, &tv);
}

/* The pause after a failed accept() is over. */
static void
http_resume_cb(int fd, short what, void *arg)
{
	struct http *h = arg;

	(void)fd;
	(void)what;
	h->out_of_fds = 0;
	http_listen_update(h);
}

/* Reply with a body and a content type. */
static void
http_reply(struct http *h, struct evhttp_request *req, int code, const char *type, const char *body)
{
	struct evbuffer *buf = evbuffer_new();
	const char *reason = code == 200 ? "OK" : code == 404 ? "Not Found" : "Service Unavailable";

	evbuffer_add(buf, body, strlen(body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	http_send(h, req, code, reason, buf);
	evbuffer_free(buf);
}

/* Any other path. */
static void
http_notfound_cb(struct evhttp_request *req, void *arg)
{
	http_reply(arg, req, 404, "text/plain", "not found\n");
}

/* GET /status */
static void
http_status_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	json_t *o = h->cb->status(h->arg);
	char *body = json_dumps(o, JSON_INDENT(2));

	http_reply(h, req, 200, "application/json", body);
	free(body);
	json_decref(o);
}

/* GET /health */
static void
http_health_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	int ok = h->cb->ready(h->arg);

	http_reply(h, req, ok ? 200 : 503, "text/plain", ok ? "ok\n" : "not ready\n");
}

/* GET /readyz: registered with a connected session and not draining; else 503 and why. */
static void
http_readyz_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	const char *why = h->cb->not_ready(h->arg);
	char body[256];

	snprintf(body, sizeof body, "%s\n", why != NULL ? why : "ok");
	http_reply(h, req, why == NULL ? 200 : 503, "text/plain", body);
}

/* The loop's heartbeat: /livez reads when it last ran. */
static void
http_beat_cb(int fd, short what, void *arg)
{
	struct http *h = arg;

	(void)fd;
	(void)what;
	h->beat_ns = clock_now_ns();
}

/* GET /livez: the loop answers, and its timers run. */
static void
http_livez_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	uint64_t age = (clock_now_ns() - h->beat_ns) / CLOCK_NS_PER_MS;
	char body[128];

	if (age <= HTTP_LIVEZ_STALE_MS) {
		http_reply(h, req, 200, "text/plain", "ok\n");
		return;
	}
	snprintf(body, sizeof body, "the main loop's timers have not run for %llu ms\n",
	         (unsigned long long)age);
	http_reply(h, req, 503, "text/plain", body);
}

/* What a per-job metric reads. */
enum http_metric {
	HTTP_METRIC_RUNNING,
	HTTP_METRIC_LEASE_HELD,
	HTTP_METRIC_CONFLICT,
	HTTP_METRIC_RUNS,
	HTTP_METRIC_FAILURES,
	HTTP_METRIC_OUTCOMES,
	HTTP_METRIC_DURATION,
	HTTP_METRIC_LAST_RUN,
	HTTP_METRIC_LAST_SUCCESS,
	HTTP_METRIC_INTERVAL,
	HTTP_METRIC_MISSED,
	HTTP_METRIC_PAUSED,
	HTTP_METRIC_ACQUISITIONS,
	HTTP_METRIC_LEASE_ENDS,
	HTTP_METRIC_CORRUPT_STATES,
	HTTP_METRIC_CPU,
	HTTP_METRIC_OOMS,
	HTTP_METRIC_PEAK,
	HTTP_METRIC_HOOK_FAILURES,
};

/*
 * The per-job metrics: name, help, type, and what each reads. Every sample carries the
 * label job_name (not job: Prometheus gives every scraped sample its target's job).
 */
static const struct {
	const char *name;
	const char *help;
	const char *type;
	enum http_metric what;
} http_job_metrics[] = {
    {"leasekeeper_job_running", "1 while the job's command runs here", "gauge",
     HTTP_METRIC_RUNNING},
    {"leasekeeper_job_lease_held", "1 while this worker holds a lease of the job", "gauge",
     HTTP_METRIC_LEASE_HELD},
    {"leasekeeper_job_lease_conflict",
     "1 while the cluster agreed on another number of leases than this worker's", "gauge",
     HTTP_METRIC_CONFLICT},
    {"leasekeeper_job_runs_total", "runs started here", "counter", HTTP_METRIC_RUNS},
    {"leasekeeper_job_failures_total",
     "runs here that failed (any outcome but ok, stopped and killed)", "counter",
     HTTP_METRIC_FAILURES},
    {"leasekeeper_job_runs_ended_total", "runs here that ended, by outcome", "counter",
     HTTP_METRIC_OUTCOMES},
    {"leasekeeper_job_run_duration_seconds", "how long the runs that ended here ran", "histogram",
     HTTP_METRIC_DURATION},
    {"leasekeeper_job_last_run_timestamp_seconds",
     "when the last run here ended, whatever its outcome (Unix time)", "gauge",
     HTTP_METRIC_LAST_RUN},
    {"leasekeeper_job_last_success_timestamp_seconds",
     "when the last run here that ended ok ended (Unix time)", "gauge", HTTP_METRIC_LAST_SUCCESS},
    {"leasekeeper_job_interval_seconds",
     "scheduled jobs: the time between the job's next two ticks", "gauge", HTTP_METRIC_INTERVAL},
    {"leasekeeper_job_missed_ticks_total",
     "ticks no worker started within start_deadline, recorded as missed by this worker", "counter",
     HTTP_METRIC_MISSED},
    {"leasekeeper_job_paused_ticks_total", "ticks let go here because the job was paused",
     "counter", HTTP_METRIC_PAUSED},
    {"leasekeeper_job_lease_acquisitions_total", "leases of the job acquired here", "counter",
     HTTP_METRIC_ACQUISITIONS},
    {"leasekeeper_job_lease_losses_total",
     "leases held here that ended, by cause (deadline, expiry, deleted; released: given back)",
     "counter", HTTP_METRIC_LEASE_ENDS},
    {"leasekeeper_job_corrupt_states_total",
     "tick states read corrupt, or claiming a tick too far ahead, and repaired here", "counter",
     HTTP_METRIC_CORRUPT_STATES},
    {"leasekeeper_job_cpu_seconds_total",
     "CPU time of the job's runs here that have ended (from each run's cgroup)", "counter",
     HTTP_METRIC_CPU},
    {"leasekeeper_job_oom_kills_total", "runs here that ended by the OOM killer", "counter",
     HTTP_METRIC_OOMS},
    {"leasekeeper_job_memory_peak_bytes",
     "the most memory the job's last run here used (memory.peak of its cgroup)", "gauge",
     HTTP_METRIC_PEAK},
    {"leasekeeper_hook_failures_total",
     "hooks (on_failure, on_success, on_missed) of the job that failed, timed out or were not "
     "run here",
     "counter", HTTP_METRIC_HOOK_FAILURES},
};

/* One metric of the /metrics reply being written. */
struct http_metric_out {
	struct evbuffer *buf;
	size_t m;
};

/*
 * A label value as Prometheus' text format quotes it: backslash, double quote and newline
 * escaped with a backslash. A job's name comes from a file a reader of /metrics did not
 * write, and must not end its label or its line.
 */
static void
http_label_value(struct evbuffer *buf, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			evbuffer_add_printf(buf, "\\%c", *s);
		else if (*s == '\n')
			evbuffer_add(buf, "\\n", 2);
		else
			evbuffer_add(buf, s, 1);
	}
}

/* leasekeeper_job_runnable_workers{job_name="JOB"} N, once the count is known. */
static void
http_placement_sample(const char *job, int workers, void *arg)
{
	struct evbuffer *buf = arg;

	if (workers < 0)
		return;
	evbuffer_add_printf(buf, "leasekeeper_job_runnable_workers{job_name=\"");
	http_label_value(buf, job);
	evbuffer_add_printf(buf, "\"} %d\n", workers);
}

/*
 * One sample of a job's metric: NAME[SUFFIX]{job_name="JOB"[,KEY="VALUE"]} V. The value is
 * printed with 15 significant digits: counters below 10^15 exactly, Unix times to the
 * millisecond.
 */
static void
http_sample(struct http_metric_out *out, const struct job *job, const char *suffix, const char *key,
            const char *value, double v)
{
	evbuffer_add_printf(out->buf, "%s%s{job_name=\"", http_job_metrics[out->m].name, suffix);
	http_label_value(out->buf, job_name(job));
	if (key != NULL)
		evbuffer_add_printf(out->buf, "\",%s=\"%s", key, value);
	evbuffer_add_printf(out->buf, "\"} %.15g\n", v);
}

/* A job's run duration histogram. */
static void
http_histogram(struct http_metric_out *out, const struct job *job, const struct job_stats *st)
{
	char le[32];
	size_t i;

	for (i = 0; i < JOB_DURATION_BUCKETS; i++) {
		snprintf(le, sizeof le, "%g", st->bucket_bounds[i]);
		http_sample(out, job, "_bucket", "le", le, (double)st->buckets[i]);
	}
	http_sample(out, job, "_bucket", "le", "+Inf", (double)st->durations);
	http_sample(out, job, "_sum", NULL, NULL, st->duration_sum);
	http_sample(out, job, "_count", NULL, NULL, (double)st->durations);
}

/* One job's samples of a metric. */
static void
http_metric_job_cb(const struct job *job, void *arg)
{
	struct http_metric_out *out = arg;
	struct job_stats st;
	double v = 0;
	size_t i;

	job_stats(job, &st);
	switch (http_job_metrics[out->m].what) {
	case HTTP_METRIC_RUNNING:
		v = job_state(job) == JOB_RUNNING;
		break;
	case HTTP_METRIC_LEASE_HELD:
		v = st.lease_held;
		break;
	case HTTP_METRIC_CONFLICT:
		v = job_state(job) == JOB_CONFLICT;
		break;
	case HTTP_METRIC_RUNS:
		v = (double)st.runs;
		break;
	case HTTP_METRIC_FAILURES:
		v = (double)st.failures;
		break;
	case HTTP_METRIC_OUTCOMES:
		for (i = 0; i < JOB_OUTCOMES; i++)
			http_sample(out, job, "", "outcome", job_outcome_name((enum job_outcome)i),
			            (double)st.outcomes[i]);
		return;
	case HTTP_METRIC_DURATION:
		http_histogram(out, job, &st);
		return;
	case HTTP_METRIC_LAST_RUN:
	case HTTP_METRIC_LAST_SUCCESS: {
		uint64_t ms = http_job_metrics[out->m].what == HTTP_METRIC_LAST_RUN ? st.last_end_ms
		                                                                    : st.last_ok_ms;
		if (ms == 0)
			return; /* none yet: no sample */
		v = (double)ms / 1000.0;
		break;
	}
	case HTTP_METRIC_INTERVAL:
		if (st.interval_s < 0)
			return; /* continuous: no interval */
		v = (double)st.interval_s;
		break;
	case HTTP_METRIC_MISSED:
		v = (double)st.missed_ticks;
		break;
	case HTTP_METRIC_PAUSED:
		v = (double)st.paused_ticks;
		break;
	case HTTP_METRIC_ACQUISITIONS:
		v = (double)st.acquisitions;
		break;
	case HTTP_METRIC_LEASE_ENDS:
		for (i = 0; i < JOB_LEASE_ENDS; i++)
			http_sample(out, job, "", "cause",
			            job_lease_end_name((enum job_lease_end)i),
			            (double)st.lease_ends[i]);
		return;
	case HTTP_METRIC_CORRUPT_STATES:
		v = (double)st.corrupt_states;
		break;
	case HTTP_METRIC_CPU:
		v = (double)st.cpu_usec / 1e6;
		break;
	case HTTP_METRIC_OOMS:
		v = (double)st.ooms;
		break;
	case HTTP_METRIC_HOOK_FAILURES:
		v = (double)st.hook_failures;
		break;
	case HTTP_METRIC_PEAK:
		if (st.last_peak < 0)
			return; /* not known: no sample */
		v = (double)st.last_peak;
		break;
	}
	http_sample(out, job, "", NULL, NULL, v);
}

/* The main loop's own health: the heartbeat's delay, and this host's clock offset. */
static void
http_metrics_loop(struct evbuffer *buf, const struct http_worker_stats *ws)
{
	const struct zk_heartbeat_stats *hb = &ws->heartbeat;
	int i;

	evbuffer_add_printf(buf, "# HELP leasekeeper_heartbeat_delay_seconds from when a session "
	                         "heartbeat was due to its answer: how late main's loop was, plus "
	                         "the server's answer\n"
	                         "# TYPE leasekeeper_heartbeat_delay_seconds histogram\n");
	for (i = 0; hb->bounds != NULL && i < ZK_HEARTBEAT_BUCKETS; i++)
		evbuffer_add_printf(buf,
		                    "leasekeeper_heartbeat_delay_seconds_bucket{le=\"%g\"} %llu\n",
		                    hb->bounds[i], (unsigned long long)hb->buckets[i]);
	evbuffer_add_printf(buf,
	                    "leasekeeper_heartbeat_delay_seconds_bucket{le=\"+Inf\"} %llu\n"
	                    "leasekeeper_heartbeat_delay_seconds_sum %.6f\n"
	                    "leasekeeper_heartbeat_delay_seconds_count %llu\n",
	                    (unsigned long long)hb->count, hb->sum, (unsigned long long)hb->count);
	if (!ws->clock_known)
		return;
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_clock_offset_seconds this host's clock minus the "
	                    "ZooKeeper servers' (positive: ahead), from the time they stamped on "
	                    "this worker's writes\n"
	                    "# TYPE leasekeeper_clock_offset_seconds gauge\n"
	                    "leasekeeper_clock_offset_seconds %.3f\n"
	                    "# HELP leasekeeper_clock_offset_error_seconds the offset is known "
	                    "within this much either way (half the best round trip)\n"
	                    "# TYPE leasekeeper_clock_offset_error_seconds gauge\n"
	                    "leasekeeper_clock_offset_error_seconds %.3f\n",
	                    (double)ws->clock_offset_ms / 1000.0,
	                    (double)ws->clock_error_ms / 1000.0);
}

/* GET /metrics, in Prometheus' text format: each metric's samples together. */
static void
http_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	struct http_metric_out out;
	struct http_worker_stats ws;
	uint64_t low;

	memset(&ws, 0, sizeof ws);
	h->cb->stats(h->arg, &ws);
	out.buf = evbuffer_new();
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_build_info the version running, in its label\n"
	                    "# TYPE leasekeeper_build_info gauge\n"
	                    "leasekeeper_build_info{version=\"%s\"} 1\n",
	                    LEASEKEEPER_VERSION);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_start_time_seconds when the worker started (Unix "
	                    "time)\n# TYPE leasekeeper_start_time_seconds gauge\n"
	                    "leasekeeper_start_time_seconds %.3f\n",
	                    (double)ws.start_ms / 1000.0);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_ready 1 while registered with a connected session "
	                    "and not draining (what /readyz answers 200 to)\n"
	                    "# TYPE leasekeeper_ready gauge\nleasekeeper_ready %d\n",
	                    h->cb->not_ready(h->arg) == NULL);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_session_expiries_total ZooKeeper sessions that "
	                    "expired under this worker\n"
	                    "# TYPE leasekeeper_session_expiries_total counter\n"
	                    "leasekeeper_session_expiries_total %llu\n",
	                    (unsigned long long)ws.session_expiries);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_session_reconnects_total times the same session "
	                    "came back after a disconnect\n"
	                    "# TYPE leasekeeper_session_reconnects_total counter\n"
	                    "leasekeeper_session_reconnects_total %llu\n",
	                    (unsigned long long)ws.session_reconnects);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_session_connected 1 while the ZooKeeper "
	                    "session is connected\n# TYPE leasekeeper_session_connected gauge\n"
	                    "leasekeeper_session_connected %d\n",
	                    h->cb->session(h->arg) == ZK_STATE_CONNECTED);
	evbuffer_add_printf(
	    out.buf,
	    "# HELP leasekeeper_lease_deadline_seconds time left before jobs are killed if no "
	    "answer arrives\n# TYPE leasekeeper_lease_deadline_seconds gauge\n"
	    "leasekeeper_lease_deadline_seconds %.3f\n",
	    (double)h->cb->deadline_in_ms(h->arg) / 1000.0);
	low = h->cb->deadline_low_ms(h->arg);
	if (low != UINT64_MAX)
		evbuffer_add_printf(
		    out.buf,
		    "# HELP leasekeeper_lease_deadline_low_seconds the least time that was left "
		    "before the lease deadline when a heartbeat's answer moved it, since start\n"
		    "# TYPE leasekeeper_lease_deadline_low_seconds gauge\n"
		    "leasekeeper_lease_deadline_low_seconds %.3f\n",
		    (double)low / 1000.0);
	http_metrics_loop(out.buf, &ws);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_containment how this worker keeps each run's "
	                    "processes together (1 for the mode in use)\n"
	                    "# TYPE leasekeeper_containment gauge\n"
	                    "leasekeeper_containment{mode=\"%s\"} 1\n",
	                    h->cb->containment(h->arg));
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_worker_drained 1 while this worker is drained "
	                    "(leasekeeper drain): it takes no new lease\n"
	                    "# TYPE leasekeeper_worker_drained gauge\n"
	                    "leasekeeper_worker_drained %d\n",
	                    h->cb->drained(h->arg) != 0);
	evbuffer_add_printf(out.buf, "# HELP leasekeeper_job_runnable_workers live workers that "
	                             "can run the job (carry it: their labels match its "
	                             "constraint; not drained); 0: nobody runs it\n"
	                             "# TYPE leasekeeper_job_runnable_workers gauge\n");
	h->cb->placement(h->arg, http_placement_sample, out.buf);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_http_connections open connections to this "
	                    "listener (at most %d)\n# TYPE leasekeeper_http_connections gauge\n"
	                    "leasekeeper_http_connections %d\n",
	                    HTTP_MAX_CONNECTIONS, h->nconn);
	for (out.m = 0; out.m < sizeof http_job_metrics / sizeof http_job_metrics[0]; out.m++) {
		evbuffer_add_printf(out.buf, "# HELP %s %s\n# TYPE %s %s\n",
		                    http_job_metrics[out.m].name, http_job_metrics[out.m].help,
		                    http_job_metrics[out.m].name, http_job_metrics[out.m].type);
		h->cb->jobs(h->arg, http_metric_job_cb, &out);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4");
	http_send(h, req, 200, "OK", out.buf);
	evbuffer_free(out.buf);
}

/*
 * libevent's own warnings, through our log: a listener out of file descriptors fails
 * every accept() and would otherwise print a line per attempt.
 */
static void
http_libevent_log_cb(int severity, const char *msg)
{
	static struct log_limit lim;

	if (severity >= EVENT_LOG_WARN)
		log_warnx_limited(&lim, "libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

/*
 * A listener on HOST:PORT with every bound above and no paths yet (http_route); NULL after
 * logging why. The worker's endpoint and `leasekeeper web` are both built on it.
 */
struct http *
http_listen(struct event_base *base, const char *listen)
{
	struct http *h = xcalloc(1, sizeof *h);
	char *host = xstrdup(listen), *colon = strrchr(host, ':');
	struct evhttp_bound_socket *bound;
	struct timeval tv = {HTTP_TIMEOUT_S, 0};
	long port;
	size_t i;

	h->base = base;
	event_set_log_callback(http_libevent_log_cb);
	h->evh = evhttp_new(base);
	if (colon == NULL || (port = strtol(colon + 1, NULL, 10)) <= 0 || port > 65535) {
		log_warnx("http: bad listen address \"%s\"", listen);
		goto fail;
	}
	*colon = '\0';
	if ((bound = evhttp_bind_socket_with_handle(h->evh, host, (unsigned short)port)) == NULL) {
		log_warn("http: cannot listen on %s", listen);
		goto fail;
	}
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		h->conns[i].h = h;
		h->conns[i].deadline = evtimer_new(base, http_conn_deadline_cb, &h->conns[i]);
	}
	h->adopt = event_new(base, -1, 0, http_adopt_cb, h);
	h->resume = evtimer_new(base, http_resume_cb, h);
	h->beat = event_new(base, -1, EV_PERSIST, http_beat_cb, h);
	h->beat_ns = clock_now_ns();
	{
		struct timeval beat = {HTTP_BEAT_MS / 1000, (HTTP_BEAT_MS % 1000) * 1000};

		event_add(h->beat, &beat);
	}
	h->lev = evhttp_bound_socket_get_listener(bound);
	h->listening = 1;
	/* The listener's callbacks get evhttp's argument: the error callback finds us here. */
	http_self = h;
	evconnlistener_set_error_cb(h->lev, http_accept_error_cb);
	evhttp_set_bevcb(h->evh, http_bev_cb, h);
	evhttp_set_timeout_tv(h->evh, &tv);
	evhttp_set_max_headers_size(h->evh, HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(h->evh, HTTP_MAX_BODY);
	evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	log_info("http: listening on %s", listen);
	free(host);
	return h;

fail:
	free(host);
	evhttp_free(h->evh);
	free(h);
	return NULL;
}

/* Answer GET path with fn(req, arg); a NULL path: every path without its own. */
void
http_route(struct http *h, const char *path, void (*fn)(struct evhttp_request *, void *), void *arg)
{
	if (path == NULL)
		evhttp_set_gencb(h->evh, fn, arg);
	else
		evhttp_set_cb(h->evh, path, fn, arg);
}

/* Send a reply within the listener's bounds (see http_send). */
void
http_respond(struct http *h, struct evhttp_request *req, int code, const char *reason,
             struct evbuffer *buf)
{
	http_send(h, req, code, reason, buf);
}

/* Listen on HOST:PORT with the worker's paths; NULL after logging why (run exits 78). */
struct http *
http_start(struct event_base *base, const char *listen, const struct http_cb *cb, void *arg)
{
	struct http *h = http_listen(base, listen);

	if (h == NULL)
		return NULL;
	h->cb = cb;
	h->arg = arg;
	http_route(h, "/status", http_status_cb, h);
	http_route(h, "/metrics", http_metrics_cb, h);
	http_route(h, "/health", http_health_cb, h);
	http_route(h, "/readyz", http_readyz_cb, h);
	http_route(h, "/livez", http_livez_cb, h);
	http_route(h, NULL, http_notfound_cb, h);
	return h;
}

/* Stop listening and close every connection. */
void
http_free(struct http *h)
{
	size_t i;

	if (h == NULL)
		return;
	h->closing = 1;
	h->lev = NULL; /* evhttp_free frees it, then closes the connections */
	evhttp_free(h->evh);
	for (i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		if (h->conns[i].used && h->conns[i].evcon == NULL)
			bufferevent_decref(h->conns[i].bev);
		event_free(h->conns[i].deadline);
	}
	event_free(h->adopt);
	event_free(h->resume);
	event_free(h->beat);
	if (http_self == h)
		http_self = NULL;
	free(h);
}
