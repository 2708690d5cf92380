/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command (`leasekeeper pause, resume, forget, drain, undrain`). */
/*
 * control.c: the cluster-wide controls, one-shot commands like status: pause and resume a
 * job, drain and undrain a worker, forget a job.
 *
 * Each is a node in ZooKeeper that the workers watch, so it works from any host and
 * survives the workers' restarts: a pause is the "paused" object of the job record
 * <root>/jobs/<job> (written at the version read, keeping the rest of the record); a drain
 * is the persistent node <root>/drain/<node_id>. forget deletes <root>/jobs/<job> and
 * everything under it, once no live worker lists the job in its registration node.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "admin.h"
#include "format.h"
#include "target.h"
#include "clock.h"
#include "config.h"
#include "cli.h"
#include "leasekeeper.h"
#include "usage.h"
#include "duration.h"
#include "jobrec.h"
#include "layout.h"
#include "pausewr.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define CONTROL_MAX_BY      128 /* bytes of --by */
#define CONTROL_MAX_RACES   10  /* versioned writes lost in a row, at most */
#define CONTROL_MAX_DELETES 10  /* listings of a folder again, when it filled meanwhile */

enum control_cmd { CONTROL_PAUSE, CONTROL_RESUME, CONTROL_DRAIN, CONTROL_UNDRAIN, CONTROL_FORGET };

struct control {
	enum control_cmd cmd;
	const char *name; /* the command's name, for messages */
	const char *job;  /* pause, resume, forget */
	const char *node; /* drain, undrain */
	char *by;
	int stop_running;
	int force;
	int wait;
	int as_json;
	int64_t deadline_ms; /* drain --deadline; -1: none */
	int races;
	char *path; /* the job record, or the drain node */
	json_t *out;
	json_t *carriers;  /* forget: the live workers that carry the job */
	struct pausewr pw; /* pause, resume: the record's write */
};

/* Print the result: the human line, or the JSON object. */
static void
control_print(struct control *c, const char *line)
{
	admin_print(c->out, c->as_json, line);
}

/* A read or a write that failed: say which, and leave with EXIT_UNAVAILABLE. */
static void
control_failed(struct admin *a, const char *what, const struct zk_reply *reply)
{
	struct control *c = a->ctx;

	fprintf(stderr, "leasekeeper %s: cannot %s %s: %s\n", c->name, what, reply->path,
	        zerror(reply->rc));
	admin_done(a, EXIT_UNAVAILABLE);
}

/* ------------------------------------------------------------------------------------- */
/* pause, resume                                                                           */
/* ------------------------------------------------------------------------------------- */

/* The pause or resume ended (pausewr.c): say how. */
static void
control_pause_done(struct pausewr *w, enum pausewr_result result, const json_t *paused,
                   const char *why, const struct zk_reply *reply)
{
	struct admin *a = w->arg;
	struct control *c = a->ctx;
	char *line = NULL, *by, *when;

	json_object_set_new(c->out, "job", json_string(c->job));
	switch (result) {
	case PAUSEWR_FAILED:
		control_failed(a, why, reply);
		return;
	case PAUSEWR_NO_JOB:
		fprintf(stderr,
		        "leasekeeper %s: the cluster knows no job \"%s\" (%s does not exist): "
		        "check the name\n",
		        c->name, c->job, c->path);
		admin_done(a, 1);
		return;
	case PAUSEWR_REFUSED:
		fprintf(stderr, "leasekeeper %s: %s\n", c->name, why);
		admin_done(a, 1);
		return;
	case PAUSEWR_NOT_PAUSED:
		json_object_set_new(c->out, "paused", json_false());
		xasprintf(&line, "job %s: not paused", c->job);
		break;
	case PAUSEWR_ALREADY:
		/* Paused already: who paused it first stays on record. */
		json_object_set_new(c->out, "paused", json_deep_copy(paused));
		by = utf8_quote_str(json_string_value(json_object_get(paused, "by")) ?: "?");
		when = utf8_quote_str(json_string_value(json_object_get(paused, "since")) ?: "?");
		xasprintf(&line, "job %s: already paused by %s since %s", c->job, by, when);
		free(by);
		free(when);
		break;
	case PAUSEWR_WRITTEN:
		if (c->cmd == CONTROL_PAUSE) {
			json_object_set_new(c->out, "paused", json_deep_copy(paused));
			xasprintf(&line, "job %s: paused by %s at %s%s", c->job,
			          json_string_value(json_object_get(paused, "by")),
			          json_string_value(json_object_get(paused, "since")),
			          c->stop_running ? "; its runs are being stopped" : "");
		} else {
			json_object_set_new(c->out, "paused", json_false());
			xasprintf(&line, "job %s: resumed", c->job);
		}
		break;
	}
	/* As drain and undrain say it: whether this command changed the cluster. */
	json_object_set_new(c->out, "changed", json_boolean(result == PAUSEWR_WRITTEN));
	control_print(c, line);
	free(line);
	admin_done(a, 0);
}

