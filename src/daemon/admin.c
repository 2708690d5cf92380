/* Runs in: the main process. */
/*
 * admin.c: one-shot commands that read or change the cluster: status, set-leases.
 *
 * Both open their own session, do their reads or writes asynchronously on a loop of
 * their own, and close the session. status fans out every read at once and prints when
 * the last answer is in: for each job, the agreed lease count, the holders and the
 * waiters in queue order (who, pid, since, from the data of their nodes), the claimed
 * tick, the next tick and the last runs; and the live workers.
 */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

#define ADMIN_CONNECT_TIMEOUT_S 15
#define ADMIN_RUNS_SHOWN        5

/* Stop the loop with an exit status. */
void
admin_done(struct admin *a, int code)
{
	a->exit_code = code;
	event_base_loopbreak(a->base);
}

/* One answer less to wait for; print when none is left. */
static void
admin_settle(struct admin *a)
{
	if (--a->pending == 0)
		admin_done(a, a->exit_code);
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
	event_free(a->timer);
	event_base_free(a->base);
	if (a->auth != NULL)
		explicit_bzero(a->auth, strlen(a->auth));
	free(a->auth);
	a->auth = NULL;
	return a->exit_code;
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
};

struct admin_req {
	struct admin *a;
	enum admin_role role;
	json_t *target; /* the job's object, or the object to fill */
	json_t *list;   /* where a listing's entries go */
};

static void admin_status_reply_cb(const struct zk_reply *, void *);

/* Send one read. */
static void
admin_ask(struct admin *a, enum admin_role role, const char *path, json_t *target, json_t *list)
{
	struct admin_req *r = xcalloc(1, sizeof *r);

	r->a = a;
	r->role = role;
	r->target = target;
	r->list = list;
	a->pending++;
	if (role == ADMIN_RECORD || role == ADMIN_STATE || role == ADMIN_NODE_DATA)
		zk_get(a->zk, path, NULL, admin_status_reply_cb, r);
	else
		zk_children(a->zk, path, NULL, admin_status_reply_cb, r);
}

/* Ask for the lock folders of a job object (its lock_path and leases are set). */
static void
admin_ask_job(struct admin *a, json_t *job)
{
	const char *name = json_string_value(json_object_get(job, "name"));
	const char *path = json_string_value(json_object_get(job, "lock_path"));
	int leases = (int)json_integer_value(json_object_get(job, "leases"));
	char *p, *rec;

	json_object_set_new(job, "holders", json_array());
	json_object_set_new(job, "waiters", json_array());
	if (leases == 1)
		admin_ask(a, ADMIN_HOLDERS, path, job, json_object_get(job, "holders"));
	else {
		p = layout_semaphore_leases(path);
		admin_ask(a, ADMIN_HOLDERS, p, job, json_object_get(job, "holders"));
		free(p);
		p = layout_semaphore_locks(path);
		admin_ask(a, ADMIN_WAITERS, p, job, json_object_get(job, "waiters"));
		free(p);
	}
	if (name == NULL)
		return;
	rec = layout_job_record(a->root, name);
	admin_ask(a, ADMIN_RECORD, rec, job, NULL);
	p = layout_job_state(a->root, name);
	admin_ask(a, ADMIN_STATE, p, job, NULL);
	free(p);
	p = layout_job_runs(a->root, name);
	json_object_set_new(job, "runs", json_array());
	admin_ask(a, ADMIN_RUNS, p, job, json_object_get(job, "runs"));
	free(p);
	free(rec);
}

