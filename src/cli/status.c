/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot command `leasekeeper status`. */
/* status.c: `leasekeeper status`: the cluster view (view.c), printed for people or as JSON. */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"
#include "cli.h"
#include "target.h"
#include "clock.h"
#include "config.h"
#include "leasekeeper.h"
#include "usage.h"
#include "log.h"
#include "nodedata.h"
#include "runline.h"
#include "utf8.h"
#include "view.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define STATUS_RUNS_SHOWN 5 /* the newest run records read per job */

static const char status_usage[] =
    "usage: leasekeeper status [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
    "                          [--json] [--lock-path PATH [--leases N]]\n"
    "\n"
    "The cluster as ZooKeeper sees it: the live workers, and for each job its agreed lease\n"
    "count, holders, waiters, claimed tick, next tick and last runs.\n"
    "\n"
    "  -j, --json            one JSON object instead of text\n"
    "  -p, --lock-path PATH  show this one lock folder alone (another program's lock)\n"
    "  -l, --leases N        with --lock-path: read it as a semaphore of N "
    "leases\n" TARGET_OPTIONS_HELP;

/*
 * Print locks, each with its mode: a job's when it has several (view_config_locks), whose
 * holders follow; or (run) those a run in progress holds, each with its fence.
 */
static void
status_print_locks(json_t *locks, int run)
{
	json_t *k;
	size_t i;

	json_array_foreach(locks, i, k) {
		printf("%*s%-*s %s (%s)", run ? 13 : 4, "", run ? 5 : 8, i == 0 ? "locks" : "",
		       json_string_value(json_object_get(k, "path")) ?: "?",
		       json_string_value(json_object_get(k, "mode")) ?: "?");
		if (run)
			printf(" fence %lld",
			       (long long)json_integer_value(json_object_get(k, "fence")));
		else if (i == 0)
			printf(", whose holders follow");
		printf("\n");
	}
}

/* Print one holder or waiter line. */
static void
status_print_node(const char *what, json_t *n)
{
	const char *node = json_string_value(json_object_get(n, "node"));
	const char *job = json_string_value(json_object_get(n, "job"));
	const char *since = json_string_value(json_object_get(n, "since"));
	const char *held = json_string_value(json_object_get(n, "held_since"));
	const char *data = json_string_value(json_object_get(n, "data"));
	const char *mode = json_string_value(json_object_get(n, "mode"));
	json_t *pid = json_object_get(n, "pid");
	char side[16] = "";

	/* A read-write lock's node says its side: "(read) queued since ...". */
	if (mode != NULL)
		snprintf(side, sizeof side, "(%.8s) ", mode);

	/*
	 * since: when it joined the queue; held_since: when it got the lease, written by a
	 * holder that waited a second or more (one that got it at once holds since "since").
	 */
	if (node != NULL && since != NULL && strcmp(what, "holder") == 0)
		printf("    %-8s %-16s pid %-8lld job %-16s %squeued since %s, holder since %s\n",
		       what, node, (long long)json_integer_value(pid), job != NULL ? job : "?",
		       side, since, held != NULL ? held : since);
	else if (node != NULL)
		printf("    %-8s %-16s pid %-8lld job %-16s %squeued since %s\n", what, node,
		       (long long)json_integer_value(pid), job != NULL ? job : "?", side,
		       since != NULL ? since : "?");
	else
		printf("    %-8s (another client: %s) %s%s\n", what,
		       data != NULL ? data : "no data", side,
		       json_string_value(json_object_get(n, "znode")));
}

/* A string's escaped copy. */
static json_t *
status_escaped(json_t *str)
{
	char *text = utf8_escape(json_string_value(str));
	json_t *copy = json_string(text);

	free(text);
	return copy;
}

/*
 * Escape every string in v for the table: node data is anyone's to write, and raw control
 * bytes in it would forge lines or drive the terminal (JSON output escapes them already).
 */
static void
status_escape(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item) {
			if (json_is_string(item))
				json_object_set_new(v, key, status_escaped(item));
			else
				status_escape(item);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (json_is_string(item))
				json_array_set_new(v, i, status_escaped(item));
			else
				status_escape(item);
		}
	}
}