/* The session is up: make sure <root>/jobs exists, then read and write. */
static void
control_pause_ready(struct admin *a)
{
	struct control *c = a->ctx;
	char *path = layout_jobs(a->root);

	zk_create_path(a->zk, path, ZOO_PERSISTENT, NULL, NULL);
	free(path);
	c->pw = (struct pausewr){
	    .zk = a->zk,
	    .path = c->path,
	    .job = c->job,
	    .by = c->by,
	    .resume = c->cmd == CONTROL_RESUME,
	    .stop_running = c->stop_running,
	    .may_create = a->cfg != NULL && config_find_job(a->cfg, c->job) != NULL,
	    .done = control_pause_done,
	    .arg = a,
	};
	pausewr_start(&c->pw);
}

/* ------------------------------------------------------------------------------------- */
/* drain, undrain                                                                          */
/* ------------------------------------------------------------------------------------- */

static void control_drain_follow(struct admin *);

/* drain --wait: the worker's node changed or went. */
static void
control_drain_watch_cb(int type, const char *path, void *arg)
{
	(void)type;
	(void)path;
	control_drain_follow(arg);
}

/* drain --wait: the worker's node, as it is: done once it holds no lease, or is gone. */
static void
control_drain_follow_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct control *c = a->ctx;
	json_t *o = NULL;
	char *line = NULL;
	int drained = 0;
	json_int_t held = -1;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		control_failed(a, "read", reply);
		return;
	}
	if (reply->rc == ZOK && reply->value_len > 0 && reply->value_len <= JOBREC_MAX_SIZE)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	if (json_is_object(o)) {
		drained = json_is_true(json_object_get(o, "drained"));
		if (json_is_integer(json_object_get(o, "leases_held")))
			held = json_integer_value(json_object_get(o, "leases_held"));
	}
	if (o != NULL)
		json_decref(o);
	if (reply->rc == ZNONODE)
		xasprintf(&line, "worker %s: drained; no worker with that node id is live",
		          c->node);
	else if (drained && held == 0)
		xasprintf(&line, "worker %s: drained, it holds no lease", c->node);
	if (line == NULL)
		return; /* the watch calls again */
	json_object_set_new(c->out, "leases_held", json_integer(held < 0 ? 0 : held));
	json_object_set_new(c->out, "live", json_boolean(reply->rc == ZOK));
	control_print(c, line);
	free(line);
	admin_done(a, 0);
}

/* drain --wait: read the worker's node, with a watch. */
static void
control_drain_follow(struct admin *a)
{
	struct control *c = a->ctx;
	char *path = layout_worker(a->root, c->node);

	zk_get(a->zk, path, control_drain_watch_cb, control_drain_follow_cb, a);
	free(path);
}

/* The drain node was made (or was there already), or deleted (or was not there). */
static void
control_drain_write_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct control *c = a->ctx;
	char *line;
	int drain = c->cmd == CONTROL_DRAIN;

	if (reply->rc != ZOK && reply->rc != (drain ? ZNODEEXISTS : ZNONODE)) {
		control_failed(a, drain ? "create" : "delete", reply);
		return;
	}
	json_object_set_new(c->out, "node", json_string(c->node));
	json_object_set_new(c->out, "drained", json_boolean(drain));
	json_object_set_new(c->out, "changed", json_boolean(reply->rc == ZOK));
	if (drain && c->wait) {
		if (!c->as_json)
			printf("worker %s: %s; waiting until it holds no lease\n", c->node,
			       reply->rc == ZOK ? "drained" : "already drained");
		control_drain_follow(a);
		return;
	}
	xasprintf(&line, "worker %s: %s", c->node,
	          drain ? (reply->rc == ZOK ? "drained" : "already drained")
	                : (reply->rc == ZOK ? "undrained" : "not drained"));
	control_print(c, line);
	free(line);
	admin_done(a, 0);
}

