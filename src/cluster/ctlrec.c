/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/*
 * ctlrec.c: the cluster-wide controls as ZooKeeper holds them, read bounded (anyone who may
 * write the nodes may forge them): a job record's "paused" object, written by `leasekeeper
 * pause`, the deadline of a worker's drain node, written by `leasekeeper drain`, and a run-now
 * request (`leasekeeper run-now`), which both the workers and the command read.
 */

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ctlrec.h"
#include "format.h"
#include "leasekeeper.h"

#define CTLREC_STR2(x) #x
#define CTLREC_STR(x)  CTLREC_STR2(x)

/* data as a JSON object, or NULL (too large, not an object). */
static json_t *
ctlrec_object(const char *data, int len)
{
	json_t *o;

	if (data == NULL || len <= 0 || len > CTLREC_MAX_SIZE)
		return NULL;
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (o != NULL && !json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * Whether a job record says the job is paused ("paused": {...}); *stop_running whether the
 * pause also stops the runs under way ("stop_running": true in it).
 */
int
ctlrec_paused(const char *data, int len, int *stop_running)
{
	json_t *o = ctlrec_object(data, len), *p;
	int paused;

	*stop_running = 0;
	if (o == NULL)
		return 0;
	p = json_object_get(o, "paused");
	paused = json_is_object(p) || json_is_true(p);
	if (json_is_object(p))
		*stop_running = json_is_true(json_object_get(p, "stop_running"));
	json_decref(o);
	return paused;
}

/*
 * A drain node's deadline: how long a drained worker lets its scheduled runs go on before it
 * stops them, in ms; -1 when there is none (absent, not an integer in range, or a node of a
 * format this release cannot read).
 */
int64_t
ctlrec_drain_deadline_ms(const char *data, int len)
{
	json_t *o = ctlrec_object(data, len), *d;
	int64_t ms = -1;

	if (o == NULL)
		return -1;
	d = json_object_get(o, "deadline_ms");
	/* A newer leasekeeper's drain: drained all the same, but its deadline is not known. */
	if (format_readable(format_of(o)) && json_is_integer(d) && json_integer_value(d) >= 0 &&
	    json_integer_value(d) <= (json_int_t)CTLREC_MAX_DRAIN_S * 1000)
		ms = (int64_t)json_integer_value(d);
	json_decref(o);
	return ms;
}

/* Copy a string member of o into out (size bytes) if it is one of 1..size-1 bytes, else dflt. */
static void
ctlrec_string(json_t *o, const char *key, char *out, size_t size, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));
	size_t n = v != NULL ? json_string_length(json_object_get(o, key)) : 0;

	/* jansson checked the UTF-8; a NUL inside would cut it short: refused. */
	if (v == NULL || n == 0 || n >= size || strlen(v) != n)
		v = dflt;
	snprintf(out, size, "%s", v);
}

/*
 * A run-now request node, read bounded into r: who asked, the timeout, who claimed it, and
 * how it ended. Returns r->valid (0: not a request at all: too large or not an object).
 */
int
ctlrec_request(const char *data, int len, struct ctlrec_request *r)
{
	json_t *o = ctlrec_object(data, len), *t, *c, *res, *v;
	const char *p;

	memset(r, 0, sizeof *r);
	r->timeout_ms = r->exit_status = r->signal = -1;
	snprintf(r->by, sizeof r->by, "?");
	snprintf(r->outcome, sizeof r->outcome, "unknown");
	if (o == NULL)
		return 0;
	r->valid = 1;
	r->format = format_of(o);
	if (!format_readable(r->format)) {
		json_decref(o); /* a newer leasekeeper's request: what it means is not known here */
		return 1;
	}
	ctlrec_string(o, "by", r->by, sizeof r->by, "?");
	t = json_object_get(o, "timeout_ms");
	if (json_is_integer(t) && json_integer_value(t) > 0 &&
	    json_integer_value(t) <= CTLREC_MAX_WAIT_MS)
		r->timeout_ms = (int64_t)json_integer_value(t);
	r->force = json_is_true(json_object_get(o, "force"));
	c = json_object_get(o, "claimed");
	if (json_is_object(c)) {
		r->claimed = 1;
		ctlrec_string(c, "node", r->node, sizeof r->node, "");
	}
	res = json_object_get(o, "result");
	if (json_is_object(res)) {
		r->done = 1;
		ctlrec_string(res, "outcome", r->outcome, sizeof r->outcome, "unknown");
		for (p = r->outcome; *p != '\0'; p++) {
			if ((*p < 'a' || *p > 'z') && *p != '_') {
				snprintf(r->outcome, sizeof r->outcome, "unknown");
				break;
			}
		}
		v = json_object_get(res, "exit_status");
		if (json_is_integer(v) && json_integer_value(v) >= 0 &&
		    json_integer_value(v) <= 255)
			r->exit_status = (int)json_integer_value(v);
		v = json_object_get(res, "signal");
		if (json_is_integer(v) && json_integer_value(v) >= 1 &&
		    json_integer_value(v) <= 127)
			r->signal = (int)json_integer_value(v);
		ctlrec_string(res, "error", r->error, sizeof r->error, "");
	}
	json_decref(o);
	return 1;
}

