/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper stop`). */
/*
 * stop.c: `leasekeeper stop JOB`: end the run of a job under way (or the one named by its
 * run id, or by its fencing token) on whichever worker runs it, and leave the job's schedule
 * alone. A run id (NODE-BOOT-N) is looked up in <job>/running/<run id>, the node its worker
 * keeps while it runs, for the run's fence: the request names the fence, as before (so a
 * worker of the previous release takes it too). A run not under way is said so at once.
 *
 * It creates the stop request <root>/jobs/<job>/stops/stop-<seq> (see stopreq.c for what the
 * workers do with it) and follows it with a watch until the worker whose run it names claims
 * it and writes how the run ended. A request nobody claims within --timeout is deleted at
 * version 0, as run-now's is: no run was under way (or none with that fence), nothing stopped.
 * --no-restart first pauses the job in its record (as `leasekeeper pause` does, without
 * --stop-running, through the same writer, pausewr.c), so that no worker starts it again
 * until `leasekeeper resume`.
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "duration.h"
#include "jobrec.h"
#include "layout.h"
#include "pausewr.h"
#include "leasekeeper.h"
#include "stoprec.h"
#include "target.h"
#include "usage.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define STOP_TIMEOUT_MS 10000ULL /* --timeout's default */
#define STOP_MAX_RUN_ID 160      /* bytes of a run id (the worker's are at most 144) */

struct stop {
	const char *job;
	char *by;
	int64_t fence;      /* --run FENCE, or the fence of --run RUN_ID; -1: the run under way */
	const char *run_id; /* --run RUN_ID: the run named by its id */
	struct pausewr pw;  /* --no-restart: the pause */
	int kill;
	int no_restart;
	int as_json;
	uint64_t timeout_ms;
	char *record; /* the job record */
	char *dir;    /* its stop requests */
	char *path;   /* the request made */
	int claimed;
	int gave_up;
	int finished;
	struct event *timer;
	json_t *out;
};

/* Leave with code, once. */
static void
stop_done(struct admin *a, int code)
{
	struct stop *s = a->ctx;

	if (s->finished)
		return;
	s->finished = 1;
	admin_done(a, code);
}

/* Print the outcome (the line, or the JSON object) and leave with code. */
static void
stop_end(struct admin *a, const char *line, int code)
{
	struct stop *s = a->ctx;

	json_object_set_new(s->out, "exit", json_integer(code));
	admin_print(s->out, s->as_json, line);
	stop_done(a, code);
}

/* A read or write that failed: ZooKeeper is not answering as it should. */
static void
stop_failed(struct admin *a, const char *what, const struct zk_reply *reply)
{
	struct stop *s = a->ctx;

	if (s->finished)
		return;
	fprintf(stderr, "leasekeeper stop: cannot %s %s: %s\n", what, reply->path,
	        zerror(reply->rc));
	stop_done(a, EXIT_UNAVAILABLE);
}

static void stop_follow(struct admin *);

/* The request changed. */
static void
stop_watch_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	stop_follow(arg);
}

/* The request's result: the run ended (with the outcome the worker recorded). */
static void
stop_result(struct admin *a, const struct stoprec *q)
{
	struct stop *s = a->ctx;
	char *line, *node = utf8_quote_str(q->req.node);
	json_t *o = json_pack("{s:s}", "outcome", q->req.outcome);

	if (q->req.exit_status >= 0)
		json_object_set_new(o, "exit_status", json_integer(q->req.exit_status));
	if (q->req.signal > 0)
		json_object_set_new(o, "signal", json_integer(q->req.signal));
	json_object_set_new(s->out, "result", o);
	if (q->req.signal > 0)
		xasprintf(&line, "job %s: the run on %s ended: %s, signal %d", s->job, node,
		          q->req.outcome, q->req.signal);
	else if (q->req.exit_status >= 0)
		xasprintf(&line, "job %s: the run on %s ended: %s, exit status %d", s->job, node,
		          q->req.outcome, q->req.exit_status);
	else
		xasprintf(&line, "job %s: the run on %s ended: %s", s->job, node, q->req.outcome);
	stop_end(a, line, 0);
	free(line);
	free(node);
}

/* The request as it is now: claimed, done, or still waiting. */
static void
stop_follow_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;
	struct stoprec q;
	char *node;

	if (s->finished)
		return;
	if (reply->rc == ZNONODE) {
		fprintf(stderr, "leasekeeper stop: %s was deleted before it ended\n", s->path);
		stop_done(a, 1);
		return;
	}
	if (reply->rc != ZOK) {
		stop_failed(a, "read", reply);
		return;
	}
	stoprec_parse(reply->value, reply->value_len, &q);
	if (!q.req.claimed)
		return; /* the watch calls again */
	if (!s->claimed) {
		s->claimed = 1;
		evtimer_del(s->timer);
		json_object_set_new(s->out, "node", json_string(q.req.node));
		if (!s->as_json && !q.req.done) {
			node = utf8_quote_str(q.req.node);
			printf("job %s: %s taken by %s; waiting for the run to end\n", s->job,
			       znode_basename(s->path), node);
			free(node);
			fflush(stdout);
		}
	}
	if (q.req.done)
		stop_result(a, &q);
}

/* Read the request, with a watch. */
static void
stop_follow(struct admin *a)
{
	struct stop *s = a->ctx;

	zk_get(a->zk, s->path, stop_watch_cb, stop_follow_cb, a);
}

/* The delete at version 0 after the timeout: nobody took it, or someone just did. */
static void
stop_delete_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;
	char *line, dur[32], which[64];

	if (s->finished)
		return;
	if (reply->rc == ZBADVERSION) {
		stop_follow(a); /* claimed just now: follow it */
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		stop_failed(a, "delete", reply);
		return;
	}
	duration_format(s->timeout_ms, dur, sizeof dur);
	if (s->fence > 0)
		snprintf(which, sizeof which, "a run with fence %" PRId64, s->fence);
	else
		snprintf(which, sizeof which, "a run");
	xasprintf(&line,
	          "job %s: no live worker has %s under way (none took %s within %s): nothing "
	          "stopped%s",
	          s->job, which, znode_basename(s->path), dur,
	          s->no_restart ? "; the job stays paused (`leasekeeper resume` undoes it)" : "");
	json_object_set_new(s->out, "error", json_string("no run under way"));
	fprintf(stderr, "leasekeeper stop: %s\n", line);
	stop_end(a, NULL, 1);
	free(line);
}

/* --timeout: withdraw the request unless it was claimed. */
static void
stop_timeout_cb(int fd, short what, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;

	(void)fd;
	(void)what;
	if (s->claimed || s->gave_up)
		return;
	s->gave_up = 1;
	zk_delete(a->zk, s->path, 0, stop_delete_cb, a);
}

/* The request was created: follow it. */
static void
stop_created_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;
	struct timeval tv;

	if (s->finished)
		return;
	if (reply->rc != ZOK || reply->created == NULL) {
		stop_failed(a, "create", reply);
		return;
	}
	s->path = xstrdup(reply->created);
	json_object_set_new(s->out, "request", json_string(znode_basename(s->path)));
	if (!s->as_json)
		printf("job %s: stop requested as %s by %s\n", s->job, znode_basename(s->path),
		       s->by);
	fflush(stdout);
	tv.tv_sec = (time_t)(s->timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(s->timeout_ms % 1000) * 1000;
	s->timer = evtimer_new(a->base, stop_timeout_cb, a);
	evtimer_add(s->timer, &tv);
	stop_follow(a);
}

/* Create the request (its folder first, if missing). */
static void
stop_create(struct admin *a)
{
	struct stop *s = a->ctx;
	char at[40], *data, *path;
	json_t *o;

	zk_create_path(a->zk, s->dir, ZOO_PERSISTENT, NULL, NULL);
	clock_iso8601(clock_wall_ms(), at, sizeof at);
	o = json_pack("{s:s, s:s, s:I}", "by", s->by, "at", at, "timeout_ms",
	              (json_int_t)s->timeout_ms);
	if (s->fence > 0)
		json_object_set_new(o, "fence", json_integer(s->fence));
	if (s->kill)
		json_object_set_new(o, "kill", json_true());
	if (s->no_restart)
		json_object_set_new(o, "no_restart", json_true());
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	path = znode_join(s->dir, "stop-");
	admin_create_control(a, path, data, ZOO_PERSISTENT_SEQUENTIAL, stop_created_cb);
	free(path);
	free(data);
}

/* The run named by its id, as its node under <job>/running says: its fence, to ask for. */
static void
stop_running_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;
	json_t *o = NULL, *f;
	char *line;

	if (s->finished)
		return;
	if (reply->rc == ZNONODE) {
		xasprintf(&line,
		          "job %s: run %s is not under way (it ended, or never ran; `leasekeeper "
		          "status` lists the runs under way): nothing stopped%s",
		          s->job, s->run_id,
		          s->no_restart ? "; the job stays paused (`leasekeeper resume` undoes it)"
		                        : "");
		json_object_set_new(s->out, "error", json_string("no run under way"));
		fprintf(stderr, "leasekeeper stop: %s\n", line);
		free(line);
		stop_end(a, NULL, 1);
		return;
	}
	if (reply->rc != ZOK) {
		stop_failed(a, "read", reply);
		return;
	}
	if (reply->value_len > 0 && reply->value_len <= CTLREC_MAX_REQUEST)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	f = json_object_get(o, "fence");
	if (!json_is_integer(f) || json_integer_value(f) <= 0) {
		fprintf(stderr,
		        "leasekeeper stop: %s names no fence: the run cannot be told apart\n",
		        reply->path);
		if (o != NULL)
			json_decref(o);
		stop_done(a, 1);
		return;
	}
	s->fence = json_integer_value(f);
	json_object_set_new(s->out, "fence", json_integer(s->fence));
	json_decref(o);
	stop_create(a);
}

