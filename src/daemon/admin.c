/* Runs in: the main process. */
/*
 * admin.c: one-shot commands that read or change the cluster: status, set-leases, logs.
 *
 * Both open their own session, do their reads or writes asynchronously on a loop of
 * their own, and close the session. status fans out every read at once and prints when
 * the last answer is in: for each job, the agreed lease count, the holders and the
 * waiters in queue order (who, pid, since, from the data of their nodes), the claimed
 * tick, the next tick and the last runs; and the live workers. That read of the cluster
 * (admin_view_start) is also what `leasekeeper web` repeats on its long-lived session.
 */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin.h"
#include "authfile.h"
#include "clock.h"
#include "config.h"
#include "ctlrec.h"
#include "jobrec.h"
#include "layout.h"
#include "lease.h"
#include "log.h"
#include "nodedata.h"
#include "schedule.h"
#include "tickstate.h"
#include "utf8.h"
#include "xmalloc.h"
#include "zk.h"
#include "znode.h"

#define ADMIN_CONNECT_TIMEOUT_S LK_CONNECT_TIMEOUT_S
#define ADMIN_RUNS_SHOWN        5

/* Stop the loop with an exit status. */
void
admin_done(struct admin *a, int code)
{
	a->exit_code = code;
	event_base_loopbreak(a->base);
}

static void
admin_zk_cb(struct zk *zk, enum zk_event event, void *arg)
{
	struct admin *a = arg;

	(void)zk;
	if (event == ZK_EVENT_SESSION_NEW && !a->started) {
		a->started = 1;
		evtimer_del(a->timer);
		a->ready(a);
	} else if (a->started && a->event != NULL)
		a->event(a, event);
}

static void
admin_timeout_cb(int fd, short what, void *arg)
{
	struct admin *a = arg;

	(void)fd;
	(void)what;
	fprintf(stderr, "leasekeeper: cannot reach ZooKeeper at %s within %d s\n", a->hosts,
	        ADMIN_CONNECT_TIMEOUT_S);
	admin_done(a, EXIT_UNAVAILABLE);
}

/* Run ready() once a session is up; return the exit status it leaves. */
int
admin_run(struct admin *a, int timeout_ms)
{
	struct timeval tv = {ADMIN_CONNECT_TIMEOUT_S, 0};

	if ((a->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	a->timer = evtimer_new(a->base, admin_timeout_cb, a);
	evtimer_add(a->timer, &tv);
	a->zk = zk_create(a->base, a->hosts, timeout_ms, 0,
	                  a->auth != NULL  ? a->auth
	                  : a->cfg != NULL ? a->cfg->auth
	                                   : NULL,
	                  admin_zk_cb, a);
	event_base_dispatch(a->base);
	zk_free(a->zk);
	if (a->finish != NULL)
		a->finish(a); /* events of its own go before the loop */
	event_free(a->timer);
	event_base_free(a->base);
	if (a->auth != NULL)
		explicit_bzero(a->auth, strlen(a->auth));
	free(a->auth);
	a->auth = NULL;
	return a->exit_code;
}

/* Who asks, for a control's record: --by, else user@host (caller frees). */
char *
admin_who(const char *by)
{
	char host[HOST_NAME_MAX + 1], *who;
	struct passwd *pw = getpwuid(geteuid());

	if (by != NULL)
		return xstrdup(by);
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	xasprintf(&who, "%s@%s", pw != NULL ? pw->pw_name : "?", host);
	return who;
}

/* A command's result: the JSON object with --json, else the human line (if any). */
void
admin_print(json_t *out, int as_json, const char *line)
{
	char *text;

	if (as_json) {
		text = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("%s\n", text);
		free(text);
	} else if (line != NULL)
		printf("%s\n", line);
}

/* Take one of the common options (-c, --zk, --root); 1 if ch was one. */
int
admin_option(int ch, const char *arg, struct admin_opts *o)
{
	switch (ch) {
	case 'c':
		o->file = arg;
		return 1;
	case 'z':
		o->hosts = arg;
		return 1;
	case 'r':
		o->root = arg;
		return 1;
	case 'A':
		o->auth_file = arg;
		return 1;
	}
	return 0;
}

/* A lease count from the command line, 1 to LK_MAX_LEASES; -1 after saying why. */
static int
admin_count(const char *cmd, const char *what, const char *text, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || n < 1 || n > LK_MAX_LEASES) {
		fprintf(stderr, "leasekeeper %s: %s must be a number from 1 to %d, not \"%s\"\n",
		        cmd, what, LK_MAX_LEASES, text);
		return -1;
	}
	*out = (int)n;
	return 0;
}

/*
 * getopt takes "-1" for an option: the first argument that looks like a negative number,
 * to say what is wrong with it rather than "invalid option -- '1'".
 */
static const char *
admin_negative(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1] >= '0' && argv[i][1] <= '9')
			return argv[i];
	return "-";
}

