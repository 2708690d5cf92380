/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands and `leasekeeper web`. */
/*
 * view.c: one read of the whole cluster, as JSON. It fans out every read at once and hands
 * the view over when the last answer is in: for each job, the agreed lease count, the
 * holders and the waiters in queue order (who, pid, since, from the data of their nodes),
 * the claimed tick, the next tick and the last runs; and the live workers. `status` prints
 * it once; `leasekeeper web` repeats it on its long-lived session. It runs on a session the
 * caller owns, and has no loop of its own.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "ctlrec.h"
#include "format.h"
#include "jobrec.h"
#include "layout.h"
#include "lease.h"
#include "log.h"
#include "nodedata.h"
#include "schedule.h"
#include "tickstate.h"
#include "utf8.h"
#include "view.h"
#include "xmalloc.h"
#include "zk.h"
#include "rworder.h"
#include "znode.h"

/* What one answer fills in. */
enum view_role {
	VIEW_WORKERS,   /* children of <root>/workers */
	VIEW_JOBS,      /* children of <root>/jobs (no configuration) */
	VIEW_RECORD,    /* <root>/jobs/<job>: the agreed count */
	VIEW_STATE,     /* <root>/jobs/<job>/state: the claimed tick */
	VIEW_RUNS,      /* children of <root>/jobs/<job>/runs */
	VIEW_RUNNING,   /* children of <root>/jobs/<job>/running: the runs in progress */
	VIEW_HOLDERS,   /* mutex folder, or <sem>/leases */
	VIEW_WAITERS,   /* <sem>/locks */
	VIEW_NODE_DATA, /* the data of one node, into an object */
	VIEW_LOCK_DATA, /* ... of a lock node: Curator's protocol, unversioned (format.c) */
	VIEW_ROOT,      /* children of <root>: whether a cluster lives there at all */
};

/* One read of the whole cluster in progress (view_start). */
struct view {
	struct zk *zk;
	struct view_opts o;
	json_t *out;
	int pending;
	void (*done)(json_t *, void *);
	void *arg;
};

struct view_req {
	struct view *v;
	enum view_role role;
	json_t *target; /* the job's object, or the object to fill */
	json_t *list;   /* where a listing's entries go */
};

static void view_reply_cb(const struct zk_reply *, void *);

static void view_finish(struct view *);

/* Send one read. */
static void
view_ask(struct view *v, enum view_role role, const char *path, json_t *target, json_t *list)
{
	struct view_req *r = xcalloc(1, sizeof *r);

	r->v = v;
	r->role = role;
	r->target = target;
	r->list = list;
	v->pending++;
	if (role == VIEW_RECORD || role == VIEW_STATE || role == VIEW_NODE_DATA ||
	    role == VIEW_LOCK_DATA)
		zk_get(v->zk, path, NULL, view_reply_cb, r);
	else
		zk_children(v->zk, path, NULL, view_reply_cb, r);
}

/* One answer less to wait for; the view is complete when none is left. */
static void
view_settle(struct view *v)
{
	if (--v->pending == 0)
		view_finish(v);
}

/* Ask for the lock folders of a job object (its lock_path and leases are set). */
static void
view_ask_job(struct view *v, json_t *job)
{
	const char *name = json_string_value(json_object_get(job, "name"));
	const char *path = json_string_value(json_object_get(job, "lock_path"));
	int leases = (int)json_integer_value(json_object_get(job, "leases"));
	char *p, *rec;

	json_object_set_new(job, "holders", json_array());
	json_object_set_new(job, "waiters", json_array());
	if (leases == 1)
		view_ask(v, VIEW_HOLDERS, path, job, json_object_get(job, "holders"));
	else {
		p = layout_semaphore_leases(path);
		view_ask(v, VIEW_HOLDERS, p, job, json_object_get(job, "holders"));
		free(p);
		p = layout_semaphore_locks(path);
		view_ask(v, VIEW_WAITERS, p, job, json_object_get(job, "waiters"));
		free(p);
	}
	if (name == NULL)
		return;
	rec = layout_job_record(v->o.root, name);
	view_ask(v, VIEW_RECORD, rec, job, NULL);
	p = layout_job_state(v->o.root, name);
	view_ask(v, VIEW_STATE, p, job, NULL);
	free(p);
	p = layout_job_runs(v->o.root, name);
	json_object_set_new(job, "runs", json_array());
	view_ask(v, VIEW_RUNS, p, job, json_object_get(job, "runs"));
	free(p);
	p = layout_job_running(v->o.root, name);
	json_object_set_new(job, "running", json_array());
	view_ask(v, VIEW_RUNNING, p, job, json_object_get(job, "running"));
	free(p);
	free(rec);
}

