/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * aclcheck.c: who else may create or delete in the folders that hold our nodes.
 *
 * With credentials, every node we create gets the creator-only ACL, but the folders we
 * did not create keep whatever ACL they had: the root and its lock folders made before
 * auth was set, a lock_path's parent, a lock folder another program (Curator) made. Who
 * may delete in a lock folder can delete a holder's lock node; who may create in its
 * parent can make the lock folder first, with an ACL of their own. So once registered we
 * read the ACL of our own worker node (it is creator-only: its entries are who we are to
 * the server, whatever the scheme), then the ACLs of the root, its folders, every lock
 * folder and every lock folder's parent, and report each that grants create or delete to
 * anyone else. A bounded number of reads (a few per job), at most ACLCHECK_WINDOW at a
 * time, all asynchronous on the session's loop.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "aclcheck.h"
#include "layout.h"
#include "log.h"
#include "xmalloc.h"
#include "znode.h"

#define ACLCHECK_WINDOW    32 /* reads in flight at once */
#define ACLCHECK_MAX_LINES 20 /* folders described one by one; the rest are counted */
#define ACLCHECK_ID_MAX    80 /* bytes of an ACL id shown */
#define ACLCHECK_MAX_SETS  3  /* ACL writes per folder, each after a re-read (BADVERSION) */

struct aclcheck {
	struct zk *zk;
	char *own_node;
	aclcheck_done_cb cb;
	void *arg;

	struct ACL_vector ours; /* who we are: the ACL of our own node */
	char *jobs_dir;         /* <root>/jobs: a job record there must not be writable either */
	char *roles;            /* <root>/roles: not writable by others either (forged roles) */
	char **paths;           /* sorted, unique */
	int *sets;              /* per path: ACL writes sent (aclcheck_grant) */
	size_t npaths;
	size_t next;     /* the next path to read */
	size_t inflight; /* reads sent, not answered */
	int open;        /* folders others may create or delete in */
	int unreadable;  /* folders whose ACL we may not read */
	int granted;     /* folders made before [zookeeper] operator, given its entry */
	int interrupted;
	int finished;
};

static const char *aclcheck_result_names[] = {"closed", "open", "interrupted"};

static void aclcheck_acl_cb(const struct zk_reply *, void *);
static void aclcheck_set_cb(const struct zk_reply *, void *);
static void aclcheck_finish(struct aclcheck *);

/* The name of a result, for logs. */
const char *
aclcheck_result_name(enum aclcheck_result result)
{
	return aclcheck_result_names[result];
}

/* Add path to the list (taking it). */
static void
aclcheck_add(struct aclcheck *c, size_t *cap, char *path)
{
	if (c->npaths == *cap) {
		*cap = *cap == 0 ? 16 : *cap * 2;
		c->paths = xreallocarray(c->paths, *cap, sizeof *c->paths);
	}
	c->paths[c->npaths++] = path;
}

/* Add the parent of path, if it has one. */
static void
aclcheck_add_parent(struct aclcheck *c, size_t *cap, const char *path)
{
	char *parent = xmalloc(strlen(path) + 1);

	if (znode_parent(path, parent, strlen(path) + 1) == 0)
		aclcheck_add(c, cap, parent);
	else
		free(parent);
}

static int
aclcheck_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folders to read: the root, its folders, every lock folder and its parent; unique. */
static void
aclcheck_paths(struct aclcheck *c, const struct config *cfg)
{
	const struct config_job *job;
	size_t cap = 0, i, n;

	aclcheck_add(c, &cap, xstrdup(cfg->root));
	aclcheck_add(c, &cap, layout_jobs(cfg->root));
	aclcheck_add(c, &cap, layout_workers(cfg->root));
	aclcheck_add(c, &cap, layout_lock_dir(cfg->root, 1));
	aclcheck_add(c, &cap, layout_lock_dir(cfg->root, 2));
	aclcheck_add(c, &cap, layout_drains(cfg->root));
	aclcheck_add(c, &cap, layout_roles(cfg->root));
	for (i = 0; i < cfg->njobs; i++) {
		job = cfg->jobs_list[i];
		/* The control records: a job's record (its pause) and its run requests. */
		aclcheck_add(c, &cap, layout_job_record(cfg->root, job->name));
		aclcheck_add(c, &cap, layout_job_requests(cfg->root, job->name));
		aclcheck_add(c, &cap, layout_job_stops(cfg->root, job->name));
		aclcheck_add_parent(c, &cap, job->lock_znode);
		aclcheck_add(c, &cap, xstrdup(job->lock_znode));
		if (job->leases > 1) {
			aclcheck_add(c, &cap, layout_semaphore_locks(job->lock_znode));
			aclcheck_add(c, &cap, layout_semaphore_leases(job->lock_znode));
		}
	}
	qsort(c->paths, c->npaths, sizeof *c->paths, aclcheck_cmp);
	for (i = n = 0; i < c->npaths; i++) {
		if (n > 0 && strcmp(c->paths[n - 1], c->paths[i]) == 0)
			free(c->paths[i]);
		else
			c->paths[n++] = c->paths[i];
	}
	c->npaths = n;
	c->sets = xcalloc(n > 0 ? n : 1, sizeof *c->sets);
}

