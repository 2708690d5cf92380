/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * format.c: the format version of the nodes leasekeeper writes. Every JSON node it writes
 * (a worker's node, a job record, a tick state, a run record, a pause, a drain, a run-now
 * request) carries "v": FORMAT_VERSION. A reader reads format 0 (no "v": the previous
 * release) and every version up to its own; a newer one it refuses, says so once, and never
 * writes over (which would lose what the newer writer meant). A field added so that older
 * readers may ignore it keeps the version; one they must not ignore raises it. The data of
 * lock nodes is Curator's protocol and informative only: it carries no version.
 */

#include <stdio.h>
#include <string.h>

#include "format.h"
#include "log.h"

/* The format version of a node's JSON object: FORMAT_NONE, a version, or FORMAT_INVALID. */
int
format_of(const json_t *o)
{
	json_t *v;

	if (!json_is_object(o))
		return FORMAT_NONE;
	v = json_object_get(o, FORMAT_KEY);
	if (v == NULL)
		return FORMAT_NONE;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > FORMAT_MAX)
		return FORMAT_INVALID;
	return (int)json_integer_value(v);
}

/*
 * The format version of a node's data (len bytes, bounded): FORMAT_NONE for data that is not
 * a JSON object at all (its readers judge it), else as format_of.
 */
int
format_of_data(const char *data, size_t len)
{
	json_t *o;
	int v;

	if (data == NULL || len == 0 || len > FORMAT_MAX_SIZE)
		return FORMAT_NONE;
	if ((o = json_loadb(data, len, 0, NULL)) == NULL)
		return FORMAT_NONE;
	v = format_of(o);
	json_decref(o);
	return v;
}

/* Whether this release reads format v: the previous release's and up to its own. */
int
format_readable(int v)
{
	return v >= FORMAT_NONE && v <= FORMAT_VERSION;
}

/* Mark o, a node's JSON object about to be written, with this release's format. */
void
format_stamp(json_t *o)
{
	if (json_is_object(o))
		json_object_set_new(o, FORMAT_KEY, json_integer(FORMAT_VERSION));
}

/* Why format v is refused, for a log line or status (in buf). */
const char *
format_refusal(int v, char *buf, size_t size)
{
	if (v == FORMAT_INVALID)
		snprintf(buf, size,
		         "of an unknown format (\"%s\" is not a version number); this leasekeeper "
		         "reads formats 0 to %d",
		         FORMAT_KEY, FORMAT_VERSION);
	else
		snprintf(buf, size,
		         "written by a newer leasekeeper (format %d; this one reads formats 0 to "
		         "%d): upgrade this host (docs/upgrading.md)",
		         v, FORMAT_VERSION);
	return buf;
}

/*
 * Say once that what (a node's path, or "job x: its record") is of format v and refused;
 * again only after it was readable or of another version. Returns whether it logged.
 */
int
format_warn_once(struct format_once *once, int v, const char *what)
{
	char why[200];

	if (format_readable(v)) {
		once->warned = 0;
		return 0;
	}
	if (once->warned == v) /* v is never 0 here: 0 is readable */
		return 0;
	once->warned = v;
	log_warnx("%s is %s", what, format_refusal(v, why, sizeof why));
	return 1;
}
