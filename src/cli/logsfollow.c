/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot command `leasekeeper logs --follow`. */
/*
 * logsfollow.c: `leasekeeper logs JOB --follow`: the output of the job's run in progress,
 * from any host, as it is written. The run is found in <job>/running (jobrunning.c), its
 * worker's HTTP address and output token in the worker node (worker-node.c); the worker
 * serves the run's output (runout.c) at GET /runs/<run id>/output?from=<offset>, which this
 * polls until the run ended and every byte is read, then prints its outcome and exits with
 * a status made of it. With next (an @continuous job, or --next), it then waits for the
 * job's next run and follows it, until interrupted. Everything read is escaped as `logs`
 * escapes a run record's output: the answer is the job's to write.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "admin.h"
#include "follow.h"
#include "format.h"
#include "layout.h"
#include "leasekeeper.h"
#include "logsfollow.h"
#include "nodedata.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define LOGSFOLLOW_IDLE_MS    300 /* the next poll when nothing new came */
#define LOGSFOLLOW_SOME_MS    100 /* ... when some came */
#define LOGSFOLLOW_BUSY_MS    20  /* ... when much came (LOGSFOLLOW_MUCH): there is more */
#define LOGSFOLLOW_MUCH       16384
#define LOGSFOLLOW_LOOK_MS    1000  /* the next look for a run in progress (next) */
#define LOGSFOLLOW_HTTP_S     10    /* one request's time, at most */
#define LOGSFOLLOW_MAX_BODY   65536 /* an answer's body, at most (the worker sends 32 KiB) */
#define LOGSFOLLOW_MAX_LINE   65536 /* a line without its end is printed past this */
#define LOGSFOLLOW_MAX_ERRORS 10    /* failed requests in a row before giving up */

/* One follower: the run it follows, where, and how far it read. */
struct logsfollow {
	struct admin *a;
	const char *job;
	int next;     /* follow the next runs too (until interrupted) */
	char *run_id; /* the run followed, or NULL: looking for one */
	char *node;   /* ... its worker */
	char *ended;  /* the last run followed to its end (next: not again) */
	char *addr;   /* host of the worker's listener */
	int port;
	char *token;                    /* its output token */
	uint64_t from;                  /* the next offset to read */
	char line[LOGSFOLLOW_MAX_LINE]; /* a line not ended yet */
	size_t linelen;
	int errors;       /* failed requests in a row */
	int waiting_said; /* next: "waiting for the next run" said */
	struct evhttp_connection *conn;
	struct event *timer;
	void (*then)(struct logsfollow *); /* what the timer does */
};

static void logsfollow_look(struct logsfollow *);
static void logsfollow_poll(struct logsfollow *);

/* The timer: what was asked of it (look again, poll again). */
static void
logsfollow_timer_cb(int fd, short what, void *arg)
{
	struct logsfollow *f = arg;

	(void)fd;
	(void)what;
	f->then(f);
}

/* Do fn after ms. */
static void
logsfollow_later(struct logsfollow *f, void (*fn)(struct logsfollow *), int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	f->then = fn;
	evtimer_add(f->timer, &tv);
}

/* Print n bytes of a line, escaped; NUL bytes as \x00. */
static void
logsfollow_put(const char *s, size_t n)
{
	const char *nul;
	char *piece, *esc;

	while (n > 0) {
		nul = memchr(s, '\0', n);
		piece = xstrndup(s, nul != NULL ? (size_t)(nul - s) : n);
		esc = utf8_escape(piece);
		fputs(esc, stdout);
		free(esc);
		free(piece);
		if (nul == NULL)
			break;
		fputs("\\x00", stdout);
		n -= (size_t)(nul - s) + 1;
		s = nul + 1;
	}
}

/* The line held, if any, printed (with its end). */
static void
logsfollow_flush(struct logsfollow *f)
{
	if (f->linelen == 0)
		return;
	logsfollow_put(f->line, f->linelen);
	putchar('\n');
	f->linelen = 0;
}

