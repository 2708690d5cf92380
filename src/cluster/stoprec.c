/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands). */
/*
 * stoprec.c: a stop request node as the workers and `leasekeeper stop` read it. Anyone who
 * can write under <root>/jobs may have written it: it is parsed bounded (ctlrec.c reads the
 * fields it shares with a run-now request), and a field that is not sane is absent.
 */

#include <jansson.h>

#include "stoprec.h"

/* Read a stop request (data, len); 0 when it is not one (not JSON, too large). */
int
stoprec_parse(const char *data, int len, struct stoprec *s)
{
	json_t *o, *v;

	s->fence = -1;
	s->kill = s->no_restart = 0;
	if (!ctlrec_request(data, len, &s->req))
		return 0;
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return 0;
	}
	v = json_object_get(o, "fence");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		s->fence = (int64_t)json_integer_value(v);
	s->kill = json_is_true(json_object_get(o, "kill"));
	s->no_restart = json_is_true(json_object_get(o, "no_restart"));
	json_decref(o);
	return 1;
}
