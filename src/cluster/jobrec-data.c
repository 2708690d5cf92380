/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec-data.c: the data of a job record (<root>/jobs/<job>), read bounded from what anyone
 * may have written: the cluster's lease count, whether it names its lock, and whether that
 * lock is ours.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobrec.h"
#include "leasekeeper.h"
#include "log.h"
#include "utf8.h"

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

/*
 * Warn, once until it changes, when the job record at path names another lock than ours
 * (*warned remembers it): workers that configure one job's lock differently (another name,
 * a mutex here and a read-write lock there) queue in different folders and do not exclude
 * each other. The record's lock is what its first writer's configuration said.
 */
void
jobrec_lock_warn(const char *path, const char *data, int len, const char *ours, int *warned)
{
	const char *lock;
	char *theirs;
	json_t *o;

	if (data == NULL || len <= 0 || len > JOBREC_MAX_SIZE ||
	    (o = json_loadb(data, (size_t)len, 0, NULL)) == NULL)
		return;
	lock = json_string_value(json_object_get(o, "lock"));
	if (lock == NULL || strcmp(lock, ours) == 0) {
		*warned = 0;
	} else if (!*warned) {
		*warned = 1;
		theirs = utf8_escape(lock);
		log_warnx("%s says the job's lock is \"%s\", but this configuration puts it at %s: "
		          "workers that configure one job's lock differently do not exclude each "
		          "other; give the job the same lock, lock_mode and locks on every worker",
		          path, theirs, ours);
		free(theirs);
	}
	json_decref(o);
}
