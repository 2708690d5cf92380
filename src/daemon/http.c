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
#include "log.h"
#include "worker.h"
#include "xmalloc.h"

struct http {
	struct evhttp *evh;
	struct worker *w;
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
	json_t *o = worker_status_json(h->w);
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
	json_t *o = worker_status_json(h->w);
	const char *state = json_string_value(json_object_get(o, "state"));
	const char *session = json_string_value(json_object_get(o, "session_state"));
	int ok = state != NULL && session != NULL && strcmp(state, "READY") == 0 &&
	         strcmp(session, "CONNECTED") == 0;

	http_reply(req, ok ? 200 : 503, "text/plain", ok ? "ok\n" : "not ready\n");
	json_decref(o);
}

/* The per-job metrics: name, help, type, and how to read the value from a job's JSON. */
static const struct {
	const char *name;
	const char *help;
	const char *type;
	const char *field; /* integer field, or NULL for the special cases below */
	int kind;          /* 0 integer field, 1 state == RUNNING, 2 state == CONFLICT, 3 bool */
} http_job_metrics[] = {
    {"leasekeeper_job_running", "1 while the job's command runs here", "gauge", NULL, 1},
    {"leasekeeper_job_lease_held", "1 while this worker holds a lease of the job", "gauge",
     "lease_held", 3},
    {"leasekeeper_job_lease_conflict",
     "1 while the cluster agreed on another number of leases than this worker's", "gauge", NULL, 2},
    {"leasekeeper_job_runs_total", "runs started here", "counter", "runs", 0},
    {"leasekeeper_job_failures_total", "runs that failed here", "counter", "failures", 0},
    {"leasekeeper_job_corrupt_states_total",
     "tick states read corrupt, or claiming a tick too far ahead, and repaired here", "counter",
     "corrupt_states", 0},
};

/* GET /metrics, in Prometheus' text format: each metric's samples together. */
static void
http_metrics_cb(struct evhttp_request *req, void *arg)
{
	struct http *h = arg;
	json_t *o = worker_status_json(h->w), *jobs = json_object_get(o, "jobs"), *job;
	struct evbuffer *buf = evbuffer_new();
	const char *session = json_string_value(json_object_get(o, "session_state"));
	const char *name, *state;
	size_t i, m;
	long long v;

	evbuffer_add_printf(buf,
	                    "# HELP leasekeeper_session_connected 1 while the ZooKeeper "
	                    "session is connected\n# TYPE leasekeeper_session_connected gauge\n"
	                    "leasekeeper_session_connected %d\n",
	                    session != NULL && strcmp(session, "CONNECTED") == 0);
	evbuffer_add_printf(
	    buf,
	    "# HELP leasekeeper_lease_deadline_seconds time left before jobs are killed if no "
	    "answer arrives\n# TYPE leasekeeper_lease_deadline_seconds gauge\n"
	    "leasekeeper_lease_deadline_seconds %.3f\n",
	    (double)json_integer_value(json_object_get(o, "lease_deadline_in_ms")) / 1000.0);
	for (m = 0; m < sizeof http_job_metrics / sizeof http_job_metrics[0]; m++) {
		evbuffer_add_printf(buf, "# HELP %s %s\n# TYPE %s %s\n", http_job_metrics[m].name,
		                    http_job_metrics[m].help, http_job_metrics[m].name,
		                    http_job_metrics[m].type);
		json_array_foreach(jobs, i, job) {
			name = json_string_value(json_object_get(job, "name"));
			state = json_string_value(json_object_get(job, "state"));
			switch (http_job_metrics[m].kind) {
			case 1:
				v = state != NULL && strcmp(state, "RUNNING") == 0;
				break;
			case 2:
				v = state != NULL && strcmp(state, "CONFLICT") == 0;
				break;
			case 3:
				v = json_is_true(json_object_get(job, http_job_metrics[m].field));
				break;
			default:
				v = (long long)json_integer_value(
				    json_object_get(job, http_job_metrics[m].field));
				break;
			}
			evbuffer_add_printf(buf, "%s{job=\"%s\"} %lld\n", http_job_metrics[m].name,
			                    name, v);
		}
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", buf);
	evbuffer_free(buf);
	json_decref(o);
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
http_start(struct event_base *base, const char *listen, struct worker *w)
{
	struct http *h = xcalloc(1, sizeof *h);
	char *host = xstrdup(listen), *colon = strrchr(host, ':');
	long port;

	h->w = w;
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