/*
 * A configured job's chain: "after", its parents as written ("build", "test:any"), and
 * "children", the jobs whose after names it (as they name it), each when there are any.
 */
static void
view_config_chain(const struct config *cfg, const struct config_job *cj, json_t *job)
{
	json_t *children = json_array(), *after = json_array();
	size_t i, len = strlen(cj->name);
	char *const *p;

	for (p = cj->after; p != NULL && *p != NULL; p++)
		json_array_append_new(after, json_string(*p));
	for (i = 0; i < cfg->njobs; i++)
		for (p = cfg->jobs_list[i]->after; p != NULL && *p != NULL; p++)
			if (strncmp(*p, cj->name, len) == 0 &&
			    ((*p)[len] == '\0' || (*p)[len] == ':'))
				json_array_append_new(children, json_pack("{s:s, s:s}", "job",
				                                          cfg->jobs_list[i]->name,
				                                          "after", *p));
	if (json_array_size(after) > 0)
		json_object_set(job, "after", after);
	if (json_array_size(children) > 0)
		json_object_set(job, "children", children);
	json_decref(after);
	json_decref(children);
}

/* A configured job's locks, as written: [{"path", "mode"}]; holders are the first's. */
static json_t *
view_config_locks(const struct config_job *cj)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < cj->nlocks; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "path", cj->locks[i].znode, "mode",
		                                   config_lock_kind_name(cj->locks[i].kind)));
	return a;
}

/* A job object for the output. */
static json_t *
view_job_object(struct view *v, const char *name, const char *lock_path, int leases)
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
view_lock_name(const char *name, const char *base)
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

/*
 * A read-write lock's node (rworder.c): its mode, whether it holds in this sorted listing,
 * and whether it is named as Curator names one.
 */
static void
view_rw_entry(json_t *entry, char *const *names, size_t n, size_t i)
{
	struct rworder_place pl;
	int writer = rworder_is_writer(names[i]);

	rworder_place(names, (int)n, names[i], writer, &pl);
	json_object_set_new(entry, "mode", json_string(writer ? "write" : "read"));
	json_object_set_new(entry, "role", json_string(pl.holds ? "holder" : "waiting"));
	if (!view_lock_name(names[i], RWORDER_READ) && !view_lock_name(names[i], RWORDER_WRITE))
		json_object_set_new(entry, "stranger", json_string("name"));
}

/* qsort: names in byte order. */
static int
view_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Entries of a listing, sorted in queue order (or by name), each with its data asked for: the last
 * keep_last of them, or else the first max_list (when set), the number left out then
 * recorded in owner's omitted key.
 */
