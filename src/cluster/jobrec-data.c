/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec-data.c: the data of a job record (<root>/jobs/<job>), read bounded from what anyone
 * may have written: the cluster's lease count, whether it names its lock, and whether its
 * locks are ours; and the window of its writes' limits.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "config.h"
#include "jobrec.h"
#include "leasekeeper.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"
#include "znode.h"

/*
 * The "leases" of a job record's JSON: 0 if the record names none (empty, or no such
 * key), -1 if it is corrupt (too large, not an object, or a count that is not an integer in
 * 1..LK_MAX_LEASES): a corrupt record is a conflict, never "no count", or a worker would
 * rewrite it in a loop against whoever wrote it.
 */
int
jobrec_parse_leases(const char *data, int len)
{
	json_t *o, *n;
	int leases = -1;

	if (data == NULL || len <= 0)
		return 0;
	if (len > JOBREC_MAX_SIZE)
		return -1;
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return -1;
	}
	n = json_object_get(o, "leases");
	if (n == NULL)
		leases = 0;
	else if (json_is_integer(n) && json_integer_value(n) >= 1 &&
	         json_integer_value(n) <= LK_MAX_LEASES)
		leases = (int)json_integer_value(n);
	json_decref(o);
	return leases;
}

/* Whether a job record's JSON names its lock. */
int
jobrec_has_lock(const char *data, int len)
{
	json_t *o;
	int has;

	if (data == NULL || len <= 0 || len > JOBREC_MAX_SIZE ||
	    (o = json_loadb(data, (size_t)len, 0, NULL)) == NULL)
		return 0;
	has = json_is_string(json_object_get(o, "lock"));
	json_decref(o);
	return has;
}

/* A lock's mode in a job record ("locks"): the kinds of config_lock_kind_name. */
static int
jobrec_lock_mode_valid(const char *mode)
{
	static const char *const modes[] = {"mutex", "semaphore", "read", "write"};
	size_t i;

	for (i = 0; mode != NULL && i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(mode, modes[i]) == 0)
			return 1;
	return 0;
}

/*
 * The canonical text of a job's locks, as the job record's "locks" holds them: a JSON array
 * of 1..JOBREC_MAX_LOCKS {"path", "mode"} (a semaphore's with its "leases"), sorted by path
 * with no path twice, as the worker takes them; NULL if locks is not that. Two workers that
 * take the same locks the same way have the same text, whatever else the entries hold.
 */
char *
jobrec_locks_canon(const json_t *locks)
{
	const char *path, *mode, *prev = NULL;
	json_t *out, *e, *n, *c;
	char *text = NULL, *cause;
	size_t i;

	if (!json_is_array(locks) || json_array_size(locks) < 1 ||
	    json_array_size(locks) > JOBREC_MAX_LOCKS)
		return NULL;
	out = json_array();
	json_array_foreach(locks, i, e) {
		path = json_string_value(json_object_get(e, "path"));
		mode = json_string_value(json_object_get(e, "mode"));
		n = json_object_get(e, "leases");
		if (path == NULL || !jobrec_lock_mode_valid(mode) ||
		    (prev != NULL && strcmp(prev, path) >= 0))
			goto out;
		if (!znode_valid_path(path, &cause)) {
			free(cause);
			goto out;
		}
		c = json_pack("{s:s, s:s}", "path", path, "mode", mode);
		json_array_append_new(out, c);
		if (strcmp(mode, "semaphore") == 0) {
			if (!json_is_integer(n) || json_integer_value(n) < 1 ||
			    json_integer_value(n) > LK_MAX_LEASES)
				goto out;
			json_object_set(c, "leases", n);
		} else if (n != NULL)
			goto out; /* only a semaphore has a count */
		prev = path;
	}
	text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
out:
	json_decref(out);
	return text;
}

/*
 * Whether the job record's "locks" are ours (canonical text, jobrec_locks_canon): 1 they
 * are (or ours is NULL: this user does not say), 0 the record names none (older, or cleared
 * by `leasekeeper set-leases`), -1 they differ or are not valid; then *theirs is what the
 * record holds, escaped for a log (free it).
 */