/* Print where a job can run: "runs on a, b", or NO live worker and why each refuses. */
static void
status_print_placement(json_t *job)
{
	json_t *on = json_object_get(job, "runnable_workers"), *n;
	size_t i;

	if (json_array_size(on) == 0 && !json_is_true(json_object_get(job, "unrunnable")))
		return; /* an exec lock, or a job no live worker has in its files */
	if (json_array_size(on) == 0)
		printf("    runs on  NO live worker can run it");
	else
		printf("    runs on ");
	json_array_foreach(on, i, n)
		printf("%s %s", i > 0 ? "," : "", json_string_value(n));
	json_array_foreach(json_object_get(job, "excluded_on"), i, n)
		printf("%s%s (%s)", i > 0 ? ", " : "; not on ",
		       json_string_value(json_object_get(n, "worker")),
		       json_string_value(json_object_get(n, "why")));
	printf("\n");
}

/* A worker's clock against ZooKeeper's, as its node states it (validated: anyone may write). */
static void
status_clock(const json_t *w)
{
	int64_t off, err;

	if (nodedata_clock_offset(w, &off, &err) != 0)
		return;
	printf("  clock %+.1f s (+-%.3f)%s", (double)off / 1000.0, (double)err / 1000.0,
	       off - err > 1000 || off + err < -1000 ? " OFF: check its time synchronisation" : "");
}

/* A chain: the jobs a job runs after, and those that run after it (from the configuration). */
static void
status_print_chain(json_t *job)
{
	json_t *v;
	size_t i;

	if (json_array_size(json_object_get(job, "after")) > 0) {
		printf("    after   ");
		json_array_foreach(json_object_get(job, "after"), i, v)
			printf("%s %s", i > 0 ? "," : "", json_string_value(v));
		printf("\n");
	}
	if (json_array_size(json_object_get(job, "children")) > 0) {
		printf("    then    ");
		json_array_foreach(json_object_get(job, "children"), i, v)
			printf("%s %s (after %s)", i > 0 ? "," : "",
			       json_string_value(json_object_get(v, "job")),
			       json_string_value(json_object_get(v, "after")));
		printf("\n");
	}
}

/* A job's runs in progress (from any host) and its last runs. */
static void
status_print_runs(json_t *job)
{
	json_t *n, *runs;
	size_t j;

	/* Runs in progress, from any host: their nodes under <job>/running. */
	json_array_foreach(json_object_get(job, "running"), j, n) {
		printf("    running  %-16s pid %-8lld since %s fence %lld run=%s\n",
		       json_string_value(json_object_get(n, "node")) ?: "?",
		       (long long)json_integer_value(json_object_get(n, "pid")),
		       json_string_value(json_object_get(n, "since")) ?: "?",
		       (long long)json_integer_value(json_object_get(n, "fence")),
		       json_string_value(json_object_get(n, "run_id")) ?: "?");
		status_print_locks(json_object_get(n, "locks"), 1);
	}
	runs = json_object_get(job, "runs");
	if (json_array_size(runs) > 0)
		printf("    last runs:\n");
	json_array_foreach(runs, j, n)
		runline_print(stdout, n, RUNLINE_ROW, RUNLINE_ESCAPED); /* status_escape'd */
}