static void
view_list(struct view *v, const struct zk_reply *reply, json_t *list, const char *base,
          size_t keep_last, int locks, json_t *owner, const char *omitted)
{
	char **names;
	size_t i, n = (size_t)reply->nchildren, from = 0;
	json_t *entry;
	char *path;
	int rw = 0; /* a read-write lock's folder: Curator's __READ__ and __WRIT__ nodes */

	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++) {
		names[i] = reply->children[i];
		rw |= locks && (strstr(names[i], RWORDER_READ) != NULL ||
		                strstr(names[i], RWORDER_WRITE) != NULL);
	}
	if (rw && owner != NULL)
		json_object_set_new(owner, "kind", json_string("read-write lock"));
	if (rw)
		rworder_sort(names, n);
	else if (base != NULL)
		znode_sort(names, n, base);
	else
		qsort(names, n, sizeof *names, view_name_cmp);
	if (keep_last > 0 && n > keep_last)
		from = n - keep_last;
	else if (keep_last == 0 && v->o.max_list > 0 && n > v->o.max_list && owner != NULL) {
		json_object_set_new(owner, omitted, json_integer((json_int_t)(n - v->o.max_list)));
		n = v->o.max_list;
	}
	for (i = from; i < n; i++) {
		entry = json_object();
		json_object_set_new(entry, "znode", json_string(names[i]));
		if (rw)
			view_rw_entry(entry, names, n, i);
		else if (locks && !view_lock_name(names[i], base))
			json_object_set_new(entry, "stranger", json_string("name"));
		json_array_append_new(list, entry);
		path = znode_join(reply->path, names[i]);
		view_ask(v, locks ? VIEW_LOCK_DATA : VIEW_NODE_DATA, path, entry, NULL);
		free(path);
	}
	free(names);
}

/* A job record's pause (`leasekeeper pause`): "paused": {"by", "since", "stop_running"}. */
static void
view_paused(json_t *job, const char *value, int len)
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

/*
 * Whether a node's data is of a format this release cannot read: then target says so
 * ("format_refused", and its "v") instead of what the data says, and a warning names what
 * (a job's record or state; NULL: one of many nodes, counted in "newer_nodes").
 */
static int
view_refused(struct view *v, const struct zk_reply *reply, json_t *target, const char *what)
{
	char why[200], *text;
	int f = reply->value_len > 0 ? format_of_data(reply->value, (size_t)reply->value_len)
	                             : FORMAT_NONE;

	if (format_readable(f))
		return 0;
	format_refusal(f, why, sizeof why);
	json_object_set_new(target, "format_refused", json_string(why));
	if (f > 0)
		json_object_set_new(target, "v", json_integer(f));
	if (what != NULL) {
		xasprintf(&text, "%s %s is %s", what, reply->path, why);
		json_array_append_new(json_object_get(v->out, "warnings"), json_string(text));
		free(text);
	} else
		json_object_set_new(
		    v->out, "newer_nodes",
		    json_integer(json_integer_value(json_object_get(v->out, "newer_nodes")) + 1));
	return 1;
}

/*
 * A configured job whose record (of count n) names other locks than the configuration's:
 * "cluster_locks" says what the record holds (workers configured like this do not contend).
 * Compared, as workers do, only when the counts agree: a count conflict is said alone.
 */
static void
view_record_locks(struct view *v, json_t *target, const struct zk_reply *reply, int n)
{
	const char *name = json_string_value(json_object_get(target, "name"));
	const struct config_job *cj;
	char *ours, *theirs;

	if (v->o.cfg == NULL || name == NULL || (cj = config_find_job(v->o.cfg, name)) == NULL ||
	    cj->leases != n)
		return;
	ours = jobrec_config_locks(cj);
	if (jobrec_locks_agree(reply->value, reply->value_len, ours, &theirs) < 0)
		json_object_set_new(target, "cluster_locks", json_string(theirs));
	free(theirs);
	free(ours);
}

/* A job record as read: the agreed count, the pause, and where the lock lives. */
static void
view_record(struct view *v, struct view_req *r, const struct zk_reply *reply)
{
	char *lock_path;
	int n;

	if (view_refused(v, reply, r->target,
	                 "workers of this release do not run this job: its record")) {
		json_object_del(r->target, "_discover");
		return;
	}
	n = jobrec_parse_leases(reply->value, reply->value_len);
	if (n > 0)
		json_object_set_new(r->target, "cluster_leases", json_integer(n));
	else if (n < 0)
		json_object_set_new(r->target, "record_corrupt", json_true());
	view_paused(r->target, reply->value, reply->value_len);
	view_record_locks(v, r->target, reply, n);
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
		    v->o.root, json_string_value(json_object_get(r->target, "name")), lock, n);
		json_object_set_new(r->target, "lock_path", json_string(lock_path));
		free(lock_path);
		if (rec != NULL)
			json_decref(rec);
		view_ask_job(v, r->target);
	}
}