/* Parse the common options; 0, or an exit status. */
int
admin_setup(struct admin *a, struct admin_opts *o, const char *cmd)
{
	struct config_errors errors = {NULL, 0};
	char *cause;
	size_t i;

	/* A connect string that cannot parse would only be retried until the timeout. */
	if (o->hosts != NULL && !config_valid_hosts(o->hosts, &cause)) {
		fprintf(stderr, "leasekeeper %s: --zk: %s\n", cmd, cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (o->root != NULL && !znode_valid_path(o->root, &cause)) {
		fprintf(stderr, "leasekeeper %s: --root: %s\n", cmd, cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (o->file == NULL && o->hosts == NULL) {
		o->file = LEASEKEEPER_DEFAULT_CONFIG;
		if (access(o->file, R_OK) != 0) {
			fprintf(stderr, "leasekeeper %s: give -c FILE or --zk HOSTS\n", cmd);
			return EXIT_USAGE;
		}
	}
	if (o->file != NULL) {
		if (config_load(o->file, &a->cfg, &errors) != 0) {
			for (i = 0; i < errors.n; i++)
				fprintf(stderr, "%s\n", errors.lines[i]);
			config_errors_free(&errors);
			return EXIT_CONFIG;
		}
		config_errors_free(&errors);
	}
	/* --auth-file overrides the configuration's credentials; refused like auth_file. */
	if (o->auth_file != NULL && authfile_read(o->auth_file, &a->auth, &cause) != 0) {
		fprintf(stderr, "leasekeeper %s: --auth-file: %s\n", cmd, cause);
		free(cause);
		config_free(a->cfg);
		a->cfg = NULL;
		return EXIT_CONFIG;
	}
	a->hosts = o->hosts != NULL ? o->hosts : a->cfg->hosts;
	a->root = o->root != NULL ? o->root : a->cfg != NULL ? a->cfg->root : "/leasekeeper";
	return 0;
}

/* Where a long-lived command (web) finds the cluster; 0, or an exit status after saying why. */
int
admin_target(struct admin_opts *o, const char *cmd, struct admin_target *t)
{
	struct admin a;
	int rc;

	memset(&a, 0, sizeof a);
	if ((rc = admin_setup(&a, o, cmd)) != 0)
		return rc;
	t->cfg = a.cfg;
	t->hosts = a.hosts;
	t->root = a.root;
	t->auth = a.auth;
	return 0;
}

/* ------------------------------------------------------------------------------------- */
/* status                                                                                  */
/* ------------------------------------------------------------------------------------- */

/* What one answer fills in. */
enum admin_role {
	ADMIN_WORKERS,   /* children of <root>/workers */
	ADMIN_JOBS,      /* children of <root>/jobs (no configuration) */
	ADMIN_RECORD,    /* <root>/jobs/<job>: the agreed count */
	ADMIN_STATE,     /* <root>/jobs/<job>/state: the claimed tick */
	ADMIN_RUNS,      /* children of <root>/jobs/<job>/runs */
	ADMIN_HOLDERS,   /* mutex folder, or <sem>/leases */
	ADMIN_WAITERS,   /* <sem>/locks */
	ADMIN_NODE_DATA, /* the data of one node, into an object */
	ADMIN_ROOT,      /* children of <root>: whether a cluster lives there at all */
};

/* One read of the whole cluster in progress (admin_view_start). */
struct admin_view {
	struct zk *zk;
	struct admin_view_opts o;
	json_t *out;
	int pending;
	void (*done)(json_t *, void *);
	void *arg;
};

struct admin_req {
	struct admin_view *v;
	enum admin_role role;
	json_t *target; /* the job's object, or the object to fill */
	json_t *list;   /* where a listing's entries go */
};

static void admin_status_reply_cb(const struct zk_reply *, void *);

static void admin_view_finish(struct admin_view *);

/* Send one read. */
static void
admin_ask(struct admin_view *v, enum admin_role role, const char *path, json_t *target,
          json_t *list)
{
	struct admin_req *r = xcalloc(1, sizeof *r);

	r->v = v;
	r->role = role;
	r->target = target;
	r->list = list;
	v->pending++;
	if (role == ADMIN_RECORD || role == ADMIN_STATE || role == ADMIN_NODE_DATA)
		zk_get(v->zk, path, NULL, admin_status_reply_cb, r);
	else
		zk_children(v->zk, path, NULL, admin_status_reply_cb, r);
}

/* One answer less to wait for; the view is complete when none is left. */
static void
admin_view_settle(struct admin_view *v)
{
	if (--v->pending == 0)
		admin_view_finish(v);
}

/* Ask for the lock folders of a job object (its lock_path and leases are set). */
static void
admin_ask_job(struct admin_view *v, json_t *job)
{
	const char *name = json_string_value(json_object_get(job, "name"));
	const char *path = json_string_value(json_object_get(job, "lock_path"));
	int leases = (int)json_integer_value(json_object_get(job, "leases"));
	char *p, *rec;

	json_object_set_new(job, "holders", json_array());
	json_object_set_new(job, "waiters", json_array());
	if (leases == 1)
		admin_ask(v, ADMIN_HOLDERS, path, job, json_object_get(job, "holders"));
	else {
		p = layout_semaphore_leases(path);
		admin_ask(v, ADMIN_HOLDERS, p, job, json_object_get(job, "holders"));
		free(p);
		p = layout_semaphore_locks(path);
		admin_ask(v, ADMIN_WAITERS, p, job, json_object_get(job, "waiters"));
		free(p);
	}
	if (name == NULL)
		return;
	rec = layout_job_record(v->o.root, name);
	admin_ask(v, ADMIN_RECORD, rec, job, NULL);
	p = layout_job_state(v->o.root, name);
	admin_ask(v, ADMIN_STATE, p, job, NULL);
	free(p);
	p = layout_job_runs(v->o.root, name);
	json_object_set_new(job, "runs", json_array());
	admin_ask(v, ADMIN_RUNS, p, job, json_object_get(job, "runs"));
	free(p);
	free(rec);
}

/* A job object for the output. */
static json_t *
admin_job_object(struct admin_view *v, const char *name, const char *lock_path, int leases)
{
	json_t *job = json_object();

	if (name != NULL)
		json_object_set_new(job, "name", json_string(name));
	json_object_set_new(job, "lock_path", json_string(lock_path));
	json_object_set_new(job, "leases", json_integer(leases));
	json_array_append_new(json_object_get(v->out, "jobs"), job);
	return job;
}

/*
 * Whether name is a lock node as Curator's recipes name them: protected, then base and the
 * server's sequence ("_c_<uuid>-lock-0000000042"). Anything else in a lock folder is a
 * stranger: Curator orders it among the contenders all the same.
 */
static int
admin_lock_name(const char *name, const char *base)
{
	size_t plen = strlen(ZNODE_PROTECTED_PREFIX), i;
	const char *uuid = name + plen;
	int64_t seq;

	if (strncmp(name, ZNODE_PROTECTED_PREFIX, plen) != 0 || strlen(uuid) < ZNODE_UUID_LEN + 1)
		return 0;
	for (i = 0; i < ZNODE_UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (uuid[i] != '-')
				return 0;
		} else if (!isxdigit((unsigned char)uuid[i]))
			return 0;
	}
	if (uuid[ZNODE_UUID_LEN] != '-' ||
	    strncmp(uuid + ZNODE_UUID_LEN + 1, base, strlen(base)) != 0)
		return 0;
	return znode_sequence(uuid + ZNODE_UUID_LEN + 1, base, &seq) == 0;
}

/* qsort: names in byte order. */
static int
admin_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Entries of a listing, sorted in queue order (or by name), each with its data asked for: the last
 * keep_last of them, or else the first max_list (when set), the number left out then
 * recorded in owner's omitted key.
 */
static void
admin_list(struct admin_view *v, const struct zk_reply *reply, json_t *list, const char *base,
           size_t keep_last, int locks, json_t *owner, const char *omitted)
{
	char **names;
	size_t i, n = (size_t)reply->nchildren, from = 0;
	json_t *entry;
	char *path;

	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++)
		names[i] = reply->children[i];
	if (base != NULL)
		znode_sort(names, n, base);
	else
		qsort(names, n, sizeof *names, admin_name_cmp);
	if (keep_last > 0 && n > keep_last)
		from = n - keep_last;
	else if (keep_last == 0 && v->o.max_list > 0 && n > v->o.max_list && owner != NULL) {
		json_object_set_new(owner, omitted, json_integer((json_int_t)(n - v->o.max_list)));
		n = v->o.max_list;
	}
	for (i = from; i < n; i++) {
		entry = json_object();
		json_object_set_new(entry, "znode", json_string(names[i]));
		if (locks && !admin_lock_name(names[i], base))
			json_object_set_new(entry, "stranger", json_string("name"));
		json_array_append_new(list, entry);
		path = znode_join(reply->path, names[i]);
		admin_ask(v, ADMIN_NODE_DATA, path, entry, NULL);
		free(path);
	}
	free(names);
}

/* A job record's pause (`leasekeeper pause`): "paused": {"by", "since", "stop_running"}. */
static void
admin_status_paused(json_t *job, const char *value, int len)
{
	json_t *rec, *p, *o;
	int stop;

	if (!ctlrec_paused(value, len, &stop))
		return;
	rec = json_loadb(value, (size_t)len, 0, NULL);
	p = json_object_get(rec, "paused");
	o = json_object();
	if (json_is_string(json_object_get(p, "by")))
		json_object_set(o, "by", json_object_get(p, "by"));
	if (json_is_string(json_object_get(p, "since")))
		json_object_set(o, "since", json_object_get(p, "since"));
	json_object_set_new(o, "stop_running", json_boolean(stop));
	json_object_set_new(job, "paused", o);
	json_decref(rec);
}

/* One answer of status. */
static void
admin_status_reply_cb(const struct zk_reply *reply, void *arg)
{
	struct admin_req *r = arg;
	struct admin_view *v = r->v;
	const char *base;
	char *lock_path;
	json_t *job;
	json_t *state;
	int i, n;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		json_array_append_new(
		    json_object_get(v->out, "errors"),
		    json_sprintf("cannot read %s: %s", reply->path, zerror(reply->rc)));
	}
	if (reply->rc == ZOK) {
		switch (r->role) {
		case ADMIN_WORKERS:
			admin_list(v, reply, r->list, NULL, 0, 0, v->out, "workers_omitted");
			break;
		case ADMIN_JOBS:
			n = reply->nchildren;
			if (v->o.max_list > 0 && (size_t)n > v->o.max_list) {
				json_object_set_new(v->out, "jobs_omitted",
				                    json_integer(n - (json_int_t)v->o.max_list));
				n = (int)v->o.max_list;
			}
			for (i = 0; i < n; i++) {
				/* No configuration: the lock is named for the job, N from its record. */
				job = admin_job_object(v, reply->children[i], "", 1);
				json_object_set_new(job, "_discover", json_true());
				lock_path = layout_job_record(v->o.root, reply->children[i]);
				admin_ask(v, ADMIN_RECORD, lock_path, job, NULL);
				free(lock_path);
			}
			break;
		case ADMIN_RECORD:
			n = jobrec_parse_leases(reply->value, reply->value_len);
			if (n > 0)
				json_object_set_new(r->target, "cluster_leases", json_integer(n));
			else if (n < 0)
				json_object_set_new(r->target, "record_corrupt", json_true());
			admin_status_paused(r->target, reply->value, reply->value_len);
			if (json_is_true(json_object_get(r->target, "_discover"))) {
				/* Where the lock lives is in the record; else it is named for the job. */
				json_t *rec = json_loadb(reply->value != NULL ? reply->value : "",
				                         (size_t)reply->value_len, 0, NULL);
				const char *lock = json_string_value(json_object_get(rec, "lock"));

				json_object_del(r->target, "_discover");
				if (n < 1)
					n = 1;
				json_object_set_new(r->target, "leases", json_integer(n));
				lock_path = layout_lock_path(
				    v->o.root,
				    json_string_value(json_object_get(r->target, "name")), lock, n);
				json_object_set_new(r->target, "lock_path", json_string(lock_path));
				free(lock_path);
				if (rec != NULL)
					json_decref(rec);
				admin_ask_job(v, r->target);
			}
			break;
		case ADMIN_STATE:
			state = json_object();
			nodedata_merge(state, reply->value, reply->value_len);
			/* A claim no sane clock makes: workers override it (tickstate.c). */
			if (json_integer_value(json_object_get(state, "tick")) >
			    tickstate_horizon(NULL, (int64_t)(clock_wall_ms() / 1000)))
				json_object_set_new(state, "corrupt", json_true());
			json_object_set_new(r->target, "state", state);
			break;
		case ADMIN_RUNS:
			admin_list(v, reply, r->list, "run-", v->o.runs, 0, NULL, NULL);
			break;
		case ADMIN_HOLDERS:
		case ADMIN_WAITERS:
			/* A semaphore's holders are its <lock>/leases (admin_ask_job). */
			base = r->role == ADMIN_HOLDERS &&
			               json_integer_value(json_object_get(r->target, "leases")) > 1
			           ? "lease-"
			           : "lock-";
			admin_list(v, reply, r->list, base, 0, 1, r->target,
			           r->role == ADMIN_HOLDERS ? "holders_omitted"
			                                    : "waiters_omitted");
			break;
		case ADMIN_NODE_DATA:
			nodedata_merge(r->target, reply->value, reply->value_len);
			/* As the logs print it: 64 bits are not safe in JSON. "0x0": persistent. */
			if (reply->stat != NULL) {
				char session[24];

				snprintf(session, sizeof session, "0x%llx",
				         (unsigned long long)reply->stat->ephemeralOwner);
				json_object_set_new(r->target, "session", json_string(session));
			}
			break;
		case ADMIN_ROOT:
			for (i = 0; i < reply->nchildren; i++)
				if (strcmp(reply->children[i], "workers") == 0 ||
				    strcmp(reply->children[i], "jobs") == 0)
					break;
			if (i == reply->nchildren)
				json_object_set_new(r->target, "_no_cluster", json_true());
			break;
		}
	} else if (r->role == ADMIN_ROOT) {
		json_object_set_new(r->target, "_no_cluster", json_true());
	} else if (r->role == ADMIN_RECORD && json_is_true(json_object_get(r->target, "_discover")))
		json_object_del(r->target, "_discover");
	free(r);
	admin_view_settle(v);
}

/*
 * Read the whole cluster on zk, whose session is up: every read at once, and done(view, arg)
 * when the last answer is in (the caller owns the view). A read that fails leaves its part
 * out and a line in the view's "errors"; closing the session completes every read.
 */
void
admin_view_start(struct zk *zk, const struct admin_view_opts *o, void (*done)(json_t *, void *),
                 void *arg)
{
	struct admin_view *v = xcalloc(1, sizeof *v);
	const struct config *cfg = o->cfg;
	json_t *job;
	char *path, next[40];
	int64_t t;
	size_t i;

	v->zk = zk;
	v->o = *o;
	v->done = done;
	v->arg = arg;
	v->out = json_pack("{s:s, s:[], s:[], s:[], s:[]}", "root", o->root, "workers", "jobs",
	                   "warnings", "errors");
	v->pending++;             /* held until every first-level read is sent */
	if (o->lock_path == NULL) /* a lock of its own may live anywhere */
		admin_ask(v, ADMIN_ROOT, o->root, v->out, NULL);
	path = layout_workers(o->root);
	admin_ask(v, ADMIN_WORKERS, path, NULL, json_object_get(v->out, "workers"));
	free(path);
	if (o->lock_path != NULL) {
		job = admin_job_object(v, NULL, o->lock_path, o->leases);
		admin_ask_job(v, job);
	} else if (cfg != NULL) {
		for (i = 0; i < cfg->njobs; i++) {
			job = admin_job_object(v, cfg->jobs_list[i]->name,
			                       cfg->jobs_list[i]->lock_znode,
			                       cfg->jobs_list[i]->leases);
			json_object_set_new(job, "_configured", json_true());
			json_object_set_new(job, "schedule",
			                    json_string(cfg->jobs_list[i]->schedule));
			t = schedule_next(cfg->jobs_list[i]->sched,
			                  (int64_t)(clock_wall_ms() / 1000));
			if (t >= 0) {
				clock_iso8601((uint64_t)t * 1000, next, sizeof next);
				json_object_set_new(job, "next_tick", json_string(next));
			}
			admin_ask_job(v, job);
		}
	} else {
		path = layout_jobs(o->root);
		admin_ask(v, ADMIN_JOBS, path, v->out, NULL);
		free(path);
	}
	admin_view_settle(v);
}

/* Print one holder or waiter line. */
static void
admin_print_node(const char *what, json_t *n)
{
	const char *node = json_string_value(json_object_get(n, "node"));
	const char *job = json_string_value(json_object_get(n, "job"));
	const char *since = json_string_value(json_object_get(n, "since"));
	const char *held = json_string_value(json_object_get(n, "held_since"));
	const char *data = json_string_value(json_object_get(n, "data"));
	json_t *pid = json_object_get(n, "pid");

	/*
	 * since: when it joined the queue; held_since: when it got the lease, written by a
	 * holder that waited a second or more (one that got it at once holds since "since").
	 */
	if (node != NULL && since != NULL && strcmp(what, "holder") == 0)
		printf("    %-8s %-16s pid %-8lld job %-16s queued since %s, holder since %s\n",
		       what, node, (long long)json_integer_value(pid), job != NULL ? job : "?",
		       since, held != NULL ? held : since);
	else if (node != NULL)
		printf("    %-8s %-16s pid %-8lld job %-16s queued since %s\n", what, node,
		       (long long)json_integer_value(pid), job != NULL ? job : "?",
		       since != NULL ? since : "?");
	else
		printf("    %-8s (another client: %s) %s\n", what, data != NULL ? data : "no data",
		       json_string_value(json_object_get(n, "znode")));
}

/* A string's escaped copy. */
static json_t *
admin_escaped(json_t *str)
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
admin_status_escape(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item) {
			if (json_is_string(item))
				json_object_set_new(v, key, admin_escaped(item));
			else
				admin_status_escape(item);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (json_is_string(item))
				json_array_set_new(v, i, admin_escaped(item));
			else
				admin_status_escape(item);
		}
	}
}

