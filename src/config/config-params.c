/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that reads the configuration. */
/*
 * config-params.c: a job's `params`, the parameters a manual run may be given
 * (`run-now --param NAME=VALUE`): NAME or NAME=DEFAULT, separated by commas; each problem
 * reported with its file, line and fix.
 */

#include <stdlib.h>
#include <string.h>

#include "config-int.h"
#include "param.h"
#include "xmalloc.h"

/* Check one item (NAME or NAME=DEFAULT, trimmed) and add it to *list (n items). */
static void
config_param_item(struct config_ctx *ctx, const struct config_sec *sec, const struct config_kv *kv,
                  char *item, char ***list, size_t *n)
{
	char *eq = strchr(item, '='), *def;
	size_t nlen = eq != NULL ? (size_t)(eq - item) : strlen(item), i;

	while (nlen > 0 && (item[nlen - 1] == ' ' || item[nlen - 1] == '\t'))
		nlen--;
	if (!param_name_ok(item, nlen)) {
		config_error_kv(ctx, sec, kv,
		                "bad parameter name %s: use capitals, digits and '_', starting "
		                "with a capital, at most %d bytes, e.g. params = TARGET, "
		                "DRY_RUN=false",
		                config_q(ctx, item), PARAM_MAX_NAME);
		return;
	}
	def = eq != NULL ? eq + 1 + strspn(eq + 1, " \t") : NULL;
	if (def != NULL && strlen(def) > PARAM_MAX_VALUE) {
		config_error_kv(ctx, sec, kv,
		                "the default of parameter %.*s is over %d bytes: shorten it",
		                (int)nlen, item, PARAM_MAX_VALUE);
		return;
	}
	for (i = 0; i < *n; i++)
		if (strncmp((*list)[i], item, nlen) == 0 &&
		    ((*list)[i][nlen] == '\0' || (*list)[i][nlen] == '=')) {
			config_error_kv(ctx, sec, kv, "params names %.*s twice: keep one",
			                (int)nlen, item);
			return;
		}
	if (*n == PARAM_MAX) {
		config_error_kv(ctx, sec, kv, "params names more than %d parameters: keep %d",
		                PARAM_MAX, PARAM_MAX);
		return;
	}
	*list = xreallocarray(*list, *n + 2, sizeof **list);
	if (def != NULL)
		xasprintf(&(*list)[*n], "%.*s=%s", (int)nlen, item, def);
	else
		(*list)[*n] = xstrndup(item, nlen);
	(*list)[++*n] = NULL;
}

/*
 * The next item of the comma-separated list at *p, without its blanks (the caller frees
 * it; "" for an empty one), *p moved past it and its comma; NULL at the list's end.
 */
char *
config_list_next(const char **p)
{
	const char *s = *p;
	size_t len, end;
	char *item;

	if (*s == '\0')
		return NULL;
	s += strspn(s, " \t");
	len = strcspn(s, ",");
	end = len;
	while (end > 0 && (s[end - 1] == ' ' || s[end - 1] == '\t'))
		end--;
	item = xstrndup(s, end);
	s += len;
	*p = *s == ',' ? s + 1 : s;
	return item;
}

/* The job's params: "NAME" or "NAME=DEFAULT" in job->params, NULL terminated (none: NULL). */
void
config_resolve_params(struct config_ctx *ctx, const struct config_sec *sec, struct config_job *job)
{
	const struct config_kv *kv = config_kv_find(sec, "params");
	const char *p = kv != NULL ? kv->value : NULL;
	char **list, *item;
	size_t n = 0;

	if (kv == NULL)
		return;
	list = xcalloc(1, sizeof *list);
	while ((item = config_list_next(&p)) != NULL) {
		if (*item == '\0')
			config_error_kv(
			    ctx, sec, kv,
			    "params has an empty item: write names separated by commas, "
			    "e.g. params = TARGET, DRY_RUN=false");
		else
			config_param_item(ctx, sec, kv, item, &list, &n);
		free(item);
	}
	job->params = list;
}