/* Whether entry is one of the workers' (their output_token is kept with o.output_tokens). */
static int
view_is_worker(struct view *v, json_t *entry)
{
	json_t *w;
	size_t i;

	json_array_foreach(json_object_get(v->out, "workers"), i, w) {
		if (w == entry)
			return 1;
	}
	return 0;
}

/* Whether a read of role is one of a job's (its target the job's object). */
static int
view_job_role(enum view_role role)
{
	return role == VIEW_RECORD || role == VIEW_STATE || role == VIEW_RUNS ||
	       role == VIEW_RUNNING || role == VIEW_HOLDERS || role == VIEW_WAITERS;
}

/* Who a ZNOAUTH was for (zerror's "not authenticated" is wrong with credentials). */
static const char *
view_who(const struct view *v)
{
	return v->o.identity != NULL ? v->o.identity : "this session's identity";
}

/* A job's node that this identity may not read: a warning on the job, not a failed view. */
static void
view_no_permission(struct view *v, json_t *job, const char *path)
{
	json_t *text = json_sprintf("no permission to read %s: ACL (for %s)", path, view_who(v));

	if (json_object_get(job, "warning") == NULL)
		json_object_set(job, "warning", text);
	json_array_append_new(json_object_get(v->out, "warnings"), text);
}