/* The index of path in c->paths, or -1. */
static ssize_t
aclcheck_index(const struct aclcheck *c, const char *path)
{
	char **hit = bsearch(&path, c->paths, c->npaths, sizeof *c->paths, aclcheck_cmp);

	return hit != NULL ? hit - c->paths : -1;
}

/* Copy an ACL vector. */
static void
aclcheck_copy(struct ACL_vector *to, const struct ACL_vector *from)
{
	int i;

	to->count = from->count;
	to->data = xcalloc((size_t)(from->count > 0 ? from->count : 1), sizeof *to->data);
	for (i = 0; i < from->count; i++) {
		to->data[i].perms = from->data[i].perms;
		to->data[i].id.scheme = xstrdup(from->data[i].id.scheme);
		to->data[i].id.id = xstrdup(from->data[i].id.id);
	}
}

/* Whether an ACL entry's identity is one of ours. */
static int
aclcheck_is_us(const struct aclcheck *c, const struct Id *id)
{
	int i;

	for (i = 0; i < c->ours.count; i++) {
		if (strcmp(c->ours.data[i].id.scheme, id->scheme) == 0 &&
		    strcmp(c->ours.data[i].id.id, id->id) == 0)
			return 1;
	}
	return 0;
}

/* Whether an entry is the operator identity's, with no more than its role gives on path. */
static int
aclcheck_is_operator(const struct aclcheck *c, const char *path, const struct ACL *e)
{
	const char *op = zk_operator_id(c->zk);

	return op != NULL && strcmp(e->id.scheme, "digest") == 0 && strcmp(e->id.id, op) == 0 &&
	       (e->perms & ~zk_operator_perms(c->zk, path)) == 0;
}

/*
 * An existing node made before [zookeeper] operator was set (an upgrade): give the operator
 * its role's entry, keeping every other entry, if the node is ours (we hold ADMIN on it).
 * The write names the ACL's version read (stat), so that a change made meanwhile is not
 * lost: on BADVERSION the ACL is read again and judged again, ACLCHECK_MAX_SETS times.
 */
static void
aclcheck_grant(struct aclcheck *c, const char *path, const struct ACL_vector *acl,
               const struct Stat *stat)
{
	const char *op = zk_operator_id(c->zk);
	struct ACL_vector v;
	int i, mine = 0, want = zk_operator_perms(c->zk, path);
	ssize_t at = aclcheck_index(c, path);

	if (op == NULL || acl == NULL || stat == NULL || at < 0)
		return;
	for (i = 0; i < acl->count; i++) {
		if (strcmp(acl->data[i].id.scheme, "digest") == 0 &&
		    strcmp(acl->data[i].id.id, op) == 0 && acl->data[i].perms == want)
			return; /* granted already */
		if (acl->data[i].perms == ZOO_PERM_ALL && aclcheck_is_us(c, &acl->data[i].id))
			mine = 1;
	}
	if (!mine)
		return; /* not ours to change (a folder Curator or an operator made) */
	if (c->sets[at]++ >= ACLCHECK_MAX_SETS) {
		log_warnx("zookeeper: the ACL of %s changed under each of %d writes: the operator "
		          "identity was not given its role there",
		          path, ACLCHECK_MAX_SETS);
		return;
	}
	v.count = 0;
	v.data = xcalloc((size_t)acl->count + 1, sizeof *v.data);
	for (i = 0; i < acl->count; i++) {
		if (strcmp(acl->data[i].id.scheme, "digest") != 0 ||
		    strcmp(acl->data[i].id.id, op) != 0)
			v.data[v.count++] = acl->data[i];
	}
	v.data[v.count++] = (struct ACL){want, {(char *)"digest", (char *)op}};
	log_debug("acl: %s: giving the operator identity its role", path);
	if (c->sets[at] == 1)
		c->granted++;
	c->inflight++; /* the check ends once its writes are answered too */
	zk_set_acl(c->zk, path, stat->aversion, &v, aclcheck_set_cb, c);
	free(v.data);
}

