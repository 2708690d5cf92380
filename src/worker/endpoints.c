/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * endpoints.c: the worker's HTTP endpoints, for operators and monitoring, on the bounded
 * listener of src/http/http.c.
 *
 * http.c: the worker's HTTP status endpoint, for operators and monitoring.
 *
 * GET /status is the worker's view as JSON (session, deadline, jobs and their leases),
 * GET /metrics the same as Prometheus text, GET /health 200 while the worker is
 * registered with a connected session and 503 otherwise. GET /readyz is /health and not
 * draining, with the reason when not ready; GET /livez says the loop is alive: it answers
 * from the loop, 503 if the loop's own once-a-second timer has not run for
 * HTTP_LIVEZ_STALE_MS (a loop wedged outright does not answer at all, which a probe's
 * timeout counts as a failure too). Neither depends on ZooKeeper. GET /runs/<run id>/output
 * is a run's output for `logs --follow` (runout.c), with the worker's output token.
 *
 * A listen address that cannot be bound (a local user took the port first, or the address
 * is not up yet) does not stop the worker: its jobs run, the failure is logged, the bind is
 * tried again after ENDPOINTS_RETRY_MIN_S, doubling to ENDPOINTS_RETRY_MAX_S, and
 * /metrics says how many binds failed once it is served.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "control.h"
#include "endpoints.h"
#include "follow.h"
#include "http.h"
#include "job.h"
#include "leasekeeper.h"
#include "log.h"
#include "xmalloc.h"

#define ENDPOINTS_LIVEZ_STALE_MS 10000 /* /livez fails when the loop's last beat is older */

/* The worker's listener and what its endpoints read. */
#define ENDPOINTS_RETRY_MIN_S 1  /* the first retry of a failed bind */
#define ENDPOINTS_RETRY_MAX_S 60 /* ... doubling up to this */

struct endpoints {
	struct http *http; /* NULL until bound */
	const struct endpoints_cb *cb;
	void *arg;
	struct event_base *base;
	char *listen;
	struct event *retry; /* the next bind attempt */
	int retry_s;         /* ... after this long */
	uint64_t bind_failures;
};

static struct log_limit endpoints_lim_bind;

/* Any other path. */
static void
endpoints_notfound_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	const char *uri = evhttp_request_get_uri(req);

	if (h->cb->output != NULL && strncmp(uri, FOLLOW_PREFIX, strlen(FOLLOW_PREFIX)) == 0) {
		h->cb->output(h->arg, h->http, req); /* GET /runs/<run id>/output?from=N */
		return;
	}
	http_reply(h->http, req, 404, "text/plain", "not found\n");
}

/* GET /status */
static void
endpoints_status_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	json_t *o = h->cb->status(h->arg);
	char *body = json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII);

	http_reply(h->http, req, 200, "application/json", body);
	free(body);
	json_decref(o);
}

/* GET /health */
static void
endpoints_health_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	int ok = h->cb->ready(h->arg);

	http_reply(h->http, req, ok ? 200 : 503, "text/plain", ok ? "ok\n" : "not ready\n");
}

/* GET /readyz: registered with a connected session and not draining; else 503 and why. */
static void
endpoints_readyz_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	const char *why = h->cb->not_ready(h->arg);
	char body[256];

	snprintf(body, sizeof body, "%s\n", why != NULL ? why : "ok");
	http_reply(h->http, req, why == NULL ? 200 : 503, "text/plain", body);
}

/* GET /livez: the loop answers, and its timers run. */
static void
endpoints_livez_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	uint64_t age = http_beat_age_ms(h->http);
	char body[128];

	if (age <= ENDPOINTS_LIVEZ_STALE_MS) {
		http_reply(h->http, req, 200, "text/plain", "ok\n");
		return;
	}
	snprintf(body, sizeof body, "the main loop's timers have not run for %llu ms\n",
	         (unsigned long long)age);
	http_reply(h->http, req, 503, "text/plain", body);
}