/*
 * Where each job can run: the live workers whose registration lists it, and those that say
 * why they do not carry it ("excluded"); a job no live worker lists is a warning.
 */
static void
admin_status_placement(json_t *out)
{
	json_t *job, *w, *name, *why, *on, *excluded, *workers = json_object_get(out, "workers");
	const char *jn, *wn;
	size_t i, j, k;
	char *text;
	int configured;

	json_array_foreach(json_object_get(out, "jobs"), i, job) {
		if ((jn = json_string_value(json_object_get(job, "name"))) == NULL)
			continue;
		on = json_array();
		excluded = json_array();
		json_array_foreach(workers, j, w) {
			if ((wn = json_string_value(json_object_get(w, "znode"))) == NULL)
				continue;
			json_array_foreach(json_object_get(w, "jobs"), k, name) {
				if (json_is_string(name) &&
				    strcmp(json_string_value(name), jn) == 0) {
					json_array_append_new(on, json_string(wn));
					break;
				}
			}
			why = json_object_get(json_object_get(w, "excluded"), jn);
			if (json_is_string(why))
				json_array_append_new(
				    excluded, json_pack("{s:s, s:O}", "worker", wn, "why", why));
		}
		json_object_set_new(job, "runnable_workers", on);
		json_object_set_new(job, "excluded_on", excluded);
		/*
		 * Warned of: a job of the configuration given, or one that a live worker has in
		 * its files but excludes. A job only the records know (an exec lock, a job
		 * removed from every worker: see forget) is no placement problem.
		 */
		configured = json_is_true(json_object_get(job, "_configured"));
		json_object_del(job, "_configured");
		if (json_array_size(on) == 0 && (configured || json_array_size(excluded) > 0)) {
			json_object_set_new(job, "unrunnable", json_true());
			xasprintf(&text, "job %s: no live worker can run it", jn);
			json_array_append_new(json_object_get(out, "warnings"), json_string(text));
			free(text);
		}
	}
}

