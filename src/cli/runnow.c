/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper run-now`). */
/*
 * runnow.c: `leasekeeper run-now JOB`: ask the cluster for one run of a job now.
 *
 * It creates the request node <root>/jobs/<job>/requests/req-<seq> (see runreq.c for what
 * the workers do with it) and follows it with a watch until a worker claims it (and, with
 * --wait, until that worker writes how the run ended). A request nobody claims within
 * --timeout is deleted at version 0, so that a worker cannot take it after the command gave
 * up: either the delete lands and nobody ever runs it, or a claim landed first and it is
 * followed as any other.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin.h"
#include "format.h"
#include "target.h"
#include "clock.h"
#include "config.h"
#include "ctlrec.h"
#include "duration.h"
#include "layout.h"
#include "param.h"
#include "paramrec.h"
#include "cli.h"
#include "leasekeeper.h"
#include "usage.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define RUNNOW_TIMEOUT_MS 30000ULL /* --timeout's default */

struct runnow {
	const char *job;
	char *by;
	int wait;
	int force;
	int as_json;
	uint64_t timeout_ms;
	json_t *params; /* --param NAME=VALUE, as {"NAME": "VALUE"}; NULL: none */
	char *record;   /* the job record */
	char *dir;      /* its requests */
	char *path;     /* the request made */
	char *claimer;  /* the worker that claimed it, once seen */
	int gave_up;    /* the timeout passed: deleting at version 0 */
	int finished;   /* the exit status is decided: later answers (the close) are ignored */
	struct event *timer;
	json_t *out;
};

/* Leave with code, once: what the session's close cancels must not change it. */
static void
runnow_done(struct admin *a, int code)
{
	struct runnow *r = a->ctx;

	if (r->finished)
		return;
	r->finished = 1;
	admin_done(a, code);
}

/* Print the outcome (the line, or the JSON object) and leave with code. */
static void
runnow_end(struct admin *a, const char *line, int code)
{
	struct runnow *r = a->ctx;

	json_object_set_new(r->out, "exit", json_integer(code));
	admin_print(r->out, r->as_json, line);
	runnow_done(a, code);
}

/* A read or write that failed: ZooKeeper is not answering as it should. */
static void
runnow_failed(struct admin *a, const char *what, const struct zk_reply *reply)
{
	struct runnow *r = a->ctx;

	if (r->finished)
		return;
	fprintf(stderr, "leasekeeper run-now: cannot %s %s: %s\n", what, reply->path,
	        zerror(reply->rc));
	runnow_done(a, EXIT_UNAVAILABLE);
}

static void runnow_follow(struct admin *);

/* The request or the claimer's node changed. */
static void
runnow_watch_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	runnow_follow(arg);
}

static void runnow_worker_cb(const struct zk_reply *, void *);

/* The claimer's registration changed: read it again, with a watch. */
static void
runnow_worker_watch_cb(int type, const char *path, void *arg)
{
	struct admin *a = arg;

	(void)type;
	zk_get(a->zk, path, runnow_worker_watch_cb, runnow_worker_cb, a);
}

/* The claimer's registration: gone means the run's end will never be written. */
static void
runnow_worker_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	char *line, *node;
	if (r->finished)
		return;

	if (reply->rc == ZNONODE) {
		node = utf8_quote_str(r->claimer);
		xasprintf(&line,
		          "job %s: worker %s, which took %s, is gone: the run's outcome is unknown "
		          "(see `leasekeeper status`)",
		          r->job, node, znode_basename(r->path));
		json_object_set_new(r->out, "error", json_string("the worker is gone"));
		fprintf(stderr, "leasekeeper run-now: %s\n", line);
		runnow_end(a, NULL, EXIT_UNAVAILABLE);
		free(line);
		free(node);
		return;
	}
	if (reply->rc != ZOK)
		runnow_failed(a, "read", reply);
}

/* The request as it is now: claimed, done, or still waiting. */
static void
runnow_follow_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	struct ctlrec_request q;
	char *line, *node, *path, *err;
	json_t *o;
	int code;
	if (r->finished)
		return;

	if (reply->rc == ZNONODE) {
		fprintf(stderr, "leasekeeper run-now: %s was deleted before it ended\n", r->path);
		runnow_done(a, 1);
		return;
	}
	if (reply->rc != ZOK) {
		runnow_failed(a, "read", reply);
		return;
	}
	ctlrec_request(reply->value, reply->value_len, &q);
	if (!q.claimed)
		return; /* the watch calls again */
	node = utf8_quote_str(q.node);
	if (r->claimer == NULL) {
		r->claimer = xstrdup(q.node);
		evtimer_del(r->timer);
		json_object_set_new(r->out, "node", json_string(q.node));
		if (r->wait && !q.done) {
			if (!r->as_json)
				printf("job %s: %s taken by %s; waiting for the run to end\n",
				       r->job, znode_basename(r->path), node);
			fflush(stdout);
			if (znode_valid_name(q.node, &err)) {
				path = layout_worker(a->root, q.node);
				zk_get(a->zk, path, runnow_worker_watch_cb, runnow_worker_cb, a);
				free(path);
			} else
				free(err);
		}
	}
	if (q.done && reply->stat != NULL && reply->stat->version != 2 &&
	    !(reply->stat->version == 1 && strcmp(q.outcome, "refused") == 0)) {
		/* The claim made version 1 and the claimer's result version 2 (a refusal before
		 * any claim, version 1; one by the claimer, e.g. of parameters, 2): not this. */
		fprintf(stderr,
		        "leasekeeper run-now: %s holds a result its claimer did not write (version "
		        "%d): someone else changed the request; not trusted\n",
		        r->path, reply->stat->version);
		free(node);
		runnow_done(a, 1);
		return;
	}
	if (!r->wait && !(q.done && strcmp(q.outcome, "refused") == 0)) {
		xasprintf(&line, "job %s: %s taken by %s", r->job, znode_basename(r->path), node);
		runnow_end(a, line, 0);
		free(line);
		free(node);
		return;
	}
	if (!q.done) {
		free(node);
		return;
	}
	code = ctlrec_request_exit(&q);
	o = json_object();
	json_object_set_new(o, "outcome", json_string(q.outcome));
	if (q.exit_status >= 0)
		json_object_set_new(o, "exit_status", json_integer(q.exit_status));
	if (q.signal > 0)
		json_object_set_new(o, "signal", json_integer(q.signal));
	if (q.error[0] != '\0')
		json_object_set_new(o, "error", json_string(q.error));
	json_object_set_new(r->out, "result", o);
	err = q.error[0] != '\0' ? utf8_quote_str(q.error) : NULL;
	if (q.signal > 0)
		xasprintf(&line, "job %s: the run on %s ended: %s, signal %d", r->job, node,
		          q.outcome, q.signal);
	else if (q.exit_status >= 0)
		xasprintf(&line, "job %s: the run on %s ended: %s, exit status %d", r->job, node,
		          q.outcome, q.exit_status);
	else
		xasprintf(&line, "job %s: %s on %s%s%s", r->job, q.outcome, node,
		          err != NULL ? ": " : "", err != NULL ? err : "");
	runnow_end(a, line, code);
	free(err);
	free(line);
	free(node);
}

/* Read the request, with a watch. */
static void
runnow_follow(struct admin *a)
{
	struct runnow *r = a->ctx;

	zk_get(a->zk, r->path, runnow_watch_cb, runnow_follow_cb, a);
}

/* The delete at version 0 after the timeout: nobody took it, or someone just did. */
static void
runnow_delete_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	char *line, *dur;
	if (r->finished)
		return;

	if (reply->rc == ZBADVERSION) {
		runnow_follow(a); /* claimed just now: follow it */
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		runnow_failed(a, "delete", reply);
		return;
	}
	dur = xcalloc(1, 32);
	duration_format(r->timeout_ms, dur, 32);
	xasprintf(&line,
	          "job %s: no worker took %s within %s (is a worker that carries the job live, "
	          "not drained, and free?): withdrawn",
	          r->job, znode_basename(r->path), dur);
	json_object_set_new(r->out, "error", json_string("no worker took the request"));
	fprintf(stderr, "leasekeeper run-now: %s\n", line);
	runnow_end(a, NULL, EXIT_TIMEOUT);
	free(line);
	free(dur);
}

/* --timeout: withdraw the request unless it was claimed. */
static void
runnow_timeout_cb(int fd, short what, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;

	(void)fd;
	(void)what;
	if (r->claimer != NULL || r->gave_up)
		return;
	r->gave_up = 1;
	zk_delete(a->zk, r->path, 0, runnow_delete_cb, a);
}

/* The request was created: say so, and follow it. */
static void
runnow_created_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	struct timeval tv;
	if (r->finished)
		return;

	if (reply->rc != ZOK || reply->created == NULL) {
		runnow_failed(a, "create", reply);
		return;
	}
	r->path = xstrdup(reply->created);
	json_object_set_new(r->out, "request", json_string(znode_basename(r->path)));
	if (!r->as_json)
		printf("job %s: run requested as %s by %s\n", r->job, znode_basename(r->path),
		       r->by);
	fflush(stdout);
	tv.tv_sec = (time_t)(r->timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(r->timeout_ms % 1000) * 1000;
	r->timer = evtimer_new(a->base, runnow_timeout_cb, a);
	evtimer_add(r->timer, &tv);
	runnow_follow(a);
}

/* The pending requests: refuse beyond the bound, else create ours. */
static void
runnow_list_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	char at[40], *data, *path;
	json_t *o;
	if (r->finished)
		return;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		runnow_failed(a, "list", reply);
		return;
	}
	if (reply->rc == ZOK && reply->nchildren >= CTLREC_MAX_REQUESTS) {
		fprintf(stderr,
		        "leasekeeper run-now: %s holds %d requests already (at most %d): wait "
		        "for the workers to take them (finished ones go after 10 minutes)\n",
		        r->dir, reply->nchildren, CTLREC_MAX_REQUESTS);
		runnow_done(a, 1);
		return;
	}
	zk_create_path(a->zk, r->dir, ZOO_PERSISTENT, NULL, NULL);
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	o = json_pack("{s:s, s:s, s:I}", "by", r->by, "at", at, "timeout_ms",
	              (json_int_t)r->timeout_ms);
	if (r->force)
		json_object_set_new(o, "force", json_true());
	if (r->params != NULL)
		json_object_set(o, "params", r->params);
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	path = znode_join(r->dir, "req-");
	admin_create_control(a, path, data, ZOO_PERSISTENT_SEQUENTIAL, runnow_created_cb);
	free(path);
	free(data);
}

/* The job record: the cluster must know the job; a paused job needs --force. */
static void
runnow_record_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct runnow *r = a->ctx;
	int stop;
	if (r->finished)
		return;

	if (reply->rc == ZNONODE) {
		fprintf(stderr,
		        "leasekeeper run-now: the cluster knows no job \"%s\" (%s does not exist): "
		        "check the name\n",
		        r->job, r->record);
		runnow_done(a, 1);
		return;
	}
	if (reply->rc != ZOK) {
		runnow_failed(a, "read", reply);
		return;
	}
	if (ctlrec_paused(reply->value, reply->value_len, &stop) && !r->force) {
		fprintf(
		    stderr,
		    "leasekeeper run-now: job %s is paused (`leasekeeper status` says by whom): "
		    "resume it, or pass --force to run it once all the same\n",
		    r->job);
		runnow_done(a, 1);
		return;
	}
	zk_children(a->zk, r->dir, NULL, runnow_list_cb, a);
}

static void
runnow_ready(struct admin *a)
{
	struct runnow *r = a->ctx;

	zk_get(a->zk, r->record, NULL, runnow_record_cb, a);
}

/* The session went for good while following: nothing more can be learnt. */
static void
runnow_event(struct admin *a, enum zk_event event)
{
	if (event != ZK_EVENT_EXPIRED && event != ZK_EVENT_CLOSED)
		return;
	fprintf(stderr, "leasekeeper run-now: the ZooKeeper session ended: %s\n",
	        zk_event_name(event));
	runnow_done(a, EXIT_UNAVAILABLE);
}

static const char runnow_usage[] =
    "usage: leasekeeper run-now [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
    "                           [--json] [--by WHO] [--wait] [--timeout DUR] [--force]\n"
    "                           [--param NAME=VALUE ...] JOB\n"
    "\n"
    "Ask for one run of a job now: exactly one live worker that carries the job takes the\n"
    "request and runs it under the job's lease, recorded as a manual run.\n"
    "\n"
    "  -j, --json            print the result as one JSON object\n"
    "  -b, --by WHO          who asks, for the records (default: the user and host)\n"
    "  -w, --wait            wait for the run's end and exit with its status\n"
    "  -t, --timeout DUR     how long a worker may wait for the lease (1s to 24h, default 1m)\n"
    "  -f, --force           run a paused job too\n"
    "  -P, --param NAME=VALUE  a parameter the job declares (its params), for this run\n"
    "                        only, as LEASEKEEPER_PARAM_NAME (repeat for "
    "more)\n" TARGET_OPTIONS_HELP;

/*
 * --param NAME=VALUE: a parameter for the run (refused as the worker would refuse it: a bad
 * name, a value over PARAM_MAX_VALUE bytes, a name given twice, too many); 0 or EXIT_USAGE.
 */
static int
runnow_param(struct runnow *r, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t nlen = eq != NULL ? (size_t)(eq - arg) : 0;
	char *name;
	json_t *value;

	if (eq == NULL || !param_name_ok(arg, nlen)) {
		fprintf(
		    stderr,
		    "leasekeeper run-now: --param takes NAME=VALUE, NAME of capitals, digits and "
		    "'_' starting with a capital (at most %d bytes), e.g. --param TARGET=db2\n",
		    PARAM_MAX_NAME);
		return EXIT_USAGE;
	}
	value = json_string(eq + 1); /* NULL: not UTF-8 */
	if (!param_value_ok(eq + 1, strlen(eq + 1)) || value == NULL) {
		if (value != NULL)
			json_decref(value);
		fprintf(stderr,
		        "leasekeeper run-now: --param %.*s: the value must be UTF-8 of at most %d "
		        "bytes\n",
		        (int)nlen, arg, PARAM_MAX_VALUE);
		return EXIT_USAGE;
	}
	if (r->params == NULL)
		r->params = json_object();
	name = xstrndup(arg, nlen);
	if (json_object_get(r->params, name) != NULL || json_object_size(r->params) == PARAM_MAX) {
		fprintf(stderr, "leasekeeper run-now: --param %s: given twice, or more than %d\n",
		        name, PARAM_MAX);
		free(name);
		json_decref(value);
		return EXIT_USAGE;
	}
	json_object_set_new(r->params, name, value);
	free(name);
	return 0;
}

/* With the job's configuration at hand (-c), refuse a parameter it does not declare. */
static int
runnow_params_declared(const struct runnow *r, const struct config *cfg)
{
	const struct config_job *cj = cfg != NULL ? config_find_job(cfg, r->job) : NULL;
	const char *name;
	json_t *v;

	if (cj == NULL || r->params == NULL)
		return 1;
	json_object_foreach(r->params, name, v) {
		if (paramrec_declared(cj->params, name, strlen(name)) == NULL) {
			fprintf(stderr,
			        "leasekeeper run-now: job %s declares no parameter %s (its params: "
			        "%s): add it to the job's params, or leave it out\n",
			        r->job, name,
			        cj->params != NULL ? "see `leasekeeper check`" : "none");
			return 0;
		}
	}
	return 1;
}

/* The loop is about to go: free our timer with it. */
static void
runnow_finish(struct admin *a)
{
	struct runnow *r = a->ctx;

	if (r->timer != NULL)
		event_free(r->timer);
	r->timer = NULL;
}

int
runnow_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"zk", required_argument, NULL, 'z'},
	    {"root", required_argument, NULL, 'r'},   {"auth-file", required_argument, NULL, 'A'},
	    {"json", no_argument, NULL, 'j'},         {"by", required_argument, NULL, 'b'},
	    {"wait", no_argument, NULL, 'w'},         {"timeout", required_argument, NULL, 't'},
	    {"force", no_argument, NULL, 'f'},        {"param", required_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct runnow r;
	const char *by = NULL;
	char *cause;
	int ch, rc;

	memset(&a, 0, sizeof a);
	memset(&r, 0, sizeof r);
	r.timeout_ms = RUNNOW_TIMEOUT_MS;
	while ((ch = getopt_long(argc, argv, "c:z:r:A:jh", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'j':
			r.as_json = 1;
			break;
		case 'b':
			by = optarg;
			break;
		case 'w':
			r.wait = 1;
			break;
		case 'f':
			r.force = 1;
			break;
		case 'P':
			if ((rc = runnow_param(&r, optarg)) != 0)
				return rc;
			break;
		case 't':
			if (duration_parse(optarg, &r.timeout_ms, &cause) != 0) {
				fprintf(stderr, "leasekeeper run-now: --timeout: %s\n", cause);
				free(cause);
				return EXIT_USAGE;
			}
			if (r.timeout_ms < 1000 || r.timeout_ms > (uint64_t)CTLREC_MAX_WAIT_MS) {
				fprintf(stderr,
				        "leasekeeper run-now: --timeout must be 1s to 24h (it is "
				        "also how long the worker may wait for the lease)\n");
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(runnow_usage, stdout);
			return 0;
		default:
			return usage_hint("run-now");
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper run-now: give one job name\n");
		return usage_hint("run-now");
	}
	r.job = argv[optind];
	if (!znode_valid_name(r.job, &cause)) {
		fprintf(stderr, "leasekeeper run-now: bad job name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (by != NULL && (strlen(by) == 0 || strlen(by) > CTLREC_MAX_BY)) {
		fprintf(stderr, "leasekeeper run-now: --by must be 1 to %d bytes\n", CTLREC_MAX_BY);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "run-now")) != 0)
		return rc;
	admin_control_note(&a, "run-now");
	if (!runnow_params_declared(&r, a.cfg)) {
		config_free(a.cfg);
		json_decref(r.params);
		return EXIT_USAGE;
	}
	r.by = admin_who(by);
	r.record = layout_job_record(a.root, r.job);
	r.dir = layout_job_requests(a.root, r.job);
	r.out = json_pack("{s:s, s:s}", "job", r.job, "by", r.by);
	a.ctx = &r;
	a.ready = runnow_ready;
	a.event = runnow_event;
	a.finish = runnow_finish;
	rc = admin_run(&a, 10000);
	json_decref(r.out);
	if (r.params != NULL)
		json_decref(r.params);
	free(r.by);
	free(r.record);
	free(r.dir);
	free(r.path);
	free(r.claimer);
	config_free(a.cfg);
	return rc;
}
