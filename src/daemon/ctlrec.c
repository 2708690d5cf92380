/* Runs in: the main process. */
/*
 * ctlrec.c: the cluster-wide controls as ZooKeeper holds them, read bounded (anyone who may
 * write the nodes may forge them): a job record's "paused" object, written by `leasekeeper
 * pause`, and the deadline of a worker's drain node, written by `leasekeeper drain`.
 */

#include <jansson.h>

#include "ctlrec.h"

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
 * stops them, in ms; -1 when there is none (absent, or not an integer in range).
 */
int64_t
ctlrec_drain_deadline_ms(const char *data, int len)
{
	json_t *o = ctlrec_object(data, len), *d;
	int64_t ms = -1;

	if (o == NULL)
		return -1;
	d = json_object_get(o, "deadline_ms");
	if (json_is_integer(d) && json_integer_value(d) >= 0 &&
	    json_integer_value(d) <= (json_int_t)CTLREC_MAX_DRAIN_S * 1000)
		ms = (int64_t)json_integer_value(d);
	json_decref(o);
	return ms;
}
