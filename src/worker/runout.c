/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * runout.c: the output of the runs in progress here, for `leasekeeper logs --follow` from
 * any host: GET /runs/<run id>/output?from=<offset> on the worker's HTTP listener.
 *
 * The supervisor sends main what a run writes (PROTO_OUTPUT), for runs whose output is kept
 * (record_output > 0: with credentials, or allow_open_output). Main keeps the last
 * RUNOUT_KEEP bytes of each, and a run that ended RUNOUT_LINGER_MS more, with its outcome,
 * so that a follower reads its end. Each answer is what is there now, at most
 * RUNOUT_MAX_READ bytes from memory: nothing waits, nothing reads a file, the loop never
 * blocks. Followers poll (`logs --follow` every 300 ms, sooner while output comes, at
 * most 50 times a second); the worker gives at most RUNOUT_RATE answers a second to all
 * of them (then 503: the command waits a second), within the listener's bounds (16
 * connections, 10 s).
 *
 * Access: whoever may read the output in run records may follow it. The worker makes a
 * random token at its start and writes it in its worker node, which only holders of the
 * workers' or the reader's credential read on a root with credentials; every request must
 * carry it (Authorization: Bearer), and the Host check of every endpoint applies. On an
 * open root anyone reads the node, and output is kept (so served) only with
 * allow_open_output = true, as in run records.
 */

#include <sys/queue.h>
#include <sys/random.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "follow.h"
#include "http.h"
#include "log.h"
#include "runout.h"
#include "xmalloc.h"

#define RUNOUT_KEEP      (64 * 1024) /* bytes of a run's output kept for followers */
#define RUNOUT_MAX_READ  (32 * 1024) /* bytes one answer carries at most */
#define RUNOUT_LINGER_MS 60000       /* an ended run is still served this long */
#define RUNOUT_MAX_RUNS  256         /* runs kept at once; past that the oldest ended goes */
#define RUNOUT_RATE      100         /* answers a second to all followers, at most (then 503) */

/* One run's output, in progress or just ended. */
struct runout_run {
	uint32_t run; /* the supervisor's number of it */
	char *job;
	char *run_id;
	int kept;  /* its output is kept (record_output > 0): served */
	char *buf; /* the last len bytes received, buf[0] at offset base */
	size_t len;
	uint64_t base;
	uint64_t next; /* the offset after the last byte received */
	int ended;
	char outcome[32];
	uint64_t ended_ns;
	TAILQ_ENTRY(runout_run) entry;
};

struct runout {
	TAILQ_HEAD(, runout_run) runs;
	int nruns;
	char token[FOLLOW_TOKEN_LEN + 1];
	uint64_t window_ns; /* the second RUNOUT_RATE counts answers in */
	int answers;        /* ... and how many it gave */
};

/* A new store, with its random token (hex). */
struct runout *
runout_new(void)
{
	struct runout *ro = xcalloc(1, sizeof *ro);
	unsigned char r[FOLLOW_TOKEN_LEN / 2];
	size_t i;

	TAILQ_INIT(&ro->runs);
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		fatal("getrandom");
	for (i = 0; i < sizeof r; i++)
		snprintf(ro->token + 2 * i, 3, "%02x", r[i]);
	explicit_bzero(r, sizeof r);
	return ro;
}

/* The token followers must send (written in the worker node as "output_token"). */
const char *
runout_token(const struct runout *ro)
{
	return ro->token;
}

/* Forget one run. */
static void
runout_run_free(struct runout *ro, struct runout_run *r)
{
	TAILQ_REMOVE(&ro->runs, r, entry);
	ro->nruns--;
	free(r->job);
	free(r->run_id);
	free(r->buf);
	free(r);
}

/* Drop the ended runs past RUNOUT_LINGER_MS, and the oldest ended while there are too many. */
static void
runout_prune(struct runout *ro)
{
	struct runout_run *r, *next;
	uint64_t now = clock_now_ns();

	for (r = TAILQ_FIRST(&ro->runs); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->ended && (now - r->ended_ns >= RUNOUT_LINGER_MS * CLOCK_NS_PER_MS ||
		                 ro->nruns > RUNOUT_MAX_RUNS))
			runout_run_free(ro, r);
	}
}