/* Ask: for the run named by its id, find its fence first (its node under <job>/running). */
static void
stop_ask(struct admin *a)
{
	struct stop *s = a->ctx;
	char *dir, *path;

	if (s->run_id == NULL) {
		stop_create(a);
		return;
	}
	dir = layout_job_running(a->root, s->job);
	path = znode_join(dir, s->run_id);
	zk_get(a->zk, path, NULL, stop_running_cb, a);
	free(path);
	free(dir);
}

/* The job is not in the cluster: say so and end with 1. */
static void
stop_no_job(struct admin *a)
{
	struct stop *s = a->ctx;

	fprintf(stderr,
	        "leasekeeper stop: the cluster knows no job \"%s\" (%s does not exist): check "
	        "the name\n",
	        s->job, s->record);
	stop_done(a, 1);
}

/* The pause (--no-restart) ended (pausewr.c): then ask for the stop. */
static void
stop_paused_cb(struct pausewr *w, enum pausewr_result result, const json_t *paused, const char *why,
               const struct zk_reply *reply)
{
	struct admin *a = w->arg;
	struct stop *s = a->ctx;

	(void)paused;
	if (s->finished)
		return;
	switch (result) {
	case PAUSEWR_FAILED:
		stop_failed(a, why, reply);
		return;
	case PAUSEWR_NO_JOB:
		stop_no_job(a);
		return;
	case PAUSEWR_REFUSED:
		fprintf(stderr, "leasekeeper stop: %s\n", why);
		stop_done(a, 1);
		return;
	case PAUSEWR_WRITTEN:
		json_object_set_new(s->out, "paused", json_true());
		break;
	case PAUSEWR_ALREADY: /* who paused it first stays on record */
	case PAUSEWR_NOT_PAUSED:
		break;
	}
	stop_ask(a);
}