/* Make <root>/drain/<node>. */
static void
control_drain_make(struct admin *a)
{
	struct control *c = a->ctx;
	char since[40], *dir, *data;
	json_t *o;

	dir = layout_drains(a->root);
	zk_create_path(a->zk, dir, ZOO_PERSISTENT, NULL, NULL);
	free(dir);
	clock_iso8601(clock_wall_ms(), since, sizeof since);
	o = json_pack("{s:s, s:s}", "by", c->by, "since", since);
	if (c->deadline_ms >= 0)
		json_object_set_new(o, "deadline_ms", json_integer(c->deadline_ms));
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);
	json_object_update(c->out, o);
	json_decref(o);
	admin_create_control(a, c->path, data, ZOO_PERSISTENT, control_drain_write_cb);
	free(data);
}

/* Whether the worker to drain is live: a name no live worker has is refused (a typo would
 * otherwise leave a drain node for nobody), unless --force (a worker that is down now). */
static void
control_drain_worker_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct control *c = a->ctx;

	if (reply->rc == ZNONODE && !c->force) {
		fprintf(stderr,
		        "leasekeeper drain: no live worker is named \"%s\" (`leasekeeper status` "
		        "lists them): check the name, or pass --force to drain a worker that is "
		        "down now\n",
		        c->node);
		admin_done(a, 1);
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		control_failed(a, "read", reply);
		return;
	}
	control_drain_make(a);
}

/* The session is up: make (once the worker is found) or delete <root>/drain/<node>. */
static void
control_drain_ready(struct admin *a)
{
	struct control *c = a->ctx;
	char *path;

	if (c->cmd == CONTROL_UNDRAIN) {
		zk_delete(a->zk, c->path, -1, control_drain_write_cb, a);
		return;
	}
	path = layout_worker(a->root, c->node);
	zk_exists(a->zk, path, control_drain_worker_cb, a);
	free(path);
}

/* ------------------------------------------------------------------------------------- */
/* forget                                                                                  */
/* ------------------------------------------------------------------------------------- */

/* One node of the tree being deleted, children first. */
struct control_del {
	struct admin *a;
	struct control_del *parent;
	char *path;
	int children; /* children not deleted yet */
	int tries;    /* listings so far */
};

static void control_del_start(struct admin *, struct control_del *parent, const char *path);

/* The tree is gone (or one delete failed, which was said). */
static void
control_del_over(struct admin *a)
{
	struct control *c = a->ctx;
	char *line;

	if (a->exit_code != 0) {
		admin_done(a, a->exit_code);
		return;
	}
	json_object_set_new(c->out, "job", json_string(c->job));
	json_object_set_new(c->out, "forgotten", json_true());
	xasprintf(&line, "job %s: forgotten (%s and everything under it deleted)", c->job, c->path);
	control_print(c, line);
	free(line);
	admin_done(a, 0);
}

static void control_del_list_cb(const struct zk_reply *, void *);