/* Print where a job can run: "runs on a, b", or NO live worker and why each refuses. */
static void
admin_status_print_placement(json_t *job)
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
admin_status_clock(const json_t *w)
{
	int64_t off, err;

	if (nodedata_clock_offset(w, &off, &err) != 0)
		return;
	printf("  clock %+.1f s (+-%.3f)%s", (double)off / 1000.0, (double)err / 1000.0,
	       off - err > 1000 || off + err < -1000 ? " OFF: check its time synchronisation" : "");
}

/* The human view of status. */
static void
admin_status_print(json_t *out)
{
	json_t *workers = json_object_get(out, "workers"), *jobs = json_object_get(out, "jobs");
	json_t *w, *job, *n, *state, *runs;
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
		if (json_is_true(json_object_get(w, "drained")))
			printf("  DRAINED (%lld lease(s) still held)",
			       (long long)json_integer_value(json_object_get(w, "leases_held")));
		admin_status_clock(w);
		printf("\n");
	}
	printf("jobs (%zu):\n", json_array_size(jobs));
	json_array_foreach(jobs, i, job) {
		int leases = (int)json_integer_value(json_object_get(job, "leases"));
		json_t *cl = json_object_get(job, "cluster_leases");

		printf("  %s  %s %s, %d lease%s",
		       json_string_value(json_object_get(job, "name")) ?: "-",
		       leases == 1 ? "mutex" : "semaphore",
		       json_string_value(json_object_get(job, "lock_path")), leases,
		       leases == 1 ? "" : "s");
		if (cl != NULL && json_integer_value(cl) != leases)
			printf("  CONFLICT: the cluster agreed on %lld",
			       (long long)json_integer_value(cl));
		if (json_is_true(json_object_get(job, "record_corrupt")))
			printf("  CORRUPT: the job record holds no valid lease count (1 to %d); "
			       "workers do not contend until `leasekeeper set-leases` fixes it",
			       LK_MAX_LEASES);
		printf("\n");
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
		if (json_object_get(job, "schedule") != NULL)
			printf("    schedule %s%s%s\n",
			       json_string_value(json_object_get(job, "schedule")),
			       json_object_get(job, "next_tick") != NULL ? ", next tick " : "",
			       json_string_value(json_object_get(job, "next_tick")) ?: "");
		if (json_object_get(job, "runnable_workers") != NULL)
			admin_status_print_placement(job);
		json_array_foreach(json_object_get(job, "holders"), j, n)
			admin_print_node(leases == 1 && j > 0 ? "waiting" : "holder", n);
		json_array_foreach(json_object_get(job, "waiters"), j, n)
			admin_print_node("waiting", n);
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
		runs = json_object_get(job, "runs");
		if (json_array_size(runs) > 0)
			printf("    last runs:\n");
		json_array_foreach(runs, j, n) {
			json_t *st = json_object_get(n, "status"),
			       *sig = json_object_get(n, "signal");

			printf("      %s  %-10s %-16s",
			       json_string_value(json_object_get(n, "end")) ?: "-",
			       json_string_value(json_object_get(n, "reason")) ?: "?",
			       json_string_value(json_object_get(n, "node")) ?: "?");
			if (st != NULL)
				printf(" exit %lld", (long long)json_integer_value(st));
			if (sig != NULL)
				printf(" signal %lld", (long long)json_integer_value(sig));
			if (json_is_integer(json_object_get(n, "cpu_usec")))
				printf(", cpu %.3f s",
				       (double)json_integer_value(json_object_get(n, "cpu_usec")) /
				           1e6);
			if (json_is_integer(json_object_get(n, "memory_peak")))
				printf(
				    ", peak memory %.1f MiB",
				    (double)json_integer_value(json_object_get(n, "memory_peak")) /
				        (1024.0 * 1024.0));
			if (json_string_value(json_object_get(n, "error")) != NULL)
				printf(": %s", json_string_value(json_object_get(n, "error")));
			printf("\n");
		}
	}
}

