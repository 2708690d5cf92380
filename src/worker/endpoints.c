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
 * /metrics and /status grow with the jobs (30 MB and 5 MB at 10,000): they are written in
 * slices of ENDPOINTS_SLICE_US each, the loop running between them, and streamed; at most
 * ENDPOINTS_MAX_SCRAPES are written at once, another request is answered 503 (Retry-After).
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

#include "clock.h"
#include "compat.h"
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

/* /metrics and /status are written in slices (see endpoints_scrape_slice). */
#define ENDPOINTS_SLICE_US    2000  /* at most this much work per turn of the loop */
#define ENDPOINTS_SLICE_BYTES 65536 /* ... and at most this much text, sent as one chunk */
#define ENDPOINTS_MAX_SCRAPES 2     /* sliced replies at once; more are answered 503 */

struct endpoints_scrape;

struct endpoints {
	struct http *http; /* NULL until bound */
	const struct endpoints_cb *cb;
	void *arg;
	struct event_base *base;
	char *listen;
	struct event *retry; /* the next bind attempt */
	int retry_s;         /* ... after this long */
	uint64_t bind_failures;
	TAILQ_HEAD(, endpoints_scrape) scrapes; /* sliced replies in progress */
	int nscrapes;
	uint64_t scrapes_refused; /* over ENDPOINTS_MAX_SCRAPES */
};

static struct log_limit endpoints_lim_bind, endpoints_lim_busy;

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
     "1 while the cluster agreed on another number of leases, or other locks, than this "
     "worker's",
     "gauge", ENDPOINTS_METRIC_CONFLICT},
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
	size_t n;

	for (;;) {
		n = strcspn(s, "\\\"\n");
		evbuffer_add(buf, s, n);
		s += n;
		if (*s == '\0')
			return;
		evbuffer_add(buf, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
		s++;
	}
}