/* Output read: whole lines printed, escaped; the rest held for its end. */
static void
logsfollow_output(struct logsfollow *f, const char *buf, size_t n)
{
	const char *nl;
	size_t take;

	while (n > 0) {
		nl = memchr(buf, '\n', n);
		take = nl != NULL ? (size_t)(nl - buf) : n;
		if (f->linelen + take > sizeof f->line) /* a line that long: printed in pieces */
			logsfollow_flush(f);
		if (take > sizeof f->line) {
			logsfollow_put(buf, take);
			putchar('\n');
		} else {
			memcpy(f->line + f->linelen, buf, take);
			f->linelen += take;
			if (nl != NULL) {
				logsfollow_put(f->line, f->linelen);
				putchar('\n');
				f->linelen = 0;
			}
		}
		if (nl == NULL)
			break;
		n -= take + 1;
		buf = nl + 1;
	}
	fflush(stdout);
}

/* Stop following this run (the connection goes too). */
static void
logsfollow_drop(struct logsfollow *f)
{
	if (f->conn != NULL)
		evhttp_connection_free(f->conn);
	f->conn = NULL;
	free(f->run_id);
	free(f->node);
	free(f->addr);
	free(f->token);
	f->run_id = f->node = f->addr = f->token = NULL;
	f->from = 0;
	f->linelen = 0;
	f->errors = 0;
}

/* The exit status an outcome makes (docs/outcomes.md; man leasekeeper, logs). */
static int
logsfollow_exit_of(const char *outcome)
{
	if (strcmp(outcome, "ok") == 0)
		return 0;
	if (strcmp(outcome, "failed") == 0)
		return LOGSFOLLOW_EXIT_FAILED;
	return LOGSFOLLOW_EXIT_OTHER;
}

/* The run ended, every byte read: its outcome; then the next run, or the end. */
static void
logsfollow_ended(struct logsfollow *f, const char *outcome)
{
	logsfollow_flush(f);
	printf("=== run %s ended: %s\n", f->run_id, outcome);
	fflush(stdout);
	free(f->ended);
	f->ended = xstrdup(f->run_id);
	logsfollow_drop(f);
	if (!f->next) {
		admin_done(f->a, logsfollow_exit_of(outcome));
		return;
	}
	f->waiting_said = 0;
	logsfollow_later(f, logsfollow_look, 0);
}

/* Give up: say why (escaped: it may be the worker's words), exit with code. */
static void
logsfollow_fail(struct logsfollow *f, int code, const char *what, const char *detail)
{
	char *esc = utf8_escape(detail != NULL ? detail : "");

	logsfollow_flush(f);
	fprintf(stderr, "leasekeeper logs: %s%s%s\n", what, esc[0] != '\0' ? ": " : "", esc);
	free(esc);
	admin_done(f->a, code);
}

/* A header of the answer that must be an offset: 0, or -1. */
static int
logsfollow_offset(struct evhttp_request *req, const char *name, uint64_t *out)
{
	const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);

	return v != NULL && follow_parse_offset(v, out) == 0 ? 0 : -1;
}

/* An error answer's first line (bounded, for the message). */
static char *
logsfollow_body_line(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	char buf[512];
	ev_ssize_t n = evbuffer_copyout(in, buf, sizeof buf - 1);

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return xstrdup(buf);
}

/* An answer that is not 200. */
static void
logsfollow_refused(struct logsfollow *f, struct evhttp_request *req, int code)
{
	char *why = logsfollow_body_line(req), what[300];

	if (code == 401 || code == 403) {
		snprintf(what, sizeof what, "worker %s refuses to show run %s (HTTP %d)", f->node,
		         f->run_id, code);
		logsfollow_fail(f, LOGSFOLLOW_EXIT_REFUSED, what, why);
	} else if (code == 404) {
		snprintf(
		    what, sizeof what,
		    "worker %s no longer has run %s (it ended over a minute ago, or the worker "
		    "restarted): `leasekeeper logs %s --run %s` shows its record",
		    f->node, f->run_id, f->job, f->run_id);
		logsfollow_fail(f, EXIT_UNAVAILABLE, what, NULL);
	} else {
		snprintf(what, sizeof what, "worker %s answered HTTP %d", f->node, code);
		logsfollow_fail(f, EXIT_UNAVAILABLE, what, why);
	}
	free(why);
}

