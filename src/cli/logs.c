/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot command `leasekeeper logs`. */
/* logs.c: `leasekeeper logs JOB`: the output tails kept in a job's run records, from any host. */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin.h"
#include "cli.h"
#include "target.h"
#include "clock.h"
#include "config.h"
#include "jobrec.h"
#include "layout.h"
#include "leasekeeper.h"
#include "usage.h"
#include "log.h"
#include "format.h"
#include "nodedata.h"
#include "logsfollow.h"
#include "runline.h"
#include "schedule.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define LOGS_MAX_LAST   1000 /* --last at most */
#define LOGS_MAX_RUN_ID 160  /* a run id is at most this long (PROTO_MAX_RUN_ID) */

/* One run record asked for. */
struct logs_req {
	struct admin *a;
	json_t *target; /* its entry in the list printed */
};

/* One answer less to wait for; print when none is left. */
static void
logs_settle(struct admin *a)
{
	if (--a->pending == 0)
		admin_done(a, a->exit_code);
}

struct logs_main {
	const char *job;
	int64_t run;        /* --run N (a record's number), -1: the last ones */
	const char *run_id; /* --run ID (a run's id, as its log lines' run=), or NULL */
	int last;           /* --last N */
	json_t *runs;
};

/* One run record read: its fields merged into its entry (bounded, like status). */
static void
logs_get_cb(const struct zk_reply *reply, void *arg)
{
	struct logs_req *r = arg;
	struct admin *a = r->a;

	json_t *run = json_incref(json_object_get(r->target, "run"));
	int v = reply->rc == ZOK && reply->value_len > 0
	            ? format_of_data(reply->value, (size_t)reply->value_len)
	            : FORMAT_NONE;
	char why[200];

	if (reply->rc == ZOK && !format_readable(v)) {
		/* A newer leasekeeper's record: said so, its data not shown as if understood. */
		json_object_set_new(r->target, "format_refused",
		                    json_string(format_refusal(v, why, sizeof why)));
	} else if (reply->rc == ZOK) {
		nodedata_merge(r->target, reply->value, reply->value_len);
		json_object_set(r->target, "run", run); /* ours, not the record's */
	} else if (reply->rc == ZNONODE)
		json_object_set_new(r->target, "deleted", json_true()); /* trimmed meanwhile */
	else {
		fprintf(stderr, "leasekeeper logs: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
	}
	json_decref(run);
	free(r);
	logs_settle(a);
}

/*
 * No run of the job is recorded: a job the cluster knows (its record exists, or the
 * configuration has it) has no runs yet, which is not an error (exit 0); a name it does not
 * know is most likely misspelt (exit 1).
 */
static void
logs_job_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct logs_main *l = a->ctx;

	if (reply->rc == ZOK || (a->cfg != NULL && config_find_job(a->cfg, l->job) != NULL))
		fprintf(stderr, "leasekeeper logs: job %s has no run recorded yet\n", l->job);
	else if (reply->rc == ZNONODE) {
		fprintf(stderr,
		        "leasekeeper logs: the cluster knows no job \"%s\" under %s: check the "
		        "name (`leasekeeper status` lists the jobs)\n",
		        l->job, a->root);
		a->exit_code = 1;
	} else {
		fprintf(stderr, "leasekeeper logs: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
	}
	logs_settle(a);
}

/* No run recorded: find out whether the job exists at all (logs_job_cb). */
static void
logs_no_runs(struct admin *a)
{
	struct logs_main *l = a->ctx;
	char *path = layout_job_record(a->root, l->job);

	a->pending++;
	zk_exists(a->zk, path, logs_job_cb, a);
	free(path);
}

/* The job's run records, oldest first: read the ones asked for. */
static void
logs_list_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct logs_main *l = a->ctx;
	struct logs_req *r;
	char **names, *path;
	size_t i, n, from = 0;
	int64_t seq;
	json_t *entry;

	if (reply->rc == ZNONODE) {
		logs_no_runs(a);
		logs_settle(a);
		return;
	}
	if (reply->rc != ZOK) {
		fprintf(stderr, "leasekeeper logs: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
		logs_settle(a);
		return;
	}
	n = (size_t)reply->nchildren;
	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++)
		names[i] = reply->children[i];
	znode_sort(names, n, "run-");
	if (l->run < 0 && l->run_id == NULL && n > (size_t)l->last)
		from = n - (size_t)l->last; /* a run id: every record kept is read, then matched */
	for (i = from; i < n; i++) {
		if (znode_sequence(names[i], "run-", &seq) != 0 || (l->run >= 0 && seq != l->run))
			continue;
		entry = json_pack("{s:I}", "run", (json_int_t)seq);
		json_array_append_new(l->runs, entry);
		r = xcalloc(1, sizeof *r);
		r->a = a;
		r->target = entry;
		a->pending++;
		path = znode_join(reply->path, names[i]);
		zk_get(a->zk, path, NULL, logs_get_cb, r);
		free(path);
	}
	free(names);
	if (json_array_size(l->runs) == 0 && l->run_id == NULL) {
		if (l->run >= 0)
			fprintf(
			    stderr,
			    "leasekeeper logs: no run %lld of %s (it may be older than the "
			    "job's history): `leasekeeper logs %s --last 20` lists the runs kept\n",
			    (long long)l->run, l->job, l->job);
		else
			logs_no_runs(a);
		if (l->run >= 0)
			a->exit_code = 1;
	}
	logs_settle(a);
}