/* Move the strangers of a holders or waiters list into strangers, each saying why. */
static void
admin_status_strangers(json_t *list, json_t *strangers)
{
	json_t *n, *session;
	size_t i = 0;
	int badname, persistent;

	while (i < json_array_size(list)) {
		n = json_array_get(list, i);
		badname = json_object_get(n, "stranger") != NULL;
		session = json_object_get(n, "session");
		persistent =
		    json_is_string(session) && strcmp(json_string_value(session), "0x0") == 0;
		if (!badname && !persistent) {
			i++;
			continue;
		}
		json_object_set_new(n, "stranger",
		                    json_string(badname && persistent
		                                    ? "persistent, not a lock name"
		                                : persistent ? "persistent"
		                                             : "not a lock name"));
		json_array_append(strangers, n);
		json_array_remove(list, i);
	}
}

/*
 * Strangers in a lock folder: nodes not named as Curator's recipes name lock nodes, or
 * not ephemeral. Curator (and leasekeeper) order them among the contenders all the same,
 * so one that sorts first is a holder no one can end: they are listed apart, with why.
 */
static void
admin_status_flag_strangers(json_t *out)
{
	json_t *job, *strangers, *warnings = json_object_get(out, "warnings");
	size_t i;
	char *text;

	json_array_foreach(json_object_get(out, "jobs"), i, job) {
		strangers = json_array();
		admin_status_strangers(json_object_get(job, "holders"), strangers);
		admin_status_strangers(json_object_get(job, "waiters"), strangers);
		if (json_array_size(strangers) > 0) {
			xasprintf(
			    &text,
			    "%zu stranger node%s in the lock folder %s: not ephemeral lock "
			    "nodes named as Curator names them (_c_<uuid>-lock-<sequence>); "
			    "Curator's recipe orders them among the contenders, so one that "
			    "sorts first is a holder that never lets go and every later "
			    "contender waits for ever: find out who created them, then delete "
			    "them",
			    json_array_size(strangers), json_array_size(strangers) == 1 ? "" : "s",
			    json_string_value(json_object_get(job, "lock_path")));
			json_object_set_new(job, "warning", json_string(text));
			json_array_append_new(warnings, json_string(text));
			free(text);
		}
		json_object_set_new(job, "strangers", strangers);
	}
}