/* One answer of status. */
static void
view_reply_cb(const struct zk_reply *reply, void *arg)
{
	struct view_req *r = arg;
	struct view *v = r->v;
	const char *base;
	char *lock_path;
	json_t *job;
	json_t *state;
	int i, n;

	if (reply->rc == ZNOAUTH && view_job_role(r->role))
		view_no_permission(v, r->target, reply->path);
	else if (reply->rc != ZOK && reply->rc != ZNONODE) {
		json_array_append_new(
		    json_object_get(v->out, "errors"),
		    reply->rc == ZNOAUTH
		        ? json_sprintf("cannot read %s: no permission (ACL) for %s", reply->path,
		                       view_who(v))
		        : json_sprintf("cannot read %s: %s", reply->path, zerror(reply->rc)));
	}
	if (reply->rc == ZOK) {
		switch (r->role) {
		case VIEW_WORKERS:
			view_list(v, reply, r->list, NULL, 0, 0, v->out, "workers_omitted");
			break;
		case VIEW_JOBS:
			n = reply->nchildren;
			if (v->o.max_list > 0 && (size_t)n > v->o.max_list) {
				json_object_set_new(v->out, "jobs_omitted",
				                    json_integer(n - (json_int_t)v->o.max_list));
				n = (int)v->o.max_list;
			}
			for (i = 0; i < n; i++) {
				/* No configuration: the lock is named for the job, N from its record. */
				job = view_job_object(v, reply->children[i], "", 1);
				json_object_set_new(job, "_discover", json_true());
				lock_path = layout_job_record(v->o.root, reply->children[i]);
				view_ask(v, VIEW_RECORD, lock_path, job, NULL);
				free(lock_path);
			}
			break;
		case VIEW_RECORD:
			view_record(v, r, reply);
			break;
		case VIEW_STATE:
			state = json_object();
			json_object_set_new(r->target, "state", state);
			if (view_refused(v, reply, state,
			                 "workers of this release claim no tick: its tick state"))
				break;
			nodedata_merge(state, reply->value, reply->value_len);
			/* A claim no sane clock makes: workers override it (tickstate.c). */
			if (json_integer_value(json_object_get(state, "tick")) >
			    tickstate_horizon(NULL, (int64_t)(clock_wall_ms() / 1000)))
				json_object_set_new(state, "corrupt", json_true());
			break;
		case VIEW_RUNS:
			view_list(v, reply, r->list, "run-", v->o.runs, 0, NULL, NULL);
			break;
		case VIEW_RUNNING:
			view_list(v, reply, r->list, NULL, 0, 0, r->target, "running_omitted");
			break;
		case VIEW_HOLDERS:
		case VIEW_WAITERS:
			/* A semaphore's holders are its <lock>/leases (view_ask_job). */
			base = r->role == VIEW_HOLDERS &&
			               json_integer_value(json_object_get(r->target, "leases")) > 1
			           ? "lease-"
			           : "lock-";
			view_list(v, reply, r->list, base, 0, 1, r->target,
			          r->role == VIEW_HOLDERS ? "holders_omitted" : "waiters_omitted");
			break;
		case VIEW_NODE_DATA:
		case VIEW_LOCK_DATA:
			if (r->role == VIEW_LOCK_DATA || !view_refused(v, reply, r->target, NULL))
				nodedata_merge(r->target, reply->value, reply->value_len);
			/* A worker's key to its runs' output (runout.c): not for display. */
			if (!v->o.output_tokens || !view_is_worker(v, r->target))
				json_object_del(r->target, "output_token");
			/* As the logs print it: 64 bits are not safe in JSON. "0x0": persistent. */
			if (reply->stat != NULL) {
				char session[24];

				snprintf(session, sizeof session, "0x%llx",
				         (unsigned long long)reply->stat->ephemeralOwner);
				json_object_set_new(r->target, "session", json_string(session));
			}
			break;
		case VIEW_ROOT:
			for (i = 0; i < reply->nchildren; i++)
				if (strcmp(reply->children[i], "workers") == 0 ||
				    strcmp(reply->children[i], "jobs") == 0)
					break;
			if (i == reply->nchildren)
				json_object_set_new(r->target, "_no_cluster", json_true());
			break;
		}
	} else if (reply->rc == ZNONODE &&
	           (r->role == VIEW_NODE_DATA || r->role == VIEW_LOCK_DATA)) {
		/* Gone between its folder's listing and this read: it ended (view_drop_gone). */
		json_object_set_new(r->target, "_gone", json_true());
	} else if (r->role == VIEW_ROOT) {
		json_object_set_new(r->target, "_no_cluster", json_true());
	} else if (r->role == VIEW_RECORD && json_is_true(json_object_get(r->target, "_discover")))
		json_object_del(r->target, "_discover");
	free(r);
	view_settle(v);
}

/*
 * Where each job can run: the live workers whose registration lists it, and those that say
 * why they do not carry it ("excluded"); a job no live worker lists is a warning.
 */
static void
view_placement(json_t *out)
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