/* One answer of the worker: its output from f->from, and the run's state. */
static void
logsfollow_http_cb(struct evhttp_request *req, void *arg)
{
	struct logsfollow *f = arg;
	struct evbuffer *in;
	const char *state, *outcome;
	uint64_t at, next;
	size_t n;
	char *body;
	int code = req != NULL ? evhttp_request_get_response_code(req) : 0;

	if (code == 0) { /* no answer: the worker is busy, restarting, or gone */
		if (++f->errors >= LOGSFOLLOW_MAX_ERRORS) {
			logsfollow_fail(f, EXIT_UNAVAILABLE, "cannot reach the worker", f->node);
			return;
		}
		logsfollow_later(f, logsfollow_poll, LOGSFOLLOW_LOOK_MS);
		return;
	}
	if (code == 503) { /* the worker answers so many followers a second: later */
		logsfollow_later(f, logsfollow_poll, LOGSFOLLOW_LOOK_MS);
		return;
	}
	if (code != 200) {
		logsfollow_refused(f, req, code);
		return;
	}
	f->errors = 0;
	state = evhttp_find_header(evhttp_request_get_input_headers(req), FOLLOW_H_STATE);
	outcome = evhttp_find_header(evhttp_request_get_input_headers(req), FOLLOW_H_OUTCOME);
	in = evhttp_request_get_input_buffer(req);
	n = evbuffer_get_length(in);
	if (logsfollow_offset(req, FOLLOW_H_OFFSET, &at) != 0 ||
	    logsfollow_offset(req, FOLLOW_H_NEXT, &next) != 0 || next < at || next - at != n ||
	    at < f->from || state == NULL || !follow_valid_word(state, 16) ||
	    (outcome != NULL && !follow_valid_word(outcome, 24))) {
		logsfollow_fail(f, EXIT_UNAVAILABLE, "worker's answer makes no sense", f->node);
		return;
	}
	if (at > f->from) { /* the worker keeps the last 64 KiB: a slow follower misses some */
		logsfollow_flush(f);
		printf("[... %llu bytes of output not kept for followers ...]\n",
		       (unsigned long long)(at - f->from));
	}
	body = xmalloc(n + 1);
	evbuffer_remove(in, body, n);
	logsfollow_output(f, body, n);
	free(body);
	f->from = next;
	if (strcmp(state, "ended") == 0 && outcome != NULL) {
		logsfollow_ended(f, outcome);
		return;
	}
	logsfollow_later(f, logsfollow_poll,
	                 n >= LOGSFOLLOW_MUCH ? LOGSFOLLOW_BUSY_MS
	                 : n > 0              ? LOGSFOLLOW_SOME_MS
	                                      : LOGSFOLLOW_IDLE_MS);
}

/* Ask the worker for the output from f->from. */
static void
logsfollow_poll(struct logsfollow *f)
{
	struct evhttp_request *req;
	struct evkeyvalq *h;
	char uri[FOLLOW_MAX_RUN_ID + 64], host[300];

	if (f->conn == NULL) {
		f->conn = evhttp_connection_base_new(f->a->base, NULL, f->addr, (uint16_t)f->port);
		if (f->conn == NULL) {
			logsfollow_fail(f, EXIT_UNAVAILABLE, "cannot connect to worker", f->node);
			return;
		}
		evhttp_connection_set_timeout(f->conn, LOGSFOLLOW_HTTP_S);
		evhttp_connection_set_max_body_size(f->conn, LOGSFOLLOW_MAX_BODY);
		evhttp_connection_set_max_headers_size(f->conn, 8192);
	}
	req = evhttp_request_new(logsfollow_http_cb, f);
	h = evhttp_request_get_output_headers(req);
	snprintf(host, sizeof host, strchr(f->addr, ':') != NULL ? "[%s]:%d" : "%s:%d", f->addr,
	         f->port);
	evhttp_add_header(h, "Host", host);
	snprintf(uri, sizeof uri, "Bearer %s", f->token);
	evhttp_add_header(h, "Authorization", uri);
	snprintf(uri, sizeof uri, FOLLOW_PREFIX "%s" FOLLOW_SUFFIX "?from=%llu", f->run_id,
	         (unsigned long long)f->from);
	if (evhttp_make_request(f->conn, req, EVHTTP_REQ_GET, uri) != 0) {
		evhttp_connection_free(f->conn); /* (a connect that failed at once) */
		f->conn = NULL;
		logsfollow_http_cb(NULL, f);
	}
}