static void
logs_ready(struct admin *a)
{
	struct logs_main *l = a->ctx;
	char *path = layout_job_runs(a->root, l->job);

	a->pending++;
	zk_children(a->zk, path, NULL, logs_list_cb, a);
	free(path);
}

/* A field of an untrusted record for a line: its text escaped, or "?" (caller frees). */
static char *
logs_field(json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));

	return utf8_escape(s != NULL ? s : "?");
}

/* A run's locks (joblocks.c), when it held several or a side of a read-write lock. */
static void
logs_locks(json_t *rec)
{
	json_t *locks = json_object_get(rec, "locks"), *k;
	const char *mode;
	char *path;
	size_t i;

	if (!json_is_array(locks) || json_array_size(locks) == 0 ||
	    (json_array_size(locks) == 1 &&
	     (mode = json_string_value(json_object_get(json_array_get(locks, 0), "mode"))) !=
	         NULL &&
	     strcmp(mode, "mutex") == 0))
		return;
	printf("locks:");
	json_array_foreach(locks, i, k) {
		path = logs_field(k, "path");
		mode = json_string_value(json_object_get(k, "mode"));
		printf("%s %s (%s), fence %lld", i > 0 ? "," : "", path,
		       mode != NULL && strcmp(mode, "mutex") == 0   ? "mutex"
		       : mode != NULL && strcmp(mode, "read") == 0  ? "read"
		       : mode != NULL && strcmp(mode, "write") == 0 ? "write"
		                                                    : "semaphore",
		       (long long)json_integer_value(json_object_get(k, "fence")));
		free(path);
	}
	printf("\n");
}

/* A manual run's parameters, one line, each name and value escaped (untrusted record). */
static void
logs_params(json_t *params)
{
	const char *name;
	char *n, *v;
	json_t *val;

	if (!json_is_object(params) || json_object_size(params) == 0)
		return;
	printf("params:");
	json_object_foreach(params, name, val) {
		n = utf8_escape(name);
		v = utf8_escape(json_is_string(val) ? json_string_value(val) : "?");
		printf(" %s=%s", n, v);
		free(n);
		free(v);
	}
	printf("\n");
}

