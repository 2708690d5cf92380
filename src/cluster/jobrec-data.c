/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * jobrec-data.c: the data of a job record (<root>/jobs/<job>), read bounded from what anyone
 * may have written: the cluster's lease count, and whether it names its lock.
 */

#include <jansson.h>

#include "jobrec.h"
#include "leasekeeper.h"

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