int
jobrec_locks_agree(const char *data, int len, const char *ours, char **theirs)
{
	json_t *o, *locks;
	char *canon;
	int agree;

	*theirs = NULL;
	if (ours == NULL)
		return 1;
	if (data == NULL || len <= 0 || len > JOBREC_MAX_SIZE ||
	    (o = json_loadb(data, (size_t)len, 0, NULL)) == NULL)
		return 0;
	if ((locks = json_object_get(o, "locks")) == NULL) {
		json_decref(o);
		return 0;
	}
	canon = jobrec_locks_canon(locks);
	agree = canon != NULL && strcmp(canon, ours) == 0 ? 1 : -1;
	if (agree < 0)
		*theirs = utf8_escape(canon != NULL ? canon : "(not a valid list of locks)");
	free(canon);
	json_decref(o);
	return agree;
}

/*
 * jobrec_locks_agree for the job record at path, said when the locks differ, once for each
 * other locks the record names (*said keeps the text last said, NULL once they agree):
 * workers that configure one job's locks differently (another name, a mutex here and a
 * read-write lock there) queue in different folders and would not exclude each other, so
 * the one whose locks are not the record's does not contend.
 */
int
jobrec_locks_check(const char *path, const char *data, int len, const char *ours, char **said)
{
	const char *job = znode_basename(path);
	char *theirs;
	int agree = jobrec_locks_agree(data, len, ours, &theirs);

	if (agree >= 0) {
		free(*said);
		*said = NULL;
		return agree;
	}
	if (*said != NULL && strcmp(*said, theirs) == 0) {
		free(theirs);
		return agree; /* said already, on an earlier read */
	}
	log_warnx("job %s: its record %s says the job's locks are %s, but this worker's "
	          "configuration takes %s: not contending (give the job the same lock, "
	          "lock_path, lock_mode and locks on every worker; to change them on "
	          "purpose, configure every worker alike, then run `leasekeeper set-leases "
	          "%s N`, which clears the recorded locks for the first agreeing worker to "
	          "record its own)",
	          job, path, theirs, ours, job);
	free(*said);
	*said = theirs;
	return agree;
}

/* Whether one more event fits in w's window of max (a minute); else counted as dropped. */
int
jobrec_window_take(struct jobrec_window *w, int max)
{
	uint64_t now = clock_now_ns();

	if (w->start_ns == 0 || now - w->start_ns >= JOBREC_WINDOW_NS) {
		w->start_ns = now;
		w->count = 0;
	}
	if (w->count >= max) {
		w->dropped++;
		return 0;
	}
	w->count++;
	return 1;
}

/*
 * A configured job's locks as the job record holds them (jobrec_locks_canon): every lock's
 * path and mode (a semaphore's size), sorted by path as the worker takes them (lease.c).
 */
char *
jobrec_config_locks(const struct config_job *cj)
{
	const struct config_lock **sorted = xcalloc(cj->nlocks, sizeof *sorted);
	const struct config_lock *t;
	json_t *a = json_array(), *e;
	char *text;
	size_t i, j;

	for (i = 0; i < cj->nlocks; i++) {
		sorted[i] = &cj->locks[i];
		for (j = i; j > 0 && strcmp(sorted[j - 1]->znode, sorted[j]->znode) > 0; j--) {
			t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	}
	for (i = 0; i < cj->nlocks; i++) {
		e = json_pack("{s:s, s:s}", "path", sorted[i]->znode, "mode",
		              config_lock_kind_name(sorted[i]->kind));
		if (sorted[i]->kind == CONFIG_LOCK_SEMAPHORE)
			json_object_set_new(e, "leases", json_integer(sorted[i]->leases));
		json_array_append_new(a, e);
	}
	text = jobrec_locks_canon(a);
	json_decref(a);
	free(sorted);
	return text;
}