/*
 * Sort listings into holders and waiters. A mutex folder lists both: index 0 holds. A
 * semaphore's leases folder also holds the lease node of the contender that holds the
 * locks mutex and is still counting: beyond the first N it is waiting, and it is the
 * same contender as the head of the locks queue, which is then not listed twice.
 */
static void
admin_status_split(json_t *out)
{
	json_t *job, *holders, *waiters, *extra;
	size_t i, n;

	json_array_foreach(json_object_get(out, "jobs"), i, job) {
		n = (size_t)json_integer_value(json_object_get(job, "leases"));
		holders = json_object_get(job, "holders");
		waiters = json_object_get(job, "waiters");
		if (n == 1) {
			while (json_array_size(holders) > 1) {
				json_array_append(waiters, json_array_get(holders, 1));
				json_array_remove(holders, 1);
			}
			continue;
		}
		if (json_array_size(holders) <= n)
			continue;
		extra = json_array();
		while (json_array_size(holders) > n) {
			json_array_append(extra, json_array_get(holders, n));
			json_array_remove(holders, n);
		}
		if (json_array_size(waiters) > 0)
			json_array_remove(waiters, 0);
		json_array_extend(extra, waiters);
		json_object_set_new(job, "waiters", extra);
	}
}

/* Every answer is in: sort the lock folders out and hand the view over. */
static void
admin_view_finish(struct admin_view *v)
{
	admin_status_flag_strangers(v->out);
	admin_status_split(v->out);
	admin_status_placement(v->out);
	v->done(v->out, v->arg);
	free(v);
}

/* status' view is in: keep it, and stop the loop. */
static void
admin_status_done(json_t *view, void *arg)
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
admin_status_ready(struct admin *a)
{
	struct admin_view_opts *o = a->ctx;

	o->root = a->root;
	o->cfg = a->cfg;
	admin_view_start(a->zk, o, admin_status_done, a);
}

/* `status`. */
int
admin_status(int argc, char **argv)
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
	struct admin_opts o = {NULL, NULL, NULL, NULL};
	struct admin_view_opts view = {0};
	const char *lock_path = NULL;
	char *cause, *text;
	int ch, as_json = 0, rc, leases = 0; /* 0: not given */

	memset(&a, 0, sizeof a);
	while ((ch = getopt_long(argc, argv, "c:z:r:jp:l:A:h", longopts, NULL)) != -1) {
		if (admin_option(ch, optarg, &o))
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
			printf("usage: leasekeeper status [-c FILE | --zk HOSTS] [--root PATH] "
			       "[--auth-file FILE] [--json] [--lock-path PATH [--leases N]]\n");
			return 0;
		default:
			fprintf(stderr, "usage: leasekeeper status [-c FILE | --zk HOSTS] [--root "
			                "PATH] [--auth-file FILE] [--json] [--lock-path PATH "
			                "[--leases N]]\n");
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
		        "leasekeeper status: unexpected argument \"%s\"\nusage: leasekeeper status "
		        "[-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE] [--json] "
		        "[--lock-path PATH [--leases N]]\n",
		        argv[optind]);
		return EXIT_USAGE;
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
	view.runs = ADMIN_RUNS_SHOWN;
	a.ctx = &view;
	a.ready = admin_status_ready;
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
			text = json_dumps(a.view, JSON_INDENT(2));
			printf("%s\n", text);
			free(text);
		} else {
			admin_status_escape(a.view);
			admin_status_print(a.view);
		}
	}
	if (a.view != NULL)
		json_decref(a.view);
	config_free(a.cfg);
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* set-leases                                                                              */
/* ------------------------------------------------------------------------------------- */

struct admin_setleases {
	const char *job;
	int leases;
	int create; /* --create: record a job the cluster does not know yet */
	char *path;
};

static void admin_setleases_read(struct admin *);

/*
 * A job's lock lives under <root>/mutex for one lease and <root>/semaphore for more: when
 * the count crosses between the two, the recorded lock moves along (a lock_path outside
 * those folders is the operator's and stays).
 */
static void
admin_setleases_move_lock(struct admin *a, json_t *record, int leases)
{
	const char *lock = json_string_value(json_object_get(record, "lock"));
	char *from, *prefix, *moved;

	if (lock == NULL)
		return;
	from = layout_lock_dir(a->root, leases == 1 ? 2 : 1);
	prefix = znode_join(from, "");
	free(from);
	if (strncmp(lock, prefix, strlen(prefix)) == 0) {
		moved = layout_lock_path(a->root, lock + strlen(prefix), NULL, leases);
		printf("its lock moves to %s\n", moved);
		json_object_set_new(record, "lock", json_string(moved));
		free(moved);
	}
	free(prefix);
}