/* Move the strangers of a holders or waiters list into strangers, each saying why. */
static void
view_strangers(json_t *list, json_t *strangers)
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
view_flag_strangers(json_t *out)
{
	json_t *job, *strangers, *warnings = json_object_get(out, "warnings");
	size_t i;
	char *text;

	json_array_foreach(json_object_get(out, "jobs"), i, job) {
		strangers = json_array();
		view_strangers(json_object_get(job, "holders"), strangers);
		view_strangers(json_object_get(job, "waiters"), strangers);
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
view_split(json_t *out)
{
	json_t *job, *holders, *waiters, *extra;
	size_t i, n;

	json_array_foreach(json_object_get(out, "jobs"), i, job) {
		n = (size_t)json_integer_value(json_object_get(job, "leases"));
		holders = json_object_get(job, "holders");
		waiters = json_object_get(job, "waiters");
		if (n == 1 && json_object_get(job, "kind") != NULL) {
			/* A read-write lock: readers hold side by side (view_rw_entry). */
			for (size_t k = 0; k < json_array_size(holders);) {
				extra = json_array_get(holders, k);
				if (json_is_string(json_object_get(extra, "role")) &&
				    strcmp(json_string_value(json_object_get(extra, "role")),
				           "waiting") == 0) {
					json_array_append(waiters, extra);
					json_array_remove(holders, k);
				} else
					k++;
			}
			continue;
		}
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

/* Drop the entries of a listing whose node was deleted before its data was read. */
static void
view_drop_gone(json_t *list)
{
	for (size_t k = 0; k < json_array_size(list);) {
		if (json_is_true(json_object_get(json_array_get(list, k), "_gone")))
			json_array_remove(list, k);
		else
			k++;
	}
}

/* Every answer is in: sort the lock folders out and hand the view over. */
static void
view_finish(struct view *v)
{
	json_int_t newer = json_integer_value(json_object_get(v->out, "newer_nodes"));
	json_t *job;
	size_t i;
	char *text;

	if (newer > 0) {
		xasprintf(&text,
		          "%lld node(s) (runs, workers, requests) are written by a newer "
		          "leasekeeper: this one shows them as such, without their data",
		          (long long)newer);
		json_array_append_new(json_object_get(v->out, "warnings"), json_string(text));
		free(text);
	}
	view_drop_gone(json_object_get(v->out, "workers"));
	json_array_foreach(json_object_get(v->out, "jobs"), i, job) {
		view_drop_gone(json_object_get(job, "runs"));
		view_drop_gone(json_object_get(job, "running"));
		view_drop_gone(json_object_get(job, "holders"));
		view_drop_gone(json_object_get(job, "waiters"));
	}
	view_flag_strangers(v->out);
	view_split(v->out);
	view_placement(v->out);
	v->done(v->out, v->arg);
	free(v);
}

/*
 * Read the whole cluster on zk, whose session is up: every read at once, and done(view, arg)
 * when the last answer is in (the caller owns the view). A read that fails leaves its part
 * out and a line in the view's "errors"; closing the session completes every read.
 */
void
view_start(struct zk *zk, const struct view_opts *o, void (*done)(json_t *, void *), void *arg)
{
	struct view *v = xcalloc(1, sizeof *v);
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
		view_ask(v, VIEW_ROOT, o->root, v->out, NULL);
	path = layout_workers(o->root);
	view_ask(v, VIEW_WORKERS, path, NULL, json_object_get(v->out, "workers"));
	free(path);
	if (o->lock_path != NULL) {
		job = view_job_object(v, NULL, o->lock_path, o->leases);
		view_ask_job(v, job);
	} else if (cfg != NULL) {
		for (i = 0; i < cfg->njobs; i++) {
			job = view_job_object(v, cfg->jobs_list[i]->name,
			                      cfg->jobs_list[i]->lock_znode,
			                      cfg->jobs_list[i]->leases);
			json_object_set_new(job, "_configured", json_true());
			json_object_set_new(job, "schedule",
			                    json_string(cfg->jobs_list[i]->schedule));
			if (cfg->jobs_list[i]->nlocks > 1)
				json_object_set_new(job, "locks",
				                    view_config_locks(cfg->jobs_list[i]));
			/* A read-write lock says so before anyone queues in its folder. */
			if (cfg->jobs_list[i]->nlocks > 0 &&
			    (cfg->jobs_list[i]->locks[0].kind == CONFIG_LOCK_READ ||
			     cfg->jobs_list[i]->locks[0].kind == CONFIG_LOCK_WRITE))
				json_object_set_new(job, "kind", json_string("read-write lock"));
			view_config_chain(cfg, cfg->jobs_list[i], job);
			t = schedule_next(cfg->jobs_list[i]->sched,
			                  (int64_t)(clock_wall_ms() / 1000));
			if (t >= 0) {
				clock_iso8601((uint64_t)t * 1000, next, sizeof next);
				json_object_set_new(job, "next_tick", json_string(next));
			}
			view_ask_job(v, job);
		}
	} else {
		path = layout_jobs(o->root);
		view_ask(v, VIEW_JOBS, path, v->out, NULL);
		free(path);
	}
	view_settle(v);
}
