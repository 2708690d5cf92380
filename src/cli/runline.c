/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the one-shot commands `leasekeeper logs` and `status`. */
/* runline.c: one ended run's line from its run record, shared by `logs` and `status`. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "runline.h"
#include "utf8.h"
#include "xmalloc.h"

/* A string field of rec for the line: escaped unless it is already, or def (caller frees). */
static char *
runline_field(json_t *rec, const char *key, const char *def, int flags)
{
	const char *s = json_string_value(json_object_get(rec, key));

	if (s == NULL)
		return def != NULL ? xstrdup(def) : NULL;
	return (flags & RUNLINE_ESCAPED) ? xstrdup(s) : utf8_escape(s);
}

/* The outcome (docs/outcomes.md); "reason" only in records older than outcomes. */
static char *
runline_outcome(json_t *rec, int flags)
{
	return runline_field(rec,
	                     json_is_string(json_object_get(rec, "outcome")) ? "outcome" : "reason",
	                     "?", flags);
}

/* `logs`' header: the run's id and record, outcome, status, node, tick, times, fence. */
static void
runline_header(FILE *f, json_t *rec, int flags)
{
	long long record = (long long)json_integer_value(json_object_get(rec, "run"));
	char *outcome = runline_outcome(rec, flags),
	     *id = runline_field(rec, "run_id", NULL, flags);
	char *node = runline_field(rec, "node", "?", flags);
	char *start = runline_field(rec, "start", NULL, flags);
	char *end = runline_field(rec, "end", NULL, flags);
	char *why = runline_field(rec, "missed_reason", NULL, flags);
	json_t *st = json_object_get(rec, "status"), *sig = json_object_get(rec, "signal");
	json_t *tick = json_object_get(rec, "tick"), *fence = json_object_get(rec, "fence");
	char when[40];

	if (id != NULL)
		fprintf(f, "=== run %s (record %lld): %s", id, record, outcome);
	else
		fprintf(f, "=== run (record %lld): %s", record, outcome);
	if (why != NULL)
		fprintf(f, " (%s)", why);
	if (strcmp(outcome, "paused") == 0 || strcmp(outcome, "missed") == 0)
		fprintf(f, ", not run"); /* a tick let go: no start, no end */
	if (json_is_integer(st))
		fprintf(f, ", exit status %lld", (long long)json_integer_value(st));
	if (json_is_integer(sig))
		fprintf(f, ", signal %lld", (long long)json_integer_value(sig));
	fprintf(f, ", node %s", node);
	if (json_is_integer(tick) && json_integer_value(tick) >= 0) {
		clock_iso8601((uint64_t)json_integer_value(tick) * 1000, when, sizeof when);
		fprintf(f, ", tick %s", when);
	}
	if (start != NULL || end != NULL)
		fprintf(f, ", %s to %s", start != NULL ? start : "?", end != NULL ? end : "?");
	if (json_is_integer(fence))
		fprintf(f, ", fence %lld", (long long)json_integer_value(fence));
	fprintf(f, "\n");
	free(outcome);
	free(id);
	free(node);
	free(start);
	free(end);
	free(why);
}

/* A chained job's run: "  after=" and the parent runs it answered (jobchain.c). */
static void
runline_after(FILE *f, json_t *rec, int flags)
{
	json_t *p;
	size_t k;
	char *id;

	json_array_foreach(json_object_get(rec, "after"), k, p) {
		id = runline_field(p, "run_id", "?", flags);
		fprintf(f, "%s%s", k == 0 ? "  after=" : ",", id);
		free(id);
	}
}

/* `status`' row: end, outcome, node, status, usage, error and the run's id. */
static void
runline_row(FILE *f, json_t *rec, int flags)
{
	char *outcome = runline_outcome(rec, flags),
	     *id = runline_field(rec, "run_id", NULL, flags);
	char *node = runline_field(rec, "node", "?", flags);
	char *end = runline_field(rec, "end", "-", flags);
	char *error = runline_field(rec, "error", NULL, flags);
	char *why = runline_field(rec, "missed_reason", NULL, flags);
	json_t *st = json_object_get(rec, "status"), *sig = json_object_get(rec, "signal");
	json_t *cpu = json_object_get(rec, "cpu_usec"), *peak = json_object_get(rec, "memory_peak");

	fprintf(f, "      %s  %-12s %-16s", end, outcome, node);
	if (why != NULL)
		fprintf(f, " (%s)", why);
	if (json_is_integer(st))
		fprintf(f, " exit %lld", (long long)json_integer_value(st));
	if (json_is_integer(sig))
		fprintf(f, " signal %lld", (long long)json_integer_value(sig));
	if (json_is_integer(cpu))
		fprintf(f, ", cpu %.3f s", (double)json_integer_value(cpu) / 1e6);
	if (json_is_integer(peak))
		fprintf(f, ", peak memory %.1f MiB",
		        (double)json_integer_value(peak) / (1024.0 * 1024.0));
	if (error != NULL)
		fprintf(f, ": %s", error);
	if (id != NULL)
		fprintf(f, "  run=%s", id);
	runline_after(f, rec, flags);
	fprintf(f, "\n");
	free(outcome);
	free(id);
	free(node);
	free(end);
	free(error);
	free(why);
}

/*
 * One run record's line in the given style. A record of a newer format is not read as if
 * understood: the line says so instead ("format_refused", set by its reader).
 */
void
runline_print(FILE *f, json_t *rec, enum runline_style style, int flags)
{
	char *refused = runline_field(rec, "format_refused", NULL, flags);
	char *znode;

	if (refused != NULL) {
		if (style == RUNLINE_HEADER)
			fprintf(f, "=== run %lld: %s\n",
			        (long long)json_integer_value(json_object_get(rec, "run")),
			        refused);
		else {
			znode = runline_field(rec, "znode", "?", flags);
			fprintf(f, "      %s  %s\n", znode, refused);
			free(znode);
		}
		free(refused);
		return;
	}
	if (style == RUNLINE_HEADER)
		runline_header(f, rec, flags);
	else
		runline_row(f, rec, flags);
}