/* The worker's listener from its node's "http" and "host" (follow.c): 0, or -1. */
static int
logsfollow_address(struct logsfollow *f, const char *listen, const char *hostname)
{
	char host[256];
	int port;

	if (follow_parse_listen(listen, hostname, host, sizeof host, &port) != 0)
		return -1;
	f->addr = xstrdup(host);
	f->port = port;
	return 0;
}

/* Whether a node's data is of a format this release reads; if not, said, and give up. */
static int
logsfollow_readable(struct logsfollow *f, const struct zk_reply *reply)
{
	int v = reply->value_len > 0 ? format_of_data(reply->value, (size_t)reply->value_len)
	                             : FORMAT_NONE;
	char why[200], what[300];

	if (format_readable(v))
		return 1;
	snprintf(what, sizeof what, "%s is %s", reply->path, format_refusal(v, why, sizeof why));
	logsfollow_fail(f, EXIT_UNAVAILABLE, what, NULL);
	return 0;
}

/* The worker node of the run's worker: where it serves the output, and its token. */
static void
logsfollow_worker_cb(const struct zk_reply *reply, void *arg)
{
	struct logsfollow *f = arg;
	json_t *w = json_object();
	const char *listen, *token;
	char what[300];

	if (reply->rc == ZNONODE) { /* gone meanwhile: its run with it; look again */
		json_decref(w);
		logsfollow_drop(f);
		logsfollow_later(f, logsfollow_look, LOGSFOLLOW_LOOK_MS);
		return;
	}
	if (reply->rc != ZOK) {
		snprintf(what, sizeof what, "cannot read %s", reply->path);
		logsfollow_fail(f,
		                reply->rc == ZNOAUTH ? LOGSFOLLOW_EXIT_REFUSED : EXIT_UNAVAILABLE,
		                what, zerror(reply->rc));
		json_decref(w);
		return;
	}
	if (!logsfollow_readable(f, reply)) {
		json_decref(w);
		return;
	}
	nodedata_merge(w, reply->value, reply->value_len);
	listen = json_string_value(json_object_get(w, "http"));
	token = json_string_value(json_object_get(w, "output_token"));
	if (listen == NULL || token == NULL) {
		snprintf(what, sizeof what,
		         "worker %s serves no output to follow (an older release, or [http] listen "
		         "is off)",
		         f->node);
		logsfollow_fail(f, EXIT_UNAVAILABLE, what, NULL);
	} else if (strlen(token) != FOLLOW_TOKEN_LEN ||
	           strspn(token, "0123456789abcdef") != FOLLOW_TOKEN_LEN ||
	           logsfollow_address(f, listen, json_string_value(json_object_get(w, "host"))) !=
	               0) {
		snprintf(what, sizeof what, "worker %s's node holds no valid address and token",
		         f->node);
		logsfollow_fail(f, EXIT_UNAVAILABLE, what, listen);
	} else {
		f->token = xstrdup(token);
		printf("=== run %s of %s on %s, following\n", f->run_id, f->job, f->node);
		fflush(stdout);
		logsfollow_poll(f);
	}
	json_decref(w);
}

/* Whether a worker's node id read from a run's node is one. */
static int
logsfollow_node_ok(const char *node)
{
	char *cause = NULL;
	int ok = znode_valid_name(node, &cause);

	free(cause);
	return ok && strlen(node) <= 255;
}