/* A re-read after a lost race: grant again on what is there now. */
static void
aclcheck_reread_cb(const struct zk_reply *reply, void *arg)
{
	struct aclcheck *c = arg;

	c->inflight--;
	if (reply->rc == ZOK)
		aclcheck_grant(c, reply->path, reply->acl, reply->stat);
	else
		log_debug("acl: reading the ACL of %s again: %s", reply->path, zerror(reply->rc));
	aclcheck_finish(c);
}

/* The answer to aclcheck_grant's write: on BADVERSION someone changed the ACL; read it. */
static void
aclcheck_set_cb(const struct zk_reply *reply, void *arg)
{
	struct aclcheck *c = arg;

	c->inflight--;
	if (reply->rc == ZBADVERSION) {
		log_debug("acl: %s: its ACL changed since it was read: reading it again",
		          reply->path);
		c->inflight++;
		zk_get_acl(c->zk, reply->path, aclcheck_reread_cb, c);
		return;
	}
	if (reply->rc != ZOK)
		log_debug("acl: writing the ACL of %s: %s", reply->path, zerror(reply->rc));
	aclcheck_finish(c);
}

/* Append text to buf (size len), printable ASCII only and bounded: it comes from the server. */
static void
aclcheck_append(char *buf, size_t len, const char *text, size_t max)
{
	size_t n = strlen(buf), i;

	for (i = 0; text[i] != '\0' && n + 1 < len; i++, n++) {
		if (i == max) {
			buf[n] = '\0';
			snprintf(buf + n, len - n, "...");
			return;
		}
		buf[n] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
	}
	buf[n] = '\0';
}

/*
 * An ACL's answer: report the entries of others that may create or delete there (or write,
 * in a job record: its "paused").
 */
static void
aclcheck_judge(struct aclcheck *c, const char *path, const struct ACL_vector *acl)
{
	char who[512] = "", perms[8], parent[1024];
	int i, n = 0, mask = ZOO_PERM_CREATE | ZOO_PERM_DELETE;

	if ((znode_parent(path, parent, sizeof parent) == 0 && strcmp(parent, c->jobs_dir) == 0) ||
	    strcmp(path, c->roles) == 0)
		mask |= ZOO_PERM_WRITE;
	for (i = 0; acl != NULL && i < acl->count; i++) {
		if ((acl->data[i].perms & mask) == 0 || aclcheck_is_us(c, &acl->data[i].id) ||
		    aclcheck_is_operator(c, path, &acl->data[i]))
			continue;
		snprintf(perms, sizeof perms, "%s%s%s",
		         (acl->data[i].perms & ZOO_PERM_CREATE) ? "c" : "",
		         (acl->data[i].perms & ZOO_PERM_DELETE) ? "d" : "",
		         (acl->data[i].perms & mask & ZOO_PERM_WRITE) ? "w" : "");
		if (n++ > 0)
			aclcheck_append(who, sizeof who, ", ", 2);
		aclcheck_append(who, sizeof who, acl->data[i].id.scheme, ACLCHECK_ID_MAX);
		aclcheck_append(who, sizeof who, ":", 1);
		aclcheck_append(who, sizeof who, acl->data[i].id.id, ACLCHECK_ID_MAX);
		aclcheck_append(who, sizeof who, ":", 1);
		aclcheck_append(who, sizeof who, perms, 3);
	}
	if (n == 0) {
		log_debug("acl: %s: only we may create or delete there", path);
		return;
	}
	if (c->open++ < ACLCHECK_MAX_LINES)
		log_warnx("zookeeper: others may create or delete in %s (%s): they can delete "
		          "lock nodes and records there or put a folder of their own in its "
		          "place; give it an ACL for leasekeeper's user only (see "
		          "docs/security.md)",
		          path, who);
}

