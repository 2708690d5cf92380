/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * config-lock.c: a job's locks: lock_mode (the read or write side of a read-write lock),
 * locks (several locks, all or none), and the check that every job agrees on a lock's kind.
 *
 * Every resolved job carries its locks in job->locks, the first of them the one `lock`,
 * `lock_path` and `leases` describe when `locks` is not set. A lock's kind decides its
 * folder under the root: <root>/mutex/<lock>, <root>/semaphore/<lock> or <root>/rwlock/<lock>.
 * Jobs that name one lock must agree on its kind (and a semaphore's size), or they would
 * not exclude each other at all: a mutex and a read-write lock of one name live in
 * different folders, and two recipes in one folder break each other's order.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "layout.h"
#include "leasekeeper.h"
#include "xmalloc.h"
#include "znode.h"

#define CONFIG_MAX_LOCKS 16

static const char *config_lock_kind_names[] = {"mutex", "semaphore", "read", "write"};

/* The name of a lock kind, as LEASEKEEPER_FENCES, status and errors say it. */
const char *
config_lock_kind_name(enum config_lock_kind kind)
{
	return config_lock_kind_names[kind];
}

/* Where a lock of this kind lives when it is named, not given as a path. */
static char *
config_lock_znode(const char *root, const char *name, enum config_lock_kind kind, int leases)
{
	char *dir, *out;

	if (kind != CONFIG_LOCK_READ && kind != CONFIG_LOCK_WRITE)
		return layout_lock_path(root, name, NULL, leases);
	dir = znode_join(root, "rwlock");
	out = znode_join(dir, name);
	free(dir);
	return out;
}

/* Add a lock to the job. */
static void
config_lock_add(struct config_job *job, const char *name, const char *znode,
                enum config_lock_kind kind, int leases)
{
	struct config_lock *k;

	job->locks = xreallocarray(job->locks, job->nlocks + 1, sizeof *job->locks);
	k = &job->locks[job->nlocks++];
	k->name = name != NULL ? xstrdup(name) : NULL;
	k->znode = xstrdup(znode);
	k->kind = kind;
	k->leases = leases;
}

/* Parse an item's ":read", ":write" or ":N" suffix (cut off); -1 with *cause when bad. */
static int
config_lock_suffix(char *item, enum config_lock_kind *kind, int *leases, char **cause)
{
	char *colon = strrchr(item, ':'), *s, *end;
	long n;

	*kind = CONFIG_LOCK_MUTEX;
	*leases = 1;
	if (colon == NULL)
		return 0;
	s = colon + 1;
	if (strcmp(s, "read") == 0)
		*kind = CONFIG_LOCK_READ;
	else if (strcmp(s, "write") == 0)
		*kind = CONFIG_LOCK_WRITE;
	else if (isdigit((unsigned char)*s)) {
		n = strtol(s, &end, 10);
		if (*end != '\0' || n < 1 || n > LK_MAX_LEASES) {
			xasprintf(cause,
			          "\"%s\": the count after ':' must be a number from 1 to %d "
			          "(the leases of a semaphore)",
			          item, LK_MAX_LEASES);
			return -1;
		}
		*leases = (int)n;
		*kind = n == 1 ? CONFIG_LOCK_MUTEX : CONFIG_LOCK_SEMAPHORE;
	} else if (item[0] == '/')
		return 0; /* a ':' inside an absolute path */
	else {
		xasprintf(cause,
		          "\"%s\": after ':' write read, write or a number of leases, e.g. "
		          "\"db:read\" or \"pool:3\"",
		          item);
		return -1;
	}
	*colon = '\0';
	return 0;
}

/* Parse one item of `locks` and add it; -1 with *cause when it is bad. */
static int
config_lock_item(const struct config *cfg, struct config_job *job, char *item, char **cause)
{
	enum config_lock_kind kind;
	char *why, *znode;
	size_t i;
	int leases;

	if (*item == '\0') {
		*cause = xstrdup("an empty item: write lock names separated by commas, e.g. "
		                 "locks = db, cache:read");
		return -1;
	}
	if (config_lock_suffix(item, &kind, &leases, cause) != 0)
		return -1;
	if (item[0] == '/' ? !znode_valid_path(item, &why) : !znode_valid_name(item, &why)) {
		xasprintf(cause, "bad lock %s", why);
		free(why);
		return -1;
	}
	znode = item[0] == '/' ? xstrdup(item) : config_lock_znode(cfg->root, item, kind, leases);
	for (i = 0; i < job->nlocks; i++) {
		if (strcmp(job->locks[i].znode, znode) == 0 ||
		    (item[0] != '/' && job->locks[i].name != NULL &&
		     strcmp(job->locks[i].name, item) == 0)) {
			xasprintf(cause, "\"%s\" is listed twice: list each lock once", item);
			free(znode);
			return -1;
		}
	}
	config_lock_add(job, item[0] == '/' ? NULL : item, znode, kind, leases);
	free(znode);
	return 0;
}

/* The `locks` key: every item, in the order written. */
static void
config_lock_list(struct config_ctx *ctx, const struct config *cfg, const struct config_sec *sec,
                 struct config_job *job, const struct config_kv *kv)
{
	char *copy = xstrdup(kv->value), *p = copy, *item, *end, *cause;

	for (;;) {
		item = p;
		p = strchr(p, ',');
		if (p != NULL)
			*p++ = '\0';
		while (isspace((unsigned char)*item))
			item++;
		end = item + strlen(item);
		while (end > item && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (job->nlocks == CONFIG_MAX_LOCKS) {
			config_error_kv(ctx, sec, kv,
			                "locks: more than %d locks: a job may hold at "
			                "most %d, so merge some",
			                CONFIG_MAX_LOCKS, CONFIG_MAX_LOCKS);
			break;
		}
		if (config_lock_item(cfg, job, item, &cause) != 0) {
			config_error_kv(ctx, sec, kv, "locks: %s", cause);
			free(cause);
		}
		if (p == NULL)
			break;
	}
	free(copy);
}

/* Refuse a key that `locks` replaces. */
static void
config_lock_refuse(struct config_ctx *ctx, const struct config_sec *sec, const char *key,
                   const struct config_kv *locks)
{
	const struct config_kv *kv = config_kv_find(sec, key);

	if (kv != NULL)
		config_error_kv(ctx, sec, kv,
		                "both %s and locks (line %d) are set: keep locks and write this "
		                "lock in it (\"name\", \"/path\", \"name:read\", \"name:write\" "
		                "or \"name:N\" for a semaphore)",
		                key, locks->line);
}

/*
 * Resolve the job's locks, after lock, lock_path and leases: lock_mode turns its one lock
 * into a side of a read-write lock; locks replaces them all.
 */
void
config_resolve_job_locks(struct config_ctx *ctx, const struct config *cfg,
                         const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *mode = config_kv_find(sec, "lock_mode");
	const struct config_kv *list = config_kv_find(sec, "locks");
	enum config_lock_kind kind = job->leases == 1 ? CONFIG_LOCK_MUTEX : CONFIG_LOCK_SEMAPHORE;

	if (list != NULL) {
		config_lock_refuse(ctx, sec, "lock", list);
		config_lock_refuse(ctx, sec, "lock_path", list);
		config_lock_refuse(ctx, sec, "leases", list);
		config_lock_refuse(ctx, sec, "lock_mode", list);
		config_lock_list(ctx, cfg, sec, job, list);
		job->has_locks = 1;
		if (job->nlocks == 0)
			config_lock_add(job, job->lock, job->lock_znode, kind, job->leases);
		free(job->lock_znode);
		job->lock_znode = xstrdup(job->locks[0].znode);
		job->leases = job->locks[0].leases;
		return;
	}
	if (mode != NULL) {
		job->has_locks = 1;
		if (strcmp(mode->value, "read") == 0)
			kind = CONFIG_LOCK_READ;
		else if (strcmp(mode->value, "write") == 0)
			kind = CONFIG_LOCK_WRITE;
		else
			config_error_kv(
			    ctx, sec, mode,
			    "lock_mode = \"%s\": write read (runs beside other readers) "
			    "or write (runs alone), or remove it for a plain mutex",
			    mode->value);
		if (kind >= CONFIG_LOCK_READ && job->leases != 1)
			config_error_kv(ctx, sec, mode,
			                "lock_mode needs leases = 1 (a read-write lock has no "
			                "count): remove leases = %d or lock_mode",
			                job->leases);
		if (kind >= CONFIG_LOCK_READ && job->lock_path == NULL) {
			free(job->lock_znode);
			job->lock_znode = config_lock_znode(cfg->root, job->lock, kind, 1);
		}
	}
	config_lock_add(job, job->lock_path != NULL ? NULL : job->lock, job->lock_znode, kind,
	                job->leases);
}

/* Two locks' kinds agree: both sides of a read-write lock, or the same kind and count. */
static int
config_lock_agree(const struct config_lock *a, const struct config_lock *b)
{
	int arw = a->kind == CONFIG_LOCK_READ || a->kind == CONFIG_LOCK_WRITE;
	int brw = b->kind == CONFIG_LOCK_READ || b->kind == CONFIG_LOCK_WRITE;

	if (arw || brw)
		return arw && brw;
	return a->leases == b->leases;
}

/* Whether two locks are the same lock: one name, or one absolute path. */
static int
config_lock_same(const struct config_lock *a, const struct config_lock *b)
{
	if (a->name != NULL && b->name != NULL)
		return strcmp(a->name, b->name) == 0;
	return strcmp(a->znode, b->znode) == 0;
}

/* How a lock is described in an error: "lock db as read" or "/x/y as a mutex". */
static void
config_lock_describe(const struct config_lock *k, char *buf, size_t len)
{
	if (k->kind == CONFIG_LOCK_SEMAPHORE)
		snprintf(buf, len, "\"%s\" as a semaphore of %d leases",
		         k->name != NULL ? k->name : k->znode, k->leases);
	else if (k->kind == CONFIG_LOCK_MUTEX)
		snprintf(buf, len, "\"%s\" as a mutex", k->name != NULL ? k->name : k->znode);
	else
		snprintf(buf, len, "\"%s\" as a read-write lock (%s)",
		         k->name != NULL ? k->name : k->znode, config_lock_kind_name(k->kind));
}

/* Report the first lock of b that a disagrees on; 1 when one was reported. */
static int
config_lock_pair(struct config_ctx *ctx, const struct config_job *a, const struct config_job *b,
                 const struct config_sec *bsec)
{
	const struct config_kv *kv;
	char da[160], db[160];
	size_t i, j;

	for (j = 0; j < b->nlocks; j++) {
		for (i = 0; i < a->nlocks; i++) {
			if (!config_lock_same(&a->locks[i], &b->locks[j]) ||
			    config_lock_agree(&a->locks[i], &b->locks[j]))
				continue;
			kv = config_kv_find(bsec, "locks");
			if (kv == NULL)
				kv = config_kv_find(bsec, "lock_mode");
			config_lock_describe(&b->locks[j], db, sizeof db);
			config_lock_describe(&a->locks[i], da, sizeof da);
			config_error_kv(
			    ctx, bsec, kv,
			    "job \"%s\" uses %s but job \"%s\" (%s:%d) uses %s: every "
			    "job must use a lock as the same kind (a mutex, a semaphore "
			    "of one size, or a read-write lock), or they do not exclude "
			    "each other; make them agree or give one its own lock",
			    b->name, db, a->name, a->file, a->line, da);
			return 1;
		}
	}
	return 0;
}

/*
 * Every job agrees with every other on the kind of each lock they share. Only pairs where
 * one job takes locks can disagree: a job without is compared with those with, so that
 * thousands of plain jobs cost no quadratic walk.
 */
void
config_check_lock_kinds(struct config_ctx *ctx, struct config *cfg, struct config_sec **secs)
{
	const struct config_job *b;
	size_t *locked = xcalloc(cfg->njobs + 1, sizeof *locked), nlocked = 0, i, j;

	for (j = 0; j < cfg->njobs; j++) {
		b = cfg->jobs_list[j];
		if (b->has_locks) {
			for (i = 0; i < j; i++)
				if (config_lock_pair(ctx, cfg->jobs_list[i], b, secs[j]))
					break;
			locked[nlocked++] = j;
			continue;
		}
		for (i = 0; i < nlocked; i++) /* those before j, in order */
			if (config_lock_pair(ctx, cfg->jobs_list[locked[i]], b, secs[j]))
				break;
	}
	free(locked);
}

/* Whether two jobs take the same locks. */
int
config_locks_equal(const struct config_job *a, const struct config_job *b)
{
	size_t i;

	if (a->nlocks != b->nlocks || a->has_locks != b->has_locks)
		return 0;
	for (i = 0; i < a->nlocks; i++)
		if (a->locks[i].kind != b->locks[i].kind ||
		    a->locks[i].leases != b->locks[i].leases ||
		    strcmp(a->locks[i].znode, b->locks[i].znode) != 0)
			return 0;
	return 1;
}

/* Free the job's locks. */
void
config_free_locks(struct config_job *job)
{
	size_t i;

	for (i = 0; i < job->nlocks; i++) {
		free(job->locks[i].name);
		free(job->locks[i].znode);
	}
	free(job->locks);
	job->locks = NULL;
	job->nlocks = 0;
}