/* A node's delete: done, and one child less for its parent. */
static void
control_del_cb(const struct zk_reply *reply, void *arg)
{
	struct control_del *d = arg;
	struct admin *a = d->a;
	struct control_del *parent = d->parent;

	if (reply->rc == ZNOTEMPTY && ++d->tries <= CONTROL_MAX_DELETES) {
		/* Something was added meanwhile (a last run record): list it again. */
		zk_children(a->zk, d->path, NULL, control_del_list_cb, d);
		return;
	}
	if (reply->rc != ZOK && reply->rc != ZNONODE && a->exit_code == 0) {
		fprintf(stderr, "leasekeeper forget: cannot delete %s: %s\n", d->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
	}
	free(d->path);
	free(d);
	if (parent == NULL) {
		control_del_over(a);
		return;
	}
	if (--parent->children == 0)
		zk_delete(a->zk, parent->path, -1, control_del_cb, parent);
}

/* A node's children: delete each of them first, then the node. */
static void
control_del_list_cb(const struct zk_reply *reply, void *arg)
{
	struct control_del *d = arg;
	char *path;
	int i;

	if (reply->rc != ZOK || reply->nchildren == 0) {
		zk_delete(d->a->zk, d->path, -1, control_del_cb, d);
		return;
	}
	d->children = reply->nchildren;
	for (i = 0; i < reply->nchildren; i++) {
		path = znode_join(d->path, reply->children[i]);
		control_del_start(d->a, d, path);
		free(path);
	}
}

/* Delete path and everything under it. */
static void
control_del_start(struct admin *a, struct control_del *parent, const char *path)
{
	struct control_del *d = xcalloc(1, sizeof *d);

	d->a = a;
	d->parent = parent;
	d->path = xstrdup(path);
	zk_children(a->zk, d->path, NULL, control_del_list_cb, d);
}

/* The record exists, and who carries the job is known: refuse, or delete. */
static void
control_forget_decide(struct admin *a)
{
	struct control *c = a->ctx;
	char *list = NULL, *more, *name;
	json_t *w;
	size_t i;

	if (json_array_size(c->carriers) > 0) {
		json_array_foreach(c->carriers, i, w) {
			name = utf8_quote_str(json_string_value(w));
			xasprintf(&more, "%s%s%s", list != NULL ? list : "",
			          list != NULL ? ", " : "", name);
			free(name);
			free(list);
			list = more;
		}
		if (!c->force) {
			fprintf(
			    stderr,
			    "leasekeeper forget: job %s is carried by live worker(s) %s: remove "
			    "it from their configuration and reload them first (or pass --force "
			    "to delete its records all the same)\n",
			    c->job, list);
			free(list);
			admin_done(a, 1);
			return;
		}
		fprintf(stderr, "leasekeeper forget: --force: job %s is still carried by %s\n",
		        c->job, list);
		free(list);
	}
	control_del_start(a, NULL, c->path);
}

/* One live worker's node: does it carry the job? */
static void
control_forget_worker_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct control *c = a->ctx;
	json_t *o = NULL, *v;
	size_t i;

	if (reply->rc != ZOK && reply->rc != ZNONODE && a->exit_code == 0) {
		fprintf(stderr, "leasekeeper forget: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
	}
	if (reply->rc == ZOK && reply->value_len > 0 && reply->value_len <= JOBREC_MAX_SIZE)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	json_array_foreach(json_object_get(o, "jobs"), i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), c->job) == 0) {
			json_array_append_new(c->carriers,
			                      json_string(znode_basename(reply->path)));
			break;
		}
	}
	if (o != NULL)
		json_decref(o);
	if (--a->pending > 0)
		return;
	if (a->exit_code != 0)
		admin_done(a, a->exit_code);
	else
		control_forget_decide(a);
}

/* The live workers: read each one's node. */
static void
control_forget_workers_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	char *path;
	int i;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		control_failed(a, "list", reply);
		return;
	}
	a->pending = 1;
	for (i = 0; reply->rc == ZOK && i < reply->nchildren; i++) {
		path = znode_join(reply->path, reply->children[i]);
		a->pending++;
		zk_get(a->zk, path, NULL, control_forget_worker_cb, a);
		free(path);
	}
	/* The hold on pending, as if one more answer came. */
	control_forget_worker_cb(&(struct zk_reply){.rc = ZNONODE, .path = reply->path}, a);
}

/* The record: if the cluster knows the job, find who carries it. */
static void
control_forget_record_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct control *c = a->ctx;
	char *path;

	if (reply->rc == ZNONODE) {
		/* As asked already: a repeated control exits 0 (see EXIT STATUS in the man page). */
		xasprintf(&path,
		          "job %s: the cluster has no records of it (%s does not exist): "
		          "nothing to forget",
		          c->job, c->path);
		json_object_set_new(c->out, "job", json_string(c->job));
		json_object_set_new(c->out, "forgotten", json_false());
		control_print(c, path);
		free(path);
		admin_done(a, 0);
		return;
	}
	if (reply->rc != ZOK) {
		control_failed(a, "read", reply);
		return;
	}
	path = layout_workers(a->root);
	zk_children(a->zk, path, NULL, control_forget_workers_cb, a);
	free(path);
}

