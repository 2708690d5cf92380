/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
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

#include "clock.h"
#include "nodedata.h"
#include "tickstate.h"
#include "utf8.h"
#include "xmalloc.h"

/*
 * Make v safe for any JSON reader: an integer beyond 2^53 (which JavaScript and jq round)
 * becomes the string of its digits. The depth is jansson's parser's bound.
 */
void
nodedata_safe_numbers(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;
	void *tmp;
	char num[32];

	if (json_is_object(v)) {
		json_object_foreach_safe(v, tmp, key, item) {
			if (json_is_integer(item) &&
			    (json_integer_value(item) > NODEDATA_MAX_SAFE ||
			     json_integer_value(item) < -NODEDATA_MAX_SAFE)) {
				snprintf(num, sizeof num, "%lld",
				         (long long)json_integer_value(item));
				json_object_set_new(v, key, json_string(num));
			} else
				nodedata_safe_numbers(item);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			if (json_is_integer(item) &&
			    (json_integer_value(item) > NODEDATA_MAX_SAFE ||
			     json_integer_value(item) < -NODEDATA_MAX_SAFE)) {
				snprintf(num, sizeof num, "%lld",
				         (long long)json_integer_value(item));
				json_array_set_new(v, i, json_string(num));
			} else
				nodedata_safe_numbers(item);
		}
	}
}

/*
 * A node's data into obj: its JSON object's fields but ours, else the text; a huge one named.
 * Integers beyond 2^53 become strings; a "tick" (Unix seconds) gains "tick_time", the same
 * time in RFC 3339, where the data has none (tick states, and run records written before
 * records carried it).
 */
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
		json_t *tick;
		char when[40];

		for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
			json_object_del(data, ours[i]);
		nodedata_safe_numbers(data);
		tick = json_object_get(data, "tick");
		/* Up to the year 9999: what RFC 3339 can say. */
		if (json_is_integer(tick) && json_integer_value(tick) >= 0 &&
		    json_integer_value(tick) <= 253402300799LL &&
		    !json_is_string(json_object_get(data, "tick_time"))) {
			clock_iso8601((uint64_t)json_integer_value(tick) * 1000, when, sizeof when);
			json_object_set_new(data, "tick_time", json_string(when));
		}
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

/*
 * The clock offset a worker node states (this host's clock minus ZooKeeper's, and its
 * error bound, in ms): 0, or -1 if it states none or one out of bounds (anyone may write
 * the node: at most NODEDATA_CLOCK_MAX_MS either way, an error bound from 0 to that).
 */
int
nodedata_clock_offset(const json_t *worker, int64_t *offset_ms, int64_t *error_ms)
{
	const json_t *off = json_object_get(worker, "clock_offset_ms");
	const json_t *err = json_object_get(worker, "clock_error_ms");

	if (!json_is_integer(off) || !json_is_integer(err) ||
	    json_integer_value(off) > NODEDATA_CLOCK_MAX_MS ||
	    json_integer_value(off) < -NODEDATA_CLOCK_MAX_MS || json_integer_value(err) < 0 ||
	    json_integer_value(err) > NODEDATA_CLOCK_MAX_MS)
		return -1;
	*offset_ms = (int64_t)json_integer_value(off);
	*error_ms = (int64_t)json_integer_value(err);
	return 0;
}