/* The human view: one header line per run (runline.c), then its output, every line escaped. */
static void
logs_print(json_t *runs)
{
	json_t *rec, *out;
	char *line, *text, *p, *nl;
	size_t i;

	json_array_foreach(runs, i, rec) {
		if (i > 0)
			printf("\n");
		runline_print(stdout, rec, RUNLINE_HEADER, 0);
		if (json_object_get(rec, "format_refused") != NULL)
			continue;
		logs_locks(rec);
		if (json_string_value(json_object_get(rec, "error")) != NULL) {
			line = logs_field(rec, "error");
			printf("error: %s\n", line);
			free(line);
		}
		logs_params(json_object_get(rec, "params"));
		if (json_string_value(json_object_get(rec, "stopped_by")) != NULL) {
			line = logs_field(rec, "stopped_by"); /* `leasekeeper stop` */
			printf("stopped by: %s\n", line);
			free(line);
		}
		out = json_object_get(rec, "output");
		if (json_is_true(json_object_get(rec, "deleted")))
			printf("(the record was deleted while it was read: past the history)\n");
		else if (json_object_get(rec, "data_too_large") != NULL)
			printf(
			    "(the record is too large to be read: %lld bytes)\n",
			    (long long)json_integer_value(json_object_get(rec, "data_too_large")));
		else if (!json_is_string(out))
			printf("(no output recorded)\n");
		else {
			/* Line by line, so that a newline stays one; anything else unprintable is
			 * escaped: anyone who can write the record could drive the terminal. */
			text = xstrdup(json_string_value(out));
			for (p = text; *p != '\0'; p = nl + 1) {
				if ((nl = strchr(p, '\n')) != NULL)
					*nl = '\0';
				line = utf8_escape(p);
				printf("%s\n", line);
				free(line);
				if (nl == NULL)
					break;
			}
			free(text);
		}
	}
}

/* --run: a run id ([A-Za-z0-9._-], with a letter or '-'), or a record's number. 0, or -1. */
static int
logs_run_option(const char *arg, struct logs_main *l)
{
	static const char idchars[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno == 0 && end != arg && *end == '\0' && v >= 0) {
		l->run = v;
		return 0;
	}
	if (arg[0] != '\0' && strlen(arg) <= LOGS_MAX_RUN_ID &&
	    strspn(arg, idchars) == strlen(arg)) {
		l->run_id = arg;
		return 0;
	}
	fprintf(stderr,
	        "leasekeeper logs: --run takes a run's id (as its log lines' run=) or its record's "
	        "number, as `logs` shows them\n");
	return -1;
}

/* Keep only the runs whose id is l->run_id; 1 if none is left (said on stderr). */
static int
logs_match_id(struct logs_main *l)
{
	json_t *kept = json_array(), *rec;
	size_t i;

	json_array_foreach(l->runs, i, rec) {
		const char *id = json_string_value(json_object_get(rec, "run_id"));

		if (id != NULL && strcmp(id, l->run_id) == 0)
			json_array_append(kept, rec);
	}
	json_decref(l->runs);
	l->runs = kept;
	if (json_array_size(kept) > 0)
		return 0;
	fprintf(stderr,
	        "leasekeeper logs: no run %s of %s is recorded (it may be running, or older than "
	        "the job's history): `leasekeeper logs %s --last 20` lists the runs kept\n",
	        l->run_id, l->job, l->job);
	return 1;
}

static const char logs_usage[] =
    "usage: leasekeeper logs [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
    "                        [--json] [--run ID | --last N] JOB\n"
    "       leasekeeper logs [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
    "                        --follow [--next] JOB\n"
    "\n"
    "The end of the output of a job's recent runs, as their run records keep it, from any\n"
    "host. Control characters are escaped.\n"
    "\n"
    "  -j, --json            a JSON array of the run records instead of text\n"
    "  -R, --run ID          this run only: its id (as the log lines' run=, the hooks'\n"
    "                        LEASEKEEPER_RUN_ID), or its record's number\n"
    "  -n, --last N          the last N runs (default 1, at most 1000)\n"
    "  -f, --follow          the output of the run in progress, from its worker, as it is\n"
    "                        written; then its outcome, and exit 0 if ok, 1 if failed, 2\n"
    "                        if it ended otherwise, 3 if no run is in progress\n"
    "  -N, --next            with --follow: then wait for the next run and follow it too,\n"
    "                        until Ctrl-C (the default for an @continuous job of "
    "-c)\n" TARGET_OPTIONS_HELP;