/* The run in progress the supervisor numbers run, or NULL. */
static struct runout_run *
runout_find(struct runout *ro, uint32_t run)
{
	struct runout_run *r;

	TAILQ_FOREACH(r, &ro->runs, entry) {
		if (r->run == run && !r->ended)
			return r;
	}
	return NULL;
}

/* A run started (not a hook): kept says whether its output is kept, so served. */
void
runout_start(struct runout *ro, uint32_t run, const char *job, const char *run_id, int kept)
{
	struct runout_run *r;

	runout_prune(ro);
	if ((r = runout_find(ro, run)) != NULL)
		runout_run_free(ro, r);
	r = xcalloc(1, sizeof *r);
	r->run = run;
	r->job = xstrdup(job);
	r->run_id = xstrdup(run_id);
	r->kept = kept;
	TAILQ_INSERT_TAIL(&ro->runs, r, entry);
	ro->nruns++;
}

/* What a run wrote from offset on: appended, the oldest bytes dropped past RUNOUT_KEEP. */
void
runout_add(struct runout *ro, uint32_t run, uint64_t offset, const char *buf, size_t len)
{
	struct runout_run *r = runout_find(ro, run);
	size_t drop;

	if (r == NULL || !r->kept || len == 0 || offset + len <= r->next)
		return;
	if (offset < r->next) { /* the supervisor never sends a byte twice: be safe anyway */
		buf += r->next - offset;
		len -= (size_t)(r->next - offset);
		offset = r->next;
	}
	if (offset > r->next || len >= RUNOUT_KEEP) { /* a gap, or more than is kept: restart */
		if (len > RUNOUT_KEEP) {
			buf += len - RUNOUT_KEEP;
			offset += len - RUNOUT_KEEP;
			len = RUNOUT_KEEP;
		}
		r->len = 0;
		r->base = offset;
	}
	if (r->buf == NULL)
		r->buf = xmalloc(RUNOUT_KEEP);
	if (r->len + len > RUNOUT_KEEP) {
		drop = r->len + len - RUNOUT_KEEP;
		memmove(r->buf, r->buf + drop, r->len - drop);
		r->len -= drop;
		r->base += drop;
	}
	memcpy(r->buf + r->len, buf, len);
	r->len += len;
	r->next = offset + len;
}

/* A run ended so: followers read the rest of its output, then its outcome. */
void
runout_end(struct runout *ro, uint32_t run, const char *outcome)
{
	struct runout_run *r = runout_find(ro, run);

	if (r == NULL)
		return;
	r->ended = 1;
	r->ended_ns = clock_now_ns();
	snprintf(r->outcome, sizeof r->outcome, "%s", outcome);
}

/* Every run in progress ended so (the supervisor died, and they with it). */
void
runout_end_all(struct runout *ro, const char *outcome)
{
	struct runout_run *r;

	TAILQ_FOREACH(r, &ro->runs, entry) {
		if (!r->ended)
			runout_end(ro, r->run, outcome);
	}
}

/* An error answer, text. */
static void
runout_refuse(struct http *h, struct evhttp_request *req, int code, const char *reason,
              const char *text)
{
	struct evbuffer *body = evbuffer_new();

	evbuffer_add_printf(body, "%s\n", text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; charset=utf-8");
	if (code == 401)
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
		                  "Bearer");
	http_respond(h, req, code, reason, body);
	evbuffer_free(body);
}

/* Whether the request carries the token (Authorization: Bearer), compared in fixed time. */
static int
runout_token_ok(const struct runout *ro, struct evhttp_request *req)
{
	const char *auth =
	    evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	unsigned char diff = 0;
	size_t i;

	if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 ||
	    strlen(auth + 7) != FOLLOW_TOKEN_LEN)
		return 0;
	for (i = 0; i < FOLLOW_TOKEN_LEN; i++)
		diff |= (unsigned char)(auth[7 + i] ^ ro->token[i]);
	return diff == 0;
}

/*
 * Whether one more answer fits in this second's RUNOUT_RATE: however many follow, answers
 * cost the loop at most so much (a follower polls at most 50 times a second, while more
 * than 16 KiB an answer comes).
 */
static int
runout_rate_ok(struct runout *ro)
{
	uint64_t now = clock_now_ns();

	if (now - ro->window_ns >= CLOCK_NS_PER_MS * 1000) {
		ro->window_ns = now;
		ro->answers = 0;
	}
	return ++ro->answers <= RUNOUT_RATE;
}