/* Whether member key of o is absent or a string of 1..max bytes without NUL. */
static int
ctlrec_string_ok(json_t *o, const char *key, size_t max, int required)
{
	json_t *v = json_object_get(o, key);
	size_t n;

	if (v == NULL)
		return !required;
	if (!json_is_string(v))
		return 0;
	n = json_string_length(v);
	return n > 0 && n <= max && strlen(json_string_value(v)) == n;
}

/*
 * Why data is not a run-now request a worker may act on, or NULL if it is one: a JSON object
 * of at most CTLREC_MAX_REQUEST bytes whose "by" is a string of 1..CTLREC_MAX_BY bytes,
 * "at" a string, "timeout_ms" (if there) an integer in 1..CTLREC_MAX_WAIT_MS, "force" a
 * boolean, "claimed" and "result" objects. Other members are left alone.
 */
const char *
ctlrec_request_invalid(const char *data, int len)
{
	json_t *o, *v;
	const char *why = NULL;

	if (data == NULL || len <= 0)
		return "empty";
	if (len > CTLREC_MAX_REQUEST)
		return "larger than " CTLREC_STR(CTLREC_MAX_REQUEST) " bytes";
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (!json_is_object(o))
		why = "not a JSON object";
	else if (!ctlrec_string_ok(o, "by", CTLREC_MAX_BY, 1))
		why = "\"by\" is not a string of 1 to " CTLREC_STR(CTLREC_MAX_BY) " bytes";
	else if (!ctlrec_string_ok(o, "at", 64, 0))
		why = "\"at\" is not a time stamp";
	else if ((v = json_object_get(o, "timeout_ms")) != NULL &&
	         (!json_is_integer(v) || json_integer_value(v) <= 0 ||
	          json_integer_value(v) > CTLREC_MAX_WAIT_MS))
		why = "\"timeout_ms\" is not an integer from 1 to 86400000";
	else if ((v = json_object_get(o, "force")) != NULL && !json_is_boolean(v))
		why = "\"force\" is not true or false";
	else if ((v = json_object_get(o, "claimed")) != NULL && !json_is_object(v))
		why = "\"claimed\" is not an object";
	else if ((v = json_object_get(o, "result")) != NULL && !json_is_object(v))
		why = "\"result\" is not an object";
	if (o != NULL)
		json_decref(o);
	return why;
}

/*
 * The exit status of `run-now --wait` for a finished request: 0 for an ok run (or a
 * restarted @continuous copy), the run's exit status, 128 + its signal, 127 if it could not
 * start, EXIT_TIMEOUT if the worker got no lease in time, EXIT_UNAVAILABLE if the worker lost
 * track of it, 1 for any other end that was not ok.
 */
int
ctlrec_request_exit(const struct ctlrec_request *r)
{
	int ok = strcmp(r->outcome, "ok") == 0 || strcmp(r->outcome, "restarted") == 0;

	if (strcmp(r->outcome, "no_lease") == 0)
		return EXIT_TIMEOUT;
	if (strcmp(r->outcome, "lost") == 0)
		return EXIT_UNAVAILABLE;
	if (strcmp(r->outcome, "start_failed") == 0)
		return EXIT_CANNOT_RUN;
	if (r->signal > 0)
		return 128 + r->signal;
	if (r->exit_status > 0)
		return r->exit_status;
	return ok ? 0 : 1;
}