/* leasekeeper_job_runnable_workers{job_name="JOB"} N, once the count is known. */
static void
endpoints_placement_sample(struct evbuffer *buf, const char *job, int workers)
{
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

/* One job's samples of a metric, from its counters st-> */
static void
endpoints_metric_job(struct endpoints_metric_out *out, const struct job *job,
                     const struct job_stats *st)
{
	double v = 0;
	size_t i;

	switch (endpoints_job_metrics[out->m].what) {
	case ENDPOINTS_METRIC_RUNNING:
		v = job_state(job) == JOB_RUNNING;
		break;
	case ENDPOINTS_METRIC_LEASE_HELD:
		v = st->lease_held;
		break;
	case ENDPOINTS_METRIC_CONFLICT:
		v = job_state(job) == JOB_CONFLICT;
		break;
	case ENDPOINTS_METRIC_RUNS:
		v = (double)st->runs;
		break;
	case ENDPOINTS_METRIC_FAILURES:
		v = (double)st->failures;
		break;
	case ENDPOINTS_METRIC_OUTCOMES:
		for (i = 0; i < JOB_OUTCOMES; i++)
			endpoints_sample(out, job, "", "outcome",
			                 job_outcome_name((enum job_outcome)i),
			                 (double)st->outcomes[i]);
		return;
	case ENDPOINTS_METRIC_DURATION:
		endpoints_histogram(out, job, st);
		return;
	case ENDPOINTS_METRIC_LAST_RUN:
	case ENDPOINTS_METRIC_LAST_SUCCESS: {
		uint64_t ms = endpoints_job_metrics[out->m].what == ENDPOINTS_METRIC_LAST_RUN
		                  ? st->last_end_ms
		                  : st->last_ok_ms;
		if (ms == 0)
			return; /* none yet: no sample */
		v = (double)ms / 1000.0;
		break;
	}
	case ENDPOINTS_METRIC_INTERVAL:
		if (st->interval_s < 0)
			return; /* continuous: no interval */
		v = (double)st->interval_s;
		break;
	case ENDPOINTS_METRIC_MISSED:
		for (i = 0; i < JOBREC_MISSED_WHYS; i++)
			endpoints_sample(out, job, "", "reason",
			                 jobrec_missed_name((enum jobrec_missed_why)i),
			                 (double)st->missed_ticks[i]);
		return;
	case ENDPOINTS_METRIC_PAUSED:
		v = (double)st->paused_ticks;
		break;
	case ENDPOINTS_METRIC_ACQUISITIONS:
		v = (double)st->acquisitions;
		break;
	case ENDPOINTS_METRIC_LEASE_ENDS:
		for (i = 0; i < JOB_LEASE_ENDS; i++)
			endpoints_sample(out, job, "", "cause",
			                 job_lease_end_name((enum job_lease_end)i),
			                 (double)st->lease_ends[i]);
		return;
	case ENDPOINTS_METRIC_CORRUPT_STATES:
		v = (double)st->corrupt_states;
		break;
	case ENDPOINTS_METRIC_CPU:
		v = (double)st->cpu_usec / 1e6;
		break;
	case ENDPOINTS_METRIC_OOMS:
		v = (double)st->ooms;
		break;
	case ENDPOINTS_METRIC_HOOK_FAILURES:
		v = (double)st->hook_failures;
		break;
	case ENDPOINTS_METRIC_PEAK:
		if (st->last_peak < 0)
			return; /* not known: no sample */
		v = (double)st->last_peak;
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

/* The worker's own metrics, at the head of /metrics: a few lines, written at once. */
static void
endpoints_metrics_head(struct endpoints *h, struct evbuffer *buf)
{
	struct endpoints_worker_stats ws;
	uint64_t low;

	memset(&ws, 0, sizeof ws);
	h->cb->stats(h->arg, &ws);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_build_info the version running, in its label\n"
	                    "# TYPE leasekeeper_build_info gauge\n"
	                    "leasekeeper_build_info{version=\"%s\"} 1\n",
	                    LEASEKEEPER_VERSION);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_start_time_seconds when the worker started (Unix "
	                    "time)\n# TYPE leasekeeper_start_time_seconds gauge\n"
	                    "leasekeeper_start_time_seconds %.3f\n",
	                    (double)ws.start_ms / 1000.0);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_ready 1 while registered with a connected session "
	                    "and not draining (what /readyz answers 200 to)\n"
	                    "# TYPE leasekeeper_ready gauge\nleasekeeper_ready %d\n",
	                    h->cb->not_ready(h->arg) == NULL);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_session_expiries_total ZooKeeper sessions that "
	                    "expired under this worker\n"
	                    "# TYPE leasekeeper_session_expiries_total counter\n"
	                    "leasekeeper_session_expiries_total %llu\n",
	                    (unsigned long long)ws.session_expiries);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_session_reconnects_total times the same session "
	                    "came back after a disconnect\n"
	                    "# TYPE leasekeeper_session_reconnects_total counter\n"
	                    "leasekeeper_session_reconnects_total %llu\n",
	                    (unsigned long long)ws.session_reconnects);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_session_connected 1 while the ZooKeeper "
	                    "session is connected\n# TYPE leasekeeper_session_connected gauge\n"
	                    "leasekeeper_session_connected %d\n",
	                    h->cb->session(h->arg) == ZK_STATE_CONNECTED);
	evbuffer_add_printf(
	    buf,
	    "# HELP leasekeeper_lease_deadline_seconds time left before jobs are killed if no "
	    "answer arrives\n# TYPE leasekeeper_lease_deadline_seconds gauge\n"
	    "leasekeeper_lease_deadline_seconds %.3f\n",
	    (double)h->cb->deadline_in_ms(h->arg) / 1000.0);
	low = h->cb->deadline_low_ms(h->arg);
	if (low != UINT64_MAX)
		evbuffer_add_printf(
		    buf,
		    "# HELP leasekeeper_lease_deadline_low_seconds the least time that was left "
		    "before the lease deadline when a heartbeat's answer moved it, since start\n"
		    "# TYPE leasekeeper_lease_deadline_low_seconds gauge\n"
		    "leasekeeper_lease_deadline_low_seconds %.3f\n",
		    (double)low / 1000.0);
	endpoints_metrics_loop(buf, &ws);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_containment how this worker keeps each run's "
	                    "processes together (1 for the mode in use)\n"
	                    "# TYPE leasekeeper_containment gauge\n"
	                    "leasekeeper_containment{mode=\"%s\"} 1\n",
	                    h->cb->containment(h->arg));
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_worker_drained 1 while this worker is drained "
	                    "(leasekeeper drain): it takes no new lease\n"
	                    "# TYPE leasekeeper_worker_drained gauge\n"
	                    "leasekeeper_worker_drained %d\n",
	                    h->cb->drained(h->arg) != 0);
	endpoints_health_metrics(buf, &ws);
	endpoints_control_metrics(buf);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_http_bind_failures_total attempts to bind [http] "
	                    "listen that failed (the port was taken, the address not up)\n"
	                    "# TYPE leasekeeper_http_bind_failures_total counter\n"
	                    "leasekeeper_http_bind_failures_total %llu\n",
	                    (unsigned long long)h->bind_failures);
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_http_connections open connections to this "
	                    "listener (at most %d)\n# TYPE leasekeeper_http_connections gauge\n"
	                    "leasekeeper_http_connections %d\n",
	                    HTTP_MAX_CONNECTIONS, http_connections(h->http));
	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_http_scrapes_refused_total requests for /metrics "
	                    "or /status answered 503 because %d were being written already\n"
	                    "# TYPE leasekeeper_http_scrapes_refused_total counter\n"
	                    "leasekeeper_http_scrapes_refused_total %llu\n",
	                    ENDPOINTS_MAX_SCRAPES, (unsigned long long)h->scrapes_refused);
	evbuffer_add_printf(buf, "# HELP leasekeeper_job_runnable_workers live workers that "
	                         "can run the job (carry it: their labels match its "
	                         "constraint; not drained); 0: nobody runs it\n"
	                         "# TYPE leasekeeper_job_runnable_workers gauge\n");
}

