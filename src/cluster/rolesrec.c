/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker (writes it) and the one-shot commands that create control records. */
/*
 * rolesrec.c: <root>/roles, {"workers": ID, "reader": ID}, which each worker writes so that
 * an operator's command gives the workers every permission on the control records it
 * creates (docs/security.md, roles). Whoever can write the node may have forged it: it is
 * read bounded, and an identity that is not a digest id (authfile.c) is none.
 */

#include <string.h>

#include <jansson.h>

#include "authfile.h"
#include "format.h"
#include "rolesrec.h"

/* The roles node's data for the workers' digest id and the reader's (or NULL); caller frees. */
char *
rolesrec_dump(const char *workers, const char *reader)
{
	json_t *o = json_pack("{s:s}", "workers", workers);
	char *data;

	if (reader != NULL)
		json_object_set_new(o, "reader", json_string(reader));
	format_stamp(o);
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return data;
}

/* Copy the digest id named by key in o into out if it is one and not own (ours); else "". */
static void
rolesrec_id(json_t *o, const char *key, const char *own, char *out)
{
	const char *v = json_string_value(json_object_get(o, key));

	out[0] = '\0';
	if (v == NULL || strlen(v) > ROLESREC_MAX_ID || !authfile_valid_digest_id(v) ||
	    (own != NULL && strcmp(v, own) == 0))
		return;
	memcpy(out, v, strlen(v) + 1);
}

/*
 * Read a roles node (data, len) as the command that is identity own (a digest id, or NULL)
 * sees it: 1 when it names workers other than own (then r->reader is the reader, or ""),
 * else 0 with both "" (no node, not JSON, too large, or the workers are us).
 */
int
rolesrec_parse(const char *data, int len, const char *own, struct rolesrec *r)
{
	json_t *o;

	r->workers[0] = r->reader[0] = '\0';
	if (data == NULL || len <= 0 || len > ROLESREC_MAX_DATA)
		return 0;
	o = json_loadb(data, (size_t)len, 0, NULL);
	if (!json_is_object(o)) {
		if (o != NULL)
			json_decref(o);
		return 0;
	}
	rolesrec_id(o, "workers", own, r->workers);
	if (r->workers[0] != '\0')
		rolesrec_id(o, "reader", own, r->reader);
	json_decref(o);
	return r->workers[0] != '\0';
}
