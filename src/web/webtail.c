/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`), never in a worker. */
/*
 * webtail.c: the dashboard's tail of a run in progress, GET /api/runs/<job>/<run id>/output
 * ?from=N: the same output `leasekeeper logs --follow` reads, fetched from the run's worker
 * (GET /runs/<run id>/output, runout.c) with that worker's output token.
 *
 * Only a run the last view of the cluster lists in progress (or did in the last
 * WEBTAIL_GRACE_MS, so that a tail reads a run's last bytes and its outcome) may be asked
 * for; its worker is the running node's "node", reached at that worker node's "http" with
 * its "output_token". The tokens never leave this process: every view loses them here,
 * before it becomes the page's document. The fetch is libevent's HTTP client on the loop
 * (names resolved by evdns, never blocking), at most WEBTAIL_MAX_FETCHES at once, each
 * bounded in time and size; the worker's offsets, state and outcome are checked as
 * `logs --follow` checks them and passed on in the same headers.
 */

#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "clock.h"
#include "follow.h"
#include "http.h"
#include "webtail.h"
#include "xmalloc.h"

#define WEBTAIL_MAX_FETCHES 4          /* fetches from workers in flight at once, at most */
#define WEBTAIL_HTTP_S      4          /* a fetch's read or write, at most */
#define WEBTAIL_TOTAL_S     8          /* a whole fetch (a name, the connection, the answer) */
#define WEBTAIL_MAX_BODY    (64 << 10) /* a worker's answer, at most (it sends 32 KiB) */
#define WEBTAIL_GRACE_MS    15000      /* a run gone from the view may still be read so long */
#define WEBTAIL_MAX_JOB     255        /* bytes of a job's name */

/* One fetch from a worker for one request of the page. */
struct webtail_fetch {
	struct webtail *t;
	struct evhttp_request *client; /* NULL once its connection is gone (http_defer) */
	struct evhttp_connection *conn;
	struct event *timer; /* WEBTAIL_TOTAL_S: a worker trickling bytes holds no fetch longer */
	int ended;           /* answered (or timed out): the worker's late answer is dropped */
	uint64_t from;
	TAILQ_ENTRY(webtail_fetch) entry;
};

TAILQ_HEAD(webtail_list, webtail_fetch);

struct webtail {
	struct event_base *base;
	struct evdns_base *dns;
	struct http *http;
	webtail_reply_fn reply;
	void *arg;
	json_t *runs;    /* {job: {run id: {"node", "seen"}}} */
	json_t *workers; /* {node: {"addr", "port", "token", "seen"}} */
	struct webtail_list fetches;
	struct webtail_list done; /* their connections freed on the next turn of the loop */
	struct event *reap;
	int inflight;
};

static void
webtail_reap_cb(int fd, short what, void *arg)
{
	struct webtail *t = arg;
	struct webtail_fetch *f;

	(void)fd;
	(void)what;
	while ((f = TAILQ_FIRST(&t->done)) != NULL) {
		TAILQ_REMOVE(&t->done, f, entry);
		if (f->conn != NULL)
			evhttp_connection_free(f->conn);
		if (f->timer != NULL)
			event_free(f->timer);
		free(f);
	}
}

/* A new tail on the dashboard's loop and listener; reply answers with the page's headers. */
struct webtail *
webtail_new(struct event_base *base, struct http *h, webtail_reply_fn reply, void *arg)
{
	struct webtail *t = xcalloc(1, sizeof *t);

	t->base = base;
	t->http = h;
	t->reply = reply;
	t->arg = arg;
	t->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
	if (t->dns == NULL) /* no resolv.conf: addresses (and /etc/hosts) only */
		t->dns = evdns_base_new(base, 0);
	if (t->dns != NULL) { /* a name resolves within about the fetch's own bound */
		evdns_base_set_option(t->dns, "timeout:", "2");
		evdns_base_set_option(t->dns, "attempts:", "1");
	}
	t->runs = json_object();
	t->workers = json_object();
	TAILQ_INIT(&t->fetches);
	TAILQ_INIT(&t->done);
	t->reap = event_new(base, -1, 0, webtail_reap_cb, t);
	return t;
}

/* Drop the entries of obj (job's runs or workers) not seen since before cutoff. */
static void
webtail_expire(json_t *obj, json_int_t cutoff)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(obj, tmp, k, v) {
		if (json_integer_value(json_object_get(v, "seen")) < cutoff)
			json_object_del(obj, k);
	}
}

/* A worker entry of the view: its output token taken out, its address noted. */
static void
webtail_worker(struct webtail *t, json_t *w, json_int_t now)
{
	const char *node = json_string_value(json_object_get(w, "znode"));
	const char *listen = json_string_value(json_object_get(w, "http"));
	const char *token = json_string_value(json_object_get(w, "output_token"));
	char host[256];
	int port;

	if (node != NULL && listen != NULL && token != NULL && strlen(token) == FOLLOW_TOKEN_LEN &&
	    strspn(token, "0123456789abcdef") == FOLLOW_TOKEN_LEN &&
	    follow_parse_listen(listen, json_string_value(json_object_get(w, "host")), host,
	                        sizeof host, &port) == 0)
		json_object_set_new(t->workers, node,
		                    json_pack("{s:s, s:i, s:s, s:I}", "addr", host, "port", port,
		                              "token", token, "seen", now));
	json_object_del(w, "output_token"); /* never to the page */
}

/*
 * A new view of the cluster: the workers' output tokens taken out of it (the page never
 * sees them), and the runs in progress it lists noted with their workers.
 */
void
webtail_update(struct webtail *t, json_t *view)
{
	json_int_t now = (json_int_t)(clock_now_ns() / CLOCK_NS_PER_MS);
	json_t *w, *job, *run, *runs;
	const char *name, *id, *node, *k;
	size_t i, j;
	void *tmp;

	json_array_foreach(json_object_get(view, "workers"), i, w)
		webtail_worker(t, w, now);
	json_array_foreach(json_object_get(view, "jobs"), i, job) {
		name = json_string_value(json_object_get(job, "name"));
		if (name == NULL || strlen(name) > WEBTAIL_MAX_JOB)
			continue;
		json_array_foreach(json_object_get(job, "running"), j, run) {
			id = json_string_value(json_object_get(run, "znode"));
			node = json_string_value(json_object_get(run, "node"));
			if (id == NULL || node == NULL || !follow_valid_run_id(id))
				continue;
			if ((runs = json_object_get(t->runs, name)) == NULL)
				json_object_set_new(t->runs, name, runs = json_object());
			json_object_set_new(runs, id,
			                    json_pack("{s:s, s:I}", "node", node, "seen", now));
		}
	}
	json_object_foreach_safe(t->runs, tmp, k, runs) {
		webtail_expire(runs, now - WEBTAIL_GRACE_MS);
		if (json_object_size(runs) == 0)
			json_object_del(t->runs, k);
	}
	webtail_expire(t->workers, now - WEBTAIL_GRACE_MS);
}

/* Answer the page with a text. */
static void
webtail_text(struct webtail *t, struct evhttp_request *req, int code, const char *reason,
             const char *text)
{
	t->reply(t->arg, req, code, reason, "text/plain; charset=utf-8", text, strlen(text));
}

/* A header of the worker's answer that must be an offset: 0, or -1. */
static int
webtail_offset(struct evhttp_request *resp, const char *name, uint64_t *out)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(resp), name);

	return v != NULL && follow_parse_offset(v, out) == 0 ? 0 : -1;
}

/* The worker answered 200: its bytes and offsets to the page, once they make sense. */
static void
webtail_pass(struct webtail_fetch *f, struct evhttp_request *resp)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(resp);
	struct evkeyvalq *out = evhttp_request_get_output_headers(f->client);
	struct evbuffer *body = evhttp_request_get_input_buffer(resp);
	const char *state = evhttp_find_header(in, FOLLOW_H_STATE);
	const char *outcome = evhttp_find_header(in, FOLLOW_H_OUTCOME);
	size_t n = evbuffer_get_length(body);
	uint64_t at, next;
	char num[32], *bytes;

	if (webtail_offset(resp, FOLLOW_H_OFFSET, &at) != 0 ||
	    webtail_offset(resp, FOLLOW_H_NEXT, &next) != 0 || next < at || next - at != n ||
	    at < f->from || state == NULL || !follow_valid_word(state, 16) ||
	    (outcome != NULL && !follow_valid_word(outcome, 24))) {
		webtail_text(f->t, f->client, 502, "Bad Gateway",
		             "the worker's answer makes no sense\n");
		return;
	}
	snprintf(num, sizeof num, "%llu", (unsigned long long)at);
	evhttp_add_header(out, FOLLOW_H_OFFSET, num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)next);
	evhttp_add_header(out, FOLLOW_H_NEXT, num);
	evhttp_add_header(out, FOLLOW_H_STATE, state);
	if (outcome != NULL)
		evhttp_add_header(out, FOLLOW_H_OUTCOME, outcome);
	bytes = xmalloc(n + 1);
	evbuffer_remove(body, bytes, n);
	f->t->reply(f->t->arg, f->client, 200, "OK", "application/octet-stream", bytes, n);
	free(bytes);
}

/* The page's connection closed before the worker answered: nobody to answer. */
static void
webtail_client_gone_cb(void *arg)
{
	struct webtail_fetch *f = arg;

	f->client = NULL;
}

/* The worker's answer (or none: resp NULL, or code 0), passed on; the fetch is done. */
static void
webtail_fetch_cb(struct evhttp_request *resp, void *arg)
{
	struct webtail_fetch *f = arg;
	struct webtail *t = f->t;
	int code = resp != NULL ? evhttp_request_get_response_code(resp) : 0;

	if (f->ended)
		return; /* timed out already (webtail_fetch_timeout_cb) */
	f->ended = 1;
	if (f->timer != NULL)
		evtimer_del(f->timer);
	if (f->client == NULL)
		; /* the page went away: the answer is dropped */
	else if (code == 200)
		webtail_pass(f, resp);
	else if (code == 404)
		webtail_text(t, f->client, 404, "Not Found",
		             "the worker no longer has this run (it ended over a minute ago, or "
		             "the worker restarted): its record has its output\n");
	else if (code == 403)
		webtail_text(
		    t, f->client, 403, "Forbidden",
		    "this job's output is not kept (record_output = 0, no log_file, or no "
		    "credentials without allow_open_output): there is nothing to follow\n");
	else if (code == 503)
		webtail_text(t, f->client, 503, "Service Unavailable",
		             "the worker answers too many followers now: try again in a second\n");
	else if (code == 0)
		webtail_text(t, f->client, 502, "Bad Gateway",
		             "cannot reach the run's worker (busy, restarting or gone)\n");
	else /* 401: its token changed (a restart) since the last view; anything else */
		webtail_text(t, f->client, 502, "Bad Gateway",
		             "the run's worker refused or failed: try again after the next view\n");
	TAILQ_REMOVE(&t->fetches, f, entry);
	TAILQ_INSERT_TAIL(&t->done, f, entry);
	t->inflight--;
	event_active(t->reap, EV_TIMEOUT, 1); /* not in its own callback */
}

/* The whole fetch took too long: the page gets a 502, the connection goes next turn. */
static void
webtail_fetch_timeout_cb(int fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	webtail_fetch_cb(NULL, arg);
}

/* Fetch the output of run id from its worker w, from offset from, for the page's req. */
static void
webtail_fetch(struct webtail *t, struct evhttp_request *req, json_t *w, const char *id,
              uint64_t from)
{
	struct webtail_fetch *f = xcalloc(1, sizeof *f);
	const char *addr = json_string_value(json_object_get(w, "addr"));
	int port = (int)json_integer_value(json_object_get(w, "port"));
	struct evhttp_request *out;
	struct evkeyvalq *h;
	char buf[FOLLOW_MAX_RUN_ID + 64], host[300];
	struct timeval total = {WEBTAIL_TOTAL_S, 0};

	if (http_defer(t->http, req, webtail_client_gone_cb, f) != 0) {
		free(f);
		webtail_text(t, req, 503, "Service Unavailable",
		             "cannot wait for the worker now\n");
		return;
	}
	f->t = t;
	f->client = req;
	f->from = from;
	TAILQ_INSERT_TAIL(&t->fetches, f, entry);
	t->inflight++;
	f->timer = evtimer_new(t->base, webtail_fetch_timeout_cb, f);
	evtimer_add(f->timer, &total);
	f->conn = evhttp_connection_base_new(t->base, t->dns, addr, (uint16_t)port);
	if (f->conn == NULL) {
		webtail_fetch_cb(NULL, f);
		return;
	}
	evhttp_connection_set_timeout(f->conn, WEBTAIL_HTTP_S);
	evhttp_connection_set_max_body_size(f->conn, WEBTAIL_MAX_BODY);
	evhttp_connection_set_max_headers_size(f->conn, 8192);
	evhttp_connection_set_retries(f->conn, 0);
	out = evhttp_request_new(webtail_fetch_cb, f);
	h = evhttp_request_get_output_headers(out);
	snprintf(host, sizeof host, strchr(addr, ':') != NULL ? "[%s]:%d" : "%s:%d", addr, port);
	evhttp_add_header(h, "Host", host);
	snprintf(buf, sizeof buf, "Bearer %s", json_string_value(json_object_get(w, "token")));
	evhttp_add_header(h, "Authorization", buf);
	snprintf(buf, sizeof buf, FOLLOW_PREFIX "%s" FOLLOW_SUFFIX "?from=%llu", id,
	         (unsigned long long)from);
	/*
	 * Not freed on failure: libevent 2.1 fails here only on a failed strdup, after which it
	 * freed the request itself (its other failure, a bind, needs a bind address, never set).
	 */
	if (evhttp_make_request(f->conn, out, EVHTTP_REQ_GET, buf) != 0)
		webtail_fetch_cb(NULL, f);
	explicit_bzero(buf, sizeof buf);
}

/*
 * GET /api/runs/<job>/<run id>/output?from=N (the caller checked the page's token): 404
 * unless the view lists the run in progress, 503 with WEBTAIL_MAX_FETCHES in flight, else
 * what its worker answers.
 */
void
webtail_serve(struct webtail *t, struct evhttp_request *req)
{
	char job[WEBTAIL_MAX_JOB + 1], id[FOLLOW_MAX_RUN_ID + 1];
	const char *node;
	uint64_t from;
	json_t *run, *w;

	if (follow_parse_tail_uri(evhttp_request_get_uri(req), job, sizeof job, id, sizeof id,
	                          &from) != 0) {
		webtail_text(t, req, 400, "Bad Request",
		             "GET /api/runs/<job>/<run id>/output?from=<offset>, nothing else\n");
		return;
	}
	run = json_object_get(json_object_get(t->runs, job), id);
	if ((node = json_string_value(json_object_get(run, "node"))) == NULL) {
		webtail_text(t, req, 404, "Not Found",
		             "no run of that job and id is in progress (in the last view)\n");
		return;
	}
	if ((w = json_object_get(t->workers, node)) == NULL) {
		webtail_text(t, req, 502, "Bad Gateway",
		             "the run's worker serves no output (an older release, [http] listen "
		             "is off, or its node holds no valid address)\n");
		return;
	}
	if (t->inflight >= WEBTAIL_MAX_FETCHES) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
		webtail_text(t, req, 503, "Service Unavailable",
		             "too many tails at once: try again in a second\n");
		return;
	}
	webtail_fetch(t, req, w, id, from);
}

/* The tail, its fetches dropped (before the listener goes: their requests go with it). */
void
webtail_free(struct webtail *t)
{
	struct webtail_fetch *f;

	if (t == NULL)
		return;
	while ((f = TAILQ_FIRST(&t->fetches)) != NULL) {
		/* Answered now: its connection must not tell a freed fetch it went (http_defer). */
		if (f->client != NULL)
			webtail_text(t, f->client, 503, "Service Unavailable",
			             "the dashboard is stopping\n");
		f->client = NULL;
		TAILQ_REMOVE(&t->fetches, f, entry);
		TAILQ_INSERT_TAIL(&t->done, f, entry);
	}
	webtail_reap_cb(-1, 0, t);
	event_free(t->reap);
	if (t->dns != NULL)
		evdns_base_free(t->dns, 0);
	json_decref(t->runs);
	json_decref(t->workers);
	free(t);
}