/*
 * A reply to /metrics or /status written in slices: with thousands of jobs the whole text
 * takes seconds to write, and the loop that keeps the heartbeat must not wait that long. The
 * first slice is written at once; a reply that is not complete then is streamed (chunked),
 * one slice per turn of the loop, each at most ENDPOINTS_SLICE_US of work and
 * ENDPOINTS_SLICE_BYTES of text, the next written only once the previous chunk went out (a
 * slow reader holds one chunk of ours). It walks a view of the jobs that the worker keeps
 * from being freed until the reply is done or its connection gone.
 */
struct endpoints_scrape {
	struct endpoints *h;
	struct evhttp_request *req;
	int json; /* /status, else /metrics */
	struct endpoints_view v;
	struct job_stats *st; /* /metrics: each job's counters, read at its first metric */
	int phase;            /* /metrics: 0 placement, 1 the jobs' metrics */
	size_t m, pos;
	int streaming;
	struct evbuffer *buf;
	struct event *next; /* the next slice, when the last one sent nothing */
	TAILQ_ENTRY(endpoints_scrape) entry;
};

/* Done with a scrape (its request answered, or its connection gone). */
static void
endpoints_scrape_free(struct endpoints_scrape *s)
{
	struct endpoints *h = s->h;

	TAILQ_REMOVE(&h->scrapes, s, entry);
	h->nscrapes--;
	h->cb->release(h->arg, &s->v);
	event_free(s->next);
	evbuffer_free(s->buf);
	free(s->st);
	free(s);
}

/* The connection of a scrape closed before its reply was done. */
static void
endpoints_scrape_gone_cb(void *arg)
{
	struct endpoints_scrape *s = arg;

	log_debug("http: a client left before its %s was written",
	          s->json ? "/status" : "/metrics");
	endpoints_scrape_free(s);
}

/* One step of /metrics: a placement sample, a metric's header, or one job's samples of it. */
static int
endpoints_scrape_metrics_step(struct endpoints_scrape *s)
{
	struct endpoints_metric_out out = {s->buf, s->m};
	const size_t nm = sizeof endpoints_job_metrics / sizeof endpoints_job_metrics[0];

	if (s->phase == 0) {
		if (s->pos < s->v.nplaced) {
			endpoints_placement_sample(
			    s->buf, s->v.placed[s->pos],
			    s->h->cb->runnable(s->h->arg, s->v.placed[s->pos]));
			s->pos++;
			return 0;
		}
		s->phase = 1;
		s->pos = 0;
		s->m = 0;
	}
	if (s->m >= nm)
		return 1;
	if (s->pos == 0)
		evbuffer_add_printf(
		    s->buf, "# HELP %s %s\n# TYPE %s %s\n", endpoints_job_metrics[s->m].name,
		    endpoints_job_metrics[s->m].help, endpoints_job_metrics[s->m].name,
		    endpoints_job_metrics[s->m].type);
	if (s->pos < s->v.njobs) {
		if (s->m == 0)
			job_stats(s->v.jobs[s->pos], &s->st[s->pos]);
		endpoints_metric_job(&out, s->v.jobs[s->pos], &s->st[s->pos]);
		s->pos++;
		return 0;
	}
	s->m++;
	s->pos = 0;
	return s->m >= nm;
}

/* One step of /status: one job's status. */
static int
endpoints_scrape_status_step(struct endpoints_scrape *s)
{
	json_t *o;
	char *text;

	if (s->pos >= s->v.njobs) {
		evbuffer_add_printf(s->buf, "%s]\n}\n", s->v.njobs > 0 ? "\n  " : "");
		return 1;
	}
	o = job_status_json(s->v.jobs[s->pos]);
	text = json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII);
	evbuffer_add_printf(s->buf, "%s%s", s->pos > 0 ? ",\n" : "\n", text);
	free(text);
	json_decref(o);
	s->pos++;
	return 0;
}