/* The job record: the cluster must know the job. */
static void
stop_record_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct stop *s = a->ctx;

	if (s->finished)
		return;
	if (reply->rc == ZNONODE) {
		stop_no_job(a);
		return;
	}
	if (reply->rc != ZOK) {
		stop_failed(a, "read", reply);
		return;
	}
	stop_ask(a);
}

/* --no-restart: pause the job first, as `pause` does (the one writer, pausewr.c); then ask. */
static void
stop_ready(struct admin *a)
{
	struct stop *s = a->ctx;

	if (!s->no_restart) {
		zk_get(a->zk, s->record, NULL, stop_record_cb, a);
		return;
	}
	s->pw = (struct pausewr){
	    .zk = a->zk,
	    .path = s->record,
	    .job = s->job,
	    .by = s->by,
	    .done = stop_paused_cb,
	    .arg = a,
	};
	pausewr_start(&s->pw);
}

/* The session went for good while following: nothing more can be learnt. */
static void
stop_event(struct admin *a, enum zk_event event)
{
	if (event != ZK_EVENT_EXPIRED && event != ZK_EVENT_CLOSED)
		return;
	fprintf(stderr, "leasekeeper stop: the ZooKeeper session ended: %s\n",
	        zk_event_name(event));
	stop_done(a, EXIT_UNAVAILABLE);
}

/* The loop is about to go: free our timer with it. */
static void
stop_finish(struct admin *a)
{
	struct stop *s = a->ctx;

	if (s->timer != NULL)
		event_free(s->timer);
	s->timer = NULL;
}

static const char stop_usage[] =
    "usage: leasekeeper stop [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
    "                        [--json] [--by WHO] [--run RUN_ID] [--kill] [--no-restart]\n"
    "                        [--timeout DUR] JOB\n"
    "\n"
    "End the run of a job under way, on whichever worker runs it: SIGTERM, then SIGKILL\n"
    "after kill_grace. Its record says \"stopped\" and who asked; the schedule goes on (the\n"
    "next tick runs; an @continuous copy restarts after restart_backoff).\n"
    "\n"
    "  -j, --json            print the result as one JSON object\n"
    "  -b, --by WHO          who asks, for the records (default: the user and host)\n"
    "  -R, --run RUN_ID      only this run (NODE-BOOT-N, as status and logs print it);\n"
    "                        a number is a run's fence\n"
    "  -k, --kill            SIGKILL at once\n"
    "  -n, --no-restart      pause the job first: nothing starts it until `resume`\n"
    "  -t, --timeout DUR     how long a worker may take to claim it (1s to 24h, default "
    "10s)\n" TARGET_OPTIONS_HELP;