/* The human view of status. */
static void
status_print(json_t *out)
{
	json_t *workers = json_object_get(out, "workers"), *jobs = json_object_get(out, "jobs");
	json_t *w, *job, *n, *state;
	size_t i, j;

	printf("workers (%zu):\n", json_array_size(workers));
	json_array_foreach(workers, i, w) {
		printf("  %-16s pid %-8lld host %-16s since %s",
		       json_string_value(json_object_get(w, "znode")),
		       (long long)json_integer_value(json_object_get(w, "pid")),
		       json_string_value(json_object_get(w, "host")) ?: "?",
		       json_string_value(json_object_get(w, "start")) ?: "?");
		if (json_string_value(json_object_get(w, "containment")) != NULL)
			printf("  runs contained by %s",
			       json_string_value(json_object_get(w, "containment")));
		if (json_object_get(w, "format_refused") != NULL)
			printf("  NEWER FORMAT: %s",
			       json_string_value(json_object_get(w, "format_refused")));
		if (json_is_true(json_object_get(w, "drained")))
			printf("  DRAINED (%lld lease(s) still held)",
			       (long long)json_integer_value(json_object_get(w, "leases_held")));
		if (json_is_true(json_object_get(w, "unhealthy")))
			printf("  UNHEALTHY since %s (starts fail for reasons of its host; ranked "
			       "last): %s",
			       json_string_value(json_object_get(w, "unhealthy_since")) ?: "?",
			       json_string_value(json_object_get(w, "unhealthy_reason")) ?: "?");
		status_clock(w);
		printf("\n");
	}
	printf("jobs (%zu):\n", json_array_size(jobs));
	json_array_foreach(jobs, i, job) {
		int leases = (int)json_integer_value(json_object_get(job, "leases"));
		json_t *cl = json_object_get(job, "cluster_leases");

		printf("  %s  %s %s, %d lease%s",
		       json_string_value(json_object_get(job, "name")) ?: "-",
		       json_string_value(json_object_get(job, "kind"))
		           ?: (leases == 1 ? "mutex" : "semaphore"),
		       json_string_value(json_object_get(job, "lock_path")), leases,
		       leases == 1 ? "" : "s");
		if (cl != NULL && json_integer_value(cl) != leases)
			printf("  CONFLICT: the cluster agreed on %lld",
			       (long long)json_integer_value(cl));
		if (json_is_string(json_object_get(job, "cluster_locks")))
			printf(
			    "  CONFLICT: the job record's locks are %s; workers configured as here "
			    "do not contend",
			    json_string_value(json_object_get(job, "cluster_locks")));
		if (json_is_true(json_object_get(job, "record_corrupt")))
			printf("  CORRUPT: the job record holds no valid lease count (1 to %d); "
			       "workers do not contend until `leasekeeper set-leases` fixes it",
			       LK_MAX_LEASES);
		if (json_object_get(job, "format_refused") != NULL)
			printf("  NEWER FORMAT: the job record is %s; workers of this release do "
			       "not run it",
			       json_string_value(json_object_get(job, "format_refused")));
		printf("\n");
		status_print_locks(json_object_get(job, "locks"), 0);
		if (json_object_get(job, "paused") != NULL)
			printf(
			    "    PAUSED by %s since %s%s\n",
			    json_string_value(json_object_get(json_object_get(job, "paused"), "by"))
			        ?: "?",
			    json_string_value(
			        json_object_get(json_object_get(job, "paused"), "since"))
			        ?: "?",
			    json_is_true(
			        json_object_get(json_object_get(job, "paused"), "stop_running"))
			        ? " (runs stopped)"
			        : "");
		/* A paused job runs no tick: "paused", not a next tick it will not run. */
		if (json_object_get(job, "schedule") != NULL &&
		    json_object_get(job, "paused") != NULL)
			printf("    schedule %s, paused\n",
			       json_string_value(json_object_get(job, "schedule")));
		else if (json_object_get(job, "schedule") != NULL)
			printf("    schedule %s%s%s\n",
			       json_string_value(json_object_get(job, "schedule")),
			       json_object_get(job, "next_tick") != NULL ? ", next tick " : "",
			       json_string_value(json_object_get(job, "next_tick")) ?: "");
		status_print_chain(job);
		if (json_object_get(job, "runnable_workers") != NULL)
			status_print_placement(job);
		json_array_foreach(json_object_get(job, "holders"), j, n)
			status_print_node(json_string_value(json_object_get(n, "role"))
			                      ?: (leases == 1 && j > 0 ? "waiting" : "holder"),
			                  n);
		json_array_foreach(json_object_get(job, "waiters"), j, n)
			status_print_node("waiting", n);
		if (json_array_size(json_object_get(job, "holders")) == 0 &&
		    json_array_size(json_object_get(job, "waiters")) == 0)
			printf("    (no holder, nobody waiting)\n");
		json_array_foreach(json_object_get(job, "strangers"), j, n)
			printf("    %-8s %s (%s)\n", "STRANGER",
			       json_string_value(json_object_get(n, "znode")),
			       json_string_value(json_object_get(n, "stranger")));
		if (json_object_get(job, "warning") != NULL)
			printf("    WARNING: %s\n",
			       json_string_value(json_object_get(job, "warning")));
		state = json_object_get(job, "state");
		if (state != NULL && json_object_get(state, "tick") != NULL) {
			char tick[40];

			clock_iso8601((uint64_t)json_integer_value(json_object_get(state, "tick")) *
			                  1000,
			              tick, sizeof tick);
			printf("    last claimed tick %s%s%s\n", tick,
			       json_is_true(json_object_get(state, "missed")) ? " (missed)" : "",
			       json_is_true(json_object_get(state, "corrupt"))
			           ? "  CORRUPT: beyond any sane clock, workers override it"
			           : "");
		}
		if (state != NULL && json_object_get(state, "format_refused") != NULL)
			printf("    tick state NEWER FORMAT: %s\n",
			       json_string_value(json_object_get(state, "format_refused")));
		status_print_runs(job);
	}
}