static void endpoints_scrape_slice(struct endpoints_scrape *s);

/* The last chunk went out: the next slice. */
static void
endpoints_scrape_sent_cb(void *arg)
{
	endpoints_scrape_slice(arg);
}

/* The next slice, when the last one had nothing to send. */
static void
endpoints_scrape_next_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	endpoints_scrape_slice(arg);
}

/*
 * Write one slice of a scrape and send it: the whole reply if it is complete at the first
 * slice (as a plain reply with its length), otherwise one chunk of a streamed one.
 */
static void
endpoints_scrape_slice(struct endpoints_scrape *s)
{
	struct endpoints *h = s->h;
	uint64_t start = clock_now_ns();
	unsigned n = 0;
	int done;

	while (!(done = s->json ? endpoints_scrape_status_step(s)
	                        : endpoints_scrape_metrics_step(s))) {
		if (evbuffer_get_length(s->buf) >= ENDPOINTS_SLICE_BYTES ||
		    (++n % 16 == 0 && clock_now_ns() - start > ENDPOINTS_SLICE_US * 1000ULL))
			break;
	}
	if (done && !s->streaming) {
		http_respond(h->http, s->req, 200, "OK", s->buf);
		endpoints_scrape_free(s);
		return;
	}
	if (!s->streaming) {
		http_stream_start(h->http, s->req, 200, "OK");
		s->streaming = 1;
	}
	if (done) {
		if (evbuffer_get_length(s->buf) > 0)
			http_stream_chunk(h->http, s->req, s->buf, NULL, NULL);
		http_stream_end(h->http, s->req);
		endpoints_scrape_free(s);
	} else if (evbuffer_get_length(s->buf) == 0)
		event_active(s->next, EV_TIMEOUT, 1);
	else
		http_stream_chunk(h->http, s->req, s->buf, endpoints_scrape_sent_cb, s);
}

/* GET /metrics or /status: begin the reply, in slices; 503 while too many are written. */
static void
endpoints_scrape_begin(struct endpoints *h, struct evhttp_request *req, int json)
{
	const char *type = json ? "application/json" : "text/plain; version=0.0.4";
	struct endpoints_scrape *s;
	json_t *o;
	char *text;

	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		http_reply(h->http, req, 200, type, "");
		return;
	}
	if (h->nscrapes >= ENDPOINTS_MAX_SCRAPES) {
		h->scrapes_refused++;
		log_warnx_limited(&endpoints_lim_busy,
		                  "http: %d replies to /metrics or /status are being written; "
		                  "answering 503 to another (scrape less often, or fewer scrapers)",
		                  h->nscrapes);
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
		http_reply(h->http, req, 503, "text/plain",
		           "busy: other replies to /metrics or /status are being written; try "
		           "again\n");
		return;
	}
	s = xcalloc(1, sizeof *s);
	s->h = h;
	s->req = req;
	s->json = json;
	s->buf = evbuffer_new();
	s->next = event_new(h->base, -1, 0, endpoints_scrape_next_cb, s);
	h->cb->hold(h->arg, &s->v);
	TAILQ_INSERT_TAIL(&h->scrapes, s, entry);
	h->nscrapes++;
	if (http_defer(h->http, req, endpoints_scrape_gone_cb, s) != 0) {
		http_reply(h->http, req, 503, "text/plain", "cannot answer now\n");
		endpoints_scrape_free(s);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	if (json) {
		/* The worker's fields, then "jobs": [ ... ] written a job at a time. */
		o = h->cb->status(h->arg);
		text = json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		evbuffer_add(s->buf, text, strlen(text) - 2); /* without "\n}" */
		evbuffer_add_printf(s->buf, ",\n  \"jobs\": [");
		free(text);
		json_decref(o);
	} else {
		s->st = xcalloc(s->v.njobs + 1, sizeof *s->st);
		endpoints_metrics_head(h, s->buf);
	}
	endpoints_scrape_slice(s);
}

/* GET /metrics, in Prometheus' text format: each metric's samples together. */
static void
endpoints_metrics_cb(struct evhttp_request *req, void *arg)
{
	endpoints_scrape_begin(arg, req, 0);
}

/* GET /status: the worker's view as JSON. */
static void
endpoints_status_cb(struct evhttp_request *req, void *arg)
{
	endpoints_scrape_begin(arg, req, 1);
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
	TAILQ_INIT(&h->scrapes);
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
	http_free(h->http); /* each scrape's connection closes: it is freed */
	while (!TAILQ_EMPTY(&h->scrapes))
		endpoints_scrape_free(TAILQ_FIRST(&h->scrapes));
	free(h->listen);
	free(h);
}