/* What a per-job metric reads. */
enum endpoints_metric {
	ENDPOINTS_METRIC_RUNNING,
	ENDPOINTS_METRIC_LEASE_HELD,
	ENDPOINTS_METRIC_CONFLICT,
	ENDPOINTS_METRIC_RUNS,
	ENDPOINTS_METRIC_FAILURES,
	ENDPOINTS_METRIC_OUTCOMES,
	ENDPOINTS_METRIC_DURATION,
	ENDPOINTS_METRIC_LAST_RUN,
	ENDPOINTS_METRIC_LAST_SUCCESS,
	ENDPOINTS_METRIC_INTERVAL,
	ENDPOINTS_METRIC_MISSED,
	ENDPOINTS_METRIC_PAUSED,
	ENDPOINTS_METRIC_ACQUISITIONS,
	ENDPOINTS_METRIC_LEASE_ENDS,
	ENDPOINTS_METRIC_CORRUPT_STATES,
	ENDPOINTS_METRIC_CPU,
	ENDPOINTS_METRIC_OOMS,
	ENDPOINTS_METRIC_PEAK,
	ENDPOINTS_METRIC_HOOK_FAILURES,
};

/*
 * The per-job metrics: name, help, type, and what each reads. Every sample carries the
 * label job_name (not job: Prometheus gives every scraped sample its target's job).
 */
static const struct {
	const char *name;
	const char *help;
	const char *type;
	enum endpoints_metric what;
} endpoints_job_metrics[] = {
    {"leasekeeper_job_running", "1 while the job's command runs here", "gauge",
     ENDPOINTS_METRIC_RUNNING},
    {"leasekeeper_job_lease_held", "1 while this worker holds a lease of the job", "gauge",
     ENDPOINTS_METRIC_LEASE_HELD},
    {"leasekeeper_job_lease_conflict",
     "1 while the cluster agreed on another number of leases than this worker's", "gauge",
     ENDPOINTS_METRIC_CONFLICT},
    {"leasekeeper_job_runs_total", "runs started here", "counter", ENDPOINTS_METRIC_RUNS},
    {"leasekeeper_job_failures_total",
     "runs here that failed (any outcome but ok, stopped and killed)", "counter",
     ENDPOINTS_METRIC_FAILURES},
    {"leasekeeper_job_runs_ended_total", "runs here that ended, by outcome", "counter",
     ENDPOINTS_METRIC_OUTCOMES},
    {"leasekeeper_job_run_duration_seconds", "how long the runs that ended here ran", "histogram",
     ENDPOINTS_METRIC_DURATION},
    {"leasekeeper_job_last_run_timestamp_seconds",
     "when the last run here ended, whatever its outcome (Unix time)", "gauge",
     ENDPOINTS_METRIC_LAST_RUN},
    {"leasekeeper_job_last_success_timestamp_seconds",
     "when the last run here that ended ok ended (Unix time)", "gauge",
     ENDPOINTS_METRIC_LAST_SUCCESS},
    {"leasekeeper_job_interval_seconds",
     "scheduled jobs: the time between the job's next two ticks", "gauge",
     ENDPOINTS_METRIC_INTERVAL},
    {"leasekeeper_job_missed_ticks_total",
     "ticks no worker ran, recorded as missed by this worker, by reason (docs/outcomes.md)",
     "counter", ENDPOINTS_METRIC_MISSED},
    {"leasekeeper_job_paused_ticks_total", "ticks let go here because the job was paused",
     "counter", ENDPOINTS_METRIC_PAUSED},
    {"leasekeeper_job_lease_acquisitions_total", "leases of the job acquired here", "counter",
     ENDPOINTS_METRIC_ACQUISITIONS},
    {"leasekeeper_job_lease_losses_total",
     "leases held here that ended, by cause (deadline, expiry, deleted; released: given back)",
     "counter", ENDPOINTS_METRIC_LEASE_ENDS},
    {"leasekeeper_job_corrupt_states_total",
     "tick states read corrupt, or claiming a tick too far ahead, and repaired here", "counter",
     ENDPOINTS_METRIC_CORRUPT_STATES},
    {"leasekeeper_job_cpu_seconds_total",
     "CPU time of the job's runs here that have ended (from each run's cgroup)", "counter",
     ENDPOINTS_METRIC_CPU},
    {"leasekeeper_job_oom_kills_total", "runs here that ended by the OOM killer", "counter",
     ENDPOINTS_METRIC_OOMS},
    {"leasekeeper_job_memory_peak_bytes",
     "the most memory the job's last run here used (memory.peak of its cgroup)", "gauge",
     ENDPOINTS_METRIC_PEAK},
    {"leasekeeper_hook_failures_total",
     "hooks (on_failure, on_success, on_missed) of the job that failed, timed out or were not "
     "run here",
     "counter", ENDPOINTS_METRIC_HOOK_FAILURES},
};

/* One metric of the /metrics reply being written. */
struct endpoints_metric_out {
	struct evbuffer *buf;
	size_t m;
};