/* `leasekeeper logs JOB`: the output's end of a job's recent runs, from its run records. */
int
logs_main(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"run", required_argument, NULL, 'R'},
	                                         {"last", required_argument, NULL, 'n'},
	                                         {"follow", no_argument, NULL, 'f'},
	                                         {"next", no_argument, NULL, 'N'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct logs_main l = {NULL, -1, NULL, 1, NULL};
	char *end, *text, *cause;
	int ch, as_json = 0, rc, have_last = 0, follow = 0, next = 0;
	const struct config_job *cj;
	long long v;

	memset(&a, 0, sizeof a);
	while ((ch = getopt_long(argc, argv, "c:z:r:A:jR:n:fNh", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'j':
			as_json = 1;
			break;
		case 'R':
			if (logs_run_option(optarg, &l) != 0)
				return EXIT_USAGE;
			break;
		case 'n':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 1 ||
			    v > LOGS_MAX_LAST) {
				fprintf(
				    stderr,
				    "leasekeeper logs: --last must be a number from 1 to %d, not "
				    "\"%s\"\n",
				    LOGS_MAX_LAST, optarg);
				return EXIT_USAGE;
			}
			l.last = (int)v;
			have_last = 1;
			break;
		case 'f':
			follow = 1;
			break;
		case 'N':
			next = 1;
			break;
		case 'h':
			fputs(logs_usage, stdout);
			return 0;
		default:
			return usage_hint("logs");
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper logs: %s\n",
		        optind == argc ? "name the job" : "one job at a time");
		return usage_hint("logs");
	}
	if (have_last && (l.run >= 0 || l.run_id != NULL)) {
		fprintf(stderr, "leasekeeper logs: --run or --last, not both\n");
		return EXIT_USAGE;
	}
	if (follow && (as_json || have_last || l.run >= 0 || l.run_id != NULL)) {
		fprintf(stderr, "leasekeeper logs: --follow shows the run in progress: not with "
		                "--json, --run or --last\n");
		return EXIT_USAGE;
	}
	if (next && !follow) {
		fprintf(stderr, "leasekeeper logs: --next goes with --follow\n");
		return EXIT_USAGE;
	}
	l.job = argv[optind];
	if (!znode_valid_name(l.job, &cause)) {
		fprintf(stderr, "leasekeeper logs: bad job name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "logs")) != 0)
		return rc;
	if (follow) {
		/* An @continuous job runs again when its run ends: follow that one too. */
		cj = a.cfg != NULL ? config_find_job(a.cfg, l.job) : NULL;
		if (cj != NULL && cj->sched != NULL &&
		    schedule_kind(cj->sched) == SCHEDULE_CONTINUOUS)
			next = 1;
		rc = logsfollow_run(&a, l.job, next);
		config_free(a.cfg);
		return rc;
	}
	l.runs = json_array();
	a.ctx = &l;
	a.ready = logs_ready;
	rc = admin_run(&a, 10000);
	if (rc == 0 && l.run_id != NULL)
		rc = logs_match_id(&l);
	if (rc == 0) {
		if (as_json) {
			text = json_dumps(l.runs, JSON_INDENT(2) | JSON_ENSURE_ASCII);
			printf("%s\n", text);
			free(text);
		} else
			logs_print(l.runs);
	}
	json_decref(l.runs);
	config_free(a.cfg);
	return rc;
}