static void
control_forget_ready(struct admin *a)
{
	struct control *c = a->ctx;

	zk_exists(a->zk, c->path, control_forget_record_cb, a);
}

/* ------------------------------------------------------------------------------------- */
/* the command line                                                                        */
/* ------------------------------------------------------------------------------------- */

/* The usage of each command. */
static const char *
control_usage(enum control_cmd cmd)
{
	static const char *const usage[] = {
	    "usage: leasekeeper pause [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                         [--json] [--by WHO] [--stop-running] JOB\n"
	    "\n"
	    "Pause a job cluster-wide: no worker takes a new lease for it; its ticks are recorded\n"
	    "as paused. Running runs go on to their end unless --stop-running.\n"
	    "\n"
	    "  -j, --json            print the result as one JSON object\n"
	    "  -b, --by WHO          who asks, for the records (default: the user and host)\n"
	    "  -s, --stop-running    stop the job's running runs too\n" TARGET_OPTIONS_HELP,
	    "usage: leasekeeper resume [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                          [--json] JOB\n"
	    "\n"
	    "Resume a paused job: its next tick runs.\n"
	    "\n"
	    "  -j, --json            print the result as one JSON object\n" TARGET_OPTIONS_HELP,
	    "usage: leasekeeper drain [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                         [--json] [--by WHO] [--wait] [--deadline DUR] [--force]\n"
	    "                         [NODE]\n"
	    "\n"
	    "Drain a worker (this host's node id by default): it takes no new lease, hands its\n"
	    "@continuous jobs over, and lets its scheduled runs end. It survives restarts.\n"
	    "\n"
	    "  -j, --json            print the result as one JSON object\n"
	    "  -b, --by WHO          who asks, for the records (default: the user and host)\n"
	    "  -w, --wait            wait until the worker holds no lease\n"
	    "  -d, --deadline DUR    stop its scheduled runs after DUR\n"
	    "  -f, --force           drain a worker that is not live now (it is "
	    "down)\n" TARGET_OPTIONS_HELP,
	    "usage: leasekeeper undrain [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                           [--json] [NODE]\n"
	    "\n"
	    "A drained worker (this host's by default) takes leases again.\n"
	    "\n"
	    "  -j, --json            print the result as one JSON object\n" TARGET_OPTIONS_HELP,
	    "usage: leasekeeper forget [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE]\n"
	    "                          [--json] [--force] JOB\n"
	    "\n"
	    "Delete the records of a job no worker carries any more.\n"
	    "\n"
	    "  -j, --json            print the result as one JSON object\n"
	    "  -f, --force           even while a live worker still carries "
	    "it\n" TARGET_OPTIONS_HELP,
	};

	return usage[cmd];
}

/* Whether an option belongs to the command. */
static int
control_allows(enum control_cmd cmd, int ch)
{
	switch (ch) {
	case 'b':
		return cmd == CONTROL_PAUSE || cmd == CONTROL_DRAIN;
	case 's':
		return cmd == CONTROL_PAUSE;
	case 'w':
	case 'd':
		return cmd == CONTROL_DRAIN;
	case 'f':
		return cmd == CONTROL_FORGET || cmd == CONTROL_DRAIN;
	}
	return 1;
}