/*
 * A label value as Prometheus' text format quotes it: backslash, double quote and newline
 * escaped with a backslash. A job's name comes from a file a reader of /metrics did not
 * write, and must not end its label or its line.
 */
static void
endpoints_label_value(struct evbuffer *buf, const char *s)
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
endpoints_placement_sample(const char *job, int workers, void *arg)
{
	struct evbuffer *buf = arg;

	if (workers < 0)
		return;
	evbuffer_add_printf(buf, "leasekeeper_job_runnable_workers{job_name=\"");
	endpoints_label_value(buf, job);
	evbuffer_add_printf(buf, "\"} %d\n", workers);
}

/*
 * One sample of a job's metric: NAME[SUFFIX]{job_name="JOB"[,KEY="VALUE"]} V. The value is
 * printed with 15 significant digits: counters below 10^15 exactly, Unix times to the
 * millisecond.
 */
static void
endpoints_sample(struct endpoints_metric_out *out, const struct job *job, const char *suffix,
                 const char *key, const char *value, double v)
{
	evbuffer_add_printf(out->buf, "%s%s{job_name=\"", endpoints_job_metrics[out->m].name,
	                    suffix);
	endpoints_label_value(out->buf, job_name(job));
	if (key != NULL)
		evbuffer_add_printf(out->buf, "\",%s=\"%s", key, value);
	evbuffer_add_printf(out->buf, "\"} %.15g\n", v);
}

/* A job's run duration histogram. */
static void
endpoints_histogram(struct endpoints_metric_out *out, const struct job *job,
                    const struct job_stats *st)
{
	char le[32];
	size_t i;

	for (i = 0; i < JOB_DURATION_BUCKETS; i++) {
		snprintf(le, sizeof le, "%g", st->bucket_bounds[i]);
		endpoints_sample(out, job, "_bucket", "le", le, (double)st->buckets[i]);
	}
	endpoints_sample(out, job, "_bucket", "le", "+Inf", (double)st->durations);
	endpoints_sample(out, job, "_sum", NULL, NULL, st->duration_sum);
	endpoints_sample(out, job, "_count", NULL, NULL, (double)st->durations);
}

/* One job's samples of a metric. */
static void
endpoints_metric_job_cb(const struct job *job, void *arg)
{
	struct endpoints_metric_out *out = arg;
	struct job_stats st;
	double v = 0;
	size_t i;

	job_stats(job, &st);
	switch (endpoints_job_metrics[out->m].what) {
	case ENDPOINTS_METRIC_RUNNING:
		v = job_state(job) == JOB_RUNNING;
		break;
	case ENDPOINTS_METRIC_LEASE_HELD:
		v = st.lease_held;
		break;
	case ENDPOINTS_METRIC_CONFLICT:
		v = job_state(job) == JOB_CONFLICT;
		break;
	case ENDPOINTS_METRIC_RUNS:
		v = (double)st.runs;
		break;
	case ENDPOINTS_METRIC_FAILURES:
		v = (double)st.failures;
		break;
	case ENDPOINTS_METRIC_OUTCOMES:
		for (i = 0; i < JOB_OUTCOMES; i++)
			endpoints_sample(out, job, "", "outcome",
			                 job_outcome_name((enum job_outcome)i),
			                 (double)st.outcomes[i]);
		return;
	case ENDPOINTS_METRIC_DURATION:
		endpoints_histogram(out, job, &st);
		return;
	case ENDPOINTS_METRIC_LAST_RUN:
	case ENDPOINTS_METRIC_LAST_SUCCESS: {
		uint64_t ms = endpoints_job_metrics[out->m].what == ENDPOINTS_METRIC_LAST_RUN
		                  ? st.last_end_ms
		                  : st.last_ok_ms;
		if (ms == 0)
			return; /* none yet: no sample */
		v = (double)ms / 1000.0;
		break;
	}
	case ENDPOINTS_METRIC_INTERVAL:
		if (st.interval_s < 0)
			return; /* continuous: no interval */
		v = (double)st.interval_s;
		break;
	case ENDPOINTS_METRIC_MISSED:
		for (i = 0; i < JOBREC_MISSED_WHYS; i++)
			endpoints_sample(out, job, "", "reason",
			                 jobrec_missed_name((enum jobrec_missed_why)i),
			                 (double)st.missed_ticks[i]);
		return;
	case ENDPOINTS_METRIC_PAUSED:
		v = (double)st.paused_ticks;
		break;
	case ENDPOINTS_METRIC_ACQUISITIONS:
		v = (double)st.acquisitions;
		break;
	case ENDPOINTS_METRIC_LEASE_ENDS:
		for (i = 0; i < JOB_LEASE_ENDS; i++)
			endpoints_sample(out, job, "", "cause",
			                 job_lease_end_name((enum job_lease_end)i),
			                 (double)st.lease_ends[i]);
		return;
	case ENDPOINTS_METRIC_CORRUPT_STATES:
		v = (double)st.corrupt_states;
		break;
	case ENDPOINTS_METRIC_CPU:
		v = (double)st.cpu_usec / 1e6;
		break;
	case ENDPOINTS_METRIC_OOMS:
		v = (double)st.ooms;
		break;
	case ENDPOINTS_METRIC_HOOK_FAILURES:
		v = (double)st.hook_failures;
		break;
	case ENDPOINTS_METRIC_PEAK:
		if (st.last_peak < 0)
			return; /* not known: no sample */
		v = (double)st.last_peak;
		break;
	}
	endpoints_sample(out, job, "", NULL, NULL, v);
}