/* The write landed, or lost a race (read again), or failed. */
static void
admin_setleases_write_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct admin_setleases *s = a->ctx;

	if (reply->rc == ZBADVERSION || reply->rc == ZNODEEXISTS) {
		admin_setleases_read(a);
		return;
	}
	if (reply->rc != ZOK) {
		fprintf(stderr, "leasekeeper set-leases: cannot write %s: %s\n", s->path,
		        zerror(reply->rc));
		admin_done(a, EXIT_UNAVAILABLE);
		return;
	}
	admin_done(a, 0);
}

/* The record as it is: change its count, keeping whatever else it holds. */
static void
admin_setleases_read_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct admin_setleases *s = a->ctx;
	json_t *o = NULL;
	char *data;
	int old;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		fprintf(stderr, "leasekeeper set-leases: cannot read %s: %s\n", s->path,
		        zerror(reply->rc));
		admin_done(a, EXIT_UNAVAILABLE);
		return;
	}
	if (reply->rc == ZNONODE && !s->create &&
	    (a->cfg == NULL || config_find_job(a->cfg, s->job) == NULL)) {
		fprintf(stderr,
		        "leasekeeper set-leases: the cluster knows no job \"%s\" (%s does not "
		        "exist): check the name, or pass --create to record it now\n",
		        s->job, s->path);
		admin_done(a, 1);
		return;
	}
	if (reply->rc == ZOK && reply->value != NULL)
		o = json_loadb(reply->value, (size_t)reply->value_len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		o = json_object();
	}
	old = jobrec_parse_leases(reply->value, reply->value_len);
	json_object_set_new(o, "leases", json_integer(s->leases));
	admin_setleases_move_lock(a, o, s->leases);
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (old > 0)
		printf("job %s: leases %d (was %d)\n", s->job, s->leases, old);
	else
		printf("job %s: leases %d\n", s->job, s->leases);
	if (reply->rc == ZNONODE)
		zk_create_node(a->zk, s->path, data, (int)strlen(data), ZOO_PERSISTENT,
		               admin_setleases_write_cb, a);
	else
		zk_set(a->zk, s->path, data, (int)strlen(data), reply->stat->version,
		       admin_setleases_write_cb, a);
	free(data);
}

static void
admin_setleases_read(struct admin *a)
{
	struct admin_setleases *s = a->ctx;

	zk_get(a->zk, s->path, NULL, admin_setleases_read_cb, a);
}

/* The session is up: make sure the parents exist, then read and write. */
static void
admin_setleases_ready(struct admin *a)
{
	char *path = layout_jobs(a->root);

	zk_create_path(a->zk, path, ZOO_PERSISTENT, NULL, NULL);
	free(path);
	admin_setleases_read(a);
}