/* status' view is in: keep it, and stop the loop. */
static void
status_done(json_t *view, void *arg)
{
	struct admin *a = arg;
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(view, "errors"), i, e)
		fprintf(stderr, "leasekeeper status: %s\n", json_string_value(e));
	if (json_array_size(json_object_get(view, "errors")) > 0)
		a->exit_code = EXIT_UNAVAILABLE;
	json_object_del(view, "errors");
	a->view = view;
	admin_done(a, a->exit_code);
}

/* The session is up: read the cluster. */
static void
status_ready(struct admin *a)
{
	struct view_opts *o = a->ctx;
	const char *auth = a->auth != NULL ? a->auth : a->cfg != NULL ? a->cfg->auth : NULL;
	static char who[160]; /* who the session is (never the password), for messages */

	o->root = a->root;
	o->cfg = a->cfg;
	if (auth != NULL)
		snprintf(who, sizeof who, "the identity %.*s", (int)strcspn(auth, ":"), auth);
	else
		snprintf(who, sizeof who, "a session without credentials (--auth-file)");
	o->identity = who;
	view_start(a->zk, o, status_done, a);
}

/* `status`. */
int
status_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"lock-path", required_argument, NULL, 'p'},
	                                         {"leases", required_argument, NULL, 'l'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct view_opts view = {0};
	const char *lock_path = NULL;
	char *cause, *text;
	int ch, as_json = 0, rc, leases = 0; /* 0: not given */

	memset(&a, 0, sizeof a);
	while ((ch = getopt_long(argc, argv, "c:z:r:jp:l:A:h", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'j':
			as_json = 1;
			break;
		case 'p':
			lock_path = optarg;
			break;
		case 'l':
			if (admin_count("status", "--leases", optarg, &leases) != 0)
				return EXIT_USAGE;
			break;
		case 'h':
			fputs(status_usage, stdout);
			return 0;
		default:
			return usage_hint("status");
		}
	}
	if (optind != argc) {
		fprintf(stderr, "leasekeeper status: unexpected argument \"%s\"\n", argv[optind]);
		return usage_hint("status");
	}
	if (leases != 0 && lock_path == NULL) {
		fprintf(stderr, "leasekeeper status: --leases goes with --lock-path: a job's count "
		                "comes from its configuration or its record\n");
		return EXIT_USAGE;
	}
	if (lock_path != NULL && !znode_valid_path(lock_path, &cause)) {
		fprintf(stderr, "leasekeeper status: --lock-path: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "status")) != 0)
		return rc;
	view.lock_path = lock_path;
	view.leases = leases != 0 ? leases : 1;
	view.runs = STATUS_RUNS_SHOWN;
	a.ctx = &view;
	a.ready = status_ready;
	rc = admin_run(&a, 10000);
	if (rc == 0 && a.view != NULL && json_is_true(json_object_get(a.view, "_no_cluster"))) {
		/* An empty cluster would look like a cluster that is down: a typo in --root. */
		fprintf(
		    stderr,
		    "leasekeeper status: no cluster under %s: it has no workers and no jobs "
		    "(the workers' [zookeeper] root%s; leasekeeper's default is /leasekeeper)\n",
		    a.root,
		    a.cfg != NULL ? " is this configuration's unless --root says otherwise"
		                  : " is what --root must name");
		rc = 1;
	}
	if (rc == 0 && a.view != NULL) {
		json_object_del(a.view, "_no_cluster");
		if (as_json) {
			text = json_dumps(a.view, JSON_INDENT(2) | JSON_ENSURE_ASCII);
			printf("%s\n", text);
			free(text);
		} else {
			status_escape(a.view);
			status_print(a.view);
		}
	}
	if (a.view != NULL)
		json_decref(a.view);
	config_free(a.cfg);
	return rc;
}
