/* Runs in: the main process. */
/*
 * nodedata.c: another party's node data (a worker's registration, a lock holder's node, a
 * run record), as `status` shows it and as the worker logs it.
 *
 * Anyone with write access can put anything in a node: so its size is checked before it is
 * parsed, its fields never replace what we found out ourselves, and what goes into a log line
 * is escaped and bounded (utf8_quote): a newline in a node must not forge a line of our log.
 * Pure (no network, no logging), so that unit tests and the fuzzer drive it as the daemon does.
 */

#include <stdio.h>
#include <stdlib.h>

#include "nodedata.h"
#include "tickstate.h"
#include "utf8.h"
#include "xmalloc.h"

/* A node's data into obj: its JSON object's fields but ours, else the text; a huge one named. */
void
nodedata_merge(json_t *obj, const char *value, int len)
{
	static const char *ours[] = {"znode", "session", "stranger"};
	json_t *data;
	size_t i;

	if (len > TICKSTATE_MAX_SIZE) {
		json_object_set_new(obj, "data_too_large", json_integer(len));
		return;
	}
	data = value != NULL && len > 0 ? json_loadb(value, (size_t)len, 0, NULL) : NULL;
	if (json_is_object(data)) {
		for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
			json_object_del(data, ours[i]);
		json_object_update(obj, data);
	} else if (value != NULL && len > 0)
		json_object_set_new(obj, "data", json_stringn(value, (size_t)len));
	if (data != NULL)
		json_decref(data);
}

/* Append ", name text" (or "name text" first) to *out. */
static void
nodedata_add(char **out, const char *name, const char *text)
{
	char *s;

	xasprintf(&s, "%s%s%s %s", *out != NULL ? *out : "", *out != NULL ? ", " : "", name, text);
	free(*out);
	*out = s;
}

/* Append a string field of data, quoted, if it has one. */
static void
nodedata_add_string(char **out, const char *name, json_t *data, const char *key)
{
	json_t *v = json_object_get(data, key);
	char *q;

	if (!json_is_string(v))
		return;
	q = utf8_quote(json_string_value(v), json_string_length(v));
	nodedata_add(out, name, q);
	free(q);
}

/* A node's data for a log line: a worker's host, pid and start, else the quoted text. */
char *
nodedata_describe(const char *value, int len)
{
	json_t *data, *pid;
	char *out = NULL, num[32];

	if (value == NULL || len <= 0)
		return xstrdup("no data");
	if (len > TICKSTATE_MAX_SIZE) {
		xasprintf(&out, "%d bytes of data", len);
		return out;
	}
	data = json_loadb(value, (size_t)len, 0, NULL);
	if (json_is_object(data)) {
		nodedata_add_string(&out, "host", data, "host");
		pid = json_object_get(data, "pid");
		if (json_is_integer(pid)) {
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(pid));
			nodedata_add(&out, "pid", num);
		}
		nodedata_add_string(&out, "started", data, "start");
	}
	if (data != NULL)
		json_decref(data);
	return out != NULL ? out : utf8_quote(value, (size_t)len);
}