/* Run ids in byte order. */
static int
logsfollow_cmp_cb(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The run's node under <job>/running: its worker. */
static void
logsfollow_running_cb(const struct zk_reply *reply, void *arg)
{
	struct logsfollow *f = arg;
	json_t *r = json_object();
	const char *node;
	char *path;

	if (reply->rc != ZOK) { /* ended meanwhile, or unreadable: look again */
		json_decref(r);
		logsfollow_drop(f);
		if (reply->rc == ZNOAUTH) {
			logsfollow_fail(f, LOGSFOLLOW_EXIT_REFUSED,
			                "cannot read the run in progress", zerror(reply->rc));
			return;
		}
		logsfollow_later(f, logsfollow_look, f->next ? LOGSFOLLOW_LOOK_MS : 0);
		return;
	}
	if (!logsfollow_readable(f, reply)) {
		json_decref(r);
		return;
	}
	nodedata_merge(r, reply->value, reply->value_len);
	node = json_string_value(json_object_get(r, "node"));
	if (node == NULL || !logsfollow_node_ok(node)) {
		logsfollow_fail(f, EXIT_UNAVAILABLE, "the run in progress names no valid worker",
		                reply->path);
		json_decref(r);
		return;
	}
	f->node = xstrdup(node);
	path = layout_worker(f->a->root, node);
	zk_get(f->a->zk, path, NULL, logsfollow_worker_cb, f);
	free(path);
	json_decref(r);
}

/* The job's runs in progress: follow the oldest not followed yet, or say there is none. */
static void
logsfollow_list_cb(const struct zk_reply *reply, void *arg)
{
	struct logsfollow *f = arg;
	char **names, *dir, *path;
	size_t i, n = reply->rc == ZOK ? (size_t)reply->nchildren : 0;
	const char *pick = NULL;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		logsfollow_fail(f,
		                reply->rc == ZNOAUTH ? LOGSFOLLOW_EXIT_REFUSED : EXIT_UNAVAILABLE,
		                "cannot read the job's runs in progress", zerror(reply->rc));
		return;
	}
	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++)
		names[i] = reply->children[i];
	qsort(names, n, sizeof *names, logsfollow_cmp_cb);
	for (i = 0; i < n && pick == NULL; i++) {
		if (follow_valid_run_id(names[i]) &&
		    (f->ended == NULL || strcmp(names[i], f->ended) != 0))
			pick = names[i];
	}
	if (pick == NULL) {
		free(names);
		if (!f->next) {
			fprintf(
			    stderr,
			    "leasekeeper logs: no run of %s is in progress (`leasekeeper logs %s` "
			    "shows the last ended ones)\n",
			    f->job, f->job);
			admin_done(f->a, LOGSFOLLOW_EXIT_NO_RUN);
			return;
		}
		if (!f->waiting_said) {
			printf("=== waiting for the next run of %s (Ctrl-C ends)\n", f->job);
			fflush(stdout);
			f->waiting_said = 1;
		}
		logsfollow_later(f, logsfollow_look, LOGSFOLLOW_LOOK_MS);
		return;
	}
	f->run_id = xstrdup(pick);
	dir = layout_job_running(f->a->root, f->job);
	path = znode_join(dir, pick);
	zk_get(f->a->zk, path, NULL, logsfollow_running_cb, f);
	free(path);
	free(dir);
	free(names);
}

/* Look for the job's run in progress. */
static void
logsfollow_look(struct logsfollow *f)
{
	char *dir = layout_job_running(f->a->root, f->job);

	zk_children(f->a->zk, dir, NULL, logsfollow_list_cb, f);
	free(dir);
}

/* The session is up: the timer, and the first look. */
static void
logsfollow_ready(struct admin *a)
{
	struct logsfollow *f = a->ctx;

	f->timer = evtimer_new(a->base, logsfollow_timer_cb, f);
	logsfollow_look(f);
}

/* Before the loop goes: what is still held. */
static void
logsfollow_finish(struct admin *a)
{
	struct logsfollow *f = a->ctx;

	logsfollow_drop(f);
	if (f->timer != NULL)
		event_free(f->timer);
	f->timer = NULL;
}

/*
 * Follow the job's run in progress until it ends (next: and the next ones, until
 * interrupted); the exit status of its outcome (LOGSFOLLOW_EXIT_*).
 */
int
logsfollow_run(struct admin *a, const char *job, int next)
{
	struct logsfollow *f = xcalloc(1, sizeof *f);
	int rc;

	f->a = a;
	f->job = job;
	f->next = next;
	a->ctx = f;
	a->ready = logsfollow_ready;
	a->finish = logsfollow_finish;
	rc = admin_run(a, 10000);
	free(f->ended);
	free(f);
	return rc;
}