/* `set-leases JOB N`. */
int
admin_set_leases(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"create", no_argument, NULL, 'C'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static const char *usage =
	    "usage: leasekeeper set-leases [-c FILE | --zk HOSTS] [--root PATH] "
	    "[--auth-file FILE] [--create] JOB N\n";
	struct admin a;
	struct admin_opts o = {NULL, NULL, NULL, NULL};
	struct admin_setleases s;
	char *cause;
	int ch, rc;

	memset(&a, 0, sizeof a);
	memset(&s, 0, sizeof s);
	/* The digits: "-1" is a count that is out of range, not an unknown option. */
	while ((ch = getopt_long(argc, argv, "c:z:r:A:Ch0123456789", longopts, NULL)) != -1) {
		if (admin_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'C':
			s.create = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7':
		case '8':
		case '9':
			admin_count("set-leases", "N", admin_negative(argc, argv), &s.leases);
			return EXIT_USAGE;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind + 2 != argc) {
		if (optind + 2 > argc)
			fprintf(stderr, "leasekeeper set-leases: give a job name and a count\n");
		else
			fprintf(stderr, "leasekeeper set-leases: unexpected argument \"%s\"\n",
			        argv[optind + 2]);
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	s.job = argv[optind];
	if (admin_count("set-leases", "N", argv[optind + 1], &s.leases) != 0)
		return EXIT_USAGE;
	if (!znode_valid_name(s.job, &cause)) {
		fprintf(stderr, "leasekeeper set-leases: bad job name: %s\n", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if ((rc = admin_setup(&a, &o, "set-leases")) != 0)
		return rc;
	s.path = layout_job_record(a.root, s.job);
	a.ctx = &s;
	a.ready = admin_setleases_ready;
	rc = admin_run(&a, 10000);
	free(s.path);
	config_free(a.cfg);
	return rc;
}

/* ------------------------------------------------------------------------------------- */
/* logs                                                                                    */
/* ------------------------------------------------------------------------------------- */

#define ADMIN_LOGS_MAX_LAST 1000 /* --last at most */

/* One run record asked for. */
struct admin_logs_req {
	struct admin *a;
	json_t *target; /* its entry in the list printed */
};

/* One answer less to wait for; print when none is left. */
static void
admin_logs_settle(struct admin *a)
{
	if (--a->pending == 0)
		admin_done(a, a->exit_code);
}

struct admin_logs {
	const char *job;
	int64_t run; /* --run ID, -1: the last ones */
	int last;    /* --last N */
	json_t *runs;
};

/* One run record read: its fields merged into its entry (bounded, like status). */
static void
admin_logs_get_cb(const struct zk_reply *reply, void *arg)
{
	struct admin_logs_req *r = arg;
	struct admin *a = r->a;

	json_t *run = json_incref(json_object_get(r->target, "run"));

	if (reply->rc == ZOK) {
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
	admin_logs_settle(a);
}

/* The job's run records, oldest first: read the ones asked for. */
static void
admin_logs_list_cb(const struct zk_reply *reply, void *arg)
{
	struct admin *a = arg;
	struct admin_logs *l = a->ctx;
	struct admin_logs_req *r;
	char **names, *path;
	size_t i, n, from = 0;
	int64_t seq;
	json_t *entry;

	if (reply->rc == ZNONODE) {
		fprintf(stderr, "leasekeeper logs: no run of %s is recorded under %s\n", l->job,
		        a->root);
		a->exit_code = 1;
		admin_logs_settle(a);
		return;
	}
	if (reply->rc != ZOK) {
		fprintf(stderr, "leasekeeper logs: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
		admin_logs_settle(a);
		return;
	}
	n = (size_t)reply->nchildren;
	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++)
		names[i] = reply->children[i];
	znode_sort(names, n, "run-");
	if (l->run < 0 && n > (size_t)l->last)
		from = n - (size_t)l->last;
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
		zk_get(a->zk, path, NULL, admin_logs_get_cb, r);
		free(path);
	}
	free(names);
	if (json_array_size(l->runs) == 0) {
		if (l->run >= 0)
			fprintf(
			    stderr,
			    "leasekeeper logs: no run %lld of %s (it may be older than the "
			    "job's history): `leasekeeper logs %s --last 20` lists the runs kept\n",
			    (long long)l->run, l->job, l->job);
		else
			fprintf(stderr, "leasekeeper logs: no run of %s is recorded under %s\n",
			        l->job, a->root);
		a->exit_code = 1;
	}
	admin_logs_settle(a);
}

static void
admin_logs_ready(struct admin *a)
{
	struct admin_logs *l = a->ctx;
	char *path = layout_job_runs(a->root, l->job);

	a->pending++;
	zk_children(a->zk, path, NULL, admin_logs_list_cb, a);
	free(path);
}

/* A field of an untrusted record for a line: its text escaped, or "?" (caller frees). */
static char *
admin_logs_field(json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));

	return utf8_escape(s != NULL ? s : "?");
}

/* The human view: one header line per run, then its output, every line escaped. */
static void
admin_logs_print(json_t *runs)
{
	json_t *rec, *st, *sig, *tick, *out;
	char *reason, *node, *start, *end, *line, *text, *p, *nl, when[40];
	size_t i;

	json_array_foreach(runs, i, rec) {
		reason = admin_logs_field(rec, "reason");
		node = admin_logs_field(rec, "node");
		start = admin_logs_field(rec, "start");
		end = admin_logs_field(rec, "end");
		st = json_object_get(rec, "status");
		sig = json_object_get(rec, "signal");
		tick = json_object_get(rec, "tick");
		printf("%s=== run %lld: %s", i > 0 ? "\n" : "",
		       (long long)json_integer_value(json_object_get(rec, "run")), reason);
		if (json_is_integer(st))
			printf(", exit status %lld", (long long)json_integer_value(st));
		if (json_is_integer(sig))
			printf(", signal %lld", (long long)json_integer_value(sig));
		printf(", node %s", node);
		if (json_is_integer(tick) && json_integer_value(tick) >= 0) {
			clock_iso8601((uint64_t)json_integer_value(tick) * 1000, when, sizeof when);
			printf(", tick %s", when);
		}
		printf(", %s to %s", start, end);
		if (json_is_integer(json_object_get(rec, "fence")))
			printf(", fence %lld",
			       (long long)json_integer_value(json_object_get(rec, "fence")));
		printf("\n");
		if (json_string_value(json_object_get(rec, "error")) != NULL) {
			line = admin_logs_field(rec, "error");
			printf("error: %s\n", line);
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
		free(reason);
		free(node);
		free(start);
		free(end);
	}
}

#define ADMIN_LOGS_USAGE                                                                           \
	"usage: leasekeeper logs [-c FILE | --zk HOSTS] [--root PATH] [--auth-file FILE] "         \
	"[--json] JOB [--run ID | --last N]\n"

/* `leasekeeper logs JOB`: the output's end of a job's recent runs, from its run records. */
int
admin_logs(int argc, char **argv)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"zk", required_argument, NULL, 'z'},
	                                         {"root", required_argument, NULL, 'r'},
	                                         {"auth-file", required_argument, NULL, 'A'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"run", required_argument, NULL, 'R'},
	                                         {"last", required_argument, NULL, 'n'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	struct admin a;
	struct admin_opts o = {NULL, NULL, NULL, NULL};
	struct admin_logs l = {NULL, -1, 1, NULL};
	char *end, *text, *cause;
	int ch, as_json = 0, rc, have_last = 0;
	long long v;

	memset(&a, 0, sizeof a);
	while ((ch = getopt_long(argc, argv, "c:z:r:A:jR:n:h", longopts, NULL)) != -1) {
		if (admin_option(ch, optarg, &o))
			continue;
		switch (ch) {
		case 'j':
			as_json = 1;
			break;
		case 'R':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 0) {
				fprintf(
				    stderr,
				    "leasekeeper logs: --run takes a run's number as `logs` and "
				    "`status --json` show it, not \"%s\"\n",
				    optarg);
				return EXIT_USAGE;
			}
			l.run = v;
			break;
		case 'n':
			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' || v < 1 ||
			    v > ADMIN_LOGS_MAX_LAST) {
				fprintf(
				    stderr,
				    "leasekeeper logs: --last must be a number from 1 to %d, not "
				    "\"%s\"\n",
				    ADMIN_LOGS_MAX_LAST, optarg);
				return EXIT_USAGE;
			}
			l.last = (int)v;
			have_last = 1;
			break;
		case 'h':
			printf(ADMIN_LOGS_USAGE);
			return 0;
		default:
			fprintf(stderr, ADMIN_LOGS_USAGE);
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "leasekeeper logs: %s\n" ADMIN_LOGS_USAGE,
		        optind == argc ? "name the job" : "one job at a time");
		return EXIT_USAGE;
	}
	if (have_last && l.run >= 0) {
		fprintf(stderr, "leasekeeper logs: --run or --last, not both\n");
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
	l.runs = json_array();
	a.ctx = &l;
	a.ready = admin_logs_ready;
	rc = admin_run(&a, 10000);
	if (rc == 0) {
		if (as_json) {
			text = json_dumps(l.runs, JSON_INDENT(2));
			printf("%s\n", text);
			free(text);
		} else
			admin_logs_print(l.runs);
	}
	json_decref(l.runs);
	config_free(a.cfg);
	return rc;
}