/* Parse one option of stop's own; EXIT_USAGE on a bad value, -1 if not ours, else 0. */
static int
stop_option(struct stop *s, int ch, const char *arg, const char **by)
{
	char *cause, *end;

	switch (ch) {
	case 'j':
		s->as_json = 1;
		return 0;
	case 'b':
		*by = arg;
		return 0;
	case 'k':
		s->kill = 1;
		return 0;
	case 'n':
		s->no_restart = 1;
		return 0;
	case 'R':
		if (*arg >= '0' && *arg <= '9' && strspn(arg, "0123456789") == strlen(arg)) {
			/* All digits: a fence (a run id always has its node and two '-'). */
			s->fence = (int64_t)strtoll(arg, &end, 10);
			if (*end != '\0' || s->fence <= 0) {
				fprintf(stderr,
				        "leasekeeper stop: --run: a fence is a number above 0\n");
				return EXIT_USAGE;
			}
			return 0;
		}
		if (strlen(arg) > STOP_MAX_RUN_ID || strchr(arg, '-') == NULL ||
		    strspn(arg,
		           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
		        strlen(arg) ||
		    arg[0] == '.') {
			fprintf(
			    stderr,
			    "leasekeeper stop: --run takes a run id, NODE-BOOT-N as `leasekeeper "
			    "status` and `logs` print it (or a run's fence, a number)\n");
			return EXIT_USAGE;
		}
		s->run_id = arg;
		return 0;
	case 't':
		if (duration_parse(arg, &s->timeout_ms, &cause) != 0) {
			fprintf(stderr, "leasekeeper stop: --timeout: %s\n", cause);
			free(cause);
			return EXIT_USAGE;
		}
		if (s->timeout_ms < 1000 || s->timeout_ms > (uint64_t)CTLREC_MAX_WAIT_MS) {
			fprintf(stderr, "leasekeeper stop: --timeout must be 1s to 24h\n");
			return EXIT_USAGE;
		}
		return 0;
	default:
		return -1;
	}
}

/* `stop JOB`. */
int
stop_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"zk", required_argument, NULL, 'z'},
	    {"root", required_argument, NULL, 'r'},   {"auth-file", required_argument, NULL, 'A'},
	    {"json", no_argument, NULL, 'j'},         {"by", required_argument, NULL, 'b'},
	    {"run", required_argument, NULL, 'R'},    {"kill", no_argument, NULL, 'k'},
	    {"no-restart", no_argument, NULL, 'n'},   {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct stop s;
	const char *by = NULL;
	char *cause;
	int ch, rc;

	memset(&a, 0, sizeof a);
	memset(&s, 0, sizeof s);
	s.timeout_ms = STOP_TIMEOUT_MS;
	s.fence = -1;
	while ((ch = getopt_long(argc, argv, "c:z:r:A:jb:R:knt:h", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		if (ch == 'h') {
			fputs(stop_usage, stdout);
			return 0;
		}
		rc = stop_option(&s, ch, optarg, &by);
		if (rc > 0)
			return rc;
		if (rc < 0)
			return usage_hint("stop");
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper stop: give one job name\n");
		return usage_hint("stop");
	}
	s.job = argv[optind];
	if (!znode_valid_name(s.job, &cause)) {
		fprintf(stderr, "leasekeeper stop: bad job name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (by != NULL && (strlen(by) == 0 || strlen(by) > CTLREC_MAX_BY)) {
		fprintf(stderr, "leasekeeper stop: --by must be 1 to %d bytes\n", CTLREC_MAX_BY);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "stop")) != 0)
		return rc;
	s.by = admin_who(by);
	s.record = layout_job_record(a.root, s.job);
	s.dir = layout_job_stops(a.root, s.job);
	s.out = json_pack("{s:s, s:s}", "job", s.job, "by", s.by);
	if (s.fence > 0)
		json_object_set_new(s.out, "fence", json_integer(s.fence));
	if (s.run_id != NULL)
		json_object_set_new(s.out, "run_id", json_string(s.run_id));
	a.ctx = &s;
	a.ready = stop_ready;
	a.event = stop_event;
	a.finish = stop_finish;
	rc = admin_run(&a, 10000);
	json_decref(s.out);
	free(s.by);
	free(s.record);
	free(s.dir);
	free(s.path);
	config_free(a.cfg);
	return rc;
}