/* A job object for the output. */
static json_t *
admin_job_object(struct admin *a, const char *name, const char *lock_path, int leases)
{
	json_t *job = json_object();

	if (name != NULL)
		json_object_set_new(job, "name", json_string(name));
	json_object_set_new(job, "lock_path", json_string(lock_path));
	json_object_set_new(job, "leases", json_integer(leases));
	json_array_append_new(json_object_get(a->ctx, "jobs"), job);
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

/* Entries of a listing, sorted in queue order, each with its data asked for. */
static void
admin_list(struct admin *a, const struct zk_reply *reply, json_t *list, const char *base,
           size_t keep_last, int locks)
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
	if (keep_last > 0 && n > keep_last)
		from = n - keep_last;
	for (i = from; i < n; i++) {
		entry = json_object();
		json_object_set_new(entry, "znode", json_string(names[i]));
		if (locks && !admin_lock_name(names[i], base))
			json_object_set_new(entry, "stranger", json_string("name"));
		json_array_append_new(list, entry);
		path = znode_join(reply->path, names[i]);
		admin_ask(a, ADMIN_NODE_DATA, path, entry, NULL);
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
	struct admin *a = r->a;
	const char *base;
	char *lock_path;
	json_t *job;
	json_t *state;
	int i, n;

	if (reply->rc != ZOK && reply->rc != ZNONODE) {
		fprintf(stderr, "leasekeeper status: cannot read %s: %s\n", reply->path,
		        zerror(reply->rc));
		a->exit_code = EXIT_UNAVAILABLE;
	}
	if (reply->rc == ZOK) {
		switch (r->role) {
		case ADMIN_WORKERS:
			admin_list(a, reply, r->list, NULL, 0, 0);
			break;
		case ADMIN_JOBS:
			for (i = 0; i < reply->nchildren; i++) {
				/* No configuration: the lock is named for the job, N from its record. */
				job = admin_job_object(a, reply->children[i], "", 1);
				json_object_set_new(job, "_discover", json_true());
				lock_path = layout_job_record(a->root, reply->children[i]);
				admin_ask(a, ADMIN_RECORD, lock_path, job, NULL);
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
				    a->root, json_string_value(json_object_get(r->target, "name")),
				    lock, n);
				json_object_set_new(r->target, "lock_path", json_string(lock_path));
				free(lock_path);
				if (rec != NULL)
					json_decref(rec);
				admin_ask_job(a, r->target);
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
			admin_list(a, reply, r->list, "run-", ADMIN_RUNS_SHOWN, 0);
			break;
		case ADMIN_HOLDERS:
		case ADMIN_WAITERS:
			/* A semaphore's holders are its <lock>/leases (admin_ask_job). */
			base = r->role == ADMIN_HOLDERS &&
			               json_integer_value(json_object_get(r->target, "leases")) > 1
			           ? "lease-"
			           : "lock-";
			admin_list(a, reply, r->list, base, 0, 1);
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
		}
	} else if (r->role == ADMIN_RECORD && json_is_true(json_object_get(r->target, "_discover")))
		json_object_del(r->target, "_discover");
	free(r);
	admin_settle(a);
}

/* The session is up: ask for everything. */
static void
admin_status_ready(struct admin *a)
{
	struct config *cfg = a->cfg;
	json_t *out = a->ctx, *job;
	const char *lock_path = json_string_value(json_object_get(out, "_lock_path"));
	char *path, next[40];
	int64_t t;
	size_t i;

	a->pending++; /* held until every first-level read is sent */
	path = layout_workers(a->root);
	admin_ask(a, ADMIN_WORKERS, path, NULL, json_object_get(out, "workers"));
	free(path);
	if (lock_path != NULL) {
		job = admin_job_object(a, NULL, lock_path,
		                       (int)json_integer_value(json_object_get(out, "_leases")));
		admin_ask_job(a, job);
	} else if (cfg != NULL) {
		for (i = 0; i < cfg->njobs; i++) {
			job = admin_job_object(a, cfg->jobs_list[i]->name,
			                       cfg->jobs_list[i]->lock_znode,
			                       cfg->jobs_list[i]->leases);
			json_object_set_new(job, "schedule",
			                    json_string(cfg->jobs_list[i]->schedule));
			t = schedule_next(cfg->jobs_list[i]->sched,
			                  (int64_t)(clock_wall_ms() / 1000));
			if (t >= 0) {
				clock_iso8601((uint64_t)t * 1000, next, sizeof next);
				json_object_set_new(job, "next_tick", json_string(next));
			}
			admin_ask_job(a, job);
		}
	} else {
		path = layout_jobs(a->root);
		admin_ask(a, ADMIN_JOBS, path, out, NULL);
		free(path);
	}
	admin_settle(a);
}

/* Print one holder or waiter line. */
static void
admin_print_node(const char *what, json_t *n)
{
	const char *node = json_string_value(json_object_get(n, "node"));
	const char *job = json_string_value(json_object_get(n, "job"));
	const char *since = json_string_value(json_object_get(n, "since"));
	const char *data = json_string_value(json_object_get(n, "data"));
	json_t *pid = json_object_get(n, "pid");

	if (node != NULL)
		printf("    %-8s %-16s pid %-8lld job %-16s since %s\n", what, node,
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
	const char *lock_path = NULL;
	json_t *out;
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
	out = json_pack("{s:s, s:[], s:[], s:[]}", "root", a.root, "workers", "jobs", "warnings");
	if (lock_path != NULL) {
		json_object_set_new(out, "_lock_path", json_string(lock_path));
		json_object_set_new(out, "_leases", json_integer(leases != 0 ? leases : 1));
	}
	a.ctx = out;
	a.ready = admin_status_ready;
	rc = admin_run(&a, 10000);
	if (rc == 0) {
		json_object_del(out, "_lock_path");
		json_object_del(out, "_leases");
		admin_status_flag_strangers(out);
		admin_status_split(out);
		if (as_json) {
			text = json_dumps(out, JSON_INDENT(2));
			printf("%s\n", text);
			free(text);
		} else {
			admin_status_escape(out);
			admin_status_print(out);
		}
	}
	json_decref(out);
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