/* The run named id, the newest of that name. */
static struct runout_run *
runout_named(struct runout *ro, const char *id)
{
	struct runout_run *r, *found = NULL;

	TAILQ_FOREACH(r, &ro->runs, entry) {
		if (strcmp(r->run_id, id) == 0)
			found = r;
	}
	return found;
}

/*
 * What a follower of run_id from offset from gets now: 200 and *sl, 404 no such run (in
 * progress, or ended in the last RUNOUT_LINGER_MS), 403 its output is not kept. From the
 * oldest byte kept if the follower is behind it (sl->at says so).
 */
int
runout_slice(struct runout *ro, const char *run_id, uint64_t from, struct runout_slice *sl)
{
	struct runout_run *r;
	uint64_t n;

	runout_prune(ro);
	if ((r = runout_named(ro, run_id)) == NULL)
		return 404;
	if (!r->kept)
		return 403;
	sl->at = from < r->base ? r->base : from > r->next ? r->next : from;
	n = r->next - sl->at;
	sl->n = n > RUNOUT_MAX_READ ? RUNOUT_MAX_READ : (size_t)n;
	sl->bytes = sl->n > 0 ? r->buf + (sl->at - r->base) : NULL;
	sl->ended = r->ended;
	sl->outcome = r->ended && sl->at + sl->n == r->next ? r->outcome : NULL;
	return 200;
}

/* GET /runs/<run id>/output?from=N: what is there from N now, and the run's state. */
void
runout_serve(struct runout *ro, struct http *h, struct evhttp_request *req)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *body;
	struct runout_slice sl;
	char id[FOLLOW_MAX_RUN_ID + 1], num[32];
	uint64_t from;

	if (!runout_token_ok(ro, req)) {
		runout_refuse(h, req, 401, "Unauthorized",
		              "following output needs the worker's output token (its worker node's "
		              "output_token, which `leasekeeper logs --follow` reads with the "
		              "cluster's credentials)");
		return;
	}
	if (follow_parse_uri(evhttp_request_get_uri(req), id, sizeof id, &from) != 0) {
		runout_refuse(h, req, 400, "Bad Request",
		              "GET /runs/<run id>/output?from=<offset>, nothing else");
		return;
	}
	if (!runout_rate_ok(ro)) {
		evhttp_add_header(out, "Retry-After", "1");
		runout_refuse(h, req, 503, "Service Unavailable",
		              "too many followers: try again in a second");
		return;
	}
	switch (runout_slice(ro, id, from, &sl)) {
	case 404:
		runout_refuse(h, req, 404, "Not Found",
		              "no run of that id is in progress here, or ended in the last minute");
		return;
	case 403:
		runout_refuse(
		    h, req, 403, "Forbidden",
		    "this job's output is not kept (record_output = 0, no log_file, or no "
		    "credentials without allow_open_output): there is nothing to follow");
		return;
	}
	body = evbuffer_new();
	if (sl.n > 0)
		evbuffer_add(body, sl.bytes, sl.n);
	snprintf(num, sizeof num, "%llu", (unsigned long long)sl.at);
	evhttp_add_header(out, FOLLOW_H_OFFSET, num);
	snprintf(num, sizeof num, "%llu", (unsigned long long)(sl.at + sl.n));
	evhttp_add_header(out, FOLLOW_H_NEXT, num);
	evhttp_add_header(out, FOLLOW_H_STATE, sl.ended ? "ended" : "running");
	if (sl.outcome != NULL)
		evhttp_add_header(out, FOLLOW_H_OUTCOME, sl.outcome);
	evhttp_add_header(out, "Content-Type", "application/octet-stream");
	evhttp_add_header(out, "Cache-Control", "no-store");
	http_respond(h, req, 200, "OK", body);
	evbuffer_free(body);
}

/* The store and every run in it. */
void
runout_free(struct runout *ro)
{
	if (ro == NULL)
		return;
	while (!TAILQ_EMPTY(&ro->runs))
		runout_run_free(ro, TAILQ_FIRST(&ro->runs));
	explicit_bzero(ro->token, sizeof ro->token);
	free(ro);
}