/* pause, resume, drain, undrain, forget. */
static int
control_main(enum control_cmd cmd, const char *name, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},   {"zk", required_argument, NULL, 'z'},
	    {"root", required_argument, NULL, 'r'},     {"auth-file", required_argument, NULL, 'A'},
	    {"json", no_argument, NULL, 'j'},           {"by", required_argument, NULL, 'b'},
	    {"stop-running", no_argument, NULL, 's'},   {"wait", no_argument, NULL, 'w'},
	    {"deadline", required_argument, NULL, 'd'}, {"force", no_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
	struct admin a;
	struct target_opts o = {NULL, NULL, NULL, NULL};
	struct control c;
	const char *by = NULL, *arg = NULL;
	uint64_t ms;
	char *cause;
	int ch, rc, node_cmd = cmd == CONTROL_DRAIN || cmd == CONTROL_UNDRAIN;

	memset(&a, 0, sizeof a);
	memset(&c, 0, sizeof c);
	c.cmd = cmd;
	c.name = name;
	c.deadline_ms = -1;
	while ((ch = getopt_long(argc, argv, "c:z:r:A:jh", longopts, NULL)) != -1) {
		if (target_option(ch, optarg, &o))
			continue;
		if (!control_allows(cmd, ch)) {
			fprintf(stderr, "leasekeeper %s: unknown option \"%s\"\n", name,
			        argv[optind - 1]);
			return usage_hint(name);
		}
		switch (ch) {
		case 'j':
			c.as_json = 1;
			break;
		case 'b':
			by = optarg;
			break;
		case 's':
			c.stop_running = 1;
			break;
		case 'w':
			c.wait = 1;
			break;
		case 'f':
			c.force = 1;
			break;
		case 'd':
			if (duration_parse(optarg, &ms, &cause) != 0) {
				fprintf(stderr, "leasekeeper %s: --deadline: %s\n", name, cause);
				free(cause);
				return EXIT_USAGE;
			}
			c.deadline_ms = (int64_t)ms;
			break;
		case 'h':
			fputs(control_usage(cmd), stdout);
			return 0;
		default:
			return usage_hint(name);
		}
	}
	if (optind < argc)
		arg = argv[optind++];
	if (optind != argc) {
		fprintf(stderr, "leasekeeper %s: unexpected argument \"%s\"\n", name, argv[optind]);
		return usage_hint(name);
	}
	if (arg == NULL && !node_cmd) {
		fprintf(stderr, "leasekeeper %s: give a job name\n", name);
		return usage_hint(name);
	}
	if (arg != NULL && !znode_valid_name(arg, &cause)) {
		fprintf(stderr, "leasekeeper %s: bad %s name: %s\n", name,
		        node_cmd ? "node" : "job", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (by != NULL && (strlen(by) == 0 || strlen(by) > CONTROL_MAX_BY)) {
		fprintf(stderr, "leasekeeper %s: --by must be 1 to %d bytes\n", name,
		        CONTROL_MAX_BY);
		return EXIT_USAGE;
	}
	if (node_cmd && arg == NULL && o.file == NULL && o.hosts != NULL) {
		fprintf(stderr,
		        "leasekeeper %s: give the NODE, or -c FILE to mean this host's node_id\n",
		        name);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, name)) != 0)
		return rc;
	if (cmd == CONTROL_PAUSE || cmd == CONTROL_DRAIN)
		admin_control_note(&a, name);
	if (node_cmd) {
		c.node = arg != NULL ? arg : a.cfg->node_id;
		c.path = layout_drain(a.root, c.node);
		a.ready = control_drain_ready;
	} else {
		c.job = arg;
		c.path = layout_job_record(a.root, c.job);
		a.ready = cmd == CONTROL_FORGET ? control_forget_ready : control_pause_ready;
	}
	c.by = admin_who(by);
	c.out = json_object();
	c.carriers = json_array();
	if (cmd == CONTROL_FORGET) /* its --json says who carried the job it forgot */
		json_object_set(c.out, "carried_by", c.carriers);
	a.ctx = &c;
	rc = admin_run(&a, 10000);
	json_decref(c.carriers);
	json_decref(c.out);
	free(c.by);
	free(c.path);
	config_free(a.cfg);
	return rc;
}

/* `pause JOB`. */
int
control_pause(int argc, char **argv)
{
	return control_main(CONTROL_PAUSE, "pause", argc, argv);
}

/* `resume JOB`. */
int
control_resume(int argc, char **argv)
{
	return control_main(CONTROL_RESUME, "resume", argc, argv);
}

/* `drain [NODE]`. */
int
control_drain(int argc, char **argv)
{
	return control_main(CONTROL_DRAIN, "drain", argc, argv);
}

/* `undrain [NODE]`. */
int
control_undrain(int argc, char **argv)
{
	return control_main(CONTROL_UNDRAIN, "undrain", argc, argv);
}

/* `forget JOB`. */
int
control_forget(int argc, char **argv)
{
	return control_main(CONTROL_FORGET, "forget", argc, argv);
}