/* Whether control records are honoured, and how many were ignored or refused. */
static void
endpoints_control_metrics(struct evbuffer *buf)
{
	int k;

	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_control_honoured 1 if this worker acts on run "
	                    "requests, pauses and drains (credentials and closed ACLs, or "
	                    "allow_open_control)\n# TYPE leasekeeper_control_honoured gauge\n"
	                    "leasekeeper_control_honoured %d\n"
	                    "# HELP leasekeeper_control_ignored_total control records ignored "
	                    "because control is not honoured here\n"
	                    "# TYPE leasekeeper_control_ignored_total counter\n",
	                    control_honoured());
	for (k = 0; k < CONTROL_NKINDS; k++)
		evbuffer_add_printf(
		    buf, "leasekeeper_control_ignored_total{kind=\"%s\"} %llu\n",
		    control_kind_name((enum control_kind)k),
		    (unsigned long long)control_ignored_total((enum control_kind)k));
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_run_requests_refused_total run-now request nodes "
	                    "refused (invalid, too large, over a limit, paused without force)\n"
	                    "# TYPE leasekeeper_run_requests_refused_total counter\n"
	                    "leasekeeper_run_requests_refused_total %llu\n",
	                    (unsigned long long)control_refused_total());
}

/* The main loop's own health: the heartbeat's delay, and this host's clock offset. */
static void
endpoints_metrics_loop(struct evbuffer *buf, const struct endpoints_worker_stats *ws)
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

/* The worker's health: unhealthy, and the starts that failed by whose fault (jobhealth.c). */
static void
endpoints_health_metrics(struct evbuffer *buf, const struct endpoints_worker_stats *ws)
{
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_worker_unhealthy 1 while this worker is unhealthy "
	                    "(starts failed in a row for reasons of this host): ranked last for "
	                    "ticks, /readyz 503\n"
	                    "# TYPE leasekeeper_worker_unhealthy gauge\n"
	                    "leasekeeper_worker_unhealthy %d\n"
	                    "# HELP leasekeeper_start_failures_total starts that failed here, by "
	                    "whose fault: host (given back to the next worker) or job (its own "
	                    "configuration: command or workdir)\n"
	                    "# TYPE leasekeeper_start_failures_total counter\n"
	                    "leasekeeper_start_failures_total{kind=\"host\"} %llu\n"
	                    "leasekeeper_start_failures_total{kind=\"job\"} %llu\n",
	                    ws->unhealthy, (unsigned long long)ws->start_failures_host,
	                    (unsigned long long)ws->start_failures_job);
}

