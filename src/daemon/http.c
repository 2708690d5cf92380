/* Runs in: the main process. */
/*
 * http.c: the worker's HTTP status endpoint, for operators and monitoring.
 *
 * GET /status is the worker's view as JSON (session, deadline, jobs and their leases),
 * GET /metrics the same as Prometheus text, GET /health 200 while the worker is
 * registered with a connected session and 503 otherwise.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "job.h"
#include "log.h"
#include "xmalloc.h"

struct http {
	struct evhttp *evh;
	const struct http_cb *cb;
	void *arg;
};

/* Reply with a body and a content type. */
static void
http_reply(struct evhttp_request *req, int code, const char *type, const char *body)
{
	struct evbuffer *buf = evbuffer_new();

	evbuffer_add(buf, body, strlen(body));
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Service Unavailable", buf);
	evbuffer_free(buf);
}

/* GET /status */
static void
http_status_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	json_t *o = h->cb->status(h->arg);
	char *body = json_dumps(o, JSON_INDENT(2));

	http_reply(req, 200, "application/json", body);
	free(body);
	json_decref(o);
}

/* GET /health */
static void
http_health_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	int ok = h->cb->ready(h->arg);

	http_reply(req, ok ? 200 : 503, "text/plain", ok ? "ok\n" : "not ready\n");
}

/* What a per-job metric reads. */
enum http_metric {
	HTTP_METRIC_RUNNING,
	HTTP_METRIC_LEASE_HELD,
	HTTP_METRIC_CONFLICT,
	HTTP_METRIC_RUNS,
	HTTP_METRIC_FAILURES,
	HTTP_METRIC_CORRUPT_STATES,
};

/* The per-job metrics: name, help, type, and what each reads. */
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
    {"leasekeeper_job_failures_total", "runs that failed here", "counter", HTTP_METRIC_FAILURES},
    {"leasekeeper_job_corrupt_states_total",
     "tick states read corrupt, or claiming a tick too far ahead, and repaired here", "counter",
     HTTP_METRIC_CORRUPT_STATES},
};

/* One metric of the /metrics reply being written. */
struct http_metric_out {
	struct evbuffer *buf;
	size_t m;
};

/* One job's sample of a metric. */
static void
http_metric_job_cb(const struct job *job, void *arg)
{
	struct http_metric_out *out = arg;
	struct job_stats st;
	long long v = 0;

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
		v = (long long)st.runs;
		break;
	case HTTP_METRIC_FAILURES:
		v = (long long)st.failures;
		break;
	case HTTP_METRIC_CORRUPT_STATES:
		v = (long long)st.corrupt_states;
		break;
	}
	evbuffer_add_printf(out->buf, "%s{job=\"%s\"} %lld\n", http_job_metrics[out->m].name,
	                    job_name(job), v);
}

/* GET /metrics, in Prometheus' text format: each metric's samples together. */
static void
http_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	struct http_metric_out out;

	out.buf = evbuffer_new();
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
	for (out.m = 0; out.m < sizeof http_job_metrics / sizeof http_job_metrics[0]; out.m++) {
		evbuffer_add_printf(out.buf, "# HELP %s %s\n# TYPE %s %s\n",
		                    http_job_metrics[out.m].name, http_job_metrics[out.m].help,
		                    http_job_metrics[out.m].name, http_job_metrics[out.m].type);
		h->cb->jobs(h->arg, http_metric_job_cb, &out);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", out.buf);
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

/* Listen on HOST:PORT; a failure is logged and the worker runs without HTTP. */
struct http *
http_start(struct event_base *base, const char *listen, const struct http_cb *cb, void *arg)
{
	struct http *h = xcalloc(1, sizeof *h);
	char *host = xstrdup(listen), *colon = strrchr(host, ':');
	long port;

	h->cb = cb;
	h->arg = arg;
	event_set_log_callback(http_libevent_log_cb);
	h->evh = evhttp_new(base);
	if (colon == NULL || (port = strtol(colon + 1, NULL, 10)) <= 0 || port > 65535) {
		log_warnx("http: bad listen address \"%s\"", listen);
		goto fail;
	}
	*colon = '\0';
	if (evhttp_bind_socket(h->evh, host, (unsigned short)port) != 0) {
		log_warn("http: cannot listen on %s", listen);
		goto fail;
	}
	evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_cb(h->evh, "/status", http_status_cb, h);
	evhttp_set_cb(h->evh, "/metrics", http_metrics_cb, h);
	evhttp_set_cb(h->evh, "/health", http_health_cb, h);
	log_info("http: listening on %s", listen);
	free(host);
	return h;

fail:
	free(host);
	evhttp_free(h->evh);
	free(h);
	return NULL;
}

/* Stop listening. */
void
http_free(struct http *h)
{
	if (h == NULL)
		return;
	evhttp_free(h->evh);
	free(h);
}