/* Every answer is in: say what was found and tell the owner. */
static void
aclcheck_finish(struct aclcheck *c)
{
	enum aclcheck_result result;

	if (c->finished || c->inflight > 0 || (c->next < c->npaths && !c->interrupted))
		return;
	c->finished = 1;
	if (c->interrupted)
		result = ACLCHECK_INTERRUPTED;
	else if (c->open > 0 || c->unreadable > 0)
		result = ACLCHECK_OPEN;
	else
		result = ACLCHECK_CLOSED;
	if (c->open > ACLCHECK_MAX_LINES)
		log_warnx("zookeeper: %d more folders are open the same way",
		          c->open - ACLCHECK_MAX_LINES);
	if (c->granted > 0)
		log_info("zookeeper: gave the operator identity %s its role on %d folders made "
		         "before [zookeeper] operator was set",
		         zk_operator_id(c->zk), c->granted);
	if (result == ACLCHECK_CLOSED)
		log_info("zookeeper: ACLs checked: no one else may create or delete in the %zu "
		         "folders of this worker's nodes",
		         c->npaths);
	else if (result == ACLCHECK_OPEN)
		log_warnx("zookeeper: ACLs checked: of %zu folders, %d are open to others and %d "
		          "could not be read",
		          c->npaths, c->open, c->unreadable);
	c->cb(result, c->arg);
}

/* Keep up to ACLCHECK_WINDOW reads in flight. */
static void
aclcheck_send(struct aclcheck *c)
{
	while (!c->interrupted && c->next < c->npaths && c->inflight < ACLCHECK_WINDOW) {
		c->inflight++;
		zk_get_acl(c->zk, c->paths[c->next++], aclcheck_acl_cb, c);
	}
	aclcheck_finish(c);
}

/* One folder's ACL. */
static void
aclcheck_acl_cb(const struct zk_reply *reply, void *arg)
{
	struct aclcheck *c = arg;

	c->inflight--;
	if (reply->rc == ZOK) {
		aclcheck_judge(c, reply->path, reply->acl);
		aclcheck_grant(c, reply->path, reply->acl, reply->stat);
	} else if (reply->rc == ZNONODE)
		log_debug("acl: %s does not exist yet; we create it with our ACL", reply->path);
	else if (reply->rc == ZNOAUTH) {
		c->unreadable++;
		log_warnx("zookeeper: cannot read the ACL of %s (no READ or ADMIN permission for "
		          "us): cannot tell who may delete there",
		          reply->path);
	} else {
		log_debug("acl: reading the ACL of %s: %s", reply->path, zerror(reply->rc));
		c->interrupted = 1;
	}
	aclcheck_send(c);
}

/* Our own node's ACL: who we are. */
static void
aclcheck_own_cb(const struct zk_reply *reply, void *arg)
{
	struct aclcheck *c = arg;
	int i, n;

	c->inflight--;
	if (reply->rc != ZOK || reply->acl == NULL) {
		log_debug("acl: reading the ACL of %s: %s", reply->path, zerror(reply->rc));
		c->interrupted = 1;
		aclcheck_finish(c);
		return;
	}
	aclcheck_copy(&c->ours, reply->acl);
	/* Only the creator's entries (every permission): not a [zookeeper] reader's READ. */
	for (i = n = 0; i < c->ours.count; i++) {
		if (c->ours.data[i].perms == ZOO_PERM_ALL)
			c->ours.data[n++] = c->ours.data[i];
		else {
			free(c->ours.data[i].id.scheme);
			free(c->ours.data[i].id.id);
		}
	}
	c->ours.count = n;
	aclcheck_send(c);
}

/*
 * Check the folders of cfg's nodes, once own_node (our registered worker node, made with
 * the creator-only ACL) exists; cb gets the result, at most once.
 */
struct aclcheck *
aclcheck_start(struct zk *zk, const struct config *cfg, const char *own_node, aclcheck_done_cb cb,
               void *arg)
{
	struct aclcheck *c = xcalloc(1, sizeof *c);

	c->zk = zk;
	c->own_node = xstrdup(own_node);
	c->cb = cb;
	c->arg = arg;
	c->jobs_dir = layout_jobs(cfg->root);
	c->roles = layout_roles(cfg->root);
	aclcheck_paths(c, cfg);
	c->inflight = 1;
	zk_get_acl(zk, own_node, aclcheck_own_cb, c);
	return c;
}

/* Forget a check, finished or not. */
void
aclcheck_free(struct aclcheck *c)
{
	size_t i;
	int k;

	if (c == NULL)
		return;
	zk_cancel(c->zk, c);
	for (i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c->sets);
	for (k = 0; k < c->ours.count; k++) {
		free(c->ours.data[k].id.scheme);
		free(c->ours.data[k].id.id);
	}
	free(c->ours.data);
	free(c->own_node);
	free(c->jobs_dir);
	free(c->roles);
	free(c);
}