/* GET /metrics, in Prometheus' text format: each metric's samples together. */
static void
endpoints_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct endpoints *h = arg;
	struct endpoints_metric_out out;
	struct endpoints_worker_stats ws;
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
	endpoints_metrics_loop(out.buf, &ws);
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
	endpoints_health_metrics(out.buf, &ws);
	endpoints_control_metrics(out.buf);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_http_bind_failures_total attempts to bind [http] "
	                    "listen that failed (the port was taken, the address not up)\n"
	                    "# TYPE leasekeeper_http_bind_failures_total counter\n"
	                    "leasekeeper_http_bind_failures_total %llu\n",
	                    (unsigned long long)h->bind_failures);
	evbuffer_add_printf(out.buf, "# HELP leasekeeper_job_runnable_workers live workers that "
	                             "can run the job (carry it: their labels match its "
	                             "constraint; not drained); 0: nobody runs it\n"
	                             "# TYPE leasekeeper_job_runnable_workers gauge\n");
	h->cb->placement(h->arg, endpoints_placement_sample, out.buf);
	evbuffer_add_printf(out.buf,
	                    "# HELP leasekeeper_http_connections open connections to this "
	                    "listener (at most %d)\n# TYPE leasekeeper_http_connections gauge\n"
	                    "leasekeeper_http_connections %d\n",
	                    HTTP_MAX_CONNECTIONS, http_connections(h->http));
	for (out.m = 0; out.m < sizeof endpoints_job_metrics / sizeof endpoints_job_metrics[0];
	     out.m++) {
		evbuffer_add_printf(
		    out.buf, "# HELP %s %s\n# TYPE %s %s\n", endpoints_job_metrics[out.m].name,
		    endpoints_job_metrics[out.m].help, endpoints_job_metrics[out.m].name,
		    endpoints_job_metrics[out.m].type);
		h->cb->jobs(h->arg, endpoints_metric_job_cb, &out);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4");
	http_respond(h->http, req, 200, "OK", out.buf);
	evbuffer_free(out.buf);
}

/* Bind the listener and route the worker's paths; 0 if bound. */
static int
endpoints_bind(struct endpoints *h)
{
	if ((h->http = http_listen(h->base, h->listen)) == NULL)
		return -1;
	http_route(h->http, "/status", endpoints_status_cb, h);
	http_route(h->http, "/metrics", endpoints_metrics_cb, h);
	http_route(h->http, "/health", endpoints_health_cb, h);
	http_route(h->http, "/readyz", endpoints_readyz_cb, h);
	http_route(h->http, "/livez", endpoints_livez_cb, h);
	http_route(h->http, NULL, endpoints_notfound_cb, h);
	return 0;
}

/* Try the bind again, later and later while it fails. */
static void
endpoints_retry_cb(int fd, short what, void *arg)
{
	struct endpoints *h = arg;
	struct timeval tv;

	(void)fd;
	(void)what;
	if (endpoints_bind(h) == 0) {
		log_info("http: listening on %s after %llu failed attempt(s)", h->listen,
		         (unsigned long long)h->bind_failures);
		return;
	}
	h->bind_failures++;
	h->retry_s =
	    h->retry_s * 2 > ENDPOINTS_RETRY_MAX_S ? ENDPOINTS_RETRY_MAX_S : h->retry_s * 2;
	log_warnx_limited(&endpoints_lim_bind,
	                  "http: still cannot listen on %s (see above); the jobs run; trying "
	                  "again in %d s",
	                  h->listen, h->retry_s);
	tv.tv_sec = h->retry_s;
	tv.tv_usec = 0;
	evtimer_add(h->retry, &tv);
}

/*
 * Listen on HOST:PORT with the worker's paths. At start-up (retry) a bind that fails is
 * logged and tried again with back-off, the worker and its jobs going on meanwhile; at a
 * reload (!retry) it returns NULL at once, so that the caller keeps the listener it has.
 */
struct endpoints *
endpoints_start(struct event_base *base, const char *listen, const struct endpoints_cb *cb,
                void *arg, int retry)
{
	struct endpoints *h = xcalloc(1, sizeof *h);
	struct timeval tv = {ENDPOINTS_RETRY_MIN_S, 0};

	h->cb = cb;
	h->arg = arg;
	h->base = base;
	h->listen = xstrdup(listen);
	h->retry = evtimer_new(base, endpoints_retry_cb, h);
	if (endpoints_bind(h) == 0)
		return h;
	if (!retry) {
		endpoints_free(h);
		return NULL;
	}
	h->bind_failures = 1;
	h->retry_s = ENDPOINTS_RETRY_MIN_S;
	log_warnx("http: cannot listen on %s (see above): the worker runs its jobs without its "
	          "status page and tries again in %d s, then less often (up to every %d s); "
	          "free the port, or change [http] listen",
	          listen, h->retry_s, ENDPOINTS_RETRY_MAX_S);
	evtimer_add(h->retry, &tv);
	return h;
}

/* Stop listening and close every connection. */
void
endpoints_free(struct endpoints *h)
{
	if (h == NULL)
		return;
	event_free(h->retry);
	http_free(h->http);
	free(h->listen);
	free(h);
}
